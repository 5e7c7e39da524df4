//! The engine: creates tasks, holds their leases, runs their phases one at a
//! time and commits every transition through the pure state machine.

use crate::error::{Error, Result};
use crate::git::Git;
use crate::process::{self, Stop, Waited};
use crate::project::Project;
use crate::workspace::Workspace;

mod agent;
use crate::{host, render};
use baton_core::agent_stream::FailureKind;
use baton_core::lease::{self, DisplayStatus, Lease, LeaseOwner, Liveness, LocalHost};
use baton_core::machine::{self, Failure, Input, NewTask, Next};
use baton_core::state::{AgentSession, Checkpoint, PhaseStatus, SessionStart, TaskStatus};
use baton_core::workflow::{PhaseKind, Workflow};
use baton_core::{
    Clock, Event, EventRecord, TaskId, TaskState, Timestamp, brief, document, template,
};
use baton_store::{
    Acquire, Holder, PhaseWrites, RenewOutcome, Store, StoredDefinition, TaskSnapshot, TaskSummary,
};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// The largest argument (or environment value) baton passes to a phase
/// process. Linux refuses any single one over 128 KiB (E2BIG, "Argument
/// list too long"); failing below that with a clear message beats a spawn
/// error that repeats on every attempt.
const MAX_ARG_BYTES: usize = 100_000;

/// How a drive of a task ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Complete,
    Failed(String),
    Waiting(String),
    Cancelled,
    /// baton was stopped by a signal; the phase it ran was interrupted.
    Interrupted(String),
    /// `run --queue`: stored for a worker to run.
    Queued,
}

impl Outcome {
    pub fn exit(&self) -> baton_core::Exit {
        use baton_core::Exit;
        match self {
            Outcome::Complete | Outcome::Queued => Exit::Done,
            Outcome::Failed(_) | Outcome::Cancelled | Outcome::Interrupted(_) => Exit::Failed,
            Outcome::Waiting(_) => Exit::Waiting,
        }
    }
}

/// Where the engine reports progress; the CLI decides how it looks.
pub trait Observer: Send + Sync {
    fn task_started(&self, _task: &TaskId, _workflow: &str) {}
    fn phase_started(&self, _task: &TaskId, _phase: &str, _attempt: u32, _kind: &str) {}
    fn phase_finished(
        &self,
        _task: &TaskId,
        _phase: &str,
        _status: PhaseStatus,
        _elapsed_ms: i64,
        _detail: &str,
    ) {
    }
    /// A remark for the user (warnings, what was repaired).
    fn info(&self, _message: &str) {}
}

/// An observer that reports nothing.
pub struct Silent;
impl Observer for Silent {}

pub struct SystemClock;
impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        Timestamp(jiff::Timestamp::now().as_millisecond())
    }
}

#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    pub workflow: String,
    pub description: String,
    pub id: Option<String>,
    pub flags: Vec<String>,
    pub labels: Vec<String>,
    pub agent: Option<String>,
    /// Create the task and return without running it, still holding its
    /// lease for the background process that takes it over (`--detach`).
    pub create_only: bool,
    /// Queue the task for `baton worker` instead of running it.
    pub queue: bool,
    /// The task continues a session begun outside baton (`baton import`).
    pub imported: Option<Imported>,
}

/// A CLI session begun outside baton, read from its native transcript.
#[derive(Debug, Clone)]
pub struct Imported {
    pub session: AgentSession,
    pub first_prompt: Option<String>,
    pub events: Vec<baton_core::agent_stream::AgentEvent>,
}

/// The workflow `baton import` uses when `.baton/workflows/continue.toml`
/// does not exist: one agent phase that goes on with the imported work.
pub const CONTINUE_WORKFLOW: &str = "name = \"continue\"\n\n[[phase]]\nid = \"continue\"\nprompt = \"\"\"\nContinue the work of the session below, which began outside baton, and finish it.\n\n{{brief}}\n\"\"\"\n";

#[derive(Debug, Clone, Default)]
pub struct ResumeOptions {
    /// A live process on this host whose lease may be taken over: the
    /// `baton run --detach` that started this background resume.
    pub takeover_from: Option<u32>,
    pub from: Option<String>,
    pub agent: Option<String>,
    /// `baton handoff`: the agent switch is a handoff (same effect as
    /// `--agent`, named so in the journal).
    pub handoff: bool,
    pub upgrade: bool,
}

pub struct Engine {
    pub project: Project,
    pub store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    observer: Arc<dyn Observer>,
    owner: LeaseOwner,
    local: LocalHost,
    ttl_ms: i64,
    git: Option<Git>,
    /// Test hook (`BATON_TEST_CRASH_AT=POINT:PHASE`): SIGKILL ourselves there.
    crash_at: Option<String>,
    /// Set by the CLI's signal handlers (SIGINT, SIGTERM, SIGHUP).
    interrupt: Arc<AtomicBool>,
    /// A worker's: where the running phases' process groups are listed
    /// for its watchdog.
    phase_groups: Option<Arc<process::PhaseGroups>>,
    pub command: String,
}

/// A task a worker slot has just claimed (its lease taken).
#[derive(Debug)]
pub struct Claimed {
    pub id: TaskId,
    lease: Lease,
}

/// A task whose lease this process holds.
struct Held {
    state: TaskState,
    wf: Workflow,
    lease: Lease,
    hb: Heartbeat,
    /// Where its phases run.
    ws: Workspace,
}

impl Engine {
    pub fn open(project: Project, observer: Arc<dyn Observer>) -> Result<Engine> {
        let store = crate::store::Location::of(&project)?.open()?;
        Self::with_store(project, store, Arc::new(SystemClock), observer)
    }

    pub fn with_store(
        project: Project,
        store: Arc<dyn Store>,
        clock: Arc<dyn Clock>,
        observer: Arc<dyn Observer>,
    ) -> Result<Engine> {
        let ttl_ms = project.config.lease_ttl_ms()?;
        let git = Git::open(&project.root);
        Ok(Engine {
            store,
            clock,
            observer,
            owner: host::this_owner(),
            local: host::local_host(),
            ttl_ms,
            git,
            crash_at: std::env::var("BATON_TEST_CRASH_AT").ok(),
            interrupt: Arc::new(AtomicBool::new(false)),
            phase_groups: None,
            command: "baton".into(),
            project,
        })
    }

    /// Shares a flag that, once set, makes the engine stop the running
    /// phase (killing its process group), record the interruption and return.
    pub fn with_interrupt(mut self, flag: Arc<AtomicBool>) -> Self {
        self.interrupt = flag;
        self
    }

    /// A worker's engines list their phases' process groups for the
    /// worker's watchdog.
    pub fn with_phase_groups(mut self, groups: Arc<process::PhaseGroups>) -> Self {
        self.phase_groups = Some(groups);
        self
    }

    fn now(&self) -> Timestamp {
        self.clock.now()
    }

    fn crash_point(&self, point: &str, phase: &str) {
        if self.crash_at.as_deref() == Some(&format!("{point}:{phase}")) {
            let _ =
                nix::sys::signal::kill(nix::unistd::Pid::this(), nix::sys::signal::Signal::SIGKILL);
        }
    }

    // ----- reading -------------------------------------------------------

    pub fn liveness(&self, lease: Option<&Lease>) -> Liveness {
        lease::classify(lease, self.now(), &self.local, host::process_start_time)
    }

    pub fn display_status(&self, status: TaskStatus, lease: Option<&Lease>) -> DisplayStatus {
        DisplayStatus::of(status, &self.liveness(lease))
    }

    /// A task's status as users see it (QUEUED, CRASHED, … included).
    pub fn status_of(&self, snap: &TaskSnapshot) -> DisplayStatus {
        DisplayStatus::of_task(
            snap.state.status,
            &self.liveness(snap.lease.as_ref()),
            snap.queued,
        )
    }

    pub fn list(&self) -> Result<Vec<(TaskSummary, DisplayStatus)>> {
        Ok(self
            .store
            .list()?
            .into_iter()
            .map(|t| {
                let d =
                    DisplayStatus::of_task(t.status, &self.liveness(t.lease.as_ref()), t.queued);
                (t, d)
            })
            .collect())
    }

    pub fn load(&self, id: &TaskId) -> Result<TaskSnapshot> {
        self.store.load(id)?.ok_or_else(|| {
            Error::bad_input(format!("no task {id}")).hint("run `baton ls --all` to see the tasks")
        })
    }

    /// The definition a task was started with.
    pub fn pinned(&self, hash: &str) -> Result<Workflow> {
        let def = self
            .store
            .definition(hash)?
            .ok_or_else(|| Error::op(format!("the store lacks workflow definition {hash}")))?;
        serde_json::from_str(&def.json)
            .map_err(|e| Error::op(format!("workflow definition {hash} is damaged: {e}")))
    }

    /// The state document of a task (what `show --json` prints).
    pub fn document(&self, snap: &TaskSnapshot) -> Result<serde_json::Value> {
        let wf = self.pinned(&snap.state.definition_hash)?;
        let status = self.status_of(snap);
        Ok(document::render(
            &snap.state,
            &wf,
            status,
            snap.lease.as_ref(),
        ))
    }

    /// Re-renders `state.json` if it is missing or damaged; says so.
    pub fn repair_rendered(&self, snap: &TaskSnapshot) -> Result<bool> {
        let dir = self.project.task_dir(&snap.state.task_id);
        let path = dir.join("state.json");
        let ok = std::fs::read(&path)
            .ok()
            .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
            .is_some_and(|v| {
                v.get("last_seq").and_then(|s| s.as_u64()) == Some(snap.state.last_seq)
            });
        if !ok {
            render::state_json(&dir, &self.document(snap)?)?;
        }
        let wrote = render::phase_outputs(&dir, &snap.state)?;
        Ok(!ok || wrote > 0)
    }

    pub fn events(&self, id: &TaskId, after: u64, limit: usize) -> Result<Vec<EventRecord>> {
        Ok(self.store.events(id, after, limit)?)
    }

    /// Loads `.baton/workflows/NAME.toml`.
    pub fn load_workflow(&self, name: &str) -> Result<Workflow> {
        let valid = !name.is_empty()
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        let path = self.project.workflows_dir().join(format!("{name}.toml"));
        if name == "continue" && !path.is_file() {
            return Workflow::parse(
                CONTINUE_WORKFLOW,
                "baton's built-in continue workflow",
                name,
                &|p| Err(format!("no file {p}")),
            )
            .map_err(|e| Error::op(e.to_string()));
        }
        if !valid || !path.is_file() {
            let mut known: Vec<String> = std::fs::read_dir(self.project.workflows_dir())
                .map(|d| {
                    d.filter_map(|e| e.ok())
                        .filter_map(|e| {
                            e.file_name()
                                .to_str()?
                                .strip_suffix(".toml")
                                .map(str::to_string)
                        })
                        .collect()
                })
                .unwrap_or_default();
            known.sort();
            return Err(
                Error::bad_input(format!("no workflow {name:?} in .baton/workflows/")).hint(
                    if known.is_empty() {
                        "create .baton/workflows/NAME.toml (see `baton init`)".to_string()
                    } else {
                        format!("the workflows here are: {}", known.join(", "))
                    },
                ),
            );
        }
        let src = fs_err::read_to_string(&path)?;
        let baton = self.project.baton_dir();
        let rel = format!(".baton/workflows/{name}.toml");
        Workflow::parse(&src, &rel, name, &|p| {
            std::fs::read_to_string(baton.join(p)).map_err(|e| e.to_string())
        })
        .map_err(|e| {
            Error::bad_input(e.to_string()).hint(format!("fix {rel} and run the command again"))
        })
    }

    // ----- starting ------------------------------------------------------

    /// `baton run`: creates a task and drives it.
    pub fn run(&self, opts: RunOptions) -> Result<(TaskId, Outcome)> {
        let wf = self.load_workflow(&opts.workflow)?;
        // Given as text: `machine::create` converts each value to the type
        // of the declared flag, or refuses it.
        let flags = parse_pairs(&opts.flags, "--flag", "tests=false")?
            .into_iter()
            .map(|(k, v)| (k, serde_json::Value::String(v)))
            .collect();
        let labels = parse_pairs(&opts.labels, "--label", "issue=42")?;
        let id = match &opts.id {
            Some(id) => TaskId::parse(id).map_err(|e| {
                Error::bad_input(e.to_string())
                    .hint("task ids use letters, digits, '-', '_' and '.'")
            })?,
            None => self.new_task_id(&opts.description, opts.queue)?,
        };
        let created = machine::create(
            &wf,
            NewTask {
                task_id: id.clone(),
                description: opts.description.clone(),
                project_name: self.project.name(),
                flags,
                labels,
                tech_stack: crate::techstack::detect(&self.project.root),
            },
        )
        .map_err(|e| {
            let declared: Vec<String> = wf
                .flags
                .iter()
                .map(|(k, v)| format!("{k} ({}, default {v})", machine::flag_type(v)))
                .collect();
            Error::from(e).hint(if declared.is_empty() {
                format!("workflow {:?} declares no flags", wf.name)
            } else {
                format!(
                    "the flags of workflow {:?} are: {}; pass them as --flag NAME=VALUE",
                    wf.name,
                    declared.join(", ")
                )
            })
        })?;
        if let Event::TaskCreated { flags, .. } = &created {
            self.check_agents(&wf, flags, None, opts.agent.as_deref())?;
        }
        let mut first = vec![created];
        if let Some(to) = &opts.agent {
            first.push(Event::AgentSwitched {
                from: None,
                to: to.clone(),
                reason: "baton run --agent".into(),
            });
        }
        if let Some(i) = opts.imported.clone() {
            first.push(Event::Imported {
                session: i.session,
                first_prompt: i.first_prompt,
                events: i.events,
            });
        }
        if opts.queue {
            if self.store.load(&id)?.is_some() {
                return Err(
                    Error::bad_input(format!("a task {id} already exists")).hint(format!(
                        "continue it with `baton resume {id}`, or pick another --id"
                    )),
                );
            }
            let base = Workspace::enqueue(&self.project, &id)?;
            let (state, records) = self.first_records(&id, &wf, first.clone())?;
            if let Err(e) = self.store.create_task(&state, &records, Holder::Queue) {
                if let Some(g) = &self.git {
                    let _ = g.run(
                        &["update-ref", "-d", &format!("refs/heads/baton/{id}")],
                        &[],
                    );
                }
                return Err(e.into());
            }
            self.observer.info(&format!(
                "queued task {id} on branch baton/{id} from {}",
                &base[..base.len().min(12)]
            ));
            if let Ok(Some(snap)) = self.store.load(&id) {
                let _ = render::state_json(&self.project.task_dir(&id), &self.document(&snap)?);
            }
            return Ok((id, Outcome::Queued));
        }
        let mut held = self.create(&id, wf, first)?;
        if opts.create_only {
            // Stop renewing but keep the lease: the background process
            // replaces us as owner, so the task never looks CRASHED between.
            drop(held.hb);
            return Ok((id, Outcome::Waiting("detached".into())));
        }
        let outcome = self.drive(&mut held);
        self.release(held);
        Ok((id, outcome?))
    }

    fn new_task_id(&self, description: &str, queue: bool) -> Result<TaskId> {
        let mut existing: std::collections::HashSet<String> = self
            .store
            .list()?
            .into_iter()
            .map(|t| t.id.to_string())
            .collect();
        // A queued task's branch goes to the remote, where another clone's
        // removed task may have left one of the same name.
        if queue
            && let Some(g) = &self.git
            && let Ok(Some(r)) = crate::workspace::remote(&self.project, g)
            && let Ok(out) = g.run(&["ls-remote", "--heads", &r, "refs/heads/baton/*"], &[])
        {
            existing.extend(
                out.lines()
                    .filter_map(|l| l.split_once("refs/heads/baton/"))
                    .map(|(_, name)| name.trim().to_string()),
            );
        }
        let mut seq = self.store.list()?.len() as u32 + 1;
        loop {
            let slug = baton_core::ids::slugify(seq, description);
            // A removed queued task may have left its branch (it keeps the
            // commits): never reuse that name.
            let branch_taken = self.git.as_ref().is_some_and(|g| {
                g.resolve(&format!(
                    "refs/heads/{}",
                    crate::workspace::branch_name_str(&slug)
                ))
                .is_some()
            });
            if !existing.contains(&slug) && !branch_taken {
                return TaskId::parse(&slug).map_err(|e| Error::op(e.to_string()));
            }
            seq += 1;
        }
    }

    /// Stores a new task (its first events) holding its lease.
    fn create(&self, id: &TaskId, wf: Workflow, first: Vec<Event>) -> Result<Held> {
        let (state, records) = self.first_records(id, &wf, first)?;
        let lease = self.new_lease();
        self.store
            .create_task(&state, &records, Holder::Lease(&lease))?;
        // A new task under the id of a cleaned one is a live record again.
        let _ = std::fs::remove_file(self.project.task_dir(id).join(crate::doctor::CLEANED));
        let held = self.hold(state, wf, lease, Workspace::project(&self.project))?;
        self.observer.task_started(id, &held.wf.name);
        Ok(held)
    }

    /// Stores the definition and builds a new task's first journal records.
    fn first_records(
        &self,
        id: &TaskId,
        wf: &Workflow,
        first: Vec<Event>,
    ) -> Result<(TaskState, Vec<EventRecord>)> {
        let json = serde_json::to_string(wf).expect("workflow serializes");
        self.store.put_definition(&StoredDefinition {
            hash: wf.hash(),
            name: wf.name.clone(),
            json,
        })?;
        let now = self.now();
        let mut records = Vec::new();
        let mut state: Option<TaskState> = None;
        for (i, ev) in first.into_iter().enumerate() {
            let rec = EventRecord {
                seq: i as u64 + 1,
                ts: now,
                event: ev,
            };
            match &mut state {
                None => state = machine::initial(id.clone(), &rec),
                Some(s) => machine::apply(s, &rec),
            }
            records.push(rec);
        }
        let state = state.ok_or_else(|| Error::op("a task must start with task_created"))?;
        Ok((state, records))
    }

    /// Starts the heartbeat of a lease just taken, makes the task current
    /// and journals who took it.
    fn hold(&self, state: TaskState, wf: Workflow, lease: Lease, ws: Workspace) -> Result<Held> {
        let id = state.task_id.clone();
        let hb = Heartbeat::start(
            self.store.clone(),
            id.clone(),
            self.owner.clone(),
            self.clock.clone(),
            self.ttl_ms,
        );
        let mut held = Held {
            state,
            wf,
            lease,
            hb,
            ws,
        };
        self.set_current(&id);
        self.commit(
            &mut held,
            vec![Event::Claimed {
                owner: self.owner.describe(),
                command: self.command.clone(),
            }],
        )?;
        Ok(held)
    }

    fn new_lease(&self) -> Lease {
        let now = self.now();
        Lease {
            owner: self.owner.clone(),
            acquired_at: now,
            expires_at: now.plus_millis(self.ttl_ms),
        }
    }

    fn set_current(&self, id: &TaskId) {
        let _ = render::atomic_write(&self.project.current_file(), format!("{id}\n").as_bytes());
    }

    /// Every agent phase still to run must name a configured agent.
    /// Every agent phase still to run (not done, `when` not false) must
    /// name a configured agent whose program can be run.
    fn check_agents(
        &self,
        wf: &Workflow,
        flags: &BTreeMap<String, serde_json::Value>,
        state: Option<&TaskState>,
        agent: Option<&str>,
    ) -> Result<()> {
        for p in &wf.phases {
            if !matches!(p.kind, PhaseKind::Prompt { .. }) {
                continue;
            }
            if p.when.as_ref().is_some_and(|c| !c.eval(flags)) {
                continue;
            }
            if state
                .and_then(|s| s.phase(p.id.as_str()))
                .is_some_and(|s| s.status.is_done())
            {
                continue;
            }
            let name = agent
                .map(str::to_string)
                .or_else(|| p.agent.clone())
                .or_else(|| self.project.config.defaults.agent.clone());
            match name {
                None => {
                    return Err(Error::bad_input(format!("phase {} is an agent phase but names no agent", p.id))
                        .hint("set `agent` on the phase or under [defaults] in the workflow, or pass --agent NAME"));
                }
                Some(n) if !self.project.config.agents.contains_key(&n) => {
                    return Err(Error::bad_input(format!(
                        "phase {} uses agent {n:?}, which .baton/config.toml does not define",
                        p.id
                    ))
                    .hint(format!("add [agents.{n}] with command = [\"{n}\", \"-p\", \"{{{{prompt}}}}\"] to .baton/config.toml")));
                }
                Some(n) => {
                    let cfg = &self.project.config.agents[&n];
                    let argv = cfg.argv();
                    let program = &argv[0];
                    let path = cfg.env.get("PATH").map(String::as_str);
                    if let Err(e) = process::resolve(program, &self.project.root, path) {
                        return Err(Error::bad_input(format!(
                            "phase {} uses agent {n:?}, whose program `{program}` cannot be run: {e}",
                            p.id
                        ))
                        .hint(format!(
                            "install `{program}`, fix [agents.{n}] command in .baton/config.toml, or pick another agent with --agent NAME"
                        )));
                    }
                }
            }
        }
        Ok(())
    }

    // ----- resuming ------------------------------------------------------

    fn may_take_over(&self, lease: &Lease, takeover_from: Option<u32>) -> bool {
        takeover_from == Some(lease.owner.pid) && lease.owner.host == self.local.host
    }

    fn busy(&self, id: &TaskId, lease: &Lease) -> Error {
        Error::busy(format!(
            "task {id} is being run by {} (lease taken at {}, renewed until {})",
            lease.owner.describe(),
            lease.acquired_at,
            lease.expires_at
        ))
        .hint(format!(
            "wait for it to finish, or stop it with `baton cancel {id}`"
        ))
    }

    /// Takes the lease of an existing task, replacing a dead owner.
    fn take(&self, id: &TaskId, snap: &TaskSnapshot, takeover_from: Option<u32>) -> Result<Held> {
        let live = self.liveness(snap.lease.as_ref());
        let replace = match (&live, &snap.lease) {
            (Liveness::Live, Some(l)) if self.may_take_over(l, takeover_from) => {
                Some(l.owner.clone())
            }
            (Liveness::Live, Some(l)) if l.owner != self.owner => return Err(self.busy(id, l)),
            (Liveness::Dead(_) | Liveness::Expired, Some(l)) => Some(l.owner.clone()),
            _ => None,
        };
        let lease = self.new_lease();
        match self.store.acquire(id, &lease, replace.as_ref())? {
            Acquire::Acquired => {
                tracing::debug!(
                    task = %id,
                    previous = %replace.as_ref().map_or("nobody".into(), |o| o.describe()),
                    previous_was = ?live,
                    takeover_from,
                    expires_at = %lease.expires_at,
                    "lease taken"
                );
            }
            Acquire::Held(l) => {
                tracing::debug!(
                    task = %id,
                    replacing = %replace.as_ref().map_or("nobody".into(), |o| o.describe()),
                    holder = %l.owner.describe(),
                    "lease takeover lost: another process holds it"
                );
                return Err(self.busy(id, &l));
            }
        }
        // Read again under the lease: another process may have moved it on.
        let fresh = match self.store.load(id) {
            Ok(Some(s)) => s,
            Ok(None) => return Err(Error::bad_input(format!("no task {id}"))),
            Err(e) => {
                let _ = self.store.release(id, &self.owner);
                return Err(e.into());
            }
        };
        let wf = self.pinned(&fresh.state.definition_hash)?;
        let held = self.hold(fresh.state, wf, lease, Workspace::project(&self.project))?;
        if let Liveness::Dead(why) = live {
            self.observer
                .info(&format!("the previous runner is gone: {why}"));
        }
        Ok(held)
    }

    /// `baton resume`: continues a crashed, failed or waiting task.
    pub fn resume(&self, id: &TaskId, opts: ResumeOptions) -> Result<Outcome> {
        let snap = self.load(id)?;
        if self.repair_rendered(&snap)? {
            self.observer.info(&format!(
                "re-rendered the files of task {id} from the store"
            ));
        }
        let pinned = self.pinned(&snap.state.definition_hash)?;
        let upgrade_to = self.check_definition(&snap.state, &pinned, opts.upgrade)?;
        let wf_now = upgrade_to.as_ref().unwrap_or(&pinned);
        if let Some(from) = &opts.from {
            let Some(def) = wf_now.phase(from) else {
                let ids: Vec<&str> = wf_now.phases.iter().map(|p| p.id.as_str()).collect();
                return Err(Error::bad_input(format!("task {id} has no phase {from:?}"))
                    .hint(format!("its phases are: {}", ids.join(", "))));
            };
            // Every refusal comes before the lease is taken and anything
            // (journal or files) changes.
            if let Some(n) = unmet_need(&snap.state, def) {
                return Err(Error::bad_input(format!(
                    "cannot rewind to {from}: it needs {n}, which has not passed yet"
                ))
                .hint("nothing was changed"));
            }
            let cp = snap.state.phase(from).and_then(|p| p.checkpoint.clone());
            // A queued task's worktree is baton's own: nothing of the
            // user's is in it, and what it holds is saved before a restore.
            if !snap.queued {
                self.check_restorable(cp.as_ref(), &def.id, id)?;
            }
        } else {
            match self.status_of(&snap) {
                DisplayStatus::Complete if upgrade_to.is_none() => {
                    self.observer.info(&format!("task {id} is already COMPLETE; nothing to resume (use --from PHASE to run phases again)"));
                    return Ok(Outcome::Complete);
                }
                DisplayStatus::Cancelled => {
                    return Err(Error::bad_input(format!("task {id} was cancelled"))
                        .hint(format!("run phases again with `baton resume {id} --from PHASE`, or start a new task from it with `baton fork {id} --from PHASE --id NEW`")));
                }
                DisplayStatus::Running => {
                    let l = snap.lease.as_ref().expect("running has a lease");
                    if l.owner != self.owner && !self.may_take_over(l, opts.takeover_from) {
                        return Err(self.busy(id, l));
                    }
                }
                // An upgrade goes ahead even if the wait is not over: it may
                // remove the phase waited in, or change what comes after.
                // A new agent is journaled even if the wait is not over.
                DisplayStatus::Waiting if upgrade_to.is_none() && opts.agent.is_none() => {
                    if let Some(w) = self.wait_not_due(&snap.state) {
                        return Ok(Outcome::Waiting(w));
                    }
                }
                _ => {}
            }
        }
        let flags = snap.state.flags.clone();
        let mut rerun = snap.state.clone();
        if let Some(from) = &opts.from {
            for p in wf_now.descendants(
                &baton_core::PhaseId::parse(from).map_err(|e| Error::bad_input(e.to_string()))?,
            ) {
                if let Some(ps) = rerun.phase_mut(p.as_str()) {
                    ps.status = PhaseStatus::Pending;
                }
            }
        }
        let agent = opts.agent.as_deref().or(snap.state.agent.as_deref());
        self.check_agents(wf_now, &flags, Some(&rerun), agent)?;
        let mut held = self.take(id, &snap, opts.takeover_from)?;
        if snap.queued {
            // A queued task resumed by hand runs in its worktree too; what
            // earlier runs of this host left running goes first, so nothing
            // writes into the worktree once it is set up.
            self.kill_local_orphans(&snap.state.task_id);
            match self.workspace_for(&snap) {
                Ok(ws) => held.ws = ws,
                Err(e) => {
                    self.release(held);
                    return Err(e);
                }
            }
        }
        let result = self.resume_held(&mut held, &snap, opts, upgrade_to, false);
        self.release(held);
        result
    }

    fn resume_held(
        &self,
        held: &mut Held,
        seen: &TaskSnapshot,
        opts: ResumeOptions,
        upgrade_to: Option<Workflow>,
        claimed: bool,
    ) -> Result<Outcome> {
        // A crashed attempt: kill what it left running, then re-run it.
        // A worker's claim finds a crash only when a phase was under way; a
        // task handed back (`resume --queue`) or released between phases
        // is simply continued.
        let crashed = held.state.status == TaskStatus::Running
            && (!claimed || held.state.in_progress().is_some());
        if let Some(p) = held.state.in_progress().cloned() {
            // A pid means nothing on another machine: only a runner of this
            // host can have left the process here.
            // (A worker's claim has already killed what this host left.)
            let here = !claimed
                && seen
                    .lease
                    .as_ref()
                    .is_none_or(|l| l.owner.host == self.local.host);
            if let Some(proc_ref) = &p.process
                && here
                && process::kill_orphan(proc_ref)
            {
                self.observer.info(&format!(
                    "killed the orphaned process group {} of phase {}",
                    proc_ref.pid, p.id
                ));
            }
            let reason = match self.liveness(seen.lease.as_ref()) {
                _ if claimed => "its runner stopped (lease expired or released)".into(),
                Liveness::Dead(why) => why,
                Liveness::Expired => "its runner's lease expired".into(),
                _ => "its runner is gone".into(),
            };
            self.decide_commit(held, Input::Interrupt { reason })?;
        }
        if opts.from.is_none() {
            match held.state.status {
                // A task whose runner stopped before any phase started (e.g.
                // `run --detach`) has nothing to recover.
                TaskStatus::Running
                    if crashed && held.state.phases.iter().any(|p| p.attempt > 0) =>
                {
                    self.decide_commit(held, Input::Resume { crashed: true })?
                }
                TaskStatus::Failed => self.decide_commit(held, Input::Resume { crashed: false })?,
                TaskStatus::Complete if upgrade_to.is_none() => return Ok(Outcome::Complete),
                _ => {}
            }
        }
        if let Some(new) = upgrade_to {
            let before: Vec<String> = held.state.phases.iter().map(|p| p.id.to_string()).collect();
            // The definition first: the task row refers to it.
            self.store.put_definition(&StoredDefinition {
                hash: new.hash(),
                name: new.name.clone(),
                json: serde_json::to_string(&new).expect("workflow serializes"),
            })?;
            self.decide_commit(
                held,
                Input::Upgrade {
                    to: Box::new(new.clone()),
                },
            )?;
            let removed: Vec<String> = before
                .iter()
                .filter(|p| new.phase(p).is_none())
                .cloned()
                .collect();
            let added: Vec<String> = new
                .phases
                .iter()
                .map(|p| p.id.to_string())
                .filter(|p| !before.contains(p))
                .collect();
            held.wf = new;
            self.observer.info(&format!(
                "adopted the edited workflow: added {}; removed {}",
                if added.is_empty() {
                    "nothing".to_string()
                } else {
                    added.join(", ")
                },
                if removed.is_empty() {
                    "nothing".to_string()
                } else {
                    removed.join(", ")
                },
            ));
            if held.state.status == TaskStatus::Complete
                && held.state.phases.iter().any(|p| !p.status.is_done())
            {
                self.decide_commit(
                    held,
                    Input::Rewind {
                        to: held
                            .state
                            .phases
                            .iter()
                            .find(|p| !p.status.is_done())
                            .expect("checked")
                            .id
                            .clone(),
                    },
                )?;
            }
        }
        if let Some(from) = &opts.from {
            let to =
                baton_core::PhaseId::parse(from).map_err(|e| Error::bad_input(e.to_string()))?;
            // Check the rewind before touching any file.
            machine::decide(
                &held.state,
                &held.wf,
                Input::Rewind { to: to.clone() },
                self.now(),
            )?;
            let cp = held
                .state
                .phase(to.as_str())
                .and_then(|p| p.checkpoint.clone());
            self.restore_worktree(held, cp, &to)?;
            self.decide_commit(held, Input::Rewind { to: to.clone() })?;
        }
        if let Some(to) = opts.agent {
            let reason = if opts.handoff {
                "baton handoff --to"
            } else {
                "baton resume --agent"
            };
            self.decide_commit(
                held,
                Input::SwitchAgent {
                    to,
                    reason: reason.into(),
                },
            )?;
        }
        self.drive(held)
    }

    /// Where a task's phases run: its own worktree if it is queued.
    fn workspace_for(&self, snap: &TaskSnapshot) -> Result<Workspace> {
        if snap.queued {
            Workspace::prepare(&self.project, &snap.state, self.now().millis())
        } else {
            Ok(Workspace::project(&self.project))
        }
    }

    /// `baton worker`: claims the oldest queued task nobody runs (or whose
    /// runner's lease expired), `skip` left out; `None` if there was none.
    /// The slots of one worker share a lease owner (the process), so the
    /// worker passes the tasks its other slots run in `skip`.
    pub fn claim(&self, skip: &[TaskId]) -> Result<Option<Claimed>> {
        let lease = self.new_lease();
        let id = match self.store.claim(&lease, skip)? {
            Some(id) => id,
            None => match self.claim_by_scan(&lease, skip)? {
                Some(id) => id,
                None => return Ok(None),
            },
        };
        Ok(Some(Claimed { id, lease }))
    }

    /// Drives a claimed task like `resume` would, then releases it.
    pub fn run_claimed(&self, claimed: Claimed) -> Result<Outcome> {
        let Claimed { id, lease } = claimed;
        let result = (|| {
            let snap = self.load(&id)?;
            let _ = self.repair_rendered(&snap);
            let wf = self.pinned(&snap.state.definition_hash)?;
            // Held (its heartbeat running) before anything slow: killing
            // orphans, fetching, checking the worktree out.
            let mut held = self.hold(
                snap.state.clone(),
                wf,
                lease,
                Workspace::project(&self.project),
            )?;
            // What earlier runs on this host left running goes first, so
            // nothing writes into the worktree once it is set up, and a
            // cancelled task's phase does not finish its work after all.
            self.kill_local_orphans(&id);
            if snap.cancel_requested {
                // Cancelled while its last runner was dying: honour it.
                let r = self.decide_commit(
                    &mut held,
                    Input::Cancel {
                        reason: "cancelled by `baton cancel`".into(),
                    },
                );
                self.release(held);
                self.observer
                    .info(&format!("task {id} was cancelled while nobody ran it"));
                return r.map(|()| Outcome::Cancelled);
            }
            match self.workspace_for(&snap) {
                Ok(ws) => held.ws = ws,
                Err(e) => {
                    self.release(held);
                    return Err(e);
                }
            }
            self.observer.task_started(&id, &held.wf.name);
            let outcome = self.resume_held(&mut held, &snap, ResumeOptions::default(), None, true);
            if matches!(outcome, Ok(Outcome::Complete))
                && let Some(b) = &held.ws.branch
            {
                // Everything is committed and published: the checkout is
                // no longer needed (git refuses if anything is left in it).
                let _ = self.git.as_ref().map(|g| {
                    g.run(
                        &["worktree", "remove", &b.worktree.display().to_string()],
                        &[],
                    )
                });
            }
            self.release(held);
            outcome
        })();
        if result.is_err() {
            // Never keep a task we cannot run: another worker may.
            let _ = self.store.release(&id, &self.owner);
        }
        result
    }

    /// What the store's claim does not see: a queued task whose runner on
    /// this host is provably dead (its pid gone, or from an earlier boot)
    /// need not wait for its lease to expire; and a queued task waiting on
    /// a durable timer that is due goes on. Taken by compare-and-swap on
    /// the owner seen, so of two workers only one gets it.
    fn claim_by_scan(&self, lease: &Lease, skip: &[TaskId]) -> Result<Option<TaskId>> {
        for t in self.store.list()? {
            if !t.queued || skip.contains(&t.id) {
                continue;
            }
            let live = self.liveness(t.lease.as_ref());
            let take = match t.status {
                TaskStatus::Running => matches!(live, Liveness::Dead(_)),
                TaskStatus::Waiting if !live.is_live() => {
                    self.store.load(&t.id)?.is_some_and(|s| {
                        s.state
                            .waiting_phase()
                            .and_then(|p| p.waiting.as_ref())
                            .is_some_and(|w| w.due_at.is_some())
                            && self.wait_not_due(&s.state).is_none()
                    })
                }
                _ => false,
            };
            if !take {
                continue;
            }
            let seen = t.lease.as_ref().map(|l| &l.owner);
            let cancel = self.store.load(&t.id)?.is_some_and(|s| s.cancel_requested);
            if self.store.acquire(&t.id, lease, seen)? == Acquire::Acquired {
                if cancel {
                    // Taking over clears the flag; a cancel asked of the
                    // dead runner still stands.
                    self.store.request_cancel(&t.id)?;
                }
                return Ok(Some(t.id));
            }
        }
        Ok(None)
    }

    /// Kills every phase process an earlier run of this task left running
    /// on this host (any attempt, as the journal records them, each with
    /// the host of the runner that started it).
    fn kill_local_orphans(&self, id: &TaskId) {
        let mut host: Option<String> = None;
        let mut after = 0;
        loop {
            let Ok(page) = self.store.events(id, after, 1000) else {
                return;
            };
            let Some(last) = page.last() else {
                return;
            };
            after = last.seq;
            for r in &page {
                match &r.event {
                    Event::Claimed { owner, .. } => {
                        host = owner.rsplit_once(" on ").map(|(_, h)| h.to_string());
                    }
                    Event::PhaseProcess { phase, process, .. }
                        if host.as_deref() == Some(self.local.host.as_str())
                            && process::kill_if_leader_lives(process) =>
                    {
                        self.observer.info(&format!(
                            "killed the orphaned process group {} of phase {phase}",
                            process.pid
                        ));
                    }
                    _ => {}
                }
            }
        }
    }

    /// Before a queued task's phase is published: this process must still
    /// hold the lease (a runner that was paused past its lease must not
    /// publish over its successor).
    fn still_holding(&self, held: &Held) -> Result<()> {
        let lost = held.hb.lost.load(Ordering::SeqCst)
            || matches!(
                self.store.renew(
                    &held.state.task_id,
                    &self.owner,
                    self.now().plus_millis(self.ttl_ms)
                )?,
                RenewOutcome::Lost
            );
        if lost {
            return Err(Error::busy(format!(
                "lost the lease of task {} to another process; its work was not published",
                held.state.task_id
            )));
        }
        Ok(())
    }

    /// Whether any queued task is still to run (held or not), leaving out
    /// `skip`.
    pub fn queue_pending(&self, skip: &[TaskId]) -> Result<bool> {
        Ok(self
            .store
            .list()?
            .iter()
            .any(|t| t.queued && t.status == TaskStatus::Running && !skip.contains(&t.id)))
    }

    /// The description of a wait that is not over yet, if so.
    fn wait_not_due(&self, state: &TaskState) -> Option<String> {
        let p = state.waiting_phase()?;
        let w = p.waiting.as_ref()?;
        match w.due_at {
            Some(due) if due <= self.now() => None,
            Some(due) => Some(format!(
                "phase {} waits for {}, due at {due}",
                p.id, w.description
            )),
            None => Some(format!("phase {} waits for {}", p.id, w.description)),
        }
    }

    /// Compares the pinned definition with the file; returns the new one if
    /// `upgrade` is asked and it differs.
    fn check_definition(
        &self,
        state: &TaskState,
        pinned: &Workflow,
        upgrade: bool,
    ) -> Result<Option<Workflow>> {
        let path = self
            .project
            .workflows_dir()
            .join(format!("{}.toml", state.workflow));
        if !path.is_file() {
            if upgrade {
                return Err(Error::bad_input(format!(
                    "--upgrade: .baton/workflows/{}.toml no longer exists",
                    state.workflow
                )));
            }
            return Ok(None);
        }
        let current = match self.load_workflow(&state.workflow) {
            Ok(wf) => wf,
            Err(e) if upgrade => return Err(e),
            Err(_) => {
                self.observer.info(&format!(
                    "note: .baton/workflows/{}.toml is now invalid; task {} keeps the definition it started with",
                    state.workflow, state.task_id
                ));
                return Ok(None);
            }
        };
        if current.hash() == pinned.hash() {
            return Ok(None);
        }
        if upgrade {
            return Ok(Some(current));
        }
        self.observer.info(&format!(
            "note: .baton/workflows/{}.toml changed since task {} started; it keeps the definition it started with (pass --upgrade to adopt the edited one)",
            state.workflow, state.task_id
        ));
        Ok(None)
    }

    /// Refuses early, before anything changes, when a checkpoint cannot be
    /// restored onto the work tree as it stands.
    /// Refuses early, before anything changes, when a checkpoint cannot be
    /// restored onto the work tree as it stands, or when another task's
    /// phase is running in that work tree (`task` is the one restoring).
    fn check_restorable(
        &self,
        cp: Option<&Checkpoint>,
        to: &baton_core::PhaseId,
        task: &TaskId,
    ) -> Result<()> {
        let (Some(git), Some(cp)) = (&self.git, cp) else {
            return Ok(());
        };
        if let Some(why) = git.restore_blocker(cp) {
            return Err(Error::bad_input(format!(
                "cannot restore the work tree to the start of {to}: {why}"
            ))
            .hint("nothing was changed"));
        }
        for (t, _) in self.list()? {
            if &t.id == task {
                continue;
            }
            if let Some(l) = &t.lease
                && l.owner != self.owner
                && self.liveness(Some(l)).is_live()
            {
                return Err(Error::busy(format!(
                    "task {} is running in this work tree ({}); restoring files now would change them under it",
                    t.id,
                    l.owner.describe()
                ))
                .hint(format!("wait for it, or stop it with `baton cancel {}`; nothing was changed", t.id)));
            }
        }
        Ok(())
    }

    /// Puts the work tree back to checkpoint `cp` (of phase `to`), first
    /// journaling on `held` where the current work tree is being saved, so
    /// a crash in between still says where the files went.
    fn restore_worktree(
        &self,
        held: &mut Held,
        cp: Option<Checkpoint>,
        to: &baton_core::PhaseId,
    ) -> Result<()> {
        let Some(git) = held.ws.git.clone() else {
            return Ok(());
        };
        let Some(cp) = cp else {
            self.observer.info(&format!(
                "note: no checkpoint was recorded for {to} (it never started), so the work tree was left as it is"
            ));
            return Ok(());
        };
        if held.ws.branch.is_none() {
            self.check_restorable(Some(&cp), to, &held.state.task_id)?;
        }
        let short = |h: Option<&str>| {
            h.map(|h| h[..h.len().min(12)].to_string())
                .unwrap_or_else(|| "no commit".into())
        };
        // Saved work lives outside refs/baton/<task>/, so `rm` and `doctor`
        // never delete it; the name is unique per restore.
        let safety = format!(
            "refs/baton-saved/{}/{}-{}",
            held.state.task_id,
            self.now().millis(),
            std::process::id()
        );
        self.decide_commit(
            held,
            Input::Note {
                phase: Some(to.clone()),
                text: format!(
                    "restoring the work tree to the start of {to} (snapshot {}); what is there now is saved at {safety}",
                    short(cp.snapshot.as_deref())
                ),
            },
        )?;
        match git.restore(&cp, &safety) {
            Ok(saved) => {
                self.decide_commit(
                    held,
                    Input::Note {
                        phase: Some(to.clone()),
                        text: format!("restored the work tree to the start of {to}"),
                    },
                )?;
                self.observer.info(&format!(
                    "restored the work tree to the start of {to} (HEAD {}); what was there is saved at {safety} ({})",
                    short(cp.head.as_deref()),
                    short(Some(&saved)),
                ));
                Ok(())
            }
            Err(e) => Err(Error::op(format!(
                "cannot restore the work tree to the start of {to}: {e}"
            ))
            .hint(format!("what was there is saved at {safety} if that ref exists (`git show --stat {safety}`)"))),
        }
    }

    /// `baton fork`: a new task from a checkpoint of another.
    pub fn fork(&self, src: &TaskId, from: &str, new_id: &str) -> Result<(TaskId, Outcome)> {
        let snap = self.load(src)?;
        let wf = self.pinned(&snap.state.definition_hash)?;
        let to = wf.phase(from).map(|p| p.id.clone()).ok_or_else(|| {
            let ids: Vec<&str> = wf.phases.iter().map(|p| p.id.as_str()).collect();
            Error::bad_input(format!("task {src} has no phase {from:?}"))
                .hint(format!("its phases are: {}", ids.join(", ")))
        })?;
        let new_id = TaskId::parse(new_id).map_err(|e| Error::bad_input(e.to_string()))?;
        let def = wf.phase(from).expect("checked");
        if let Some(n) = unmet_need(&snap.state, def) {
            return Err(Error::bad_input(format!(
                "cannot fork {src} at {from}: it needs {n}, which has not passed"
            ))
            .hint("fork at an earlier phase, or resume the task until it passes"));
        }
        let reset = wf.descendants(&to);
        let inherited: Vec<_> = snap
            .state
            .phases
            .iter()
            .filter(|p| !reset.contains(&p.id))
            .cloned()
            .map(|mut p| {
                p.process = None;
                p
            })
            .collect();
        let mut labels = snap.state.labels.clone();
        labels.insert("task-id".into(), new_id.to_string());
        labels.insert("forked-from".into(), src.to_string());
        let created = Event::TaskCreated {
            workflow: wf.name.clone(),
            definition_hash: wf.hash(),
            description: snap.state.description.clone(),
            project_name: snap.state.project_name.clone(),
            flags: snap.state.flags.clone(),
            labels,
            tech_stack: snap.state.tech_stack.clone(),
            phases: wf.phases.iter().map(|p| p.id.clone()).collect(),
        };
        let adopted = Event::Adopted {
            source: format!("fork of {src} at {from}"),
            phases: inherited,
            iteration_counts: snap
                .state
                .iteration_counts
                .iter()
                .filter(|(k, _)| !reset.iter().any(|r| r.as_str() == k.as_str()))
                .map(|(k, v)| (k.clone(), *v))
                .collect(),
            status: TaskStatus::Running,
            blockers: Vec::new(),
            failure: None,
        };
        let cp = snap
            .state
            .phase(to.as_str())
            .and_then(|p| p.checkpoint.clone());
        self.check_restorable(cp.as_ref(), &to, &new_id)?;
        if self.store.load(&new_id)?.is_some() {
            return Err(Error::bad_input(format!("a task {new_id} already exists"))
                .hint("pick another --id"));
        }
        let mut held = self.create(&new_id, wf, vec![created, adopted])?;
        if let Err(e) = self.restore_worktree(&mut held, cp, &to) {
            // Nothing ran: a fork that cannot start from its checkpoint is
            // not left behind to run on the wrong files.
            self.release(held);
            let _ = self.store.delete_task(&new_id);
            let _ = fs_err::remove_dir_all(self.project.task_dir(&new_id));
            return Err(e);
        }
        let outcome = self.drive(&mut held);
        self.release(held);
        Ok((new_id, outcome?))
    }

    // ----- driving -------------------------------------------------------

    fn release(&self, held: Held) {
        let id = held.state.task_id.clone();
        drop(held.hb);
        let _ = self.store.release(&id, &self.owner);
        // Render once more without our lease in the document.
        if let Ok(Some(snap)) = self.store.load(&id)
            && let Ok(doc) = self.document(&snap)
        {
            let _ = render::state_json(&self.project.task_dir(&id), &doc);
        }
    }

    fn decide_commit(&self, held: &mut Held, input: Input) -> Result<()> {
        let events = machine::decide(&held.state, &held.wf, input, self.now())?;
        self.commit(held, events)
    }

    /// Appends events and writes the projection in one transaction, then
    /// renders `state.json`.
    fn commit(&self, held: &mut Held, events: Vec<Event>) -> Result<()> {
        if events.is_empty() {
            return Ok(());
        }
        let now = self.now();
        let mut touched: Option<Vec<baton_core::PhaseId>> = Some(Vec::new());
        let mut records = Vec::with_capacity(events.len());
        for ev in events {
            match (machine::touched(&held.state, &ev), &mut touched) {
                (Some(ids), Some(all)) => all.extend(ids),
                _ => touched = None,
            }
            let rec = EventRecord {
                seq: held.state.last_seq + 1,
                ts: now,
                event: ev,
            };
            machine::apply(&mut held.state, &rec);
            records.push(rec);
        }
        let writes = match touched {
            None => PhaseWrites::All,
            Some(ids) => {
                let mut ix: Vec<usize> = ids
                    .iter()
                    .filter_map(|id| held.state.phases.iter().position(|p| &p.id == id))
                    .collect();
                ix.sort_unstable();
                ix.dedup();
                PhaseWrites::Changed(ix)
            }
        };
        // On failure the in-memory state is ahead of the store; every caller
        // stops driving on an error, so it is never used again.
        let started = std::time::Instant::now();
        let committed = self
            .store
            .commit(&self.owner, &held.state, &writes, &records);
        tracing::debug!(
            task = %held.state.task_id,
            seq_first = records.first().map_or(0, |r| r.seq),
            seq_last = records.last().map_or(0, |r| r.seq),
            kinds = ?records.iter().map(|r| r.event.kind()).collect::<Vec<_>>(),
            phases_written = match &writes {
                PhaseWrites::All => held.state.phases.len(),
                PhaseWrites::Changed(ix) => ix.len(),
            },
            status = ?held.state.status,
            elapsed_us = started.elapsed().as_micros() as u64,
            ok = committed.is_ok(),
            "store commit"
        );
        committed?;
        let doc = document::render(
            &held.state,
            &held.wf,
            DisplayStatus::of(held.state.status, &Liveness::Live),
            Some(&held.lease),
        );
        render::state_json(&self.project.task_dir(&held.state.task_id), &doc)?;
        Ok(())
    }

    fn drive(&self, held: &mut Held) -> Result<Outcome> {
        let dir = self.project.task_dir(&held.state.task_id);
        render::phase_outputs(&dir, &held.state)?;
        loop {
            if held.hb.lost.load(Ordering::SeqCst) {
                return Err(Error::busy(format!(
                    "lost the lease of task {} to another process",
                    held.state.task_id
                )));
            }
            if held.hb.cancel.load(Ordering::SeqCst) {
                self.decide_commit(
                    held,
                    Input::Cancel {
                        reason: "cancelled by `baton cancel`".into(),
                    },
                )?;
                return Ok(Outcome::Cancelled);
            }
            if self.interrupt.load(Ordering::SeqCst) {
                self.decide_commit(
                    held,
                    Input::Note {
                        phase: None,
                        text: "stopped by a signal between phases".into(),
                    },
                )?;
                return Ok(Outcome::Interrupted(format!(
                    "stopped by a signal between phases; `baton resume {}` goes on",
                    held.state.task_id
                )));
            }
            match machine::next(&held.state, &held.wf) {
                Next::Start(p) => {
                    if let Some(outcome) = self.run_phase(held, &p)? {
                        return Ok(outcome);
                    }
                }
                Next::Skip(p, reason) => {
                    self.decide_commit(held, Input::Skip { phase: p.clone() })?;
                    self.observer.phase_finished(
                        &held.state.task_id,
                        p.as_str(),
                        PhaseStatus::Skipped,
                        0,
                        &reason,
                    );
                }
                Next::Wait(p) => {
                    self.decide_commit(held, Input::Wait { phase: p.clone() })?;
                    self.observer.phase_finished(
                        &held.state.task_id,
                        p.as_str(),
                        PhaseStatus::Waiting,
                        0,
                        "",
                    );
                }
                Next::Waiting(p) => match self.wait_not_due(&held.state) {
                    None => self.decide_commit(held, Input::TimerDue { phase: p })?,
                    Some(w) => return Ok(Outcome::Waiting(w)),
                },
                Next::Complete => {
                    self.decide_commit(held, Input::Complete)?;
                    return Ok(Outcome::Complete);
                }
                Next::InProgress(p) => {
                    return Err(Error::op(format!("phase {p} is unexpectedly in progress")));
                }
                Next::Stopped(TaskStatus::Waiting) => {
                    match (self.wait_not_due(&held.state), held.state.waiting_phase()) {
                        // A durable timer that is due: TimerDue resumes the task.
                        (None, Some(p))
                            if p.waiting.as_ref().is_some_and(|w| w.due_at.is_some()) =>
                        {
                            let p = p.id.clone();
                            self.decide_commit(held, Input::TimerDue { phase: p })?;
                        }
                        (w, _) => {
                            return Ok(Outcome::Waiting(w.unwrap_or_else(|| "an event".into())));
                        }
                    }
                }
                Next::Stopped(TaskStatus::Failed) => {
                    return Ok(Outcome::Failed(
                        held.state
                            .failure
                            .clone()
                            .unwrap_or_else(|| "failed".into()),
                    ));
                }
                Next::Stopped(TaskStatus::Cancelled) => return Ok(Outcome::Cancelled),
                Next::Stopped(_) => return Ok(Outcome::Complete),
            }
        }
    }

    /// Runs one attempt of a phase. `Some(outcome)` ends the drive.
    fn run_phase(&self, held: &mut Held, phase: &baton_core::PhaseId) -> Result<Option<Outcome>> {
        let id = held.state.task_id.clone();
        let idx = held
            .state
            .phases
            .iter()
            .position(|p| &p.id == phase)
            .expect("phase of state");
        let def = held
            .wf
            .phase(phase.as_str())
            .expect("phase of workflow")
            .clone();
        let ps = held.state.phases[idx].clone();
        let attempt = ps.attempt + 1;
        let stem = document::output_file_name(idx, phase.as_str());
        let stem = stem.trim_end_matches(".md");
        let label = format!("{stem}.i{}.a{attempt}", ps.iteration);
        let checkpoint = held.ws.git.as_ref().and_then(|g| {
            match g.checkpoint(
                &format!("refs/baton/{id}/{label}/start"),
                &format!("baton: {id} {phase} attempt {attempt} start"),
            ) {
                Ok(cp) => Some(cp),
                Err(e) => {
                    self.observer
                        .info(&format!("warning: no git checkpoint for {phase}: {e}"));
                    None
                }
            }
        });
        self.decide_commit(
            held,
            Input::Start {
                phase: phase.clone(),
                checkpoint,
            },
        )?;
        self.observer
            .phase_started(&id, phase.as_str(), attempt, def.kind_name());
        let started = std::time::Instant::now();
        self.crash_point("before-spawn", phase.as_str());

        let dir = self.project.task_dir(&id);
        for sub in ["logs", "prompts", "run"] {
            fs_err::create_dir_all(dir.join(sub))?;
        }
        let brief_text = brief::render(&held.state, phase.as_str());
        let brief_file = dir.join("brief.md");
        fs_err::write(&brief_file, &brief_text)?;
        let summary_file = dir.join("run").join(format!("{label}.summary"));
        let _ = std::fs::remove_file(&summary_file);
        let stdout = dir.join("logs").join(format!("{label}.out"));
        let stderr = dir.join("logs").join(format!("{label}.err"));
        let vars = |v: &str| -> Option<String> {
            match v {
                "brief" => Some(brief_text.clone()),
                _ => machine::value_of(&held.state, phase, v),
            }
        };
        let mut env: Vec<(String, String)> = vec![
            ("BATON_TASK_ID".into(), id.to_string()),
            ("BATON_PHASE".into(), phase.to_string()),
            ("BATON_ATTEMPT".into(), attempt.to_string()),
            ("BATON_ITERATION".into(), ps.iteration.to_string()),
            (
                "BATON_PROJECT".into(),
                self.project.root.display().to_string(),
            ),
            ("BATON_WORKTREE".into(), held.ws.cwd.display().to_string()),
            ("BATON_STATE_DIR".into(), dir.display().to_string()),
            (
                "BATON_SUMMARY_FILE".into(),
                summary_file.display().to_string(),
            ),
            ("BATON_BRIEF_FILE".into(), brief_file.display().to_string()),
        ];
        let timeout = def.timeout_ms.map(Duration::from_millis);
        let failure = |message: String,
                       exit_code: Option<i32>,
                       timed_out: bool,
                       err: &std::path::Path| Failure {
            message,
            exit_code,
            timed_out,
            stderr_tail: process::read_tail(err, 4000),
            files_changed: Vec::new(),
        };
        // The process: a command, or an agent CLI (whose run may be
        // followed by a second one, when its session could not be continued).
        let (launched, l) = match &def.kind {
            PhaseKind::Run { command } => {
                // Values never enter the shell text: each variable becomes
                // `${BATON_VAR_…}`, set in the environment, so a task
                // description like `$(rm -rf ~)` stays text.
                let (script, refs) = template::render_for_shell(command);
                let values: Vec<(String, String, String)> = refs
                    .into_iter()
                    .map(|(var, name)| {
                        let value = vars(&var).unwrap_or_default();
                        (var, name, value)
                    })
                    .collect();
                if let Some((var, _, value)) =
                    values.iter().find(|(_, _, v)| v.len() > MAX_ARG_BYTES)
                {
                    let message = format!(
                        "{{{{{var}}}}} is {} bytes, more than the {MAX_ARG_BYTES} bytes a command may be given in one environment variable; {}",
                        value.len(),
                        if var == "brief" {
                            "read the file $BATON_BRIEF_FILE instead of using {{brief}}"
                        } else {
                            "shorten it"
                        }
                    );
                    return self.fail_unstarted(held, phase, started, message);
                }
                for (_, name, value) in values {
                    env.push((name, value));
                }
                let l = agent::Launch {
                    program: "sh".into(),
                    args: vec!["-c".to_string(), script],
                    env,
                    stdout: stdout.clone(),
                    stderr: stderr.clone(),
                    cli: None,
                    session: None,
                    agent: String::new(),
                    start: SessionStart::New,
                };
                (
                    self.launch(held, phase, &l, timeout, &mut agent::VersionProbe::none())?,
                    l,
                )
            }
            PhaseKind::Prompt { template: t, .. } => {
                let prompt = template::render(t, vars);
                let name = held
                    .state
                    .agent
                    .clone()
                    .or(def.agent.clone())
                    .or(self.project.config.defaults.agent.clone())
                    .unwrap_or_default();
                let agent = self.project.config.agents.get(&name).ok_or_else(|| {
                    Error::bad_input(format!(
                        "agent {name:?} is not defined in .baton/config.toml"
                    ))
                })?;
                for (k, v) in crate::adapter::env(agent) {
                    env.push((k, v));
                }
                for (k, v) in &agent.env {
                    env.push((k.clone(), v.clone()));
                }
                env.push(("BATON_AGENT".into(), name.clone()));
                let cli = agent.cli;
                let cwd = held.ws.cwd.clone();
                let mut version = match cli {
                    Some(_) => agent::VersionProbe::start(
                        agent.argv()[0].clone(),
                        env.clone(),
                        cwd.clone(),
                    ),
                    None => agent::VersionProbe::none(),
                };
                // The interrupted session of this phase, if there is one.
                let interrupted = ps.agent_session.clone().filter(|_| ps.interrupted);
                // The session the task was imported from, until an agent ran.
                let imported = held
                    .state
                    .imported
                    .clone()
                    .filter(|_| held.state.agent_runs().is_empty());
                let resumable = cli
                    .and_then(|c| agent::invocation_for(&ps, &name, c, &cwd))
                    .cloned()
                    .or_else(|| {
                        let c = cli?;
                        imported.clone().filter(|s| {
                            s.cli == c.as_str() && crate::adapter::resumes_from(c, &s.cwd, &cwd)
                        })
                    });
                let handoff = held.state.handoff_pending;
                // With {{brief}} in the template, a fuller brief goes there.
                let uses_brief = t.contains("{{brief}}");
                let brief_prompt = |state: &TaskState, extra: &str| {
                    let full = format!("{brief_text}\n{extra}");
                    let rendered = uses_brief.then(|| {
                        template::render(t, |v| match v {
                            "brief" => Some(full.clone()),
                            _ => machine::value_of(state, phase, v),
                        })
                    });
                    agent::with_brief(&prompt, &full, rendered)
                };
                let progress = |held: &Held| match (&interrupted, &imported) {
                    (Some(s), _) => {
                        let events = self.interrupted_progress(held, &ps);
                        brief::progress_section(&s.cli, &s.native_id, &events)
                    }
                    (None, Some(s)) => {
                        let events = self.imported_events(held);
                        brief::imported_section(&s.cli, &s.native_id, &events)
                    }
                    (None, None) => String::new(),
                };
                // The first run: the interrupted session continued, a new
                // session told what the interrupted one did, or a new one
                // (with the brief on a handoff).
                let (start, text) = match (&resumable, &interrupted) {
                    (Some(_), _) => (SessionStart::Resumed, agent::resumed_prompt(&prompt)),
                    (None, Some(_)) if cli.is_some() => (
                        SessionStart::Brief,
                        brief_prompt(&held.state, &progress(held)),
                    ),
                    _ if imported.is_some() => (
                        SessionStart::Brief,
                        brief_prompt(&held.state, &progress(held)),
                    ),
                    _ if handoff && cli.is_some() => {
                        (SessionStart::New, brief_prompt(&held.state, ""))
                    }
                    _ => (SessionStart::New, prompt.clone()),
                };
                if handoff && let Some(c) = cli {
                    let memory = crate::adapter::write_memory_file(c, &cwd, &brief_text)?;
                    self.observer.info(&format!(
                        "handed off to {name}: the brief is in {} and in the prompt",
                        memory.display()
                    ));
                }
                let mut runs = 0;
                let mut plan = (start, text);
                loop {
                    runs += 1;
                    let (start, text) = plan.clone();
                    let suffix = if runs == 1 {
                        String::new()
                    } else {
                        format!(".r{runs}")
                    };
                    let prompt_file = dir.join("prompts").join(format!("{label}{suffix}.md"));
                    fs_err::write(&prompt_file, &text)?;
                    let mut env = env.clone();
                    env.push((
                        "BATON_PROMPT_FILE".into(),
                        prompt_file.display().to_string(),
                    ));
                    let new_id = cli.filter(|c| c.chooses_session_id()).map(|_| new_uuid());
                    let how = match (&resumable, start) {
                        (Some(s), SessionStart::Resumed) => crate::adapter::Invocation::Resume {
                            native_id: &s.native_id,
                            dir: (s.cwd != cwd.display().to_string()).then_some(s.cwd.as_str()),
                        },
                        _ => crate::adapter::Invocation::New {
                            session: new_id.as_deref(),
                        },
                    };
                    let argv = agent::argv_for(agent, how, &text, &prompt_file);
                    if let Some(big) = argv.iter().find(|a| a.len() > MAX_ARG_BYTES) {
                        let message = format!(
                            "an argument of agent {name:?} is {} bytes (the prompt is {}), more than the {MAX_ARG_BYTES} bytes one argument may have; use {{{{prompt_file}}}} instead of {{{{prompt}}}} in [agents.{name}] command in .baton/config.toml",
                            big.len(),
                            text.len()
                        );
                        return self.fail_unstarted(held, phase, started, message);
                    }
                    // Known before it starts: the session continued, or the
                    // id baton chose.
                    let session = cli.and_then(|c| {
                        let native_id = match (&resumable, start) {
                            (Some(s), SessionStart::Resumed) => s.native_id.clone(),
                            _ => new_id.clone()?,
                        };
                        Some(AgentSession {
                            agent: name.clone(),
                            cli: c.as_str().into(),
                            native_id,
                            cwd: cwd.display().to_string(),
                            version: None,
                            start,
                        })
                    });
                    let l = agent::Launch {
                        program: argv[0].clone(),
                        args: argv[1..].to_vec(),
                        env,
                        stdout: dir.join("logs").join(format!("{label}{suffix}.out")),
                        stderr: dir.join("logs").join(format!("{label}{suffix}.err")),
                        cli,
                        session,
                        agent: name.clone(),
                        start,
                    };
                    let left = timeout.map(|t| t.saturating_sub(started.elapsed()));
                    let launched = self.launch(held, phase, &l, left, &mut version)?;
                    // A continued session the CLI cannot find, or rejects:
                    // a new one, told what the interrupted one did.
                    if start == SessionStart::Resumed
                        && let (Some(c), Ok(Waited::Exited(st))) = (cli, &launched.waited)
                        && let Err((why, kind)) = agent::judge(
                            c,
                            st.code(),
                            &launched.events,
                            &process::read_tail(&l.stderr, 4000),
                        )
                        && matches!(kind, FailureKind::StaleSession | FailureKind::Other)
                    {
                        self.observer.info(&format!(
                            "could not continue the {} session of phase {phase} ({why}); starting a new one with the brief",
                            c.as_str()
                        ));
                        self.decide_commit(
                            held,
                            Input::Note {
                                phase: Some(phase.clone()),
                                text: format!(
                                    "the native session could not be continued ({why}); a new session gets the brief"
                                ),
                            },
                        )?;
                        plan = (
                            SessionStart::Brief,
                            brief_prompt(&held.state, &progress(held)),
                        );
                        continue;
                    }
                    break (launched, l);
                }
            }
            PhaseKind::Wait(_) => unreachable!("wait phases are not started"),
        };
        let stderr = l.stderr.clone();
        let stdout = l.stdout.clone();
        let judged = l.cli.and_then(|c| match &launched.waited {
            Ok(Waited::Exited(st)) => Some(agent::judge(
                c,
                st.code(),
                &launched.events,
                &process::read_tail(&stderr, 4000),
            )),
            _ => None,
        });
        let waited = launched
            .waited
            .map_err(|message| failure(message, None, false, &stderr));
        let files_changed = |label: &str| -> Vec<String> {
            let (Some(git), Some(from)) = (
                &held.ws.git,
                held.state.phases[idx]
                    .checkpoint
                    .as_ref()
                    .and_then(|c| c.snapshot.clone()),
            ) else {
                return Vec::new();
            };
            git.end_snapshot(
                &from,
                &format!("refs/baton/{id}/{label}/end"),
                "baton: phase end",
            )
            .unwrap_or_default()
        };
        let elapsed = started.elapsed().as_millis() as i64;
        let result = match waited {
            // A built-in CLI may fail and still exit 0 (a refused write, an
            // API error): its stream says.
            Ok(Waited::Exited(status)) if matches!(judged, Some(Err(_))) => {
                let Some(Err((why, _))) = judged else {
                    unreachable!()
                };
                Err(failure(why, status.code(), false, &stderr))
            }
            Ok(Waited::Exited(status)) if status.success() => {
                let judged = judged.and_then(|j| j.ok());
                let output = match &judged {
                    Some((_, transcript)) => process::tail(transcript, 16_000).to_string(),
                    None => process::read_tail(&stdout, 16_000),
                };
                let summary = std::fs::read_to_string(&summary_file)
                    .ok()
                    .map(|s| s.trim().to_string())
                    .filter(|s| !s.is_empty())
                    .or_else(|| judged.map(|(last, _)| last).filter(|s| !s.is_empty()))
                    .unwrap_or_else(|| {
                        output
                            .lines()
                            .rev()
                            .find(|l| !l.trim().is_empty())
                            .unwrap_or("")
                            .trim()
                            .to_string()
                    });
                let summary = process::tail(&summary, 16_000).to_string();
                let files = files_changed(&label);
                // A queued task's work is on its branch (and remote) before
                // the journal says the phase passed.
                if held.ws.branch.is_some() {
                    self.still_holding(held)?;
                }
                let published = match held.ws.publish(&id, phase.as_str()) {
                    Err(crate::workspace::Unpublished::Moved(why)) => {
                        // A runner that lost the task pushed after this one
                        // fetched. Still ours? Then replace what it pushed.
                        self.still_holding(held)?;
                        tracing::debug!(task = %id, %why, "remote branch moved; publishing over it");
                        held.ws
                            .adopt_remote_tip()
                            .map_err(crate::workspace::Unpublished::Failed)
                            .and_then(|()| held.ws.publish(&id, phase.as_str()))
                    }
                    other => other,
                };
                match published {
                    Ok(()) => Ok((summary, output, files)),
                    Err(e) => Err(failure(e.message(), None, false, &stderr)),
                }
            }
            Ok(Waited::Exited(status)) => Err(failure(
                process::describe(&status),
                status.code(),
                false,
                &stderr,
            )),
            Ok(Waited::TimedOut) => Err(failure(
                format!(
                    "timed out after {}",
                    baton_core::time::human_millis(def.timeout_ms.unwrap_or(0) as i64)
                ),
                None,
                true,
                &stderr,
            )),
            Ok(Waited::Stopped(Stop::Cancelled)) => {
                self.decide_commit(
                    held,
                    Input::Cancel {
                        reason: "cancelled by `baton cancel`".into(),
                    },
                )?;
                self.observer.phase_finished(
                    &id,
                    phase.as_str(),
                    PhaseStatus::Pending,
                    elapsed,
                    "cancelled",
                );
                return Ok(Some(Outcome::Cancelled));
            }
            Ok(Waited::Stopped(Stop::Interrupted)) => {
                let why = "baton was stopped by a signal while the phase ran".to_string();
                self.decide_commit(held, Input::Interrupt { reason: why })?;
                self.observer.phase_finished(
                    &id,
                    phase.as_str(),
                    PhaseStatus::Pending,
                    elapsed,
                    "interrupted",
                );
                return Ok(Some(Outcome::Interrupted(format!(
                    "phase {phase} was interrupted; `baton resume {id}` runs it again from its start"
                ))));
            }
            Ok(Waited::Stopped(Stop::LeaseLost)) => {
                return Err(Error::busy(format!(
                    "lost the lease of task {id} to another process"
                )));
            }
            Ok(Waited::WaitFailed(e)) => Err(failure(
                format!("lost track of the process: {e}"),
                None,
                false,
                &stderr,
            )),
            Err(f) => Err(f),
        };
        match result {
            Ok((summary, output, files)) => {
                self.decide_commit(
                    held,
                    Input::Pass {
                        phase: phase.clone(),
                        summary: summary.clone(),
                        output,
                        files_changed: files,
                    },
                )?;
                self.crash_point("after-pass", phase.as_str());
                render::phase_output(&dir, &held.state, idx)?;
                self.observer.phase_finished(
                    &id,
                    phase.as_str(),
                    PhaseStatus::Pass,
                    elapsed,
                    &summary,
                );
            }
            Err(mut f) => {
                f.files_changed = files_changed(&label);
                let detail = match f.stderr_tail.lines().rev().find(|l| !l.trim().is_empty()) {
                    Some(line) => format!("{}: {}", f.message, line.trim()),
                    None => f.message.clone(),
                };
                self.decide_commit(
                    held,
                    Input::Fail {
                        phase: phase.clone(),
                        failure: f,
                    },
                )?;
                self.observer.phase_finished(
                    &id,
                    phase.as_str(),
                    PhaseStatus::Failed,
                    elapsed,
                    &detail,
                );
            }
        }
        Ok(None)
    }

    /// Fails the started attempt of `phase` before its process could be
    /// spawned (what it would be given is unusable).
    fn fail_unstarted(
        &self,
        held: &mut Held,
        phase: &baton_core::PhaseId,
        started: std::time::Instant,
        message: String,
    ) -> Result<Option<Outcome>> {
        let failure = Failure {
            message: message.clone(),
            exit_code: None,
            timed_out: false,
            stderr_tail: String::new(),
            files_changed: Vec::new(),
        };
        self.decide_commit(
            held,
            Input::Fail {
                phase: phase.clone(),
                failure,
            },
        )?;
        self.observer.phase_finished(
            &held.state.task_id,
            phase.as_str(),
            PhaseStatus::Failed,
            started.elapsed().as_millis() as i64,
            &message,
        );
        Ok(None)
    }

    // ----- stopping and cleaning up --------------------------------------

    /// `baton cancel`: stops a task (asking its live runner, or directly).
    pub fn cancel(&self, id: &TaskId) -> Result<()> {
        let snap = self.load(id)?;
        if matches!(
            snap.state.status,
            TaskStatus::Complete | TaskStatus::Cancelled
        ) {
            let hint = if snap.state.status == TaskStatus::Complete {
                format!("there is nothing to stop; `baton rm {id}` deletes its record")
            } else {
                format!(
                    "it is stopped already; `baton resume {id} --from PHASE` runs phases again, `baton rm {id}` deletes its record"
                )
            };
            return Err(Error::bad_input(format!(
                "task {id} is already {}",
                snap.state.status.as_str()
            ))
            .hint(hint));
        }
        if let (Liveness::Live, Some(l)) = (self.liveness(snap.lease.as_ref()), &snap.lease)
            && l.owner != self.owner
        {
            self.store.request_cancel(id)?;
            self.observer
                .info(&format!("asked {} to stop task {id}", l.owner.describe()));
            let until = std::time::Instant::now() + Duration::from_secs(20);
            while std::time::Instant::now() < until {
                std::thread::sleep(Duration::from_millis(100));
                let s = self.load(id)?;
                if s.state.status == TaskStatus::Cancelled {
                    return Ok(());
                }
                if !self.liveness(s.lease.as_ref()).is_live() {
                    break;
                }
            }
            let s = self.load(id)?;
            if s.state.status == TaskStatus::Cancelled {
                return Ok(());
            }
            if self.liveness(s.lease.as_ref()).is_live() {
                return Err(Error::op(format!("task {id} did not stop within 20s"))
                    .hint("try again, or kill the runner's process"));
            }
        }
        let snap = self.load(id)?;
        let mut held = self.take(id, &snap, None)?;
        if let Some(p) = held.state.in_progress().and_then(|p| p.process.clone())
            && self.ran_here(&snap)
        {
            process::kill_orphan(&p);
        }
        let r = self.decide_commit(
            &mut held,
            Input::Cancel {
                reason: "cancelled by `baton cancel`".into(),
            },
        );
        self.release(held);
        r
    }

    /// `baton resume ID --queue`: hands a queued task that failed (or whose
    /// timer is due) back to the workers instead of running it here.
    pub fn requeue(&self, id: &TaskId) -> Result<Outcome> {
        let snap = self.load(id)?;
        if !snap.queued {
            return Err(Error::bad_input(format!(
                "task {id} was not queued, so it has no branch for workers to run it on"
            ))
            .hint(format!("run it here with `baton resume {id}`")));
        }
        match self.status_of(&snap) {
            DisplayStatus::Queued => {
                self.observer
                    .info(&format!("task {id} is already QUEUED for the workers"));
                return Ok(Outcome::Queued);
            }
            DisplayStatus::Running => {
                let l = snap.lease.as_ref().expect("running has a lease");
                return Err(self.busy(id, l));
            }
            DisplayStatus::Complete | DisplayStatus::Cancelled => {
                return Err(Error::bad_input(format!(
                    "task {id} is {}; there is nothing left to run",
                    snap.state.status.as_str()
                ))
                .hint(format!(
                    "run phases again here with `baton resume {id} --from PHASE`"
                )));
            }
            DisplayStatus::Waiting => {
                if let Some(w) = self.wait_not_due(&snap.state) {
                    return Ok(Outcome::Waiting(w));
                }
            }
            DisplayStatus::Failed | DisplayStatus::Crashed => {}
        }
        let mut held = self.take(id, &snap, None)?;
        let result = (|| {
            match held.state.waiting_phase().map(|p| p.id.clone()) {
                Some(p) if held.state.status == TaskStatus::Waiting => {
                    self.decide_commit(&mut held, Input::TimerDue { phase: p })?
                }
                _ if held.state.status == TaskStatus::Failed => {
                    self.decide_commit(&mut held, Input::Resume { crashed: false })?
                }
                _ => {}
            }
            self.decide_commit(
                &mut held,
                Input::Note {
                    phase: None,
                    text: "handed back to the workers (`baton resume --queue`)".into(),
                },
            )
        })();
        // Releasing a queued task wakes idle workers.
        self.release(held);
        result?;
        self.observer
            .info(&format!("task {id} is handed back to the workers"));
        Ok(Outcome::Queued)
    }

    /// Whether the task's last runner was on this host: a recorded pid means
    /// nothing on another machine.
    fn ran_here(&self, snap: &TaskSnapshot) -> bool {
        snap.lease
            .as_ref()
            .is_none_or(|l| l.owner.host == self.local.host)
    }

    /// `baton rm`: deletes a task's record, rendered files and hidden refs.
    pub fn remove(&self, id: &TaskId) -> Result<()> {
        let snap = self.load(id)?;
        if let (Liveness::Live, Some(l)) = (self.liveness(snap.lease.as_ref()), &snap.lease) {
            return Err(self.busy(id, l));
        }
        if let Some(p) = snap.state.in_progress().and_then(|p| p.process.clone())
            && self.ran_here(&snap)
        {
            process::kill_orphan(&p);
        }
        self.store.delete_task(id)?;
        let dir = self.project.task_dir(id);
        if dir.exists() {
            fs_err::remove_dir_all(&dir)?;
        }
        if let Some(g) = &self.git {
            let _ = g.delete_refs(&format!("refs/baton/{id}/"));
            let wt = self.project.baton_dir().join("worktrees").join(id.as_str());
            if wt.exists() {
                // Without --force: git refuses when the worktree holds changes
                // not committed; its branch baton/<id> keeps every commit.
                let path = wt.display().to_string();
                if let Err(e) = g.run(&["worktree", "remove", &path], &[]) {
                    self.observer.info(&format!(
                        "kept the worktree {path}: {e} (branch baton/{id} keeps its commits)"
                    ));
                }
            }
        }
        if self.project.current_task().as_ref() == Some(id) {
            let _ = std::fs::remove_file(self.project.current_file());
        }
        Ok(())
    }

    /// `baton clean`: the completed tasks whose records would be deleted.
    pub fn clean_candidates(&self) -> Result<Vec<TaskId>> {
        Ok(self
            .list()?
            .into_iter()
            .filter(|(_, d)| *d == DisplayStatus::Complete)
            .map(|(t, _)| t.id)
            .collect())
    }

    /// Deletes the records of completed tasks, keeping their rendered files
    /// (marked as cleaned, so `doctor` does not rebuild them).
    pub fn clean(&self, ids: &[TaskId]) -> Result<usize> {
        let mut n = 0;
        for id in ids {
            let dir = self.project.task_dir(id);
            if dir.is_dir() {
                let stamp = format!("record deleted by `baton clean` at {}\n", self.now());
                render::atomic_write(&dir.join(crate::doctor::CLEANED), stamp.as_bytes())?;
            }
            if self.store.delete_task(id)? {
                n += 1;
            }
        }
        Ok(n)
    }

    pub fn git(&self) -> Option<&Git> {
        self.git.as_ref()
    }

    pub fn local(&self) -> &LocalHost {
        &self.local
    }

    pub fn task_dir(&self, id: &TaskId) -> PathBuf {
        self.project.task_dir(id)
    }
}

/// The first phase `def` needs that has not passed (or been skipped).
fn unmet_need<'a>(
    state: &TaskState,
    def: &'a baton_core::workflow::Phase,
) -> Option<&'a baton_core::PhaseId> {
    def.needs
        .iter()
        .find(|n| !state.phase(n.as_str()).is_some_and(|p| p.status.is_done()))
}

/// Parses `K=V` pairs; `example` is a valid one, for the hint.
fn parse_pairs(items: &[String], flag: &str, example: &str) -> Result<BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    for item in items {
        match item.split_once('=') {
            Some((k, v)) if !k.trim().is_empty() => {
                out.insert(k.trim().to_string(), v.to_string());
            }
            _ => {
                return Err(Error::bad_input(format!(
                    "{flag} {item:?} is not of the form KEY=VALUE"
                ))
                .hint(format!("write e.g. {flag} {example}")));
            }
        }
    }
    Ok(out)
}

/// A random (version 4) UUID, for the CLIs that take a session id.
fn new_uuid() -> String {
    use std::io::Read;
    let mut b = [0u8; 16];
    let read = std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut b));
    if read.is_err() {
        let n = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0)
            ^ u128::from(std::process::id()) << 64;
        b = n.to_le_bytes();
    }
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

/// Renews a lease in the background and watches for cancel requests.
struct Heartbeat {
    stop: Arc<AtomicBool>,
    cancel: Arc<AtomicBool>,
    lost: Arc<AtomicBool>,
    handle: Option<std::thread::JoinHandle<()>>,
}

impl Heartbeat {
    fn start(
        store: Arc<dyn Store>,
        id: TaskId,
        owner: LeaseOwner,
        clock: Arc<dyn Clock>,
        ttl_ms: i64,
    ) -> Heartbeat {
        let stop = Arc::new(AtomicBool::new(false));
        let cancel = Arc::new(AtomicBool::new(false));
        let lost = Arc::new(AtomicBool::new(false));
        let (s, c, l) = (stop.clone(), cancel.clone(), lost.clone());
        let tick = Duration::from_millis((ttl_ms / 3).clamp(100, 1000) as u64);
        let handle = std::thread::spawn(move || {
            let mut last = std::time::Instant::now();
            let mut renewed = last;
            let mut failures = 0u32;
            while !s.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(25));
                if last.elapsed() < tick {
                    continue;
                }
                last = std::time::Instant::now();
                match store.renew(&id, &owner, clock.now().plus_millis(ttl_ms)) {
                    Ok(RenewOutcome::Renewed { cancel_requested }) => {
                        if failures > 0 {
                            tracing::debug!(
                                task = %id,
                                failures,
                                "heartbeat renewed the lease again"
                            );
                        }
                        failures = 0;
                        renewed = last;
                        if cancel_requested && !c.load(Ordering::SeqCst) {
                            tracing::debug!(task = %id, "heartbeat saw a cancel request");
                        }
                        if cancel_requested {
                            c.store(true, Ordering::SeqCst);
                        }
                    }
                    Ok(RenewOutcome::Lost) => {
                        tracing::debug!(
                            task = %id,
                            ours = %owner.describe(),
                            "heartbeat: the lease was taken by another process"
                        );
                        l.store(true, Ordering::SeqCst);
                        break;
                    }
                    Err(e) => {
                        failures += 1;
                        tracing::debug!(
                            task = %id,
                            failures,
                            since_renewed_ms = renewed.elapsed().as_millis() as u64,
                            ttl_ms,
                            error = %e,
                            "heartbeat renew failed"
                        );
                        tracing::warn!("heartbeat of {id} failed: {e}");
                    }
                }
            }
        });
        Heartbeat {
            stop,
            cancel,
            lost,
            handle: Some(handle),
        }
    }
}

impl Drop for Heartbeat {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}
