//! What a task's work changed, as a person reviews it on the board: its
//! folder against where its first phase started (that phase's start
//! snapshot, so what was already uncommitted then is not counted as the
//! task's). A task working in a folder of its own (a queued task's
//! worktree, an agent instance's) is compared as that folder is now; one
//! in the project folder as it is now while it runs, and as its last phase
//! left it once it stopped, so a person's later edits there are not
//! counted as its work either.

use super::Engine;
use super::attempt_label;
use crate::error::{Error, Result};
use baton_core::TaskId;
use baton_core::lease::DisplayStatus;
use baton_store::TaskSnapshot;
use baton_sys::git::TreeDiff;
use std::path::PathBuf;

/// The largest unified diff an answer carries; the file list is whole.
pub const MAX_PATCH: usize = 2 * 1024 * 1024;

/// What a task (or an instance) changed.
#[derive(Debug, Clone, serde::Serialize)]
pub struct WorkDiff {
    /// The commit compared from; none before a first checkpoint (then
    /// nothing is compared).
    pub base: Option<String>,
    /// What was compared with it: `worktree` (the folder now) or the
    /// commit of the snapshot its last phase ended with.
    pub head: String,
    #[serde(flatten)]
    pub diff: TreeDiff,
}

impl Engine {
    /// Task `id`'s work against where it started.
    pub fn task_diff(&self, snap: &TaskSnapshot) -> Result<WorkDiff> {
        let state = &snap.state;
        let base = state
            .phases
            .iter()
            .filter(|p| p.started_at.is_some())
            .min_by_key(|p| p.started_at)
            .and_then(|p| p.checkpoint.as_ref())
            .and_then(|c| c.snapshot.clone().or_else(|| c.head.clone()));
        let (folder, own) = self.work_folder(snap)?;
        let Some(git) = crate::repo::open(&folder) else {
            return Ok(WorkDiff {
                base: None,
                head: "worktree".into(),
                diff: TreeDiff::default(),
            });
        };
        let Some(base) = base else {
            return Ok(WorkDiff {
                base: None,
                head: "worktree".into(),
                diff: TreeDiff::default(),
            });
        };
        let ended = !own && self.status_of(snap) != DisplayStatus::Running;
        let last_end = ended.then(|| last_end_snapshot(&git, state)).flatten();
        let (head, to) = match last_end {
            Some(c) => (c.clone(), c),
            None => (
                "worktree".to_string(),
                git.worktree_tree().map_err(git_failed)?,
            ),
        };
        let diff = git.diff_trees(&base, &to, MAX_PATCH).map_err(git_failed)?;
        Ok(WorkDiff {
            base: Some(base),
            head,
            diff,
        })
    }

    /// The folder task `snap` works in, and whether it is its own (a
    /// queued task's worktree, an agent instance's) rather than the
    /// project folder that others share.
    fn work_folder(&self, snap: &TaskSnapshot) -> Result<(PathBuf, bool)> {
        let id = &snap.state.task_id;
        let queued = self.project.baton_dir().join("worktrees").join(id.as_str());
        if queued.is_dir() {
            return Ok((queued, true));
        }
        if let Some(instance) = snap.state.labels.get(crate::builtin::INSTANCE_LABEL) {
            return Ok((self.instance_workspace(instance)?.cwd, true));
        }
        Ok((self.project.root.clone(), false))
    }
}

/// The snapshot the task's most recently ended attempt left
/// (`refs/baton/<id>/<attempt>/end`), if git still has it.
fn last_end_snapshot(git: &baton_sys::git::Git, state: &baton_core::TaskState) -> Option<String> {
    let id: &TaskId = &state.task_id;
    let (idx, p) = state
        .phases
        .iter()
        .enumerate()
        .filter(|(_, p)| p.completed_at.is_some() && p.checkpoint.is_some())
        .max_by_key(|(_, p)| p.completed_at)?;
    let label = attempt_label(idx, p.id.as_str(), p.iteration, p.attempt);
    git.resolve(&format!("refs/baton/{id}/{label}/end"))
}

/// The folder `folder` as it is now against `base` (a revision).
pub fn worktree_diff(folder: &std::path::Path, base: &str) -> Result<WorkDiff> {
    let git = crate::repo::open(folder)
        .ok_or_else(|| Error::op(format!("{} is not a git work tree", folder.display())))?;
    let base = git
        .resolve(base)
        .ok_or_else(|| Error::op(format!("{base} is not a commit in {}", folder.display())))?;
    let to = git.worktree_tree().map_err(git_failed)?;
    let diff = git.diff_trees(&base, &to, MAX_PATCH).map_err(git_failed)?;
    Ok(WorkDiff {
        base: Some(base),
        head: "worktree".into(),
        diff,
    })
}

fn git_failed(e: baton_sys::git::GitError) -> Error {
    Error::op(format!("cannot compare the task's work: {e}"))
}
