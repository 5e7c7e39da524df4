//! One place that decides where text goes: data on stdout, everything else
//! on stderr; colour only on a terminal without NO_COLOR; progress lines
//! with a spinner on a terminal, plain lines otherwise.

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

pub fn color_enabled() -> bool {
    std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()) && std::io::stderr().is_terminal()
}

pub struct Printer {
    pub quiet: bool,
    pub verbose: bool,
    color: bool,
    tty: bool,
    bar: Mutex<Option<ProgressBar>>,
}

impl Printer {
    pub fn new(quiet: bool, verbose: bool) -> Self {
        Printer {
            quiet,
            verbose,
            color: color_enabled(),
            tty: std::io::stderr().is_terminal(),
            bar: Mutex::new(None),
        }
    }

    fn paint(&self, code: &str, s: &str) -> String {
        if self.color {
            format!("\x1b[{code}m{s}\x1b[0m")
        } else {
            s.to_string()
        }
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

    pub fn status_word(&self, s: &str) -> String {
        let code = match s {
            "PASS" | "COMPLETE" => "32",
            "FAILED" | "CRASHED" => "31",
            "WAITING" | "SKIPPED" | "CANCELLED" => "33",
            "RUNNING" | "IN_PROGRESS" => "36",
            _ => "0",
        };
        self.paint(code, s)
    }
}

impl Observer for Printer {
    fn task_started(&self, task: &TaskId, workflow: &str) {
        self.info(&format!("task {task} (workflow {workflow})"));
    }

    fn phase_started(&self, _task: &TaskId, phase: &str, attempt: u32, kind: &str) {
        if self.quiet {
            return;
        }
        let label = if attempt > 1 {
            format!("{phase} ({kind}, attempt {attempt})")
        } else {
            format!("{phase} ({kind})")
        };
        if self.tty {
            let b = ProgressBar::new_spinner();
            b.set_style(
                ProgressStyle::with_template("{spinner} {msg} {elapsed}").expect("template"),
            );
            b.set_message(label);
            b.enable_steady_tick(Duration::from_millis(100));
            *self.bar.lock().unwrap_or_else(|p| p.into_inner()) = Some(b);
        } else {
            err_line!("start {label}");
        }
    }

    fn phase_finished(
        &self,
        _task: &TaskId,
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
        let mut line = format!(
            "{:<7} {phase} {}",
            self.status_word(word),
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
