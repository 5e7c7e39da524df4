//! The phase loop: asks the state machine what comes next and does it
//! (start a phase, skip, wait, complete) until the task stops, waits, or
//! is stopped (its lease lost, a cancel asked, a signal).

use super::{Engine, Held, Outcome};
use crate::error::{Error, Result};
use crate::render;
use baton_core::machine::{self, Input, Next};
use baton_core::state::{PhaseStatus, TaskStatus};
use std::sync::atomic::Ordering;

impl Engine {
    /// Drives a held task: one step of the state machine after another,
    /// until the task completes, fails, waits or is stopped.
    pub(super) fn drive(&self, held: &mut Held) -> Result<Outcome> {
        let dir = self.project.task_dir(&held.state.task_id);
        render::phase_outputs(&dir, &held.state)?;
        loop {
            if let Some(outcome) = self.lost_or_cancelled(held)? {
                return Ok(outcome);
            }
            let next = machine::next(&held.state, &held.wf);
            // A signal or a drain lets go of the task only before a phase
            // would start: a task whose last phase passed completes (or
            // waits) first, never left for a pod to start only to end it.
            if matches!(next, Next::Start(_))
                && let Some(outcome) = self.stopped_before_phase(held)?
            {
                return Ok(outcome);
            }
            match next {
                Next::Start(p) => {
                    // An agent with a role other than implementation works
                    // in its own workspace for this phase.
                    let ran = match self.own_workspace(held, &p)? {
                        Some(own) => {
                            let main = std::mem::replace(&mut held.ws, own);
                            held.just_snapshotted = false;
                            let ran = self.run_phase(held, &p);
                            held.ws = main;
                            ran?
                        }
                        None => self.run_phase(held, &p)?,
                    };
                    if let Some(outcome) = ran {
                        return Ok(outcome);
                    }
                }
                Next::Skip(p, reason) => {
                    self.decide_commit(held, Input::Skip { phase: p.clone() })?;
                    self.observer.phase_finished(
                        &held.state.task_id,
                        p.as_str(),
                        PhaseStatus::Skipped,
                        0,
                        &reason,
                    );
                }
                Next::Wait(p) => {
                    self.decide_commit(held, Input::Wait { phase: p.clone() })?;
                    self.observer.phase_finished(
                        &held.state.task_id,
                        p.as_str(),
                        PhaseStatus::Waiting,
                        0,
                        "",
                    );
                }
                Next::Waiting(p) => match self.wait_not_due(&held.state) {
                    None => self.decide_commit(held, Input::TimerDue { phase: p })?,
                    Some(w) => return Ok(Outcome::Waiting(w)),
                },
                Next::Complete => {
                    self.decide_commit(held, Input::Complete)?;
                    // What was kept for its waits is of no use now.
                    let _ = self.store.drop_buffered(&held.state.task_id, None);
                    return Ok(Outcome::Complete);
                }
                // Its process exited before its runner stopped: the end
                // is judged from what it left (`resume`).
                Next::InProgress(p)
                    if held
                        .state
                        .phase(p.as_str())
                        .is_some_and(|s| s.exited.is_some()) =>
                {
                    if let Some(outcome) = self.finish_exited(held, &p)? {
                        return Ok(outcome);
                    }
                }
                Next::InProgress(p) => {
                    return Err(Error::op(format!("phase {p} is unexpectedly in progress")));
                }
                Next::Stopped(TaskStatus::Waiting) => {
                    // An event that came before this stage, kept for it.
                    if self.use_buffered(held)? {
                        continue;
                    }
                    match (self.wait_not_due(&held.state), held.state.waiting_phase()) {
                        // A durable timer that is due: TimerDue resumes the task.
                        (None, Some(p))
                            if p.waiting.as_ref().is_some_and(|w| w.due_at.is_some()) =>
                        {
                            let p = p.id.clone();
                            self.decide_commit(held, Input::TimerDue { phase: p })?;
                        }
                        (w, p) => {
                            if let Some(p) = p {
                                let (id, phase) = (held.state.task_id.clone(), p.id.to_string());
                                self.pause_point("waited", &id, &phase);
                            }
                            return Ok(Outcome::Waiting(w.unwrap_or_else(|| "an event".into())));
                        }
                    }
                }
                Next::Stopped(TaskStatus::Failed) => {
                    return Ok(Outcome::Failed(
                        held.state
                            .failure
                            .clone()
                            .unwrap_or_else(|| "failed".into()),
                    ));
                }
                Next::Stopped(TaskStatus::Cancelled) => return Ok(Outcome::Cancelled),
                Next::Stopped(_) => return Ok(Outcome::Complete),
            }
        }
    }

    /// Between phases: a lost lease ends the drive with an error, a cancel
    /// asked with its outcome.
    fn lost_or_cancelled(&self, held: &mut Held) -> Result<Option<Outcome>> {
        if held.hb.lost.load(Ordering::SeqCst) {
            return Err(Error::busy(format!(
                "lost the lease of task {} to another process",
                held.state.task_id
            )));
        }
        if held.hb.cancel.load(Ordering::SeqCst) {
            self.decide_commit(
                held,
                Input::Cancel {
                    reason: "cancelled by `baton cancel`".into(),
                },
            )?;
            return Ok(Some(Outcome::Cancelled));
        }
        Ok(None)
    }

    /// Before a phase starts: a signal or a drain ends the drive, the task
    /// released for `resume` or another worker.
    fn stopped_before_phase(&self, held: &mut Held) -> Result<Option<Outcome>> {
        if self.interrupt.load(Ordering::SeqCst) {
            self.decide_commit(
                held,
                Input::Note {
                    phase: None,
                    text: "stopped by a signal between phases".into(),
                },
            )?;
            return Ok(Some(Outcome::Interrupted(format!(
                "stopped by a signal between phases; `baton resume {}` goes on",
                held.state.task_id
            ))));
        }
        if self.drain.load(Ordering::SeqCst) {
            self.decide_commit(
                held,
                Input::Note {
                    phase: None,
                    text: "released between phases: the worker drains".into(),
                },
            )?;
            return Ok(Some(Outcome::Interrupted(
                "released between phases, as its worker drains; another worker goes on".into(),
            )));
        }
        Ok(None)
    }
}
