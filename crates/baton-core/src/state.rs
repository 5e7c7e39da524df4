//! The task projection: what a task looks like after folding its journal.

use crate::ids::{PhaseId, TaskId};
use crate::time::Timestamp;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Stored task status. `CRASHED` is never stored: it is a `Running` task whose
/// lease owner is gone (see [`crate::lease`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum TaskStatus {
    Running,
    Waiting,
    Failed,
    Complete,
    Cancelled,
}

impl TaskStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Running => "RUNNING",
            TaskStatus::Waiting => "WAITING",
            TaskStatus::Failed => "FAILED",
            TaskStatus::Complete => "COMPLETE",
            TaskStatus::Cancelled => "CANCELLED",
        }
    }
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "RUNNING" => TaskStatus::Running,
            "WAITING" => TaskStatus::Waiting,
            "FAILED" => TaskStatus::Failed,
            "COMPLETE" => TaskStatus::Complete,
            "CANCELLED" => TaskStatus::Cancelled,
            _ => return None,
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum PhaseStatus {
    Pending,
    InProgress,
    Waiting,
    Pass,
    Failed,
    Skipped,
}

impl PhaseStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            PhaseStatus::Pending => "PENDING",
            PhaseStatus::InProgress => "IN_PROGRESS",
            PhaseStatus::Waiting => "WAITING",
            PhaseStatus::Pass => "PASS",
            PhaseStatus::Failed => "FAILED",
            PhaseStatus::Skipped => "SKIPPED",
        }
    }
    /// PASS or SKIPPED: phases that need this one may start.
    pub fn is_done(self) -> bool {
        matches!(self, PhaseStatus::Pass | PhaseStatus::Skipped)
    }
}

/// Where the worktree stood when a phase started.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Checkpoint {
    pub branch: Option<String>,
    pub head: Option<String>,
    /// A commit holding the whole worktree (tracked and untracked files),
    /// kept alive by the hidden ref `snapshot_ref`.
    pub snapshot: Option<String>,
    pub snapshot_ref: Option<String>,
}

/// The process a phase attempt started, so an orphan can be found and killed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessRef {
    pub pid: u32,
    /// Process start time (clock ticks since boot), to tell a reused pid apart.
    pub start_time: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PhaseState {
    pub id: PhaseId,
    pub status: PhaseStatus,
    /// Attempts started in the current iteration (1-based once started).
    pub attempt: u32,
    /// Failed attempts in the current iteration; counts against `max_attempts`.
    pub failures: u32,
    /// Bumped every time a loop or a rewind resets the phase.
    pub iteration: u32,
    pub started_at: Option<Timestamp>,
    pub completed_at: Option<Timestamp>,
    pub summary: Option<String>,
    pub output: Option<String>,
    pub files_changed: Vec<String>,
    pub checkpoint: Option<Checkpoint>,
    pub process: Option<ProcessRef>,
    pub last_error: Option<String>,
    pub waiting: Option<WaitState>,
    /// The native CLI session of the latest agent attempt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_session: Option<AgentSession>,
}

/// An agent CLI's own session, as baton records it to resume it natively.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentSession {
    /// The `[agents.NAME]` that ran it.
    pub agent: String,
    /// The built-in CLI (claude, codex, gemini, qwen, opencode).
    pub cli: String,
    pub native_id: String,
    /// The folder it ran in: several CLIs resume only from there.
    pub cwd: String,
}

impl PhaseState {
    pub fn new(id: PhaseId) -> Self {
        PhaseState {
            id,
            status: PhaseStatus::Pending,
            attempt: 0,
            failures: 0,
            iteration: 0,
            started_at: None,
            completed_at: None,
            summary: None,
            output: None,
            files_changed: Vec::new(),
            checkpoint: None,
            process: None,
            last_error: None,
            waiting: None,
            agent_session: None,
        }
    }

    /// Back to PENDING for a new iteration (loop or rewind).
    pub fn reset(&mut self) {
        let iteration = self.iteration + 1;
        let checkpoint = self.checkpoint.take();
        *self = PhaseState::new(self.id.clone());
        self.iteration = iteration;
        self.checkpoint = checkpoint;
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WaitState {
    pub description: String,
    pub due_at: Option<Timestamp>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskState {
    pub task_id: TaskId,
    pub workflow: String,
    pub definition_hash: String,
    pub description: String,
    pub project_name: String,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    pub status: TaskStatus,
    pub flags: BTreeMap<String, serde_json::Value>,
    pub labels: BTreeMap<String, String>,
    pub tech_stack: serde_json::Value,
    /// In definition order.
    pub phases: Vec<PhaseState>,
    pub iteration_counts: BTreeMap<String, u32>,
    pub blockers: Vec<String>,
    pub resume_note: Option<String>,
    pub failure: Option<String>,
    pub last_seq: u64,
}

impl TaskState {
    pub fn phase(&self, id: &str) -> Option<&PhaseState> {
        self.phases.iter().find(|p| p.id.as_str() == id)
    }
    pub fn phase_mut(&mut self, id: &str) -> Option<&mut PhaseState> {
        self.phases.iter_mut().find(|p| p.id.as_str() == id)
    }
    pub fn in_progress(&self) -> Option<&PhaseState> {
        self.phases
            .iter()
            .find(|p| p.status == PhaseStatus::InProgress)
    }
    pub fn waiting_phase(&self) -> Option<&PhaseState> {
        self.phases
            .iter()
            .find(|p| p.status == PhaseStatus::Waiting)
    }
    /// The most recent checkpoint recorded by any phase start.
    pub fn last_checkpoint(&self) -> Option<&Checkpoint> {
        self.phases
            .iter()
            .filter(|p| p.checkpoint.is_some())
            .max_by_key(|p| p.started_at)
            .and_then(|p| p.checkpoint.as_ref())
    }
    /// The union of files changed by completed phases, sorted.
    pub fn files_changed_total(&self) -> Vec<String> {
        let mut all: Vec<String> = self
            .phases
            .iter()
            .flat_map(|p| p.files_changed.iter().cloned())
            .collect();
        all.sort();
        all.dedup();
        all
    }
}
