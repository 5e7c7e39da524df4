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
        // Two people answering at once: the loser is told what won, never
        // that the task is busy (whose hint would have them cancel it).
        let seen = snap.state.last_seq;
        let mut held = match self.take(id, &snap, None) {
            Ok(h) => h,
            Err(e) => return Err(self.lost_answer(id, &phase, seen).unwrap_or(e)),
        };
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
            return Err(self.answered_meanwhile(id, &phase, seen).unwrap_or(e));
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

    /// An answer that found the task held by another process (another
    /// answer, taking it a moment before): waits for that one's answer to
    /// be journaled (or the task let go) and says what won.
    fn lost_answer(&self, id: &TaskId, phase: &PhaseId, seen: u64) -> Option<Error> {
        let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while std::time::Instant::now() < until {
            if let Some(e) = self.answered_meanwhile(id, phase, seen) {
                return Some(e);
            }
            let snap = self.store.load(id).ok()??;
            if !self.liveness(snap.lease.as_ref()).is_live() {
                return self.answered_meanwhile(id, phase, seen);
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        None
    }

    /// The refusal for an answer that lost a race: `phase` of `id` was
    /// answered after the journal's record `seen` (exit 2, naming the
    /// answer that won and who gave it); `None` when it was not.
    fn answered_meanwhile(&self, id: &TaskId, phase: &PhaseId, seen: u64) -> Option<Error> {
        let events = self.store.events(id, seen, 1000).ok()?;
        events.iter().find_map(|r| match &r.event {
            baton_core::Event::Answered {
                phase: p,
                answer,
                by,
            } if p == phase => Some(
                Error::bad_input(format!(
                    "{phase} of task {id} was answered a moment ago by {by}: {}",
                    answer.trim()
                ))
                .hint(format!(
                    "the task runs on with that answer; `baton log {id}` shows it"
                )),
            ),
            _ => None,
        })
    }
}
