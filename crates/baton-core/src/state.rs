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

/// How an attempt's process ended, journaled the moment it is known so a
/// runner that dies before accounting for it (an OOM kill while reading
/// its output) leaves an exit to judge, never a phase to run again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Exit {
    /// Its exit code, when it exited.
    pub code: Option<i32>,
    /// The signal that killed it, when one did.
    pub signal: Option<i32>,
}

impl Exit {
    /// The raw wait status this stands for (`WIFEXITED` or `WIFSIGNALED`).
    pub fn wait_status(&self) -> i32 {
        match (self.code, self.signal) {
            (Some(c), _) => (c & 0xff) << 8,
            (None, Some(s)) => s & 0x7f,
            (None, None) => 0xff << 8,
        }
    }
}

/// The process a phase attempt started, so an orphan can be found and killed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessRef {
    pub pid: u32,
    /// Process start time (clock ticks since boot), to tell a reused pid apart.
    pub start_time: u64,
    /// The PID namespace of `pid` (see `lease::LeaseOwner::pid_ns`); empty
    /// in records from before baton kept it.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub pid_ns: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
    /// The attempt's process has exited, and how: its end is still to be
    /// judged and journaled (PASS or FAILED).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exited: Option<Exit>,
    pub last_error: Option<String>,
    pub waiting: Option<WaitState>,
    /// The native CLI session of the latest agent attempt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_session: Option<AgentSession>,
    /// The latest attempt was cut short by a crash or a signal (not a
    /// failure): its agent session may be continued natively.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
    /// Every agent CLI run of this phase, oldest first, across attempts
    /// and iterations (loops and rewinds keep them: they are history).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub agent_runs: Vec<AgentRun>,
    /// A wait phase: the outside event that passed it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arrived: Option<Arrived>,
}

/// The outside event that passed a wait phase (a GitHub delivery).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Arrived {
    /// `github.pull_request.opened`.
    pub event: String,
    /// `X-GitHub-Delivery`.
    pub delivery: String,
    pub at: Timestamp,
    /// `pr-number`, `pr-url`, `review-state`, … (also the task's labels).
    pub facts: BTreeMap<String, String>,
}

/// An agent CLI's own session, as baton records it to resume it natively.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentSession {
    /// The `[agents.NAME]` that ran it.
    pub agent: String,
    /// The built-in CLI (claude, codex, gemini, qwen, opencode, copilot, droid).
    pub cli: String,
    pub native_id: String,
    /// The folder it ran in: several CLIs resume only from there.
    pub cwd: String,
    /// The CLI's version (`--version`): an update can orphan old sessions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// How this run began: a new session, the native session continued,
    /// or a new session seeded with baton's brief.
    #[serde(default)]
    pub start: SessionStart,
}

/// How an agent run began.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionStart {
    /// A new native session.
    #[default]
    New,
    /// The interrupted native session, continued with the CLI's own resume.
    Resumed,
    /// A new native session seeded with baton's brief, because the old
    /// one could not be resumed.
    Brief,
}

/// Tokens (and cost, where the CLI reports it) an agent run used.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
}

impl Usage {
    pub fn add(&mut self, other: &Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cost_usd = match (self.cost_usd, other.cost_usd) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0.0) + b.unwrap_or(0.0)),
        };
    }
    pub fn is_empty(&self) -> bool {
        self.input_tokens == 0 && self.output_tokens == 0 && self.cost_usd.is_none()
    }
}

/// One run of an agent CLI in a phase.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentRun {
    pub attempt: u32,
    pub iteration: u32,
    pub session: AgentSession,
    pub started_at: Timestamp,
    pub ended_at: Option<Timestamp>,
    /// "exited" (see exit_code), "interrupted" (crash or signal).
    pub outcome: Option<String>,
    pub exit_code: Option<i32>,
    #[serde(default)]
    pub usage: Usage,
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
            exited: None,
            last_error: None,
            waiting: None,
            agent_session: None,
            interrupted: false,
            agent_runs: Vec::new(),
            arrived: None,
        }
    }

    /// Tokens and cost of every agent run of this phase.
    pub fn usage(&self) -> Usage {
        let mut u = Usage::default();
        for r in &self.agent_runs {
            u.add(&r.usage);
        }
        u
    }

    /// Back to PENDING for a new iteration (loop or rewind).
    pub fn reset(&mut self) {
        let iteration = self.iteration + 1;
        let checkpoint = self.checkpoint.take();
        let runs = std::mem::take(&mut self.agent_runs);
        *self = PhaseState::new(self.id.clone());
        self.iteration = iteration;
        self.checkpoint = checkpoint;
        self.agent_runs = runs;
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
    /// The agent prompt phases run on, when chosen for the task (`run
    /// --agent`, `resume --agent`, `handoff --to`) rather than by the
    /// workflow or the project's default.
    #[serde(default)]
    pub agent: Option<String>,
    /// The agent was switched after agent phases had run: the next agent
    /// run gets the handoff brief in its memory file and its prompt.
    #[serde(default)]
    pub handoff_pending: bool,
    /// The CLI session the task was imported from (`baton import`): the
    /// first agent run continues it, natively where it can.
    #[serde(default)]
    pub imported: Option<AgentSession>,
    /// When the supervisor restarted it by itself (`supervisor::judge`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub auto_restarts: Vec<Timestamp>,
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
    /// The phase the task is at: the one in progress, waiting or failed,
    /// else the first pending one.
    pub fn current_phase(&self) -> Option<&PhaseState> {
        self.phases
            .iter()
            .find(|p| {
                matches!(
                    p.status,
                    PhaseStatus::InProgress | PhaseStatus::Waiting | PhaseStatus::Failed
                )
            })
            .or_else(|| {
                self.phases
                    .iter()
                    .find(|p| p.status == PhaseStatus::Pending)
            })
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
    /// Tokens and cost of every agent run of the task.
    pub fn usage(&self) -> Usage {
        let mut u = Usage::default();
        for p in &self.phases {
            u.add(&p.usage());
        }
        u
    }

    /// Every agent run of the task, in the order they started.
    pub fn agent_runs(&self) -> Vec<(&PhaseId, &AgentRun)> {
        let mut runs: Vec<(&PhaseId, &AgentRun)> = self
            .phases
            .iter()
            .flat_map(|p| p.agent_runs.iter().map(move |r| (&p.id, r)))
            .collect();
        runs.sort_by_key(|(_, r)| r.started_at);
        runs
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
