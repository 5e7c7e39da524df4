//! inotify over a snapshot's watched folders: when nothing happened in any
//! of them since the snapshot, the work tree is known unchanged without
//! looking at every file.
//!
//! Every way a process changes a file or a folder entry through the file
//! system (write, truncate, chmod, touch, create, delete, rename) is seen.
//! What inotify cannot see (a file written through a shared memory map, or
//! through a hard link in a folder not watched) only delays the change to
//! the next snapshot after anything else happens; the next snapshot of a
//! work tree whose folders saw any event looks at every file.

use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify, WatchDescriptor};
use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

/// The watches of one snapshot.
#[derive(Debug)]
pub(super) struct Notify {
    inotify: Inotify,
    /// For each watch, the entry names whose events do not count (`.git`,
    /// and the project's `.baton` in the folder holding it).
    ignored: HashMap<WatchDescriptor, Vec<OsString>>,
    /// An event was seen since the watches were set up or last re-armed.
    stirred: AtomicBool,
}

impl Notify {
    /// Watches `dirs` (relative to `root`) for any change to them or their
    /// entries. `None` when inotify cannot (no instance or watch left for
    /// this user, a folder gone).
    pub(super) fn start(root: &Path, dirs: &[PathBuf], baton: &Path) -> Option<Notify> {
        let inotify = Inotify::init(InitFlags::IN_NONBLOCK | InitFlags::IN_CLOEXEC)
            .inspect_err(|e| tracing::debug!(error = %e, "no inotify instance"))
            .ok()?;
        let mask = AddWatchFlags::IN_MODIFY
            | AddWatchFlags::IN_ATTRIB
            | AddWatchFlags::IN_CLOSE_WRITE
            | AddWatchFlags::IN_MOVED_FROM
            | AddWatchFlags::IN_MOVED_TO
            | AddWatchFlags::IN_CREATE
            | AddWatchFlags::IN_DELETE
            | AddWatchFlags::IN_DELETE_SELF
            | AddWatchFlags::IN_MOVE_SELF
            | AddWatchFlags::IN_ONLYDIR
            | AddWatchFlags::IN_DONT_FOLLOW;
        let mut ignored = HashMap::new();
        for d in dirs {
            let wd = inotify
                .add_watch(&root.join(d), mask)
                .inspect_err(
                    |e| tracing::debug!(dir = %d.display(), error = %e, "no inotify watch"),
                )
                .ok()?;
            let mut names = vec![OsString::from(".git")];
            if baton.parent() == Some(d.as_path())
                && let Some(name) = baton.file_name()
            {
                names.push(name.to_os_string());
            }
            // A folder watched twice (a bind mount of itself) shares one
            // watch; the names then add up.
            ignored.entry(wd).or_insert_with(Vec::new).extend(names);
        }
        Some(Notify {
            inotify,
            ignored,
            stirred: AtomicBool::new(false),
        })
    }

    /// Whether nothing happened in the watched folders since the watches
    /// were set up (or [`Notify::rearm`] was called). Once something did,
    /// it stays so until then.
    pub(super) fn quiet(&self) -> bool {
        let mut quiet = !self.stirred.load(Ordering::SeqCst);
        loop {
            match self.inotify.read_events() {
                Ok(events) if events.is_empty() => break,
                Ok(events) => {
                    for e in events {
                        let ignored = e.name.as_ref().is_some_and(|n| {
                            self.ignored
                                .get(&e.wd)
                                .is_some_and(|names| names.contains(n))
                        });
                        if !ignored {
                            tracing::debug!(name = ?e.name, mask = ?e.mask, "work tree event");
                            quiet = false;
                        }
                    }
                }
                Err(nix::errno::Errno::EAGAIN) => break,
                Err(e) => {
                    tracing::debug!(error = %e, "reading inotify events failed");
                    quiet = false;
                    break;
                }
            }
        }
        if !quiet {
            self.stirred.store(true, Ordering::SeqCst);
        }
        quiet
    }

    /// The events seen so far turned out to change nothing (the stat data
    /// says so, looked at after they were read): quiet again until the
    /// next one.
    pub(super) fn rearm(&self) {
        self.stirred.store(false, Ordering::SeqCst);
    }
}
