//! Phase snapshots: commits of the whole work tree staged in a private index
//! kept in the git folder, and the `update-ref --stdin` that points their refs.

use super::stat::{DirStat, FileStamp, Watch, folders_of, parse_index};
use super::{Git, GitError, HeadState, IDENT};
use baton_core::state::Checkpoint;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The saved [`Snapshot`] and the index it describes.
#[derive(Serialize, Deserialize)]
struct Saved {
    /// The index's own checksum (its last 20 bytes).
    index_sum: String,
    snapshot: Snapshot,
}

impl Snapshot {
    fn saved_path(git_dir: &Path) -> PathBuf {
        git_dir.join("baton-snapshot-state.json")
    }

    /// Saves this snapshot for the next process (a cache: it is written
    /// atomically, not synced; anything unreadable is ignored).
    fn save(&self, git_dir: &Path) {
        let Some(index_sum) = index_sum(&self.index) else {
            return;
        };
        let saved = Saved {
            index_sum,
            snapshot: self.clone(),
        };
        let path = Snapshot::saved_path(git_dir);
        let tmp = tempfile_path(git_dir);
        let written = serde_json::to_vec(&saved)
            .map_err(std::io::Error::other)
            .and_then(|b| std::fs::write(&tmp, b))
            .and_then(|()| std::fs::rename(&tmp, &path));
        if let Err(e) = written {
            let _ = std::fs::remove_file(&tmp);
            tracing::debug!(error = %e, "snapshot state not saved");
        }
    }

    /// The snapshot an earlier process saved, if it describes `index` (the
    /// private index as it is now) and its commit is still a loose object
    /// (one git packed may have been pruned; then the snapshot is rebuilt).
    fn load(git_dir: &Path, objects: &Path, index: &[u8]) -> Option<Snapshot> {
        let bytes = std::fs::read(Snapshot::saved_path(git_dir)).ok()?;
        let saved: Saved = serde_json::from_slice(&bytes).ok()?;
        if Some(&saved.index_sum) != index_sum(index).as_ref() {
            return None;
        }
        let c = &saved.snapshot.commit;
        let loose = c.len() == 40 && objects.join(&c[..2]).join(&c[2..]).is_file();
        if !loose {
            return None;
        }
        Some(Snapshot {
            index: index.to_vec(),
            ..saved.snapshot
        })
    }
}

/// A git index file's checksum, in hex; `None` without one (too short, or
/// `index.skipHash`).
fn index_sum(index: &[u8]) -> Option<String> {
    let sum = index.get(index.len().checked_sub(20)?..)?;
    if sum.iter().all(|b| *b == 0) {
        return None;
    }
    Some(sum.iter().map(|b| format!("{b:02x}")).collect())
}

/// A phase snapshot as the private index left it. Saved next to that
/// index (`baton-snapshot-state.json`), so the next process starts from it
/// rather than from a rebuilt index.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct Snapshot {
    /// The private index file's bytes right after it: the same bytes
    /// there next time mean no other process staged anything since.
    #[serde(skip)]
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
    pub(super) watch: Option<Watch>,
    /// The folders watched (or that would have been), and which folders
    /// without staged files are ignored.
    dirs: Vec<PathBuf>,
    ignored: std::collections::HashMap<PathBuf, bool>,
}

impl Git {
    /// Stages every file of the work tree (untracked too, ignored ones not)
    /// and unstages the project's `.baton/`, in the index `env` names.
    pub(super) fn stage_all(&self, env: &[(&str, &str)]) -> Result<(), GitError> {
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
    pub(super) fn snapshot_with(
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

    /// A commit of `tree` with `parents` and `message`, made by baton; no
    /// ref is moved.
    pub fn commit_tree(
        &self,
        tree: &str,
        parents: &[&str],
        message: &str,
    ) -> Result<String, GitError> {
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
        // This process's first snapshot: start from the last one's.
        if last.is_none()
            && let (Some(b), Some(common)) = (&bytes, &self.common_dir)
        {
            *last = Snapshot::load(git_dir, &common.join("objects"), b).map(|mut k| {
                if let Some(w) = &mut k.watch {
                    w.arm(&self.root, Path::new(&self.baton_path));
                }
                k
            });
            tracing::debug!(loaded = last.is_some(), "saved snapshot state");
        }
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
                if let Some(k) = last.as_ref() {
                    k.save(git_dir);
                }
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
pub(super) fn tempfile_path(git_dir: &Path) -> PathBuf {
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
