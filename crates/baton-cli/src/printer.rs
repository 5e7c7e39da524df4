//! One place that decides where text goes: data on stdout, everything else
//! on stderr; colour only on a terminal without NO_COLOR, decided for stdout
//! and stderr separately (`baton show | cat` gets none even when stderr is
//! a terminal); progress lines with a spinner on a terminal, plain lines
//! otherwise.
//!
//! Text from outside baton (agents, webhook payloads, task descriptions)
//! is escaped where it is put into a line ([`cell`], [`text`]), and every
//! human-readable line is escaped again on its way out, keeping only the
//! colour baton paints: no control sequence sent to baton reaches the
//! terminal. `--json` output ([`Printer::json`]) is written as it is (JSON
//! escapes control characters itself).
//!
//! Every write to stdout goes through here: a closed pipe (`baton log |
//! head`) ends the output quietly and the command goes on to its normal
//! end; any other write error (a full disk) is kept, and [`Printer::finish`]
//! turns it into an error once the command is done.

use baton_core::state::PhaseStatus;
use baton_core::text;
use baton_core::{TaskId, time::human_millis};
use baton_engine::{Error, Observer};
use indicatif::{ProgressBar, ProgressStyle};
use std::borrow::Cow;
use std::collections::HashMap;
use std::io::{IsTerminal, Write};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How often a running phase's last line is printed when stderr is not a
/// terminal, unless `BATON_PROGRESS_INTERVAL` says otherwise.
const PROGRESS_INTERVAL: Duration = Duration::from_secs(30);

/// At most this many characters of one untrusted text are printed in a
/// human-readable view; `--json` has the whole of it.
pub const PREVIEW_CHARS: usize = 2000;

/// Untrusted text put into one line or one table cell: clipped to
/// [`PREVIEW_CHARS`], every control character (newline and tab too) and
/// bidi control shown as an escape (`\x1b`, `\n`, `\u{202e}`).
pub fn cell(s: &str) -> String {
    text::escape_line(&clipped(s)).into_owned()
}

/// Untrusted text shown on lines of its own: as [`cell`], but newlines and
/// tabs are kept.
pub fn text(s: &str) -> String {
    text::escape(&clipped(s)).into_owned()
}

/// `s`, or its first [`PREVIEW_CHARS`] characters and a note of how much
/// more there is (nothing escaped).
pub fn clipped(s: &str) -> Cow<'_, str> {
    match text::clip(s, PREVIEW_CHARS) {
        (_, 0) => Cow::Borrowed(s),
        (head, more) => Cow::Owned(format!("{head}… ({more} more bytes; `--json` has all)")),
    }
}

/// What became of stdout.
#[derive(Default)]
enum Stdout {
    #[default]
    Open,
    /// The reader went away (EPIPE): nothing more is written, quietly.
    Closed,
    /// A write failed otherwise (ENOSPC, EIO): nothing more is written, and
    /// the command ends with this error.
    Failed(std::io::Error),
}

/// `eprintln!` that ignores a closed stderr (a pipe to `head`, a dropped
/// terminal): losing a message must never abort a run.
macro_rules! err_line {
    ($($arg:tt)*) => {{
        let _ = writeln!(std::io::stderr().lock(), $($arg)*);
    }};
}

fn no_color() -> bool {
    std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty())
}

/// Colour for messages on stderr: NO_COLOR unset and stderr a terminal.
pub fn color_enabled() -> bool {
    !no_color() && std::io::stderr().is_terminal()
}

/// Colour for data on stdout: NO_COLOR unset and stdout a terminal.
pub fn stdout_color_enabled() -> bool {
    !no_color() && std::io::stdout().is_terminal()
}

pub struct Printer {
    pub quiet: bool,
    pub verbose: bool,
    /// Colour on stderr (messages, progress, errors).
    color: bool,
    /// Colour on stdout (data: `show`, `doctor`).
    color_out: bool,
    tty: bool,
    bar: Mutex<Option<ProgressBar>>,
    /// Several tasks at once (`baton worker`): every progress line names
    /// its task, and there is no spinner.
    many_tasks: std::sync::atomic::AtomicBool,
    stdout: Mutex<Stdout>,
    /// Without a spinner: how often a running phase's line is printed
    /// (`None`: never).
    progress_every: Option<Duration>,
    /// Without a spinner: when each running task's line was last printed
    /// (or its phase started).
    progress_told: Mutex<HashMap<TaskId, Instant>>,
    /// `--log-format json`: everything for stderr as JSON lines instead.
    json: Option<crate::json_log::JsonLog>,
}

/// `BATON_PROGRESS_INTERVAL`: a duration (`30s`, `2m`); `0` prints none.
fn progress_every() -> Option<Duration> {
    match std::env::var("BATON_PROGRESS_INTERVAL") {
        Ok(v) if !v.trim().is_empty() => match baton_core::workflow::parse_duration(v.trim()) {
            Ok(0) => None,
            Ok(ms) => Some(Duration::from_millis(ms)),
            Err(_) => Some(PROGRESS_INTERVAL),
        },
        _ => Some(PROGRESS_INTERVAL),
    }
}

impl Printer {
    pub fn new(quiet: bool, verbose: bool) -> Self {
        Printer {
            quiet,
            verbose,
            color: color_enabled(),
            color_out: stdout_color_enabled(),
            tty: std::io::stderr().is_terminal(),
            bar: Mutex::new(None),
            many_tasks: std::sync::atomic::AtomicBool::new(false),
            stdout: Mutex::new(Stdout::Open),
            progress_every: progress_every(),
            progress_told: Mutex::new(HashMap::new()),
            json: None,
        }
    }

    /// Writes what goes to stderr as JSON lines (`--log-format json`).
    pub fn with_json(mut self) -> Self {
        self.json = Some(crate::json_log::JsonLog::default());
        self.tty = false;
        self
    }

    /// Progress of several tasks at once: lines name their task.
    pub fn many_tasks(&self) {
        self.many_tasks
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }

    fn task_prefix(&self, task: &TaskId) -> String {
        if self.many_tasks.load(std::sync::atomic::Ordering::Relaxed) {
            format!("[{task}] ")
        } else {
            String::new()
        }
    }

    fn paint_if(on: bool, code: &str, s: &str) -> String {
        if on {
            format!("\x1b[{code}m{s}\x1b[0m")
        } else {
            s.to_string()
        }
    }

    /// Paints text that goes to stderr.
    fn paint(&self, code: &str, s: &str) -> String {
        Self::paint_if(self.color, code, s)
    }

    /// Human-readable data: stdout, one or more lines. Anything in it that
    /// could drive a terminal is escaped (baton's own colour is kept).
    pub fn data(&self, s: &str) {
        let shown = if self.color_out {
            text::escape_keeping_sgr(s)
        } else {
            text::escape(s)
        };
        self.write_out(&[shown.as_bytes(), b"\n"]);
    }

    /// JSON (a document or one JSON Lines record): stdout, as it is.
    pub fn json(&self, s: &str) {
        self.write_out(&[s.as_bytes(), b"\n"]);
    }

    /// Bytes rendered by a tool (completions, the man page): stdout, as
    /// they are.
    pub fn bytes(&self, b: &[u8]) {
        self.write_out(&[b]);
    }

    /// Whether stdout is gone (its reader closed the pipe, or a write
    /// failed): a command that only prints, like `log --follow`, may stop.
    pub fn stdout_gone(&self) -> bool {
        !matches!(*self.stdout_state(), Stdout::Open)
    }

    fn stdout_state(&self) -> std::sync::MutexGuard<'_, Stdout> {
        self.stdout.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn write_out(&self, parts: &[&[u8]]) {
        let mut state = self.stdout_state();
        if !matches!(*state, Stdout::Open) {
            return;
        }
        let mut out = std::io::stdout().lock();
        let written = parts
            .iter()
            .try_for_each(|p| out.write_all(p))
            .and_then(|()| out.flush());
        if let Err(e) = written {
            *state = Self::after(e);
        }
    }

    fn after(e: std::io::Error) -> Stdout {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            Stdout::Closed
        } else {
            Stdout::Failed(e)
        }
    }

    /// At the end of a command: flushes stdout, and returns the error if a
    /// write to it failed (a closed pipe is no error).
    pub fn finish(&self) -> Option<Error> {
        let mut state = self.stdout_state();
        if matches!(*state, Stdout::Open)
            && let Err(e) = std::io::stdout().lock().flush()
        {
            *state = Self::after(e);
        }
        match &*state {
            Stdout::Failed(e) => Some(
                Error::op(format!("cannot write to standard output: {e}")).hint(
                    "what the command printed is lost (its work is done); check the disk or file that stdout goes to (`df -h`), or send it elsewhere",
                ),
            ),
            _ => None,
        }
    }

    /// A message for people: stderr, unless --quiet.
    pub fn info(&self, s: &str) {
        if !self.quiet {
            self.line(s);
        }
    }

    /// A message for people that --quiet does not silence (a failure).
    pub fn always(&self, s: &str) {
        self.line(s);
    }

    /// A `hint:` line on stderr, even with --quiet.
    pub fn hint(&self, s: &str) {
        if self.json.is_some() {
            return self.line(&format!("hint: {s}"));
        }
        self.line(&format!("{} {s}", self.paint("1;36", "hint:")));
    }

    /// A line on stderr; anything in it that could drive a terminal is
    /// escaped (baton's own colour is kept).
    fn line(&self, s: &str) {
        if let Some(j) = &self.json {
            j.message(s);
            return;
        }
        let s = if self.color {
            text::escape_keeping_sgr(s)
        } else {
            text::escape(s)
        };
        let bar = self.bar.lock().unwrap_or_else(|p| p.into_inner());
        match bar.as_ref() {
            Some(b) => b.println(s),
            None => err_line!("{s}"),
        }
    }

    /// An error and its hints, which may quote untrusted text (a blocker,
    /// a payload's field): escaped, and whole (there is no `--json` of it).
    pub fn error(&self, e: &Error) {
        if let Some(j) = &self.json {
            j.error(&e.message, &e.hints);
            return;
        }
        let (message, error, hint) = (
            text::escape(&e.message),
            self.paint("1;31", "error:"),
            self.paint("1;36", "hint:"),
        );
        err_line!("{error} {message}");
        for h in &e.hints {
            err_line!("{hint} {}", text::escape(h));
        }
    }

    /// A status word in data printed to stdout (`show`, `doctor`).
    pub fn status_word(&self, s: &str) -> String {
        Self::paint_if(self.color_out, Self::status_color(s), s)
    }

    /// A status word in a message printed to stderr.
    pub fn status_word_err(&self, s: &str) -> String {
        Self::paint_if(self.color, Self::status_color(s), s)
    }

    fn status_color(s: &str) -> &'static str {
        match s {
            "PASS" | "COMPLETE" => "32",
            "FAILED" | "CRASHED" => "31",
            "WAITING" | "SKIPPED" | "CANCELLED" => "33",
            "RUNNING" | "IN_PROGRESS" => "36",
            _ => "0",
        }
    }
}

impl Observer for Printer {
    fn task_started(&self, task: &TaskId, workflow: &str) {
        if let Some(j) = &self.json {
            return j.task_started(task, workflow);
        }
        self.info(&format!("task {task} (workflow {workflow})"));
    }

    fn phase_started(&self, task: &TaskId, phase: &str, attempt: u32, kind: &str) {
        if let Some(j) = &self.json {
            return j.phase_started(task, phase, attempt, kind);
        }
        if self.quiet {
            return;
        }
        let label = if attempt > 1 {
            format!("{phase} ({kind}, attempt {attempt})")
        } else {
            format!("{phase} ({kind})")
        };
        let label = cell(&label);
        let prefix = self.task_prefix(task);
        if self.tty && prefix.is_empty() {
            // One line: the phase, its time, then the last line it printed,
            // cut at the terminal's width.
            let b = ProgressBar::new_spinner();
            b.set_style(
                ProgressStyle::with_template("{spinner} {prefix} {elapsed} {wide_msg}")
                    .expect("template"),
            );
            b.set_prefix(label);
            b.enable_steady_tick(Duration::from_millis(100));
            *self.bar.lock().unwrap_or_else(|p| p.into_inner()) = Some(b);
        } else {
            self.progress_told
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(task.clone(), Instant::now());
            err_line!("{prefix}start {label}");
        }
    }

    fn phase_progress(&self, task: &TaskId, phase: &str, elapsed_ms: i64, last_line: &str) {
        if let Some(j) = &self.json {
            return j.phase_progress(task, phase, elapsed_ms, last_line);
        }
        if self.quiet {
            return;
        }
        // The phase's own text: every control character shown escaped,
        // at most a screen line's worth.
        let line = match text::clip(last_line, 300) {
            (head, 0) => text::escape_line(head).into_owned(),
            (head, _) => format!("{}…", text::escape_line(head)),
        };
        if let Some(b) = self.bar.lock().unwrap_or_else(|p| p.into_inner()).as_ref() {
            b.set_message(line);
            return;
        }
        let Some(every) = self.progress_every else {
            return;
        };
        {
            let mut told = self.progress_told.lock().unwrap_or_else(|p| p.into_inner());
            let last = told.entry(task.clone()).or_insert_with(Instant::now);
            if last.elapsed() < every {
                return;
            }
            *last = Instant::now();
        }
        let said = if line.is_empty() {
            "(no output yet)".to_string()
        } else {
            format!("— {line}")
        };
        err_line!(
            "{}  {} running {} {said}",
            self.task_prefix(task),
            cell(phase),
            human_millis(elapsed_ms)
        );
    }

    fn phase_finished(
        &self,
        task: &TaskId,
        phase: &str,
        status: PhaseStatus,
        elapsed_ms: i64,
        detail: &str,
    ) {
        if let Some(j) = &self.json {
            return j.phase_finished(task, phase, status, elapsed_ms, detail);
        }
        if let Some(b) = self.bar.lock().unwrap_or_else(|p| p.into_inner()).take() {
            b.finish_and_clear();
        }
        self.progress_told
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(task);
        if self.quiet {
            return;
        }
        let first = detail.lines().next().unwrap_or("").trim();
        let first = cell(&first.chars().take(100).collect::<String>());
        let word = match status {
            PhaseStatus::Pending => "STOPPED",
            other => other.as_str(),
        };
        // Padded outside the colour codes, so the columns line up either way.
        let pad = " ".repeat(7usize.saturating_sub(word.len()));
        let mut line = format!(
            "{}{}{pad} {phase} {}",
            self.task_prefix(task),
            self.status_word_err(word),
            human_millis(elapsed_ms)
        );
        if !first.is_empty() {
            line.push_str(&format!(" — {first}"));
        }
        err_line!("{line}");
    }

    /// The engine's messages may quote untrusted text: escaped on the way
    /// out, like every line on stderr.
    fn info(&self, message: &str) {
        Printer::info(self, message);
    }
}
