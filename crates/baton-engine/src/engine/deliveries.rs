//! The rule for deliveries, in one place: a delivery is durable before it
//! is handed to the tasks, and settled (what it did, stored with it)
//! before any task it passed runs on. `baton serve` records them in
//! batches from its request handlers ([`DeliveryWriter`], a connection of
//! its own, one transaction per batch) and hands them over from one
//! thread ([`Engine::hand_over_batch`]); `baton deliver` does both for one
//! delivery ([`Engine::deliver`]). Judging a delivery against the tasks
//! is `deliver.rs`.

use super::{Engine, HandedOver};
use crate::error::Result;
use baton_store::{DeliveryRow, NewDelivery, Store};
use std::sync::Arc;

/// Records deliveries on a store connection of its own, so a burst of
/// them never waits behind the engine's other work.
pub struct DeliveryWriter {
    store: Arc<dyn Store>,
}

impl DeliveryWriter {
    /// Records `batch` durably, in one transaction; whether each is new
    /// (`false`: a redelivery, by its id or its body).
    pub fn record(&self, batch: &[NewDelivery]) -> Result<Vec<bool>> {
        let fresh = self.store.record_deliveries(batch)?;
        for d in batch {
            crate::crash_point::at("delivery-recorded", &d.event);
        }
        Ok(fresh)
    }
}

/// What [`Engine::deliver`] did with one delivery.
pub enum Delivered {
    /// Recorded before (its id or its body): nothing changed; what it
    /// did then, when the store still lists it.
    Redelivery(Option<DeliveryRow>),
    /// Recorded, handed over and settled; the tasks it passed are held,
    /// to run on ([`Engine::run_passed`]).
    Handed(HandedOver),
}

impl Engine {
    /// A writer of deliveries on a connection of its own to this store.
    pub fn delivery_writer(&self) -> Result<DeliveryWriter> {
        let store = crate::store::Location::of(&self.project)?.open()?;
        Ok(DeliveryWriter { store })
    }

    /// The deliveries recorded, newest first.
    pub fn deliveries(&self, limit: usize) -> Result<Vec<DeliveryRow>> {
        Ok(self.store.deliveries(limit)?)
    }

    /// The deliveries recorded and never settled (a crash came between):
    /// handed over first when a server starts.
    pub fn unsettled_deliveries(&self) -> Result<Vec<NewDelivery>> {
        Ok(self.store.unsettled_deliveries()?)
    }

    /// Hands each delivery of `batch` (recorded) over, head branches read
    /// with `branch_pattern`, and settles those handed over together, in
    /// one commit, before any task they passed may run on. Each
    /// delivery's result, in order; one not handed over is left
    /// unsettled, to be handed over again at the next start. An error
    /// when the settling failed: the tasks passed are then let go
    /// unstarted (their leases expire, and they are resumed as crashed).
    pub fn hand_over_batch(
        &self,
        batch: &[NewDelivery],
        branch_pattern: &str,
    ) -> Result<Vec<Result<HandedOver>>> {
        let handed: Vec<Result<HandedOver>> = batch
            .iter()
            .map(|d| self.hand_over(d, branch_pattern))
            .collect();
        let settled: Vec<_> = batch
            .iter()
            .zip(&handed)
            .filter_map(|(d, h)| {
                h.as_ref()
                    .ok()
                    .map(|h| (d.id.clone(), h.settlement.clone()))
            })
            .collect();
        self.store.settle_deliveries(&settled)?;
        for d in batch {
            self.crash_point("delivery-settled", &d.event);
        }
        Ok(handed)
    }

    /// `baton deliver`: records `d`, hands it over and settles it, as a
    /// server does with what it receives.
    pub fn deliver(&self, d: NewDelivery, branch_pattern: &str) -> Result<Delivered> {
        let fresh = self.store.record_deliveries(std::slice::from_ref(&d))?[0];
        self.crash_point("delivery-recorded", &d.event);
        // A redelivery of one a crash left unsettled (recorded, never
        // handed over): handed over now, as stored, as a server's start
        // would; the tasks' journals keep it from passing a wait twice.
        let unsettled = if fresh {
            None
        } else {
            self.store
                .unsettled_deliveries()?
                .into_iter()
                .find(|u| u.id == d.id)
        };
        if let Some(stored) = unsettled {
            let handed = self
                .hand_over_batch(std::slice::from_ref(&stored), branch_pattern)?
                .pop()
                .expect("one result per delivery")?;
            return Ok(Delivered::Handed(handed));
        }
        if !fresh {
            let before = self.store.delivery(&d.id)?;
            return Ok(Delivered::Redelivery(before));
        }
        let handed = self
            .hand_over_batch(std::slice::from_ref(&d), branch_pattern)?
            .pop()
            .expect("one result per delivery")?;
        Ok(Delivered::Handed(handed))
    }

    /// The hashes of the stored workflow definitions (each never changes).
    pub fn definition_hashes(&self) -> Result<Vec<String>> {
        Ok(self.store.definition_hashes()?)
    }

    /// What the wait phases of stored definition `hash` expect.
    pub fn awaited_by(&self, hash: &str) -> Result<Option<super::Awaited>> {
        Ok(self
            .store
            .definition(hash)?
            .map(|d| super::Awaited::of(std::iter::once(d.json.as_str()))))
    }
}
