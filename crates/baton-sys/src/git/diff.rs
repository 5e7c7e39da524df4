//! What changed between two trees, as a person reviews it: the files with
//! how each changed and its added and removed lines, and the unified diff,
//! bounded. The tree of a work tree as it is now is built in an index of
//! its own, so no ref moves and the snapshots' private index is untouched.

use super::{Git, GitError, snapshot::tempfile_path};
use std::io::Read;

/// One file that differs.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct FileChange {
    pub path: String,
    /// `added`, `deleted`, `modified` or `type-changed`.
    pub change: &'static str,
    /// Lines added and removed; none for a binary file.
    pub added: Option<u64>,
    pub removed: Option<u64>,
}

/// What changed between two trees.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct TreeDiff {
    pub files: Vec<FileChange>,
    /// The unified diff (`git diff`), at most the bytes asked for.
    pub patch: String,
    /// The patch was cut at that bound (the file list is whole).
    pub truncated: bool,
}

impl Git {
    /// The tree of the whole work tree now, as a snapshot would hold it
    /// (tracked and untracked files, not ignored ones, the project's
    /// `.baton/` left out).
    pub fn worktree_tree(&self) -> Result<String, GitError> {
        let dir = self
            .git_dir
            .clone()
            .unwrap_or_else(|| self.root.join(".git"));
        let index = tempfile_path(&dir);
        let index_s = index.to_string_lossy().into_owned();
        let env = [("GIT_INDEX_FILE", index_s.as_str())];
        let tree = (|| {
            if self.head().is_some() {
                self.run(&["read-tree", "HEAD"], &env)?;
            }
            self.stage_all(&env)?;
            Ok(self.run(&["write-tree"], &env)?.trim().to_string())
        })();
        let _ = std::fs::remove_file(&index);
        tree
    }

    /// What differs from `from` to `to` (commits or trees), with the patch
    /// cut after `max_patch` bytes; the project's `.baton/` is left out, as
    /// snapshots leave it out.
    pub fn diff_trees(&self, from: &str, to: &str, max_patch: usize) -> Result<TreeDiff, GitError> {
        let base = ["diff", "--no-renames", "--no-ext-diff", "--no-color", "-z"];
        let with = |extra: &'static str| -> Vec<&str> {
            let mut a = base.to_vec();
            a.extend([extra, from, to, "--", ":/", &self.exclude_baton]);
            a
        };
        let statuses = self.run(&with("--name-status"), &[])?;
        let numstat = self.run(&with("--numstat"), &[])?;
        let mut files = parse_name_status(&statuses);
        for (path, added, removed) in parse_numstat(&numstat) {
            if let Some(f) = files.iter_mut().find(|f| f.path == path) {
                f.added = added;
                f.removed = removed;
            }
        }
        let (patch, truncated) = self.bounded(
            &[
                "diff",
                "--no-renames",
                "--no-ext-diff",
                "--no-color",
                from,
                to,
                "--",
                ":/",
                &self.exclude_baton,
            ],
            max_patch,
        )?;
        Ok(TreeDiff {
            files,
            patch,
            truncated,
        })
    }

    /// git's stdout, at most `max` bytes of it (git is stopped once that
    /// much was read).
    fn bounded(&self, args: &[&str], max: usize) -> Result<(String, bool), GitError> {
        let err = |e: std::io::Error| GitError {
            args: args.join(" "),
            stderr: format!("cannot run git: {e}"),
        };
        let mut child = self
            .command(args, &[])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .map_err(err)?;
        let mut out = Vec::new();
        let stdout = child.stdout.take().expect("piped");
        stdout
            .take(max as u64 + 1)
            .read_to_end(&mut out)
            .map_err(err)?;
        let truncated = out.len() > max;
        if truncated {
            let _ = child.kill();
            out.truncate(max);
        }
        let status = child.wait().map_err(err)?;
        if !truncated && !status.success() {
            return Err(GitError {
                args: args.join(" "),
                stderr: format!("exited with {status}"),
            });
        }
        let mut text = String::from_utf8_lossy(&out).into_owned();
        if truncated {
            // Cut at the last whole line.
            let end = text.rfind('\n').map_or(0, |i| i + 1);
            text.truncate(end);
        }
        Ok((text, truncated))
    }
}

/// `--name-status -z`: `M\0path\0…`.
fn parse_name_status(out: &str) -> Vec<FileChange> {
    let mut parts = out.split('\0').filter(|s| !s.is_empty());
    let mut files = Vec::new();
    while let (Some(status), Some(path)) = (parts.next(), parts.next()) {
        let change = match status.chars().next() {
            Some('A') => "added",
            Some('D') => "deleted",
            Some('T') => "type-changed",
            _ => "modified",
        };
        files.push(FileChange {
            path: path.to_string(),
            change,
            added: None,
            removed: None,
        });
    }
    files
}

/// `--numstat -z`: `added\tremoved\tpath\0…`, `-` for a binary file.
fn parse_numstat(out: &str) -> Vec<(String, Option<u64>, Option<u64>)> {
    out.split('\0')
        .filter_map(|rec| {
            let mut f = rec.splitn(3, '\t');
            let (a, r, p) = (f.next()?, f.next()?, f.next()?);
            Some((p.to_string(), a.parse().ok(), r.parse().ok()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_and_counts_are_read_from_git_z_output() {
        let files = parse_name_status("M\0src/a b.rs\0A\0new\0D\0gone\0");
        let changes: Vec<_> = files.iter().map(|f| (f.path.as_str(), f.change)).collect();
        assert_eq!(
            changes,
            [
                ("src/a b.rs", "modified"),
                ("new", "added"),
                ("gone", "deleted")
            ]
        );
        let counts = parse_numstat("3\t1\tsrc/a b.rs\0-\t-\tlogo.png\0");
        assert_eq!(counts[0], ("src/a b.rs".into(), Some(3), Some(1)));
        assert_eq!(counts[1], ("logo.png".into(), None, None));
    }
}
