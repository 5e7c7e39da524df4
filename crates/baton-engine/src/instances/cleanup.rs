//! Ending instances and giving back what they held: `baton agent kill`
//! (an instance and its live reviews), timeouts enforced from the store by
//! whichever baton process looks next (the instance's own may be long
//! gone), and removing an ended instance's worktree and branch only when
//! that loses no work: uncommitted changes, or commits that no other
//! branch, no remote and not the base hold, keep both, and the user is
//! told why. An instance a workflow phase started ends with its task
//! too: cancelled or removed (terminated), or complete (finished).

use super::{Agents, found};
use crate::config::CleanupPolicy;
use crate::error::Result;
use baton_core::instance::{self, Config, Input, InstanceId, Instances, Status};
use baton_core::lease::DisplayStatus;
use baton_core::state::TaskStatus;
use baton_sys::git::Held;
use std::path::Path;

/// What cleaning up did, instance by instance.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Removal {
    /// Worktrees and branches removed.
    pub removed: Vec<(InstanceId, String)>,
    /// Kept, and why (work they hold, or the settings).
    pub kept: Vec<(InstanceId, String)>,
    /// Could not be removed (recorded as `WORKFLOW_CLEANUP_FAILED`).
    pub failed: Vec<(InstanceId, String)>,
}

impl Removal {
    /// As `baton agent kill --json` and the API show it.
    pub fn to_json(&self) -> serde_json::Value {
        let pairs = |v: &[(InstanceId, String)]| -> Vec<serde_json::Value> {
            v.iter()
                .map(|(i, s)| serde_json::json!({"instance": i, "detail": s}))
                .collect()
        };
        serde_json::json!({
            "removed": pairs(&self.removed),
            "kept": pairs(&self.kept),
            "failed": pairs(&self.failed),
        })
    }

    fn extend(&mut self, other: Removal) {
        self.removed.extend(other.removed);
        self.kept.extend(other.kept);
        self.failed.extend(other.failed);
    }

    /// One line for a hint.
    pub fn summary(&self) -> String {
        let mut parts = Vec::new();
        for (id, what) in &self.removed {
            parts.push(format!("{id}: removed {what}"));
        }
        for (id, why) in &self.kept {
            parts.push(format!("{id}: kept its worktree and branch: {why}"));
        }
        for (id, e) in &self.failed {
            parts.push(format!("{id}: cleanup failed: {e}"));
        }
        if parts.is_empty() {
            "nothing to clean up".into()
        } else {
            parts.join("; ")
        }
    }
}

impl Agents<'_> {
    /// `terminate`: ends `id` and its live reviews, stops their agents and
    /// removes what they held that loses no work.
    pub fn kill(&self, id: &InstanceId, reason: &str) -> Result<Removal> {
        self.tick()?;
        let before = self.eng.store.instances()?;
        let after = self.step(Input::Terminate {
            id: id.clone(),
            reason: reason.to_string(),
        })?;
        let mut removal = Removal::default();
        for ended in newly_ended(&before, &after) {
            removal.extend(self.clean_up(&ended));
        }
        Ok(removal)
    }

    /// What every command does first: instances past their deadline fail
    /// (`WORKFLOW_EXECUTION_TIMEOUT`, `WORKFLOW_REVIEW_TIMEOUT`), those
    /// whose workflow task has ended end with it, feedback that waits is
    /// delivered, and ended instances give back what they held. Returns
    /// the instances after it.
    pub fn tick(&self) -> Result<Instances> {
        let before = self.eng.store.instances()?;
        for input in instance::due(&before, self.eng.now()) {
            // Refused: another process timed it out first.
            let _ = self.step(input);
        }
        for input in self.ended_with_their_tasks(&before) {
            // Refused: another process ended it first.
            let _ = self.step(input);
        }
        let all = self.eng.store.instances()?;
        self.deliver_feedback(&all)?;
        self.deliver_comments(&all)?;
        for i in all.by_id.values().filter(|i| i.status.ended()) {
            let holds = i
                .resources
                .worktree_path
                .as_deref()
                .is_some_and(|p| Path::new(p).exists())
                || i.resources
                    .branch
                    .as_deref()
                    .is_some_and(|b| self.git.resolve(&format!("refs/heads/{b}")).is_some());
            let turn_live = self.last_turn(i).is_some_and(|(_, s)| turn_is_live(s));
            // A review that decided (merge-back, push) did so from its
            // agent's own turn, which is still ending: stopping it would
            // lose its last words. The next tick cleans up after it.
            if turn_live && i.review().is_some_and(|r| r.decision.is_some()) {
                continue;
            }
            let running = turn_live
                || i.resources
                    .session_name
                    .as_deref()
                    .is_some_and(|n| self.tmux().has_session(n));
            if holds || running {
                self.clean_up_quietly(&i.id, false);
            }
        }
        Ok(self.eng.store.instances()?)
    }

    /// The live instances started for a workflow phase whose task ended
    /// without ending them: cancelled or removed (terminated), or complete
    /// (finished; a crash between the phase's end and its instance's).
    /// One waiting on its pull request is left to it.
    fn ended_with_their_tasks(&self, all: &Instances) -> Vec<Input> {
        let mut out = Vec::new();
        for i in all.by_id.values() {
            if i.status.ended() || i.status == Status::PrCreated {
                continue;
            }
            let Config::Coding(c) = &i.config else {
                continue;
            };
            let Some(f) = &c.for_phase else { continue };
            let id = i.id.clone();
            let task = &f.task;
            let terminate = |reason: String| Input::Terminate {
                id: id.clone(),
                reason,
            };
            out.push(match self.eng.store.load(task) {
                Ok(None) => terminate(format!("its task {task} was removed")),
                Ok(Some(snap)) => match snap.state.status {
                    TaskStatus::Complete
                        if i.status == Status::Working
                            && i.coding()
                                .is_some_and(|s| s.current_review_instance_id.is_none()) =>
                    {
                        Input::Finish {
                            id: id.clone(),
                            reason: format!("its task {task} is complete"),
                        }
                    }
                    TaskStatus::Complete => terminate(format!("its task {task} is complete")),
                    TaskStatus::Cancelled => terminate(format!("its task {task} was cancelled")),
                    _ => continue,
                },
                Err(_) => continue,
            });
        }
        out
    }

    /// Stops an ended instance's agent turn (not the one this process runs
    /// in: that one ends by itself) and removes its worktree and branch
    /// if that loses nothing. A failure is journaled.
    pub(super) fn clean_up(&self, id: &InstanceId) -> Removal {
        let removal = self.clean_up_quietly(id, false);
        for (i, e) in &removal.failed {
            let _ = self.step(Input::CleanupFailed {
                id: i.clone(),
                error: e.clone(),
            });
        }
        removal
    }

    /// `forced` (`doctor --fix`): also under `cleanup_policy = "manual"`.
    pub(super) fn clean_up_quietly(&self, id: &InstanceId, forced: bool) -> Removal {
        let mut out = Removal::default();
        let all = match self.eng.store.instances() {
            Ok(a) => a,
            Err(e) => {
                out.failed.push((id.clone(), e.to_string()));
                return out;
            }
        };
        let Ok(i) = found(&all, id) else { return out };
        if let Some((task, status)) = self.last_turn(i)
            && turn_is_live(status)
        {
            if own_turn(&task) {
                // Removing the worktree under our own agent: later, once
                // its turn has ended (the next command does it).
                out.kept.push((
                    id.clone(),
                    format!("its agent's turn {task} is still ending"),
                ));
                return out;
            }
            if let Err(e) = self.eng.cancel(&task) {
                out.failed.push((
                    id.clone(),
                    format!("cannot stop its turn {task}: {}", e.message),
                ));
                return out;
            }
        }
        if let Err(e) = self.end_session(i) {
            out.failed
                .push((id.clone(), format!("cannot end its tmux session: {e}")));
            return out;
        }
        if self.settings.cleanup_policy == CleanupPolicy::Manual && !forced {
            out.kept
                .push((id.clone(), "[instances] cleanup_policy = \"manual\"".into()));
            return out;
        }
        if let Config::Review(rc) = &i.config
            && rc.preserve_changes
        {
            out.kept.push((
                id.clone(),
                "[instances.review] preserve_changes = true".into(),
            ));
            return out;
        }
        let (path, branch) = self.owned(i);
        // Only what baton made is said removed: a spawn that failed before
        // its worktree or branch existed removed neither.
        let had_path = path.exists();
        let had_branch = self.git.resolve(&format!("refs/heads/{branch}")).is_some();
        if !had_path && !had_branch {
            return out;
        }
        let path = path.display().to_string();
        let branch = &branch;
        // What its commits must be held by: its base (a review's parent's
        // branch).
        let base = super::diff::base_of(i, &all);
        match self
            .git
            .remove_if_nothing_held(Path::new(&path), branch, &base)
        {
            Ok(Held::Nothing) => out.removed.push((
                id.clone(),
                match (had_path, had_branch) {
                    (true, true) => format!("worktree {path} and branch {branch}"),
                    (true, false) => format!("worktree {path}"),
                    _ => format!("branch {branch}"),
                },
            )),
            Ok(held) => out.kept.push((id.clone(), held.reason())),
            Err(e) => out.failed.push((id.clone(), e.to_string())),
        }
        out
    }
}

/// A turn whose task may still have a process: it must be stopped.
fn turn_is_live(s: DisplayStatus) -> bool {
    matches!(
        s,
        DisplayStatus::Running
            | DisplayStatus::Crashed
            | DisplayStatus::Waiting
            | DisplayStatus::Queued
    )
}

/// Whether this process runs inside `task` (an agent calling baton).
fn own_turn(task: &baton_core::TaskId) -> bool {
    std::env::var("BATON_TASK_ID").is_ok_and(|t| t == task.as_str())
}

/// The instances live in `before` and ended in `after`.
fn newly_ended(before: &Instances, after: &Instances) -> Vec<InstanceId> {
    after
        .by_id
        .values()
        .filter(|i| i.status.ended())
        .filter(|i| before.get(&i.id).is_some_and(|b| !b.status.ended()))
        .map(|i| i.id.clone())
        .collect()
}
