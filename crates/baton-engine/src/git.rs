//! git through one typed subprocess wrapper: fixed environment, bounded
//! output, errors that keep the stderr tail. Used for phase checkpoints
//! (branch, HEAD, a snapshot commit of the whole worktree under a hidden
//! ref), files changed per phase, and restoring a checkpoint.

use baton_core::state::Checkpoint;
use std::os::unix::process::CommandExt;
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
#[derive(Debug, Clone)]
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
            .stdin(Stdio::null())
            // Its own process group: a Ctrl-C meant for baton must not kill
            // git halfway through a restore.
            .process_group(0);
        for (k, v) in env {
            c.env(k, v);
        }
        c
    }

    /// Runs git and returns stdout; fails with the stderr tail.
    pub fn run(&self, args: &[&str], env: &[(&str, &str)]) -> Result<String, GitError> {
        let started = std::time::Instant::now();
        let out = self.command(args, env).output().map_err(|e| {
            tracing::debug!(?args, error = %e, "git could not be started");
            GitError {
                args: args.join(" "),
                stderr: format!("cannot run git: {e}"),
            }
        })?;
        tracing::debug!(
            ?args,
            elapsed_ms = started.elapsed().as_millis() as u64,
            exit = out.status.code().unwrap_or(-1),
            "git"
        );
        if !out.status.success() {
            let stderr = String::from_utf8_lossy(&out.stderr);
            return Err(GitError {
                args: args.join(" "),
                stderr: crate::process::tail(&stderr, 2000).trim().to_string(),
            });
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// The commit a revision names, if it exists.
    pub fn resolve(&self, rev: &str) -> Option<String> {
        self.run(
            &["rev-parse", "--verify", "-q", &format!("{rev}^{{commit}}")],
            &[],
        )
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
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
        self.snapshot_with(refname, message, None)
    }

    /// [`Git::snapshot`] with a second parent (the saved index, for restores).
    fn snapshot_with(
        &self,
        refname: &str,
        message: &str,
        second_parent: Option<&str>,
    ) -> Result<String, GitError> {
        // In the repository's own git folder (a worktree's is under the
        // main one's .git/worktrees/), so a process killed mid-snapshot
        // leaves nothing in the system temp dir.
        let git_dir = self
            .run(&["rev-parse", "--absolute-git-dir"], &[])
            .ok()
            .map(|d| PathBuf::from(d.trim()))
            .filter(|d| d.is_dir());
        let index = tempfile_path(git_dir.as_deref().unwrap_or(&self.root.join(".git")));
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
            if let Some(p) = second_parent {
                args.push("-p");
                args.push(p);
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
        let started = std::time::Instant::now();
        let snapshot = self.snapshot(refname, message)?;
        let cp = Checkpoint {
            branch: self.branch(),
            head: self.head(),
            snapshot: Some(snapshot),
            snapshot_ref: Some(refname.to_string()),
        };
        tracing::debug!(
            refname,
            snapshot = cp.snapshot.as_deref().unwrap_or(""),
            branch = cp.branch.as_deref().unwrap_or("(detached)"),
            head = cp.head.as_deref().unwrap_or("(none)"),
            elapsed_ms = started.elapsed().as_millis() as u64,
            "git checkpoint"
        );
        Ok(cp)
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
    /// another branch (or a detached HEAD where a branch was, or the other
    /// way round), an unfinished merge, or ignored files that the restore
    /// would overwrite or delete (they are in no snapshot).
    pub fn restore_blocker(&self, cp: &Checkpoint) -> Option<String> {
        let current = self.branch();
        match (&cp.branch, &current) {
            (Some(want), Some(cur)) if want != cur => {
                return Some(format!(
                    "the work tree is on branch {cur}, but the checkpoint was taken on {want}; run `git checkout {want}` first"
                ));
            }
            (Some(want), None) => {
                return Some(format!(
                    "HEAD is detached, but the checkpoint was taken on branch {want}; run `git checkout {want}` first"
                ));
            }
            (None, Some(cur)) if cp.head.is_some() => {
                let head = cp.head.as_deref().unwrap_or_default();
                return Some(format!(
                    "the checkpoint was taken on a detached HEAD ({}), but the work tree is on branch {cur}; run `git checkout --detach {}` first",
                    &head[..head.len().min(12)],
                    &head[..head.len().min(12)]
                ));
            }
            _ => {}
        }
        if self
            .run(&["ls-files", "-u"], &[])
            .is_ok_and(|o| !o.trim().is_empty())
        {
            return Some(
                "the index has unresolved merge conflicts; finish or abort the merge first".into(),
            );
        }
        if let Some(snap) = &cp.snapshot {
            let hit = self.ignored_in_the_way(snap);
            if !hit.is_empty() {
                let shown: Vec<&str> = hit.iter().take(5).map(String::as_str).collect();
                return Some(format!(
                    "ignored files would be overwritten or deleted and cannot be saved: {}{}; move them away first",
                    shown.join(", "),
                    if hit.len() > 5 {
                        format!(" and {} more", hit.len() - 5)
                    } else {
                        String::new()
                    }
                ));
            }
        }
        None
    }

    /// Ignored paths the snapshot would overwrite (same path) or delete (a
    /// folder where the snapshot has a file, or a file where it has a folder).
    fn ignored_in_the_way(&self, snap: &str) -> Vec<String> {
        let split = |out: String| -> Vec<String> {
            out.split('\0')
                .filter(|x| !x.is_empty())
                .map(str::to_string)
                .collect()
        };
        let ignored = self
            .run(
                &[
                    "ls-files",
                    "-z",
                    "-o",
                    "-i",
                    "--exclude-standard",
                    "--directory",
                ],
                &[],
            )
            .map(split)
            .unwrap_or_default();
        if ignored.is_empty() {
            return Vec::new();
        }
        let files: std::collections::HashSet<String> = self
            .run(&["ls-tree", "-r", "-z", "--name-only", snap], &[])
            .map(split)
            .unwrap_or_default()
            .into_iter()
            .collect();
        let mut dirs = std::collections::HashSet::new();
        for f in &files {
            let mut p = f.as_str();
            while let Some(i) = p.rfind('/') {
                p = &p[..i];
                dirs.insert(p.to_string());
            }
        }
        ignored
            .into_iter()
            .filter(|e| {
                let e = e.trim_end_matches('/');
                if e.starts_with(self.baton_path.as_str()) {
                    return false;
                }
                let mut anc = e;
                let mut blocked = files.contains(e) || dirs.contains(e);
                while let Some(i) = anc.rfind('/') {
                    anc = &anc[..i];
                    blocked |= files.contains(anc);
                }
                blocked
            })
            .collect()
    }

    /// Puts the work tree back to a checkpoint. Everything there before is
    /// first saved as a commit under `safety_ref` (files, untracked ones
    /// too; parents: the old branch tip and a commit of the old index), so
    /// nothing is ever lost. The branch is moved back to the checkpoint's
    /// HEAD, the checkpoint's files are laid down as uncommitted changes,
    /// files it lacks are removed; the project's `.baton/` is never touched.
    /// On failure the branch and the index are put back as they were.
    pub fn restore(&self, cp: &Checkpoint, safety_ref: &str) -> Result<String, GitError> {
        if let Some(why) = self.restore_blocker(cp) {
            return Err(GitError {
                args: "restore".into(),
                stderr: why,
            });
        }
        let old_head = self.head();
        let index_tree = self.run(&["write-tree"], &[])?.trim().to_string();
        let mut args = vec![
            "commit-tree",
            index_tree.as_str(),
            "-m",
            "baton: index before restoring a checkpoint",
        ];
        if let Some(h) = &old_head {
            args.push("-p");
            args.push(h);
        }
        let ident = [
            ("GIT_AUTHOR_NAME", "baton"),
            ("GIT_AUTHOR_EMAIL", "baton@localhost"),
            ("GIT_COMMITTER_NAME", "baton"),
            ("GIT_COMMITTER_EMAIL", "baton@localhost"),
        ];
        let index_commit = self.run(&args, &ident)?.trim().to_string();
        let saved = self.snapshot_with(
            safety_ref,
            "baton: work tree before restoring a checkpoint",
            Some(&index_commit),
        )?;
        let index_file = self.run(&["rev-parse", "--git-path", "index"], &[])?;
        let index_file = self.root.join(index_file.trim());
        let backup = index_file.with_extension("baton-backup");
        let _ = std::fs::copy(&index_file, &backup);
        let result = (|| {
            if let Some(head) = &cp.head
                && old_head.as_deref() != Some(head.as_str())
            {
                self.run(&["reset", "-q", "--soft", head], &[])?;
            }
            if let Some(snap) = &cp.snapshot {
                // Index = every file now present (minus .baton), so
                // read-tree removes exactly those the checkpoint lacks.
                self.stage_all(&[])?;
                self.run(&["read-tree", "--reset", "-u", snap], &[])?;
                if self.head().is_some() {
                    self.run(&["reset", "-q"], &[])?;
                } else {
                    self.run(&["read-tree", "--empty"], &[])?;
                }
            }
            Ok(())
        })();
        if let Err(e) = result {
            if let Some(h) = &old_head {
                let _ = self.run(&["reset", "-q", "--soft", h], &[]);
            }
            let _ = std::fs::copy(&backup, &index_file);
            let _ = std::fs::remove_file(&backup);
            return Err(e);
        }
        let _ = std::fs::remove_file(&backup);
        Ok(saved)
    }

    /// The top of the work tree.
    pub fn top(&self) -> &Path {
        &self.root
    }

    /// Where the project sits inside the work tree ("" at the top).
    pub fn project_rel(&self) -> PathBuf {
        PathBuf::from(&self.baton_path)
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default()
    }

    /// Commits every change in the work tree (what `.gitignore` ignores
    /// left out) onto the checked-out branch; returns HEAD after.
    pub fn commit_worktree(&self, message: &str) -> Result<String, GitError> {
        self.run(&["add", "-A", "--", ":/"], &[])?;
        let staged = self
            .command(&["diff", "--cached", "--quiet"], &[])
            .status()
            .map(|s| !s.success())
            .unwrap_or(true);
        if staged {
            self.run(
                &["commit", "-q", "--no-verify", "-m", message],
                &[
                    ("GIT_AUTHOR_NAME", "baton"),
                    ("GIT_AUTHOR_EMAIL", "baton@localhost"),
                    ("GIT_COMMITTER_NAME", "baton"),
                    ("GIT_COMMITTER_EMAIL", "baton@localhost"),
                ],
            )?;
        }
        self.head().ok_or_else(|| GitError {
            args: "rev-parse HEAD".into(),
            stderr: "no HEAD after committing".into(),
        })
    }

    pub fn has_remote(&self, name: &str) -> bool {
        self.run(&["remote"], &[])
            .map(|out| out.lines().any(|l| l.trim() == name))
            .unwrap_or(false)
    }

    /// Fetches a task's branch and checkpoint refs from `remote`; returns the
    /// branch's commit there, `None` if the remote has no such branch.
    pub fn fetch_task(&self, remote: &str, task: &str) -> Result<Option<String>, GitError> {
        let branch = format!("refs/heads/baton/{task}");
        let listed = self.run(&["ls-remote", "--heads", remote, &branch], &[])?;
        if listed.trim().is_empty() {
            return Ok(None);
        }
        let tracking = format!("refs/remotes/{remote}/baton/{task}");
        self.run(
            &[
                "fetch",
                "-q",
                "--no-tags",
                remote,
                &format!("+{branch}:{tracking}"),
                &format!("+refs/baton/{task}/*:refs/baton/{task}/*"),
            ],
            &[],
        )?;
        Ok(self.resolve(&tracking))
    }

    /// Pushes a task's branch and checkpoint refs to `remote`, all or
    /// nothing. The branch may be rewound (a re-run from an earlier commit)
    /// but only over `expected`, what this holder last saw there (`None`:
    /// no such branch yet).
    pub fn push_task(
        &self,
        remote: &str,
        task: &str,
        expected: Option<&str>,
    ) -> Result<(), GitError> {
        let branch = format!("refs/heads/baton/{task}");
        let lease = format!("--force-with-lease={branch}:{}", expected.unwrap_or(""));
        self.run(
            &[
                "push",
                "-q",
                "--atomic",
                "--no-verify",
                &lease,
                remote,
                &format!("{branch}:{branch}"),
                &format!("+refs/baton/{task}/*:refs/baton/{task}/*"),
            ],
            &[],
        )?;
        Ok(())
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

/// A fresh file name in `git_dir` (or the system temp dir without one).
fn tempfile_path(git_dir: &Path) -> PathBuf {
    let dir = if git_dir.is_dir() {
        git_dir.to_path_buf()
    } else {
        std::env::temp_dir()
    };
    let n = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    dir.join(format!("baton-index-{}-{n}", std::process::id()))
}
