//! Folding events into a task's state: `apply` one event (one function per
//! kind of event that changes more than a field or two), `replay` a whole
//! journal, and `touched` to say which phases an event changes.

use crate::agent_stream::AgentEvent;
use crate::event::{Event, EventRecord};
use crate::ids::{PhaseId, TaskId};
use crate::state::{
    AgentRun, AgentSession, Checkpoint, PhaseState, PhaseStatus, ProcessRef, TaskState, TaskStatus,
    Usage, WaitState,
};
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
        auto_restarts: Vec::new(),
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

/// Folds one stored event into the state.
pub fn apply(state: &mut TaskState, record: &EventRecord) {
    state.last_seq = record.seq;
    state.updated_at = record.ts;
    let ts = record.ts;
    match &record.event {
        Event::TaskCreated { .. }
        | Event::Claimed { .. }
        | Event::Note { .. }
        | Event::Answered { .. } => {}
        Event::AutoRestarted { .. } => {
            state.auto_restarts.push(ts);
            clear_supervisor_blockers(state);
        }
        Event::RestartsExhausted { reason } => {
            clear_supervisor_blockers(state);
            state
                .blockers
                .push(format!("{}{reason}", crate::supervisor::BLOCKER_PREFIX));
        }
        Event::EventArrived {
            phase,
            event,
            delivery,
            facts,
        } => {
            state
                .labels
                .extend(facts.iter().map(|(k, v)| (k.clone(), v.clone())));
            if let Some(p) = state.phase_mut(phase.as_str()) {
                p.arrived = Some(crate::state::Arrived {
                    event: event.clone(),
                    delivery: delivery.clone(),
                    at: ts,
                    facts: facts.clone(),
                });
            }
        }
        Event::PhaseStarted {
            phase,
            attempt,
            checkpoint,
            ..
        } => apply_phase_started(state, phase, ts, *attempt, checkpoint),
        Event::PhaseProcess { phase, process, .. } => apply_phase_process(state, phase, process),
        Event::PhaseExited { phase, exit, .. } => {
            if let Some(p) = state.phase_mut(phase.as_str()) {
                p.exited = Some(*exit);
            }
        }
        Event::AgentSession {
            phase,
            attempt,
            session,
        } => apply_agent_session(state, phase, ts, *attempt, session),
        Event::AgentActivity { phase, events, .. } => apply_agent_activity(state, phase, events),
        Event::AgentEnded {
            phase,
            exit_code,
            version,
            ..
        } => apply_agent_ended(state, phase, ts, *exit_code, version),
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
        } => apply_phase_passed(state, phase, ts, summary, output, files_changed),
        Event::PhaseFailed {
            phase,
            error,
            retry,
            files_changed,
            ..
        } => apply_phase_failed(state, phase, ts, error, *retry, files_changed),
        Event::PhaseSkipped { phase, .. } => apply_phase_skipped(state, phase, ts),
        Event::PhaseWaiting {
            phase,
            description,
            due_at,
        } => apply_phase_waiting(state, phase, ts, description, *due_at),
        Event::PhaseInterrupted { phase, .. } => apply_phase_interrupted(state, phase, ts),
        Event::LoopedBack {
            from,
            iteration,
            reset,
            ..
        } => apply_looped_back(state, from, *iteration, reset),
        Event::Rewound { to, reset } => apply_rewound(state, to, reset),
        Event::TaskResumed { from, note } => apply_task_resumed(state, from, note),
        Event::DefinitionUpgraded {
            to_hash,
            phases,
            added_flags,
            reset,
            ..
        } => apply_definition_upgraded(state, to_hash, phases, added_flags, reset),
        Event::Adopted {
            source,
            phases,
            iteration_counts,
            status,
            blockers,
            failure,
        } => apply_adopted(
            state,
            source,
            phases,
            iteration_counts,
            *status,
            blockers,
            failure,
        ),
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

// ---------------------------------------------------------------------------
// A phase's attempt: started, its agent, how it ended
// ---------------------------------------------------------------------------

/// The phase is IN_PROGRESS with a new attempt; a checkpoint given replaces
/// the one kept.
fn apply_phase_started(
    state: &mut TaskState,
    phase: &PhaseId,
    ts: Timestamp,
    attempt: u32,
    checkpoint: &Option<Checkpoint>,
) {
    if let Some(p) = state.phase_mut(phase.as_str()) {
        p.status = PhaseStatus::InProgress;
        p.attempt = attempt;
        p.started_at = Some(ts);
        p.completed_at = None;
        p.process = None;
        p.exited = None;
        p.arrived = None;
        if checkpoint.is_some() {
            p.checkpoint = checkpoint.clone();
        }
    }
}

/// The process running the attempt is known.
fn apply_phase_process(state: &mut TaskState, phase: &PhaseId, process: &ProcessRef) {
    if let Some(p) = state.phase_mut(phase.as_str()) {
        p.process = Some(process.clone());
        p.exited = None;
    }
}

/// A new agent run opens (closing one still open); a session of the agent
/// switched to ends the pending handoff.
fn apply_agent_session(
    state: &mut TaskState,
    phase: &PhaseId,
    ts: Timestamp,
    attempt: u32,
    session: &AgentSession,
) {
    if state.agent.as_deref() == Some(session.agent.as_str()) {
        state.handoff_pending = false;
    }
    if let Some(p) = state.phase_mut(phase.as_str()) {
        end_run(p, ts, "replaced", None);
        p.agent_session = Some(session.clone());
        p.agent_runs.push(AgentRun {
            attempt,
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

/// The usage the agent reported is added to its latest run, its own
/// subagents' included (Codex counts each of its agents apart).
fn apply_agent_activity(state: &mut TaskState, phase: &PhaseId, events: &[AgentEvent]) {
    if let Some(run) = state
        .phase_mut(phase.as_str())
        .and_then(|p| p.agent_runs.last_mut())
    {
        for e in events {
            let e = match e {
                AgentEvent::Subagent { event, .. } => event.as_ref(),
                e => e,
            };
            if let AgentEvent::Usage {
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

/// The agent run closes; the CLI version, if not known yet, is kept.
fn apply_agent_ended(
    state: &mut TaskState,
    phase: &PhaseId,
    ts: Timestamp,
    exit_code: Option<i32>,
    version: &Option<String>,
) {
    if let Some(p) = state.phase_mut(phase.as_str()) {
        if let Some(run) = p.agent_runs.last_mut().filter(|r| r.ended_at.is_none())
            && run.session.version.is_none()
        {
            run.session.version = version.clone();
        }
        if let Some(s) = p.agent_session.as_mut().filter(|s| s.version.is_none()) {
            s.version = version.clone();
        }
        end_run(p, ts, "exited", exit_code);
    }
}

/// The phase is PASS with its results; its blocker and the resume note go.
fn apply_phase_passed(
    state: &mut TaskState,
    phase: &PhaseId,
    ts: Timestamp,
    summary: &str,
    output: &str,
    files_changed: &[String],
) {
    if let Some(p) = state.phase_mut(phase.as_str()) {
        end_run(p, ts, "exited", Some(0));
        p.interrupted = false;
        p.status = PhaseStatus::Pass;
        p.completed_at = Some(ts);
        p.summary = Some(summary.to_owned());
        p.output = Some(output.to_owned());
        p.files_changed = files_changed.to_vec();
        p.process = None;
        p.exited = None;
        p.last_error = None;
        p.waiting = None;
    }
    let prefix = format!("{phase}: ");
    state.blockers.retain(|b| !b.starts_with(&prefix));
    state.resume_note = None;
}

/// The phase counts a failure and is PENDING again (retry) or FAILED; its
/// error becomes the phase's blocker.
fn apply_phase_failed(
    state: &mut TaskState,
    phase: &PhaseId,
    ts: Timestamp,
    error: &str,
    retry: bool,
    files_changed: &[String],
) {
    if let Some(p) = state.phase_mut(phase.as_str()) {
        end_run(p, ts, "exited", None);
        p.interrupted = false;
        p.failures += 1;
        p.status = if retry {
            PhaseStatus::Pending
        } else {
            PhaseStatus::Failed
        };
        p.completed_at = Some(ts);
        p.process = None;
        p.exited = None;
        p.last_error = Some(error.to_owned());
        p.files_changed = files_changed.to_vec();
    }
    let blocker = format!("{phase}: {error}");
    let prefix = format!("{phase}: ");
    state.blockers.retain(|b| !b.starts_with(&prefix));
    state.blockers.push(blocker);
}

/// The phase is SKIPPED.
fn apply_phase_skipped(state: &mut TaskState, phase: &PhaseId, ts: Timestamp) {
    if let Some(p) = state.phase_mut(phase.as_str()) {
        p.status = PhaseStatus::Skipped;
        p.completed_at = Some(ts);
        p.process = None;
        p.exited = None;
    }
}

/// The phase and the task are WAITING.
fn apply_phase_waiting(
    state: &mut TaskState,
    phase: &PhaseId,
    ts: Timestamp,
    description: &str,
    due_at: Option<Timestamp>,
) {
    if let Some(p) = state.phase_mut(phase.as_str()) {
        p.status = PhaseStatus::Waiting;
        p.started_at = Some(ts);
        p.waiting = Some(WaitState {
            description: description.to_owned(),
            due_at,
        });
    }
    state.status = TaskStatus::Waiting;
}

/// The attempt died: the phase is PENDING again, marked interrupted.
fn apply_phase_interrupted(state: &mut TaskState, phase: &PhaseId, ts: Timestamp) {
    if let Some(p) = state.phase_mut(phase.as_str()) {
        end_run(p, ts, "interrupted", None);
        p.interrupted = true;
        p.status = PhaseStatus::Pending;
        p.process = None;
        p.exited = None;
    }
}

/// Closes the phase's latest agent run if it is still open.
fn end_run(p: &mut PhaseState, ts: Timestamp, outcome: &str, exit_code: Option<i32>) {
    if let Some(run) = p.agent_runs.last_mut().filter(|r| r.ended_at.is_none()) {
        run.ended_at = Some(ts);
        run.outcome = Some(outcome.to_string());
        run.exit_code = exit_code;
    }
}

// ---------------------------------------------------------------------------
// The task as a whole: loops, rewinds, resumes, upgrades, adoption
// ---------------------------------------------------------------------------

/// The phases looped over are reset and the loop's iteration counted.
fn apply_looped_back(state: &mut TaskState, from: &PhaseId, iteration: u32, reset: &[PhaseId]) {
    for id in reset {
        if let Some(p) = state.phase_mut(id.as_str()) {
            p.reset();
        }
    }
    state.iteration_counts.insert(from.to_string(), iteration);
}

/// The phases rewound over are reset with their loop counts and blockers;
/// the task runs again from `to`.
fn apply_rewound(state: &mut TaskState, to: &PhaseId, reset: &[PhaseId]) {
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

/// The task runs again; after a failure its FAILED phases are PENDING with
/// their failures forgotten.
fn clear_supervisor_blockers(state: &mut TaskState) {
    state
        .blockers
        .retain(|b| !b.starts_with(crate::supervisor::BLOCKER_PREFIX));
}

fn apply_task_resumed(state: &mut TaskState, from: &str, note: &str) {
    clear_supervisor_blockers(state);
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
    state.resume_note = Some(note.to_owned());
}

/// The phase list follows the new definition (kept phases keep their state),
/// changed waits are reset and new flags get their defaults.
fn apply_definition_upgraded(
    state: &mut TaskState,
    to_hash: &str,
    phases: &[PhaseId],
    added_flags: &BTreeMap<String, serde_json::Value>,
    reset: &[PhaseId],
) {
    let mut old: Vec<PhaseState> = std::mem::take(&mut state.phases);
    state.phases = phases
        .iter()
        .map(|id| match old.iter().position(|p| &p.id == id) {
            Some(i) => old.swap_remove(i),
            None => PhaseState::new(id.clone()),
        })
        .collect();
    state.definition_hash = to_hash.to_owned();
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

/// Phase states taken over from elsewhere (a fork or a rebuild) replace the
/// task's, with its counts, status, blockers and failure.
fn apply_adopted(
    state: &mut TaskState,
    source: &str,
    phases: &[PhaseState],
    iteration_counts: &BTreeMap<String, u32>,
    status: TaskStatus,
    blockers: &[String],
    failure: &Option<String>,
) {
    if source.starts_with("fork of") {
        state.resume_note = Some(format!("Forked: {source}."));
    }
    if source.starts_with(crate::session_log::FROM_LOG) {
        // A log read back (a fresh clone, a log written by hand): the next
        // agent gets the brief, rebuilt from the phases the log tells.
        state.resume_note = Some(format!("Continued from the {source}."));
        state.handoff_pending = true;
    }
    for adopted in phases {
        if let Some(p) = state.phase_mut(adopted.id.as_str()) {
            *p = adopted.clone();
        }
    }
    state.iteration_counts = iteration_counts.clone();
    state.status = status;
    state.blockers = blockers.to_vec();
    state.failure = failure.clone();
}
