//! `--log-format json`: what baton says on stderr as one JSON object per
//! line, through tracing-subscriber's JSON layer, for a log pipeline
//! (a pod's logs, Loki, Elasticsearch). Every event names the `worker`
//! (host and pid) and, where it has them, the `task`, `phase` and
//! `attempt`; `event` says what it is (`task_started`, `phase_started`,
//! `phase_finished`, `phase_progress`, `message`, `error`). JSON escapes
//! every control character, so untrusted text never drives a terminal.

use baton_core::TaskId;
use baton_core::state::PhaseStatus;
use std::collections::HashMap;
use std::sync::Mutex;

/// How the log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// For people: plain lines, colour on a terminal.
    Text,
    /// One JSON object per line.
    Json,
}

/// Installs the JSON layer: baton's own events at `info` and above, the
/// rest as `BATON_LOG` says (default `warn`).
pub fn init(filter: &str) {
    let filter = format!("{filter},baton=info");
    let _ = tracing_subscriber::fmt()
        .json()
        .flatten_event(true)
        .with_current_span(false)
        .with_span_list(false)
        .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
        .with_writer(std::io::stderr)
        .try_init();
}

/// The printer's side of it: the attempt of each running phase (for the
/// events that do not carry it) and this worker's name.
pub struct JsonLog {
    worker: String,
    attempts: Mutex<HashMap<(TaskId, String), u32>>,
}

impl Default for JsonLog {
    fn default() -> Self {
        JsonLog {
            worker: format!(
                "{}:{}",
                baton_sys::host::local_host().host,
                std::process::id()
            ),
            attempts: Mutex::default(),
        }
    }
}

impl JsonLog {
    pub fn message(&self, text: &str) {
        tracing::info!(target: "baton", event = "message", worker = %self.worker, "{text}");
    }

    pub fn error(&self, message: &str, hints: &[String]) {
        tracing::error!(target: "baton", event = "error", worker = %self.worker, hints = ?hints, "{message}");
    }

    pub fn task_started(&self, task: &TaskId, workflow: &str) {
        tracing::info!(target: "baton", event = "task_started", worker = %self.worker, task = %task, workflow, "task {task} (workflow {workflow})");
    }

    pub fn phase_started(&self, task: &TaskId, phase: &str, attempt: u32, kind: &str) {
        self.attempts
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert((task.clone(), phase.to_string()), attempt);
        tracing::info!(target: "baton", event = "phase_started", worker = %self.worker, task = %task, phase, attempt, kind, "start {phase}");
    }

    pub fn phase_progress(&self, task: &TaskId, phase: &str, elapsed_ms: i64, last_line: &str) {
        let attempt = self.attempt(task, phase, false);
        tracing::debug!(target: "baton", event = "phase_progress", worker = %self.worker, task = %task, phase, attempt, elapsed_ms, "{last_line}");
    }

    pub fn phase_finished(
        &self,
        task: &TaskId,
        phase: &str,
        status: PhaseStatus,
        elapsed_ms: i64,
        detail: &str,
    ) {
        let attempt = self.attempt(task, phase, true);
        let status = status.as_str();
        tracing::info!(target: "baton", event = "phase_finished", worker = %self.worker, task = %task, phase, attempt, status, elapsed_ms, "{status} {phase}: {detail}");
    }

    /// The attempt `phase_started` gave (0: it was not started here).
    fn attempt(&self, task: &TaskId, phase: &str, end: bool) -> u32 {
        let mut all = self.attempts.lock().unwrap_or_else(|p| p.into_inner());
        let key = (task.clone(), phase.to_string());
        if end {
            all.remove(&key).unwrap_or(0)
        } else {
            all.get(&key).copied().unwrap_or(0)
        }
    }
}
