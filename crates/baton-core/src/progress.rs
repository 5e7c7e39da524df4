//! Progress records: a task's stage record (keyed by its repository and
//! task id) and the play's record of a repository (seed 000's
//! `PlayProgress`: the task that moved last there). Each says which task,
//! of which workflow, at which stage, how it stands, the phases it has
//! passed with their summaries, and its labels (those its events set,
//! such as `pr-number`, too). The engine keeps both up to date as tasks
//! move from stage to stage; they outlive `baton rm`, so a task deleted
//! and created again (same id, `repository` label and workflow)
//! continues at its own recorded stage, with its labels, instead of
//! starting over, however many other tasks the repository had since.
//! Pure: derived from a task's state.

use crate::event::{Event, EventRecord};
use crate::lease::{DisplayStatus, Liveness};
use crate::state::{PhaseState, PhaseStatus, TaskState};
use crate::time::Timestamp;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

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
    /// The task's labels: those it was created with and those its events
    /// set (`pr-number`, …).
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
}

/// A progress record's word for each status `baton ls` shows (its
/// runner writes it: the task is never CRASHED or QUEUED to it).
pub fn word(d: DisplayStatus) -> &'static str {
    match d {
        DisplayStatus::Running | DisplayStatus::Queued | DisplayStatus::Crashed => "in-progress",
        DisplayStatus::Waiting => "suspended",
        DisplayStatus::Failed => "failed",
        DisplayStatus::Complete => "completed",
        DisplayStatus::Cancelled => "cancelled",
    }
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
        status: word(DisplayStatus::of_task(state.status, &Liveness::Live, false)).into(),
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
        labels: state.labels.clone(),
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

/// The labels a task created again takes over from the record: those it
/// was not given anew (what is given now wins).
pub fn labels_carried(p: &Progress, given: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    p.labels
        .iter()
        .filter(|(k, _)| !given.contains_key(*k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::TaskId;

    #[test]
    fn a_record_keeps_the_labels_and_gives_back_only_those_not_given_anew() {
        let labels: BTreeMap<String, String> = [
            ("repository", "acme/app"),
            ("task-id", "t1"),
            ("pr-number", "2"),
            ("pr-branch", "changes"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let created = EventRecord {
            seq: 1,
            ts: Timestamp(1),
            event: Event::TaskCreated {
                workflow: "build".into(),
                definition_hash: "h".into(),
                description: "d".into(),
                project_name: "app".into(),
                flags: Default::default(),
                labels,
                tech_stack: serde_json::json!({}),
                phases: Vec::new(),
            },
        };
        let state = crate::machine::initial(TaskId::parse("t1").unwrap(), &created).unwrap();
        let p = of(&state).expect("it has a repository");
        assert_eq!(p.labels, state.labels);
        let given: BTreeMap<String, String> = [("repository", "acme/app"), ("pr-number", "7")]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let kept = labels_carried(&p, &given);
        assert_eq!(
            kept.into_iter().collect::<Vec<_>>(),
            [
                ("pr-branch".to_string(), "changes".to_string()),
                ("task-id".to_string(), "t1".to_string())
            ],
            "what is given now wins"
        );
        // A record written before labels were kept reads as having none.
        let old = r#"{"repository":"acme/app","branch":null,"task_id":"t1","workflow":"build","status":"failed","stage":"x","started_at":1,"last_updated":2,"phases":[]}"#;
        let p: Progress = serde_json::from_str(old).unwrap();
        assert!(p.labels.is_empty());
    }
}
