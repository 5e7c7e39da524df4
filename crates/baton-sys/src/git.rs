//! git through one typed subprocess wrapper: fixed environment, bounded
//! output, errors that keep the stderr tail. Used for phase checkpoints
//! (branch, HEAD, a snapshot commit of the whole worktree under a hidden
//! ref), files changed per phase, and restoring a checkpoint.
//!
//! Phase snapshots are cheap when little changed: they are staged in a
//! private index kept in the git folder between snapshots (so git re-hashes
//! only files whose stat data changed), HEAD and the branch are read from
//! the git folder without a process where the layout allows it, and a
//! snapshot whose work tree and HEAD are those of the previous one is that
//! same commit (see [`Git::checkpoint`]).

mod diff;
mod files;
mod keep;
mod merge;
mod notify;
mod refs;
mod remote;
mod restore;
mod share;
mod snapshot;
mod stat;
#[cfg(test)]
mod tests;

pub use diff::{FileChange, TreeDiff};
pub use keep::Held;
pub use merge::{MergeFailure, TreeMerge};
use refs::RefWriter;
pub use share::{Share, Shared};
use snapshot::Snapshot;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};

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
    /// This work tree's git folder (a linked worktree's own) and the folder
    /// its refs live in; unknown with a git too old to print them.
    git_dir: Option<PathBuf>,
    common_dir: Option<PathBuf>,
    /// What the last phase snapshot taken through this value (or a clone)
    /// left behind; it also serialises snapshots within the process.
    last: Arc<Mutex<Option<Snapshot>>>,
    /// One `git update-ref --stdin` kept running for the snapshot refs
    /// (where they cannot be written as loose ref files).
    refs: Arc<Mutex<Option<RefWriter>>>,
    /// The repository keeps its refs in files.
    files_refs: bool,
    /// What an agent run put in a work tree of its own (a brief, an MCP
    /// server entry), as committed: never work, never committed. Told by
    /// whoever knows the agents ([`Git::knowing_run_files`]).
    run_files: Option<RunFiles>,
}

/// The files in a folder that an agent run changed, each with its path
/// relative to the folder and its text without the run's change (`None`:
/// the file was not there).
pub type RunFiles = fn(&Path) -> std::io::Result<Vec<(String, Option<String>)>>;

/// HEAD as the git folder says it: a branch (with its commit, none while
/// the branch is unborn) or a detached commit.
#[derive(Debug, Clone, PartialEq, Eq)]
struct HeadState {
    branch: Option<String>,
    commit: Option<String>,
}

const IDENT: [(&str, &str); 4] = [
    ("GIT_AUTHOR_NAME", "baton"),
    ("GIT_AUTHOR_EMAIL", "baton@localhost"),
    ("GIT_COMMITTER_NAME", "baton"),
    ("GIT_COMMITTER_EMAIL", "baton@localhost"),
];

impl Git {
    /// The repository containing `project`, if it is inside a git work tree.
    pub fn open(project: &Path) -> Option<Git> {
        let probe = Git {
            root: project.to_path_buf(),
            exclude_baton: String::new(),
            baton_path: String::new(),
            git_dir: None,
            common_dir: None,
            last: Arc::default(),
            refs: Arc::default(),
            files_refs: false,
            run_files: None,
        };
        // One process for the top and both git folders (`--path-format`
        // needs git 2.31; older ones get the top alone).
        let (top, git_dir, common_dir) = match probe.run(
            &[
                "rev-parse",
                "--path-format=absolute",
                "--show-toplevel",
                "--git-dir",
                "--git-common-dir",
            ],
            &[],
        ) {
            Ok(out) => {
                let mut lines = out.lines().map(|l| PathBuf::from(l.trim()));
                let top = lines.next()?;
                let dirs = (lines.next(), lines.next());
                match dirs {
                    (Some(g), Some(c)) if g.is_dir() && c.is_dir() => (top, Some(g), Some(c)),
                    _ => (top, None, None),
                }
            }
            Err(_) => {
                let top = probe.run(&["rev-parse", "--show-toplevel"], &[]).ok()?;
                (PathBuf::from(top.trim()), None, None)
            }
        };
        let rel = std::fs::canonicalize(project)
            .ok()?
            .strip_prefix(std::fs::canonicalize(&top).ok()?)
            .ok()?
            .join(".baton");
        let baton_path = rel.to_string_lossy().into_owned();
        let files_refs = common_dir.as_deref().is_some_and(refs::files_refs);
        Some(Git {
            root: top,
            exclude_baton: format!(":(exclude,top){baton_path}"),
            baton_path,
            git_dir,
            common_dir,
            last: Arc::default(),
            refs: Arc::default(),
            files_refs,
            run_files: None,
        })
    }

    /// This repository, told which files an agent run puts in a work tree
    /// (`run_files`): what [`Git::held_by`] and [`Git::commit_worktree`]
    /// leave out.
    pub fn knowing_run_files(mut self, run_files: RunFiles) -> Git {
        self.run_files = Some(run_files);
        self
    }

    /// What a run left in `dir`, as committed (nothing when not told).
    fn run_files_in(&self, dir: &Path) -> std::io::Result<Vec<(String, Option<String>)>> {
        match self.run_files {
            Some(f) => f(dir),
            None => Ok(Vec::new()),
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
            // The folder it runs in is gone (a deleted worktree): say that,
            // not that git cannot be run.
            let why = if !self.root.is_dir() {
                format!(
                    "the folder {} is gone (it was deleted or moved)",
                    self.root.display()
                )
            } else {
                format!("cannot run git: {e}")
            };
            GitError {
                args: args.join(" "),
                stderr: why,
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
        self.head_state().commit
    }

    pub fn branch(&self) -> Option<String> {
        self.head_state().branch
    }

    /// Branch and HEAD: read from the git folder, or asked of git where
    /// the layout is not the plain one (reftable, a symbolic ref, an
    /// unknown git folder, an unborn branch).
    fn head_state(&self) -> HeadState {
        if let Some(h) = self.read_head() {
            return h;
        }
        let ask = |args: &[&str]| {
            self.run(args, &[])
                .ok()
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
        };
        HeadState {
            branch: ask(&["symbolic-ref", "--short", "-q", "HEAD"]),
            commit: ask(&["rev-parse", "--verify", "-q", "HEAD"]),
        }
    }

    /// HEAD from the files git keeps it in (`HEAD`, the loose ref,
    /// `packed-refs`); `None` whenever that is not certain.
    fn read_head(&self) -> Option<HeadState> {
        let (git_dir, common) = (self.git_dir.as_ref()?, self.common_dir.as_ref()?);
        if common.join("reftable").exists() {
            return None;
        }
        let is_id =
            |s: &str| matches!(s.len(), 40 | 64) && s.bytes().all(|b| b.is_ascii_hexdigit());
        let head = std::fs::read_to_string(git_dir.join("HEAD")).ok()?;
        let head = head.trim();
        let Some(refname) = head.strip_prefix("ref: ") else {
            return is_id(head).then(|| HeadState {
                branch: None,
                commit: Some(head.to_string()),
            });
        };
        let branch = refname.strip_prefix("refs/heads/")?.to_string();
        if branch.is_empty() || refname.contains("..") {
            return None;
        }
        let commit = match std::fs::read_to_string(common.join(refname)) {
            Ok(loose) => {
                let loose = loose.trim();
                if !is_id(loose) {
                    return None;
                }
                loose.to_string()
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let packed =
                    std::fs::read_to_string(common.join("packed-refs")).unwrap_or_default();
                // Not there either: an unborn branch, which git confirms.
                packed
                    .lines()
                    .filter_map(|l| l.split_once(' '))
                    .find(|(id, name)| *name == refname && is_id(id))
                    .map(|(id, _)| id.to_string())?
            }
            Err(_) => return None,
        };
        Some(HeadState {
            branch: Some(branch),
            commit: Some(commit),
        })
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
}
