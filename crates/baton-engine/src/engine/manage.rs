//! Stopping and cleaning up: `baton cancel`, handing a task back to the
//! workers (`resume --queue`), `baton rm` and `baton clean`.

use super::{Engine, Outcome};
use crate::error::{Error, Result};
use crate::render;
use baton_core::TaskId;
use baton_core::lease::{DisplayStatus, Liveness};
use baton_core::machine::Input;
use baton_core::state::TaskStatus;
use baton_sys::process;
use std::time::Duration;

/// What `baton cancel` journals as its command when it takes a task to
/// cancel it (`claimed`): a second cancel racing it knows it lost.
pub const CANCEL_COMMAND: &str = "baton cancel";

/// The marker `baton clean` leaves in the folder of a task whose record it
/// deleted on purpose: `doctor` does not rebuild that task from its files,
/// and a new task under its id removes it.
pub const CLEANED: &str = "cleaned";

impl Engine {
    /// `baton cancel`: stops a task (asking its live runner, or directly).
    /// The agent instances its phases started end with it when the caller
    /// then calls `instances::task_stopped`.
    pub fn cancel(&self, id: &TaskId) -> Result<()> {
        self.cancel_task(id)?;
        // What was kept for its waits goes with it.
        let _ = self.store.drop_buffered(id, None);
        Ok(())
    }

    fn cancel_task(&self, id: &TaskId) -> Result<()> {
        let snap = self.load(id)?;
        if matches!(
            snap.state.status,
            TaskStatus::Complete | TaskStatus::Cancelled
        ) {
            let hint = if snap.state.status == TaskStatus::Complete {
                format!("there is nothing to stop; `baton rm {id}` deletes its record")
            } else {
                format!(
                    "it is stopped already; `baton resume {id} --from PHASE` runs phases again, `baton rm {id}` deletes its record"
                )
            };
            return Err(Error::bad_input(format!(
                "task {id} is already {}",
                snap.state.status.as_str()
            ))
            .hint(hint));
        }
        if let (Liveness::Live, Some(l)) = (self.liveness(snap.lease.as_ref()), &snap.lease)
            && l.owner != self.owner
        {
            self.store.request_cancel(id)?;
            self.observer
                .info(&format!("asked {} to stop task {id}", l.owner.describe()));
            let until = std::time::Instant::now() + Duration::from_secs(20);
            while std::time::Instant::now() < until {
                std::thread::sleep(Duration::from_millis(100));
                let s = self.load(id)?;
                if s.state.status == TaskStatus::Cancelled {
                    return self.cancelled_by_another(id, &s);
                }
                if !self.liveness(s.lease.as_ref()).is_live() {
                    break;
                }
            }
            let s = self.load(id)?;
            if s.state.status == TaskStatus::Cancelled {
                return self.cancelled_by_another(id, &s);
            }
            if self.liveness(s.lease.as_ref()).is_live() {
                return Err(Error::op(format!("task {id} did not stop within 20s"))
                    .hint("try again, or kill the runner's process"));
            }
        }
        let snap = self.load(id)?;
        let mut held = match self.take_as(id, &snap, CANCEL_COMMAND) {
            Ok(h) => h,
            // Taken between the look and the take: by another cancel, this
            // one says what won once that one is done.
            Err(e) if e.kind == baton_core::ErrorKind::Busy => {
                let until = std::time::Instant::now() + Duration::from_secs(20);
                while std::time::Instant::now() < until {
                    let s = self.load(id)?;
                    if s.state.status == TaskStatus::Cancelled {
                        return self.cancelled_by_another(id, &s);
                    }
                    if !self.liveness(s.lease.as_ref()).is_live() {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(50));
                }
                return Err(e);
            }
            Err(e) => return Err(e),
        };
        if let Some(p) = held.state.in_progress().and_then(|p| p.process.clone())
            && self.ran_here(&snap)
        {
            process::kill_orphan(&p);
        }
        let r = self.decide_commit(
            &mut held,
            Input::Cancel {
                reason: "cancelled by `baton cancel`".into(),
            },
        );
        self.release(held);
        r
    }

    /// Task `id` became CANCELLED while this cancel waited: by its runner,
    /// as this cancel asked (`Ok`), or by another `baton cancel` that took
    /// it first (refused as a second cancel is, naming that one).
    fn cancelled_by_another(&self, id: &TaskId, snap: &baton_store::TaskSnapshot) -> Result<()> {
        let from = snap.state.last_seq.saturating_sub(8);
        let events = self.store.events(id, from, 16).unwrap_or_default();
        let by = events.iter().rev().find_map(|r| match &r.event {
            baton_core::Event::Claimed { command, owner } => {
                (command == CANCEL_COMMAND).then(|| owner.clone()).map(Some)
            }
            _ => None,
        });
        match by.flatten() {
            Some(owner) => Err(Error::bad_input(format!(
                "task {id} is already CANCELLED: another `baton cancel` ({owner}) cancelled it a moment before this one"
            ))
            .hint(format!(
                "it is stopped already; `baton resume {id} --from PHASE` runs phases again, `baton rm {id}` deletes its record"
            ))),
            None => Ok(()),
        }
    }

    /// `baton resume ID --queue`: hands a queued task that failed (or whose
    /// timer is due) back to the workers instead of running it here.
    pub fn requeue(&self, id: &TaskId, upgrade: bool) -> Result<Outcome> {
        let snap = self.load(id)?;
        if !snap.queued {
            return Err(Error::bad_input(format!(
                "task {id} was not queued, so it has no branch for workers to run it on"
            ))
            .hint(format!("run it here with `baton resume {id}`")));
        }
        // `--upgrade`: the edited workflow, checked before anything changes.
        let upgrade_to = if upgrade {
            let pinned = self.pinned(&snap.state.definition_hash)?;
            let new = self.check_definition(&snap.state, &pinned, true)?;
            if new.is_none() {
                self.observer.info(&format!(
                    "the workflow of task {id} has not changed since it started; nothing to adopt"
                ));
            }
            new
        } else {
            None
        };
        match self.status_of(&snap) {
            DisplayStatus::Queued | DisplayStatus::Complete if upgrade_to.is_some() => {}
            DisplayStatus::Queued => {
                self.observer
                    .info(&format!("task {id} is already QUEUED for the workers"));
                return Ok(Outcome::Queued);
            }
            DisplayStatus::Running => {
                let l = snap.lease.as_ref().expect("running has a lease");
                return Err(self.busy(id, l));
            }
            DisplayStatus::Complete | DisplayStatus::Cancelled => {
                return Err(Error::bad_input(format!(
                    "task {id} is {}; there is nothing left to run",
                    snap.state.status.as_str()
                ))
                .hint(format!(
                    "run phases again here with `baton resume {id} --from PHASE`"
                )));
            }
            DisplayStatus::Waiting => {
                if let Some(w) = self.wait_not_due(&snap.state) {
                    return Ok(Outcome::Waiting(w));
                }
            }
            DisplayStatus::Failed | DisplayStatus::Crashed => {}
        }
        let mut held = self.take(id, &snap, None)?;
        let result = (|| {
            if let Some(new) = upgrade_to {
                self.adopt_upgrade(&mut held, new)?;
            }
            match held.state.waiting_phase().map(|p| p.id.clone()) {
                Some(p) if held.state.status == TaskStatus::Waiting => {
                    self.decide_commit(&mut held, Input::TimerDue { phase: p })?
                }
                _ if held.state.status == TaskStatus::Failed => {
                    self.decide_commit(&mut held, Input::Resume { crashed: false })?
                }
                _ => {}
            }
            self.decide_commit(
                &mut held,
                Input::Note {
                    phase: None,
                    text: "handed back to the workers (`baton resume --queue`)".into(),
                },
            )
        })();
        // Releasing a queued task wakes idle workers.
        self.release(held);
        result?;
        self.observer
            .info(&format!("task {id} is handed back to the workers"));
        Ok(Outcome::Queued)
    }

    /// `baton rm`: deletes a task's record, rendered files and hidden refs.
    /// The agent instances its phases started end with it when the caller
    /// then calls `instances::task_stopped`.
    pub fn remove(&self, id: &TaskId) -> Result<()> {
        let snap = self.load(id)?;
        if let (Liveness::Live, Some(l)) = (self.liveness(snap.lease.as_ref()), &snap.lease) {
            return Err(self.busy(id, l));
        }
        if let Some(p) = snap.state.in_progress().and_then(|p| p.process.clone())
            && self.ran_here(&snap)
        {
            process::kill_orphan(&p);
        }
        self.store.delete_task(id)?;
        let dir = self.project.task_dir(id);
        if dir.exists() {
            fs_err::remove_dir_all(&dir)?;
        }
        if let Some(g) = &self.git {
            let _ = g.delete_refs(&format!("refs/baton/{id}/"));
            let wt = self.project.baton_dir().join("worktrees").join(id.as_str());
            if wt.exists() {
                // Without --force: git refuses when the worktree holds changes
                // not committed; its branch baton/<id> keeps every commit.
                let path = wt.display().to_string();
                if let Err(e) = g.run(&["worktree", "remove", &path], &[]) {
                    self.observer.info(&format!(
                        "kept the worktree {path}: {e} (branch baton/{id} keeps its commits)"
                    ));
                }
            }
        }
        if self.project.current_task().as_ref() == Some(id) {
            let _ = std::fs::remove_file(self.project.current_file());
        }
        Ok(())
    }

    /// `baton clean`: the completed tasks whose records would be deleted.
    pub fn clean_candidates(&self) -> Result<Vec<TaskId>> {
        Ok(self
            .list()?
            .into_iter()
            .filter(|(_, d)| *d == DisplayStatus::Complete)
            .map(|(t, _)| t.id)
            .collect())
    }

    /// Deletes the records of completed tasks, keeping their rendered files
    /// (marked as cleaned, so `doctor` does not rebuild them).
    pub fn clean(&self, ids: &[TaskId]) -> Result<usize> {
        let mut n = 0;
        for id in ids {
            let dir = self.project.task_dir(id);
            if dir.is_dir() {
                let stamp = format!("record deleted by `baton clean` at {}\n", self.now());
                render::atomic_write(&dir.join(CLEANED), stamp.as_bytes())?;
            }
            if self.store.delete_task(id)? {
                n += 1;
            }
        }
        Ok(n)
    }
}
