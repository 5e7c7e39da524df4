//! A person's answer to the question a `wait = { human }` phase asks: the
//! phase passes once, with the answer as its summary and who gave it
//! journaled; the task is handed back held, to run on where the caller
//! likes (the API lets it go to a process of its own).

use super::{Engine, Passed};
use crate::error::{Error, Result};
use baton_core::machine::Input;
use baton_core::workflow::{PhaseKind, WaitSpec};
use baton_core::{PhaseId, TaskId};

impl Engine {
    /// Answers the question task `id` waits on with `answer`, given by
    /// `by`; returns the phase it passed and the task, held.
    pub fn answer(&self, id: &TaskId, answer: &str, by: &str) -> Result<(PhaseId, Passed)> {
        let snap = self.load(id)?;
        let wf = self.pinned(&snap.state.definition_hash)?;
        let Some(waiting) = snap.state.waiting_phase() else {
            return Err(Error::busy(format!(
                "task {id} is {}, not waiting for an answer",
                self.status_of(&snap).as_str()
            ))
            .hint("only a task waiting in a `wait = { human }` phase takes an answer"));
        };
        let phase = waiting.id.clone();
        if !matches!(
            wf.phase(phase.as_str()).map(|p| &p.kind),
            Some(PhaseKind::Wait(WaitSpec::Human { .. }))
        ) {
            return Err(Error::busy(format!(
                "task {id} waits in {phase} for {}, not for an answer",
                waiting
                    .waiting
                    .as_ref()
                    .map_or("something else", |w| w.description.as_str())
            ))
            .hint("only a `wait = { human }` phase takes an answer"));
        }
        let mut held = self.take(id, &snap, None)?;
        let answered = self.decide_commit(
            &mut held,
            Input::Answer {
                phase: phase.clone(),
                answer: answer.to_string(),
                by: by.to_string(),
            },
        );
        if let Err(e) = answered {
            self.release(held);
            return Err(e);
        }
        self.observer.info(&format!(
            "{by} answered {phase} of task {id}: {}",
            answer.trim()
        ));
        Ok((
            phase,
            Passed {
                id: id.clone(),
                held,
            },
        ))
    }
}
