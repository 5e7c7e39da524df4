//! Deliveries that come before their stage: kept for the task's wait
//! phase they are for (`BufferStore`, both backends), and used when the
//! task gets there, never before. Two paths meet here, and between them
//! no delivery is lost:
//!
//! - the hand-over (`deliver.rs`, for `baton serve` and `baton deliver`
//!   alike) keeps a delivery a task has not reached yet, or one for the
//!   wait it has just reached while its runner still holds it, and then
//!   looks again ([`Engine::wake_buffered`]): a task that meanwhile waits
//!   there, held by nobody, is passed at once;
//! - the runner, when its task waits for an event, uses what is kept for
//!   that wait before it lets the task go ([`Engine::use_buffered`]), and
//!   looks once more after it did ([`Engine::release_driven`]).
//!
//! A delivery naming a task the store does not know yet is kept for it
//! too ([`ANY_WAIT`]), for whichever of its waits first expects it.
//!
//! Each keeps before it looks, and one of them always sees the other's
//! write. A kept delivery is judged again when it is used, against the
//! task as it is then (its labels may have changed), and expires after
//! `[server] buffer_ttl`.

use super::{Engine, Held, Outcome, Passed};
use crate::error::Result;
use baton_core::lease::Liveness;
use baton_core::machine::Input;
use baton_core::state::PhaseStatus;
use baton_core::webhook::{self, Delivery, Expect};
use baton_core::workflow::PhaseKind;
use baton_core::{TaskId, Timestamp};
use baton_store::buffered::ANY_WAIT;
use baton_store::{Buffered, Settlement, TaskDecision};

impl Passed {
    /// The wait phase that passed last (what a kept delivery passed).
    pub(super) fn passed_phase(&self) -> String {
        self.held
            .state
            .phases
            .iter()
            .filter(|p| p.arrived.is_some() && p.status == PhaseStatus::Pass)
            .max_by_key(|p| p.completed_at)
            .map(|p| p.id.to_string())
            .unwrap_or_default()
    }
}

impl Engine {
    /// How long a delivery is kept for its stage.
    pub(crate) fn buffer_ttl_ms(&self) -> i64 {
        self.project.config.server.buffer_ttl_ms()
    }

    /// Keeps delivery `id` (`event`, its essentials `payload`) for `task`'s
    /// wait phase `phase`; `false` when it was kept already.
    pub(super) fn keep_for(
        &self,
        task: &TaskId,
        phase: &str,
        id: &str,
        event: &str,
        payload: &str,
        branch_pattern: &str,
    ) -> Result<bool> {
        let now = self.now();
        let _ = self.store.expire_buffered(now);
        Ok(self.store.buffer_event(&Buffered {
            task: task.clone(),
            phase: phase.to_string(),
            delivery: id.to_string(),
            event: event.to_string(),
            payload: payload.to_string(),
            branch_pattern: branch_pattern.to_string(),
            received_at: now,
            expires_at: Timestamp(now.millis().saturating_add(self.buffer_ttl_ms())),
        })?)
    }

    /// While holding a task that waits for an event: passes its wait with
    /// the first delivery kept for it that it still expects (judged now),
    /// dropping what is kept for that phase. Whether it passed.
    pub(super) fn use_buffered(&self, held: &mut Held) -> Result<bool> {
        let Some(waiting) = held
            .state
            .phases
            .iter()
            .find(|p| p.status == PhaseStatus::Waiting)
        else {
            return Ok(false);
        };
        let phase = waiting.id.clone();
        let Some(def) = held.wf.phase(phase.as_str()) else {
            return Ok(false);
        };
        let PhaseKind::Wait(spec) = &def.kind else {
            return Ok(false);
        };
        let now = self.now();
        let kept = self.store.buffered_for(&held.state.task_id)?;
        for b in kept
            .iter()
            .filter(|b| (b.phase == phase.as_str() || b.phase == ANY_WAIT) && b.expires_at > now)
        {
            let Ok(payload) = serde_json::from_str::<serde_json::Value>(&b.payload) else {
                continue;
            };
            let d = Delivery {
                event: &b.event,
                payload: &payload,
            };
            if webhook::expects(spec, &held.state, &phase, &d, &b.branch_pattern) != Expect::Yes {
                continue;
            }
            self.decide_commit(
                held,
                Input::EventArrived {
                    phase: phase.clone(),
                    event: d.name(),
                    delivery: b.delivery.clone(),
                    facts: d.facts(),
                },
            )?;
            let _ = self
                .store
                .drop_buffered(&held.state.task_id, Some(phase.as_str()));
            // Kept before the task existed: for this wait only.
            let _ = self
                .store
                .drop_buffered_delivery(&held.state.task_id, &b.delivery);
            self.note_used(&b.delivery, &held.state.task_id, phase.as_str());
            self.observer.info(&format!(
                "{} (delivery {}, kept since it came before this stage) passed task {} at {phase}",
                d.name(),
                b.delivery,
                held.state.task_id
            ));
            return Ok(true);
        }
        Ok(false)
    }

    /// The delivery's record says what it did in the end: resumed the
    /// task at the stage it was kept for.
    fn note_used(&self, delivery: &str, task: &TaskId, phase: &str) {
        let Ok(Some(row)) = self.store.delivery(delivery) else {
            return;
        };
        let why = format!("resumed at {phase}, kept since it came before that stage");
        let mut tasks = row.tasks;
        match tasks.iter_mut().find(|t| t.task == task.as_str()) {
            Some(t) => {
                t.decision = "resumed".into();
                t.why = why;
            }
            None => tasks.push(TaskDecision {
                task: task.to_string(),
                decision: "resumed".into(),
                why,
            }),
        }
        let said: Vec<String> = tasks
            .iter()
            .filter(|t| t.decision == "resumed")
            .map(|t| format!("task {} {}", t.task, t.why))
            .collect();
        let how = Settlement {
            at: self.now(),
            decision: "resumed".into(),
            why: said.join("; "),
            tasks,
        };
        let _ = self.store.resettle_delivery(delivery, &how);
    }

    /// A task nobody holds that waits for an event something was kept
    /// for: taken, and its wait passed with it (held by this process, to
    /// run on); `None` when there is nothing to do.
    pub fn wake_buffered(&self, id: &TaskId) -> Result<Option<Passed>> {
        let Some(snap) = self.store.load(id)? else {
            return Ok(None);
        };
        let waits = snap
            .state
            .phases
            .iter()
            .any(|p| p.status == PhaseStatus::Waiting);
        if !waits || matches!(self.liveness(snap.lease.as_ref()), Liveness::Live) {
            return Ok(None);
        }
        let now = self.now();
        let waiting_for: Vec<String> = snap
            .state
            .phases
            .iter()
            .filter(|p| p.status == PhaseStatus::Waiting)
            .map(|p| p.id.to_string())
            .collect();
        if !self
            .store
            .buffered_for(id)?
            .iter()
            .any(|b| (waiting_for.contains(&b.phase) || b.phase == ANY_WAIT) && b.expires_at > now)
        {
            return Ok(None);
        }
        let mut held = match self.take(id, &snap, None) {
            Ok(h) => h,
            // Someone else took it: it is theirs to run on.
            Err(_) => return Ok(None),
        };
        if self.use_buffered(&mut held)? {
            Ok(Some(Passed {
                id: id.clone(),
                held,
            }))
        } else {
            self.release(held);
            Ok(None)
        }
    }

    /// Releases a task this process drove; when it stopped waiting for an
    /// event, a delivery kept for that wait while it was let go is taken
    /// up (the task held and driven on again).
    pub(super) fn release_driven(&self, held: Held, outcome: Result<Outcome>) -> Result<Outcome> {
        let id = held.state.task_id.clone();
        self.release(held);
        let mut outcome = outcome?;
        while matches!(outcome, Outcome::Waiting(_)) {
            let Some(p) = self.wake_buffered(&id)? else {
                break;
            };
            let mut held = p.held;
            let driven = self.drive(&mut held);
            self.release(held);
            outcome = driven?;
        }
        Ok(outcome)
    }
}
