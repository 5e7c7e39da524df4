//! The progress record of a repository (seed 000's `PlayProgress`): which
//! task works on it, of which workflow, at which stage, how it stands,
//! and the phases it has passed with their summaries. The engine keeps it
//! up to date as tasks move from stage to stage; it outlives `baton rm`,
//! so a task deleted and created again (same `task-id` and `repository`
//! labels, same workflow) continues at the recorded stage instead of
//! starting over. Pure: derived from a task's state.

use crate::event::{Event, EventRecord};
use crate::state::{PhaseState, PhaseStatus, TaskState, TaskStatus};
use crate::time::Timestamp;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Progress {
    pub repository: String,
    pub branch: Option<String>,
    pub task_id: String,
    pub workflow: String,
    /// `in-progress`, `suspended` (waiting, or cancelled), `failed` or
    /// `completed`.
    pub status: String,
    /// The phase the task is at (its last one once completed).
    pub stage: Option<String>,
    pub started_at: Timestamp,
    pub last_updated: Timestamp,
    /// The phases passed, with their summaries (outputs and agent runs
    /// left out), oldest first.
    pub phases: Vec<PhaseState>,
}

/// The task's progress record; `None` for a task without a `repository`
/// label.
pub fn of(state: &TaskState) -> Option<Progress> {
    let repository = state.labels.get("repository")?.clone();
    let stage = state
        .current_phase()
        .or_else(|| state.phases.last())
        .map(|p| p.id.to_string());
    let mut phases: Vec<&PhaseState> = state
        .phases
        .iter()
        .filter(|p| p.status == PhaseStatus::Pass)
        .collect();
    phases.sort_by_key(|p| p.completed_at);
    Some(Progress {
        repository,
        branch: state.last_checkpoint().and_then(|c| c.branch.clone()),
        task_id: state.task_id.to_string(),
        workflow: state.workflow.clone(),
        status: match state.status {
            TaskStatus::Running => "in-progress",
            TaskStatus::Waiting | TaskStatus::Cancelled => "suspended",
            TaskStatus::Failed => "failed",
            TaskStatus::Complete => "completed",
        }
        .into(),
        stage,
        started_at: state.created_at,
        last_updated: state.updated_at,
        phases: phases
            .into_iter()
            .map(|p| PhaseState {
                output: None,
                agent_runs: Vec::new(),
                process: None,
                checkpoint: None,
                ..p.clone()
            })
            .collect(),
    })
}

/// Whether these records move a task from stage to stage (or change how
/// it stands), so its progress record is written again.
pub fn moves(records: &[EventRecord]) -> bool {
    records.iter().any(|r| {
        matches!(
            r.event,
            Event::TaskCreated { .. }
                | Event::Adopted { .. }
                | Event::PhaseStarted { .. }
                | Event::PhasePassed { .. }
                | Event::PhaseFailed { .. }
                | Event::PhaseSkipped { .. }
                | Event::PhaseWaiting { .. }
                | Event::Rewound { .. }
                | Event::TaskResumed { .. }
                | Event::TaskCompleted
                | Event::TaskFailed { .. }
                | Event::TaskCancelled { .. }
        )
    })
}

/// What a task created again takes over from the record: the phases
/// passed that its workflow still has, as passed.
pub fn carried_over(p: &Progress, wf: &crate::Workflow) -> Vec<PhaseState> {
    p.phases
        .iter()
        .filter(|ph| wf.phase(ph.id.as_str()).is_some() && ph.status == PhaseStatus::Pass)
        .cloned()
        .collect()
}
