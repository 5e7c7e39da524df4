//! Where outside events (GitHub webhook deliveries) are kept: one row per
//! delivery id, so a redelivery is recognised durably, also after a
//! restart and across servers sharing one database. A delivery is stored
//! with what it is judged on when it is accepted, and settled (what it did to which
//! task, and why; the body dropped) once it was handed to the tasks. One
//! still unsettled after a crash is handed to them again: the tasks judge
//! it again under their leases, so nothing is resumed twice.

use crate::Result;
use baton_core::Timestamp;
use serde::{Deserialize, Serialize};

/// A delivery as it arrives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewDelivery {
    /// `X-GitHub-Delivery`.
    pub id: String,
    pub received_at: Timestamp,
    /// `X-GitHub-Event`.
    pub event: String,
    pub action: Option<String>,
    /// `repository.full_name`.
    pub repository: Option<String>,
    /// What the delivery is judged on (the body's essentials, as JSON),
    /// kept until the delivery is settled.
    pub payload: String,
    /// The same essentials as parsed where the delivery arrived, so that
    /// handing it over in that process parses nothing again; `None` for
    /// one read back from the store (its `payload` is parsed then).
    pub essentials: Option<std::sync::Arc<serde_json::Value>>,
    /// Already settled as it arrives (an event no task waits for): stored
    /// so, without its body.
    pub settled: Option<Settlement>,
    /// The signed body's digest, for a delivery that came over the wire:
    /// the same body recorded within the window, under any delivery id,
    /// makes this one a redelivery (a captured delivery replayed).
    pub body: Option<BodyDigest>,
}

/// A delivery's body as the replay check knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BodyDigest {
    /// Hex SHA-256 of the body as received.
    pub digest: String,
    /// How long, in milliseconds, a body is remembered.
    pub window_ms: i64,
}

/// What a delivery did to one task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskDecision {
    pub task: String,
    /// `resumed` or `skipped`.
    pub decision: String,
    pub why: String,
}

/// A stored delivery.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeliveryRow {
    pub id: String,
    pub received_at: Timestamp,
    pub event: String,
    pub action: Option<String>,
    pub repository: Option<String>,
    /// `None` while it is still being handed to the tasks.
    pub settled_at: Option<Timestamp>,
    /// `pending`, `resumed`, `skipped` or `ignored`.
    pub decision: String,
    pub why: String,
    pub tasks: Vec<TaskDecision>,
}

/// How a delivery was settled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settlement {
    pub at: Timestamp,
    pub decision: String,
    pub why: String,
    pub tasks: Vec<TaskDecision>,
}

/// The deliveries' part of a store; both backends implement it.
pub trait DeliveryStore: Send + Sync {
    /// Stores `new` in one transaction (a group commit of concurrent
    /// deliveries) and answers, for each, whether it was new: `false` for
    /// an id already stored, or earlier in `new`, and for a body (its
    /// [`BodyDigest`]) recorded within its window, or earlier in `new`.
    fn record_deliveries(&self, new: &[NewDelivery]) -> Result<Vec<bool>>;

    /// Settles each delivery still unsettled, in one transaction; per
    /// delivery `false` if it was settled already (by another server) or
    /// is unknown.
    fn settle_deliveries(&self, settled: &[(String, Settlement)]) -> Result<Vec<bool>>;

    /// The newest `limit` deliveries, newest first.
    fn deliveries(&self, limit: usize) -> Result<Vec<DeliveryRow>>;
    /// How many deliveries are stored with each decision (`/metrics`):
    /// counted by the store, whatever their number.
    fn delivery_counts(&self) -> Result<Vec<(String, i64)>>;

    /// The deliveries not settled yet, oldest first, with their bodies.
    fn unsettled_deliveries(&self) -> Result<Vec<NewDelivery>>;

    /// Delivery `id`, if it is stored.
    fn delivery(&self, id: &str) -> Result<Option<DeliveryRow>>;

    /// Rewrites what a settled delivery did (a delivery kept for a later
    /// stage, once the task got there and used it); `false` if unknown.
    fn resettle_delivery(&self, id: &str, how: &Settlement) -> Result<bool>;
}

pub(crate) const PENDING: &str = "pending";

pub(crate) fn tasks_json(tasks: &[TaskDecision]) -> String {
    serde_json::to_string(tasks).expect("decisions are JSON")
}

pub(crate) fn tasks_of(id: &str, json: &str) -> Result<Vec<TaskDecision>> {
    serde_json::from_str(json)
        .map_err(|e| crate::Error::Corrupt(format!("delivery {id}'s decisions: {e}")))
}

/// Marks the later copies of an id, or of a body, within one batch as not
/// new.
pub(crate) fn first_in_batch(new: &[NewDelivery]) -> Vec<bool> {
    let mut ids = std::collections::HashSet::new();
    let mut bodies = std::collections::HashSet::new();
    new.iter()
        .map(|d| {
            ids.insert(d.id.as_str())
                && d.body
                    .as_ref()
                    .is_none_or(|b| bodies.insert(b.digest.as_str()))
        })
        .collect()
}
