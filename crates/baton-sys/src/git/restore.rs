//! Putting the work tree back to a checkpoint (the old one saved first), and
//! committing the work tree onto the branch.

use super::{Git, GitError, IDENT};
use baton_core::state::Checkpoint;

impl Git {
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
        let saved = self.save_worktree(cp, safety_ref)?;
        self.lay_down(cp)?;
        Ok(saved)
    }

    /// The first half of a restore to `cp` that keeps a saved ref only
    /// when it holds something: the work tree and index saved under
    /// `safety_ref` as [`Git::restore`] saves them, the ref deleted again
    /// when the restore would lose nothing without it (`None`). Then
    /// [`Git::lay_down`] does the rest.
    pub fn save_if_replaced(
        &self,
        cp: &Checkpoint,
        safety_ref: &str,
    ) -> Result<Option<String>, GitError> {
        let saved = self.save_worktree(cp, safety_ref)?;
        if self.loses_nothing(cp, &saved)? {
            self.run(&["update-ref", "-d", safety_ref], &[])?;
            return Ok(None);
        }
        Ok(Some(saved))
    }

    /// Whether restoring `cp` over what `saved` holds (its tree: the work
    /// tree; its parents: the old HEAD and a commit of the old index)
    /// loses nothing: the old HEAD stays reachable from the checkpoint's
    /// (the branch only moves along its own history), the work tree is
    /// the checkpoint's or the old HEAD's, and the index the old HEAD's or
    /// the work tree's.
    fn loses_nothing(&self, cp: &Checkpoint, saved: &str) -> Result<bool, GitError> {
        let tree = |rev: &str| {
            self.run(
                &["rev-parse", "--verify", "-q", &format!("{rev}^{{tree}}")],
                &[],
            )
            .map(|t| t.trim().to_string())
        };
        let parents = self.run(&["rev-list", "--parents", "-n", "1", saved], &[])?;
        let parents: Vec<&str> = parents.split_whitespace().skip(1).collect();
        let (old_head, index) = match parents.as_slice() {
            [head, index] => (Some(*head), *index),
            [index] => (None, *index),
            _ => return Ok(false),
        };
        let reachable = match (old_head, cp.head.as_deref()) {
            (None, _) => true,
            (Some(_), None) => false,
            (Some(old), Some(new)) => {
                old == new
                    || self
                        .command(&["merge-base", "--is-ancestor", old, new], &[])
                        .status()
                        .is_ok_and(|s| s.success())
            }
        };
        if !reachable {
            return Ok(false);
        }
        let work = tree(saved)?;
        let head_tree = match old_head {
            Some(h) => Some(tree(h)?),
            None => None,
        };
        let snapshot_tree = match &cp.snapshot {
            Some(s) => Some(tree(s)?),
            None => head_tree.clone(),
        };
        let index_tree = tree(index)?;
        let work_kept = Some(&work) == snapshot_tree.as_ref() || Some(&work) == head_tree.as_ref();
        let index_kept = index_tree == work || Some(&index_tree) == head_tree.as_ref();
        Ok(work_kept && index_kept)
    }

    /// Saves the work tree and index under `safety_ref`, as a restore to
    /// `cp` does first (refused, with nothing saved, when the restore
    /// would be: [`Git::restore_blocker`]).
    fn save_worktree(&self, cp: &Checkpoint, safety_ref: &str) -> Result<String, GitError> {
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
        self.snapshot_with(
            safety_ref,
            "baton: work tree before restoring a checkpoint",
            Some(&index_commit),
        )
    }

    /// The second half of a restore: the branch moved back to `cp`'s HEAD
    /// and its files laid down (what was there saved before, by
    /// [`Git::save_if_replaced`] or [`Git::restore`]). On failure the
    /// branch and the index are put back as they were.
    pub fn lay_down(&self, cp: &Checkpoint) -> Result<(), GitError> {
        let old_head = self.head();
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
        Ok(())
    }

    /// Commits every change in the work tree (what `.gitignore` ignores
    /// left out) onto the checked-out branch; returns HEAD after. What
    /// baton put there for a run that still goes on (a brief, its MCP
    /// server) is committed as the file is without it.
    pub fn commit_worktree(&self, message: &str) -> Result<String, GitError> {
        self.run(&["add", "-A", "--", ":/"], &[])?;
        self.stage_without_run_files()?;
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

    /// Whether the index holds changes not committed.
    pub fn has_staged(&self) -> bool {
        self.command(&["diff", "--cached", "--quiet"], &[])
            .status()
            .is_ok_and(|s| !s.success())
    }

    /// Commits what is staged, as baton; HEAD after.
    pub fn commit_staged(&self, message: &str) -> Result<String, GitError> {
        self.run(&["commit", "-q", "--no-verify", "-m", message], &IDENT)?;
        self.head().ok_or_else(|| GitError {
            args: "rev-parse HEAD".into(),
            stderr: "no HEAD after committing".into(),
        })
    }

    /// Sets the staged version of every file baton changed for a run to
    /// the file without baton's change (gone where baton created it).
    fn stage_without_run_files(&self) -> Result<(), GitError> {
        let io = |e: std::io::Error| GitError {
            args: "add".into(),
            stderr: format!("cannot read what baton put in the work tree: {e}"),
        };
        for (rel, committed) in self.run_files_in(&self.root).map_err(io)? {
            match committed {
                None => {
                    self.run(
                        &["rm", "-q", "--cached", "--ignore-unmatch", "--", &rel],
                        &[],
                    )?;
                }
                Some(text) => {
                    let dir = self.git_dir.as_deref().unwrap_or(&self.root);
                    let tmp = dir.join("baton-committed-file");
                    fs_err::write(&tmp, text).map_err(io)?;
                    let tmp_path = tmp.display().to_string();
                    let blob = self.run(&["hash-object", "-w", "--path", &rel, &tmp_path], &[]);
                    let _ = std::fs::remove_file(&tmp);
                    let info = format!("100644,{},{rel}", blob?.trim());
                    self.run(&["update-index", "--add", "--cacheinfo", &info], &[])?;
                }
            }
        }
        Ok(())
    }
}
