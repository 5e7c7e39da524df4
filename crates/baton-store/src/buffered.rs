//! Where deliveries that came before their stage are kept: one row per
//! (task, wait phase, delivery), with what the delivery is judged on, so
//! that the task's runner can judge it again and pass the phase when the
//! task reaches it. A row is dropped when it is used, when its task ends,
//! or when it expires.

use crate::Result;
use baton_core::{TaskId, Timestamp};

/// The phase of a delivery kept for a task the store does not know yet
/// (it names the task, which is created later): used at whichever of the
/// task's waits first expects it.
pub const ANY_WAIT: &str = "*";

/// A delivery kept for a task's wait phase.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Buffered {
    pub task: TaskId,
    /// The wait phase it is for ([`ANY_WAIT`] for a task not known yet).
    pub phase: String,
    /// `X-GitHub-Delivery` (or `baton deliver`'s id).
    pub delivery: String,
    /// `X-GitHub-Event`.
    pub event: String,
    /// What it is judged on (the delivery's essentials, as JSON).
    pub payload: String,
    /// How a head branch names a task, as it was read on arrival.
    pub branch_pattern: String,
    pub received_at: Timestamp,
    pub expires_at: Timestamp,
}

/// The buffered deliveries' part of a store; both backends implement it.
pub trait BufferStore: Send + Sync {
    /// Keeps `b`; `false` when that delivery is kept for that phase of
    /// that task already.
    fn buffer_event(&self, b: &Buffered) -> Result<bool>;
    /// What is kept for `task`, oldest first (expired ones included: the
    /// caller judges the time).
    fn buffered_for(&self, task: &TaskId) -> Result<Vec<Buffered>>;
    /// Everything kept, oldest first (for `baton deliveries` and the API).
    fn buffered_all(&self) -> Result<Vec<Buffered>>;
    /// Drops what is kept for `task` (for one phase, or all of it); how
    /// many rows went.
    fn drop_buffered(&self, task: &TaskId, phase: Option<&str>) -> Result<usize>;
    /// Drops what is kept of `delivery` for `task` (whatever the phase);
    /// how many rows went.
    fn drop_buffered_delivery(&self, task: &TaskId, delivery: &str) -> Result<usize>;
    /// Drops what expired by `now`; how many rows went.
    fn expire_buffered(&self, now: Timestamp) -> Result<usize>;
}
