//! Journal events: every state transition of a task, appended in order.

use crate::ids::PhaseId;
use crate::state::{Checkpoint, Exit, PhaseState, ProcessRef, TaskStatus};
use crate::time::Timestamp;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Event {
    TaskCreated {
        workflow: String,
        definition_hash: String,
        description: String,
        project_name: String,
        flags: BTreeMap<String, serde_json::Value>,
        labels: BTreeMap<String, String>,
        tech_stack: serde_json::Value,
        phases: Vec<PhaseId>,
    },
    /// A process took the task's lease (run, resume, fork, cancel).
    Claimed {
        owner: String,
        command: String,
    },
    PhaseStarted {
        phase: PhaseId,
        attempt: u32,
        iteration: u32,
        checkpoint: Option<Checkpoint>,
    },
    PhaseProcess {
        phase: PhaseId,
        attempt: u32,
        process: ProcessRef,
    },
    /// The attempt's process ended; its PASS or FAILED follows once its
    /// output, summary and work are accounted for.
    PhaseExited {
        phase: PhaseId,
        attempt: u32,
        exit: Exit,
    },
    PhasePassed {
        phase: PhaseId,
        attempt: u32,
        summary: String,
        output: String,
        files_changed: Vec<String>,
    },
    PhaseFailed {
        phase: PhaseId,
        attempt: u32,
        error: String,
        exit_code: Option<i32>,
        timed_out: bool,
        stderr_tail: String,
        files_changed: Vec<String>,
        /// The phase goes back to PENDING for another attempt.
        retry: bool,
    },
    PhaseSkipped {
        phase: PhaseId,
        reason: String,
    },
    PhaseWaiting {
        phase: PhaseId,
        description: String,
        due_at: Option<Timestamp>,
    },
    /// The event a waiting phase expected arrived (a webhook delivery):
    /// its facts become the task's labels; the phase passes next.
    EventArrived {
        phase: PhaseId,
        event: String,
        delivery: String,
        facts: BTreeMap<String, String>,
    },
    /// A crash (or a cancel) cut an attempt short; it will be re-run from its start.
    PhaseInterrupted {
        phase: PhaseId,
        attempt: u32,
        reason: String,
    },
    LoopedBack {
        from: PhaseId,
        to: PhaseId,
        iteration: u32,
        reset: Vec<PhaseId>,
    },
    Rewound {
        to: PhaseId,
        reset: Vec<PhaseId>,
    },
    TaskResumed {
        from: String,
        note: String,
    },
    DefinitionUpgraded {
        from_hash: String,
        to_hash: String,
        phases: Vec<PhaseId>,
        added: Vec<PhaseId>,
        removed: Vec<PhaseId>,
        /// Flags the new definition declares that the task did not have,
        /// with their defaults (set only where the task has no value yet).
        #[serde(default)]
        added_flags: BTreeMap<String, serde_json::Value>,
        /// Phases WAITING under a definition the upgrade changed: they go
        /// back to PENDING and wait anew (or run) as now defined.
        #[serde(default)]
        reset: Vec<PhaseId>,
    },
    TaskCompleted,
    TaskFailed {
        phase: Option<PhaseId>,
        reason: String,
    },
    TaskCancelled {
        reason: String,
    },
    /// Phase states taken over wholesale: a fork inheriting the phases
    /// before its starting point, or `doctor --fix` rebuilding a task from its
    /// rendered files.
    Adopted {
        source: String,
        phases: Vec<PhaseState>,
        iteration_counts: BTreeMap<String, u32>,
        status: TaskStatus,
        /// Blockers and failure reason carried over (a rebuild keeps them).
        #[serde(default)]
        blockers: Vec<String>,
        #[serde(default)]
        failure: Option<String>,
    },
    /// An agent phase's native CLI session: journaled as soon as it is
    /// known (before the CLI starts when baton chooses the id), so a resume
    /// can continue it natively.
    AgentSession {
        phase: PhaseId,
        attempt: u32,
        session: crate::state::AgentSession,
    },
    /// What an agent CLI did, read from its stream while it runs (tool
    /// calls and results, messages, usage), in batches.
    AgentActivity {
        phase: PhaseId,
        attempt: u32,
        events: Vec<crate::agent_stream::AgentEvent>,
    },
    /// An agent CLI process ended (the phase's verdict follows).
    AgentEnded {
        phase: PhaseId,
        attempt: u32,
        exit_code: Option<i32>,
        /// The CLI's version (asked while it ran).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        version: Option<String>,
    },
    /// The task's prompt phases run on another agent from here on
    /// (`run --agent`, `resume --agent`, `handoff --to`).
    AgentSwitched {
        from: Option<String>,
        to: String,
        reason: String,
    },
    /// The task began as a session of an agent CLI outside baton
    /// (`baton import`): its native session and what it did.
    Imported {
        session: crate::state::AgentSession,
        first_prompt: Option<String>,
        events: Vec<crate::agent_stream::AgentEvent>,
    },
    /// A person answered a `wait = { human }` phase's question.
    Answered {
        phase: PhaseId,
        answer: String,
        by: String,
    },
    /// The supervisor restarts the crashed task by itself, and why.
    AutoRestarted {
        reason: String,
    },
    /// The supervisor gives up restarting the task: it stays CRASHED.
    RestartsExhausted {
        reason: String,
    },
    /// Free text for the history (agent events, heartbeats of long phases, notes).
    Note {
        phase: Option<PhaseId>,
        text: String,
    },
}

impl Event {
    pub fn kind(&self) -> &'static str {
        match self {
            Event::TaskCreated { .. } => "task_created",
            Event::Claimed { .. } => "claimed",
            Event::PhaseStarted { .. } => "phase_started",
            Event::PhaseProcess { .. } => "phase_process",
            Event::PhaseExited { .. } => "phase_exited",
            Event::PhasePassed { .. } => "phase_passed",
            Event::PhaseFailed { .. } => "phase_failed",
            Event::PhaseSkipped { .. } => "phase_skipped",
            Event::PhaseWaiting { .. } => "phase_waiting",
            Event::PhaseInterrupted { .. } => "phase_interrupted",
            Event::LoopedBack { .. } => "looped_back",
            Event::Rewound { .. } => "rewound",
            Event::TaskResumed { .. } => "task_resumed",
            Event::DefinitionUpgraded { .. } => "definition_upgraded",
            Event::TaskCompleted => "task_completed",
            Event::TaskFailed { .. } => "task_failed",
            Event::TaskCancelled { .. } => "task_cancelled",
            Event::Adopted { .. } => "adopted",
            Event::AgentSession { .. } => "agent_session",
            Event::AgentActivity { .. } => "agent_activity",
            Event::AgentEnded { .. } => "agent_ended",
            Event::AgentSwitched { .. } => "agent_switched",
            Event::Imported { .. } => "imported",
            Event::Note { .. } => "note",
            Event::EventArrived { .. } => "event_arrived",
            Event::Answered { .. } => "answered",
            Event::AutoRestarted { .. } => "auto_restarted",
            Event::RestartsExhausted { .. } => "restarts_exhausted",
        }
    }

    /// The phase this event is about, if any.
    pub fn phase(&self) -> Option<&PhaseId> {
        match self {
            Event::PhaseStarted { phase, .. }
            | Event::PhaseProcess { phase, .. }
            | Event::PhaseExited { phase, .. }
            | Event::AgentSession { phase, .. }
            | Event::AgentActivity { phase, .. }
            | Event::AgentEnded { phase, .. }
            | Event::PhasePassed { phase, .. }
            | Event::PhaseFailed { phase, .. }
            | Event::PhaseSkipped { phase, .. }
            | Event::PhaseWaiting { phase, .. }
            | Event::EventArrived { phase, .. }
            | Event::Answered { phase, .. }
            | Event::PhaseInterrupted { phase, .. } => Some(phase),
            Event::LoopedBack { from, .. } => Some(from),
            Event::Rewound { to, .. } => Some(to),
            Event::TaskFailed { phase, .. } | Event::Note { phase, .. } => phase.as_ref(),
            _ => None,
        }
    }

    pub fn attempt(&self) -> Option<u32> {
        match self {
            Event::PhaseStarted { attempt, .. }
            | Event::PhaseProcess { attempt, .. }
            | Event::PhaseExited { attempt, .. }
            | Event::AgentSession { attempt, .. }
            | Event::AgentActivity { attempt, .. }
            | Event::AgentEnded { attempt, .. }
            | Event::PhasePassed { attempt, .. }
            | Event::PhaseFailed { attempt, .. }
            | Event::PhaseInterrupted { attempt, .. } => Some(*attempt),
            _ => None,
        }
    }
}

/// An event as stored: numbered per task and stamped.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventRecord {
    pub seq: u64,
    pub ts: Timestamp,
    pub event: Event,
}
