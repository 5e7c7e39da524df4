//! The seeded scheduler: each step it picks a process and what that process
//! does, so racing processes are interleaved by the seed, not by threads,
//! and a failing seed replays exactly. Faults run for the steps, then a
//! quiet period (no faults, leases left to expire) must bring every task
//! to an end.

use crate::world::{LEASE_TTL_MS, World};
use crate::{instances, invariants, tasks, teams};
use baton_core::Workflow;
use baton_store::Store;

/// What a process can do in one step, with its weight.
#[derive(Debug, Clone, Copy)]
enum Action {
    Create,
    Drive,
    Judge,
    Take,
    Renew,
    Crash,
    Tick,
    Expire,
    TeamWork,
    Send,
    Spawn,
    AgentCall,
    TurnEnd,
    Outside,
}

/// The weights. Agents call baton often and their turns end often, so that
/// a coding agent's turn sees several reviews merge back before it ends
/// and their feedback waits at once: the race of two turns of one agent
/// ([`crate::Broken::FeedbackThenTurn`] is caught at 18 seeds in 500).
const ACTIONS: [(Action, u64); 14] = [
    (Action::Create, 6),
    (Action::Drive, 36),
    (Action::Judge, 10),
    (Action::Take, 10),
    (Action::Renew, 8),
    (Action::Crash, 3),
    (Action::Tick, 10),
    (Action::Expire, 3),
    (Action::TeamWork, 8),
    (Action::Send, 6),
    (Action::Spawn, 6),
    (Action::AgentCall, 48),
    (Action::TurnEnd, 8),
    (Action::Outside, 3),
];

fn pick_action(w: &mut World) -> Action {
    let total: u64 = ACTIONS.iter().map(|(_, n)| n).sum();
    let mut r = w.rng.below(total);
    for (a, n) in ACTIONS {
        if r < n {
            return a;
        }
        r -= n;
    }
    Action::Tick
}

/// One step of the faulty period.
pub fn step(w: &mut World, wf: &Workflow, max_tasks: usize, max_instances: usize) {
    let p = w.rng.below(w.procs.len() as u64) as usize;
    match pick_action(w) {
        Action::Create if w.tasks_created < max_tasks => tasks::create(w, p, wf),
        Action::Create | Action::Drive => {
            let held: Vec<String> = w.procs[p].held.keys().cloned().collect();
            if let Some(id) = w.rng.pick(&held).cloned() {
                tasks::drive(w, p, &id, wf);
            }
        }
        Action::Judge => {
            if let Some(id) = some_task(w) {
                tasks::judge(w, p, &id);
            }
        }
        Action::Take => tasks::take(w, p, wf),
        Action::Renew => {
            let held: Vec<String> = w.procs[p].held.keys().cloned().collect();
            if let Some(id) = w.rng.pick(&held).cloned() {
                tasks::renew(w, p, &id);
            }
        }
        Action::Crash => w.crash(p),
        Action::Tick => {
            let ms = w.rng.between(100, 5_000);
            w.clock.advance(ms);
            w.log(format!("clock +{ms} ms"));
        }
        Action::Expire => {
            let ms = LEASE_TTL_MS + w.rng.between(1, LEASE_TTL_MS / 2);
            w.clock.advance(ms);
            w.log(format!("clock +{ms} ms: leases not renewed expire"));
        }
        Action::TeamWork => {
            let who = teams::MEMBERS[p % teams::MEMBERS.len()];
            teams::work(w, p, who);
        }
        Action::Send => {
            let who = teams::MEMBERS[p % teams::MEMBERS.len()];
            teams::send(w, p, who);
        }
        Action::Spawn if w.instances_created < max_instances => instances::spawn(w, p),
        Action::Spawn | Action::AgentCall => instances::agent_call(w, p),
        Action::TurnEnd => instances::turn_end(w, p),
        Action::Outside => instances::outside(w, p),
    }
}

/// A task id the simulation may have created.
fn some_task(w: &mut World) -> Option<String> {
    if w.tasks_created == 0 {
        return None;
    }
    let i = w.rng.below(w.tasks_created as u64);
    Some(format!("t{i}"))
}

/// The quiet period: no more faults, every lease left to expire, and
/// process 0 takes over and drives each unfinished task (as a supervisor
/// or a person's `baton resume` would). Bounded: a task that does not end
/// within the bound is a liveness break, reported by the final check.
pub fn quiet(w: &mut World, wf: &Workflow) {
    w.store.set_rates(0, 0);
    w.log("quiet: faults off".into());
    for _round in 0..4 {
        w.clock.advance(LEASE_TTL_MS + 5_000);
        let open: Vec<String> = w
            .store
            .inner()
            .list()
            .expect("oracle reads")
            .into_iter()
            .filter(|t| !tasks::terminal(t.status))
            .map(|t| t.id.to_string())
            .collect();
        if open.is_empty() {
            break;
        }
        for id in open {
            w.procs[0].held.remove(&id);
            tasks::judge(w, 0, &id);
            tasks::take(w, 0, wf);
            for _ in 0..40 {
                if !w.procs[0].held.contains_key(&id) {
                    break;
                }
                tasks::drive(w, 0, &id, wf);
            }
            invariants::task(w, &id);
        }
    }
    teams::resend_all(w);
    instances::quiet(w);
}
