//! Heavy ignored folders (`node_modules`, `target`, virtual environments)
//! shared from a checkout into a new worktree of it, so the worktree's
//! first build or test does not start from nothing: a symlink to the
//! original, or a copy-on-write clone where the filesystem can make one
//! (btrfs, XFS, APFS). A symlinked folder is written in the repository's
//! `info/exclude` so no snapshot or commit ever takes the link for work.

use super::Git;
use std::path::Path;

/// How folders are shared into a worktree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Share {
    /// A symlink to the original: instant; what the worktree writes there,
    /// the original gets.
    Symlink,
    /// A copy-on-write clone: the worktree's own, and as fast where the
    /// filesystem clones; nothing where it cannot.
    Reflink,
    None,
}

/// What sharing did to each folder found: shared (how), or why not.
pub type Shared = Vec<(String, Result<&'static str, String>)>;

impl Git {
    /// Shares the ignored folders of this checkout whose name is one of
    /// `names` (at any depth, outside `.baton/`) into the worktree at
    /// `into`, as `how` says.
    pub fn share_ignored(&self, into: &Path, names: &[String], how: Share) -> Shared {
        if how == Share::None || names.is_empty() {
            return Vec::new();
        }
        let listed = self.run(
            &[
                "ls-files",
                "--others",
                "--ignored",
                "--exclude-standard",
                "--directory",
                "-z",
            ],
            &[],
        );
        let Ok(listed) = listed else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for rel in listed.split('\0').filter_map(|p| p.strip_suffix('/')) {
            let name = rel.rsplit('/').next().unwrap_or(rel);
            if !names.iter().any(|n| n == name) || rel.split('/').any(|c| c == ".baton") {
                continue;
            }
            let (from, to) = (self.root.join(rel), into.join(rel));
            if to.symlink_metadata().is_ok() {
                continue;
            }
            if let Some(parent) = to.parent()
                && let Err(e) = std::fs::create_dir_all(parent)
            {
                out.push((rel.to_string(), Err(e.to_string())));
                continue;
            }
            let done = match how {
                Share::Symlink => self
                    .exclude(rel)
                    .and_then(|()| {
                        std::os::unix::fs::symlink(&from, &to).map_err(|e| e.to_string())
                    })
                    .map(|()| "symlinked"),
                Share::Reflink => clone(&from, &to).map(|()| "cloned"),
                Share::None => continue,
            };
            out.push((rel.to_string(), done));
        }
        out
    }

    /// Adds `/rel` to the repository's `info/exclude`, once.
    fn exclude(&self, rel: &str) -> Result<(), String> {
        let dir = self
            .common_dir
            .clone()
            .unwrap_or_else(|| self.root.join(".git"));
        let path = dir.join("info").join("exclude");
        let line = format!("/{rel}");
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        if text.lines().any(|l| l.trim() == line) {
            return Ok(());
        }
        std::fs::create_dir_all(dir.join("info")).map_err(|e| e.to_string())?;
        let mut new = text;
        if !new.is_empty() && !new.ends_with('\n') {
            new.push('\n');
        }
        new.push_str(&format!(
            "# baton: shared into worktrees as a symlink\n{line}\n"
        ));
        std::fs::write(&path, new).map_err(|e| e.to_string())
    }
}

/// `cp -a --reflink=always`; nothing is left behind when it cannot.
fn clone(from: &Path, to: &Path) -> Result<(), String> {
    let out = std::process::Command::new("cp")
        .args(["-a", "--reflink=always"])
        .arg(from)
        .arg(to)
        .output()
        .map_err(|e| format!("cannot run cp: {e}"))?;
    if out.status.success() {
        return Ok(());
    }
    let _ = std::fs::remove_dir_all(to);
    Err(format!(
        "the filesystem cannot clone it ({})",
        String::from_utf8_lossy(&out.stderr).trim()
    ))
}
