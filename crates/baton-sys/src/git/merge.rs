//! Merging one branch into the branch checked out in a worktree, all or
//! nothing: on a conflict the merge is aborted, so the branch is exactly
//! as it was, and the conflicting files are named. And a merge computed
//! without a work tree (`merge-tree`), for a team's consolidation.

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

/// What merging a commit into another gives, computed without a work tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TreeMerge {
    /// The merged tree.
    Clean(String),
    /// These files conflict.
    Conflict(Vec<String>),
}

impl Git {
    /// The tree of merging `theirs` into `ours` (both commits), with their
    /// merge base, through `git merge-tree --write-tree`: no work tree,
    /// index or ref is touched.
    pub fn merge_tree(&self, ours: &str, theirs: &str) -> Result<TreeMerge, super::GitError> {
        let args = [
            "merge-tree",
            "--write-tree",
            "--name-only",
            "--no-messages",
            ours,
            theirs,
        ];
        let out = self
            .command(&args, &[])
            .output()
            .map_err(|e| super::GitError {
                args: args.join(" "),
                stderr: format!("cannot run git: {e}"),
            })?;
        let stdout = String::from_utf8_lossy(&out.stdout);
        let mut lines = stdout.lines().map(str::trim).filter(|l| !l.is_empty());
        match (out.status.code(), lines.next()) {
            (Some(0), Some(tree)) => Ok(TreeMerge::Clean(tree.to_string())),
            (Some(1), Some(_)) => {
                let mut files: Vec<String> = lines.map(str::to_string).collect();
                files.dedup();
                Ok(TreeMerge::Conflict(files))
            }
            _ => Err(super::GitError {
                args: args.join(" "),
                stderr: crate::process::tail(&String::from_utf8_lossy(&out.stderr), 2000)
                    .trim()
                    .to_string(),
            }),
        }
    }
}
