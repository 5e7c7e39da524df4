//! What the oracle remembers between steps: the facts the simulated
//! processes were told (a pass landed, a message was stored) and how far
//! it has folded the instances' journal. Kept in the world, read by
//! `invariants`.

use baton_core::instance::{InstanceId, Instances};
use std::collections::{BTreeMap, BTreeSet};

/// What the simulator knows it was told: the facts a store must keep.
#[derive(Debug, Default)]
pub struct Ledger {
    /// Every summary of a pass that landed, by task and phase.
    pub(crate) passes: BTreeMap<(String, String), Vec<String>>,
    /// Message ids the store acknowledged (must be stored once each).
    pub sent: BTreeSet<String>,
    /// Message ids whose send was cut (stored once or not at all, until
    /// resent).
    pub unsure: BTreeSet<String>,
}

impl Ledger {
    pub fn passed(&mut self, task: &str, phase: &str, summary: &str) {
        self.passes
            .entry((task.to_string(), phase.to_string()))
            .or_default()
            .push(summary.to_string());
    }
}

/// What the instance oracle has folded of the instances' journal so far,
/// so that the check after a step reads only the records it added.
#[derive(Debug, Default)]
pub struct InstanceOracle {
    pub(crate) replayed: Instances,
    /// Decisions (merge-back, push) journaled, by review.
    pub(crate) decisions: BTreeMap<InstanceId, u32>,
    /// Turn tasks journaled.
    pub(crate) turn_tasks: BTreeSet<String>,
    /// Reviews whose feedback was journaled delivered, by parent, each
    /// until a turn of that parent is journaled after it (to bring it).
    pub(crate) awaiting_turn: BTreeMap<InstanceId, Vec<String>>,
}
