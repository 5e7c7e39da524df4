//! Writing the snapshot refs: in-process as loose ref files where git
//! keeps refs in files (what `git update-ref` does: a `.lock` file created
//! exclusively, the commit written, renamed over the ref), else through one
//! `git update-ref --stdin` kept running, else one process per ref.

use super::{Git, GitError};
use std::io::Write;
use std::path::Path;
use std::process::Stdio;

impl Git {
    /// Points `refname` (a `refs/baton/...` snapshot ref) at `commit`, a
    /// commit this process made or found.
    pub(super) fn update_ref(&self, refname: &str, commit: &str) -> Result<(), GitError> {
        if let Some(common) = self.common_dir.as_deref().filter(|_| self.files_refs) {
            match write_loose_ref(common, refname, commit) {
                Ok(()) => return Ok(()),
                Err(e) => {
                    tracing::debug!(refname, error = %e, "loose ref not written; through git instead");
                }
            }
        }
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
}

/// Whether the repository whose common git folder is `common` keeps its
/// refs in files (not reftable, `extensions.refStorage`).
pub(super) fn files_refs(common: &Path) -> bool {
    std::fs::read_to_string(common.join("config")).is_ok_and(|c| {
        !c.to_ascii_lowercase()
            .replace([' ', '\t'], "")
            .contains("refstorage=")
    })
}

/// `refname` as a loose ref file under `common`, as git writes one. Fails
/// (and leaves nothing) when the name is not a plain snapshot ref, its
/// lock is taken, or anything is in the way.
fn write_loose_ref(common: &Path, refname: &str, commit: &str) -> std::io::Result<()> {
    use std::io::{Error, ErrorKind};
    let plain = refname.starts_with("refs/baton/")
        && refname.split('/').all(|c| {
            !c.is_empty() && !c.starts_with('.') && !c.ends_with(".lock") && !c.contains("..")
        })
        && refname
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-".contains(&b));
    if !plain || commit.len() != 40 || !commit.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(Error::new(
            ErrorKind::InvalidInput,
            "not a plain snapshot ref",
        ));
    }
    let path = common.join(refname);
    let lock = common.join(format!("{refname}.lock"));
    std::fs::create_dir_all(path.parent().unwrap_or(common))?;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&lock)?;
    let written = writeln!(f, "{commit}").and_then(|()| std::fs::rename(&lock, &path));
    if written.is_err() {
        let _ = std::fs::remove_file(&lock);
    }
    written
}

/// A `git update-ref --stdin` taking one transaction at a time.
pub(super) struct RefWriter {
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
