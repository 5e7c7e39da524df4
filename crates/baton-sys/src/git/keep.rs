//! Whether removing a worktree and its branch would lose work, and removing
//! them only when it would not: uncommitted or untracked changes in the
//! worktree, or commits on the branch that no other branch, no
//! remote-tracking branch and not the base hold, keep both (and say why).
//! A branch whose changes reached the base by a squash merge, a rebase or
//! a cherry-pick is seen as merged. Ignored files are not work, nor is
//! what a run left of baton's own in a file (`Git::knowing_run_files`).

use super::{Git, GitError};
use std::path::Path;

/// What removing a worktree and its branch would lose.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Held {
    /// Nothing: every commit is on another branch, a remote or the base,
    /// and the worktree is clean.
    Nothing,
    /// Files changed and not committed (or not tracked), as `git status`
    /// names them.
    Uncommitted(Vec<String>),
    /// Commits that are on no other branch, no remote and not in the base.
    Unpushed(usize),
}

impl Held {
    /// Why it is kept, for the user.
    pub fn reason(&self) -> String {
        match self {
            Held::Nothing => "nothing would be lost".into(),
            Held::Uncommitted(files) => {
                let shown: Vec<&str> = files.iter().take(5).map(String::as_str).collect();
                let more = files.len().saturating_sub(shown.len());
                format!(
                    "it holds changes not committed: {}{}",
                    shown.join(", "),
                    if more > 0 {
                        format!(" and {more} more")
                    } else {
                        String::new()
                    }
                )
            }
            Held::Unpushed(n) => format!(
                "its branch has {n} commit{} on no other branch or remote and not in the base",
                if *n == 1 { "" } else { "s" }
            ),
        }
    }
}

impl Git {
    /// What removing `worktree` (if it exists) and `branch` would lose,
    /// with `base` the branch its work goes into.
    pub fn held_by(&self, worktree: &Path, branch: &str, base: &str) -> Result<Held, GitError> {
        if worktree.is_dir() {
            let wt = worktree.display().to_string();
            let status = self.run(
                &[
                    "-C",
                    &wt,
                    "status",
                    "--porcelain=v1",
                    "-z",
                    "--untracked-files=all",
                ],
                &[],
            )?;
            // What a run left there of baton's own (a brief, its MCP
            // server) is not work when, without it, the file is as
            // committed.
            let batons = self.run_files_in(worktree).unwrap_or_default();
            let only_batons = |path: &str| {
                batons.iter().any(|(rel, without)| {
                    rel == path
                        && match without {
                            None => true,
                            Some(text) => self
                                .run(&["-C", &wt, "show", &format!("HEAD:{rel}")], &[])
                                .is_ok_and(|head| &head == text),
                        }
                })
            };
            let files: Vec<String> = status
                .split('\0')
                .filter(|e| e.len() > 3)
                .map(|e| e[3..].to_string())
                .filter(|f| !only_batons(f))
                .collect();
            if !files.is_empty() {
                return Ok(Held::Uncommitted(files));
            }
        }
        let branch_ref = format!("refs/heads/{branch}");
        if self.resolve(&branch_ref).is_none() {
            return Ok(Held::Nothing);
        }
        // Commits only this branch has (`--exclude` patterns for
        // `--branches` name branches without `refs/heads/`).
        let only = self.run(
            &[
                "rev-list",
                &branch_ref,
                "--not",
                &format!("--exclude={branch}"),
                "--branches",
                "--remotes",
            ],
            &[],
        )?;
        let only = only.lines().filter(|l| !l.is_empty()).count();
        if only == 0 || self.merged_into(&branch_ref, base)? {
            return Ok(Held::Nothing);
        }
        Ok(Held::Unpushed(only))
    }

    /// Whether the changes of `branch` are already in `base`, commit by
    /// commit (a rebase or cherry-pick) or as one (a squash merge).
    fn merged_into(&self, branch: &str, base: &str) -> Result<bool, GitError> {
        let Some(base) = self.resolve(base) else {
            return Ok(false);
        };
        let cherry = |upstream: &str, head: &str| -> Result<bool, GitError> {
            let out = self.run(&["cherry", upstream, head], &[])?;
            Ok(out.lines().all(|l| l.starts_with('-')))
        };
        if cherry(&base, branch)? {
            return Ok(true);
        }
        let Ok(fork) = self.run(&["merge-base", &base, branch], &[]) else {
            return Ok(false);
        };
        let tree = self.run(&["rev-parse", &format!("{branch}^{{tree}}")], &[])?;
        let squashed = self.run(
            &[
                "commit-tree",
                tree.trim(),
                "-p",
                fork.trim(),
                "-m",
                "baton: the branch as one commit",
            ],
            &super::IDENT,
        )?;
        cherry(&base, squashed.trim())
    }

    /// Removes `worktree` and `branch` if that loses nothing (`Held::Nothing`
    /// returned); otherwise leaves both and returns what they hold.
    pub fn remove_if_nothing_held(
        &self,
        worktree: &Path,
        branch: &str,
        base: &str,
    ) -> Result<Held, GitError> {
        let held = self.held_by(worktree, branch, base)?;
        if held != Held::Nothing {
            tracing::debug!(worktree = %worktree.display(), branch, reason = held.reason(), "kept");
            return Ok(held);
        }
        if worktree.is_dir() {
            // Clean (checked above): git removes it without --force.
            self.run(
                &["worktree", "remove", &worktree.display().to_string()],
                &[],
            )?;
        }
        if self.resolve(&format!("refs/heads/{branch}")).is_some() {
            // -D: the branch may be merged only by squash, which -d
            // cannot see; its commits are held elsewhere (checked above).
            self.run(&["branch", "-D", branch], &[])?;
        }
        Ok(Held::Nothing)
    }
}
