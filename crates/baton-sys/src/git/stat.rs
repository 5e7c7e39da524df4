//! The stat data that tells, without git, that a snapshot's work tree is
//! unchanged: the git index file reader, file and folder stat types, [`Watch`].

use super::Git;
use super::notify::Notify;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::process::Stdio;

/// Enough of a file's stat data to see that it changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct FileStamp {
    len: u64,
    modified: Option<std::time::SystemTime>,
    ino: u64,
}

impl FileStamp {
    pub(super) fn of(path: &Path) -> Option<FileStamp> {
        use std::os::unix::fs::MetadataExt;
        let m = std::fs::symlink_metadata(path).ok()?;
        Some(FileStamp {
            len: m.len(),
            modified: m.modified().ok(),
            ino: m.ino(),
        })
    }
}

impl Git {
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
    pub(super) fn watch(
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
            w.files.push((PathBuf::from(name), e.stat));
        }
        let mut watch = Watch {
            dirs: watched.into_values().collect(),
            notify: None,
        };
        watch.arm(&self.root, baton);
        (Some(watch), dirs)
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
}

/// The most folders a [`Watch`] covers; beyond, every snapshot asks git.
const MAX_WATCHED_DIRS: usize = 20_000;

/// The stat data of a snapshot's staged files and of the folders new files
/// could appear in, and inotify over those folders where it can.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct Watch {
    pub(super) dirs: Vec<WatchedDir>,
    #[serde(skip)]
    pub(super) notify: Option<std::sync::Arc<Notify>>,
}

/// A watched folder and the staged files directly in it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct WatchedDir {
    pub(super) path: PathBuf,
    stat: DirStat,
    files: Vec<(PathBuf, EntryStat)>,
}

impl Watch {
    /// Sets up inotify over the watched folders. What changed before the
    /// watches were in place shows in the stat data, so it is looked at
    /// once more; if anything changed, no inotify (the next check looks
    /// at every file, and finds it).
    pub(super) fn arm(&mut self, root: &Path, baton: &Path) {
        let dirs: Vec<PathBuf> = self.dirs.iter().map(|d| d.path.clone()).collect();
        self.notify = Notify::start(root, &dirs, baton)
            .filter(|_| self.stat_unchanged(root))
            .map(std::sync::Arc::new);
    }

    /// Whether the work tree is still what the snapshot holds: at once
    /// when inotify saw nothing happen in the watched folders since it was
    /// last asked, else by the stat data of every file and folder.
    pub(super) fn unchanged(&self, root: &Path) -> bool {
        let Some(notify) = &self.notify else {
            return self.stat_unchanged(root);
        };
        if notify.quiet() {
            return true;
        }
        // What happened may have changed nothing (a file written back as
        // it was, with its old times): the events were read before this
        // look, so any later one is still seen.
        let unchanged = self.stat_unchanged(root);
        if unchanged {
            notify.rearm();
        }
        unchanged
    }

    /// Whether every file and folder still has the stat data recorded.
    /// Files are looked up in their folder opened once (`fstatat`), not
    /// by their whole path.
    fn stat_unchanged(&self, root: &Path) -> bool {
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

    pub(super) fn files(&self) -> usize {
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct EntryStat {
    ctime: Stamp,
    mtime: Stamp,
    ino: u32,
    size: u32,
    /// 0o100644, 0o100755 or 0o120000.
    mode: u32,
}

impl EntryStat {
    #[cfg(test)]
    pub(super) fn of(path: &Path) -> Option<EntryStat> {
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct DirStat {
    mtime: Stamp,
    ctime: Stamp,
    ino: u64,
}

impl DirStat {
    pub(super) fn of(path: &Path) -> Option<DirStat> {
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

pub(super) struct IndexEntry {
    pub(super) path: PathBuf,
    pub(super) stat: EntryStat,
}

/// The entries of a git index file of version 2 or 3 (what git writes
/// unless told otherwise); `None` for anything else, and for indexes with
/// entries a stat check cannot vouch for (submodules, conflicts,
/// skip-worktree or intent-to-add entries).
pub(super) fn parse_index(b: &[u8]) -> Option<Vec<IndexEntry>> {
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
pub(super) fn folders_of(entries: &[IndexEntry]) -> Vec<PathBuf> {
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
