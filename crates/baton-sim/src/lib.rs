//! baton-sim: a deterministic simulator of baton's pure core, in the manner
//! of FoundationDB's and TigerBeetle's simulation testing. Simulated
//! processes run tasks (the task machine), a team (the team machine) and
//! agent instances (the review loop's rules), over
//! [`baton_store::SimStore`], a real SQLite store under a simulated
//! clock and seeded write faults; a seeded scheduler interleaves them step
//! by step with crashes, lease expiries, clock skew and racing resumers;
//! an oracle checks the invariants after every step. One seed, one run: the
//! same seed gives the same trace, so a failing seed replays exactly.
//!
//! Modules, one concern each: `rng` (the seeded generator), `world` (the
//! store, clock, processes and trace of one run), `sched` (who does what,
//! and the quiet period), `tasks`, `teams` and `instances` (the actors),
//! `invariants` (the oracle) and `ledger` (what it remembers between
//! steps).

pub mod instances;
pub mod invariants;
pub mod ledger;
pub mod rng;
pub mod sched;
pub mod tasks;
pub mod teams;
pub mod world;

pub use world::{Broken, Config};

/// What one seed's run found.
#[derive(Debug, Clone)]
pub struct Report {
    pub seed: u64,
    pub steps: u64,
    pub invariants: u64,
    /// Broken invariants (the run stops at the first step with one).
    pub breaks: Vec<String>,
    pub trace: Vec<String>,
    /// SHA-256 of the trace.
    pub digest: String,
}

/// Runs one seed.
pub fn run(seed: u64, cfg: &Config) -> Report {
    let mut w = world::World::new(seed, cfg);
    let wf = tasks::workflow();
    tasks::setup(&w, &wf);
    teams::setup(&w);
    while w.step < cfg.steps && w.breaks.is_empty() {
        w.step += 1;
        sched::step(&mut w, &wf, cfg.tasks, cfg.instances);
        check_touched(&mut w);
    }
    if w.breaks.is_empty() {
        w.step += 1;
        sched::quiet(&mut w, &wf);
        check_all(&mut w);
        invariants::all_terminal(&mut w);
        invariants::instances_settled(&mut w);
    }
    Report {
        seed,
        steps: u64::from(w.step),
        invariants: w.invariants,
        digest: w.digest(),
        breaks: w.breaks,
        trace: w.trace,
    }
}

/// The invariants over what the step wrote to.
fn check_touched(w: &mut world::World) {
    for id in std::mem::take(&mut w.dirty) {
        invariants::task(w, &id);
    }
    if std::mem::take(&mut w.team_dirty) {
        invariants::team(w, teams::TEAM);
    }
    if std::mem::take(&mut w.inst_dirty) {
        invariants::instances(w, false);
    }
}

/// Every invariant over everything stored.
fn check_all(w: &mut world::World) {
    for i in 0..w.tasks_created {
        invariants::task(w, &format!("t{i}"));
    }
    invariants::team(w, teams::TEAM);
    invariants::instances(w, true);
}

/// Figures over many seeds, and the first break found.
#[derive(Debug, Clone, Default)]
pub struct Campaign {
    pub seeds: u64,
    pub steps: u64,
    pub invariants: u64,
    pub breaks: u64,
    pub first_break: Option<Report>,
}

impl Campaign {
    pub fn add(&mut self, r: Report) {
        self.seeds += 1;
        self.steps += r.steps;
        self.invariants += r.invariants;
        if !r.breaks.is_empty() {
            self.breaks += 1;
            if self.first_break.is_none() {
                self.first_break = Some(r);
            }
        }
    }

    /// The figures line the test script and the campaign print.
    pub fn figures(&self) -> String {
        format!(
            "simulator: seeds run: {}; steps: {}; invariants checked: {}; breaks found: {}",
            self.seeds, self.steps, self.invariants, self.breaks
        )
    }
}

/// How to replay one seed (in the broken mode it ran in).
pub fn replay_command(seed: u64, broken: Broken) -> String {
    let mode = match broken {
        Broken::Nothing => "",
        Broken::UnfencedStore => "BATON_SIM_BROKEN=unfenced ",
        Broken::FeedbackThenTurn => "BATON_SIM_BROKEN=feedback-then-turn ",
    };
    format!("{mode}BATON_SIM_SEED={seed} cargo test -p baton-sim --test seeds -- --nocapture")
}
