//! One place that decides where text goes: data on stdout, everything else
//! on stderr; colour only on a terminal without NO_COLOR, decided for stdout
//! and stderr separately (`baton show | cat` gets none even when stderr is
//! a terminal); progress lines with a spinner on a terminal, plain lines
//! otherwise.

use baton_core::state::PhaseStatus;
use baton_core::{TaskId, time::human_millis};
use baton_engine::{Error, Observer};
use indicatif::{ProgressBar, ProgressStyle};
use std::io::{IsTerminal, Write};
use std::sync::Mutex;
use std::time::Duration;

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
        }
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

    /// Data for scripts: stdout.
    pub fn data(&self, s: &str) {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{s}");
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
        self.line(&format!("{} {s}", self.paint("1;36", "hint:")));
    }

    fn line(&self, s: &str) {
        let bar = self.bar.lock().unwrap_or_else(|p| p.into_inner());
        match bar.as_ref() {
            Some(b) => b.println(s),
            None => err_line!("{s}"),
        }
    }

    pub fn error(&self, e: &Error) {
        err_line!("{} {}", self.paint("1;31", "error:"), e.message);
        for h in &e.hints {
            err_line!("{} {h}", self.paint("1;36", "hint:"));
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
        self.info(&format!("task {task} (workflow {workflow})"));
    }

    fn phase_started(&self, task: &TaskId, phase: &str, attempt: u32, kind: &str) {
        if self.quiet {
            return;
        }
        let label = if attempt > 1 {
            format!("{phase} ({kind}, attempt {attempt})")
        } else {
            format!("{phase} ({kind})")
        };
        let prefix = self.task_prefix(task);
        if self.tty && prefix.is_empty() {
            let b = ProgressBar::new_spinner();
            b.set_style(
                ProgressStyle::with_template("{spinner} {msg} {elapsed}").expect("template"),
            );
            b.set_message(label);
            b.enable_steady_tick(Duration::from_millis(100));
            *self.bar.lock().unwrap_or_else(|p| p.into_inner()) = Some(b);
        } else {
            err_line!("{prefix}start {label}");
        }
    }

    fn phase_finished(
        &self,
        task: &TaskId,
        phase: &str,
        status: PhaseStatus,
        elapsed_ms: i64,
        detail: &str,
    ) {
        if let Some(b) = self.bar.lock().unwrap_or_else(|p| p.into_inner()).take() {
            b.finish_and_clear();
        }
        if self.quiet {
            return;
        }
        let first = detail.lines().next().unwrap_or("").trim();
        let first: String = first.chars().take(100).collect();
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

    fn info(&self, message: &str) {
        Printer::info(self, message);
    }
}
