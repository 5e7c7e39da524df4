//! Merging one branch into the branch checked out in a worktree, all or
//! nothing: on a conflict the merge is aborted, so the branch is exactly
//! as it was, and the conflicting files are named.

use super::{Git, IDENT};

/// Why a merge did not happen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MergeFailure {
    /// These files conflict; nothing was changed.
    Conflict(Vec<String>),
    /// git refused or failed (local changes in the way, no such branch…).
    Failed(String),
}

impl Git {
    /// `git merge --no-ff BRANCH` in this worktree, with `message`.
    pub fn merge_branch(&self, branch: &str, message: &str) -> Result<(), MergeFailure> {
        let merged = self.run(
            &["merge", "--no-ff", "--no-edit", "-q", "-m", message, branch],
            &IDENT,
        );
        let Err(e) = merged else { return Ok(()) };
        let conflicted = self
            .run(&["diff", "--name-only", "--diff-filter=U"], &[])
            .map(|out| {
                out.lines()
                    .map(str::trim)
                    .filter(|l| !l.is_empty())
                    .map(str::to_string)
                    .collect::<Vec<_>>()
            })
            .unwrap_or_default();
        if conflicted.is_empty() {
            return Err(MergeFailure::Failed(e.to_string()));
        }
        if let Err(abort) = self.run(&["merge", "--abort"], &[]) {
            return Err(MergeFailure::Failed(format!(
                "the merge conflicts in {} and could not be aborted: {abort}",
                conflicted.join(", ")
            )));
        }
        Err(MergeFailure::Conflict(conflicted))
    }
}
