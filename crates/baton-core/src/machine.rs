//! The task state machine: `next` says what should happen, `decide` checks an
//! input against the rules and returns the events it causes, `apply` folds an
//! event into the state. All three are pure: no IO, no clock, no randomness.
//!
//! This file holds the types the driver speaks in ([`Input`], [`Next`],
//! [`RuleError`]), `next` and `value_of`; the rules per input are in
//! `machine/decide.rs`, the folding of events in `machine/apply.rs` and task
//! creation in `machine/create.rs`.

mod apply;
mod create;
mod decide;

pub use apply::{apply, initial, replay, touched};
pub use create::{NewTask, create, flag_type, flag_value};
pub use decide::decide;

use crate::ids::PhaseId;
use crate::state::{Checkpoint, PhaseStatus, ProcessRef, TaskState, TaskStatus};
use crate::workflow::{PhaseKind, Workflow};
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

/// Why the attempt in progress of a cancelled task ended
/// (`phase_interrupted`'s reason): the word views tell a cancel by.
pub const CANCELLED: &str = "cancelled";

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
    /// The attempt's (last) process ended.
    Exited {
        phase: PhaseId,
        exit: crate::state::Exit,
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
    /// The event the waiting `phase` expects arrived (delivery `delivery`,
    /// named `event`): its facts become labels, and the phase passes.
    EventArrived {
        phase: PhaseId,
        event: String,
        delivery: String,
        facts: std::collections::BTreeMap<String, String>,
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
    /// A person answered the question the waiting `phase` asks
    /// (`wait = { human }`); `by` says who. One of its `options` when it
    /// has some. The phase passes with the answer as its summary.
    Answer {
        phase: PhaseId,
        answer: String,
        by: String,
    },
    /// The supervisor restarts the crashed task (the engine holds its
    /// lease and checked `supervisor::judge`).
    AutoRestart {
        reason: String,
    },
    /// The supervisor's limit is reached.
    GiveUpRestarts {
        reason: String,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{Event, EventRecord};
    use crate::ids::TaskId;
    use crate::time::Timestamp;
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
    fn an_answer_passes_a_human_wait_once_and_only_with_one_of_its_options() {
        let w = "name = \"wf\"\n[[phase]]\nid = \"ship\"\nwait = { human = \"Ship it?\", options = [\"yes\", \"no\"] }\n[[phase]]\nid = \"after\"\nrun = \"true\"\n";
        let mut t = Task::new(wf(w), &[]);
        let ship = PhaseId::parse("ship").unwrap();
        let answer = |a: &str| Input::Answer {
            phase: ship.clone(),
            answer: a.into(),
            by: "ana".into(),
        };
        // Not waiting yet: refused.
        assert!(decide(&t.state, &t.wf, answer("yes"), Timestamp(0)).is_err());
        t.input(Input::Wait {
            phase: ship.clone(),
        });
        let e = decide(&t.state, &t.wf, answer("maybe"), Timestamp(0)).unwrap_err();
        assert!(e.0.contains("answer one of yes, no"), "{}", e.0);
        t.input(answer(" yes "));
        assert_eq!(t.state.status, TaskStatus::Running);
        let p = t.state.phase("ship").unwrap();
        assert_eq!(
            (p.status, p.summary.as_deref()),
            (PhaseStatus::Pass, Some("yes"))
        );
        // Answered once.
        assert!(decide(&t.state, &t.wf, answer("no"), Timestamp(0)).is_err());
        // Another phase's kind of wait is not answered.
        let timer = "name = \"wf\"\n[[phase]]\nid = \"ship\"\nwait = { duration = \"1h\" }\n";
        let mut t = Task::new(wf(timer), &[]);
        t.input(Input::Wait {
            phase: ship.clone(),
        });
        assert!(decide(&t.state, &t.wf, answer("yes"), Timestamp(0)).is_err());
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
