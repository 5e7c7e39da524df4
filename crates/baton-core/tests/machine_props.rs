//! Property tests of the pure task state machine (`baton_core::machine`).
//!
//! Small random workflows (built as TOML and parsed like a real one) are
//! driven through random sequences of driver inputs: advancing, passing,
//! failing (and timing out), crashing and resuming, timers, rewinds and
//! cancels. Every step goes through `decide` and `apply` exactly as the
//! engine would use them, and the invariants below are checked after each
//! one:
//!
//! 1. at most one phase is IN_PROGRESS;
//! 2. exactly once: a phase passes at most once per iteration, and a
//!    COMPLETE task has every phase PASS or SKIPPED;
//! 3. a phase only starts once every phase it needs is PASS or SKIPPED;
//! 4. `iteration_counts` never exceed the phase's `max_iterations`;
//! 5. a COMPLETE task is never resumable;
//! 6. replaying the journal gives the incrementally built state.
//!
//! A few stricter properties (`next` agrees with `decide` and every task can
//! still finish, stopped tasks do not move, the task status agrees with its
//! phases) have their own proptests so that each one shrinks to its own
//! minimal counterexample; the bugs they found have deterministic
//! regression tests at the end of the file.

use baton_core::event::{Event, EventRecord};
use baton_core::ids::{PhaseId, TaskId};
use baton_core::lease::{DisplayStatus, Liveness};
use baton_core::machine::{self, Failure, Input, NewTask, Next, RuleError};
use baton_core::state::{PhaseStatus, TaskState, TaskStatus};
use baton_core::time::Timestamp;
use baton_core::workflow::Workflow;
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::fmt::{self, Write as _};

// ---------------------------------------------------------------------------
// Random workflows
// ---------------------------------------------------------------------------

/// One generated phase; references to other phases are resolved (so that the
/// result is always a valid DAG) when the TOML is built.
#[derive(Debug, Clone)]
struct PhaseSpec {
    /// `None`: the default (the previous phase). `Some(mask)`: an explicit
    /// `needs` list with the earlier phases whose bit is set (maybe empty).
    needs: Option<u8>,
    /// A `wait = { duration = "1h" }` phase instead of a `run` phase.
    wait: bool,
    /// Picks the `loop_to` target among the phase's ancestors.
    loop_pick: Option<u8>,
    max_iterations: u32,
    max_attempts: Option<u32>,
    on_failure: Option<usize>,
    /// `Some(negated)`: `when = "flags.x"` or `when = "!flags.x"`.
    when: Option<bool>,
}

fn phase_spec() -> impl Strategy<Value = PhaseSpec> {
    (
        prop::option::weighted(0.35, any::<u8>()),
        prop::bool::weighted(0.15),
        prop::option::weighted(0.4, any::<u8>()),
        1u32..=3,
        prop::option::of(1u32..=3),
        prop::option::of(0usize..3),
        prop::option::weighted(0.25, any::<bool>()),
    )
        .prop_map(
            |(needs, wait, loop_pick, max_iterations, max_attempts, on_failure, when)| PhaseSpec {
                needs,
                wait,
                loop_pick,
                max_iterations,
                max_attempts,
                on_failure,
                when,
            },
        )
}

/// The TOML text of a generated workflow (shown verbatim when a case fails).
#[derive(Clone)]
struct WfSrc(String);

impl fmt::Debug for WfSrc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "\n{}", self.0)
    }
}

fn build_toml(flag: bool, specs: &[PhaseSpec]) -> String {
    let mut s = format!("name = \"wf\"\n\n[flags]\nx = {flag}\n");
    let mut needs_of: Vec<Vec<usize>> = Vec::new();
    for (i, p) in specs.iter().enumerate() {
        let _ = write!(s, "\n[[phase]]\nid = \"p{i}\"\n");
        let needs: Vec<usize> = match p.needs {
            Some(mask) if i > 0 => {
                let n: Vec<usize> = (0..i).filter(|j| mask & (1 << j) != 0).collect();
                let list: Vec<String> = n.iter().map(|j| format!("\"p{j}\"")).collect();
                let _ = writeln!(s, "needs = [{}]", list.join(", "));
                n
            }
            _ if i > 0 => vec![i - 1],
            _ => Vec::new(),
        };
        let mut ancestors = BTreeSet::new();
        let mut stack = needs.clone();
        while let Some(j) = stack.pop() {
            if ancestors.insert(j) {
                stack.extend(needs_of[j].iter().copied());
            }
        }
        needs_of.push(needs);
        if p.wait {
            s.push_str("wait = { duration = \"1h\" }\n");
        } else {
            s.push_str("run = \"make step\"\n");
            if let Some(pick) = p.loop_pick
                && !ancestors.is_empty()
            {
                let ancestors: Vec<usize> = ancestors.into_iter().collect();
                let to = ancestors[pick as usize % ancestors.len()];
                let _ = writeln!(
                    s,
                    "loop_to = \"p{to}\"\nmax_iterations = {}",
                    p.max_iterations
                );
            }
            // Attempts and on_failure mean nothing to a wait phase (refused there).
            if let Some(m) = p.max_attempts {
                let _ = writeln!(s, "max_attempts = {m}");
            }
            if let Some(o) = p.on_failure {
                let _ = writeln!(s, "on_failure = \"{}\"", ["halt", "skip", "retry"][o]);
            }
        }
        if let Some(negated) = p.when {
            let _ = writeln!(s, "when = \"{}flags.x\"", if negated { "!" } else { "" });
        }
    }
    s
}

fn workflow_src() -> impl Strategy<Value = WfSrc> {
    (any::<bool>(), prop::collection::vec(phase_spec(), 2..=6))
        .prop_map(|(flag, specs)| WfSrc(build_toml(flag, &specs)))
}

fn parse_wf(src: &str) -> Workflow {
    Workflow::parse(src, "wf.toml", "wf", &|_| Err("none".into()))
        .unwrap_or_else(|e| panic!("generated workflow does not parse: {e}\n{src}"))
}

// ---------------------------------------------------------------------------
// Random driver actions
// ---------------------------------------------------------------------------

#[derive(Debug, Clone)]
enum Action {
    /// Do what `next` says (start, skip, wait or complete).
    Advance,
    /// The in-progress phase passes.
    Pass,
    /// The in-progress phase fails (exit 1, or a timeout).
    Fail { timed_out: bool },
    /// The process dies: interrupt, then resume as after a crash.
    Crash,
    /// `baton resume` of a failed or waiting task.
    Resume,
    /// A durable timer fires; `early` fires it before it is due.
    TimerDue { early: bool },
    /// `baton rewind` to the phase with this index (modulo the phase count).
    Rewind(usize),
    /// `baton cancel`.
    Cancel,
    /// Asks to start an arbitrary phase (usually refused).
    StartAny(usize),
}

fn action() -> impl Strategy<Value = Action> {
    prop_oneof![
        30 => Just(Action::Advance),
        25 => Just(Action::Pass),
        15 => any::<bool>().prop_map(|timed_out| Action::Fail { timed_out }),
        5 => Just(Action::Crash),
        8 => Just(Action::Resume),
        8 => any::<bool>().prop_map(|early| Action::TimerDue { early }),
        4 => (0usize..6).prop_map(Action::Rewind),
        1 => Just(Action::Cancel),
        4 => (0usize..6).prop_map(Action::StartAny),
    ]
}

fn actions() -> impl Strategy<Value = Vec<Action>> {
    prop::collection::vec(action(), 1..120)
}

// ---------------------------------------------------------------------------
// The simulated driver
// ---------------------------------------------------------------------------

/// Which of the stricter properties to check besides invariants 1–6.
#[derive(Debug, Clone, Copy, Default)]
struct Extra {
    /// Whenever `next` says Start/Skip/Wait/Complete, `decide` accepts it,
    /// and at the end the task can still be driven to COMPLETE.
    next_agrees_with_decide: bool,
    /// Phases only start, pass, fail, skip or wait while the task is RUNNING.
    stopped_tasks_do_not_move: bool,
    /// A RUNNING task has no WAITING phase; a WAITING task has exactly one.
    status_agrees_with_phases: bool,
}

/// What `decide` said: the events, or why the rule refused.
type Outcome = Result<Vec<Event>, RuleError>;

const T0: i64 = 1_700_000_000_000;
const STEP_MS: i64 = 1_000;

struct Sim {
    wf: Workflow,
    task_id: TaskId,
    state: TaskState,
    journal: Vec<EventRecord>,
    now: Timestamp,
    /// (phase, iteration) of every `PhasePassed` so far.
    passed: HashSet<(String, u32)>,
    /// `PhaseStarted` events per phase.
    starts: BTreeMap<String, u32>,
    extra: Extra,
    trace: Vec<String>,
}

fn describe(input: &Input) -> String {
    match input {
        Input::Start { phase, .. } => format!("Start({phase})"),
        Input::Pass { phase, .. } => format!("Pass({phase})"),
        Input::Fail { phase, failure } if failure.timed_out => format!("Fail({phase}, timed out)"),
        Input::Fail { phase, .. } => format!("Fail({phase})"),
        Input::Skip { phase } => format!("Skip({phase})"),
        Input::Wait { phase } => format!("Wait({phase})"),
        Input::TimerDue { phase } => format!("TimerDue({phase})"),
        Input::Complete => "Complete".into(),
        Input::Interrupt { .. } => "Interrupt".into(),
        Input::Resume { crashed } => format!("Resume {{ crashed: {crashed} }}"),
        Input::Rewind { to } => format!("Rewind({to})"),
        Input::Cancel { .. } => "Cancel".into(),
        other => format!("{other:?}"),
    }
}

fn describe_event(e: &Event) -> String {
    match e {
        Event::PhaseFailed { phase, retry, .. } => format!("phase_failed({phase}, retry={retry})"),
        Event::LoopedBack {
            from,
            to,
            iteration,
            ..
        } => format!("looped_back({from}->{to}, iteration={iteration})"),
        Event::Rewound { to, reset } => {
            let reset: Vec<&str> = reset.iter().map(PhaseId::as_str).collect();
            format!("rewound({to}, reset=[{}])", reset.join(","))
        }
        Event::TaskResumed { from, .. } => format!("task_resumed(from {from})"),
        other => match other.phase() {
            Some(p) => format!("{}({p})", other.kind()),
            None => other.kind().to_string(),
        },
    }
}

impl Sim {
    fn new(wf: Workflow, extra: Extra) -> Sim {
        let task_id = TaskId::parse("01-prop").expect("valid task id");
        let created = machine::create(
            &wf,
            NewTask {
                task_id: task_id.clone(),
                description: "a property test".into(),
                project_name: "proj".into(),
                flags: BTreeMap::new(),
                labels: BTreeMap::new(),
                tech_stack: serde_json::Value::Null,
            },
        )
        .expect("create");
        let now = Timestamp(T0);
        let record = EventRecord {
            seq: 1,
            ts: now,
            event: created,
        };
        let state = machine::initial(task_id.clone(), &record).expect("initial state");
        Sim {
            wf,
            task_id,
            state,
            journal: vec![record],
            now,
            passed: HashSet::new(),
            starts: BTreeMap::new(),
            extra,
            trace: Vec::new(),
        }
    }

    fn from_src(src: &str) -> Sim {
        Sim::new(parse_wf(src), Extra::default())
    }

    /// The workflow and the steps so far, for failure messages.
    fn ctx(&self) -> String {
        let statuses: Vec<String> = self
            .state
            .phases
            .iter()
            .map(|p| format!("{}={}#{}", p.id, p.status.as_str(), p.iteration))
            .collect();
        format!(
            "\n--- steps ---\n{}\n--- task {} [{}] ---",
            self.trace.join("\n"),
            self.state.status.as_str(),
            statuses.join(" ")
        )
    }

    fn phase_id(&self, i: usize) -> PhaseId {
        self.wf.phases[i % self.wf.phases.len()].id.clone()
    }

    fn status(&self, id: &str) -> PhaseStatus {
        self.state.phase(id).expect("known phase").status
    }

    /// Decides `input`, applies the events (checking each against the state
    /// it applies to), then checks every invariant.
    fn input(&mut self, input: Input) -> Result<Outcome, TestCaseError> {
        self.now = self.now.plus_millis(STEP_MS);
        let before = self.state.clone();
        let journal_len = self.journal.len();
        let result = machine::decide(&self.state, &self.wf, input.clone(), self.now);
        match &result {
            Err(e) => {
                self.trace
                    .push(format!("{} -> refused: {e}", describe(&input)));
                prop_assert_eq!(&self.state, &before, "a refused input changed the state");
                prop_assert_eq!(self.journal.len(), journal_len);
            }
            Ok(events) => {
                let kinds: Vec<String> = events.iter().map(describe_event).collect();
                self.trace
                    .push(format!("{} -> {}", describe(&input), kinds.join(", ")));
                for event in events {
                    self.check_event(event)?;
                    let record = EventRecord {
                        seq: self.journal.len() as u64 + 1,
                        ts: self.now,
                        event: event.clone(),
                    };
                    machine::apply(&mut self.state, &record);
                    self.journal.push(record);
                }
            }
        }
        self.check_invariants()?;
        Ok(result)
    }

    /// Checks an event against the state right before it is applied.
    fn check_event(&mut self, event: &Event) -> Result<(), TestCaseError> {
        if self.extra.stopped_tasks_do_not_move
            && matches!(
                event,
                Event::PhaseStarted { .. }
                    | Event::PhasePassed { .. }
                    | Event::PhaseFailed { .. }
                    | Event::PhaseSkipped { .. }
                    | Event::PhaseWaiting { .. }
                    | Event::LoopedBack { .. }
            )
        {
            prop_assert_eq!(
                self.state.status,
                TaskStatus::Running,
                "{} emitted while the task is {}{}",
                describe_event(event),
                self.state.status.as_str(),
                self.ctx()
            );
        }
        match event {
            Event::PhaseStarted {
                phase,
                attempt,
                iteration,
                ..
            } => {
                let ps = self.state.phase(phase.as_str()).expect("known phase");
                let def = self.wf.phase(phase.as_str()).expect("known phase");
                prop_assert_eq!(
                    ps.status,
                    PhaseStatus::Pending,
                    "{} started while not PENDING{}",
                    phase,
                    self.ctx()
                );
                // (3) no phase starts before everything it needs is done
                for n in &def.needs {
                    let st = self.status(n.as_str());
                    prop_assert!(
                        st.is_done(),
                        "(3) {} started while its need {} is {}{}",
                        phase,
                        n,
                        st.as_str(),
                        self.ctx()
                    );
                }
                prop_assert_eq!(
                    *attempt,
                    ps.attempt + 1,
                    "attempt numbers go up by one{}",
                    self.ctx()
                );
                prop_assert_eq!(*iteration, ps.iteration, "{}", self.ctx());
                *self.starts.entry(phase.to_string()).or_default() += 1;
            }
            Event::PhasePassed { phase, .. } => {
                let ps = self.state.phase(phase.as_str()).expect("known phase");
                prop_assert!(
                    matches!(ps.status, PhaseStatus::InProgress | PhaseStatus::Waiting),
                    "{} passed while {}{}",
                    phase,
                    ps.status.as_str(),
                    self.ctx()
                );
                if ps.status == PhaseStatus::Waiting
                    && let Some(due) = ps.waiting.as_ref().and_then(|w| w.due_at)
                {
                    prop_assert!(
                        due <= self.now,
                        "the timer of {} fired early{}",
                        phase,
                        self.ctx()
                    );
                }
                // (2) exactly once per (phase, iteration)
                prop_assert!(
                    self.passed.insert((phase.to_string(), ps.iteration)),
                    "(2) {} passed twice in iteration {}{}",
                    phase,
                    ps.iteration,
                    self.ctx()
                );
            }
            _ => {}
        }
        Ok(())
    }

    fn check_invariants(&self) -> Result<(), TestCaseError> {
        let s = &self.state;
        // (1) at most one phase in progress
        let in_progress: Vec<&str> = s
            .phases
            .iter()
            .filter(|p| p.status == PhaseStatus::InProgress)
            .map(|p| p.id.as_str())
            .collect();
        prop_assert!(
            in_progress.len() <= 1,
            "(1) several phases in progress: {:?}{}",
            in_progress,
            self.ctx()
        );
        // (2) a complete task has every phase done
        if s.status == TaskStatus::Complete {
            for p in &s.phases {
                prop_assert!(
                    p.status.is_done(),
                    "(2) task COMPLETE but {} is {}{}",
                    p.id,
                    p.status.as_str(),
                    self.ctx()
                );
            }
        }
        // (4) loops are bounded
        for (phase, count) in &s.iteration_counts {
            let def = self.wf.phase(phase);
            prop_assert!(
                def.is_some_and(|d| d.loop_to.is_some()),
                "(4) iteration count for {}{}",
                phase,
                self.ctx()
            );
            let max = def.map_or(0, |d| d.max_iterations);
            prop_assert!(
                *count <= max,
                "(4) {} looped {} times, max_iterations = {}{}",
                phase,
                count,
                max,
                self.ctx()
            );
        }
        // (5) a complete task is never resumable
        if s.status == TaskStatus::Complete {
            for liveness in [
                Liveness::Free,
                Liveness::Live,
                Liveness::Expired,
                Liveness::Dead("gone".into()),
            ] {
                prop_assert!(!DisplayStatus::of(TaskStatus::Complete, &liveness).resumable());
            }
            for crashed in [false, true] {
                let r = machine::decide(s, &self.wf, Input::Resume { crashed }, self.now);
                prop_assert!(
                    r.is_err(),
                    "(5) a COMPLETE task accepted Resume {{ crashed: {} }}{}",
                    crashed,
                    self.ctx()
                );
            }
        }
        // (6) replay equals the incremental state
        prop_assert_eq!(s.last_seq, self.journal.len() as u64);
        let replayed = machine::replay(&self.task_id, &self.journal);
        prop_assert!(
            replayed.as_ref() == Some(s),
            "(6) replay differs from the incremental state{}",
            self.ctx()
        );

        if self.extra.next_agrees_with_decide {
            let (said, input) = match machine::next(s, &self.wf) {
                Next::Start(phase) => (
                    format!("Start({phase})"),
                    Input::Start {
                        phase,
                        checkpoint: None,
                    },
                ),
                Next::Skip(phase, _) => (format!("Skip({phase})"), Input::Skip { phase }),
                Next::Wait(phase) => (format!("Wait({phase})"), Input::Wait { phase }),
                Next::Complete => ("Complete".into(), Input::Complete),
                _ => return Ok(()),
            };
            let r = machine::decide(s, &self.wf, input, self.now);
            prop_assert!(
                r.is_ok(),
                "next() says {} but decide refuses it: {}{}",
                said,
                r.err().map(|e| e.0).unwrap_or_default(),
                self.ctx()
            );
        }
        if self.extra.status_agrees_with_phases {
            let waiting = s
                .phases
                .iter()
                .filter(|p| p.status == PhaseStatus::Waiting)
                .count();
            match s.status {
                TaskStatus::Running => prop_assert_eq!(
                    waiting,
                    0,
                    "a RUNNING task has a WAITING phase{}",
                    self.ctx()
                ),
                TaskStatus::Waiting => prop_assert_eq!(
                    waiting,
                    1,
                    "a WAITING task has no WAITING phase{}",
                    self.ctx()
                ),
                _ => {}
            }
        }
        Ok(())
    }

    fn pass(&mut self, phase: PhaseId) -> Result<Outcome, TestCaseError> {
        let summary = format!("{phase} done");
        let file = format!("{phase}.txt");
        self.input(Input::Pass {
            phase,
            summary,
            output: "ok".into(),
            files_changed: vec![file],
        })
    }

    fn fail(&mut self, phase: PhaseId, timed_out: bool) -> Result<Outcome, TestCaseError> {
        let failure = if timed_out {
            Failure {
                message: "timed out after 1h".into(),
                exit_code: None,
                timed_out: true,
                ..Failure::default()
            }
        } else {
            Failure {
                message: "exit status 1".into(),
                exit_code: Some(1),
                stderr_tail: "error: it broke".into(),
                ..Failure::default()
            }
        };
        self.input(Input::Fail { phase, failure })
    }

    /// Does what `next` says; `None` when it says to do nothing.
    fn advance(&mut self) -> Result<Option<Outcome>, TestCaseError> {
        let input = match machine::next(&self.state, &self.wf) {
            Next::Start(phase) => Input::Start {
                phase,
                checkpoint: None,
            },
            Next::Skip(phase, _) => Input::Skip { phase },
            Next::Wait(phase) => Input::Wait { phase },
            Next::Complete => Input::Complete,
            Next::InProgress(_) | Next::Waiting(_) | Next::Stopped(_) => return Ok(None),
        };
        self.input(input).map(Some)
    }

    /// Performs one random action. Refusals are fine: `input` already
    /// checked that a refused input changed nothing.
    fn act(&mut self, action: &Action) -> Result<(), TestCaseError> {
        let target = self.state.in_progress().map(|p| p.id.clone());
        match action {
            Action::Advance => {
                self.advance()?;
            }
            Action::Pass => {
                let phase = target.unwrap_or_else(|| self.phase_id(0));
                self.pass(phase)?.ok();
            }
            Action::Fail { timed_out } => {
                let phase = target.unwrap_or_else(|| self.phase_id(0));
                self.fail(phase, *timed_out)?.ok();
            }
            Action::Crash => {
                self.input(Input::Interrupt {
                    reason: "the process died".into(),
                })?
                .ok();
                // Only a RUNNING task can be found CRASHED (see `DisplayStatus`).
                if self.state.status == TaskStatus::Running {
                    self.input(Input::Resume { crashed: true })?.ok();
                }
            }
            Action::Resume => {
                self.input(Input::Resume { crashed: false })?.ok();
            }
            Action::TimerDue { early } => {
                let waiting = self
                    .state
                    .waiting_phase()
                    .map(|p| (p.id.clone(), p.waiting.as_ref().and_then(|w| w.due_at)));
                match waiting {
                    Some((phase, due)) => {
                        if !early && let Some(due) = due {
                            self.now = self.now.max(due);
                        }
                        let r = self.input(Input::TimerDue { phase })?;
                        if *early {
                            prop_assert!(
                                r.is_err(),
                                "a timer fired before it was due{}",
                                self.ctx()
                            );
                        }
                    }
                    None => {
                        let phase = self.phase_id(0);
                        self.input(Input::TimerDue { phase })?.ok();
                    }
                }
            }
            Action::Rewind(i) => {
                let to = self.phase_id(*i);
                self.input(Input::Rewind { to })?.ok();
            }
            Action::Cancel => {
                self.input(Input::Cancel {
                    reason: "cancelled by the user".into(),
                })?
                .ok();
            }
            Action::StartAny(i) => {
                let phase = self.phase_id(*i);
                self.input(Input::Start {
                    phase,
                    checkpoint: None,
                })?
                .ok();
            }
        }
        Ok(())
    }
}

impl Sim {
    /// Drives the task to the end as if every phase now passed: it resumes a
    /// failed task, fires due timers and does what `next` says. Every task
    /// that is not CANCELLED must reach COMPLETE this way.
    fn finish(&mut self) -> Result<(), TestCaseError> {
        for _ in 0..200 {
            if matches!(
                self.state.status,
                TaskStatus::Complete | TaskStatus::Cancelled
            ) {
                return Ok(());
            }
            let timer = |sim: &mut Sim, phase: PhaseId| {
                let due = sim
                    .state
                    .phase(phase.as_str())
                    .and_then(|p| p.waiting.as_ref())
                    .and_then(|w| w.due_at);
                if let Some(due) = due {
                    sim.now = sim.now.max(due);
                }
                Input::TimerDue { phase }
            };
            let input = match machine::next(&self.state, &self.wf) {
                Next::Start(phase) => Input::Start {
                    phase,
                    checkpoint: None,
                },
                Next::Skip(phase, _) => Input::Skip { phase },
                Next::Wait(phase) => Input::Wait { phase },
                Next::Complete => Input::Complete,
                Next::InProgress(phase) => Input::Pass {
                    summary: format!("{phase} done"),
                    phase,
                    output: String::new(),
                    files_changed: Vec::new(),
                },
                Next::Waiting(phase) => timer(self, phase),
                Next::Stopped(TaskStatus::Failed) => Input::Resume { crashed: false },
                Next::Stopped(TaskStatus::Waiting) => match self.state.waiting_phase() {
                    Some(p) => {
                        let phase = p.id.clone();
                        timer(self, phase)
                    }
                    None => {
                        return Err(TestCaseError::fail(format!(
                            "a WAITING task has no WAITING phase{}",
                            self.ctx()
                        )));
                    }
                },
                Next::Stopped(other) => {
                    return Err(TestCaseError::fail(format!(
                        "next() says Stopped({other:?}){}",
                        self.ctx()
                    )));
                }
            };
            let what = describe(&input);
            let r = self.input(input)?;
            prop_assert!(
                r.is_ok(),
                "finishing the task: {} refused: {}{}",
                what,
                r.err().map(|e| e.0).unwrap_or_default(),
                self.ctx()
            );
        }
        Err(TestCaseError::fail(format!(
            "the task never finished{}",
            self.ctx()
        )))
    }
}

fn run(src: &WfSrc, actions: &[Action], extra: Extra) -> Result<(), TestCaseError> {
    let mut sim = Sim::new(parse_wf(&src.0), extra);
    sim.check_invariants()?;
    for a in actions {
        sim.act(a)?;
    }
    if extra.next_agrees_with_decide {
        sim.finish()?;
    }
    Ok(())
}

fn config() -> ProptestConfig {
    ProptestConfig {
        // no regression files next to the tests
        failure_persistence: None,
        ..ProptestConfig::with_cases(256)
    }
}

proptest! {
    #![proptest_config(config())]

    /// Invariants 1–6 hold after every step of any driver behaviour.
    #[test]
    fn machine_invariants_hold(src in workflow_src(), actions in actions()) {
        run(&src, &actions, Extra::default())?;
    }

    /// Whatever `next` tells the driver to do, `decide` accepts, and from any
    /// point a task that is not CANCELLED can still be driven to COMPLETE.
    #[test]
    fn every_task_can_still_finish(src in workflow_src(), actions in actions()) {
        run(&src, &actions, Extra { next_agrees_with_decide: true, ..Extra::default() })?;
    }

    /// No phase starts, passes, fails, waits or is skipped while the task is
    /// not RUNNING (e.g. after it was cancelled).
    #[test]
    fn stopped_tasks_do_not_move(src in workflow_src(), actions in actions()) {
        run(&src, &actions, Extra { stopped_tasks_do_not_move: true, ..Extra::default() })?;
    }

    /// The stored task status agrees with the phases: WAITING iff a phase waits.
    #[test]
    fn status_agrees_with_phases(src in workflow_src(), actions in actions()) {
        run(&src, &actions, Extra { status_agrees_with_phases: true, ..Extra::default() })?;
    }
}

// ---------------------------------------------------------------------------
// Scenarios users would notice
// ---------------------------------------------------------------------------

/// A failed check, shown with its real line breaks by the test harness.
struct Failed(TestCaseError);

impl fmt::Debug for Failed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl From<TestCaseError> for Failed {
    fn from(e: TestCaseError) -> Self {
        Failed(e)
    }
}

fn pid(s: &str) -> PhaseId {
    PhaseId::parse(s).expect("valid phase id")
}

/// Runs the task to a stop: every started phase passes unless `fails` says so.
fn drive(sim: &mut Sim, fails: impl Fn(&str) -> bool) -> Result<(), TestCaseError> {
    for _ in 0..100 {
        match machine::next(&sim.state, &sim.wf) {
            Next::Stopped(_) => return Ok(()),
            Next::InProgress(p) => {
                if fails(p.as_str()) {
                    sim.fail(p, false)?.map_err(|e| TestCaseError::fail(e.0))?;
                } else {
                    sim.pass(p)?.map_err(|e| TestCaseError::fail(e.0))?;
                }
            }
            Next::Waiting(p) => return Err(TestCaseError::fail(format!("{p} waits"))),
            _ => {
                sim.advance()?
                    .expect("something to do")
                    .map_err(|e| TestCaseError::fail(e.0))?;
            }
        }
    }
    Err(TestCaseError::fail(format!(
        "the task never stopped{}",
        sim.ctx()
    )))
}

#[test]
fn failing_validate_loops_back_until_max_iterations_then_fails() -> Result<(), Failed> {
    let mut sim = Sim::from_src(
        r#"
name = "wf"
[[phase]]
id = "analyze"
run = "make analyze"
[[phase]]
id = "execute"
run = "make execute"
[[phase]]
id = "validate"
run = "make test"
loop_to = "execute"
max_iterations = 2
"#,
    );
    drive(&mut sim, |p| p == "validate")?;
    let s = &sim.state;
    assert_eq!(s.status, TaskStatus::Failed, "{}", sim.ctx());
    assert_eq!(s.iteration_counts.get("validate"), Some(&2));
    assert_eq!(sim.starts.get("analyze"), Some(&1), "analyze runs once");
    assert_eq!(sim.starts.get("execute"), Some(&3), "execute runs 3 times");
    assert_eq!(
        sim.starts.get("validate"),
        Some(&3),
        "validate runs 3 times"
    );
    assert_eq!(s.phase("execute").unwrap().iteration, 2);
    assert_eq!(s.phase("execute").unwrap().status, PhaseStatus::Pass);
    assert_eq!(s.phase("validate").unwrap().status, PhaseStatus::Failed);
    assert!(
        s.failure
            .as_deref()
            .unwrap_or_default()
            .contains("validate"),
        "{:?}",
        s.failure
    );
    // resuming the failed task retries validate, without more loops
    sim.input(Input::Resume { crashed: false })?
        .expect("resumable");
    assert!(s_note(&sim).contains("validate"), "{}", s_note(&sim));
    assert_eq!(
        machine::next(&sim.state, &sim.wf),
        Next::Start(pid("validate"))
    );
    Ok(())
}

fn s_note(sim: &Sim) -> String {
    sim.state.resume_note.clone().unwrap_or_default()
}

#[test]
fn on_failure_skip_skips_after_max_attempts_and_the_task_completes() -> Result<(), Failed> {
    let mut sim = Sim::from_src(
        r#"
name = "wf"
[[phase]]
id = "build"
run = "make"
[[phase]]
id = "lint"
run = "make lint"
max_attempts = 2
on_failure = "skip"
[[phase]]
id = "ship"
run = "make ship"
"#,
    );
    drive(&mut sim, |p| p == "lint")?;
    let s = &sim.state;
    assert_eq!(s.status, TaskStatus::Complete, "{}", sim.ctx());
    let lint = s.phase("lint").unwrap();
    assert_eq!(lint.status, PhaseStatus::Skipped);
    assert_eq!(lint.attempt, 2);
    assert_eq!(
        sim.starts.get("lint"),
        Some(&2),
        "lint ran max_attempts times"
    );
    assert_eq!(s.phase("ship").unwrap().status, PhaseStatus::Pass);
    let retries: Vec<bool> = sim
        .journal
        .iter()
        .filter_map(|r| match &r.event {
            Event::PhaseFailed { retry, .. } => Some(*retry),
            _ => None,
        })
        .collect();
    assert_eq!(retries, [true, false]);
    Ok(())
}

#[test]
fn crash_mid_phase_then_resume_reruns_that_phase() -> Result<(), Failed> {
    let mut sim = Sim::from_src(
        r#"
name = "wf"
[[phase]]
id = "plan"
run = "make plan"
[[phase]]
id = "implement"
run = "make implement"
[[phase]]
id = "review"
run = "make review"
"#,
    );
    sim.advance()?.unwrap().unwrap();
    sim.pass(pid("plan"))?.unwrap();
    sim.advance()?.unwrap().unwrap();
    assert_eq!(sim.state.phase("implement").unwrap().attempt, 1);
    // the process dies mid-phase
    sim.input(Input::Interrupt {
        reason: "pid 42 has exited".into(),
    })?
    .unwrap();
    assert_eq!(sim.status("implement"), PhaseStatus::Pending);
    sim.input(Input::Resume { crashed: true })?.unwrap();
    let note = s_note(&sim);
    assert!(note.contains("implement"), "resume note {note:?}");
    assert_eq!(
        machine::next(&sim.state, &sim.wf),
        Next::Start(pid("implement"))
    );
    sim.advance()?.unwrap().unwrap();
    let implement = sim.state.phase("implement").unwrap();
    assert_eq!(implement.status, PhaseStatus::InProgress);
    assert_eq!(implement.attempt, 2, "the re-run is a new attempt");
    assert_eq!(implement.failures, 0, "a crash is not a failed attempt");
    assert_eq!(sim.status("plan"), PhaseStatus::Pass, "plan is not re-run");
    drive(&mut sim, |_| false)?;
    assert_eq!(sim.state.status, TaskStatus::Complete);
    assert_eq!(sim.starts.get("plan"), Some(&1));
    assert_eq!(sim.starts.get("implement"), Some(&2));
    Ok(())
}

#[test]
fn rewinding_a_complete_task_resets_the_phase_and_everything_after() -> Result<(), Failed> {
    let mut sim = Sim::from_src(
        r#"
name = "wf"
[[phase]]
id = "a"
run = "make a"
[[phase]]
id = "b"
run = "make b"
[[phase]]
id = "c"
run = "make c"
[[phase]]
id = "d"
run = "make d"
"#,
    );
    drive(&mut sim, |_| false)?;
    assert_eq!(sim.state.status, TaskStatus::Complete);
    assert!(!DisplayStatus::of(sim.state.status, &Liveness::Free).resumable());
    sim.input(Input::Rewind { to: pid("b") })?.unwrap();
    let s = &sim.state;
    assert_eq!(s.status, TaskStatus::Running);
    let a = s.phase("a").unwrap();
    assert_eq!(a.status, PhaseStatus::Pass);
    assert_eq!(a.summary.as_deref(), Some("a done"));
    assert_eq!(a.iteration, 0);
    for id in ["b", "c", "d"] {
        let p = s.phase(id).unwrap();
        assert_eq!(p.status, PhaseStatus::Pending, "{id}");
        assert_eq!(p.summary, None, "{id}");
        assert_eq!(p.iteration, 1, "{id}");
    }
    assert_eq!(machine::next(s, &sim.wf), Next::Start(pid("b")));
    drive(&mut sim, |_| false)?;
    assert_eq!(sim.state.status, TaskStatus::Complete);
    assert_eq!(sim.starts.get("a"), Some(&1));
    assert_eq!(sim.starts.get("b"), Some(&2));
    assert_eq!(sim.starts.get("d"), Some(&2));
    Ok(())
}

// ---------------------------------------------------------------------------
// Regressions found by the properties above
// ---------------------------------------------------------------------------

/// `plan`, then two independent branches: `build` (needs plan) and `docs`
/// (needs plan).
const TWO_BRANCHES: &str = r#"
name = "wf"
[[phase]]
id = "plan"
run = "make plan"
[[phase]]
id = "build"
run = "make build"
[[phase]]
id = "docs"
needs = ["plan"]
run = "make docs"
"#;

/// Rewinding a FAILED task to a phase on another branch must not leave the
/// failed phase FAILED in a RUNNING task (it could then never complete):
/// `baton resume ID --from docs` on the failed task resets `build` too.
#[test]
fn rewinding_a_failed_task_to_another_branch_can_still_finish() -> Result<(), Failed> {
    let mut sim = Sim::new(
        parse_wf(TWO_BRANCHES),
        Extra {
            next_agrees_with_decide: true,
            ..Extra::default()
        },
    );
    sim.advance()?.unwrap().unwrap(); // start plan
    sim.pass(pid("plan"))?.unwrap();
    sim.advance()?.unwrap().unwrap(); // start build
    sim.fail(pid("build"), false)?.unwrap(); // halt: the task is FAILED
    assert_eq!(sim.state.status, TaskStatus::Failed);
    sim.input(Input::Rewind { to: pid("docs") })?.unwrap();
    // The failed `build` is reset along with `docs`, so both run again.
    assert_eq!(
        sim.state.phase("build").unwrap().status,
        baton_core::PhaseStatus::Pending
    );
    Ok(sim.finish()?)
}

/// Cancelling a WAITING task leaves its phase WAITING with a due timer, and
/// `TimerDue` then passes the phase of the CANCELLED task. (The engine's
/// drive loop stops at `Stopped(Cancelled)` first; the rule itself should
/// refuse.)
#[test]
fn a_cancelled_task_does_not_pass_its_timer() -> Result<(), Failed> {
    let mut sim = Sim::new(
        parse_wf(
            r#"
name = "wf"
[[phase]]
id = "cooldown"
wait = { duration = "1h" }
[[phase]]
id = "deploy"
run = "make deploy"
"#,
        ),
        Extra {
            stopped_tasks_do_not_move: true,
            ..Extra::default()
        },
    );
    sim.advance()?.unwrap().unwrap(); // cooldown waits
    sim.input(Input::Cancel {
        reason: "not needed".into(),
    })?
    .unwrap();
    assert_eq!(sim.state.status, TaskStatus::Cancelled);
    sim.now = sim.now.plus_millis(2 * 3_600_000);
    sim.input(Input::TimerDue {
        phase: pid("cooldown"),
    })?
    .ok();
    assert_ne!(sim.status("cooldown"), PhaseStatus::Pass, "{}", sim.ctx());
    Ok(())
}

const WAIT_THEN_RUN: &str = r#"
name = "wf"
[[phase]]
id = "cooldown"
wait = { duration = "1h" }
[[phase]]
id = "deploy"
run = "make deploy"
"#;

/// `baton resume` of a WAITING task (Resume { crashed: false }) makes it
/// RUNNING while its phase stays WAITING: nobody holds the lease, so it
/// shows as CRASHED, and `next` says Waiting so a driver has nothing to do.
/// (The engine's `resume` does not send this input for a WAITING task today;
/// the rule accepts it.)
#[test]
fn resuming_a_waiting_task_keeps_status_and_phases_in_step() -> Result<(), Failed> {
    let mut sim = Sim::new(
        parse_wf(WAIT_THEN_RUN),
        Extra {
            status_agrees_with_phases: true,
            ..Extra::default()
        },
    );
    sim.advance()?.unwrap().unwrap(); // cooldown waits
    assert_eq!(sim.state.status, TaskStatus::Waiting);
    sim.input(Input::Resume { crashed: false })?.ok();
    let shown = DisplayStatus::of(sim.state.status, &Liveness::Free);
    assert_ne!(shown, DisplayStatus::Crashed, "{}", sim.ctx());
    Ok(())
}

/// Rewinding a WAITING task to a phase that does not lead to the waiting
/// one makes the task RUNNING while that phase stays WAITING; with no lease
/// holder it then shows as CRASHED. Reachable: `baton resume ID --from lint`.
#[test]
fn rewinding_a_waiting_task_keeps_status_and_phases_in_step() -> Result<(), Failed> {
    let mut sim = Sim::new(
        parse_wf(
            r#"
name = "wf"
[[phase]]
id = "cooldown"
wait = { duration = "1h" }
[[phase]]
id = "lint"
needs = []
run = "make lint"
"#,
        ),
        Extra {
            status_agrees_with_phases: true,
            ..Extra::default()
        },
    );
    sim.advance()?.unwrap().unwrap(); // cooldown waits
    assert_eq!(sim.state.status, TaskStatus::Waiting);
    sim.input(Input::Rewind { to: pid("lint") })?.ok();
    Ok(())
}
