//! Files rendered from the store: `state.json`, `NN-phase.md` outputs and
//! the `current` pointer, and the session logs a held task keeps current
//! (`session_log.rs`, `.baton/sessions/<id>.md`) with their index
//! (`session_index.rs`, `.baton/index.toon`) and token counts
//! (`tokens.rs`). Every write is atomic (temp file, fsync, rename, fsync
//! of the folder), so a crash leaves the old file or the new one; files
//! derived for reading only (session logs, their index) skip the fsyncs
//! (`derived_write`).

mod session_index;
mod session_log;
pub mod tokens;

pub use session_index::SessionIndex;
pub(crate) use session_log::{
    LogWriter, child_blocks, children_of, comments_of, model_of, subagents_counted,
};

use baton_core::document;
use baton_core::state::{PhaseStatus, TaskState};
use std::io::Write;
use std::path::Path;

/// Writes a file derived from the store (a session log, the session
/// index) atomically but without waiting for the disk: after a power cut
/// it may be the old file, which the next render (or `doctor --fix`)
/// replaces; the journal it comes from is what is durable.
pub fn derived_write(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    replace(path, bytes, false)
}

/// Writes `bytes` to `path` atomically.
pub fn atomic_write(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    replace(path, bytes, true)
}

/// `path` replaced by a temporary file renamed over it; with `sync`, the
/// file and its folder reach the disk before this returns.
fn replace(path: &Path, bytes: &[u8], sync: bool) -> std::io::Result<()> {
    replace_with(path, sync, |w| w.write_all(bytes))
}

/// `path` replaced by what `write` writes into a temporary file beside it
/// (`.NAME.tmp-PID-START`), renamed over it; with `sync`, the file and its folder
/// reach the disk before this returns. On any error (a full disk) the
/// temporary file is removed and `path` is left as it was.
pub fn replace_with(
    path: &Path,
    sync: bool,
    write: impl FnOnce(&mut std::io::BufWriter<fs_err::File>) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    fs_err::create_dir_all(dir)?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!("{TMP_PREFIX}{name}.tmp-{}", writer_mark()));
    let written = (|| {
        let mut w = std::io::BufWriter::new(fs_err::File::create(&tmp)?);
        write(&mut w)?;
        let f = w.into_inner().map_err(|e| e.into_error())?;
        if sync {
            f.sync_all()?;
        }
        fs_err::rename(&tmp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written?;
    if sync && let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// How much of a file is redacted at once: whole lines up to this size (a
/// longer line, a phase that prints a gigabyte without a line break, is
/// redacted in pieces of this size).
pub const REDACT_PIECE: u64 = 1 << 20;

/// Rewrites `path` without the secrets in it ([`baton_core::redact::Lines`]):
/// read once, a chunk of whole lines at a time, to find whether anything
/// is to be taken out, and only then rewritten (atomically), so memory
/// stays at a chunk whatever the file's size. A line that is not UTF-8 is
/// rewritten lossily only when it holds a secret; every other byte is kept
/// as it was. A missing file is left missing.
pub fn redact_file(r: &baton_core::redact::Redactor, path: &Path) -> std::io::Result<()> {
    let Some(mut chunks) = Chunks::open(path)? else {
        return Ok(());
    };
    let lines = r.lines();
    let mut holds = false;
    while let Some(chunk) = chunks.next()? {
        if lines.holds(&String::from_utf8_lossy(chunk)) {
            holds = true;
            break;
        }
    }
    if !holds {
        return Ok(());
    }
    let Some(mut chunks) = Chunks::open(path)? else {
        return Ok(());
    };
    let mut lines = r.lines();
    replace_with(path, false, |w| {
        while let Some(chunk) = chunks.next()? {
            if !lines.holds(&String::from_utf8_lossy(chunk)) {
                w.write_all(chunk)?;
                continue;
            }
            for piece in chunk.split_inclusive(|b| *b == b'\n') {
                let (body, end): (&[u8], &[u8]) = match piece.strip_suffix(b"\n") {
                    Some(b) => (b, b"\n"),
                    None => (piece, b""),
                };
                let text = String::from_utf8_lossy(body);
                if !lines.holds(&text) {
                    w.write_all(piece)?;
                } else if let Some(l) = lines.line(&text) {
                    w.write_all(l.as_bytes())?;
                    w.write_all(end)?;
                }
            }
        }
        Ok(())
    })
}

/// A file read in chunks of about [`REDACT_PIECE`] bytes that end at a line
/// end (or, for a longer line, are a piece of it).
struct Chunks {
    reader: std::io::BufReader<std::fs::File>,
    buf: Vec<u8>,
}

impl Chunks {
    /// A regular file only (`process::open_regular`): what a phase put
    /// in its place (a FIFO, a device, a folder) is left as it is.
    fn open(path: &Path) -> std::io::Result<Option<Chunks>> {
        Ok(baton_sys::process::open_regular(path)?.map(|f| Chunks {
            reader: std::io::BufReader::with_capacity(64 << 10, f),
            buf: Vec::new(),
        }))
    }

    fn next(&mut self) -> std::io::Result<Option<&[u8]>> {
        use std::io::{BufRead, Read};
        self.buf.clear();
        while (self.buf.len() as u64) < REDACT_PIECE {
            let room = REDACT_PIECE - self.buf.len() as u64;
            let n = (&mut self.reader)
                .take(room)
                .read_until(b'\n', &mut self.buf)?;
            if n == 0 {
                break;
            }
        }
        Ok((!self.buf.is_empty()).then_some(&self.buf[..]))
    }
}

/// What the temporary files of [`replace_with`] start with
/// (`.NAME.tmp-PID-START`).
pub const TMP_PREFIX: &str = ".";

/// Who writes a temporary file: this process's pid and start time
/// (`PID-START`), so a file left by a writer that died is known for one
/// even once its pid is another process's (pids are reused quickly).
fn writer_mark() -> String {
    static MARK: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    MARK.get_or_init(|| {
        let pid = std::process::id();
        let start = baton_sys::host::process_start_time(pid).unwrap_or(0);
        format!("{pid}-{start}")
    })
    .clone()
}

/// The writer named in a temporary file's name (`PID` or `PID-START`).
fn writer_of(name: &str) -> Option<(u32, Option<u64>)> {
    let (_, mark) = name.rsplit_once(".tmp-")?;
    let (pid, start) = match mark.split_once('-') {
        Some((p, s)) => (p, Some(s.parse().ok()?)),
        None => (mark, None),
    };
    Some((pid.parse().ok()?, start))
}

/// The temporary files in `dir` whose name starts with `.{prefix}` that a
/// write cut short left (a SIGKILL between writing and renaming): their
/// writer, named in the file's name, is gone.
pub fn stale_temporaries(dir: &Path, prefix: &str) -> Vec<std::path::PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let begins = format!("{TMP_PREFIX}{prefix}");
    entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let (pid, start) = writer_of(&name)?;
            let alive = match (baton_sys::host::process_start_time(pid), start) {
                (Some(now), Some(then)) => now == then,
                (Some(_), None) => true,
                (None, _) => false,
            };
            (is_temporary(&name) && name.starts_with(&begins) && !alive).then(|| e.path())
        })
        .collect()
}

/// Whether `name` is a temporary file [`replace_with`] makes.
pub fn is_temporary(name: &str) -> bool {
    name.starts_with(TMP_PREFIX) && writer_of(name).is_some()
}

/// Writes `state.json` for a task.
pub fn state_json(task_dir: &Path, doc: &impl serde::Serialize) -> std::io::Result<()> {
    atomic_write(&task_dir.join("state.json"), &state_json_bytes(doc))
}

fn state_json_bytes(doc: &impl serde::Serialize) -> Vec<u8> {
    let mut bytes = serde_json::to_vec_pretty(doc).expect("json");
    bytes.push(b'\n');
    bytes
}

/// A task's rendered files (`state.json`, phase outputs) written by
/// threads of their own while the task goes on (an atomic write waits on
/// the disk twice). Writes of one file are in order (the next waits for
/// the one in flight); [`Background::finish`] and drop wait for them all,
/// and an error is reported by the next write of that file or by `finish`.
#[derive(Debug, Default)]
pub struct Background {
    pending: Vec<(
        std::path::PathBuf,
        std::thread::JoinHandle<std::io::Result<()>>,
    )>,
}

impl Background {
    /// Renders `doc` now and writes it to `state.json` in the background.
    pub fn state_json(
        &mut self,
        task_dir: &Path,
        doc: &impl serde::Serialize,
    ) -> std::io::Result<()> {
        self.write(task_dir.join("state.json"), state_json_bytes(doc))
    }

    /// Writes the output file of passed phase `index` in the background.
    pub fn phase_output(
        &mut self,
        task_dir: &Path,
        state: &TaskState,
        index: usize,
    ) -> std::io::Result<()> {
        let p = &state.phases[index];
        let path = task_dir.join(document::output_file_name(index, p.id.as_str()));
        self.write(path, phase_markdown(state, index).into_bytes())
    }

    /// Runs `job` in the background, after the job of the same `key` in
    /// flight (a file derived from the store: a session log and its row of
    /// the index).
    pub fn job(
        &mut self,
        key: std::path::PathBuf,
        job: impl FnOnce() -> std::io::Result<()> + Send + 'static,
    ) -> std::io::Result<()> {
        if let Some(i) = self.pending.iter().position(|(p, _)| *p == key) {
            let (_, h) = self.pending.swap_remove(i);
            joined(h)?;
        }
        let h = std::thread::spawn(job);
        self.pending.push((key, h));
        Ok(())
    }

    fn write(&mut self, path: std::path::PathBuf, bytes: Vec<u8>) -> std::io::Result<()> {
        let to = path.clone();
        self.job(path, move || atomic_write(&to, &bytes))
    }

    /// Waits for every write in flight; the first error, if any.
    pub fn finish(&mut self) -> std::io::Result<()> {
        self.finish_except(None)
    }

    /// Waits for every write in flight but those of `task_dir`'s
    /// `state.json` (the next write of it waits for them).
    pub fn finish_outputs(&mut self, task_dir: &Path) -> std::io::Result<()> {
        self.finish_except(Some(&task_dir.join("state.json")))
    }

    fn finish_except(&mut self, keep: Option<&Path>) -> std::io::Result<()> {
        let mut result = Ok(());
        let (kept, done): (Vec<_>, Vec<_>) = std::mem::take(&mut self.pending)
            .into_iter()
            .partition(|(p, _)| Some(p.as_path()) == keep);
        self.pending = kept;
        for (_, h) in done {
            let r = joined(h);
            if result.is_ok() {
                result = r;
            }
        }
        result
    }
}

fn joined(h: std::thread::JoinHandle<std::io::Result<()>>) -> std::io::Result<()> {
    h.join()
        .unwrap_or_else(|_| Err(std::io::Error::other("a rendered file's writer panicked")))
}

impl Drop for Background {
    fn drop(&mut self) {
        let _ = self.finish();
    }
}

/// The markdown of a passed phase's output file.
pub fn phase_markdown(state: &TaskState, index: usize) -> String {
    let p = &state.phases[index];
    let mut s = format!(
        "---\ntask: {}\nphase: {}\nstatus: {}\nattempt: {}\niteration: {}\nstarted_at: {}\ncompleted_at: {}\n---\n\n# {}\n\n## Summary\n\n{}\n",
        state.task_id,
        p.id,
        p.status.as_str(),
        p.attempt,
        p.iteration,
        p.started_at.map(|t| t.rfc3339()).unwrap_or_default(),
        p.completed_at.map(|t| t.rfc3339()).unwrap_or_default(),
        p.id,
        p.summary.as_deref().unwrap_or("").trim(),
    );
    if !p.files_changed.is_empty() {
        s.push_str("\n## Files changed\n\n");
        for f in &p.files_changed {
            s.push_str(&format!("- {f}\n"));
        }
    }
    let out = p.output.as_deref().unwrap_or("").trim_end();
    if !out.is_empty() {
        s.push_str("\n## Output\n\n```text\n");
        s.push_str(&out.replace("```", "ʼʼʼ"));
        s.push_str("\n```\n");
    }
    s
}

/// Writes the output file of every passed phase whose file is missing or
/// stale (after a crash between the PASS commit and the rendering, this is
/// what brings the file back). Returns how many files it wrote.
pub fn phase_outputs(task_dir: &Path, state: &TaskState) -> std::io::Result<usize> {
    let mut n = 0;
    for (i, p) in state.phases.iter().enumerate() {
        if p.status != PhaseStatus::Pass {
            continue;
        }
        let path = task_dir.join(document::output_file_name(i, p.id.as_str()));
        let md = phase_markdown(state, i);
        if std::fs::read_to_string(&path).ok().as_deref() != Some(md.as_str()) {
            atomic_write(&path, md.as_bytes())?;
            n += 1;
        }
    }
    Ok(n)
}

/// Parses the summary and output back out of a phase output file (for
/// `doctor --fix` when the store is lost).
pub fn parse_phase_markdown(md: &str) -> (String, String) {
    let section = |name: &str| -> String {
        let head = format!("\n## {name}\n\n");
        let Some(start) = md.find(&head) else {
            return String::new();
        };
        let rest = &md[start + head.len()..];
        let end = rest.find("\n## ").unwrap_or(rest.len());
        rest[..end].trim().to_string()
    };
    let summary = section("Summary");
    let output = section("Output");
    let output = output
        .strip_prefix("```text\n")
        .and_then(|o| o.strip_suffix("```"))
        .map(|o| o.trim_end().to_string())
        .unwrap_or(output);
    (summary, output)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn background_writes_of_a_file_land_in_order_and_errors_are_reported() {
        let dir = tempfile::tempdir().unwrap();
        let mut b = Background::default();
        let (f, g) = (dir.path().join("f.json"), dir.path().join("g.md"));
        for i in 0..40 {
            b.write(f.clone(), format!("{i}").into_bytes()).unwrap();
            b.write(g.clone(), format!("g{i}").into_bytes()).unwrap();
        }
        b.finish().unwrap();
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "39");
        assert_eq!(std::fs::read_to_string(&g).unwrap(), "g39");
        // No temporary file is left behind.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
        // A file that cannot be written: the error comes out of finish.
        b.write(f.join("below-a-file"), b"x".to_vec()).unwrap();
        assert!(b.finish().is_err());
        assert!(b.finish().is_ok(), "reported once");
    }

    /// A write cut short (a full disk) leaves the file as it was and no
    /// temporary file beside it (issue 34: empty `.state.json.tmp-*`
    /// files were left); doctor knows such a file for what it is.
    #[test]
    fn a_failed_write_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("state.json");
        std::fs::write(&f, "before").unwrap();
        let full = replace_with(&f, true, |w| {
            w.write_all(b"half")?;
            Err(std::io::Error::from_raw_os_error(28))
        });
        assert_eq!(full.unwrap_err().raw_os_error(), Some(28));
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "before");
        let names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["state.json"]);
        assert!(is_temporary(".state.json.tmp-1234"));
        assert!(is_temporary(".state.json.tmp-1234-5678"));
        assert!(!is_temporary("state.json") && !is_temporary(".state.json.tmp-"));
        // A writer whose pid is another process's now is gone all the same.
        let me = std::process::id();
        let other = dir.path().join(format!(".x.tmp-{me}-1"));
        std::fs::write(&other, "").unwrap();
        assert_eq!(stale_temporaries(dir.path(), ""), [other]);
    }
}
