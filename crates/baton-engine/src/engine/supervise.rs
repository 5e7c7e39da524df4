//! The supervisor's side of the engine (`baton serve`): which tasks need it
//! (CRASHED: lease expired or runner provably dead; WAITING on a durable
//! timer that is due; or, with `[supervisor] run_queued`, queued), whether one may be restarted now
//! (`baton_core::supervisor`, or journaling that it gives up), and the
//! restart itself (`baton resume ID --supervised`, in a process of its
//! own): judged again under the lease, journaled with its reason, run on.

use super::{Engine, Outcome, ResumeOptions};
use crate::error::{Error, Result};
use baton_core::TaskId;
use baton_core::lease::{DisplayStatus, Liveness};
use baton_core::machine::Input;
use baton_core::supervisor::{self, BLOCKER_PREFIX, Policy, Verdict};
use baton_core::{TaskState, Timestamp};
use baton_store::TaskSummary;

/// Why a task needs the supervisor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Need {
    /// Its runner is gone; how that is known.
    Crashed(String),
    /// Its durable timer is due.
    TimerDue,
    /// Queued and claimed by nobody (`[supervisor] run_queued`).
    Queued,
}

/// A restart `resume` is asked for: checked again under the lease.
#[derive(Debug, Clone)]
pub struct AutoRestart {
    pub reason: String,
    pub policy: Policy,
}

/// Whether to restart a task that needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Triage {
    Restart,
    /// Backing off: not before then.
    NotBefore(Timestamp),
    /// Past the limit; it stays CRASHED with a blocker saying why.
    GaveUp(String),
}

impl Engine {
    /// The tasks that need the supervisor now. Queued tasks are left to
    /// `baton worker`s unless `queued`.
    pub fn needing_supervision(&self, queued: bool) -> Result<Vec<(TaskId, Need)>> {
        let mut out = Vec::new();
        for (t, status) in self.list()? {
            if let Some(need) = self.need(&t, status, queued)? {
                out.push((t.id, need));
            }
        }
        Ok(out)
    }

    fn need(&self, t: &TaskSummary, status: DisplayStatus, queued: bool) -> Result<Option<Need>> {
        match status {
            DisplayStatus::Crashed => {}
            DisplayStatus::Queued if queued && t.lease.is_none() => return Ok(Some(Need::Queued)),
            DisplayStatus::Queued if queued => {}
            DisplayStatus::Waiting => {
                let snap = self.load(&t.id)?;
                let timer = snap
                    .state
                    .waiting_phase()
                    .and_then(|p| p.waiting.as_ref())
                    .is_some_and(|w| w.due_at.is_some());
                let due = timer && self.wait_not_due(&snap.state).is_none();
                return Ok(due.then_some(Need::TimerDue));
            }
            _ => return Ok(None),
        }
        let why = match self.liveness(t.lease.as_ref()) {
            Liveness::Dead(how) => format!("its runner died ({how})"),
            Liveness::Expired => {
                let l = t.lease.as_ref().expect("expired has a lease");
                format!(
                    "its runner (pid {} on {}) stopped renewing its lease, which expired at {}",
                    l.owner.pid,
                    l.owner.host,
                    l.expires_at.rfc3339()
                )
            }
            Liveness::Free => "its runner stopped before finishing it".to_string(),
            Liveness::Live => return Ok(None),
        };
        Ok(Some(Need::Crashed(why)))
    }

    /// Whether task `id`, which needs the supervisor, is restarted now;
    /// past the limit this journals that it gives up (once).
    pub fn triage(&self, id: &TaskId, need: &Need, policy: &Policy) -> Result<Triage> {
        let reason = match need {
            Need::TimerDue | Need::Queued => return Ok(Triage::Restart),
            Need::Crashed(why) => why,
        };
        let snap = self.load(id)?;
        match supervisor::judge(&snap.state.auto_restarts, self.now(), policy) {
            Verdict::NotBefore(at) => Ok(Triage::NotBefore(at)),
            Verdict::Now { .. } => Ok(Triage::Restart),
            Verdict::GiveUp(why) => {
                if !gave_up(&snap.state) {
                    let mut held = self.take(id, &snap, None)?;
                    let said = self.decide_commit(
                        &mut held,
                        Input::GiveUpRestarts {
                            reason: format!("{why} (last: {reason})"),
                        },
                    );
                    self.release(held);
                    said?;
                }
                Ok(Triage::GaveUp(why))
            }
        }
    }

    /// `baton resume ID --supervised`: restarts task `id` if it still
    /// needs the supervisor, within `policy`, and runs it on.
    pub fn supervise(&self, id: &TaskId, policy: &Policy, queued: bool) -> Result<Outcome> {
        let snap = self.load(id)?;
        let t = TaskSummary {
            id: id.clone(),
            workflow: snap.state.workflow.clone(),
            description: snap.state.description.clone(),
            status: snap.state.status,
            last_phase: None,
            created_at: snap.state.created_at,
            updated_at: snap.state.updated_at,
            lease: snap.lease.clone(),
            queued: snap.queued,
        };
        let need = self
            .need(&t, self.status_of(&snap), queued)?
            .ok_or_else(|| {
                Error::busy(format!(
                    "task {id} no longer needs the supervisor (it is {})",
                    self.status_of(&snap).as_str()
                ))
            })?;
        let auto_restart = match need {
            Need::TimerDue | Need::Queued => None,
            Need::Crashed(reason) => Some(AutoRestart {
                reason,
                policy: *policy,
            }),
        };
        self.resume(
            id,
            ResumeOptions {
                auto_restart,
                ..ResumeOptions::default()
            },
        )
    }
}

/// Whether the supervisor already gave up on it.
fn gave_up(state: &TaskState) -> bool {
    state.blockers.iter().any(|b| b.starts_with(BLOCKER_PREFIX))
}

/// The journaled reason of restart `n`.
pub(super) fn restart_note(n: u32, a: &AutoRestart) -> String {
    format!(
        "restart {n} of at most {} within {}: {}",
        a.policy.max_restarts,
        baton_core::time::human_millis(a.policy.window_ms),
        a.reason
    )
}
