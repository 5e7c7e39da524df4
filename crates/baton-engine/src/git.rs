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

/// The repository holding a project. Commands run at the top of the work
/// tree, so checkpoints cover the whole repository even when the project
/// (its `.baton/`) sits in a subfolder.
pub struct Git {
    root: PathBuf,
    /// The project's `.baton/` relative to the top, as an exclude pathspec.
    exclude_baton: String,
    baton_path: String,
}

impl Git {
    /// The repository containing `project`, if it is inside a git work tree.
    pub fn open(project: &Path) -> Option<Git> {
        let probe = Git {
            root: project.to_path_buf(),
            exclude_baton: String::new(),
            baton_path: String::new(),
        };
        let top = probe.run(&["rev-parse", "--show-toplevel"], &[]).ok()?;
        let top = PathBuf::from(top.trim());
        let rel = std::fs::canonicalize(project)
            .ok()?
            .strip_prefix(std::fs::canonicalize(&top).ok()?)
            .ok()?
            .join(".baton");
        let baton_path = rel.to_string_lossy().into_owned();
        Some(Git {
            root: top,
            exclude_baton: format!(":(exclude,top){baton_path}"),
            baton_path,
        })
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

    /// Stages every file of the work tree (untracked too, ignored ones not)
    /// and unstages the project's `.baton/`, in the index `env` names.
    fn stage_all(&self, env: &[(&str, &str)]) -> Result<(), GitError> {
        self.run(&["add", "-A", "--", ":/", &self.exclude_baton], env)?;
        let rm = ["rm", "-r", "-q", "--cached", "--ignore-unmatch", "--"];
        let mut args = rm.to_vec();
        args.push(&self.baton_path);
        self.run(&args, env)?;
        Ok(())
    }

    /// A commit holding the whole work tree (tracked and untracked, not
    /// ignored, the project's `.baton/` left out), parented on HEAD, kept by
    /// `refname`.
    pub fn snapshot(&self, refname: &str, message: &str) -> Result<String, GitError> {
        let index = tempfile_path(&self.root);
        let index_s = index.to_string_lossy().into_owned();
        let env = [("GIT_INDEX_FILE", index_s.as_str())];
        let result = (|| {
            if self.head().is_some() {
                self.run(&["read-tree", "HEAD"], &env)?;
            }
            self.stage_all(&env)?;
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

    /// Why the work tree cannot be put back to `cp` as it stands, if so:
    /// a checkpoint is only restored onto the branch it was taken on.
    pub fn restore_blocker(&self, cp: &Checkpoint) -> Option<String> {
        let current = self.branch();
        match (&cp.branch, current) {
            (Some(want), Some(cur)) if *want != cur => Some(format!(
                "the work tree is on branch {cur}, but the checkpoint was taken on {want}; run `git checkout {want}` first"
            )),
            (Some(want), None) => Some(format!(
                "HEAD is detached, but the checkpoint was taken on branch {want}; run `git checkout {want}` first"
            )),
            _ => None,
        }
    }

    /// Puts the work tree back to a checkpoint. Everything there before is
    /// first saved as a commit under `safety_ref` (files, untracked ones too,
    /// and the old branch tip as its parent), so nothing is ever lost. The
    /// branch is moved back to the checkpoint's HEAD, the checkpoint's files
    /// are laid down as uncommitted changes, files it lacks are removed;
    /// ignored files and the project's `.baton/` are never touched.
    pub fn restore(&self, cp: &Checkpoint, safety_ref: &str) -> Result<String, GitError> {
        if let Some(why) = self.restore_blocker(cp) {
            return Err(GitError {
                args: "restore".into(),
                stderr: why,
            });
        }
        let saved = self.snapshot(safety_ref, "baton: work tree before restoring a checkpoint")?;
        if let Some(head) = &cp.head
            && self.head().as_deref() != Some(head.as_str())
        {
            self.run(&["reset", "-q", "--soft", head], &[])?;
        }
        if let Some(snap) = &cp.snapshot {
            // Index = every file now present (minus .baton), so read-tree
            // removes exactly those the checkpoint lacks.
            self.stage_all(&[])?;
            self.run(&["read-tree", "--reset", "-u", snap], &[])?;
            if self.head().is_some() {
                self.run(&["reset", "-q"], &[])?;
            } else {
                self.run(&["read-tree", "--empty"], &[])?;
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
