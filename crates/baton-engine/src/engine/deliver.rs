//! An outside event (a GitHub webhook delivery) handed to the tasks: every
//! task whose workflow has a wait phase expecting it is judged
//! (`baton_core::webhook`). The task waiting in exactly that phase, and
//! held by no live runner, is resumed under its lease: the event passes the
//! phase once (re-judged under the lease, so concurrent deliveries and
//! servers resume it once), and the task runs on. Any other task it names
//! is left untouched, with the reason.

use super::{Engine, Outcome};
use crate::error::Result;
use baton_core::TaskId;
use baton_core::lease::{DisplayStatus, Liveness};
use baton_core::machine::Input;
use baton_core::webhook::{self, Delivery, Verdict};
use serde_json::Value;

/// What one delivery did to one task.
#[derive(Debug)]
pub enum Decision {
    /// The wait phase `phase` passed; the task ran on to `outcome`.
    Resumed { phase: String, outcome: Outcome },
    /// Untouched, and why.
    Skipped(String),
}

impl Engine {
    /// Hands delivery `delivery_id` (`X-GitHub-Event` `event`, its JSON
    /// body `payload`) to the tasks; head branches are read with
    /// `branch_pattern`. Returns the tasks it was for, with what it did.
    pub fn deliver(
        &self,
        delivery_id: &str,
        event: &str,
        payload: &Value,
        branch_pattern: &str,
    ) -> Result<Vec<(TaskId, Decision)>> {
        let d = Delivery { event, payload };
        let mut out = Vec::new();
        for (summary, status) in self.list()? {
            if matches!(status, DisplayStatus::Complete | DisplayStatus::Cancelled) {
                continue;
            }
            let snap = self.load(&summary.id)?;
            let wf = self.pinned(&snap.state.definition_hash)?;
            let decision = match webhook::judge(&snap.state, &wf, &d, branch_pattern) {
                None => continue,
                Some(Verdict::Skip { reason }) => Decision::Skipped(reason),
                Some(Verdict::Resume { .. })
                    if matches!(self.liveness(snap.lease.as_ref()), Liveness::Live) =>
                {
                    Decision::Skipped(format!(
                        "skipped: task {} is held by a live runner",
                        summary.id
                    ))
                }
                Some(Verdict::Resume { .. }) => {
                    self.resume_on(&summary.id, &snap, &d, delivery_id, branch_pattern)?
                }
            };
            out.push((summary.id, decision));
        }
        Ok(out)
    }

    /// Takes `id`'s lease, judges the delivery again under it, passes the
    /// wait phase and runs the task on.
    fn resume_on(
        &self,
        id: &TaskId,
        snap: &baton_store::TaskSnapshot,
        d: &Delivery<'_>,
        delivery_id: &str,
        branch_pattern: &str,
    ) -> Result<Decision> {
        let mut held = match self.take(id, snap, None) {
            Ok(h) => h,
            Err(e) => return Ok(Decision::Skipped(format!("skipped: {e}"))),
        };
        let phase = match webhook::judge(&held.state, &held.wf, d, branch_pattern) {
            Some(Verdict::Resume { phase }) => phase,
            Some(Verdict::Skip { reason }) => {
                self.release(held);
                return Ok(Decision::Skipped(reason));
            }
            None => {
                self.release(held);
                return Ok(Decision::Skipped(format!(
                    "skipped: task {id} no longer waits for {}",
                    d.name()
                )));
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
        self.observer.info(&format!(
            "{} (delivery {delivery_id}) resumed task {id} at {phase}",
            d.name()
        ));
        let outcome = self.drive(&mut held);
        self.release(held);
        Ok(Decision::Resumed {
            phase: phase.to_string(),
            outcome: outcome?,
        })
    }
}
