//! Folding events into a task's state: `apply` one event, `replay` a whole
//! journal, and `touched` to say which phases an event changes.

use crate::event::{Event, EventRecord};
use crate::ids::{PhaseId, TaskId};
use crate::state::{AgentRun, PhaseState, PhaseStatus, TaskState, TaskStatus, Usage, WaitState};
use crate::time::Timestamp;
use std::collections::BTreeMap;

/// Folds a whole journal into a state.
pub fn replay(task_id: &TaskId, events: &[EventRecord]) -> Option<TaskState> {
    let first = events.first()?;
    let mut state = initial(task_id.clone(), first)?;
    for r in &events[1..] {
        apply(&mut state, r);
    }
    Some(state)
}

/// The state right after `TaskCreated`.
pub fn initial(task_id: TaskId, record: &EventRecord) -> Option<TaskState> {
    let Event::TaskCreated {
        workflow,
        definition_hash,
        description,
        project_name,
        flags,
        labels,
        tech_stack,
        phases,
    } = &record.event
    else {
        return None;
    };
    Some(TaskState {
        task_id,
        workflow: workflow.clone(),
        definition_hash: definition_hash.clone(),
        description: description.clone(),
        project_name: project_name.clone(),
        created_at: record.ts,
        updated_at: record.ts,
        status: TaskStatus::Running,
        flags: flags.clone(),
        labels: labels.clone(),
        tech_stack: tech_stack.clone(),
        phases: phases.iter().cloned().map(PhaseState::new).collect(),
        iteration_counts: BTreeMap::new(),
        blockers: Vec::new(),
        resume_note: None,
        failure: None,
        agent: None,
        handoff_pending: false,
        imported: None,
        last_seq: record.seq,
    })
}
/// The phases an event changes, read before it is applied; `None` means the
/// phase list itself changes. The store rewrites only these rows.
pub fn touched(state: &TaskState, event: &Event) -> Option<Vec<PhaseId>> {
    Some(match event {
        Event::DefinitionUpgraded { .. } | Event::TaskCreated { .. } => return None,
        Event::LoopedBack { reset, .. } | Event::Rewound { reset, .. } => reset.clone(),
        Event::Adopted { phases, .. } => phases.iter().map(|p| p.id.clone()).collect(),
        Event::TaskResumed { from, .. } if from == "FAILED" => state
            .phases
            .iter()
            .filter(|p| p.status == PhaseStatus::Failed)
            .map(|p| p.id.clone())
            .collect(),
        Event::TaskFailed { .. } | Event::Note { .. } => Vec::new(),
        other => other.phase().cloned().into_iter().collect(),
    })
}

/// Closes the phase's latest agent run if it is still open.
fn end_run(p: &mut PhaseState, ts: Timestamp, outcome: &str, exit_code: Option<i32>) {
    if let Some(run) = p.agent_runs.last_mut().filter(|r| r.ended_at.is_none()) {
        run.ended_at = Some(ts);
        run.outcome = Some(outcome.to_string());
        run.exit_code = exit_code;
    }
}

/// Folds one stored event into the state.
pub fn apply(state: &mut TaskState, record: &EventRecord) {
    state.last_seq = record.seq;
    state.updated_at = record.ts;
    let ts = record.ts;
    match &record.event {
        Event::TaskCreated { .. } | Event::Claimed { .. } | Event::Note { .. } => {}
        Event::PhaseStarted {
            phase,
            attempt,
            checkpoint,
            ..
        } => {
            if let Some(p) = state.phase_mut(phase.as_str()) {
                p.status = PhaseStatus::InProgress;
                p.attempt = *attempt;
                p.started_at = Some(ts);
                p.completed_at = None;
                p.process = None;
                if checkpoint.is_some() {
                    p.checkpoint = checkpoint.clone();
                }
            }
        }
        Event::PhaseProcess { phase, process, .. } => {
            if let Some(p) = state.phase_mut(phase.as_str()) {
                p.process = Some(process.clone());
            }
        }
        Event::AgentSession {
            phase,
            attempt,
            session,
        } => {
            if state.agent.as_deref() == Some(session.agent.as_str()) {
                state.handoff_pending = false;
            }
            if let Some(p) = state.phase_mut(phase.as_str()) {
                end_run(p, ts, "replaced", None);
                p.agent_session = Some(session.clone());
                p.agent_runs.push(AgentRun {
                    attempt: *attempt,
                    iteration: p.iteration,
                    session: session.clone(),
                    started_at: ts,
                    ended_at: None,
                    outcome: None,
                    exit_code: None,
                    usage: Usage::default(),
                });
            }
        }
        Event::AgentActivity { phase, events, .. } => {
            if let Some(run) = state
                .phase_mut(phase.as_str())
                .and_then(|p| p.agent_runs.last_mut())
            {
                for e in events {
                    if let crate::agent_stream::AgentEvent::Usage {
                        input_tokens,
                        output_tokens,
                        cost_usd,
                    } = e
                    {
                        run.usage.add(&Usage {
                            input_tokens: *input_tokens,
                            output_tokens: *output_tokens,
                            cost_usd: *cost_usd,
                        });
                    }
                }
            }
        }
        Event::AgentEnded {
            phase,
            exit_code,
            version,
            ..
        } => {
            if let Some(p) = state.phase_mut(phase.as_str()) {
                if let Some(run) = p.agent_runs.last_mut().filter(|r| r.ended_at.is_none())
                    && run.session.version.is_none()
                {
                    run.session.version = version.clone();
                }
                if let Some(s) = p.agent_session.as_mut().filter(|s| s.version.is_none()) {
                    s.version = version.clone();
                }
                end_run(p, ts, "exited", *exit_code);
            }
        }
        Event::Imported { session, .. } => {
            state.imported = Some(session.clone());
        }
        Event::AgentSwitched { to, .. } => {
            state.agent = Some(to.clone());
            state.handoff_pending = state.phases.iter().any(|p| !p.agent_runs.is_empty());
        }
        Event::PhasePassed {
            phase,
            summary,
            output,
            files_changed,
            ..
        } => {
            if let Some(p) = state.phase_mut(phase.as_str()) {
                end_run(p, ts, "exited", Some(0));
                p.interrupted = false;
                p.status = PhaseStatus::Pass;
                p.completed_at = Some(ts);
                p.summary = Some(summary.clone());
                p.output = Some(output.clone());
                p.files_changed = files_changed.clone();
                p.process = None;
                p.last_error = None;
                p.waiting = None;
            }
            let prefix = format!("{phase}: ");
            state.blockers.retain(|b| !b.starts_with(&prefix));
            state.resume_note = None;
        }
        Event::PhaseFailed {
            phase,
            error,
            retry,
            files_changed,
            ..
        } => {
            if let Some(p) = state.phase_mut(phase.as_str()) {
                end_run(p, ts, "exited", None);
                p.interrupted = false;
                p.failures += 1;
                p.status = if *retry {
                    PhaseStatus::Pending
                } else {
                    PhaseStatus::Failed
                };
                p.completed_at = Some(ts);
                p.process = None;
                p.last_error = Some(error.clone());
                p.files_changed = files_changed.clone();
            }
            let blocker = format!("{phase}: {error}");
            let prefix = format!("{phase}: ");
            state.blockers.retain(|b| !b.starts_with(&prefix));
            state.blockers.push(blocker);
        }
        Event::PhaseSkipped { phase, .. } => {
            if let Some(p) = state.phase_mut(phase.as_str()) {
                p.status = PhaseStatus::Skipped;
                p.completed_at = Some(ts);
                p.process = None;
            }
        }
        Event::PhaseWaiting {
            phase,
            description,
            due_at,
        } => {
            if let Some(p) = state.phase_mut(phase.as_str()) {
                p.status = PhaseStatus::Waiting;
                p.started_at = Some(ts);
                p.waiting = Some(WaitState {
                    description: description.clone(),
                    due_at: *due_at,
                });
            }
            state.status = TaskStatus::Waiting;
        }
        Event::PhaseInterrupted { phase, .. } => {
            if let Some(p) = state.phase_mut(phase.as_str()) {
                end_run(p, ts, "interrupted", None);
                p.interrupted = true;
                p.status = PhaseStatus::Pending;
                p.process = None;
            }
        }
        Event::LoopedBack {
            from,
            iteration,
            reset,
            ..
        } => {
            for id in reset {
                if let Some(p) = state.phase_mut(id.as_str()) {
                    p.reset();
                }
            }
            state.iteration_counts.insert(from.to_string(), *iteration);
        }
        Event::Rewound { to, reset } => {
            for id in reset {
                if let Some(p) = state.phase_mut(id.as_str()) {
                    p.reset();
                }
                state.iteration_counts.remove(id.as_str());
                let prefix = format!("{id}: ");
                state.blockers.retain(|b| !b.starts_with(&prefix));
            }
            state.status = TaskStatus::Running;
            state.failure = None;
            state.resume_note = Some(format!("Resuming from {to}: rewound by the user."));
        }
        Event::TaskResumed { from, note } => {
            if from == "FAILED" {
                for p in state
                    .phases
                    .iter_mut()
                    .filter(|p| p.status == PhaseStatus::Failed)
                {
                    p.status = PhaseStatus::Pending;
                    p.failures = 0;
                }
            }
            state.status = TaskStatus::Running;
            state.failure = None;
            state.resume_note = Some(note.clone());
        }
        Event::DefinitionUpgraded {
            to_hash,
            phases,
            added_flags,
            reset,
            ..
        } => {
            let mut old: Vec<PhaseState> = std::mem::take(&mut state.phases);
            state.phases = phases
                .iter()
                .map(|id| match old.iter().position(|p| &p.id == id) {
                    Some(i) => old.swap_remove(i),
                    None => PhaseState::new(id.clone()),
                })
                .collect();
            state.definition_hash = to_hash.clone();
            for id in reset {
                if let Some(p) = state.phase_mut(id.as_str()) {
                    p.reset();
                }
            }
            for (k, v) in added_flags {
                state.flags.entry(k.clone()).or_insert_with(|| v.clone());
            }
            // The phase the task waited in is gone: nothing holds it back.
            if state.status == TaskStatus::Waiting && state.waiting_phase().is_none() {
                state.status = TaskStatus::Running;
            }
        }
        Event::Adopted {
            source,
            phases,
            iteration_counts,
            status,
            blockers,
            failure,
        } => {
            if source.starts_with("fork of") {
                state.resume_note = Some(format!("Forked: {source}."));
            }
            for adopted in phases {
                if let Some(p) = state.phase_mut(adopted.id.as_str()) {
                    *p = adopted.clone();
                }
            }
            state.iteration_counts = iteration_counts.clone();
            state.status = *status;
            state.blockers = blockers.clone();
            state.failure = failure.clone();
        }
        Event::TaskCompleted => {
            state.status = TaskStatus::Complete;
            state.resume_note = None;
        }
        Event::TaskFailed { reason, .. } => {
            state.status = TaskStatus::Failed;
            state.failure = Some(reason.clone());
        }
        Event::TaskCancelled { reason } => {
            state.status = TaskStatus::Cancelled;
            state.failure = Some(reason.clone());
        }
    }
}
