//! git through one typed subprocess wrapper: fixed environment, bounded
//! output, errors that keep the stderr tail. Used for phase checkpoints
//! (branch, HEAD, a snapshot commit of the whole worktree under a hidden
//! ref), files changed per phase, and restoring a checkpoint.

use baton_core::state::Checkpoint;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

#[derive(Debug, Clone, thiserror::Error)]
#[error("git {args} failed: {stderr}")]
pub struct GitError {
    pub args: String,
    pub stderr: String,
}

pub struct Git {
    root: PathBuf,
}

impl Git {
    /// The repository at `root`, if `root` is inside a git work tree.
    pub fn open(root: &Path) -> Option<Git> {
        let g = Git {
            root: root.to_path_buf(),
        };
        match g.run(&["rev-parse", "--is-inside-work-tree"], &[]) {
            Ok(out) if out.trim() == "true" => Some(g),
            _ => None,
        }
    }

    fn command(&self, args: &[&str], env: &[(&str, &str)]) -> Command {
        let mut c = Command::new("git");
        c.args(args)
            .current_dir(&self.root)
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("LC_ALL", "C")
            .env_remove("GIT_DIR")
            .env_remove("GIT_WORK_TREE")
            .env_remove("GIT_INDEX_FILE")
            .stdin(Stdio::null());
        for (k, v) in env {
            c.env(k, v);
        }
        c
    }

    /// Runs git and returns stdout; fails with the stderr tail.
    pub fn run(&self, args: &[&str], env: &[(&str, &str)]) -> Result<String, GitError> {
        let out = self.command(args, env).output().map_err(|e| GitError {
            args: args.join(" "),
            stderr: format!("cannot run git: {e}"),
        })?;
        if !out.status.success() {
            let stderr = String::from_utf8_lossy(&out.stderr);
            return Err(GitError {
                args: args.join(" "),
                stderr: crate::process::tail(&stderr, 2000).trim().to_string(),
            });
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    pub fn head(&self) -> Option<String> {
        self.run(&["rev-parse", "--verify", "-q", "HEAD"], &[])
            .ok()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
    }

    pub fn branch(&self) -> Option<String> {
        self.run(&["symbolic-ref", "--short", "-q", "HEAD"], &[])
            .ok()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
    }

    /// A commit holding the whole worktree (tracked and untracked, not
    /// ignored, `.baton/` left out), parented on HEAD, kept by `refname`.
    pub fn snapshot(&self, refname: &str, message: &str) -> Result<String, GitError> {
        let index = tempfile_path(&self.root);
        let index_s = index.to_string_lossy().into_owned();
        let env = [("GIT_INDEX_FILE", index_s.as_str())];
        let result = (|| {
            if self.head().is_some() {
                self.run(&["read-tree", "HEAD"], &env)?;
            }
            self.run(&["add", "-A", "--", ".", ":(exclude).baton"], &env)?;
            let tree = self.run(&["write-tree"], &env)?.trim().to_string();
            let mut args = vec!["commit-tree", tree.as_str(), "-m", message];
            let head = self.head();
            if let Some(h) = &head {
                args.push("-p");
                args.push(h);
            }
            let ident = [
                ("GIT_INDEX_FILE", index_s.as_str()),
                ("GIT_AUTHOR_NAME", "baton"),
                ("GIT_AUTHOR_EMAIL", "baton@localhost"),
                ("GIT_COMMITTER_NAME", "baton"),
                ("GIT_COMMITTER_EMAIL", "baton@localhost"),
            ];
            let commit = self.run(&args, &ident)?.trim().to_string();
            self.run(&["update-ref", refname, &commit], &[])?;
            Ok(commit)
        })();
        let _ = std::fs::remove_file(&index);
        result
    }

    /// Branch, HEAD and a snapshot of the worktree under `refname`.
    pub fn checkpoint(&self, refname: &str, message: &str) -> Result<Checkpoint, GitError> {
        let snapshot = self.snapshot(refname, message)?;
        Ok(Checkpoint {
            branch: self.branch(),
            head: self.head(),
            snapshot: Some(snapshot),
            snapshot_ref: Some(refname.to_string()),
        })
    }

    /// Files that differ between two commits (or trees).
    pub fn changed_files(&self, from: &str, to: &str) -> Result<Vec<String>, GitError> {
        let out = self.run(
            &["diff", "--name-only", "--no-renames", "-z", from, to],
            &[],
        )?;
        Ok(out
            .split('\0')
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect())
    }

    /// Puts the worktree back to a checkpoint. What was there before is
    /// first saved under `safety_ref`, so nothing is ever lost: if HEAD moved
    /// on since the checkpoint, the branch is reset to it and the newer
    /// commits stay reachable from the safety ref.
    pub fn restore(&self, cp: &Checkpoint, safety_ref: &str) -> Result<String, GitError> {
        let saved = self.snapshot(safety_ref, "baton: worktree before restoring a checkpoint")?;
        if let Some(head) = &cp.head
            && self.head().as_deref() != Some(head.as_str())
        {
            self.run(&["reset", "-q", "--hard", head], &[])?;
        }
        if let Some(snap) = &cp.snapshot {
            // Remove untracked files, then lay the snapshot's files down and
            // leave them as uncommitted changes, as they were.
            self.run(&["clean", "-fdq", "-e", ".baton", "--", "."], &[])?;
            self.run(
                &["checkout", "-f", snap, "--", ".", ":(exclude).baton"],
                &[],
            )?;
            self.run(&["reset", "-q"], &[])?;
            // Files the snapshot lacks but HEAD has were deleted at the time.
            for f in self.changed_files(snap, "HEAD").unwrap_or_default() {
                if self
                    .run(&["cat-file", "-e", &format!("{snap}:{f}")], &[])
                    .is_err()
                {
                    let _ = std::fs::remove_file(self.root.join(&f));
                }
            }
        }
        Ok(saved)
    }

    /// Deletes every ref under `prefix` (e.g. `refs/baton/TASK/`).
    pub fn delete_refs(&self, prefix: &str) -> Result<usize, GitError> {
        let out = self.run(&["for-each-ref", "--format=%(refname)", prefix], &[])?;
        let mut n = 0;
        for r in out.lines().filter(|l| !l.is_empty()) {
            self.run(&["update-ref", "-d", r], &[])?;
            n += 1;
        }
        Ok(n)
    }

    /// Task ids that have refs under `refs/baton/`.
    pub fn ref_tasks(&self) -> Vec<String> {
        let out = self
            .run(&["for-each-ref", "--format=%(refname)", "refs/baton/"], &[])
            .unwrap_or_default();
        let mut ids: Vec<String> = out
            .lines()
            .filter_map(|l| l.strip_prefix("refs/baton/"))
            .filter_map(|l| l.split('/').next())
            .map(str::to_string)
            .collect();
        ids.sort();
        ids.dedup();
        ids
    }
}

fn tempfile_path(root: &Path) -> PathBuf {
    let git_dir = root.join(".git");
    let dir = if git_dir.is_dir() {
        git_dir
    } else {
        std::env::temp_dir()
    };
    let n = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    dir.join(format!("baton-index-{}-{n}", std::process::id()))
}
