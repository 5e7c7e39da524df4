//! `decide`: checks what the driver reports or asks against the rules and
//! returns the events it causes. One function per kind of [`Input`]; `decide`
//! itself only dispatches.

use super::{Failure, Input, Next, RuleError, next, refuse, value_of};
use crate::agent_stream::AgentEvent;
use crate::event::Event;
use crate::ids::PhaseId;
use crate::state::{
    AgentSession, Checkpoint, Exit, PhaseState, PhaseStatus, ProcessRef, TaskState, TaskStatus,
};
use crate::time::Timestamp;
use crate::workflow::{OnFailure, Phase, PhaseKind, WaitSpec, Workflow};
use std::collections::HashSet;

/// Checks `input` against the rules; returns the events it causes, in order.
pub fn decide(
    state: &TaskState,
    wf: &Workflow,
    input: Input,
    now: Timestamp,
) -> Result<Vec<Event>, RuleError> {
    match input {
        // Claims and notes are recorded as given: no rule holds them back.
        Input::Claim { owner, command } => Ok(vec![Event::Claimed { owner, command }]),
        Input::Note { phase, text } => Ok(vec![Event::Note { phase, text }]),
        Input::Answer { phase, answer, by } => decide_answer(state, wf, phase, answer, by),
        Input::AutoRestart { reason } => {
            running(state)?;
            Ok(vec![Event::AutoRestarted { reason }])
        }
        Input::GiveUpRestarts { reason } => {
            running(state)?;
            Ok(vec![Event::RestartsExhausted { reason }])
        }
        Input::Start { phase, checkpoint } => decide_start(state, wf, phase, checkpoint),
        Input::Process { phase, process } => decide_process(state, phase, process),
        Input::Exited { phase, exit } => decide_exited(state, phase, exit),
        Input::AgentSession { phase, session } => decide_agent_session(state, phase, session),
        Input::AgentActivity { phase, events } => decide_agent_activity(state, phase, events),
        Input::AgentEnded {
            phase,
            exit_code,
            version,
        } => decide_agent_ended(state, phase, exit_code, version),
        Input::SwitchAgent { to, reason } => decide_switch_agent(state, to, reason),
        Input::Pass {
            phase,
            summary,
            output,
            files_changed,
        } => decide_pass(state, phase, summary, output, files_changed),
        Input::Fail { phase, failure } => decide_fail(state, wf, phase, failure),
        Input::Skip { phase } => decide_skip(state, wf, phase),
        Input::Wait { phase } => decide_wait(state, wf, phase, now),
        Input::TimerDue { phase } => decide_timer_due(state, phase, now),
        Input::EventArrived {
            phase,
            event,
            delivery,
            facts,
        } => decide_event_arrived(state, wf, phase, event, delivery, facts),
        Input::Complete => decide_complete(state),
        Input::Interrupt { reason } => decide_interrupt(state, reason),
        Input::Resume { crashed } => decide_resume(state, wf, crashed),
        Input::Rewind { to } => decide_rewind(state, wf, to),
        Input::Cancel { reason } => decide_cancel(state, reason),
        Input::Upgrade { to } => decide_upgrade(state, wf, &to),
    }
}

// ---------------------------------------------------------------------------
// Shared checks
// ---------------------------------------------------------------------------

/// The state of phase `id`, or a refusal if the task has no such phase.
fn phase_state<'s>(state: &'s TaskState, id: &PhaseId) -> Result<&'s PhaseState, RuleError> {
    state
        .phase(id.as_str())
        .ok_or_else(|| RuleError(format!("task {} has no phase {id:?}", state.task_id)))
}

/// The state of phase `id`, which must be IN_PROGRESS: what an attempt
/// reports about itself is only taken while it runs.
fn phase_in_progress<'s>(state: &'s TaskState, id: &PhaseId) -> Result<&'s PhaseState, RuleError> {
    let ps = phase_state(state, id)?;
    if ps.status != PhaseStatus::InProgress {
        return refuse(format!("phase {id} is not in progress"));
    }
    Ok(ps)
}

/// Refuses unless the task is RUNNING.
fn running(state: &TaskState) -> Result<(), RuleError> {
    if state.status == TaskStatus::Running {
        Ok(())
    } else {
        refuse(format!(
            "task {} is {}, not RUNNING",
            state.task_id,
            state.status.as_str()
        ))
    }
}

// ---------------------------------------------------------------------------
// Starting a phase and what its attempt reports while it runs
// ---------------------------------------------------------------------------

/// A phase starts only when the task runs, nothing else is in progress and
/// `next` says this phase starts now.
fn decide_start(
    state: &TaskState,
    wf: &Workflow,
    phase: PhaseId,
    checkpoint: Option<Checkpoint>,
) -> Result<Vec<Event>, RuleError> {
    running(state)?;
    if let Some(p) = state.in_progress() {
        return refuse(format!("phase {} is already in progress", p.id));
    }
    match next(state, wf) {
        Next::Start(n) if n == phase => {}
        other => {
            return refuse(format!(
                "phase {phase} cannot start now (next is {other:?})"
            ));
        }
    }
    let ps = phase_state(state, &phase)?;
    Ok(vec![Event::PhaseStarted {
        attempt: ps.attempt + 1,
        iteration: ps.iteration,
        phase,
        checkpoint,
    }])
}

/// The process running an in-progress phase became known.
fn decide_process(
    state: &TaskState,
    phase: PhaseId,
    process: ProcessRef,
) -> Result<Vec<Event>, RuleError> {
    let ps = phase_in_progress(state, &phase)?;
    Ok(vec![Event::PhaseProcess {
        attempt: ps.attempt,
        phase,
        process,
    }])
}

/// The process of an in-progress attempt ended (once per attempt's end).
fn decide_exited(state: &TaskState, phase: PhaseId, exit: Exit) -> Result<Vec<Event>, RuleError> {
    let ps = phase_in_progress(state, &phase)?;
    if ps.exited.is_some() {
        return refuse(format!("the process of phase {phase} has already exited"));
    }
    Ok(vec![Event::PhaseExited {
        attempt: ps.attempt,
        phase,
        exit,
    }])
}

/// The native session of an in-progress agent phase became known.
fn decide_agent_session(
    state: &TaskState,
    phase: PhaseId,
    session: AgentSession,
) -> Result<Vec<Event>, RuleError> {
    let ps = phase_in_progress(state, &phase)?;
    Ok(vec![Event::AgentSession {
        attempt: ps.attempt,
        phase,
        session,
    }])
}

/// What the agent of an in-progress phase did.
fn decide_agent_activity(
    state: &TaskState,
    phase: PhaseId,
    events: Vec<AgentEvent>,
) -> Result<Vec<Event>, RuleError> {
    let ps = phase_in_progress(state, &phase)?;
    Ok(vec![Event::AgentActivity {
        attempt: ps.attempt,
        phase,
        events,
    }])
}

/// The agent CLI of an in-progress phase ended.
fn decide_agent_ended(
    state: &TaskState,
    phase: PhaseId,
    exit_code: Option<i32>,
    version: Option<String>,
) -> Result<Vec<Event>, RuleError> {
    let ps = phase_in_progress(state, &phase)?;
    Ok(vec![Event::AgentEnded {
        attempt: ps.attempt,
        phase,
        exit_code,
        version,
    }])
}

/// Any task with phases left to run may switch agents; switching to the
/// agent already in use changes nothing.
fn decide_switch_agent(
    state: &TaskState,
    to: String,
    reason: String,
) -> Result<Vec<Event>, RuleError> {
    if matches!(state.status, TaskStatus::Complete | TaskStatus::Cancelled) {
        return refuse(format!(
            "task {} is {}: it has no phases left to run",
            state.task_id,
            state.status.as_str()
        ));
    }
    if state.agent.as_deref() == Some(to.as_str()) {
        return Ok(Vec::new());
    }
    Ok(vec![Event::AgentSwitched {
        from: state.agent.clone(),
        to,
        reason,
    }])
}

// ---------------------------------------------------------------------------
// How a phase ends: pass, fail, skip, wait, timer
// ---------------------------------------------------------------------------

/// An in-progress phase passes.
fn decide_pass(
    state: &TaskState,
    phase: PhaseId,
    summary: String,
    output: String,
    files_changed: Vec<String>,
) -> Result<Vec<Event>, RuleError> {
    let ps = phase_in_progress(state, &phase)?;
    Ok(vec![Event::PhasePassed {
        attempt: ps.attempt,
        phase,
        summary,
        output,
        files_changed,
    }])
}

/// An in-progress phase fails. It loops back if it has a `loop_to` and
/// iterations left, else is retried if it has attempts left, else its
/// `on_failure` says what follows.
fn decide_fail(
    state: &TaskState,
    wf: &Workflow,
    phase: PhaseId,
    failure: Failure,
) -> Result<Vec<Event>, RuleError> {
    let ps = phase_in_progress(state, &phase)?;
    let def = wf
        .phase(phase.as_str())
        .ok_or_else(|| RuleError(format!("workflow has no phase {phase}")))?;
    let count = state
        .iteration_counts
        .get(phase.as_str())
        .copied()
        .unwrap_or(0);
    let can_loop = def.loop_to.is_some() && count < def.max_iterations;
    let failures = ps.failures + 1;
    let retry = !can_loop && failures < def.max_attempts;
    let mut events = vec![Event::PhaseFailed {
        attempt: ps.attempt,
        phase: phase.clone(),
        error: failure.message.clone(),
        exit_code: failure.exit_code,
        timed_out: failure.timed_out,
        stderr_tail: failure.stderr_tail,
        files_changed: failure.files_changed,
        retry,
    }];
    if can_loop {
        let to = def.loop_to.clone().expect("can_loop");
        events.push(Event::LoopedBack {
            from: phase,
            reset: in_order(wf, wf.descendants(&to)),
            to,
            iteration: count + 1,
        });
    } else if !retry {
        events.push(given_up(def, phase, failures, &failure.message));
    }
    Ok(events)
}

/// What follows a failure that is neither looped back nor retried, as the
/// phase's `on_failure` says: the phase is skipped or the task fails.
fn given_up(def: &Phase, phase: PhaseId, failures: u32, message: &str) -> Event {
    match def.on_failure {
        OnFailure::Skip => Event::PhaseSkipped {
            reason: format!("failed {failures} time(s) ({message}); on_failure = \"skip\""),
            phase,
        },
        OnFailure::Halt | OnFailure::Retry => Event::TaskFailed {
            reason: format!("phase {phase} failed {failures} time(s): {message}"),
            phase: Some(phase),
        },
    }
}

/// A phase is skipped only when `next` says so, with `next`'s reason.
fn decide_skip(state: &TaskState, wf: &Workflow, phase: PhaseId) -> Result<Vec<Event>, RuleError> {
    running(state)?;
    match next(state, wf) {
        Next::Skip(n, reason) if n == phase => Ok(vec![Event::PhaseSkipped { phase, reason }]),
        other => refuse(format!(
            "phase {phase} cannot be skipped now (next is {other:?})"
        )),
    }
}

/// A wait phase starts waiting when `next` says so; a duration gets its due
/// time, an event match its values filled in.
fn decide_wait(
    state: &TaskState,
    wf: &Workflow,
    phase: PhaseId,
    now: Timestamp,
) -> Result<Vec<Event>, RuleError> {
    running(state)?;
    match next(state, wf) {
        Next::Wait(n) if n == phase => {}
        other => {
            return refuse(format!("phase {phase} cannot wait now (next is {other:?})"));
        }
    }
    let Some(PhaseKind::Wait(spec)) = wf.phase(phase.as_str()).map(|p| &p.kind) else {
        return refuse(format!("phase {phase} is not a wait phase"));
    };
    let due_at = match spec {
        WaitSpec::Duration { millis } => Some(now.plus_millis(*millis as i64)),
        _ => None,
    };
    // The match values are templates: fill them in as the wait starts.
    let spec = match spec {
        WaitSpec::Event {
            event,
            matches,
            payload,
        } => WaitSpec::Event {
            event: event.clone(),
            payload: payload.clone(),
            matches: matches
                .iter()
                .map(|(k, v)| {
                    let value = crate::template::render(v, |name| value_of(state, &phase, name));
                    (k.clone(), value)
                })
                .collect(),
        },
        other => other.clone(),
    };
    Ok(vec![Event::PhaseWaiting {
        phase,
        description: spec.describe(),
        due_at,
    }])
}

/// A phase waiting for a timer passes once the timer is due; a task that
/// waited on it runs again.
fn decide_timer_due(
    state: &TaskState,
    phase: PhaseId,
    now: Timestamp,
) -> Result<Vec<Event>, RuleError> {
    if !matches!(state.status, TaskStatus::Waiting | TaskStatus::Running) {
        return refuse(format!(
            "task {} is {}",
            state.task_id,
            state.status.as_str()
        ));
    }
    let ps = phase_state(state, &phase)?;
    if ps.status != PhaseStatus::Waiting {
        return refuse(format!("phase {phase} is not waiting"));
    }
    match ps.waiting.as_ref().and_then(|w| w.due_at) {
        Some(due) if due <= now => {}
        Some(due) => return refuse(format!("the timer of phase {phase} is due at {due}")),
        None => return refuse(format!("phase {phase} does not wait for a timer")),
    }
    let mut events = Vec::new();
    if state.status == TaskStatus::Waiting {
        events.push(Event::TaskResumed {
            from: "WAITING".into(),
            note: format!("The timer of phase {phase} elapsed."),
        });
    }
    events.push(Event::PhasePassed {
        attempt: ps.attempt,
        phase,
        summary: "timer elapsed".into(),
        output: String::new(),
        files_changed: Vec::new(),
    });
    Ok(events)
}

/// The event a waiting phase expects arrived: the task resumes, the event's
/// facts become labels, and the phase passes. Only the phase that waits,
/// and only for an event of the name it waits for.
/// A person's answer passes the `wait = { human }` phase waiting for it,
/// once, with the answer as its summary; an answer that is none of the
/// question's options is refused, saying them.
fn decide_answer(
    state: &TaskState,
    wf: &Workflow,
    phase: PhaseId,
    answer: String,
    by: String,
) -> Result<Vec<Event>, RuleError> {
    let ps = phase_state(state, &phase)?;
    if ps.status != PhaseStatus::Waiting {
        return refuse(format!(
            "phase {phase} is {}, not waiting for an answer",
            ps.status.as_str()
        ));
    }
    let Some(PhaseKind::Wait(WaitSpec::Human { question, options })) =
        wf.phase(phase.as_str()).map(|p| &p.kind)
    else {
        return refuse(format!("phase {phase} does not wait for a person's answer"));
    };
    let answer = answer.trim().to_string();
    if answer.is_empty() {
        return refuse(format!("the answer to {question:?} is empty"));
    }
    if !options.is_empty() && !options.contains(&answer) {
        return refuse(format!(
            "{answer:?} is not an answer to {question:?}: answer one of {}",
            options.join(", ")
        ));
    }
    let mut events = Vec::new();
    if state.status == TaskStatus::Waiting {
        events.push(Event::TaskResumed {
            from: "WAITING".into(),
            note: format!("{by} answered {question:?}: {answer}."),
        });
    }
    events.push(Event::Answered {
        phase: phase.clone(),
        answer: answer.clone(),
        by,
    });
    events.push(Event::PhasePassed {
        attempt: ps.attempt,
        phase,
        summary: answer,
        output: String::new(),
        files_changed: Vec::new(),
    });
    Ok(events)
}

fn decide_event_arrived(
    state: &TaskState,
    wf: &Workflow,
    phase: PhaseId,
    event: String,
    delivery: String,
    facts: std::collections::BTreeMap<String, String>,
) -> Result<Vec<Event>, RuleError> {
    let ps = phase_state(state, &phase)?;
    if ps.status != PhaseStatus::Waiting {
        return refuse(format!(
            "phase {phase} is {}, not waiting",
            ps.status.as_str()
        ));
    }
    match wf.phase(phase.as_str()).map(|p| &p.kind) {
        Some(PhaseKind::Wait(WaitSpec::Event { event: want, .. })) if *want == event => {}
        _ => return refuse(format!("phase {phase} does not wait for {event}")),
    }
    let mut events = Vec::new();
    if state.status == TaskStatus::Waiting {
        events.push(Event::TaskResumed {
            from: "WAITING".into(),
            note: format!("{event} arrived (delivery {delivery})."),
        });
    }
    let said: Vec<String> = facts.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let summary = if said.is_empty() {
        format!("{event} arrived")
    } else {
        format!("{event} arrived: {}", said.join(", "))
    };
    events.push(Event::EventArrived {
        phase: phase.clone(),
        event,
        delivery,
        facts,
    });
    events.push(Event::PhasePassed {
        attempt: ps.attempt,
        phase,
        summary,
        output: String::new(),
        files_changed: Vec::new(),
    });
    Ok(events)
}

// ---------------------------------------------------------------------------
// The task as a whole: complete, interrupt, resume, rewind, cancel, upgrade
// ---------------------------------------------------------------------------

/// A running task completes once every phase is done.
fn decide_complete(state: &TaskState) -> Result<Vec<Event>, RuleError> {
    running(state)?;
    if let Some(p) = state.phases.iter().find(|p| !p.status.is_done()) {
        return refuse(format!("phase {} is {}", p.id, p.status.as_str()));
    }
    Ok(vec![Event::TaskCompleted])
}

/// The process of the phase in progress died.
fn decide_interrupt(state: &TaskState, reason: String) -> Result<Vec<Event>, RuleError> {
    match state.in_progress() {
        Some(p) => Ok(vec![Event::PhaseInterrupted {
            phase: p.id.clone(),
            attempt: p.attempt,
            reason,
        }]),
        None => refuse("no phase is in progress"),
    }
}

/// A FAILED task resumes, and so does a RUNNING one whose driver crashed;
/// the note says where and why it goes on.
fn decide_resume(state: &TaskState, wf: &Workflow, crashed: bool) -> Result<Vec<Event>, RuleError> {
    let (from, note) = match state.status {
        TaskStatus::Running if crashed => ("CRASHED", crash_note(state, wf)),
        TaskStatus::Running => return refuse(format!("task {} is running", state.task_id)),
        TaskStatus::Failed => ("FAILED", failure_note(state)),
        TaskStatus::Waiting => {
            return refuse(format!(
                "task {} is waiting; it goes on when what it waits for arrives",
                state.task_id
            ));
        }
        TaskStatus::Complete => {
            return refuse(format!("task {} is already COMPLETE", state.task_id));
        }
        TaskStatus::Cancelled => {
            return refuse(format!("task {} was cancelled", state.task_id));
        }
    };
    Ok(vec![Event::TaskResumed {
        from: from.into(),
        note,
    }])
}

/// The resume note after a crash: the phase that goes on and, if it had
/// started, which attempt was cut short.
fn crash_note(state: &TaskState, wf: &Workflow) -> String {
    let at = next_phase_name(state, wf);
    if let Some(p) = state
        .phase(&at)
        .filter(|p| p.status == PhaseStatus::InProgress)
        && let Some(exit) = p.exited
    {
        let how = match (exit.code, exit.signal) {
            (Some(c), _) => format!("exit code {c}"),
            (None, Some(s)) => format!("signal {s}"),
            (None, None) => "an unknown status".into(),
        };
        return format!(
            "Resuming {at} after a crash: the process of attempt {} had ended ({how}) before its end was recorded; its end is judged from the files it left, and it does not run again.",
            p.attempt
        );
    }
    match state
        .phase(&at)
        .filter(|p| p.attempt > 0)
        .and_then(|p| p.started_at.map(|t| (p.attempt, t)))
    {
        Some((n, t)) => format!(
            "Resuming from {at} after a crash: attempt {n}, started at {t}, was interrupted and runs again from its start."
        ),
        None => format!("Resuming from {at} after a crash."),
    }
}

/// The resume note after a failure: the failed phase and its last error.
fn failure_note(state: &TaskState) -> String {
    let failed = state
        .phases
        .iter()
        .find(|p| p.status == PhaseStatus::Failed);
    match failed {
        Some(p) => format!(
            "Resuming from {} after it failed: {}",
            p.id,
            p.last_error.as_deref().unwrap_or("unknown error")
        ),
        None => "Resuming after a failure.".to_string(),
    }
}

/// The task goes back to phase `to` (whose needs must have passed): it and
/// everything after it run again.
fn decide_rewind(state: &TaskState, wf: &Workflow, to: PhaseId) -> Result<Vec<Event>, RuleError> {
    if state.in_progress().is_some() {
        return refuse("a phase is still in progress; interrupt it first");
    }
    phase_state(state, &to)?;
    let def = wf
        .phase(to.as_str())
        .ok_or_else(|| RuleError(format!("the workflow has no phase {to:?}")))?;
    for n in &def.needs {
        if !state.phase(n.as_str()).is_some_and(|p| p.status.is_done()) {
            return refuse(format!(
                "cannot rewind to {to}: it needs {n}, which has not passed yet"
            ));
        }
    }
    // Phases left FAILED or WAITING elsewhere in the graph are reset
    // too, or the task could never finish.
    let mut reset = wf.descendants(&to);
    reset.extend(
        state
            .phases
            .iter()
            .filter(|p| matches!(p.status, PhaseStatus::Failed | PhaseStatus::Waiting))
            .map(|p| p.id.clone()),
    );
    Ok(vec![Event::Rewound {
        reset: in_order(wf, reset),
        to,
    }])
}

/// A task not yet COMPLETE or CANCELLED is cancelled; the phase in progress,
/// if any, is interrupted first.
fn decide_cancel(state: &TaskState, reason: String) -> Result<Vec<Event>, RuleError> {
    if matches!(state.status, TaskStatus::Complete | TaskStatus::Cancelled) {
        return refuse(format!(
            "task {} is already {}",
            state.task_id,
            state.status.as_str()
        ));
    }
    let mut events = Vec::new();
    if let Some(p) = state.in_progress() {
        events.push(Event::PhaseInterrupted {
            phase: p.id.clone(),
            attempt: p.attempt,
            reason: super::CANCELLED.into(),
        });
    }
    events.push(Event::TaskCancelled { reason });
    Ok(events)
}

/// The task moves to a new definition while no phase is in progress: the
/// phases added and removed, the flags added with their defaults, and the
/// waiting phases whose definition changed (they wait anew).
fn decide_upgrade(
    state: &TaskState,
    wf: &Workflow,
    to: &Workflow,
) -> Result<Vec<Event>, RuleError> {
    if state.in_progress().is_some() {
        return refuse("a phase is still in progress; interrupt it first");
    }
    let new_ids: Vec<PhaseId> = to.phases.iter().map(|p| p.id.clone()).collect();
    let added = new_ids
        .iter()
        .filter(|id| state.phase(id.as_str()).is_none())
        .cloned()
        .collect();
    let removed = state
        .phases
        .iter()
        .filter(|p| to.phase(p.id.as_str()).is_none())
        .map(|p| p.id.clone())
        .collect();
    let added_flags = to
        .flags
        .iter()
        .filter(|(k, _)| !state.flags.contains_key(*k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let reset = state
        .phases
        .iter()
        .filter(|p| p.status == PhaseStatus::Waiting)
        .filter(|p| match to.phase(p.id.as_str()) {
            Some(new_def) => wf.phase(p.id.as_str()) != Some(new_def),
            None => false,
        })
        .map(|p| p.id.clone())
        .collect();
    Ok(vec![Event::DefinitionUpgraded {
        from_hash: state.definition_hash.clone(),
        to_hash: to.hash(),
        phases: new_ids,
        added,
        removed,
        added_flags,
        reset,
    }])
}

// ---------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------

/// The name of the phase `next` points at, for notes.
fn next_phase_name(state: &TaskState, wf: &Workflow) -> String {
    match next(state, wf) {
        Next::Start(p)
        | Next::Skip(p, _)
        | Next::Wait(p)
        | Next::InProgress(p)
        | Next::Waiting(p) => p.to_string(),
        _ => "the next phase".into(),
    }
}

/// The phases of `set` in the workflow's order.
fn in_order(wf: &Workflow, set: HashSet<PhaseId>) -> Vec<PhaseId> {
    wf.phases
        .iter()
        .filter(|p| set.contains(&p.id))
        .map(|p| p.id.clone())
        .collect()
}
