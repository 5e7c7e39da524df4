//! Agent instance actors: what the engine's `Agents` does with coding and
//! review instances, step by step. Every change goes through [`step`], as
//! `Agents::step` does: read the instances, `decide`, number the records
//! from the position read, `apply`, commit at that position, decide again
//! from a fresh read when another process got there first, stop on any
//! other error (a cut). A process decides from its last read, which other
//! processes may have moved past (the race fencing must win); engine
//! operations of several writes (spawn, request a review, create the task
//! of the turn that brings a review's feedback and journal both) may crash
//! between them. Feedback is delivered as the engine does it, on one
//! commit decided on a fresh read and never retried; the old way, which
//! started two turns of one agent at once, is kept as
//! [`Broken::FeedbackThenTurn`]. The agents' turns are tasks run apart ([`crate::world::Turn`]):
//! an agent calls baton during its turn (checkpoint, request a review,
//! merge back, push), and a turn's end makes its process tick (timeouts
//! from `due`, feedback delivered).

use crate::tasks::short;
use crate::world::{Broken, Turn, TurnState, World};
use baton_core::instance::{
    self, CodingConfig, Decision, ErrorCode, Event, Input, Instance, InstanceError, InstanceId,
    Instances, PullRequest, Record, Resources, ReviewConfig, Status,
};
use baton_core::{TaskId, Timestamp};
use baton_store::sim::is_injected;
use baton_store::{Error, InstanceStore};

/// How many times a step decides again (the engine's `STEP_TRIES`).
const STEP_TRIES: usize = 50;

/// Why a step did not commit.
#[derive(Debug)]
pub enum Stop {
    /// The rules refused it (logged, not a break).
    Refused,
    /// The store failed (a cut): the operation stops, as the engine's does.
    Store,
    /// The process crashed between two writes: nothing more of the
    /// operation runs.
    Crashed,
}

pub fn iid(s: &str) -> InstanceId {
    InstanceId::parse(s).expect("a simulated instance id")
}

/// The instances as the store has them now.
fn fresh(w: &World) -> Instances {
    w.store.instances().expect("reads do not fail")
}

/// What process `p` decides an operation from: its last read, or (most of
/// the time, as every engine command ticks first) a fresh one.
fn read(w: &mut World, p: usize) -> Instances {
    match w.procs[p].instances.clone() {
        Some(v) if w.rng.chance(40) => v,
        _ => fresh(w),
    }
}

/// A crash between two writes of one operation, now and then (the
/// engine's crash points).
fn crashed(w: &mut World, p: usize) -> bool {
    if w.rng.chance(4) {
        w.crash(p);
        true
    } else {
        false
    }
}

/// An input as the trace shows it.
fn label(input: &Input) -> String {
    match input {
        Input::Spawn { id, .. } => format!("spawn {id}"),
        Input::Allocated { id, .. } => format!("allocated {id}"),
        Input::Activity { id } => format!("activity {id}"),
        Input::Checkpoint { id, .. } => format!("checkpoint {id}"),
        Input::Turn { id, task } => format!("turn {id} {task}"),
        Input::RequestReview { parent, review, .. } => format!("request-review {parent} {review}"),
        Input::MergeBack { review, .. } => format!("merge-back {review}"),
        Input::FeedbackDelivered { review } => format!("feedback-delivered {review}"),
        Input::PrCreated { id, pr } => format!("pr-created {id} #{}", pr.number),
        Input::PrClosed { id, merged } => format!("pr-closed {id} merged={merged}"),
        Input::Terminate { id, .. } => format!("terminate {id}"),
        Input::Finish { id, .. } => format!("finish {id}"),
        Input::Fail { id, .. } => format!("fail {id}"),
        Input::TimedOut { id } => format!("timed-out {id}"),
        Input::CleanupFailed { id, .. } => format!("cleanup-failed {id}"),
    }
}

/// Decides `inputs`, in order, on `read` (each on what the ones before it
/// caused), the records numbered from the position read: what
/// `Agents::commit_on` commits, and the instances after it.
fn decide_on(
    read: &Instances,
    inputs: &[Input],
    now: Timestamp,
) -> Result<(Vec<Record>, Instances), InstanceError> {
    let mut after = read.clone();
    let mut records: Vec<Record> = Vec::new();
    for input in inputs {
        for event in instance::decide(&after, input.clone(), now)? {
            let r = Record {
                seq: read.last_seq + 1 + records.len() as u64,
                ts: now,
                event,
            };
            instance::apply(&mut after, &r);
            records.push(r);
        }
    }
    Ok((records, after))
}

/// What a commit decided on the caller's read found (`Committed`).
enum Committed {
    /// Committed: the instances after it.
    Done(Instances),
    /// Another process committed since that read: nothing was written.
    Changed,
}

/// `Agents::commit_on`: decides `inputs` on `read` and commits what they
/// cause in one commit at the position read, once: another process's
/// commit since is [`Committed::Changed`], nothing written.
fn commit_on(
    w: &mut World,
    p: usize,
    read: &Instances,
    inputs: &[Input],
) -> Result<Committed, Stop> {
    let name = w.procs[p].name.clone();
    let what = inputs.iter().map(label).collect::<Vec<_>>().join(" + ");
    let (records, after) = match decide_on(read, inputs, w.local_now(p)) {
        Ok(d) => d,
        Err(e) => {
            w.log(format!("{name} inst {what}: refused ({})", e.code));
            w.procs[p].instances = Some(read.clone());
            return Err(Stop::Refused);
        }
    };
    let changed = after.changed_since(read);
    match commit(w, p, read.last_seq, &records, &changed) {
        Ok(()) => {
            let kinds: Vec<&str> = records.iter().map(|r| r.event.kind()).collect();
            w.log(format!(
                "{name} inst {what} [{}] -> seq {}",
                kinds.join(","),
                after.last_seq
            ));
            w.procs[p].instances = Some(after.clone());
            Ok(Committed::Done(after))
        }
        Err(Error::InstancesChanged { expected, found }) => {
            w.log(format!(
                "{name} inst {what}: decided at {expected}, store at {found}"
            ));
            Ok(Committed::Changed)
        }
        Err(e) => {
            w.log(format!("{name} inst {what}: {}, stops", short(&e)));
            w.procs[p].instances = None;
            Err(Stop::Store)
        }
    }
}

/// `Agents::step`: decides `input` on `read` and commits it at the
/// position read; on `InstancesChanged`, reads again and decides again.
pub fn step(w: &mut World, p: usize, mut read: Instances, input: Input) -> Result<Instances, Stop> {
    for _ in 0..STEP_TRIES {
        match commit_on(w, p, &read, std::slice::from_ref(&input))? {
            Committed::Done(after) => return Ok(after),
            Committed::Changed => read = fresh(w),
        }
    }
    let name = w.procs[p].name.clone();
    w.log(format!(
        "{name} inst {}: kept changing, gives up",
        label(&input)
    ));
    w.procs[p].instances = None;
    Err(Stop::Store)
}

/// The commit, watched by the oracle: where the records landed (if they
/// did, whatever the process was told), that they landed on the position
/// they were decided from, and that a turn landed while no other turn of
/// its instance ran.
fn commit(
    w: &mut World,
    p: usize,
    expected: u64,
    records: &[Record],
    changed: &[&Instance],
) -> Result<(), Error> {
    w.inst_dirty = true;
    let before = w.store.inner().instances().expect("oracle reads").last_seq;
    let mut r = w.store.commit_instances(expected, records, changed);
    let mut at = expected;
    if w.broken == Broken::UnfencedStore
        && let Err(Error::InstancesChanged { found, .. }) = r
    {
        // A store without fencing: last writer wins, the records
        // renumbered after the stored ones, the rows as decided.
        at = found;
        let renumbered: Vec<Record> = records
            .iter()
            .enumerate()
            .map(|(k, rec)| Record {
                seq: found + 1 + k as u64,
                ..rec.clone()
            })
            .collect();
        r = w.store.commit_instances(found, &renumbered, changed);
        w.procs[p].instances = None;
    }
    let landed = match &r {
        Ok(()) => true,
        Err(e) if is_injected(e) => {
            let stored = w
                .store
                .inner()
                .instance_events(at, records.len())
                .expect("oracle reads");
            stored.len() == records.len()
                && stored
                    .iter()
                    .zip(records)
                    .all(|(s, r)| s.event == r.event && s.ts == r.ts)
        }
        Err(_) => false,
    };
    if landed {
        let name = w.procs[p].name.clone();
        w.check(at == expected && before == expected, || {
            format!(
                "{name} committed instance records decided at position {expected} onto a journal at {before}: an update lost"
            )
        });
        for rec in records {
            if let Event::Turn { id, task } = &rec.event {
                let others: Vec<String> = w
                    .turns
                    .iter()
                    .filter(|(t, turn)| {
                        t.as_str() != task.as_str()
                            && turn.instance == id.as_str()
                            && turn.state == TurnState::Running
                    })
                    .map(|(t, _)| t.clone())
                    .collect();
                w.check(others.is_empty(), || {
                    format!("{id}: turn {task} started while its turns {others:?} run")
                });
            }
        }
        if w.broken != Broken::FeedbackThenTurn {
            feedback_with_its_turn(w, records, changed);
        }
    }
    r
}

/// Feedback delivered is never lost: a review's `FeedbackDelivered` lands
/// with a turn of its parent in the same commit, so no crash or cut can
/// fall between the delivery and the turn that brings it. (The old engine,
/// [`Broken::FeedbackThenTurn`], journals them apart: the oracle's replay
/// checks at the end that a turn followed.)
fn feedback_with_its_turn(w: &mut World, records: &[Record], changed: &[&Instance]) {
    for rec in records {
        let Event::FeedbackDelivered { review } = &rec.event else {
            continue;
        };
        let parent = changed
            .iter()
            .find(|i| &i.id == review)
            .and_then(|i| i.review())
            .map(|s| s.parent_instance_id.clone());
        let with_turn = records
            .iter()
            .any(|r| matches!(&r.event, Event::Turn { id, .. } if Some(id) == parent.as_ref()));
        w.check(with_turn, || {
            format!(
                "feedback of review {review} delivered at seq {} without a turn of its parent {parent:?} in the same commit",
                rec.seq
            )
        });
    }
}

/// The turn that would run next for `inst`: its own id first, then
/// `ID-tN`, skipping task ids taken (`Agents::turn_id`).
fn turn_id(w: &World, inst: &Instance) -> String {
    let mut n = inst.turns.len() + 1;
    loop {
        let s = if n == 1 {
            inst.id.to_string()
        } else {
            format!("{}-t{n}", inst.id)
        };
        if !w.turns.contains_key(&s) {
            return s;
        }
        n += 1;
    }
}

/// `Agents::create_turn`: the task of `inst`'s next turn, created, not
/// started (it looks crashed, and busy, until it is).
fn create_turn(w: &mut World, inst: &Instance) -> String {
    let task = turn_id(w, inst);
    w.turns.insert(
        task.clone(),
        Turn {
            instance: inst.id.to_string(),
            state: TurnState::Created,
            ends: 0,
        },
    );
    task
}

/// `Agents::turn_recorded`: a journaled turn's task runs.
fn turn_recorded(w: &mut World, task: &str) {
    if let Some(t) = w.turns.get_mut(task) {
        t.state = TurnState::Running;
    }
}

fn turn_input(inst: &Instance, task: &str) -> Input {
    Input::Turn {
        id: inst.id.clone(),
        task: TaskId::parse(task).expect("a turn id"),
    }
}

/// `Agents::start_turn`: the task of `inst`'s next turn created (its id
/// from `inst` as the caller read it), the turn journaled by a step, the
/// task started. A turn whose start stopped half way is left created,
/// never run (it looks crashed, and busy).
fn start_turn(w: &mut World, p: usize, inst: &Instance) -> Result<(), Stop> {
    let task = create_turn(w, inst);
    let all = fresh(w);
    step(w, p, all, turn_input(inst, &task))?;
    if crashed(w, p) {
        return Err(Stop::Crashed);
    }
    turn_recorded(w, &task);
    Ok(())
}

/// [`start_turn`] for instance `id` as the store has it now.
fn start_turn_of(w: &mut World, p: usize, id: &InstanceId) -> Result<(), Stop> {
    let all = fresh(w);
    let Some(inst) = all.get(id).cloned() else {
        return Err(Stop::Refused);
    };
    start_turn(w, p, &inst)
}

/// Whether the latest turn of `inst` may still run (`turn_busy`).
fn turn_busy(w: &World, inst: &Instance) -> bool {
    inst.turns.last().is_some_and(|t| {
        w.turns
            .get(t.as_str())
            .is_some_and(|t| !matches!(t.state, TurnState::Ended { .. }))
    })
}

/// `Agents::spawn`: a coding instance, its worktree, its first turn.
pub fn spawn(w: &mut World, p: usize) {
    let id = iid(&format!("i{}", w.instances_created));
    w.instances_created += 1;
    let require_review = w.rng.chance(50);
    let config = CodingConfig {
        base_branch: "main".into(),
        target_branch: Some(format!("baton/{id}")),
        instructions: format!("simulated work {id}"),
        require_review,
        max_reviews: w.rng.between(1, 3) as u32,
        execution_timeout_ms: w.rng.between(120, 600) as u64 * 1000,
        agent: Some("sim".into()),
        issue: None,
        system_prompt: None,
        for_phase: None,
    };
    let all = read(w, p);
    if step(
        w,
        p,
        all,
        Input::Spawn {
            id: id.clone(),
            config,
        },
    )
    .is_err()
        || crashed(w, p)
    {
        return;
    }
    let resources = Resources {
        worktree_path: Some(format!("/wt/{id}")),
        session_name: None,
        branch: Some(format!("baton/{id}")),
        agent_session_id: None,
        session_host: None,
    };
    let all = fresh(w);
    if step(
        w,
        p,
        all,
        Input::Allocated {
            id: id.clone(),
            resources,
        },
    )
    .is_err()
        || crashed(w, p)
    {
        return;
    }
    let _ = start_turn_of(w, p, &id);
}

/// `Agents::tick`: instances past their deadline fail, and feedback that
/// waits is delivered. Stops at a cut or a crash.
pub fn tick(w: &mut World, p: usize) {
    let before = fresh(w);
    for input in instance::due(&before, w.local_now(p)) {
        let all = read(w, p);
        if let Err(Stop::Store) = step(w, p, all, input) {
            return;
        }
    }
    let all = fresh(w);
    deliver_feedback(w, p, &all);
}

/// The merged-back reviews in `all` whose feedback waits, with their
/// parents.
fn waiting(all: &Instances) -> Vec<(InstanceId, InstanceId)> {
    all.by_id
        .values()
        .filter_map(|r| {
            let s = r.review()?;
            (s.decision == Some(Decision::MergeBack) && !s.feedback_delivered)
                .then(|| (r.id.clone(), s.parent_instance_id.clone()))
        })
        .collect()
}

/// `Agents::deliver_feedback`: each review whose feedback waits in `all`
/// (the caller's read) is judged on a fresh read: skipped while its
/// parent's latest turn is busy, else brought by a new turn
/// ([`start_feedback_turn`]). An error is logged and the next review
/// tried; a crash stops it all.
fn deliver_feedback(w: &mut World, p: usize, all: &Instances) {
    if w.broken == Broken::FeedbackThenTurn {
        return deliver_feedback_then_turn(w, p, all);
    }
    for (review, _) in waiting(all) {
        // Read afresh, but other processes may commit while the turn's
        // task is created: a read they moved past, now and then.
        let seen = read(w, p);
        let Some(rs) = seen.get(&review).and_then(Instance::review) else {
            continue;
        };
        if rs.feedback_delivered {
            continue; // another process delivered it
        }
        let Some(parent) = seen.get(&rs.parent_instance_id) else {
            continue;
        };
        if parent.status.ended()
            || turn_busy(w, parent)
            || !matches!(parent.config, instance::Config::Coding(_))
        {
            continue;
        }
        let parent = parent.clone();
        if let Err(Stop::Crashed) = start_feedback_turn(w, p, &seen, &parent, &review) {
            return;
        }
    }
}

/// `Agents::start_feedback_turn`: the task of `parent`'s next turn created,
/// then the delivery of `review`'s feedback and that turn journaled in one
/// commit decided on `seen`, not retried. Refused or changed since `seen`,
/// the task is removed and the feedback waits for the next tick; a crash
/// before the commit leaves it waiting too (and the task created, never
/// journaled), a crash after it leaves the turn journaled, never run, and
/// a cut leaves the task created, whether or not the commit landed.
/// Whether it started the turn.
fn start_feedback_turn(
    w: &mut World,
    p: usize,
    seen: &Instances,
    parent: &Instance,
    review: &InstanceId,
) -> Result<bool, Stop> {
    let task = create_turn(w, parent);
    if crashed(w, p) {
        return Err(Stop::Crashed);
    }
    let both = [
        Input::FeedbackDelivered {
            review: review.clone(),
        },
        turn_input(parent, &task),
    ];
    match commit_on(w, p, seen, &both) {
        Ok(Committed::Done(_)) => {
            if crashed(w, p) {
                return Err(Stop::Crashed);
            }
            turn_recorded(w, &task);
            Ok(true)
        }
        Ok(Committed::Changed) | Err(Stop::Refused) => {
            w.turns.remove(&task);
            let name = w.procs[p].name.clone();
            w.log(format!(
                "{name} removes turn {task}: the feedback of {review} waits for the next tick"
            ));
            Ok(false)
        }
        // A cut: the commit may have landed (journaling the turn and the
        // delivery), so the task is left created, as a crash leaves it, as
        // the engine does (it removed it once, which lost the feedback
        // when the commit had landed: seed 135 found it).
        Err(e) => Err(e),
    }
}

/// [`Broken::FeedbackThenTurn`]: the old `deliver_feedback`. Whether the
/// parent's latest turn is busy is judged once, on the caller's read, for
/// every review; the delivery is journaled by a step, then the turn by
/// another ([`start_turn`], its id from that read). Two reviews' feedback
/// waiting at once, or two processes, start two turns of one agent at
/// once; a crash between the two steps loses the feedback.
fn deliver_feedback_then_turn(w: &mut World, p: usize, all: &Instances) {
    for (review, parent) in waiting(all) {
        let Some(pi) = all.get(&parent) else { continue };
        if pi.status.ended() || turn_busy(w, pi) {
            continue;
        }
        let pi = pi.clone();
        let now = fresh(w);
        if step(w, p, now, Input::FeedbackDelivered { review }).is_err() {
            continue; // another process delivered it
        }
        if crashed(w, p) {
            return;
        }
        if let Err(Stop::Crashed) = start_turn(w, p, &pi) {
            return;
        }
    }
}

/// An agent calls baton during its turn: a coding agent checkpoints, asks
/// for a review or opens its pull request; a review agent merges back or
/// pushes.
pub fn agent_call(w: &mut World, p: usize) {
    let running: Vec<(String, String)> = w
        .turns
        .iter()
        .filter(|(_, t)| t.state == TurnState::Running)
        .map(|(task, t)| (task.clone(), t.instance.clone()))
        .collect();
    let Some((_, id)) = w.rng.pick(&running).cloned() else {
        return;
    };
    let id = iid(&id);
    let all = read(w, p);
    let Some(inst) = all.get(&id).cloned() else {
        return;
    };
    let roll = w.rng.below(100);
    match inst.review() {
        None if roll < 25 => {
            let note = format!("at {}", w.rng.below(1000));
            let _ = step(w, p, all, Input::Checkpoint { id, note });
        }
        None if roll < 70 => request_review(w, p, &id),
        None => {
            tick(w, p);
            push(w, p, &id);
        }
        Some(_) if roll < 60 => {
            tick(w, p);
            let all = read(w, p);
            let feedback = format!("feedback {}", w.rng.below(1000));
            let input = Input::MergeBack {
                review: id,
                feedback,
            };
            if let Ok(after) = step(w, p, all, input) {
                deliver_feedback(w, p, &after);
            }
        }
        Some(_) => {
            tick(w, p);
            push(w, p, &id);
        }
    }
}

/// `push`: a coding instance's own pull request, or a review's.
fn push(w: &mut World, p: usize, id: &InstanceId) {
    w.prs_opened += 1;
    let number = w.prs_opened;
    let pr = PullRequest {
        number,
        url: format!("https://example.invalid/pull/{number}"),
    };
    let all = read(w, p);
    let _ = step(w, p, all, Input::PrCreated { id: id.clone(), pr });
}

/// `Agents::request_review`: a review instance on a fork of `parent`, its
/// worktree, its first turn.
fn request_review(w: &mut World, p: usize, parent: &InstanceId) {
    tick(w, p);
    let all = read(w, p);
    let k = all.reviews_of(parent).count() + 1;
    let mut n = 1;
    let review = loop {
        let s = if n == 1 {
            format!("{parent}-r{k}")
        } else {
            format!("{parent}-r{k}-{n}")
        };
        let id = iid(&s);
        if !all.by_id.contains_key(&id) && !w.turns.contains_key(&s) {
            break id;
        }
        n += 1;
    };
    let config = ReviewConfig {
        review_prompt: None,
        preserve_changes: false,
        timeout_ms: w.rng.between(60, 240) as u64 * 1000,
        agent: Some("sim".into()),
    };
    let input = Input::RequestReview {
        parent: parent.clone(),
        review: review.clone(),
        config,
    };
    if step(w, p, all, input).is_err() || crashed(w, p) {
        return;
    }
    let resources = Resources {
        worktree_path: Some(format!("/wt/{review}")),
        session_name: None,
        branch: Some(format!("baton/{review}")),
        agent_session_id: None,
        session_host: None,
    };
    let all = fresh(w);
    let input = Input::Allocated {
        id: review.clone(),
        resources,
    };
    if step(w, p, all, input).is_err() || crashed(w, p) {
        return;
    }
    let _ = start_turn_of(w, p, &review);
}

/// A running turn ends (its agent stopped; mostly done, sometimes failed),
/// and its process does what waited for it (`turn_ended`: a tick).
pub fn turn_end(w: &mut World, p: usize) {
    let running: Vec<String> = w
        .turns
        .iter()
        .filter(|(_, t)| t.state == TurnState::Running)
        .map(|(task, _)| task.clone())
        .collect();
    let Some(task) = w.rng.pick(&running).cloned() else {
        return;
    };
    let ok = w.rng.chance(85);
    end_turn(w, &task, ok);
    tick(w, p);
}

fn end_turn(w: &mut World, task: &str, ok: bool) {
    if let Some(t) = w.turns.get_mut(task) {
        t.state = TurnState::Ended { ok };
        t.ends += 1;
    }
    w.log(format!(
        "turn {task} ends: {}",
        if ok { "done" } else { "failed" }
    ));
}

/// What comes from outside the agents: a workflow phase's process judges
/// an instance's work done (`finish`), a webhook closes a pull request, a
/// person kills an instance, `doctor --fix` fails one whose start was cut
/// short.
pub fn outside(w: &mut World, p: usize) {
    let all = read(w, p);
    let roll = w.rng.below(100);
    let live: Vec<InstanceId> = all
        .by_id
        .values()
        .filter(|i| !i.status.ended())
        .map(|i| i.id.clone())
        .collect();
    let Some(id) = w.rng.pick(&live).cloned() else {
        return;
    };
    let i = &all.by_id[&id];
    let input = if i.status == Status::PrCreated && roll < 70 {
        Input::PrClosed {
            id,
            merged: w.rng.chance(70),
        }
    } else if i.status == Status::Started && roll < 70 {
        Input::Fail {
            id,
            code: ErrorCode::ResourceAllocationFailed,
            reason: "its start was cut short".into(),
        }
    } else if roll < 60 {
        if !work_done(w, &all, i) {
            return;
        }
        Input::Finish {
            id,
            reason: "its phase's work is done".into(),
        }
    } else if roll < 80 {
        Input::Terminate {
            id,
            reason: "killed".into(),
        }
    } else {
        tick(w, p);
        return;
    };
    let _ = step(w, p, all, input);
}

/// Whether the latest turn of `i`'s agent ran and ended (its agent could
/// have decided something).
fn turn_ran(w: &World, i: &Instance) -> bool {
    i.turns.last().is_some_and(|t| {
        w.turns
            .get(t.as_str())
            .is_some_and(|t| matches!(t.state, TurnState::Ended { .. }))
    })
}

/// `wait`'s judgement: a working coding instance, no review in flight or
/// feedback waiting, whose agent's latest turn ended done, with no review
/// required.
fn work_done(w: &World, all: &Instances, i: &Instance) -> bool {
    let Some(c) = i.coding() else { return false };
    let instance::Config::Coding(cfg) = &i.config else {
        return false;
    };
    let feedback_pending = all.reviews_of(&i.id).any(|r| {
        r.review()
            .is_some_and(|s| s.decision.is_some() && !s.feedback_delivered)
    });
    let done = i.turns.last().is_some_and(|t| {
        w.turns
            .get(t.as_str())
            .is_some_and(|t| t.state == TurnState::Ended { ok: true })
    });
    i.status == Status::Working
        && c.current_review_instance_id.is_none()
        && !feedback_pending
        && !cfg.require_review
        && done
}

/// The quiet period: no faults; process 0 lets every running turn end
/// (done), ticks, and has each agent move its instance on toward an end
/// (a review decides, a coding instance's work is finished or pushed, a
/// start cut short is failed by `doctor --fix`), for a bounded number of
/// rounds. What is left must be settled, or end at its deadline.
pub fn quiet(w: &mut World) {
    for round in 0..12 {
        let running: Vec<String> = w
            .turns
            .iter()
            .filter(|(_, t)| t.state == TurnState::Running)
            .map(|(task, _)| task.clone())
            .collect();
        for task in running {
            end_turn(w, &task, true);
        }
        tick(w, 0);
        let all = fresh(w);
        let open: Vec<InstanceId> = all
            .by_id
            .values()
            .filter(|i| !i.status.ended() && i.status != Status::PrCreated)
            .map(|i| i.id.clone())
            .collect();
        if open.is_empty() {
            break;
        }
        w.log(format!(
            "quiet: instances round {round}, {} open",
            open.len()
        ));
        for id in open {
            let all = fresh(w);
            let Some(i) = all.get(&id).cloned() else {
                continue;
            };
            let input = match (i.status, i.review()) {
                (Status::Started, _) => Input::Fail {
                    id,
                    code: ErrorCode::ResourceAllocationFailed,
                    reason: "its start was cut short".into(),
                },
                _ if !turn_ran(w, &i) => continue,
                (Status::Working, Some(_)) if w.rng.chance(50) => Input::MergeBack {
                    review: id,
                    feedback: "quiet".into(),
                },
                (Status::Working, Some(_)) => {
                    push(w, 0, &id);
                    continue;
                }
                (Status::Working, None) if work_done(w, &all, &i) => Input::Finish {
                    id,
                    reason: "its phase's work is done".into(),
                },
                (Status::Working, None) => {
                    let c = i.coding().expect("a coding instance");
                    let required =
                        matches!(&i.config, instance::Config::Coding(cfg) if cfg.require_review);
                    if c.current_review_instance_id.is_some() {
                        continue;
                    }
                    let first = required && c.review_count == 0;
                    if c.review_count < c.max_reviews && (first || w.rng.chance(30)) {
                        request_review(w, 0, &id);
                    } else {
                        push(w, 0, &id);
                    }
                    continue;
                }
                _ => continue,
            };
            let _ = step(w, 0, all, input);
        }
    }
}
