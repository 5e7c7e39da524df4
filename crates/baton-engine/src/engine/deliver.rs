//! An outside event (a GitHub webhook delivery) handed to the tasks: every
//! task whose workflow has a wait phase expecting it is judged
//! (`baton_core::webhook`). The task waiting in exactly that phase, and
//! held by no live runner, is taken under its lease and the event passes
//! the phase, once (judged again under the lease, so concurrent deliveries
//! and servers pass it once). Any other task it names is left untouched,
//! with the reason; a task it names that the store does not know yet is
//! kept for (`buffer.rs`), and an ended task it names is skipped, saying
//! so. What it did is settled on the stored delivery
//! (`baton_store::DeliveryStore`); the tasks it passed are handed back,
//! still held, for the caller to run on where it likes ([`Engine::run_passed`]).

use super::{Engine, Held, Outcome};
use crate::error::Result;
use baton_core::lease::{DisplayStatus, Liveness};
use baton_core::machine::Input;
use baton_core::webhook::{self, Delivery, Verdict};
use baton_core::{TaskId, Timestamp};
use baton_store::buffered::ANY_WAIT;
use baton_store::{NewDelivery, Settlement, TaskDecision};
use serde_json::Value;
use std::collections::BTreeSet;

/// At most this many deliveries are kept at once for tasks the store does
/// not know yet (each for `[server] buffer_ttl`): what names a task is
/// outside input, and a store is no place to fill with guesses.
pub const MAX_KEPT_FOR_UNKNOWN: usize = 1_000;
/// Of the tasks one delivery names that do not exist yet, at most this
/// many are kept for.
pub const MAX_UNKNOWN_PER_DELIVERY: usize = 10;

/// A delivery as it is stored: its id and event type, the action and
/// repository read from its body, and of the body only what it is judged
/// on (`Delivery::essentials`, with `paths`, the stored workflows'
/// payload conditions): a few hundred bytes where the body is tens of KB.
pub fn new_delivery(
    id: String,
    event: String,
    payload: &Value,
    paths: &BTreeSet<String>,
    at: baton_core::Timestamp,
) -> NewDelivery {
    let d = Delivery {
        event: &event,
        payload,
    };
    let essentials = d.essentials(paths);
    NewDelivery {
        action: d.action().map(str::to_string),
        repository: d.repository().map(str::to_string),
        payload: essentials.to_string(),
        essentials: Some(std::sync::Arc::new(essentials)),
        id,
        received_at: at,
        event,
        settled: None,
        body: None,
    }
}

/// What the wait phases of the stored workflows expect.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Awaited {
    /// Event names (`github.pull_request.opened`).
    pub names: BTreeSet<String>,
    /// Payload condition paths (`review.state`).
    pub paths: BTreeSet<String>,
}

impl Awaited {
    /// Of `definitions` (stored workflow definitions, as JSON).
    pub fn of<'a>(definitions: impl Iterator<Item = &'a str>) -> Awaited {
        let mut a = Awaited::default();
        for json in definitions {
            if let Ok(wf) = serde_json::from_str::<baton_core::Workflow>(json) {
                webhook::awaited_by(&wf, &mut a.names, &mut a.paths);
            }
        }
        a
    }

    pub fn extend(&mut self, other: &Awaited) {
        self.names.extend(other.names.iter().cloned());
        self.paths.extend(other.paths.iter().cloned());
    }
}

impl Engine {
    /// What the stored workflows' wait phases expect.
    pub fn awaited(&self) -> Result<Awaited> {
        let defs = self.store.definitions()?;
        Ok(Awaited::of(defs.iter().map(|d| d.json.as_str())))
    }
}

/// What one delivery did to each task it was for.
type Decisions = Vec<(TaskId, Decision)>;

/// What one delivery did to one task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// The wait phase `phase` passed.
    Resumed { phase: String },
    /// Kept for wait phase `phase`, which the task has not reached yet
    /// (or has, but its runner still holds it): used when it gets there.
    Buffered { phase: String, why: String },
    /// Untouched, and why.
    Skipped(String),
}

/// A task whose wait phase passed (a delivery arrived, a person answered,
/// a delivery kept for it was taken up), held by this process: run it on with [`Engine::run_passed`], or let it
/// go to a process of its own ([`Engine::let_go`]) (dropping it without running it leaves
/// its lease to expire, and the task is then resumed as crashed).
pub struct Passed {
    pub id: TaskId,
    pub(super) held: Held,
}

/// A delivery handed to the tasks.
pub struct HandedOver {
    /// The event's name (`github.pull_request.opened`).
    pub name: String,
    pub decisions: Vec<(TaskId, Decision)>,
    /// What was stored with the delivery.
    pub settlement: Settlement,
    pub passed: Vec<Passed>,
}

impl Engine {
    /// Hands stored delivery `d` to the tasks (head branches read with
    /// `branch_pattern`) and returns what it did, to be stored with
    /// `DeliveryStore::settle_deliveries` (several at once where several
    /// were handed over together), and the tasks it passed, held.
    pub fn hand_over(&self, d: &NewDelivery, branch_pattern: &str) -> Result<HandedOver> {
        let read_back;
        let payload: &Value = match &d.essentials {
            Some(v) => v,
            None => match serde_json::from_str::<Value>(&d.payload) {
                Ok(v) => {
                    read_back = v;
                    &read_back
                }
                // Only stored once its body was read as JSON; say so if not.
                Err(e) => {
                    let settlement = Settlement {
                        at: self.now(),
                        decision: "ignored".into(),
                        why: format!("its body is not JSON: {e}"),
                        tasks: Vec::new(),
                    };
                    return Ok(HandedOver {
                        name: format!("github.{}", d.event),
                        decisions: Vec::new(),
                        settlement,
                        passed: Vec::new(),
                    });
                }
            },
        };
        let delivery = Delivery {
            event: &d.event,
            payload,
        };
        let name = delivery.name();
        let (decisions, passed) = self.pass(d, &delivery, branch_pattern)?;
        let mut settlement = settlement(&name, &decisions, self.now());
        // Tasks wait for this event, none that it names: say that, not
        // that nothing waits for it.
        if decisions.is_empty() && self.someone_waits_for(&name)? {
            settlement.why = format!(
                "no task it names waits for {name} (it names {})",
                match delivery.task_ids(branch_pattern) {
                    ids if ids.is_empty() => "none".to_string(),
                    ids => ids.into_iter().take(5).collect::<Vec<_>>().join(", "),
                }
            );
        }
        for said in self.close_instances(&delivery)? {
            if settlement.decision == "ignored" {
                settlement.decision = "applied".into();
                settlement.why = said;
            } else {
                settlement.why = format!("{}; {said}", settlement.why);
            }
        }
        Ok(HandedOver {
            name,
            decisions,
            settlement,
            passed,
        })
    }

    /// A closed pull request moves the coding instances that opened it to
    /// `pr_merged` / `pr_closed`; says what it did.
    fn close_instances(&self, d: &Delivery<'_>) -> Result<Vec<String>> {
        if !moves_instances(d.event, d.action()) {
            return Ok(Vec::new());
        }
        let Some(url) = d.value_at("pull_request.html_url") else {
            return Ok(Vec::new());
        };
        let merged = d.value_at("pull_request.merged").as_deref() == Some("true");
        // Not a git repository: no instances.
        let Ok(agents) = self.agents() else {
            return Ok(Vec::new());
        };
        let status = if merged { "pr_merged" } else { "pr_closed" };
        Ok(agents
            .pull_request_closed(&url, merged)?
            .into_iter()
            .map(|id| format!("instance {id} is {status}"))
            .collect())
    }

    /// Lets a passed task go to a process that takes its lease over
    /// (`baton resume ID --takeover-from <this pid>`): its heartbeat stops,
    /// its lease stays held until that process replaces this one as owner,
    /// so it never looks CRASHED between.
    pub fn let_go(&self, p: Passed) -> TaskId {
        drop(p.held.hb);
        p.id
    }

    /// Runs a task a delivery passed on from its next phase, then releases it.
    pub fn run_passed(&self, p: Passed) -> Result<Outcome> {
        let mut held = p.held;
        let outcome = self.drive(&mut held);
        self.release_driven(held, outcome)
    }

    fn pass(
        &self,
        stored: &NewDelivery,
        d: &Delivery<'_>,
        branch_pattern: &str,
    ) -> Result<(Decisions, Vec<Passed>)> {
        let delivery_id = stored.id.as_str();
        let mut decisions = Vec::new();
        let mut passed = Vec::new();
        // Only tasks of a workflow (some version of it) with a wait phase
        // for this event can be judged (or have been passed by it): the
        // others are not loaded at all.
        let name = d.name();
        let awaiting: BTreeSet<String> = self
            .store
            .definitions()?
            .into_iter()
            .filter(|def| {
                Awaited::of(std::iter::once(def.json.as_str()))
                    .names
                    .contains(&name)
            })
            .map(|def| def.name)
            .collect();
        let named = d.task_ids(branch_pattern);
        let mut known = BTreeSet::new();
        for (summary, status) in self.list()? {
            known.insert(summary.id.to_string());
            if !awaiting.contains(&summary.workflow) {
                continue;
            }
            // An ended task is judged only when the delivery names it:
            // skipped, saying which task and where it is.
            if matches!(status, DisplayStatus::Complete | DisplayStatus::Cancelled)
                && !named.contains(summary.id.as_str())
            {
                continue;
            }
            let snap = self.load(&summary.id)?;
            let wf = self.pinned(&snap.state.definition_hash)?;
            // Handed over again after a crash: it passed this task's wait
            // phase before, and that stands.
            if let Some(phase) = passed_by(&snap.state, delivery_id) {
                decisions.push((summary.id, Decision::Resumed { phase }));
                continue;
            }
            // Kept for a stage the task has not reached, or for the wait
            // its live runner has just reached (it takes it up before it
            // lets the task go; if it let go meanwhile, the wake does).
            let mut keep = |phase: &str, why: String| -> Result<Decision> {
                self.keep_for(
                    &summary.id,
                    phase,
                    delivery_id,
                    &stored.event,
                    &stored.payload,
                    branch_pattern,
                )?;
                Ok(match self.wake_buffered(&summary.id)? {
                    Some(p) => {
                        let phase = p.passed_phase();
                        passed.push(p);
                        Decision::Resumed { phase }
                    }
                    None => Decision::Buffered {
                        phase: phase.to_string(),
                        why,
                    },
                })
            };
            let decision = match webhook::judge(&snap.state, &wf, d, branch_pattern) {
                None => continue,
                Some(Verdict::Skip { reason }) => Decision::Skipped(reason),
                Some(Verdict::Buffer { phase, reason }) => keep(phase.as_str(), reason)?,
                Some(Verdict::Resume { phase })
                    if matches!(self.liveness(snap.lease.as_ref()), Liveness::Live) =>
                {
                    keep(
                        phase.as_str(),
                        format!(
                            "task {} waits at {phase}, held by its runner; kept until it lets go",
                            summary.id
                        ),
                    )?
                }
                Some(Verdict::Resume { .. }) => {
                    match self.pass_one(&summary.id, &snap, d, delivery_id, branch_pattern)? {
                        Ok((phase, held)) => {
                            passed.push(Passed {
                                id: summary.id.clone(),
                                held,
                            });
                            Decision::Resumed { phase }
                        }
                        Err(why) => Decision::Skipped(why),
                    }
                }
            };
            decisions.push((summary.id, decision));
        }
        // A task it names that the store does not know (yet): started
        // later (`baton run … --id`), or removed to be made again. Kept
        // for whichever of its waits first expects it.
        if !awaiting.is_empty() {
            let unknown: Vec<&String> = named
                .iter()
                .filter(|id| !known.contains(*id) && TaskId::parse(id).is_ok())
                .collect();
            let now = self.now();
            let kept = self
                .store
                .buffered_all()?
                .iter()
                .filter(|b| b.phase == ANY_WAIT && b.expires_at > now)
                .count();
            let mut room = MAX_KEPT_FOR_UNKNOWN.saturating_sub(kept);
            for id in unknown.iter().take(MAX_UNKNOWN_PER_DELIVERY) {
                if let Some(kept) = self.keep_for_unknown(id, stored, branch_pattern, &mut room)? {
                    decisions.push(kept);
                }
            }
            // One delivery (whose body anyone opening a pull request
            // writes) never takes the room of all the others.
            if let Some(first) = unknown.get(MAX_UNKNOWN_PER_DELIVERY)
                && let Ok(task) = TaskId::parse(first)
            {
                decisions.push((
                    task,
                    Decision::Skipped(format!(
                        "it names {} more tasks that do not exist; a delivery is kept for at most {MAX_UNKNOWN_PER_DELIVERY} of those",
                        unknown.len() - MAX_UNKNOWN_PER_DELIVERY
                    )),
                ));
            }
        }
        Ok((decisions, passed))
    }

    /// Whether some task waits now in a wait phase for event `name`.
    fn someone_waits_for(&self, name: &str) -> Result<bool> {
        for (t, status) in self.list()? {
            if status != DisplayStatus::Waiting {
                continue;
            }
            let snap = self.load(&t.id)?;
            let wf = self.pinned(&snap.state.definition_hash)?;
            let waits = snap
                .state
                .waiting_phase()
                .and_then(|p| wf.phase(p.id.as_str()));
            if let Some(p) = waits
                && let baton_core::workflow::PhaseKind::Wait(
                    baton_core::workflow::WaitSpec::Event { event, .. },
                ) = &p.kind
                && event == name
            {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Keeps delivery `stored` for task `id`, which the store does not
    /// know: bounded ([`MAX_KEPT_FOR_UNKNOWN`] rows in all, each for
    /// `[server] buffer_ttl`), judged when the task reaches a wait.
    fn keep_for_unknown(
        &self,
        id: &str,
        stored: &NewDelivery,
        branch_pattern: &str,
        room: &mut usize,
    ) -> Result<Option<(TaskId, Decision)>> {
        let Ok(task) = TaskId::parse(id) else {
            return Ok(None);
        };
        // Made since the list was read: judged by the next hand-over or
        // by its own runner (nothing is kept for it here).
        if self.store.load(&task)?.is_some() {
            return Ok(None);
        }
        if *room == 0 {
            return Ok(Some((
                task,
                Decision::Skipped(format!(
                    "no task {id} exists, and {MAX_KEPT_FOR_UNKNOWN} deliveries are kept already for tasks not made yet"
                )),
            )));
        }
        self.keep_for(
            &task,
            ANY_WAIT,
            &stored.id,
            &stored.event,
            &stored.payload,
            branch_pattern,
        )?;
        *room -= 1;
        let until = Timestamp(self.now().millis().saturating_add(self.buffer_ttl_ms()));
        Ok(Some((
            task,
            Decision::Buffered {
                phase: ANY_WAIT.to_string(),
                why: format!(
                    "no task {id} exists yet; kept until {until} for its first wait that expects it"
                ),
            },
        )))
    }

    /// Takes `id`'s lease, judges the delivery again under it and passes
    /// the wait phase; the task stays held. `Ok(Err(why))`: not passed.
    fn pass_one(
        &self,
        id: &TaskId,
        snap: &baton_store::TaskSnapshot,
        d: &Delivery<'_>,
        delivery_id: &str,
        branch_pattern: &str,
    ) -> Result<std::result::Result<(String, Held), String>> {
        let mut held = match self.take(id, snap, None) {
            Ok(h) => h,
            Err(e) => return Ok(Err(e.message)),
        };
        let phase = match webhook::judge(&held.state, &held.wf, d, branch_pattern) {
            Some(Verdict::Resume { phase }) => phase,
            Some(Verdict::Skip { reason } | Verdict::Buffer { reason, .. }) => {
                self.release(held);
                return Ok(Err(reason));
            }
            None => {
                self.release(held);
                return Ok(Err(format!("task {id} no longer waits for {}", d.name())));
            }
        };
        let passed = self.decide_commit(
            &mut held,
            Input::EventArrived {
                phase: phase.clone(),
                event: d.name(),
                delivery: delivery_id.to_string(),
                facts: d.facts(),
            },
        );
        if let Err(e) = passed {
            self.release(held);
            return Err(e);
        }
        self.crash_point("delivery-passed", phase.as_str());
        self.observer.info(&format!(
            "{} (delivery {delivery_id}) resumed task {id} at {phase}",
            d.name()
        ));
        Ok(Ok((phase.to_string(), held)))
    }
}

/// The wait phase delivery `id` passed in `state`, if it did.
fn passed_by(state: &baton_core::TaskState, id: &str) -> Option<String> {
    state
        .phases
        .iter()
        .find(|p| {
            p.status == baton_core::state::PhaseStatus::Pass
                && p.arrived.as_ref().is_some_and(|a| a.delivery == id)
        })
        .map(|p| p.id.to_string())
}

/// How a delivery no task waits for is settled as it arrives.
pub fn ignored(name: &str, at: baton_core::Timestamp) -> Settlement {
    settlement(name, &[], at)
}

/// Whether a delivery may move agent instances whatever the tasks await.
pub fn moves_instances(event: &str, action: Option<&str>) -> bool {
    event == "pull_request" && action == Some("closed")
}

/// What a delivery did, as stored: `resumed` if it passed a task's wait,
/// else `buffered` if it is kept for a wait a task has not reached, else
/// `skipped` if it named a waiting task, else `ignored` (or `applied` when
/// it moved agent instances).
fn settlement(
    name: &str,
    decisions: &[(TaskId, Decision)],
    at: baton_core::Timestamp,
) -> Settlement {
    let tasks: Vec<TaskDecision> = decisions
        .iter()
        .map(|(task, d)| match d {
            Decision::Resumed { phase } => TaskDecision {
                task: task.to_string(),
                decision: "resumed".into(),
                why: format!("resumed at {phase}"),
            },
            Decision::Buffered { why, .. } => TaskDecision {
                task: task.to_string(),
                decision: "buffered".into(),
                why: why.clone(),
            },
            Decision::Skipped(why) => TaskDecision {
                task: task.to_string(),
                decision: "skipped".into(),
                why: why.clone(),
            },
        })
        .collect();
    let resumed: Vec<&TaskDecision> = tasks.iter().filter(|t| t.decision == "resumed").collect();
    let buffered: Vec<&TaskDecision> = tasks.iter().filter(|t| t.decision == "buffered").collect();
    let (decision, why) = if !resumed.is_empty() {
        let said: Vec<String> = resumed
            .iter()
            .map(|t| format!("task {} {}", t.task, t.why))
            .collect();
        ("resumed", said.join("; "))
    } else if !buffered.is_empty() {
        let said: Vec<String> = buffered.iter().map(|t| t.why.clone()).collect();
        ("buffered", said.join("; "))
    } else if let Some(first) = tasks.first() {
        ("skipped", first.why.clone())
    } else {
        ("ignored", format!("no task waits for {name}"))
    };
    Settlement {
        at,
        decision: decision.into(),
        why,
        tasks,
    }
}
