//! The engine: creates tasks, holds their leases, runs their phases one at a
//! time and commits every transition through the pure state machine.
//!
//! This file is the façade the CLI calls: the [`Engine`], the types of its
//! options and answers, and `commit`, through which every journal write
//! goes. What the engine does lives in one module per capability, declared
//! below, each opening with what it holds.

mod activity;
mod answer;
mod buffer;
mod claim;
mod crash;
mod create;
mod deliver;
mod deliveries;
mod detach;
mod diff;
mod drive;
mod hold;
mod manage;
mod output;
mod phase;
mod play;
mod progress;
pub(crate) use create::parse_pairs;
pub use phase::new_uuid;
pub(crate) use phase::{attempt_label, summary_file};
mod read;
mod restore;
mod resume;
mod role_workspaces;
mod supervise;
mod turn;

pub use activity::Activity;
pub use deliver::{Awaited, Decision, HandedOver, Passed, ignored, moves_instances, new_delivery};
pub use deliveries::{Delivered, DeliveryWriter};
pub use diff::{WorkDiff, worktree_diff};
pub use manage::CLEANED;
pub use output::{Cursor as OutputCursor, Output, OutputLine};
pub use role_workspaces::WorkspaceView;
pub use supervise::{AutoRestart, Need, Triage};

use crate::error::Result;
use crate::project::Project;
use crate::render;
use crate::workdir::Workdir;
use baton_core::lease::{DisplayStatus, Lease, LeaseOwner, Liveness, LocalHost};
use baton_core::machine::{self, Input};
use baton_core::state::{AgentSession, PhaseStatus};
use baton_core::workflow::Workflow;
use baton_core::{Clock, Event, EventRecord, TaskId, TaskState, Timestamp, document};
use baton_store::{Durability, PhaseWrites, Store};
use baton_sys::git::Git;
use baton_sys::host;
use baton_sys::process;
use hold::Heartbeat;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

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
    /// A running phase's sign of life: the last line it printed (a
    /// command's output, what an agent did last; empty before anything),
    /// as written (untrusted), and how long its process has run. Called
    /// when that line changes and about once a second.
    fn phase_progress(&self, _task: &TaskId, _phase: &str, _elapsed_ms: i64, _last_line: &str) {}
    /// An agent run ended: the tokens it used, by the CLI it ran on
    /// (`command` for an agent run through `command = [...]`).
    fn agent_ended(&self, _task: &TaskId, _cli: &str, _usage: &baton_core::state::Usage) {}
    /// A renewal of the task's lease failed (the store did not answer);
    /// the heartbeat tries again.
    fn lease_renewal_failed(&self, _task: &TaskId) {}
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
    /// The task continues a session begun outside baton (`baton import`),
    /// or an agent instance's earlier turn.
    pub imported: Option<Imported>,
    /// The task is a turn of this agent instance: it runs in the
    /// instance's worktree.
    pub instance: Option<baton_core::instance::InstanceId>,
    /// Start over even where the repository's progress record says a
    /// deleted task of this id and workflow got further (`--fresh`).
    pub fresh: bool,
    /// The task continues a session log (`baton session resume`): these
    /// phases passed already, with the summaries the log gives.
    pub from_log: Option<FromLog>,
}

/// What a task continuing a session log takes over from it.
#[derive(Debug, Clone)]
pub struct FromLog {
    /// Where the log was read (said in the journal).
    pub source: String,
    pub passed: Vec<baton_core::PhaseState>,
}

/// A CLI session begun outside baton, read from its native transcript.
#[derive(Debug, Clone)]
pub struct Imported {
    pub session: AgentSession,
    pub first_prompt: Option<String>,
    pub events: Vec<baton_core::agent_stream::AgentEvent>,
}

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
    /// The supervisor restarts a crashed task (`baton serve`).
    pub auto_restart: Option<AutoRestart>,
}

pub struct Engine {
    pub project: Project,
    pub(crate) store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    observer: Arc<dyn Observer>,
    owner: LeaseOwner,
    local: LocalHost,
    ttl_ms: i64,
    git: Option<Git>,
    /// Set by the CLI's signal handlers (SIGINT, SIGTERM, SIGHUP).
    interrupt: Arc<AtomicBool>,
    /// Set when a worker drains (SIGTERM): the running phase goes on,
    /// and the task is released before the next one.
    drain: Arc<AtomicBool>,
    /// A worker's: where the running phases' process groups are listed
    /// for its watchdog.
    phase_groups: Option<Arc<process::PhaseGroups>>,
    /// Who keeps the background runs this engine starts (`baton serve`:
    /// to reap them, and to stop them when it stops); none: they are let
    /// go, as `baton run --detach` lets them go.
    background: Option<Keeper>,
    pub command: String,
    /// What is taken out of every text before it is journaled: secrets in
    /// their common formats, and the values of the environment variables
    /// (this process's and the agents' own) whose names look secret.
    redactor: baton_core::redact::Redactor,
}

/// Who takes the background runs an engine starts.
pub type Keeper = Arc<dyn Fn(std::process::Child) + Send + Sync>;

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
    ws: Workdir,
    /// The last phase's end snapshot was taken just now, in this drive,
    /// with nothing run since: the next phase's start snapshot is that
    /// same commit when HEAD has not moved (no stat check of the tree).
    just_snapshotted: bool,
    /// Its `state.json`, written in the background after each commit.
    rendered: render::Background,
    /// Its session log, kept current.
    log: crate::render::LogWriter,
}

impl Engine {
    /// `baton store copy`: copies this engine's store into `to`
    /// (`crate::store::copy`).
    pub fn copy_into(&self, to: &dyn Store) -> Result<crate::store::CopyReport> {
        crate::store::copy(&*self.store, to)
    }

    pub fn open(project: Project, observer: Arc<dyn Observer>) -> Result<Engine> {
        let store = crate::store::Location::of(&project)?.open()?;
        let clock = crate::clock::for_store(&store)?;
        Self::with_store(project, store, clock, observer)
    }

    pub fn with_store(
        project: Project,
        store: Arc<dyn Store>,
        clock: Arc<dyn Clock>,
        observer: Arc<dyn Observer>,
    ) -> Result<Engine> {
        let ttl_ms = project.config.lease_ttl_ms()?;
        let git = crate::repo::open(&project.root);
        Ok(Engine {
            store,
            clock,
            observer,
            owner: host::this_owner(),
            local: host::local_host(),
            ttl_ms,
            git,
            interrupt: Arc::new(AtomicBool::new(false)),
            drain: Arc::new(AtomicBool::new(false)),
            phase_groups: None,
            background: None,
            command: "baton".into(),
            redactor: redactor_of(&project),
            project,
        })
    }

    /// Shares a flag that, once set, makes the engine stop the running
    /// phase (killing its process group), record the interruption and return.
    pub fn with_interrupt(mut self, flag: Arc<AtomicBool>) -> Self {
        self.interrupt = flag;
        self
    }

    /// Shares a flag that, once set, makes the engine let the running
    /// phase finish and release the task before the next one (a worker
    /// that drains).
    pub fn with_drain(mut self, flag: Arc<AtomicBool>) -> Self {
        self.drain = flag;
        self
    }

    /// Hands the background runs this engine starts (an agent
    /// instance's turns) to `keeper` instead of letting them go.
    pub fn with_background(mut self, keeper: Keeper) -> Self {
        self.background = Some(keeper);
        self
    }

    /// A worker's engines list their phases' process groups for the
    /// worker's watchdog.
    pub fn with_phase_groups(mut self, groups: Arc<process::PhaseGroups>) -> Self {
        self.phase_groups = Some(groups);
        self
    }

    /// The time by the engine's clock: the store server's for a shared
    /// store (`crate::clock`), so every machine stamps and judges alike.
    pub fn now(&self) -> Timestamp {
        self.clock.now()
    }

    /// Rewrites the files an attempt left (its output, errors, summary)
    /// without the secrets in them, atomically, in bounded memory
    /// (`render::redact_file`): a phase that printed gigabytes is read a
    /// line at a time, and rewritten only when it holds a secret.
    pub(crate) fn redact_files(&self, files: &[&std::path::Path]) {
        for f in files {
            if let Err(e) = render::redact_file(&self.redactor, f) {
                tracing::warn!(file = %f.display(), error = %e, "could not redact");
            }
        }
    }

    /// `item` without the secrets in its strings (see `baton_core::redact`).
    pub fn redacted<T: serde::Serialize + serde::de::DeserializeOwned>(&self, item: T) -> T {
        self.redactor.item(item)
    }

    /// Who this process is, as leases and teams name it.
    pub fn owner(&self) -> &LeaseOwner {
        &self.owner
    }

    pub fn observer(&self) -> &dyn Observer {
        self.observer.as_ref()
    }

    /// How long a lease lives without a heartbeat.
    pub(crate) fn ttl_ms(&self) -> i64 {
        self.ttl_ms
    }

    /// A crash point (`baton_core::crash::POINTS`; `crate::crash_point`).
    pub(crate) fn crash_point(&self, point: &str, key: &str) {
        crate::crash_point::at(point, key);
    }

    /// Test hook (`BATON_TEST_PAUSE_AT=POINT:PHASE`): at that point, the
    /// engine writes `paused-POINT` in the task's folder and waits (at most
    /// a minute) until a test removes it, so a race can be played in a
    /// chosen order.
    pub(crate) fn pause_point(&self, point: &str, task: &TaskId, phase: &str) {
        if std::env::var("BATON_TEST_PAUSE_AT").ok().as_deref() != Some(&format!("{point}:{phase}"))
        {
            return;
        }
        let marker = self.project.task_dir(task).join(format!("paused-{point}"));
        if std::fs::write(&marker, "").is_err() {
            return;
        }
        let until = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while marker.exists() && std::time::Instant::now() < until {
            std::thread::sleep(std::time::Duration::from_millis(20));
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
            let ev = self.redactor.item(ev);
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
        // The process a phase runs dies with the machine: its record (and
        // that of its exit) must survive baton's crash (to find an orphan,
        // to account for an exit), not a power loss, after which the phase
        // simply runs again. The document shows nothing of either, so they
        // are not rendered either.
        let process_only = records.iter().all(|r| {
            matches!(
                r.event,
                Event::PhaseProcess { .. } | Event::PhaseExited { .. }
            )
        });
        let durability = if process_only {
            Durability::Process
        } else {
            Durability::Disk
        };
        // On failure the in-memory state is ahead of the store; every caller
        // stops driving on an error, so it is never used again.
        let started = std::time::Instant::now();
        let committed = self
            .store
            .commit(&self.owner, &held.state, &writes, &records, durability);
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
        if let Some(last) = records.last() {
            self.crash_point("journal-committed", last.event.kind());
        }
        if process_only {
            return Ok(());
        }
        if baton_core::progress::moves(&records)
            && let Some(p) = baton_core::progress::of(&held.state)
            && let Err(e) = self.store.put_progress(&p)
        {
            // A projection: the next stage writes it again.
            tracing::warn!(task = %held.state.task_id, error = %e, "progress record not written");
        }
        let doc = document::render(
            &held.state,
            &held.wf,
            DisplayStatus::of(held.state.status, &Liveness::Live),
            Some(&held.lease),
        );
        let dir = self.project.task_dir(&held.state.task_id);
        held.rendered.state_json(&dir, &doc)?;
        if let Some(last) = records.last() {
            self.crash_point("state-rendered", last.event.kind());
        }
        held.log.committed(
            &records,
            self.store.as_ref(),
            &held.state,
            &held.wf,
            &self.project.sessions_dir(),
            &mut held.rendered,
        )?;
        Ok(())
    }

    /// Writes the task's session log when a commit left it due: called
    /// while a phase's process runs, when nothing may be committed for a
    /// long time. A failed write is only logged (the log is derived).
    fn tick_log(&self, held: &mut Held) {
        if let Err(e) = held.log.tick(
            self.store.as_ref(),
            &held.state,
            &held.wf,
            &self.project.sessions_dir(),
            &mut held.rendered,
        ) {
            tracing::warn!(task = %held.state.task_id, error = %e, "session log not written");
        }
    }

    /// The project's own folder as a task's workspace.
    fn project_workspace(&self) -> Workdir {
        Workdir::project(&self.project, self.git.clone())
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

/// The redactor of `project`: this process's environment and every
/// agent's own `env`, where a name looks secret.
fn redactor_of(project: &Project) -> baton_core::redact::Redactor {
    let mut env: Vec<(String, String)> = std::env::vars().collect();
    // The store's URL in config.toml: its password, if it has one.
    if let Some(url) = &project.config.store.url {
        env.push(("store".into(), url.clone()));
    }
    for a in project.config.agents.values() {
        env.extend(a.env.iter().map(|(k, v)| (k.clone(), v.clone())));
    }
    baton_core::redact::Redactor::with_env(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
}
