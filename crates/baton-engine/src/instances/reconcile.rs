//! `baton doctor` for agent instances: every instance, worktree and branch
//! accounted for. An instance whose worktree is gone, or whose start was
//! cut short (a crash between its record and its worktree, or between its
//! worktree and its agent's first turn), is marked failed; the worktrees and branches baton recorded for instances that
//! ended are removed with `--fix`, except those holding work, which are
//! kept and said (`kept`, no problem: `--fix` never removes them, so
//! `doctor` does not fail over them). What baton owns is known from the
//! store (the instance's recorded resources, or the worktree and branch
//! it was to get), never from a name pattern.

use super::{Agents, cleanup::Removal};
use crate::finding::Finding;
use baton_core::instance::{self, ErrorCode, Input, Instance, Status};
use std::path::{Path, PathBuf};

impl Agents<'_> {
    /// The doctor's findings; with `fix`, the repairs made.
    pub fn reconcile(&self, fix: bool) -> Vec<Finding> {
        let mut out = Vec::new();
        let all = match self.eng.store.instances() {
            Ok(a) => a,
            Err(e) => {
                out.push(Finding::problem(
                    format!("agent instances cannot be read: {e}"),
                    "run `baton doctor` again once the store is repaired",
                ));
                return out;
            }
        };
        // The rows must be what the journal says.
        if let Ok(records) = crate::store::all_instance_events(&*self.eng.store) {
            let replayed = instance::replay(&records);
            if replayed.by_id != all.by_id {
                let differ: Vec<String> = all
                    .by_id
                    .keys()
                    .chain(replayed.by_id.keys())
                    .filter(|id| all.get(id) != replayed.get(id))
                    .map(|id| id.to_string())
                    .collect();
                out.push(Finding::problem(
                    format!(
                        "the agent instances' rows differ from their journal: {}",
                        differ.join(", ")
                    ),
                    "restore the store from a backup; the journal is the truth",
                ));
            }
        }
        let now = self.eng.now();
        // Past their deadline: the next command fails them; --fix does now.
        for input in instance::due(&all, now) {
            let Input::TimedOut { id } = &input else {
                continue;
            };
            if fix {
                if self.step(input.clone()).is_ok() {
                    out.push(Finding::fixed(format!(
                        "agent instance {id} ran past its timeout: marked failed"
                    )));
                }
            } else {
                out.push(Finding::problem(
                    format!("agent instance {id} has run past its timeout"),
                    "run `baton doctor --fix` (or any `baton agent` command) to mark it failed",
                ));
            }
        }
        let all = self.eng.store.instances().unwrap_or(all);
        for i in all.by_id.values().filter(|i| !i.status.ended()) {
            if let Some(why) = self.lost(i, now.millis()) {
                let code = ErrorCode::ResourceAllocationFailed;
                if fix {
                    let failed = self.step(Input::Fail {
                        id: i.id.clone(),
                        code,
                        reason: why.clone(),
                    });
                    if failed.is_ok() {
                        out.push(Finding::fixed(format!(
                            "agent instance {}: {why}; marked failed ({code})",
                            i.id
                        )));
                    }
                } else {
                    out.push(Finding::problem(
                        format!("agent instance {} is {} but {why}", i.id, i.status.as_str()),
                        "run `baton doctor --fix` to mark it failed",
                    ));
                }
            }
        }
        // What ended instances still hold.
        let all = self.eng.store.instances().unwrap_or(all);
        let mut removal = Removal::default();
        for i in all.by_id.values().filter(|i| i.status.ended()) {
            let (path, branch) = self.owned(i);
            let here = path.exists() || self.git.resolve(&format!("refs/heads/{branch}")).is_some();
            if !here {
                continue;
            }
            if fix {
                let r = self.clean_up_quietly(&i.id, true);
                removal.removed.extend(r.removed);
                removal.kept.extend(r.kept);
                removal.failed.extend(r.failed);
            } else if let Some(why) = self.kept_for_good(i, &all) {
                removal.kept.push((i.id.clone(), why));
            } else {
                out.push(Finding::problem(
                    format!(
                        "agent instance {} ended ({}) but its worktree {} or branch {branch} remains",
                        i.id,
                        i.status.as_str(),
                        path.display()
                    ),
                    "run `baton doctor --fix` to remove them (a worktree or branch holding work is kept)",
                ));
            }
        }
        for (id, what) in removal.removed {
            out.push(Finding::fixed(format!(
                "agent instance {id} had ended: removed its {what}"
            )));
        }
        for (id, why) in removal.kept {
            out.push(Finding::kept(
                format!("agent instance {id} has ended; its worktree and branch are kept: {why}"),
                "push or merge that work (or discard it yourself); baton never deletes it",
            ));
        }
        for (id, e) in removal.failed {
            out.push(Finding::problem(
                format!("agent instance {id}: {}: {e}", ErrorCode::CleanupFailed),
                "see the error; `git worktree list` shows the worktrees",
            ));
        }
        out.push(Finding::ok(format!(
            "{} agent instance(s) accounted for",
            all.by_id.len()
        )));
        out
    }

    /// Why `--fix` would keep what ended instance `i` holds, if it would:
    /// its settings say so, or it holds work (as the clean-up judges it).
    fn kept_for_good(&self, i: &Instance, all: &instance::Instances) -> Option<String> {
        if let instance::Config::Review(rc) = &i.config
            && rc.preserve_changes
        {
            return Some("[instances.review] preserve_changes = true".into());
        }
        let (path, branch) = self.owned(i);
        let base = super::diff::base_of(i, all);
        match self.git.held_by(&path, &branch, &base) {
            Ok(baton_sys::git::Held::Nothing) | Err(_) => None,
            Ok(held) => Some(held.reason()),
        }
    }

    /// Why a live instance cannot go on, if it cannot.
    fn lost(&self, i: &Instance, now_ms: i64) -> Option<String> {
        if i.status == Status::Started {
            // Its worktree is made within moments of its record: silent
            // for a lease's time to live, the process making it is gone.
            return (now_ms - i.updated_at.millis() > self.eng.ttl_ms())
                .then(|| "its start was cut short (no worktree and agent were recorded)".into());
        }
        if i.status == Status::Working
            && i.turns.is_empty()
            && i.resources.session_name.is_none()
            && now_ms - i.updated_at.millis() > self.eng.ttl_ms()
        {
            // Its first turn starts within moments of its allocation: the
            // process that was to start it is gone, and its agent would
            // never run (the baton-sim simulator and a crash point found it).
            return Some(
                "its start was cut short (its worktree was made, its agent's first turn never started)".into(),
            );
        }
        let path = i.resources.worktree_path.as_deref()?;
        if !Path::new(path).is_dir() {
            return Some(format!("its worktree {path} is gone"));
        }
        let name = i.resources.session_name.as_deref()?;
        if let Some(h) = &i.resources.session_host {
            let local = self.eng.local();
            if h.host == local.host && h.boot_id != local.boot_id {
                return Some(format!(
                    "its tmux session {name} ended with the machine's last boot"
                ));
            }
            // Another host's or container's tmux server is not ours to
            // see: it is judged where it runs, never gone from here.
            if self.session_elsewhere(i).is_some() {
                return None;
            }
        }
        (!self.tmux().has_session(name)).then(|| format!("its tmux session {name} is gone"))
    }

    /// The worktree and branch baton made (or was making) for `i`.
    pub(super) fn owned(&self, i: &Instance) -> (PathBuf, String) {
        let path = i
            .resources
            .worktree_path
            .as_deref()
            .map(PathBuf::from)
            .unwrap_or_else(|| self.worktree_path(&i.id));
        let branch = i
            .resources
            .branch
            .clone()
            .unwrap_or_else(|| match &i.config {
                instance::Config::Coding(c) => c
                    .target_branch
                    .clone()
                    .unwrap_or_else(|| format!("baton/{}", i.id)),
                instance::Config::Review(_) => format!("baton/{}", i.id),
            });
        (path, branch)
    }
}
