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

use baton_core::state::Checkpoint;
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
    /// One `git update-ref --stdin` kept running for the snapshot refs.
    refs: Arc<Mutex<Option<RefWriter>>>,
}

/// A phase snapshot as the private index left it.
#[derive(Debug, Clone)]
struct Snapshot {
    /// The private index file's bytes right after it: the same bytes
    /// there next time mean no other process staged anything since.
    index: Vec<u8>,
    head: Option<String>,
    tree: String,
    commit: String,
    /// Paths staging removed since the index was last rebuilt from HEAD:
    /// if one comes back, it may be an ignored file HEAD tracks, which only
    /// a rebuild from HEAD puts back into the snapshot.
    removed: Vec<PathBuf>,
    /// A removed path that could not be read back from git's output.
    rebuild: bool,
    /// `info/exclude` as it was (ignore rules outside the work tree).
    exclude: Option<FileStamp>,
    /// The stat data that tells, without git, that nothing changed since.
    watch: Option<Watch>,
    /// The folders watched (or that would have been), and which folders
    /// without staged files are ignored.
    dirs: Vec<PathBuf>,
    ignored: std::collections::HashMap<PathBuf, bool>,
}

/// Enough of a file's stat data to see that it changed.
#[derive(Debug, Clone, PartialEq, Eq)]
struct FileStamp {
    len: u64,
    modified: Option<std::time::SystemTime>,
    ino: u64,
}

impl FileStamp {
    fn of(path: &Path) -> Option<FileStamp> {
        use std::os::unix::fs::MetadataExt;
        let m = std::fs::symlink_metadata(path).ok()?;
        Some(FileStamp {
            len: m.len(),
            modified: m.modified().ok(),
            ino: m.ino(),
        })
    }
}

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
        Some(Git {
            root: top,
            exclude_baton: format!(":(exclude,top){baton_path}"),
            baton_path,
            git_dir,
            common_dir,
            last: Arc::default(),
            refs: Arc::default(),
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
        let git_dir = self.git_dir.clone().or_else(|| {
            self.run(&["rev-parse", "--absolute-git-dir"], &[])
                .ok()
                .map(|d| PathBuf::from(d.trim()))
                .filter(|d| d.is_dir())
        });
        let index = tempfile_path(git_dir.as_deref().unwrap_or(&self.root.join(".git")));
        let index_s = index.to_string_lossy().into_owned();
        let env = [("GIT_INDEX_FILE", index_s.as_str())];
        let result = (|| {
            let head = self.head();
            if head.is_some() {
                self.run(&["read-tree", "HEAD"], &env)?;
            }
            self.stage_all(&env)?;
            let tree = self.run(&["write-tree"], &env)?.trim().to_string();
            let mut parents: Vec<&str> = head.iter().map(String::as_str).collect();
            parents.extend(second_parent);
            let commit = self.commit_tree(&tree, &parents, message)?;
            self.run(&["update-ref", refname, &commit], &[])?;
            Ok(commit)
        })();
        let _ = std::fs::remove_file(&index);
        result
    }

    fn commit_tree(&self, tree: &str, parents: &[&str], message: &str) -> Result<String, GitError> {
        let mut args = vec!["commit-tree", tree, "-m", message];
        for p in parents {
            args.push("-p");
            args.push(p);
        }
        Ok(self.run(&args, &IDENT)?.trim().to_string())
    }

    /// Branch, HEAD and a snapshot of the worktree under `refname`, as
    /// [`Git::snapshot`] makes it. When neither the work tree nor HEAD
    /// changed since the last phase snapshot of this process, the snapshot
    /// is that same commit, found without building a tree.
    ///
    /// `just_snapshotted`: the caller took a phase snapshot through this
    /// value a moment ago and ran nothing since (the end of the previous
    /// phase, in the same drive); that snapshot is taken again without
    /// checking the work tree, unless HEAD moved or the private index was
    /// touched.
    pub fn checkpoint(
        &self,
        refname: &str,
        message: &str,
        just_snapshotted: bool,
    ) -> Result<Checkpoint, GitError> {
        let started = std::time::Instant::now();
        let head = self.head_state();
        let snapshot = self.phase_snapshot(refname, message, &head, just_snapshotted)?;
        let cp = Checkpoint {
            branch: head.branch,
            head: head.commit,
            snapshot: Some(snapshot.commit),
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

    /// The end of a phase that started at snapshot `start`: a snapshot
    /// under `refname` (the start's own commit when nothing changed) and
    /// the files that differ between the two, none without a diff when
    /// the trees are the same.
    pub fn end_snapshot(
        &self,
        start: &str,
        refname: &str,
        message: &str,
    ) -> Result<Vec<String>, GitError> {
        let started = std::time::Instant::now();
        let head = self.head_state();
        let end = self.phase_snapshot(refname, message, &head, false)?;
        let files = if end.commit == start || end.tree_of(start) {
            Vec::new()
        } else {
            self.changed_files(start, &end.commit)?
        };
        tracing::debug!(
            refname,
            start,
            end = end.commit,
            files = files.len(),
            elapsed_ms = started.elapsed().as_millis() as u64,
            "git end snapshot"
        );
        Ok(files)
    }

    /// A snapshot as [`Git::snapshot`] makes it (the whole work tree, HEAD
    /// as parent, `.baton/` left out), staged in the private index kept in
    /// the git folder. That index is rebuilt from HEAD (keeping the stat
    /// data of unchanged files) whenever it may differ from what a fresh
    /// one would hold: the first time in a process, when another process
    /// staged into it since, HEAD moved, ignore rules changed, or a file
    /// staging removed is back.
    fn phase_snapshot(
        &self,
        refname: &str,
        message: &str,
        head: &HeadState,
        just_snapshotted: bool,
    ) -> Result<Taken, GitError> {
        let Some(git_dir) = &self.git_dir else {
            let commit = self.snapshot(refname, message)?;
            return Ok(Taken {
                commit,
                tree: None,
                start_tree: None,
            });
        };
        let mut last = self.last.lock().unwrap_or_else(|p| p.into_inner());
        let cache = git_dir.join("baton-snapshot-index");
        let bytes = std::fs::read(&cache).ok();
        let exclude = self
            .common_dir
            .as_ref()
            .and_then(|c| FileStamp::of(&c.join("info").join("exclude")));
        let known = last.as_ref().filter(|k| {
            bytes.as_deref() == Some(k.index.as_slice())
                && k.head == head.commit
                && k.exclude == exclude
                && !k.rebuild
                && !k
                    .removed
                    .iter()
                    .any(|p| self.root.join(p).symlink_metadata().is_ok())
        });
        // Nothing changed since (every staged file and every folder that
        // could gain one has the stat data it had): the same snapshot.
        if let Some(k) = known
            && (just_snapshotted || k.watch.as_ref().is_some_and(|w| w.unchanged(&self.root)))
        {
            let (commit, tree) = (k.commit.clone(), k.tree.clone());
            self.update_ref(refname, &commit)?;
            tracing::debug!(refname, %commit, "phase snapshot unchanged (stat data)");
            return Ok(Taken {
                commit: commit.clone(),
                tree: Some(tree.clone()),
                start_tree: Some((commit, tree)),
            });
        }
        // Folders as they are before git looks: one that changes while it
        // does is seen as changed next time.
        let looked = std::time::SystemTime::now();
        let mut pre_dirs: Vec<PathBuf> = bytes
            .as_deref()
            .and_then(parse_index)
            .map(|entries| folders_of(&entries))
            .unwrap_or_default();
        if let Some(k) = last.as_ref() {
            pre_dirs.extend(k.dirs.iter().cloned());
        }
        let pre: std::collections::HashMap<PathBuf, DirStat> = pre_dirs
            .into_iter()
            .filter_map(|d| Some((d.clone(), DirStat::of(&self.root.join(&d))?)))
            .collect();
        let index = tempfile_path(git_dir);
        // The copy keeps the index's time: git trusts the stat data of
        // entries older than the index file, and only those.
        let copied = bytes.as_ref().is_some_and(|b| {
            let copied = std::fs::write(&index, b).and_then(|()| {
                let modified = std::fs::metadata(&cache)?.modified()?;
                std::fs::File::options()
                    .write(true)
                    .open(&index)?
                    .set_modified(modified)
            });
            if copied.is_err() {
                let _ = std::fs::remove_file(&index);
            }
            copied.is_ok()
        });
        let index_s = index.to_string_lossy().into_owned();
        let env = [("GIT_INDEX_FILE", index_s.as_str())];
        let result = (|| {
            let mut rebuilt = known.is_none() || !copied;
            let staged = loop {
                if rebuilt {
                    self.rebuild_index(head.commit.is_some(), &env)?;
                }
                let staged = self.stage_verbose(&env)?;
                // A changed .gitignore may make staged files ignored now.
                if staged.ignore_rules_changed && !rebuilt {
                    rebuilt = true;
                    continue;
                }
                break staged;
            };
            // Nothing staged into the index the last snapshot left: its tree.
            let tree = match known {
                Some(k) if !rebuilt && !staged.changed => k.tree.clone(),
                _ => self.run(&["write-tree"], &env)?.trim().to_string(),
            };
            let commit = match last.as_ref() {
                Some(k) if k.tree == tree && k.head == head.commit => k.commit.clone(),
                _ => {
                    let parents: Vec<&str> = head.commit.iter().map(String::as_str).collect();
                    self.commit_tree(&tree, &parents, message)?
                }
            };
            self.update_ref(refname, &commit)?;
            let mut removed = match (rebuilt, known) {
                (false, Some(k)) => k.removed.clone(),
                _ => Vec::new(),
            };
            removed.extend(staged.removed);
            Ok((tree, commit, removed, staged.unreadable, rebuilt))
        })();
        let outcome = match result {
            Ok((tree, commit, removed, unreadable, rebuilt)) => {
                let start_tree = last.as_ref().map(|k| (k.commit.clone(), k.tree.clone()));
                let mut ignored = match (rebuilt, last.take()) {
                    (false, Some(k)) => k.ignored,
                    _ => Default::default(),
                };
                let written = std::fs::read(&index).and_then(|b| {
                    std::fs::rename(&index, &cache)?;
                    let modified = std::fs::metadata(&cache)?.modified()?;
                    Ok((b, modified))
                });
                *last = written.ok().map(|(b, modified)| {
                    let (watch, dirs) = self.watch(&b, modified, &pre, looked, &mut ignored);
                    Snapshot {
                        index: b,
                        head: head.commit.clone(),
                        tree: tree.clone(),
                        commit: commit.clone(),
                        removed,
                        rebuild: unreadable,
                        exclude,
                        watch,
                        dirs,
                        ignored,
                    }
                });
                tracing::debug!(
                    refname,
                    %commit,
                    rebuilt,
                    watched = last.as_ref().and_then(|k| k.watch.as_ref()).map_or(0, Watch::files),
                    "phase snapshot"
                );
                Ok(Taken {
                    commit,
                    tree: Some(tree),
                    start_tree,
                })
            }
            Err(e) => {
                // Whatever state the private index is in, rebuild next time.
                *last = None;
                Err(e)
            }
        };
        let _ = std::fs::remove_file(&index);
        outcome
    }

    /// Points `refname` at `commit`, through one `git update-ref --stdin`
    /// kept running (a transaction per call), or a process of its own if
    /// that one fails.
    fn update_ref(&self, refname: &str, commit: &str) -> Result<(), GitError> {
        let mut refs = self.refs.lock().unwrap_or_else(|p| p.into_inner());
        if refs.is_none() {
            *refs = RefWriter::start(self);
        }
        if let Some(w) = refs.as_mut() {
            match w.update(refname, commit) {
                Ok(()) => return Ok(()),
                Err(e) => {
                    tracing::debug!(refname, error = %e, "update-ref --stdin failed; one process instead");
                    *refs = None;
                }
            }
        }
        self.run(&["update-ref", refname, commit], &[])?;
        Ok(())
    }

    /// What tells, without git, that the work tree is still what the
    /// private index (`index`, written at `written`) holds: the stat data
    /// git recorded for each staged file, and that of every folder a new
    /// file could appear in (those holding staged files, and the folders
    /// below them that are neither ignored nor `.baton/`), taken before
    /// git looked (`pre`, at `looked`). `None` wherever that cannot be
    /// sure: a staged file git itself would re-check (changed at or after
    /// the index was written), a folder changed while git looked or just
    /// before, a folder not seen before, submodules, an index format this
    /// does not read. Also returns the folders it would watch.
    fn watch(
        &self,
        index: &[u8],
        written: std::time::SystemTime,
        pre: &std::collections::HashMap<PathBuf, DirStat>,
        looked: std::time::SystemTime,
        ignored: &mut std::collections::HashMap<PathBuf, bool>,
    ) -> (Option<Watch>, Vec<PathBuf>) {
        let Some(entries) = parse_index(index).filter(|_| !self.sha256()) else {
            return (None, Vec::new());
        };
        let mut dirs = folders_of(&entries);
        let mut known: std::collections::HashSet<PathBuf> = dirs.iter().cloned().collect();
        let baton = Path::new(&self.baton_path);
        let mut todo = dirs.clone();
        let mut complete = true;
        while !todo.is_empty() && dirs.len() <= MAX_WATCHED_DIRS {
            let mut found = Vec::new();
            for d in todo.drain(..) {
                let Ok(rd) = std::fs::read_dir(self.root.join(&d)) else {
                    complete = false;
                    continue;
                };
                for e in rd.flatten() {
                    let sub = d.join(e.file_name());
                    if e.file_name() == ".git"
                        || sub == baton
                        || known.contains(&sub)
                        || !e.file_type().is_ok_and(|t| t.is_dir())
                    {
                        continue;
                    }
                    found.push(sub);
                }
            }
            let ask: Vec<&PathBuf> = found.iter().filter(|f| !ignored.contains_key(*f)).collect();
            if !ask.is_empty() {
                match self.check_ignore(&ask) {
                    Some(hits) => {
                        for f in ask {
                            ignored.insert(f.clone(), hits.contains(f));
                        }
                    }
                    None => return (None, dirs),
                }
            }
            for f in found {
                if ignored.get(&f) == Some(&false) && known.insert(f.clone()) {
                    dirs.push(f.clone());
                    todo.push(f);
                }
            }
        }
        if !complete || dirs.len() > MAX_WATCHED_DIRS {
            return (None, dirs);
        }
        // Entries git itself would not trust (racily clean), or files
        // changed while it looked.
        let written = stamp(written);
        if entries.iter().any(|e| e.stat.mtime >= written) {
            return (None, dirs);
        }
        // A folder changed shortly before git looked may change again
        // within the same timestamp tick unseen: file times come from a
        // coarse clock (one tick is 1 to 10 ms), so keep several ticks.
        let settled = stamp(looked - std::time::Duration::from_millis(50));
        let mut watched = std::collections::BTreeMap::new();
        for d in &dirs {
            let (Some(before), Some(now)) = (pre.get(d), DirStat::of(&self.root.join(d))) else {
                return (None, dirs);
            };
            if *before != now || before.mtime >= settled || before.ctime >= settled {
                return (None, dirs);
            }
            watched.insert(
                d.clone(),
                WatchedDir {
                    path: d.clone(),
                    stat: now,
                    files: Vec::new(),
                },
            );
        }
        for e in entries {
            let (Some(dir), Some(name)) = (e.path.parent(), e.path.file_name()) else {
                return (None, dirs);
            };
            let Some(w) = watched.get_mut(dir) else {
                return (None, dirs);
            };
            w.files.push((name.to_os_string(), e.stat));
        }
        (
            Some(Watch {
                dirs: watched.into_values().collect(),
            }),
            dirs,
        )
    }

    /// Which of `paths` (folders, relative to the top) the ignore rules
    /// exclude; `None` if git cannot say.
    fn check_ignore(&self, paths: &[&PathBuf]) -> Option<std::collections::HashSet<PathBuf>> {
        use std::io::Write;
        use std::os::unix::ffi::OsStrExt;
        let mut c = self.command(&["check-ignore", "--stdin", "-z", "--no-index"], &[]);
        c.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let mut child = c.spawn().ok()?;
        let mut input = Vec::new();
        for p in paths {
            input.extend_from_slice(p.as_os_str().as_bytes());
            input.push(0);
        }
        let mut stdin = child.stdin.take()?;
        let writer = std::thread::spawn(move || stdin.write_all(&input));
        let out = child.wait_with_output().ok()?;
        let _ = writer.join();
        tracing::debug!(
            asked = paths.len(),
            exit = out.status.code().unwrap_or(-1),
            "git check-ignore"
        );
        // 0: some are ignored, 1: none is.
        if !matches!(out.status.code(), Some(0 | 1)) {
            return None;
        }
        Some(
            out.stdout
                .split(|b| *b == 0)
                .filter(|p| !p.is_empty())
                .map(|p| PathBuf::from(std::ffi::OsStr::from_bytes(p)))
                .collect(),
        )
    }

    /// Whether the repository uses SHA-256 object names (whose index
    /// entries [`parse_index`] does not read).
    fn sha256(&self) -> bool {
        let Some(common) = &self.common_dir else {
            return true;
        };
        std::fs::read_to_string(common.join("config"))
            .map(|c| {
                c.to_ascii_lowercase()
                    .replace([' ', '\t'], "")
                    .contains("objectformat=sha256")
            })
            .unwrap_or(true)
    }

    /// The private index as a fresh one: HEAD's files (stat data kept for
    /// those unchanged, `read-tree -m`), the project's `.baton/` left out.
    fn rebuild_index(&self, has_head: bool, env: &[(&str, &str)]) -> Result<(), GitError> {
        if !has_head {
            self.run(&["read-tree", "--empty"], env)?;
        } else if self.run(&["read-tree", "-m", "HEAD"], env).is_err() {
            // A damaged or foreign private index: start from nothing.
            self.run(&["read-tree", "HEAD"], env)?;
        }
        let rm = ["rm", "-r", "-q", "--cached", "--ignore-unmatch", "--"];
        let mut args = rm.to_vec();
        args.push(&self.baton_path);
        self.run(&args, env)?;
        Ok(())
    }

    /// `add -A` of the whole work tree (`.baton/` left out) into the index
    /// `env` names, with what it changed.
    fn stage_verbose(&self, env: &[(&str, &str)]) -> Result<Staged, GitError> {
        let out = self.run(
            &["add", "-A", "--verbose", "--", ":/", &self.exclude_baton],
            env,
        )?;
        let mut staged = Staged::default();
        for line in out.lines() {
            let (removed, path) = match (line.strip_prefix("remove '"), line.strip_prefix("add '"))
            {
                (Some(p), _) => (true, p),
                (None, Some(p)) => (false, p),
                (None, None) => continue,
            };
            staged.changed = true;
            let path = path.strip_suffix('\'').unwrap_or(path);
            let quoted = path.starts_with('"');
            let base = path.trim_matches('"').rsplit('/').next().unwrap_or("");
            if base == ".gitignore" {
                staged.ignore_rules_changed = true;
            }
            if removed {
                if quoted {
                    staged.unreadable = true;
                } else {
                    staged.removed.push(PathBuf::from(path));
                }
            }
        }
        Ok(staged)
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
        let index_commit = self.run(&args, &IDENT)?.trim().to_string();
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
            self.run(&["commit", "-q", "--no-verify", "-m", message], &IDENT)?;
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

/// The most folders a [`Watch`] covers; beyond, every snapshot asks git.
const MAX_WATCHED_DIRS: usize = 20_000;

/// The stat data of a snapshot's staged files and of the folders new files
/// could appear in.
#[derive(Debug, Clone)]
struct Watch {
    dirs: Vec<WatchedDir>,
}

/// A watched folder and the staged files directly in it.
#[derive(Debug, Clone)]
struct WatchedDir {
    path: PathBuf,
    stat: DirStat,
    files: Vec<(std::ffi::OsString, EntryStat)>,
}

impl Watch {
    /// Whether every file and folder still has the stat data recorded.
    /// Files are looked up in their folder opened once (`fstatat`), not
    /// by their whole path.
    fn unchanged(&self, root: &Path) -> bool {
        use nix::fcntl::AtFlags;
        use nix::sys::stat::fstatat;
        self.dirs.iter().all(|w| {
            let Ok(dir) = std::fs::File::open(root.join(&w.path)) else {
                return false;
            };
            dir.metadata().ok().and_then(|m| DirStat::from(&m)).as_ref() == Some(&w.stat)
                && w.files.iter().all(|(name, st)| {
                    fstatat(&dir, name.as_os_str(), AtFlags::AT_SYMLINK_NOFOLLOW)
                        .ok()
                        .and_then(|f| EntryStat::from_stat(&f))
                        .as_ref()
                        == Some(st)
                })
        })
    }

    fn files(&self) -> usize {
        self.dirs.iter().map(|d| d.files.len() + 1).sum()
    }
}

/// (seconds, nanoseconds), as git's index keeps times.
type Stamp = (u32, u32);

fn stamp(t: std::time::SystemTime) -> Stamp {
    let d = t.duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    (d.as_secs() as u32, d.subsec_nanos())
}

/// The stat data git's index keeps of a file, as git truncates it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct EntryStat {
    ctime: Stamp,
    mtime: Stamp,
    ino: u32,
    size: u32,
    /// 0o100644, 0o100755 or 0o120000.
    mode: u32,
}

impl EntryStat {
    #[cfg(test)]
    fn of(path: &Path) -> Option<EntryStat> {
        nix::sys::stat::lstat(path)
            .ok()
            .and_then(|f| EntryStat::from_stat(&f))
    }

    fn from_stat(f: &nix::sys::stat::FileStat) -> Option<EntryStat> {
        let kind = f.st_mode & libc::S_IFMT;
        let mode = if kind == libc::S_IFLNK {
            0o120000
        } else if kind == libc::S_IFREG {
            if f.st_mode & 0o100 != 0 {
                0o100755
            } else {
                0o100644
            }
        } else {
            return None;
        };
        Some(EntryStat {
            ctime: (f.st_ctime as u32, f.st_ctime_nsec as u32),
            mtime: (f.st_mtime as u32, f.st_mtime_nsec as u32),
            ino: f.st_ino as u32,
            size: f.st_size as u32,
            mode,
        })
    }
}

/// What changes in a folder's stat data when an entry is added, removed or
/// renamed in it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct DirStat {
    mtime: Stamp,
    ctime: Stamp,
    ino: u64,
}

impl DirStat {
    fn of(path: &Path) -> Option<DirStat> {
        DirStat::from(&std::fs::symlink_metadata(path).ok()?)
    }

    fn from(m: &std::fs::Metadata) -> Option<DirStat> {
        use std::os::unix::fs::MetadataExt;
        m.is_dir().then(|| DirStat {
            mtime: (m.mtime() as u32, m.mtime_nsec() as u32),
            ctime: (m.ctime() as u32, m.ctime_nsec() as u32),
            ino: m.ino(),
        })
    }
}

struct IndexEntry {
    path: PathBuf,
    stat: EntryStat,
}

/// The entries of a git index file of version 2 or 3 (what git writes
/// unless told otherwise); `None` for anything else, and for indexes with
/// entries a stat check cannot vouch for (submodules, conflicts,
/// skip-worktree or intent-to-add entries).
fn parse_index(b: &[u8]) -> Option<Vec<IndexEntry>> {
    use std::os::unix::ffi::OsStrExt;
    let be32 = |at: usize| -> Option<u32> {
        Some(u32::from_be_bytes(b.get(at..at + 4)?.try_into().ok()?))
    };
    let be16 = |at: usize| -> Option<u16> {
        Some(u16::from_be_bytes(b.get(at..at + 2)?.try_into().ok()?))
    };
    if b.get(..4)? != b"DIRC" {
        return None;
    }
    let version = be32(4)?;
    if !(2..=3).contains(&version) {
        return None;
    }
    let count = be32(8)? as usize;
    let mut entries = Vec::with_capacity(count.min(1 << 20));
    let mut at = 12;
    for _ in 0..count {
        let flags = be16(at + 60)?;
        if flags & 0x3000 != 0 {
            return None;
        }
        let mut name_at = at + 62;
        if flags & 0x4000 != 0 {
            if version < 3 || be16(at + 62)? & 0x6000 != 0 {
                return None;
            }
            name_at += 2;
        }
        let len = b.get(name_at..)?.iter().position(|c| *c == 0)?;
        if len == 0 {
            return None;
        }
        let mode = be32(at + 24)?;
        if !matches!(mode, 0o100644 | 0o100755 | 0o120000) {
            return None;
        }
        entries.push(IndexEntry {
            path: PathBuf::from(std::ffi::OsStr::from_bytes(&b[name_at..name_at + len])),
            stat: EntryStat {
                ctime: (be32(at)?, be32(at + 4)?),
                mtime: (be32(at + 8)?, be32(at + 12)?),
                ino: be32(at + 20)?,
                size: be32(at + 36)?,
                mode,
            },
        });
        // 1 to 8 NULs pad the entry to a multiple of eight bytes.
        at += (name_at - at + len + 8) & !7;
    }
    // The trailing checksum must still fit.
    (b.len() >= at + 20).then_some(entries)
}

/// The top ("") and every folder holding an entry.
fn folders_of(entries: &[IndexEntry]) -> Vec<PathBuf> {
    let mut set = std::collections::BTreeSet::new();
    set.insert(PathBuf::new());
    for e in entries {
        let mut p = e.path.parent();
        while let Some(d) = p {
            if !set.insert(d.to_path_buf()) {
                break;
            }
            p = d.parent();
        }
    }
    set.into_iter().collect()
}

/// A `git update-ref --stdin` taking one transaction at a time.
struct RefWriter {
    child: std::process::Child,
    stdin: Option<std::process::ChildStdin>,
    stdout: std::io::BufReader<std::process::ChildStdout>,
}

impl std::fmt::Debug for RefWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RefWriter(pid {})", self.child.id())
    }
}

impl RefWriter {
    fn start(git: &Git) -> Option<RefWriter> {
        let mut c = git.command(&["update-ref", "--stdin"], &[]);
        c.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let mut child = c.spawn().ok()?;
        let stdin = child.stdin.take();
        let stdout = std::io::BufReader::new(child.stdout.take()?);
        tracing::debug!(pid = child.id(), "git update-ref --stdin started");
        Some(RefWriter {
            child,
            stdin,
            stdout,
        })
    }

    /// One transaction: `refname` to `commit`, committed before it returns.
    fn update(&mut self, refname: &str, commit: &str) -> Result<(), String> {
        use std::io::{BufRead, Write};
        if refname.contains(['\n', ' ']) {
            return Err("unusual ref name".into());
        }
        let stdin = self.stdin.as_mut().ok_or("closed")?;
        write!(stdin, "start\nupdate {refname} {commit}\nprepare\ncommit\n")
            .and_then(|()| stdin.flush())
            .map_err(|e| e.to_string())?;
        for want in ["start: ok", "prepare: ok", "commit: ok"] {
            let mut line = String::new();
            self.stdout
                .read_line(&mut line)
                .map_err(|e| e.to_string())?;
            if line.trim_end() != want {
                return Err(format!("expected {want:?}, got {:?}", line.trim_end()));
            }
        }
        Ok(())
    }
}

impl Drop for RefWriter {
    fn drop(&mut self) {
        // End of input: git exits (nothing is pending between calls).
        drop(self.stdin.take());
        let _ = self.child.wait();
    }
}

/// What `add -A --verbose` did.
#[derive(Debug, Default)]
struct Staged {
    changed: bool,
    removed: Vec<PathBuf>,
    /// A removed path git printed quoted (special characters).
    unreadable: bool,
    ignore_rules_changed: bool,
}

/// A phase snapshot just taken.
struct Taken {
    commit: String,
    tree: Option<String>,
    /// The snapshot before it in this process (commit, tree), if any.
    start_tree: Option<(String, String)>,
}

impl Taken {
    /// Whether `start` is known to have this snapshot's tree.
    fn tree_of(&self, start: &str) -> bool {
        matches!((&self.tree, &self.start_tree), (Some(t), Some((c, st))) if c == start && st == t)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// git in `dir` with a fixed identity and no user configuration.
    fn git(dir: &Path, args: &[&str]) -> String {
        let out = Command::new("git")
            .args(args)
            .current_dir(dir)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .envs(IDENT)
            .output()
            .expect("git");
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    fn write(dir: &Path, path: &str, text: &str) {
        let p = dir.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    /// A repository with a few committed files, the project (and its
    /// `.baton/`, committed too) in `proj/`.
    fn repo() -> (tempfile::TempDir, PathBuf, Git) {
        let dir = tempfile::tempdir().unwrap();
        let top = dir.path().to_path_buf();
        git(&top, &["init", "-q", "-b", "main"]);
        write(&top, "top.txt", "top\n");
        write(&top, "proj/src/lib.rs", "fn a() {}\n");
        write(&top, "proj/.baton/config.toml", "# config\n");
        write(&top, ".gitignore", "*.log\n");
        git(&top, &["add", "-A"]);
        git(&top, &["commit", "-qm", "init"]);
        let g = Git::open(&top.join("proj")).unwrap();
        (dir, top, g)
    }

    fn files(top: &Path, rev: &str) -> Vec<String> {
        let mut v: Vec<String> = git(top, &["ls-tree", "-r", "--name-only", rev])
            .lines()
            .map(str::to_string)
            .collect();
        v.sort();
        v
    }

    /// Waits long enough for every file written so far to be older than
    /// any index git writes next (so it trusts their stat data, and so may
    /// we), then takes a first snapshot: the one after it can be told
    /// apart by stat data (the folders' are taken before git looks).
    fn settle(g: &Git) {
        std::thread::sleep(std::time::Duration::from_millis(100));
        g.checkpoint("refs/baton/warm/00-w/start", "warm-up", false)
            .unwrap();
    }

    #[test]
    fn head_and_branch_are_read_as_git_reads_them() {
        let (_d, top, g) = repo();
        let head = git(&top, &["rev-parse", "HEAD"]);
        assert_eq!(
            g.read_head().unwrap().commit.as_deref(),
            Some(head.as_str())
        );
        assert_eq!(g.branch().as_deref(), Some("main"));
        git(&top, &["pack-refs", "--all"]);
        assert!(!top.join(".git/refs/heads/main").exists());
        assert_eq!(g.read_head().unwrap().branch.as_deref(), Some("main"));
        assert_eq!(g.head(), Some(head.clone()));
        git(&top, &["checkout", "-q", "--detach"]);
        assert_eq!(g.branch(), None);
        assert_eq!(g.head(), Some(head));
        git(&top, &["checkout", "-q", "--orphan", "fresh"]);
        assert_eq!(g.branch().as_deref(), Some("fresh"));
        assert_eq!(g.head(), None);
    }

    #[test]
    fn a_snapshot_holds_untracked_files_but_not_baton_nor_ignored_ones() {
        let (_d, top, g) = repo();
        write(&top, "notes.txt", "untracked\n");
        write(&top, "proj/new.rs", "new\n");
        write(&top, "debug.log", "ignored\n");
        write(&top, "proj/.baton/tasks/t/state.json", "{}\n");
        let cp = g
            .checkpoint("refs/baton/t/01-a/start", "start", false)
            .unwrap();
        let snap = cp.snapshot.unwrap();
        assert_eq!(
            files(&top, &snap),
            [
                ".gitignore",
                "notes.txt",
                "proj/new.rs",
                "proj/src/lib.rs",
                "top.txt"
            ]
        );
        assert_eq!(git(&top, &["rev-parse", "refs/baton/t/01-a/start"]), snap);
        assert_eq!(
            git(&top, &["rev-parse", &format!("{snap}^")]),
            cp.head.unwrap()
        );
        // The repository's own index is left alone.
        assert_eq!(
            git(&top, &["status", "--porcelain", "--", "notes.txt"]),
            "?? notes.txt"
        );
    }

    #[test]
    fn an_unchanged_tree_is_the_same_snapshot_and_no_files_changed() {
        let (_d, top, g) = repo();
        settle(&g);
        let start = g
            .checkpoint("refs/baton/t/01-a/start", "start", false)
            .unwrap();
        let start = start.snapshot.unwrap();
        // The next ones are told apart by stat data alone.
        assert!(g.last.lock().unwrap().as_ref().unwrap().watch.is_some());
        let changed = g
            .end_snapshot(&start, "refs/baton/t/01-a/end", "end")
            .unwrap();
        assert!(changed.is_empty(), "{changed:?}");
        assert_eq!(git(&top, &["rev-parse", "refs/baton/t/01-a/end"]), start);
        let next = g
            .checkpoint("refs/baton/t/02-b/start", "start", false)
            .unwrap();
        assert_eq!(next.snapshot.as_deref(), Some(start.as_str()));
        // Another process (a fresh value) finds the same tree.
        let other = Git::open(&top.join("proj")).unwrap();
        let again = other
            .checkpoint("refs/baton/u/01-a/start", "start", false)
            .unwrap();
        let tree = |c: &str| git(&top, &["rev-parse", &format!("{c}^{{tree}}")]);
        assert_eq!(tree(again.snapshot.as_deref().unwrap()), tree(&start));
    }

    #[test]
    fn a_changed_tree_is_a_new_snapshot_with_the_files_that_changed() {
        let (_d, top, g) = repo();
        settle(&g);
        let start = g
            .checkpoint("refs/baton/t/01-a/start", "start", false)
            .unwrap();
        let start = start.snapshot.unwrap();
        // Same size, so only the stat times tell.
        write(&top, "top.txt", "TOP\n");
        write(&top, "proj/added.rs", "added\n");
        std::fs::remove_file(top.join("proj/src/lib.rs")).unwrap();
        // In a folder no staged file is in, two levels down.
        write(&top, "empty/deeper/found.txt", "x\n");
        let mut changed = g
            .end_snapshot(&start, "refs/baton/t/01-a/end", "end")
            .unwrap();
        changed.sort();
        assert_eq!(
            changed,
            [
                "empty/deeper/found.txt",
                "proj/added.rs",
                "proj/src/lib.rs",
                "top.txt"
            ]
        );
        let end = git(&top, &["rev-parse", "refs/baton/t/01-a/end"]);
        assert_ne!(end, start);
        assert_eq!(git(&top, &["show", &format!("{end}:top.txt")]), "TOP");
    }

    #[test]
    fn new_files_are_seen_in_folders_without_staged_files_but_not_in_ignored_ones() {
        let (_d, top, g) = repo();
        std::fs::create_dir_all(top.join("empty/deeper")).unwrap();
        write(&top, "logs/old.log", "ignored\n");
        write(&top, "target/x/y.rs", "ignored folder\n");
        write(&top, ".gitignore", "*.log\ntarget/\n");
        git(&top, &["commit", "-qam", "ignore target"]);
        settle(&g);
        let start = g
            .checkpoint("refs/baton/t/01-a/start", "start", false)
            .unwrap();
        let start = start.snapshot.unwrap();
        let watch = g
            .last
            .lock()
            .unwrap()
            .as_ref()
            .unwrap()
            .watch
            .clone()
            .unwrap();
        let watched: Vec<&Path> = watch.dirs.iter().map(|w| w.path.as_path()).collect();
        assert!(watched.contains(&Path::new("empty/deeper")), "{watched:?}");
        assert!(watched.contains(&Path::new("logs")), "{watched:?}");
        assert!(!watched.contains(&Path::new("target")), "{watched:?}");
        write(&top, "target/x/z.rs", "still ignored\n");
        let changed = g
            .end_snapshot(&start, "refs/baton/t/01-a/end", "end")
            .unwrap();
        assert!(changed.is_empty(), "{changed:?}");
        write(&top, "logs/readme.md", "not ignored\n");
        write(&top, "empty/deeper/x.txt", "x\n");
        let mut changed = g
            .end_snapshot(&start, "refs/baton/t/01-a/end", "end")
            .unwrap();
        changed.sort();
        assert_eq!(changed, ["empty/deeper/x.txt", "logs/readme.md"]);
    }

    #[test]
    fn ignore_rules_and_head_are_followed_as_a_fresh_snapshot_would() {
        let (_d, top, g) = repo();
        // An ignored file HEAD tracks is in every snapshot while it exists.
        write(&top, "kept.log", "tracked though ignored\n");
        git(&top, &["add", "-f", "kept.log"]);
        git(&top, &["commit", "-qm", "kept"]);
        write(&top, "build.out", "untracked\n");
        let has = |g: &Git, name: &str, f: &str| {
            let cp = g
                .checkpoint(&format!("refs/baton/t/{name}/start"), "s", false)
                .unwrap();
            files(&top, cp.snapshot.as_deref().unwrap()).contains(&f.to_string())
        };
        assert!(has(&g, "a", "kept.log"));
        assert!(has(&g, "b", "build.out"));
        std::fs::remove_file(top.join("kept.log")).unwrap();
        assert!(!has(&g, "c", "kept.log"));
        write(&top, "kept.log", "back\n");
        assert!(has(&g, "d", "kept.log"));
        // A file newly ignored leaves the snapshot, as from a fresh index.
        write(&top, ".gitignore", "*.log\nbuild.out\n");
        assert!(!has(&g, "e", "build.out"));
        // A commit made in between is the next snapshot's parent.
        write(&top, "c.txt", "c\n");
        git(&top, &["add", "c.txt"]);
        git(&top, &["commit", "-qm", "c"]);
        let cp = g.checkpoint("refs/baton/t/f/start", "s", false).unwrap();
        let snap = cp.snapshot.unwrap();
        assert_eq!(
            git(&top, &["rev-parse", &format!("{snap}^")]),
            git(&top, &["rev-parse", "HEAD"])
        );
    }

    #[test]
    fn the_index_reader_reads_what_git_writes() {
        let (_d, top, _g) = repo();
        let entries = parse_index(&std::fs::read(top.join(".git/index")).unwrap()).unwrap();
        let mut paths: Vec<String> = entries
            .iter()
            .map(|e| e.path.display().to_string())
            .collect();
        paths.sort();
        assert_eq!(
            paths,
            [
                ".gitignore",
                "proj/.baton/config.toml",
                "proj/src/lib.rs",
                "top.txt"
            ]
        );
        let lib = entries
            .iter()
            .find(|e| e.path == Path::new("proj/src/lib.rs"))
            .unwrap();
        assert_eq!(
            Some(&lib.stat),
            EntryStat::of(&top.join("proj/src/lib.rs")).as_ref()
        );
        assert!(
            parse_index(b"DIRC\0\0\0\x04\0\0\0\0").is_none(),
            "version 4 is not read"
        );
    }
}
