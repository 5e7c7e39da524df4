//! The task state machine: `next` says what should happen, `decide` checks an
//! input against the rules and returns the events it causes, `apply` folds an
//! event into the state. All three are pure.

mod apply;
mod create;

pub use apply::{apply, initial, replay, touched};
pub use create::{NewTask, create, flag_type, flag_value};

use crate::event::Event;
use crate::ids::PhaseId;
use crate::state::{Checkpoint, PhaseState, PhaseStatus, ProcessRef, TaskState, TaskStatus};
use crate::time::Timestamp;
use crate::workflow::{OnFailure, PhaseKind, WaitSpec, Workflow};
use std::collections::HashMap;

/// A request the rules refuse, with the reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct RuleError(pub String);

fn refuse<T>(msg: impl Into<String>) -> Result<T, RuleError> {
    Err(RuleError(msg.into()))
}

/// What the driver should do next with a task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Next {
    Start(PhaseId),
    Skip(PhaseId, String),
    Wait(PhaseId),
    Complete,
    /// A phase is IN_PROGRESS: it must finish or be interrupted first.
    InProgress(PhaseId),
    /// A phase is WAITING for something outside.
    Waiting(PhaseId),
    /// The task is not running (complete, failed, cancelled, waiting).
    Stopped(TaskStatus),
}

/// What the driver reports or asks.
#[derive(Debug, Clone, PartialEq)]
pub enum Input {
    Claim {
        owner: String,
        command: String,
    },
    Start {
        phase: PhaseId,
        checkpoint: Option<Checkpoint>,
    },
    Process {
        phase: PhaseId,
        process: ProcessRef,
    },
    /// An agent phase's native session became known.
    AgentSession {
        phase: PhaseId,
        session: crate::state::AgentSession,
    },
    /// What the agent did, read from its stream.
    AgentActivity {
        phase: PhaseId,
        events: Vec<crate::agent_stream::AgentEvent>,
    },
    /// The agent CLI process ended.
    AgentEnded {
        phase: PhaseId,
        exit_code: Option<i32>,
        version: Option<String>,
    },
    /// Prompt phases run on `to` from now on.
    SwitchAgent {
        to: String,
        reason: String,
    },
    Pass {
        phase: PhaseId,
        summary: String,
        output: String,
        files_changed: Vec<String>,
    },
    Fail {
        phase: PhaseId,
        failure: Failure,
    },
    Skip {
        phase: PhaseId,
    },
    Wait {
        phase: PhaseId,
    },
    /// A durable timer is due: the waiting phase passes.
    TimerDue {
        phase: PhaseId,
    },
    Complete,
    /// The running process died; `reason` says how it was found out.
    Interrupt {
        reason: String,
    },
    Resume {
        crashed: bool,
    },
    Rewind {
        to: PhaseId,
    },
    Cancel {
        reason: String,
    },
    Upgrade {
        to: Box<Workflow>,
    },
    Note {
        phase: Option<PhaseId>,
        text: String,
    },
}

/// How an attempt failed.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Failure {
    pub message: String,
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    pub stderr_tail: String,
    pub files_changed: Vec<String>,
}
/// What should happen next. O(phases): one pass to index the phase
/// statuses, one pass over the definition in file order.
pub fn next(state: &TaskState, wf: &Workflow) -> Next {
    if let Some(p) = state.in_progress() {
        return Next::InProgress(p.id.clone());
    }
    if state.status != TaskStatus::Running {
        return Next::Stopped(state.status);
    }
    if let Some(p) = state.waiting_phase() {
        return Next::Waiting(p.id.clone());
    }
    let status = statuses(state);
    for def in &wf.phases {
        if status.get(def.id.as_str()) != Some(&PhaseStatus::Pending) || !needs_done(&status, def) {
            continue;
        }
        if let Some(cond) = &def.when
            && !cond.eval(&state.flags)
        {
            return Next::Skip(def.id.clone(), "its `when` condition is false".into());
        }
        if matches!(def.kind, PhaseKind::Wait(_)) {
            return Next::Wait(def.id.clone());
        }
        return Next::Start(def.id.clone());
    }
    Next::Complete
}

fn statuses(state: &TaskState) -> HashMap<&str, PhaseStatus> {
    state
        .phases
        .iter()
        .map(|p| (p.id.as_str(), p.status))
        .collect()
}

fn needs_done(status: &HashMap<&str, PhaseStatus>, def: &crate::workflow::Phase) -> bool {
    def.needs
        .iter()
        .all(|n| status.get(n.as_str()).is_some_and(|s| s.is_done()))
}

/// Checks `input` against the rules; returns the events it causes, in order.
pub fn decide(
    state: &TaskState,
    wf: &Workflow,
    input: Input,
    now: Timestamp,
) -> Result<Vec<Event>, RuleError> {
    let phase_state = |id: &PhaseId| -> Result<&PhaseState, RuleError> {
        state
            .phase(id.as_str())
            .ok_or_else(|| RuleError(format!("task {} has no phase {id:?}", state.task_id)))
    };
    let running = || -> Result<(), RuleError> {
        if state.status == TaskStatus::Running {
            Ok(())
        } else {
            refuse(format!(
                "task {} is {}, not RUNNING",
                state.task_id,
                state.status.as_str()
            ))
        }
    };
    match input {
        Input::Claim { owner, command } => Ok(vec![Event::Claimed { owner, command }]),
        Input::Note { phase, text } => Ok(vec![Event::Note { phase, text }]),
        Input::Start { phase, checkpoint } => {
            running()?;
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
            let ps = phase_state(&phase)?;
            Ok(vec![Event::PhaseStarted {
                attempt: ps.attempt + 1,
                iteration: ps.iteration,
                phase,
                checkpoint,
            }])
        }
        Input::AgentSession { phase, session } => {
            let ps = phase_state(&phase)?;
            if ps.status != PhaseStatus::InProgress {
                return refuse(format!("phase {phase} is not in progress"));
            }
            Ok(vec![Event::AgentSession {
                attempt: ps.attempt,
                phase,
                session,
            }])
        }
        Input::AgentActivity { phase, events } => {
            let ps = phase_state(&phase)?;
            if ps.status != PhaseStatus::InProgress {
                return refuse(format!("phase {phase} is not in progress"));
            }
            Ok(vec![Event::AgentActivity {
                attempt: ps.attempt,
                phase,
                events,
            }])
        }
        Input::AgentEnded {
            phase,
            exit_code,
            version,
        } => {
            let ps = phase_state(&phase)?;
            if ps.status != PhaseStatus::InProgress {
                return refuse(format!("phase {phase} is not in progress"));
            }
            Ok(vec![Event::AgentEnded {
                attempt: ps.attempt,
                phase,
                exit_code,
                version,
            }])
        }
        Input::SwitchAgent { to, reason } => {
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
        Input::Process { phase, process } => {
            let ps = phase_state(&phase)?;
            if ps.status != PhaseStatus::InProgress {
                return refuse(format!("phase {phase} is not in progress"));
            }
            Ok(vec![Event::PhaseProcess {
                attempt: ps.attempt,
                phase,
                process,
            }])
        }
        Input::Pass {
            phase,
            summary,
            output,
            files_changed,
        } => {
            let ps = phase_state(&phase)?;
            if ps.status != PhaseStatus::InProgress {
                return refuse(format!("phase {phase} is not in progress"));
            }
            Ok(vec![Event::PhasePassed {
                attempt: ps.attempt,
                phase,
                summary,
                output,
                files_changed,
            }])
        }
        Input::TimerDue { phase } => {
            if !matches!(state.status, TaskStatus::Waiting | TaskStatus::Running) {
                return refuse(format!(
                    "task {} is {}",
                    state.task_id,
                    state.status.as_str()
                ));
            }
            let ps = phase_state(&phase)?;
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
        Input::Fail { phase, failure } => {
            let ps = phase_state(&phase)?;
            if ps.status != PhaseStatus::InProgress {
                return refuse(format!("phase {phase} is not in progress"));
            }
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
                match def.on_failure {
                    OnFailure::Skip => events.push(Event::PhaseSkipped {
                        reason: format!(
                            "failed {failures} time(s) ({}); on_failure = \"skip\"",
                            failure.message
                        ),
                        phase,
                    }),
                    OnFailure::Halt | OnFailure::Retry => events.push(Event::TaskFailed {
                        reason: format!(
                            "phase {phase} failed {failures} time(s): {}",
                            failure.message
                        ),
                        phase: Some(phase),
                    }),
                }
            }
            Ok(events)
        }
        Input::Skip { phase } => {
            running()?;
            match next(state, wf) {
                Next::Skip(n, reason) if n == phase => {
                    Ok(vec![Event::PhaseSkipped { phase, reason }])
                }
                other => refuse(format!(
                    "phase {phase} cannot be skipped now (next is {other:?})"
                )),
            }
        }
        Input::Wait { phase } => {
            running()?;
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
                WaitSpec::Event { event, matches } => WaitSpec::Event {
                    event: event.clone(),
                    matches: matches
                        .iter()
                        .map(|(k, v)| {
                            let value =
                                crate::template::render(v, |name| value_of(state, &phase, name));
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
        Input::Complete => {
            running()?;
            if let Some(p) = state.phases.iter().find(|p| !p.status.is_done()) {
                return refuse(format!("phase {} is {}", p.id, p.status.as_str()));
            }
            Ok(vec![Event::TaskCompleted])
        }
        Input::Interrupt { reason } => match state.in_progress() {
            Some(p) => Ok(vec![Event::PhaseInterrupted {
                phase: p.id.clone(),
                attempt: p.attempt,
                reason,
            }]),
            None => refuse("no phase is in progress"),
        },
        Input::Resume { crashed } => {
            let (from, note) = match state.status {
                TaskStatus::Running if crashed => {
                    let at = next_phase_name(state, wf);
                    let note = match state
                        .phase(&at)
                        .filter(|p| p.attempt > 0)
                        .and_then(|p| p.started_at.map(|t| (p.attempt, t)))
                    {
                        Some((n, t)) => format!(
                            "Resuming from {at} after a crash: attempt {n}, started at {t}, was interrupted and runs again from its start."
                        ),
                        None => format!("Resuming from {at} after a crash."),
                    };
                    ("CRASHED", note)
                }
                TaskStatus::Running => return refuse(format!("task {} is running", state.task_id)),
                TaskStatus::Failed => {
                    let failed = state
                        .phases
                        .iter()
                        .find(|p| p.status == PhaseStatus::Failed);
                    let note = match failed {
                        Some(p) => format!(
                            "Resuming from {} after it failed: {}",
                            p.id,
                            p.last_error.as_deref().unwrap_or("unknown error")
                        ),
                        None => "Resuming after a failure.".to_string(),
                    };
                    ("FAILED", note)
                }
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
        Input::Rewind { to } => {
            if state.in_progress().is_some() {
                return refuse("a phase is still in progress; interrupt it first");
            }
            phase_state(&to)?;
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
        Input::Cancel { reason } => {
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
                    reason: "cancelled".into(),
                });
            }
            events.push(Event::TaskCancelled { reason });
            Ok(events)
        }
        Input::Upgrade { to } => {
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
    }
}

/// The value of a template variable for a phase of a task (`brief` is the
/// engine's to fill in; here it is empty).
pub fn value_of(state: &TaskState, phase: &PhaseId, name: &str) -> Option<String> {
    match name {
        "task" => Some(state.description.clone()),
        "task_id" => Some(state.task_id.to_string()),
        "phase" => Some(phase.to_string()),
        "brief" => Some(String::new()),
        _ => {
            if let Some(f) = name.strip_prefix("flags.") {
                state.flags.get(f).map(|x| match x {
                    serde_json::Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
            } else {
                name.strip_prefix("labels.")
                    .and_then(|l| state.labels.get(l).cloned())
            }
        }
    }
}

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

fn in_order(wf: &Workflow, set: std::collections::HashSet<PhaseId>) -> Vec<PhaseId> {
    wf.phases
        .iter()
        .filter(|p| set.contains(&p.id))
        .map(|p| p.id.clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::EventRecord;
    use crate::ids::TaskId;
    use serde_json::{Value, json};
    use std::collections::BTreeMap;

    fn wf(src: &str) -> Workflow {
        Workflow::parse(src, "wf.toml", "wf", &|_| Err("no files".into())).unwrap()
    }

    fn new_task(flags: &[(&str, Value)]) -> NewTask {
        NewTask {
            task_id: TaskId::parse("t1").unwrap(),
            description: "d".into(),
            project_name: "p".into(),
            flags: flags
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect(),
            labels: BTreeMap::new(),
            tech_stack: Value::Null,
        }
    }

    /// A task driven by `inputs`, every event applied at `now`.
    struct Task {
        wf: Workflow,
        state: TaskState,
        journal: Vec<EventRecord>,
    }

    impl Task {
        fn new(wf: Workflow, flags: &[(&str, Value)]) -> Task {
            let rec = EventRecord {
                seq: 1,
                ts: Timestamp(0),
                event: create(&wf, new_task(flags)).unwrap(),
            };
            let state = initial(TaskId::parse("t1").unwrap(), &rec).unwrap();
            Task {
                wf,
                state,
                journal: vec![rec],
            }
        }
        fn input(&mut self, input: Input) {
            for event in decide(&self.state, &self.wf, input, Timestamp(0)).unwrap() {
                self.push(event);
            }
        }
        fn push(&mut self, event: Event) {
            let rec = EventRecord {
                seq: self.state.last_seq + 1,
                ts: Timestamp(0),
                event,
            };
            apply(&mut self.state, &rec);
            self.journal.push(rec);
            assert_eq!(
                replay(&self.state.task_id, &self.journal).as_ref(),
                Some(&self.state),
                "replay differs from the projection"
            );
        }
        fn pass(&mut self, p: &str) {
            let phase = PhaseId::parse(p).unwrap();
            self.input(Input::Start {
                phase: phase.clone(),
                checkpoint: None,
            });
            self.input(Input::Pass {
                phase,
                summary: "ok".into(),
                output: String::new(),
                files_changed: Vec::new(),
            });
        }
    }

    const FLAGS: &str = "name = \"wf\"\n[flags]\nsecurity = false\nretries = 2\nmode = \"fast\"\n[[phase]]\nid = \"a\"\nrun = \"true\"\n";

    #[test]
    fn flag_values_must_match_the_declared_type() {
        let w = wf(FLAGS);
        let text = |s: &str| Value::String(s.into());
        let flags = |given: &[(&str, Value)]| match create(&w, new_task(given)) {
            Ok(Event::TaskCreated { flags, .. }) => Ok(flags),
            Ok(other) => panic!("{other:?}"),
            Err(e) => Err(e.0),
        };
        let f = flags(&[
            ("security", text("true")),
            ("retries", text("5")),
            ("mode", text("42")),
        ])
        .unwrap();
        assert_eq!(f["security"], json!(true));
        assert_eq!(f["retries"], json!(5));
        assert_eq!(f["mode"], json!("42"), "a string flag keeps text");
        assert_eq!(
            flags(&[("security", json!(false))]).unwrap()["security"],
            json!(false)
        );
        assert_eq!(flags(&[]).unwrap()["retries"], json!(2));

        let e = flags(&[("security", text("maybe"))]).unwrap_err();
        assert!(
            e.contains("\"security\"") && e.contains("boolean") && e.contains("\"maybe\""),
            "{e}"
        );
        let e = flags(&[("security", text("1"))]).unwrap_err();
        assert!(e.contains("boolean") && e.contains("\"1\""), "{e}");
        let e = flags(&[("retries", text("lots"))]).unwrap_err();
        assert!(
            e.contains("\"retries\"") && e.contains("integer") && e.contains("\"lots\""),
            "{e}"
        );
        let e = flags(&[("retries", text("true"))]).unwrap_err();
        assert!(e.contains("integer"), "{e}");
        let e = flags(&[("nope", text("1"))]).unwrap_err();
        assert!(e.contains("no flag \"nope\""), "{e}");
        assert_eq!(flag_type(&json!(true)), "boolean");
        assert_eq!(flag_type(&json!(3)), "integer");
        assert_eq!(flag_type(&json!("x")), "string");
    }

    #[test]
    fn upgrade_adds_new_flags_with_their_defaults_keeping_set_ones() {
        let v1 = wf(
            "name = \"wf\"\n[flags]\nsecurity = false\n[[phase]]\nid = \"a\"\nrun = \"true\"\n[[phase]]\nid = \"b\"\nrun = \"true\"\n",
        );
        let mut t = Task::new(v1, &[("security", json!(true))]);
        t.pass("a");
        let v2 = wf(
            "name = \"wf\"\n[flags]\nsecurity = false\npr = true\nlevel = 3\n[[phase]]\nid = \"a\"\nrun = \"true\"\n[[phase]]\nid = \"b\"\nrun = \"echo {{flags.pr}}\"\n",
        );
        t.input(Input::Upgrade {
            to: Box::new(v2.clone()),
        });
        match &t.journal.last().unwrap().event {
            Event::DefinitionUpgraded { added_flags, .. } => {
                assert_eq!(
                    added_flags,
                    &BTreeMap::from([
                        ("level".to_string(), json!(3)),
                        ("pr".to_string(), json!(true))
                    ])
                );
            }
            other => panic!("{other:?}"),
        }
        t.wf = v2;
        assert_eq!(t.state.flags["security"], json!(true), "a set flag is kept");
        assert_eq!(t.state.flags["pr"], json!(true));
        assert_eq!(t.state.flags["level"], json!(3));

        // A journal written before the field existed still reads.
        let old: Event = serde_json::from_value(json!({
            "kind": "definition_upgraded", "from_hash": "a", "to_hash": "b",
            "phases": ["a"], "added": [], "removed": []
        }))
        .unwrap();
        assert!(
            matches!(old, Event::DefinitionUpgraded { added_flags, .. } if added_flags.is_empty())
        );
    }

    #[test]
    fn upgrade_changing_the_waiting_phase_waits_anew_as_now_defined() {
        let v1 = "name = \"wf\"\n[[phase]]\nid = \"a\"\nrun = \"true\"\n[[phase]]\nid = \"ok\"\nwait = { human = \"ok?\" }\n";
        let mut t = Task::new(wf(v1), &[]);
        t.pass("a");
        t.input(Input::Wait {
            phase: PhaseId::parse("ok").unwrap(),
        });
        assert_eq!(t.state.status, TaskStatus::Waiting);
        let v2 = wf(&v1.replace("wait = { human = \"ok?\" }", "run = \"echo x\""));
        t.input(Input::Upgrade {
            to: Box::new(v2.clone()),
        });
        t.wf = v2;
        assert_eq!(t.state.status, TaskStatus::Running);
        assert_eq!(t.state.phase("ok").unwrap().status, PhaseStatus::Pending);
        assert_eq!(
            next(&t.state, &t.wf),
            Next::Start(PhaseId::parse("ok").unwrap())
        );
    }

    #[test]
    fn wait_matches_are_filled_in_when_the_wait_starts() {
        let w = "name = \"wf\"\n[[phase]]\nid = \"pr\"\nwait = { event = \"github.pull_request.opened\", match = { \"task-id\" = \"{{labels.task-id}}\" } }\n";
        let mut t = Task::new(wf(w), &[]);
        t.input(Input::Wait {
            phase: PhaseId::parse("pr").unwrap(),
        });
        let desc = &t
            .state
            .phase("pr")
            .unwrap()
            .waiting
            .as_ref()
            .unwrap()
            .description;
        assert_eq!(
            desc,
            "the event github.pull_request.opened matching task-id=t1"
        );
    }

    #[test]
    fn upgrade_removing_the_waiting_phase_makes_the_task_run_again() {
        let v1 = wf(
            "name = \"wf\"\n[[phase]]\nid = \"a\"\nrun = \"true\"\n[[phase]]\nid = \"approve\"\nwait = { human = \"ok?\" }\n[[phase]]\nid = \"b\"\nrun = \"true\"\n",
        );
        let mut t = Task::new(v1, &[]);
        t.pass("a");
        t.input(Input::Wait {
            phase: PhaseId::parse("approve").unwrap(),
        });
        assert_eq!(t.state.status, TaskStatus::Waiting);
        assert_eq!(next(&t.state, &t.wf), Next::Stopped(TaskStatus::Waiting));

        // An upgrade that keeps the wait leaves the task waiting.
        let v2 = wf(
            "name = \"wf\"\n[[phase]]\nid = \"a\"\nrun = \"true\"\n[[phase]]\nid = \"approve\"\nwait = { human = \"ok?\" }\n[[phase]]\nid = \"b\"\nrun = \"echo b\"\n",
        );
        t.input(Input::Upgrade {
            to: Box::new(v2.clone()),
        });
        t.wf = v2;
        assert_eq!(t.state.status, TaskStatus::Waiting);

        let v3 = wf(
            "name = \"wf\"\n[[phase]]\nid = \"a\"\nrun = \"true\"\n[[phase]]\nid = \"b\"\nrun = \"echo b\"\n",
        );
        t.input(Input::Upgrade {
            to: Box::new(v3.clone()),
        });
        t.wf = v3;
        assert_eq!(t.state.status, TaskStatus::Running);
        assert_eq!(
            next(&t.state, &t.wf),
            Next::Start(PhaseId::parse("b").unwrap())
        );
        t.pass("b");
        t.input(Input::Complete);
        assert_eq!(t.state.status, TaskStatus::Complete);
    }

    #[test]
    fn rewinds_and_forks_set_the_resume_note_from_the_journal() {
        let w = wf(
            "name = \"wf\"\n[[phase]]\nid = \"a\"\nrun = \"true\"\n[[phase]]\nid = \"b\"\nrun = \"true\"\n",
        );
        let mut t = Task::new(w.clone(), &[]);
        t.pass("a");
        t.pass("b");
        t.input(Input::Complete);
        t.input(Input::Rewind {
            to: PhaseId::parse("b").unwrap(),
        });
        assert_eq!(
            t.state.resume_note.as_deref(),
            Some("Resuming from b: rewound by the user.")
        );

        let mut f = Task::new(w, &[]);
        let inherited = vec![t.state.phase("a").unwrap().clone()];
        f.push(Event::Adopted {
            source: "fork of t0 at b".into(),
            phases: inherited.clone(),
            iteration_counts: BTreeMap::new(),
            status: TaskStatus::Running,
            blockers: Vec::new(),
            failure: None,
        });
        assert_eq!(
            f.state.resume_note.as_deref(),
            Some("Forked: fork of t0 at b.")
        );
        f.pass("b");
        assert_eq!(f.state.resume_note, None, "a pass clears the note");

        let mut r = Task::new(t.wf.clone(), &[]);
        r.push(Event::Adopted {
            source: "rebuilt by `baton doctor --fix`".into(),
            phases: inherited,
            iteration_counts: BTreeMap::new(),
            status: TaskStatus::Running,
            blockers: Vec::new(),
            failure: None,
        });
        assert_eq!(r.state.resume_note, None);
    }
}
