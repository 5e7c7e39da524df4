//! The simulated world of one seed: the store, the clock, the processes, the
//! trace and the tally of checks. Everything an actor does goes through it,
//! so that every step is recorded and every write is checked.

use crate::rng::Rng;
use baton_core::lease::{Lease, LeaseOwner};
use baton_core::{TaskState, Timestamp};
use baton_store::{Faults, SimClock, SimStore, SqliteStore};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// How long a lease lasts without renewal, in simulated milliseconds.
pub const LEASE_TTL_MS: i64 = 30_000;

/// Where simulated time starts (2026-01-01), far from the epoch so that a
/// negative skew never makes a time negative.
pub const START_MS: i64 = 1_767_225_600_000;

/// One simulated process: its identity, its clock's skew, and what it
/// holds in memory (thrown away when it crashes).
#[derive(Debug)]
pub struct Process {
    pub name: String,
    /// Bumped at every restart: a restarted process is another owner.
    pub incarnation: u32,
    /// Its clock against the simulated one, in milliseconds.
    pub skew_ms: i64,
    /// The tasks it runs, with the state it decided from.
    pub held: BTreeMap<String, Held>,
    /// A takeover half done: it judged the lease and will try to acquire.
    pub judged: Option<Judged>,
    /// Its last read of the team (stale reads are what races are made of).
    pub team: Option<baton_core::team::Team>,
    /// Its last read of the agent instances (likewise).
    pub instances: Option<baton_core::instance::Instances>,
}

impl Process {
    pub fn owner(&self) -> LeaseOwner {
        LeaseOwner {
            host: self.name.clone(),
            boot_id: format!("boot-{}", self.incarnation),
            pid: 100 + self.incarnation,
            start_time: u64::from(self.incarnation),
            pid_ns: String::new(),
        }
    }
}

/// What can make a run report a break on purpose, to prove it would.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Broken {
    /// Nothing broken: any break is a real one.
    #[default]
    Nothing,
    /// The store forces in commits fencing refuses (`Faults::unfenced`).
    UnfencedStore,
    /// The old engine's `deliver_feedback`: busy judged once on the
    /// caller's read for every review, the delivery and the turn journaled
    /// by two steps (two turns of one agent ran at once).
    FeedbackThenTurn,
}

/// A run's settings.
#[derive(Debug, Clone)]
pub struct Config {
    pub steps: u32,
    pub processes: usize,
    pub tasks: usize,
    /// How many coding instances a run spawns at most (their reviews come
    /// on top).
    pub instances: usize,
    pub broken: Broken,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            steps: 150,
            processes: 3,
            tasks: 3,
            instances: 2,
            broken: Broken::Nothing,
        }
    }
}

/// A task a process runs: the state it decides from.
#[derive(Debug, Clone)]
pub struct Held {
    pub state: TaskState,
}

/// A takeover judged but not yet attempted: the owner to replace.
#[derive(Debug, Clone)]
pub struct Judged {
    pub task: String,
    pub replace: Option<LeaseOwner>,
}

/// The world of one seed.
pub struct World {
    pub seed: u64,
    pub rng: Rng,
    pub store: SimStore,
    pub clock: SimClock,
    pub procs: Vec<Process>,
    pub trace: Vec<String>,
    pub invariants: u64,
    pub breaks: Vec<String>,
    pub step: u32,
    /// Tasks created so far (some creations may be unknown to their
    /// creator: a write cut after it landed).
    pub tasks_created: usize,
    pub ledger: crate::ledger::Ledger,
    /// Tasks a step wrote to (or tried to): the oracle checks these after
    /// the step, and everything at the end.
    pub dirty: std::collections::BTreeSet<String>,
    /// Whether a step wrote to the team.
    pub team_dirty: bool,
    /// The broken mode of the run (the instance actors force their commits
    /// in as the store forces task commits).
    pub broken: Broken,
    /// Coding instances spawned so far (or tried: a cut may hide one).
    pub instances_created: usize,
    /// Pull requests opened so far (their numbers).
    pub prs_opened: u32,
    /// The agent turns' tasks, by task id: what the simulation knows of
    /// the processes that run each instance's agent.
    pub turns: BTreeMap<String, Turn>,
    /// Whether a step wrote to the instances.
    pub inst_dirty: bool,
    /// The instance oracle's incremental replay.
    pub inst_oracle: crate::ledger::InstanceOracle,
}

/// An agent turn: a task of the built-in turn workflow, run apart from the
/// simulated processes (its lease and journal are the task actors' story).
#[derive(Debug, Clone)]
pub struct Turn {
    pub instance: String,
    pub state: TurnState,
    /// How many times it was reported ended (once at most).
    pub ends: u32,
}

/// Where an agent turn stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TurnState {
    /// Created, but its run was never started (the process that created
    /// it stopped before detaching it): it looks crashed, and busy.
    Created,
    Running,
    /// Its agent stopped: done, or failed.
    Ended {
        ok: bool,
    },
}

impl World {
    pub fn new(seed: u64, cfg: &Config) -> World {
        let mut rng = Rng::new(seed);
        let clock = SimClock::manual(Timestamp(START_MS));
        let fault_seed = rng.fork();
        let before = rng.below(40_000);
        let after = rng.below(40_000);
        let mut faults = Faults::seeded(fault_seed, before, after);
        faults.unfenced = cfg.broken == Broken::UnfencedStore;
        let store = SimStore::new(
            SqliteStore::in_memory().expect("an in-memory SQLite opens"),
            clock.clone(),
            faults,
        );
        let procs = (0..cfg.processes)
            .map(|i| Process {
                name: format!("p{i}"),
                incarnation: 0,
                skew_ms: rng.between(-2_000, 2_000),
                held: BTreeMap::new(),
                judged: None,
                team: None,
                instances: None,
            })
            .collect();
        let mut w = World {
            seed,
            rng,
            store,
            clock,
            procs,
            trace: Vec::new(),
            invariants: 0,
            breaks: Vec::new(),
            step: 0,
            tasks_created: 0,
            ledger: Default::default(),
            dirty: Default::default(),
            team_dirty: false,
            broken: cfg.broken,
            instances_created: 0,
            prs_opened: 0,
            turns: BTreeMap::new(),
            inst_dirty: false,
            inst_oracle: Default::default(),
        };
        w.log(format!(
            "seed {seed}: faults {before}+{after} ppm, skews {:?}",
            w.procs.iter().map(|p| p.skew_ms).collect::<Vec<_>>()
        ));
        w
    }

    /// The simulated time.
    pub fn now(&self) -> Timestamp {
        self.clock.now().expect("the simulator's clock is manual")
    }

    /// Process `p`'s idea of the time.
    pub fn local_now(&self, p: usize) -> Timestamp {
        Timestamp(self.now().millis() + self.procs[p].skew_ms)
    }

    /// A lease for process `p`, from its own clock.
    pub fn new_lease(&self, p: usize) -> Lease {
        let now = self.local_now(p);
        Lease {
            owner: self.procs[p].owner(),
            acquired_at: now,
            expires_at: Timestamp(now.millis() + LEASE_TTL_MS),
        }
    }

    /// Process `p` crashes: it forgets all it held in memory and restarts
    /// as another owner.
    pub fn crash(&mut self, p: usize) {
        let proc = &mut self.procs[p];
        proc.held.clear();
        proc.judged = None;
        proc.team = None;
        proc.instances = None;
        proc.incarnation += 1;
        let line = format!(
            "{} crash: restarts as incarnation {}",
            proc.name, proc.incarnation
        );
        self.log(line);
    }

    pub fn log(&mut self, line: String) {
        self.trace.push(format!("{:>4} {line}", self.step));
    }

    /// Records a broken invariant (the run stops at the end of the step).
    pub fn broke(&mut self, what: String) {
        self.log(format!("BREAK {what}"));
        self.breaks.push(format!("step {}: {what}", self.step));
    }

    /// Counts one invariant checked; records a break when it does not hold.
    pub fn check(&mut self, holds: bool, what: impl FnOnce() -> String) {
        self.invariants += 1;
        if !holds {
            self.broke(what());
        }
    }

    /// The SHA-256 of the trace: equal digests, equal runs.
    pub fn digest(&self) -> String {
        let mut h = Sha256::new();
        for line in &self.trace {
            h.update(line.as_bytes());
            h.update(b"\n");
        }
        h.finalize().iter().map(|b| format!("{b:02x}")).collect()
    }
}
