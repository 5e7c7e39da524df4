//! Task actors: what the engine does with a task, step by step, so that the
//! scheduler can interleave processes between any two of its writes. A
//! process creates a task holding its lease, judges another's lease by its
//! own (skewed) clock, acquires it replacing only an expired owner, reads
//! the task again under the lease, journals the interrupted attempt,
//! resumes, starts and ends phase attempts, renews and releases. Every
//! write goes through [`commit`], which checks who held the lease.

use crate::world::{Held, Judged, LEASE_TTL_MS, World};
use baton_core::lease::{self, Liveness, LocalHost};
use baton_core::machine::{self, Failure, Input, NewTask, Next};
use baton_core::{EventRecord, PhaseId, TaskId, Workflow};
use baton_store::sim::is_injected;
use baton_store::{
    Acquire, Durability, Holder, PhaseWrites, RenewOutcome, Store, StoredDefinition,
};

/// The workflow every simulated task runs: a phase that may be retried, one
/// whose failures are skipped past, and one that halts the task.
pub const WORKFLOW: &str = "name = \"sim\"\n\
[[phase]]\nid = \"plan\"\nrun = \"true\"\nmax_attempts = 3\n\
[[phase]]\nid = \"build\"\nrun = \"true\"\nmax_attempts = 2\non_failure = \"skip\"\n\
[[phase]]\nid = \"ship\"\nrun = \"true\"\nmax_attempts = 4\n";

pub fn workflow() -> Workflow {
    Workflow::parse(WORKFLOW, "sim.toml", "sim", &|_| Err("no files".into()))
        .expect("the simulated workflow is valid")
}

/// Pins the workflow (before faults matter: set-up, not a step).
pub fn setup(w: &World, wf: &Workflow) {
    w.store
        .inner()
        .put_definition(&StoredDefinition {
            hash: wf.hash(),
            name: wf.name.clone(),
            json: serde_json::to_string(wf).expect("a workflow is JSON"),
        })
        .expect("the definition is stored");
}

/// Process `p` creates the next task, holding it.
pub fn create(w: &mut World, p: usize, wf: &Workflow) {
    let id = format!("t{}", w.tasks_created);
    w.tasks_created += 1;
    let task_id = TaskId::parse(&id).expect("a valid id");
    let event = machine::create(
        wf,
        NewTask {
            task_id: task_id.clone(),
            description: "simulated".into(),
            project_name: "sim".into(),
            flags: Default::default(),
            labels: Default::default(),
            tech_stack: serde_json::Value::Null,
        },
    )
    .expect("the task is valid");
    let rec = EventRecord {
        seq: 1,
        ts: w.now(),
        event,
    };
    let state = machine::initial(task_id, &rec).expect("a first event");
    let lease = w.new_lease(p);
    w.dirty.insert(id.clone());
    let r = w.store.create_task(&state, &[rec], Holder::Lease(&lease));
    let name = w.procs[p].name.clone();
    match r {
        Ok(()) => {
            w.log(format!("{name} create {id}: held"));
            w.procs[p].held.insert(id, Held { state });
        }
        Err(e) => w.log(format!("{name} create {id}: {}", short(&e))),
    }
}

/// Process `p` reads task `id` and judges its lease by its own clock: the
/// first half of a takeover (a rival may act between the halves).
pub fn judge(w: &mut World, p: usize, id: &str) {
    let name = w.procs[p].name.clone();
    let snap = w.store.load(&tid(id)).expect("reads do not fail");
    let Some(snap) = snap else { return };
    if terminal(snap.state.status) {
        return;
    }
    let local = LocalHost {
        host: name.clone(),
        boot_id: format!("boot-{}", w.procs[p].incarnation),
        pid_ns: String::new(),
    };
    // Another host's pid cannot be probed; this host's earlier incarnation
    // is dead by its boot id.
    let live = lease::classify(snap.lease.as_ref(), w.local_now(p), &local, |_| None);
    let me = w.procs[p].owner();
    let replace = match (&live, &snap.lease) {
        (Liveness::Live, Some(l)) if l.owner != me => {
            w.log(format!("{name} judge {id}: busy ({})", l.owner.host));
            return;
        }
        (Liveness::Dead(_) | Liveness::Expired, Some(l)) => Some(l.owner.clone()),
        _ => None,
    };
    w.log(format!(
        "{name} judge {id}: {live:?}, replacing {}",
        replace.as_ref().map_or("nobody".into(), |o| o.describe())
    ));
    w.procs[p].judged = Some(Judged {
        task: id.to_string(),
        replace,
    });
}

/// The second half: acquire the judged lease, read again under it, journal
/// the interrupted attempt and the resume.
pub fn take(w: &mut World, p: usize, wf: &Workflow) {
    let Some(j) = w.procs[p].judged.take() else {
        return;
    };
    let name = w.procs[p].name.clone();
    let lease = w.new_lease(p);
    w.dirty.insert(j.task.clone());
    let r = w.store.acquire(&tid(&j.task), &lease, j.replace.as_ref());
    match r {
        Ok(Acquire::Acquired) => {}
        Ok(Acquire::Held(l)) => {
            w.log(format!(
                "{name} take {}: lost the race to {}",
                j.task, l.owner.host
            ));
            return;
        }
        Err(e) => {
            w.log(format!("{name} take {}: {}", j.task, short(&e)));
            return;
        }
    }
    let snap = w
        .store
        .load(&tid(&j.task))
        .expect("reads do not fail")
        .expect("a task is never deleted here");
    w.log(format!(
        "{name} take {}: acquired at seq {}",
        j.task, snap.state.last_seq
    ));
    w.procs[p].held.insert(
        j.task.clone(),
        Held {
            state: snap.state.clone(),
        },
    );
    let claimed = Input::Claim {
        owner: w.procs[p].owner().describe(),
        command: "resume".into(),
    };
    if !decide_commit(w, p, &j.task, wf, claimed) {
        return;
    }
    if snap.state.in_progress().is_some() {
        let reason = "its runner's lease expired".to_string();
        if !decide_commit(w, p, &j.task, wf, Input::Interrupt { reason }) {
            return;
        }
    }
    let status = w.procs[p].held[&j.task].state.status;
    if status == baton_core::state::TaskStatus::Running {
        decide_commit(w, p, &j.task, wf, Input::Resume { crashed: true });
    }
}

/// Process `p` takes task `id` one step further along the workflow.
pub fn drive(w: &mut World, p: usize, id: &str, wf: &Workflow) {
    let Some(held) = w.procs[p].held.get(id) else {
        return;
    };
    let input = match machine::next(&held.state, wf) {
        Next::Start(phase) => Input::Start {
            phase,
            checkpoint: None,
        },
        Next::InProgress(phase) => end_attempt(w, phase),
        Next::Skip(phase, _) => Input::Skip { phase },
        Next::Complete => Input::Complete,
        Next::Stopped(_) | Next::Wait(_) | Next::Waiting(_) => {
            release(w, p, id);
            return;
        }
    };
    decide_commit(w, p, id, wf, input);
    if w.procs[p]
        .held
        .get(id)
        .is_some_and(|h| terminal(h.state.status))
    {
        release(w, p, id);
    }
}

/// How an attempt ends: mostly a pass, sometimes a failure.
fn end_attempt(w: &mut World, phase: PhaseId) -> Input {
    if w.rng.chance(30) {
        Input::Fail {
            phase,
            failure: Failure {
                message: "exit 1".into(),
                exit_code: Some(1),
                ..Failure::default()
            },
        }
    } else {
        let n = w.rng.below(1000);
        Input::Pass {
            summary: format!("{phase} done ({n})"),
            phase,
            output: String::new(),
            files_changed: Vec::new(),
        }
    }
}

/// Process `p` renews its lease on `id` by its own clock.
pub fn renew(w: &mut World, p: usize, id: &str) {
    let owner = w.procs[p].owner();
    let until = baton_core::Timestamp(w.local_now(p).millis() + LEASE_TTL_MS);
    let name = w.procs[p].name.clone();
    w.dirty.insert(id.to_string());
    match w.store.renew(&tid(id), &owner, until) {
        Ok(RenewOutcome::Renewed { .. }) => w.log(format!("{name} renew {id}")),
        Ok(RenewOutcome::Lost) => {
            w.log(format!("{name} renew {id}: lost, stops"));
            w.procs[p].held.remove(id);
        }
        Err(e) => w.log(format!("{name} renew {id}: {}", short(&e))),
    }
}

/// Process `p` lets go of `id` (its view goes whatever the store says).
pub fn release(w: &mut World, p: usize, id: &str) {
    let owner = w.procs[p].owner();
    let name = w.procs[p].name.clone();
    w.procs[p].held.remove(id);
    w.dirty.insert(id.to_string());
    match w.store.release(&tid(id), &owner) {
        Ok(()) => w.log(format!("{name} release {id}")),
        Err(e) => w.log(format!("{name} release {id}: {}", short(&e))),
    }
}

/// `decide` then [`commit`]; a refusal by the rules is logged, not a break
/// (the simulated driver asks only what the engine would ask).
fn decide_commit(w: &mut World, p: usize, id: &str, wf: &Workflow, input: Input) -> bool {
    let held = &w.procs[p].held[id];
    match machine::decide(&held.state, wf, input, w.local_now(p)) {
        Ok(events) => commit(w, p, id, events),
        Err(e) => {
            let name = w.procs[p].name.clone();
            w.log(format!("{name} {id}: refused: {e}"));
            false
        }
    }
}

/// What `Engine::commit` does: fold the events into the held state, write
/// them with the phase rows they touched, under the lease. Any error stops
/// the driving (the engine's rule), and the process forgets the task. The
/// oracle checks that a commit that landed was made under the lease holder.
fn commit(w: &mut World, p: usize, id: &str, events: Vec<baton_core::Event>) -> bool {
    let now = w.local_now(p);
    let owner = w.procs[p].owner();
    let name = w.procs[p].name.clone();
    let mut state = w.procs[p].held[id].state.clone();
    let mut touched: Option<Vec<PhaseId>> = Some(Vec::new());
    let mut records = Vec::new();
    for ev in events {
        match (machine::touched(&state, &ev), &mut touched) {
            (Some(ids), Some(all)) => all.extend(ids),
            _ => touched = None,
        }
        let rec = EventRecord {
            seq: state.last_seq + 1,
            ts: now,
            event: ev,
        };
        machine::apply(&mut state, &rec);
        records.push(rec);
    }
    let writes = match touched {
        None => PhaseWrites::All,
        Some(ids) => {
            let mut ix: Vec<usize> = ids
                .iter()
                .filter_map(|i| state.phases.iter().position(|ph| &ph.id == i))
                .collect();
            ix.sort_unstable();
            ix.dedup();
            PhaseWrites::Changed(ix)
        }
    };
    w.dirty.insert(id.to_string());
    let kinds: Vec<&str> = records.iter().map(|r| r.event.kind()).collect();
    let kinds = kinds.join(",");
    let before = w.store.inner().load(&tid(id)).ok().flatten();
    let holder = before.as_ref().and_then(|s| s.lease.clone());
    let r = w
        .store
        .commit(&owner, &state, &writes, &records, Durability::Disk);
    let landed = match &r {
        Ok(()) => true,
        Err(e) if is_injected(e) => {
            // Ambiguous to the process; the oracle looks.
            let after = w.store.inner().load(&tid(id)).ok().flatten();
            after
                .is_some_and(|s| s.state.last_seq > before.as_ref().map_or(0, |b| b.state.last_seq))
        }
        Err(_) => false,
    };
    if landed {
        let held_by_me = holder.as_ref().is_some_and(|l| l.owner == owner);
        w.check(held_by_me, || {
            format!(
                "{name} committed {kinds} to {id} while {} held its lease",
                holder
                    .as_ref()
                    .map_or("nobody".into(), |l| l.owner.describe())
            )
        });
        for r in &records {
            if let baton_core::Event::PhasePassed { phase, summary, .. } = &r.event {
                w.ledger.passed(id, phase.as_str(), summary);
            }
        }
    }
    match r {
        Ok(()) => {
            w.log(format!(
                "{name} commit {id} [{kinds}] -> seq {}",
                state.last_seq
            ));
            w.procs[p].held.insert(id.to_string(), Held { state });
            true
        }
        Err(e) => {
            w.log(format!(
                "{name} commit {id} [{kinds}]: {}, stops",
                short(&e)
            ));
            w.procs[p].held.remove(id);
            // The engine releases what it stops driving.
            let _ = w.store.release(&tid(id), &owner);
            false
        }
    }
}

/// A status no simulated process moves on from (a FAILED task could be
/// resumed by a person; the simulation leaves it).
pub fn terminal(s: baton_core::state::TaskStatus) -> bool {
    use baton_core::state::TaskStatus::*;
    matches!(s, Complete | Failed | Cancelled)
}

pub fn tid(id: &str) -> TaskId {
    TaskId::parse(id).expect("a simulated task id")
}

/// An error as the trace shows it: its kind, not its text (which may hold
/// a wall-clock time).
pub fn short(e: &baton_store::Error) -> &'static str {
    use baton_store::Error::*;
    match e {
        _ if is_injected(e) => "cut",
        LeaseLost { .. } => "lease lost",
        SeqConflict { .. } => "seq conflict",
        AlreadyExists(_) => "already exists",
        NotFound(_) => "not found",
        TeamChanged { .. } => "team changed",
        NoTeam(_) => "no team",
        _ => "store error",
    }
}
