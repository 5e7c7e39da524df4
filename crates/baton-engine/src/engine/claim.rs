//! `baton worker`'s side of the queue: claiming a queued task nobody runs
//! (or whose runner is provably dead, or whose timer is due), running it
//! like `resume` would in its own worktree, and whether work is left.

use super::{Claimed, Engine, Held, Outcome, ResumeOptions};
use crate::error::Result;
use baton_core::TaskId;
use baton_core::lease::{Lease, Liveness};
use baton_core::machine::Input;
use baton_core::state::TaskStatus;
use baton_store::Acquire;

impl Engine {
    /// `baton worker`: claims the oldest queued task nobody runs (or whose
    /// runner's lease expired), `skip` left out; `None` if there was none.
    /// The slots of one worker share a lease owner (the process), so the
    /// worker passes the tasks its other slots run in `skip`.
    pub fn claim(&self, skip: &[TaskId]) -> Result<Option<Claimed>> {
        let lease = self.new_lease();
        let id = match self.store.claim(&lease, skip)? {
            Some(id) => id,
            None => match self.claim_by_scan(&lease, skip)? {
                Some(id) => id,
                None => return Ok(None),
            },
        };
        Ok(Some(Claimed { id, lease }))
    }

    /// Drives a claimed task like `resume` would, then releases it.
    pub fn run_claimed(&self, claimed: Claimed) -> Result<Outcome> {
        let Claimed { id, lease } = claimed;
        let result = (|| {
            let snap = self.load(&id)?;
            let _ = self.repair_rendered(&snap);
            let wf = self.pinned(&snap.state.definition_hash)?;
            // Held (its heartbeat running) before anything slow: killing
            // orphans, fetching, checking the worktree out.
            let mut held = self.hold(snap.state.clone(), wf, lease, self.project_workspace())?;
            // What earlier runs on this host left running goes first, so
            // nothing writes into the worktree once it is set up, and a
            // cancelled task's phase does not finish its work after all.
            self.kill_local_orphans(&id);
            if snap.cancel_requested {
                // Cancelled while its last runner was dying: honour it.
                let r = self.decide_commit(
                    &mut held,
                    Input::Cancel {
                        reason: "cancelled by `baton cancel`".into(),
                    },
                );
                self.release(held);
                self.observer
                    .info(&format!("task {id} was cancelled while nobody ran it"));
                return r.map(|()| Outcome::Cancelled);
            }
            match self.workspace_for(&snap, &held.wf) {
                Ok(ws) => held.ws = ws,
                Err(e) => {
                    self.release(held);
                    return Err(e);
                }
            }
            self.observer.task_started(&id, &held.wf.name);
            let outcome = self.resume_held(&mut held, &snap, ResumeOptions::default(), None, true);
            self.remove_done_worktree(&held, &outcome);
            self.release_driven(held, outcome)
        })();
        if result.is_err() {
            // Never keep a task we cannot run: another worker may.
            let _ = self.store.release(&id, &self.owner);
        }
        result
    }

    /// A queued task's worktree once the task completed: everything is
    /// committed and published, so the checkout is no longer needed (git
    /// refuses if anything is left in it, and then it stays). Whoever
    /// drove it there, a worker or `baton resume`.
    pub(super) fn remove_done_worktree(&self, held: &Held, outcome: &Result<Outcome>) {
        // A queued task's own worktree only: a workspace by agent role
        // outlives its tasks (`baton workspace rm` removes it).
        let own = self
            .project
            .baton_dir()
            .join("worktrees")
            .join(held.state.task_id.as_str());
        if let (Ok(Outcome::Complete), Some(b), Some(g)) = (outcome, &held.ws.branch, &self.git)
            && b.worktree == own
        {
            let _ = g.run(
                &["worktree", "remove", &b.worktree.display().to_string()],
                &[],
            );
        }
    }

    /// What the store's claim does not see: a queued task whose runner on
    /// this host is provably dead (its pid gone, or from an earlier boot)
    /// need not wait for its lease to expire; and a queued task waiting on
    /// a durable timer that is due goes on. Taken by compare-and-swap on
    /// the owner seen, so of two workers only one gets it.
    fn claim_by_scan(&self, lease: &Lease, skip: &[TaskId]) -> Result<Option<TaskId>> {
        for t in self.store.list()? {
            if !t.queued || skip.contains(&t.id) {
                continue;
            }
            let live = self.liveness(t.lease.as_ref());
            let take = match t.status {
                TaskStatus::Running => matches!(live, Liveness::Dead(_)),
                TaskStatus::Waiting if !live.is_live() => {
                    self.store.load(&t.id)?.is_some_and(|s| {
                        s.state
                            .waiting_phase()
                            .and_then(|p| p.waiting.as_ref())
                            .is_some_and(|w| w.due_at.is_some())
                            && self.wait_not_due(&s.state).is_none()
                    })
                }
                _ => false,
            };
            if !take {
                continue;
            }
            let seen = t.lease.as_ref().map(|l| &l.owner);
            let cancel = self.store.load(&t.id)?.is_some_and(|s| s.cancel_requested);
            if self.store.acquire(&t.id, lease, seen)? == Acquire::Acquired {
                if cancel {
                    // Taking over clears the flag; a cancel asked of the
                    // dead runner still stands.
                    self.store.request_cancel(&t.id)?;
                }
                return Ok(Some(t.id));
            }
        }
        Ok(None)
    }

    /// Whether any queued task is still to run (held or not), leaving out
    /// `skip`.
    pub fn queue_pending(&self, skip: &[TaskId]) -> Result<bool> {
        Ok(self
            .store
            .list()?
            .iter()
            .any(|t| t.queued && t.status == TaskStatus::Running && !skip.contains(&t.id)))
    }
}
