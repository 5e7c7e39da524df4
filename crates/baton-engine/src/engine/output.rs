//! A phase's output as it is written: the last line a running phase
//! printed (what `run` shows beside its spinner, [`LastLine`]) and the
//! lines it printed after a cursor (what `log --follow` and the API's
//! `/output` stream, [`Engine::phase_output`]). Both read the attempt's
//! log files under `.baton/tasks/<id>/logs/` a bounded piece at a time,
//! so a phase that prints gigabytes costs a few kilobytes per look. The
//! text is the phase's own, untrusted: whoever shows it escapes it.
//!
//! Streamed are command phases and agents run through `command = [...]`;
//! a built-in agent CLI writes JSON to its stdout, and what it does is in
//! the journal already (`agent_activity`).

use super::Engine;
use crate::error::Result;
use baton_core::state::PhaseStatus;
use baton_core::workflow::PhaseKind;
use baton_store::TaskSnapshot;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// At most this much of the end of a log file is read to find its last
/// line.
const TAIL_BYTES: u64 = 4096;
/// At most this much of one stream is read per [`Engine::phase_output`].
const CHUNK_BYTES: u64 = 64 * 1024;
/// Of an attempt that ended, at most this much of each stream is read at
/// one look: what comes before is skipped, said in one line (the whole
/// output stays in its log file).
const ENDED_BYTES: u64 = 1 << 20;
/// A follower that starts while a phase runs first gets about this much of
/// what it printed so far (like `tail -f`), not all of it.
const RECENT_BYTES: u64 = 8 * 1024;
/// One line is cut after this many characters.
const LINE_CHARS: usize = 2000;

/// The last non-empty line of a running phase's stdout and stderr,
/// whichever was written last. A carriage return starts the line anew,
/// as on a terminal (`50%\r60%` shows `60%`).
pub struct LastLine {
    files: Vec<(PathBuf, u64)>,
    line: String,
}

impl LastLine {
    pub fn new(stdout: &Path, stderr: &Path) -> LastLine {
        LastLine {
            files: vec![(stdout.to_path_buf(), 0), (stderr.to_path_buf(), 0)],
            line: String::new(),
        }
    }

    /// The line shown now.
    pub fn line(&self) -> &str {
        &self.line
    }

    /// Looks at the files again: `true` when the last line changed.
    pub fn poll(&mut self) -> bool {
        let mut newest: Option<(std::time::SystemTime, String)> = None;
        for (path, seen) in &mut self.files {
            let Ok(meta) = std::fs::metadata(&*path) else {
                continue;
            };
            let len = meta.len();
            if len < *seen {
                *seen = 0;
            }
            if len == *seen {
                continue;
            }
            let from = (*seen).max(len.saturating_sub(TAIL_BYTES));
            *seen = len;
            let Ok(bytes) = read_range(path, from, len - from) else {
                continue;
            };
            let Some(line) = last_line(&bytes) else {
                continue;
            };
            let at = meta.modified().unwrap_or(std::time::UNIX_EPOCH);
            if newest.as_ref().is_none_or(|(t, _)| at >= *t) {
                newest = Some((at, line));
            }
        }
        match newest {
            Some((_, line)) if line != self.line => {
                self.line = line;
                true
            }
            _ => false,
        }
    }
}

/// Where a reader of a task's output is: the attempt (`NN-phase.iI.aA`)
/// and how far into its stdout and stderr. Written `LABEL:OUT:ERR`; the
/// empty cursor is a reader that has read nothing yet.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Cursor {
    pub attempt: String,
    pub stdout: u64,
    pub stderr: u64,
}

impl Cursor {
    /// `LABEL:OUT:ERR`, as [`Cursor::to_string`] writes it.
    pub fn parse(s: &str) -> Option<Cursor> {
        if s.is_empty() {
            return Some(Cursor::default());
        }
        let mut parts = s.rsplitn(3, ':');
        let stderr = parts.next()?.parse().ok()?;
        let stdout = parts.next()?.parse().ok()?;
        let attempt = parts.next()?.to_string();
        phase_of(&attempt)?;
        Some(Cursor {
            attempt,
            stdout,
            stderr,
        })
    }
}

impl std::fmt::Display for Cursor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.attempt.is_empty() {
            return Ok(());
        }
        write!(f, "{}:{}:{}", self.attempt, self.stdout, self.stderr)
    }
}

/// One line a phase printed.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct OutputLine {
    pub phase: String,
    /// The attempt it belongs to (`NN-phase.iI.aA`).
    pub attempt: String,
    /// `stdout` or `stderr`.
    pub stream: &'static str,
    pub text: String,
}

/// What [`Engine::phase_output`] read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Output {
    /// Oldest first; a finished attempt's last lines before the running
    /// one's.
    pub lines: Vec<OutputLine>,
    /// Where to read on from.
    pub cursor: Cursor,
    /// The phase whose output is streamed now, if one runs.
    pub running: Option<String>,
}

impl Engine {
    /// The lines the task's phases printed after `after`: first the rest
    /// of the attempt `after` was in, when that one ended, then all of
    /// each attempt that `started` (the journal records the reader saw
    /// since its last look) says began and that ended before this look,
    /// then what the running phase printed (complete lines only, while it
    /// runs). A new reader (the empty cursor) starts near the end of what
    /// the running phase printed so far.
    pub fn phase_output(
        &self,
        snap: &TaskSnapshot,
        after: &Cursor,
        started: &[baton_core::EventRecord],
    ) -> Result<Output> {
        let logs = self.project.task_dir(&snap.state.task_id).join("logs");
        let wf = self.pinned(&snap.state.definition_hash)?;
        let running = self.streamed_attempt(snap, &wf);
        let running_label = running.as_ref().map(|(label, _)| label.clone());
        let mut out = Output::default();
        let mut cursor = after.clone();
        // A cursor names an attempt of this task's phases, or none.
        if phase_of(&cursor.attempt)
            .is_none_or(|p| !snap.state.phases.iter().any(|ps| ps.id.as_str() == p))
        {
            cursor = Cursor::default();
        }
        let mut done = vec![cursor.attempt.clone()];
        if !cursor.attempt.is_empty() && running_label.as_ref() != Some(&cursor.attempt) {
            // That attempt ended: all of the rest of it.
            read_on(&logs, &mut cursor, true, ENDED_BYTES, &mut out.lines);
        }
        // Attempts that began and ended between two looks.
        for r in started {
            let baton_core::Event::PhaseStarted {
                phase,
                attempt,
                iteration,
                ..
            } = &r.event
            else {
                continue;
            };
            let Some(idx) = snap.state.phases.iter().position(|p| &p.id == phase) else {
                continue;
            };
            let label = super::attempt_label(idx, phase.as_str(), *iteration, *attempt);
            if done.contains(&label)
                || running_label.as_ref() == Some(&label)
                || !self.streamed(&snap.state, &wf, phase.as_str())
            {
                continue;
            }
            let mut whole = Cursor {
                attempt: label.clone(),
                ..Cursor::default()
            };
            read_on(&logs, &mut whole, true, ENDED_BYTES, &mut out.lines);
            done.push(label);
        }
        if let Some((label, phase)) = running {
            if cursor.attempt != label {
                // From its start when the reader saw it begin.
                let fresh =
                    cursor.attempt.is_empty() && !done.contains(&label) && started.is_empty();
                cursor = Cursor {
                    attempt: label.clone(),
                    stdout: recent_start(&logs.join(format!("{label}.out")), fresh),
                    stderr: recent_start(&logs.join(format!("{label}.err")), fresh),
                };
            }
            read_on(&logs, &mut cursor, false, CHUNK_BYTES, &mut out.lines);
            out.running = Some(phase);
        }
        out.cursor = cursor;
        Ok(out)
    }

    /// The attempt whose output streams now: the phase in progress, when
    /// it is streamed ([`Engine::streamed`]).
    fn streamed_attempt(
        &self,
        snap: &TaskSnapshot,
        wf: &baton_core::workflow::Workflow,
    ) -> Option<(String, String)> {
        let state = &snap.state;
        let (idx, ps) = state
            .phases
            .iter()
            .enumerate()
            .find(|(_, p)| p.status == PhaseStatus::InProgress)?;
        if ps.attempt == 0 || !self.streamed(state, wf, ps.id.as_str()) {
            return None;
        }
        Some((
            super::attempt_label(idx, ps.id.as_str(), ps.iteration, ps.attempt),
            ps.id.to_string(),
        ))
    }

    /// Whether `phase`'s output is streamed: a command, or an agent run
    /// through `command = [...]`.
    pub(super) fn streamed(
        &self,
        state: &baton_core::TaskState,
        wf: &baton_core::workflow::Workflow,
        phase: &str,
    ) -> bool {
        let Some(def) = wf.phase(phase) else {
            return false;
        };
        match &def.kind {
            PhaseKind::Run { .. } => true,
            PhaseKind::Prompt { .. } => state
                .agent
                .clone()
                .or(def.agent.clone())
                .or(self.project.config.defaults.agent.clone())
                .and_then(|name| self.project.config.agents.get(&name))
                .is_some_and(|a| a.cli.is_none()),
            PhaseKind::Wait(_) => false,
        }
    }
}

/// Where a reader of `file` starts: its beginning for a reader that
/// followed the attempts before, else (`fresh`) about [`RECENT_BYTES`]
/// before its end, at a line's start.
fn recent_start(file: &Path, fresh: bool) -> u64 {
    if !fresh {
        return 0;
    }
    let len = std::fs::metadata(file).map(|m| m.len()).unwrap_or(0);
    if len <= RECENT_BYTES {
        return 0;
    }
    recent_start_at(file, len, RECENT_BYTES)
}

/// The start of the first line that begins in the last `recent` bytes of
/// `file` (of `len` bytes).
fn recent_start_at(file: &Path, len: u64, recent: u64) -> u64 {
    let from = len.saturating_sub(recent);
    match read_range(file, from, recent.min(len)) {
        Ok(bytes) => match bytes.iter().position(|b| *b == b'\n') {
            Some(i) => from + i as u64 + 1,
            None => len,
        },
        Err(_) => len,
    }
}

/// Reads `cursor`'s attempt on from its offsets, at most `limit` bytes of
/// each stream: complete lines, and the unfinished last one too when the
/// attempt `ended` (whose rest, when longer than `limit`, is read from a
/// line start `limit` bytes before its end, the bytes skipped said in a
/// line of their own).
fn read_on(logs: &Path, cursor: &mut Cursor, ended: bool, limit: u64, lines: &mut Vec<OutputLine>) {
    let Some(phase) = phase_of(&cursor.attempt).map(str::to_string) else {
        return;
    };
    for (stream, ext) in [("stdout", "out"), ("stderr", "err")] {
        let file = logs.join(format!("{}.{ext}", cursor.attempt));
        let offset = match stream {
            "stdout" => &mut cursor.stdout,
            _ => &mut cursor.stderr,
        };
        let len = std::fs::metadata(&file).map(|m| m.len()).unwrap_or(0);
        if len <= *offset {
            continue;
        }
        if ended && len - *offset > limit {
            let from = recent_start_at(&file, len, limit);
            lines.push(OutputLine {
                phase: phase.clone(),
                attempt: cursor.attempt.clone(),
                stream,
                text: format!(
                    "… {} bytes skipped; the whole {stream} is in {}",
                    from - *offset,
                    file.display()
                ),
            });
            *offset = from;
        }
        let want = (len - *offset).min(limit);
        let Ok(bytes) = read_range(&file, *offset, want) else {
            continue;
        };
        // Complete lines only, unless the attempt ended and this is all.
        let whole = ended && want == len - *offset;
        let used = if whole {
            bytes.len()
        } else {
            match bytes.iter().rposition(|b| *b == b'\n') {
                Some(i) => i + 1,
                // One line longer than the chunk: taken as it is.
                None if bytes.len() as u64 == limit => bytes.len(),
                None => 0,
            }
        };
        for raw in bytes[..used].split(|b| *b == b'\n') {
            if raw.is_empty() {
                continue;
            }
            let text = shown(raw);
            if text.trim().is_empty() {
                continue;
            }
            lines.push(OutputLine {
                phase: phase.clone(),
                attempt: cursor.attempt.clone(),
                stream,
                text,
            });
        }
        *offset += used as u64;
    }
}

/// The phase of an attempt label `NN-phase.iI.aA`.
fn phase_of(label: &str) -> Option<&str> {
    let safe = label
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && !label.contains("..");
    let (number, rest) = label.split_once('-').filter(|_| safe)?;
    number.parse::<u32>().ok()?;
    let (rest, attempt) = rest.rsplit_once(".a")?;
    let (phase, iteration) = rest.rsplit_once(".i")?;
    (!phase.is_empty() && attempt.parse::<u32>().is_ok() && iteration.parse::<u32>().is_ok())
        .then_some(phase)
}

fn read_range(path: &Path, from: u64, len: u64) -> std::io::Result<Vec<u8>> {
    // The phase's own files: a FIFO or a device put in their place is
    // never waited on or read.
    let Some(mut f) = baton_sys::process::open_regular(path)? else {
        return Ok(Vec::new());
    };
    f.seek(SeekFrom::Start(from))?;
    let mut bytes = Vec::new();
    f.take(len).read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// The last line of `bytes` with something in it, as a terminal shows it.
fn last_line(bytes: &[u8]) -> Option<String> {
    bytes
        .split(|b| *b == b'\n')
        .map(shown)
        .rfind(|l| !l.trim().is_empty())
}

/// One line's bytes as a terminal would leave it: what follows its last
/// carriage return (a progress counter rewrites itself that way), without
/// trailing blanks, at most [`LINE_CHARS`] characters.
fn shown(raw: &[u8]) -> String {
    let text = String::from_utf8_lossy(raw);
    let text = text
        .trim_end_matches(['\r', ' ', '\t'])
        .rsplit('\r')
        .next()
        .unwrap_or("");
    match text.char_indices().nth(LINE_CHARS) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_line_is_what_a_terminal_shows_last() {
        let dir = tempfile::tempdir().unwrap();
        let (out, err) = (dir.path().join("a.out"), dir.path().join("a.err"));
        let mut last = LastLine::new(&out, &err);
        assert!(!last.poll(), "nothing written yet");
        std::fs::write(&out, "Compiling a\nCompiling b\n\n").unwrap();
        assert!(last.poll());
        assert_eq!(last.line(), "Compiling b");
        assert!(!last.poll(), "unchanged");
        std::fs::write(&out, "Compiling a\nCompiling b\n\ntests 10%\rtests 60%\r").unwrap();
        assert!(last.poll());
        assert_eq!(last.line(), "tests 60%");
        // A gigabyte-long line costs a tail read.
        let long = "x".repeat(100_000);
        std::fs::write(&err, format!("{long}\n")).unwrap();
        assert!(last.poll());
        assert_eq!(last.line().chars().count(), LINE_CHARS + 1);
    }

    #[test]
    fn cursors_are_written_and_read_back() {
        let c = Cursor {
            attempt: "03-build.i0.a2".into(),
            stdout: 120,
            stderr: 7,
        };
        assert_eq!(c.to_string(), "03-build.i0.a2:120:7");
        assert_eq!(Cursor::parse(&c.to_string()), Some(c));
        assert_eq!(Cursor::parse(""), Some(Cursor::default()));
        assert_eq!(Cursor::parse("nonsense"), None);
        assert_eq!(Cursor::parse("../etc:1:2"), None);
        assert_eq!(Cursor::parse("../x-a.i0.a1:1:2"), None);
        assert_eq!(Cursor::parse("01-a/b.i0.a1:1:2"), None);
        assert_eq!(phase_of("01-my-phase.i1.a3"), Some("my-phase"));
    }

    #[test]
    fn lines_are_read_on_whole_until_the_attempt_ends() {
        let dir = tempfile::tempdir().unwrap();
        let logs = dir.path();
        std::fs::write(logs.join("01-b.i0.a1.out"), "one\ntw").unwrap();
        let mut c = Cursor {
            attempt: "01-b.i0.a1".into(),
            ..Cursor::default()
        };
        let mut lines = Vec::new();
        read_on(logs, &mut c, false, CHUNK_BYTES, &mut lines);
        let texts: Vec<&str> = lines.iter().map(|l| l.text.as_str()).collect();
        assert_eq!(texts, ["one"]);
        assert_eq!(c.stdout, 4);
        lines.clear();
        read_on(logs, &mut c, true, u64::MAX, &mut lines);
        assert_eq!(lines[0].text, "tw");
        assert_eq!(lines[0].phase, "b");
    }
}
