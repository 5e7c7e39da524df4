//! A CLI's JSON stream read while it is written: complete lines only,
//! the last partial line once the CLI has ended; with what the subagents
//! it started in sessions of their own did ([`crate::subagents`]).

use crate::Cli;
use std::path::Path;

/// At most this much of the stream is read at one look.
pub const READ_BYTES: u64 = 1 << 20;
/// A line longer than this (no event of a CLI's is) is left out whole.
pub const MAX_LINE: usize = 16 << 20;

/// A CLI's JSON stream read while it is written: complete lines only,
/// the last partial line when the CLI has ended; in bounded memory (a
/// look reads at most [`READ_BYTES`], a line is held to [`MAX_LINE`]).
pub struct Tail {
    path: std::path::PathBuf,
    offset: u64,
    partial: Vec<u8>,
    /// Inside a line longer than [`MAX_LINE`], left out to its end.
    skipping: bool,
    parser: crate::StreamParser,
    subagents: crate::subagents::Subagents,
}

impl Tail {
    /// `env`: the run's environment (where the CLI keeps its sessions).
    pub fn new(cli: Cli, path: &Path, env: Vec<(String, String)>) -> Tail {
        Tail {
            path: path.to_path_buf(),
            offset: 0,
            partial: Vec::new(),
            skipping: false,
            parser: crate::StreamParser::new(cli),
            subagents: crate::subagents::Subagents::new(cli, env),
        }
    }

    /// The events of the lines written since the last call.
    pub fn poll(&mut self) -> Vec<crate::AgentEvent> {
        let out = self.lines(false);
        self.subagents.saw(&out);
        let subs = self.subagents.poll(false);
        before_the_wait(out, subs)
    }

    /// The events of the complete lines written since the last look, read
    /// at most [`READ_BYTES`] at a time (`all`: until the end of the file).
    fn lines(&mut self, all: bool) -> Vec<crate::AgentEvent> {
        use std::io::{Read, Seek, SeekFrom};
        // A regular file only: a FIFO or a device put in the stream's
        // place is never waited on or read.
        if !std::fs::metadata(&self.path).is_ok_and(|m| m.is_file()) {
            return Vec::new();
        }
        let Ok(mut f) = std::fs::File::open(&self.path) else {
            return Vec::new();
        };
        if f.seek(SeekFrom::Start(self.offset)).is_err() {
            return Vec::new();
        }
        let mut out = Vec::new();
        let mut buf = Vec::new();
        loop {
            buf.clear();
            let Ok(n) = (&mut f).take(READ_BYTES).read_to_end(&mut buf) else {
                return out;
            };
            self.offset += n as u64;
            let mut data = &buf[..];
            if self.skipping {
                // The rest of a line left out: dropped up to its end.
                match data.iter().position(|b| *b == b'\n') {
                    Some(nl) => {
                        data = &data[nl + 1..];
                        self.skipping = false;
                    }
                    None => data = &[],
                }
            }
            self.partial.extend_from_slice(data);
            let mut used = 0;
            while let Some(nl) = self.partial[used..].iter().position(|b| *b == b'\n') {
                let line = &self.partial[used..used + nl];
                out.extend(self.parser.line(&String::from_utf8_lossy(line)));
                used += nl + 1;
            }
            self.partial.drain(..used);
            if self.partial.len() > MAX_LINE {
                // No event is this long: the line is left out, said so,
                // never held whole.
                out.push(crate::AgentEvent::Warning {
                    message: format!(
                        "a line of the stream longer than {MAX_LINE} bytes was left out"
                    ),
                });
                self.partial.clear();
                self.skipping = true;
            }
            if !all || (n as u64) < READ_BYTES {
                return out;
            }
        }
    }

    /// The rest, the CLI having ended: a last line without its newline too.
    pub fn finish(&mut self) -> Vec<crate::AgentEvent> {
        let mut out = self.lines(true);
        if !self.partial.is_empty() {
            let line = std::mem::take(&mut self.partial);
            out.extend(self.parser.line(&String::from_utf8_lossy(&line)));
        }
        self.subagents.saw(&out);
        let subs = self.subagents.poll(true);
        before_the_wait(out, subs)
    }
}

/// `out` with `subs` (agents started, what they did) put before the model's
/// first wait for its agents in it, which came after they started; else at
/// the end.
fn before_the_wait(
    mut out: Vec<crate::AgentEvent>,
    subs: Vec<crate::AgentEvent>,
) -> Vec<crate::AgentEvent> {
    let at = out
        .iter()
        .position(|e| matches!(e, crate::AgentEvent::ToolCall { name, .. } if name == "wait_agent"))
        .unwrap_or(out.len());
    out.splice(at..at, subs);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_is_read_line_by_line_as_it_grows() {
        use crate::AgentEvent;
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("out");
        let mut t = Tail::new(&crate::clis::Codex, &f, Vec::new());
        assert!(t.poll().is_empty(), "no file yet");
        std::fs::write(
            &f,
            "{\"type\":\"thread.started\",\"thread_id\":\"th-1\"}\n{\"type\":\"tu",
        )
        .unwrap();
        assert_eq!(
            t.poll(),
            vec![AgentEvent::SessionStarted {
                native_id: "th-1".into()
            }]
        );
        assert!(t.poll().is_empty(), "the partial line waits");
        let mut all = std::fs::read(&f).unwrap();
        all.extend_from_slice(b"rn.started\"}");
        std::fs::write(&f, all).unwrap();
        // The CLI ended without a last newline: that line still counts.
        let rest = t.finish();
        assert!(
            rest.iter()
                .all(|e| !matches!(e, AgentEvent::Warning { .. })),
            "{rest:?}"
        );
    }
}
