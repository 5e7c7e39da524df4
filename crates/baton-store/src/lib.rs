//! baton-store: where the journal and the projections live.
//!
//! [`Store`] speaks domain types only. Every transition is committed as one
//! transaction holding the new journal events, the task row and the phase
//! rows that changed, after checking that the writer still holds the task's
//! lease and has seen the latest event. [`sqlite::SqliteStore`] is the
//! embedded backend; [`postgres::PgStore`] serves many workers on many
//! machines. Both pass one contract suite (`tests/contract.rs`).

pub mod buffered;
pub mod capabilities;
mod codec;
pub mod comments;
pub mod deliveries;
pub mod inbox;
pub mod instances;
pub mod links;
pub mod plays;
pub mod postgres;
pub mod progress;
pub mod sim;
pub mod sqlite;
pub mod teams;
pub mod workspaces;

use baton_core::lease::{Lease, LeaseOwner};
use baton_core::state::{PhaseState, TaskStatus};
use baton_core::{EventRecord, TaskId, TaskState, Timestamp};

pub use buffered::{BufferStore, Buffered};
pub use capabilities::{CapabilityStore, Revoke};
pub use comments::CommentStore;
pub use deliveries::{
    BodyDigest, DeliveryRow, DeliveryStore, NewDelivery, Settlement, TaskDecision,
};
pub use inbox::{Answered, InboxStore};
pub use instances::InstanceStore;
pub use links::{LinkStart, LinkStore};
pub use plays::PlayStore;
pub use postgres::PgStore;
pub use progress::ProgressStore;
pub use sim::{Faults, SimClock, SimStore};
pub use sqlite::{SqliteStore, Synchronous};
pub use teams::{MessageQuery, TeamStore};
pub use workspaces::WorkspaceStore;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("no task {0}")]
    NotFound(TaskId),
    #[error("a task {0} already exists")]
    AlreadyExists(TaskId),
    #[error("the lease of task {task} is no longer held by this process")]
    LeaseLost {
        task: TaskId,
        /// Who holds it now (boxed: errors stay small).
        holder: Option<Box<Lease>>,
    },
    #[error("task {task} changed underneath: expected event {expected}, the store is at {found}")]
    SeqConflict {
        task: TaskId,
        expected: u64,
        found: u64,
    },
    #[error("cannot open the store at {path}: {reason}")]
    Open { path: String, reason: String },
    /// The store is on a read-only folder or mount (opened for reading
    /// only): this operation writes.
    #[error(
        "the store at {path} is read-only (its folder or mount cannot be written), and this writes to it"
    )]
    ReadOnly { path: String },
    #[error(
        "the store at {path} was written by a newer baton (schema {found}; this baton knows up to {known})"
    )]
    NewerSchema {
        path: String,
        found: i64,
        known: usize,
    },
    #[error(
        "the instances changed underneath: decided at event {expected}, the store is at {found}"
    )]
    InstancesChanged { expected: u64, found: u64 },
    #[error("team {team} changed underneath: decided at event {expected}, the store is at {found}")]
    TeamChanged {
        team: String,
        expected: u64,
        found: u64,
    },
    #[error("no team {0}")]
    NoTeam(String),
    #[error("the store holds damaged data: {0}")]
    Corrupt(String),
    /// The database server cannot be reached (after retrying).
    #[error("cannot connect to PostgreSQL at {target}: {reason}")]
    Connect { target: String, reason: String },
    /// The URL leads to a connection pooler that hands one session's
    /// statements to several servers (PgBouncer's transaction or statement
    /// mode), where baton's prepared statements and its LISTEN for new
    /// work cannot work.
    #[error(
        "{target} pools connections per transaction (PgBouncer's pool_mode = transaction or statement): baton keeps prepared statements and LISTENs for new work on its connections, which need a session of their own"
    )]
    TransactionPooling { target: String },
    /// The URL itself is wrong (bad input, not an outage).
    #[error("{url} is not a valid PostgreSQL URL: {reason}")]
    InvalidUrl { url: String, reason: String },
    #[error(transparent)]
    Sqlite(#[from] rusqlite::Error),
    #[error("PostgreSQL: {0}")]
    Postgres(String),
}

impl Error {
    /// A write refused because the store could only be opened for reading
    /// (a read-only folder or mount).
    pub fn is_read_only(&self) -> bool {
        match self {
            Error::ReadOnly { .. } => true,
            Error::Sqlite(e) => e.sqlite_error_code() == Some(rusqlite::ErrorCode::ReadOnly),
            _ => false,
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A task as loaded: its projection plus who holds it.
#[derive(Debug, Clone)]
pub struct TaskSnapshot {
    pub state: TaskState,
    pub lease: Option<Lease>,
    pub cancel_requested: bool,
    /// Enqueued (`baton run --queue`): workers claim it, and it runs in its
    /// own git worktree on branch `baton/<id>`.
    pub queued: bool,
}

/// One line of `baton ls`, read without loading phases.
#[derive(Debug, Clone)]
pub struct TaskSummary {
    pub id: TaskId,
    pub workflow: String,
    pub description: String,
    pub status: TaskStatus,
    pub last_phase: Option<String>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    pub lease: Option<Lease>,
    pub queued: bool,
}

/// Which phase rows a commit rewrites.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PhaseWrites {
    /// Only these indices into `state.phases` changed.
    Changed(Vec<usize>),
    /// The phase list itself changed (a definition upgrade): rewrite all.
    All,
}

/// What acquiring a lease found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Acquire {
    Acquired,
    /// Someone else holds it (and was not the owner we were told to replace).
    Held(Lease),
}

/// Who holds a task as it is created.
#[derive(Debug, Clone, Copy)]
pub enum Holder<'a> {
    /// The creating process, which goes on to run it.
    Lease(&'a Lease),
    /// Nobody yet: it is queued for a worker (and workers are woken).
    Queue,
}

/// How far a commit must have got when [`Store::commit`] returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Durability {
    /// On disk: it survives a power loss (what the store's setting gives).
    #[default]
    Disk,
    /// Handed to the operating system (or the database server): it
    /// survives baton's own crash but may be lost with the machine, and
    /// reaches the disk with the next `Disk` commit, in order. For facts
    /// that die with the machine anyway, such as the process a phase runs.
    /// PostgreSQL commits these like any other.
    Process,
}

/// A pinned workflow definition.
#[derive(Debug, Clone)]
pub struct StoredDefinition {
    pub hash: String,
    pub name: String,
    /// The validated workflow as JSON (`baton_core::Workflow`).
    pub json: String,
}

/// The storage seam. Implementations must make `create_task` and `commit`
/// atomic, and `acquire` a compare-and-swap. Coding and review instances
/// are kept through [`InstanceStore`], webhook deliveries through
/// [`DeliveryStore`], repositories' progress records through
/// [`ProgressStore`], plays through [`PlayStore`], workspaces by agent role
/// through [`WorkspaceStore`], teams through [`TeamStore`], the inbox
/// through [`InboxStore`], a person's comments on the work through
/// [`CommentStore`], linked tasks waiting for others through
/// [`LinkStore`], the agents' capabilities through
/// [`CapabilityStore`], deliveries that came before their stage through
/// [`BufferStore`], in the same database.
pub trait Store:
    InstanceStore
    + BufferStore
    + CapabilityStore
    + DeliveryStore
    + ProgressStore
    + PlayStore
    + WorkspaceStore
    + TeamStore
    + InboxStore
    + CommentStore
    + LinkStore
    + Send
    + Sync
{
    /// Stores a definition if it is not stored yet.
    fn put_definition(&self, def: &StoredDefinition) -> Result<()>;
    fn definition(&self, hash: &str) -> Result<Option<StoredDefinition>>;

    /// Creates a task with its first event(s), held or queued.
    fn create_task(
        &self,
        state: &TaskState,
        events: &[EventRecord],
        holder: Holder<'_>,
    ) -> Result<()>;

    /// Appends `events` and writes the projection, if `owner` holds the lease
    /// and `events[0].seq` follows the stored last seq.
    fn commit(
        &self,
        owner: &LeaseOwner,
        state: &TaskState,
        phases: &PhaseWrites,
        events: &[EventRecord],
        durability: Durability,
    ) -> Result<()>;

    fn load(&self, id: &TaskId) -> Result<Option<TaskSnapshot>>;
    fn list(&self) -> Result<Vec<TaskSummary>>;
    /// Journal events with `seq > after`, at most `limit`.
    fn events(&self, id: &TaskId, after: u64, limit: usize) -> Result<Vec<EventRecord>>;

    /// Takes the lease if it is free, already ours, or held by `replace`
    /// (an owner the caller proved dead or expired).
    fn acquire(&self, id: &TaskId, lease: &Lease, replace: Option<&LeaseOwner>) -> Result<Acquire>;
    /// Extends our lease; `Ok(false)` if we no longer hold it. Returns
    /// whether a cancel was requested.
    fn renew(&self, id: &TaskId, owner: &LeaseOwner, expires_at: Timestamp)
    -> Result<RenewOutcome>;
    fn release(&self, id: &TaskId, owner: &LeaseOwner) -> Result<()>;
    fn request_cancel(&self, id: &TaskId) -> Result<()>;
    /// Deletes a task with its journal; `false` if there was none.
    fn delete_task(&self, id: &TaskId) -> Result<bool>;
    /// Overwrites a task's projection (task row and every phase row) without
    /// touching its journal or lease, if its journal still ends at
    /// `state.last_seq` and its lease is still `seen_lease` (the one the
    /// caller judged dead or absent); else `SeqConflict` or `LeaseLost`.
    /// `doctor --fix` puts back the projection replayed from the journal.
    fn replace_projection(&self, state: &TaskState, seen_lease: Option<&Lease>) -> Result<()>;
    /// Runs the backend's own integrity check; returns problems found.
    fn check(&self) -> Result<Vec<String>>;

    /// Gives `lease` on the oldest queued RUNNING task that nobody holds, or
    /// whose lease expired by `lease.acquired_at`, leaving out `skip` (tasks
    /// this worker could not start lately). Concurrent claimers (in any
    /// process, on any machine) never get the same task.
    fn claim(&self, lease: &Lease, skip: &[TaskId]) -> Result<Option<TaskId>>;
    /// Returns when new work may be there to claim (a task was queued or
    /// released), or after `timeout`.
    fn wait_for_work(&self, timeout: std::time::Duration) -> Result<()>;

    /// Every stored definition (for `baton store copy`).
    fn definitions(&self) -> Result<Vec<StoredDefinition>>;
    /// The hashes of the stored definitions, sorted: what a reader that
    /// keeps definitions (they never change under their hash) needs to
    /// find new ones without reading every one again.
    fn definition_hashes(&self) -> Result<Vec<String>>;
    /// Writes a whole task copied from another store: its projection, its
    /// complete journal, queued and cancel flags; never its lease. Refuses
    /// (`AlreadyExists`) if the task is there.
    fn import_task(&self, snap: &TaskSnapshot, events: &[EventRecord]) -> Result<()>;
    /// Where the store is, for messages: a file path or `host:port/db`.
    fn describe(&self) -> String;
    /// The clock of a store many machines share (PostgreSQL's
    /// `clock_timestamp()`, in ms since the epoch): leases and journal
    /// times are judged by it, never by each machine's own. `None` for a
    /// store on one machine (SQLite), whose processes share its clock.
    fn server_now(&self) -> Result<Option<Timestamp>> {
        Ok(None)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RenewOutcome {
    Renewed { cancel_requested: bool },
    Lost,
}

/// Which phase `ls` shows: the one in progress, waiting or failed, else the
/// last one completed.
pub fn last_phase(state: &TaskState) -> Option<String> {
    use baton_core::PhaseStatus::*;
    state
        .phases
        .iter()
        .find(|p| matches!(p.status, InProgress | Waiting | Failed))
        // An interrupted attempt leaves its phase PENDING with attempts made.
        .or_else(|| {
            state
                .phases
                .iter()
                .find(|p| p.status == Pending && p.attempt > 0)
        })
        .or_else(|| {
            state
                .phases
                .iter()
                .filter(|p| p.completed_at.is_some() && p.status.is_done())
                .max_by_key(|p| p.completed_at)
        })
        .map(|p: &PhaseState| p.id.to_string())
}
