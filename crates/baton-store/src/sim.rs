//! The simulator's store: a real [`SqliteStore`] (the storage engine is not
//! what a deterministic simulation replaces, as FoundationDB simulates the
//! network and disks, not its own storage) with what is nondeterministic or
//! faulty in the world put under the simulator's control: the clock the
//! store answers with, and a seeded fault on any write call.
//!
//! A fault comes before the write (nothing written: the connection was cut
//! on the way) or after it (written, yet the caller gets an error: the
//! connection was cut after `COMMIT`, the ambiguous outcome every caller
//! must survive). With [`Faults::none`] and [`SimClock::Wall`] it is the
//! wrapped store, call for call; the contract suite runs it as `NAME::sim`.
//!
//! One thing it cannot replace: the wrapped SQLite stamps messages and
//! heartbeats with its own wall clock (inside its transaction), so a
//! simulation keeps those stamps out of its decisions and its trace.

use crate::{
    Acquire, Answered, Buffered, DeliveryRow, Durability, Error, Holder, LinkStart, MessageQuery,
    NewDelivery, PhaseWrites, RenewOutcome, Result, Revoke, Settlement, SqliteStore, Store,
    StoredDefinition, TaskSnapshot, TaskSummary,
};
use crate::{
    BufferStore, CapabilityStore, CommentStore, DeliveryStore, InboxStore, InstanceStore,
    LinkStore, PlayStore, ProgressStore, TeamStore, WorkspaceStore,
};
use baton_core::comment::{Comment, Delivered};
use baton_core::inbox::{Answer, InboxItem};
use baton_core::instance::{Instance, Instances, Record as InstanceRecord};
use baton_core::lease::{Lease, LeaseOwner};
use baton_core::link::{Link, Started};
use baton_core::play::Play;
use baton_core::progress::Progress;
use baton_core::team::{Message, NewMessage, Presence, Record as TeamRecord, Team};
use baton_core::token::Scope;
use baton_core::workspace::WorkspaceRecord;
use baton_core::{EventRecord, TaskId, TaskState, Timestamp};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};

/// SplitMix64 (Steele, Lea and Flood): a tiny, well-mixed generator whose
/// whole state is one `u64`, so a seed replays exactly. Not for secrets.
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n > 0`; the modulo bias is negligible here).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }
}

/// The clock the store answers [`TeamStore::store_now`] with.
#[derive(Debug, Clone)]
pub enum SimClock {
    /// The wrapped store's own clock: the store exactly as it is.
    Wall,
    /// Milliseconds the simulator sets and advances; every clone is the
    /// same clock.
    Manual(Arc<AtomicI64>),
}

impl SimClock {
    pub fn manual(start: Timestamp) -> SimClock {
        SimClock::Manual(Arc::new(AtomicI64::new(start.millis())))
    }

    /// The simulated time (`None` for the wall clock, which only the store
    /// reads).
    pub fn now(&self) -> Option<Timestamp> {
        match self {
            SimClock::Wall => None,
            SimClock::Manual(ms) => Some(Timestamp(ms.load(Ordering::SeqCst))),
        }
    }

    /// Moves simulated time on by `ms` (never back); nothing for the wall.
    pub fn advance(&self, ms: i64) {
        if let SimClock::Manual(t) = self {
            t.fetch_add(ms.max(0), Ordering::SeqCst);
        }
    }
}

/// Which writes fail, drawn from a seeded generator so that a seed replays
/// the same faults at the same calls.
#[derive(Debug, Clone)]
pub struct Faults {
    rng: SplitMix64,
    /// Per million write calls: cut before the write.
    pub before_ppm: u64,
    /// Per million write calls: cut after the write (it landed).
    pub after_ppm: u64,
    /// A deliberately broken store, to prove the simulator finds breaks:
    /// a task commit refused for a lost lease or a stale seq is forced in
    /// (the lease taken over, the events renumbered after the stored
    /// ones), as a store without fencing, last writer wins, would do.
    pub unfenced: bool,
}

impl Faults {
    /// No faults: the wrapped store as it is.
    pub fn none() -> Faults {
        Faults::seeded(0, 0, 0)
    }

    pub fn seeded(seed: u64, before_ppm: u64, after_ppm: u64) -> Faults {
        Faults {
            rng: SplitMix64::new(seed),
            before_ppm,
            after_ppm,
            unfenced: false,
        }
    }

    fn roll(&mut self) -> Option<Cut> {
        if self.before_ppm == 0 && self.after_ppm == 0 {
            return None;
        }
        let r = self.rng.below(1_000_000);
        if r < self.before_ppm {
            Some(Cut::Before)
        } else if r < self.before_ppm + self.after_ppm {
            Some(Cut::After)
        } else {
            None
        }
    }
}

/// Where an injected fault cut the connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cut {
    Before,
    After,
}

/// Whether an error is one [`SimStore`] injected (the caller cannot know
/// whether its write landed), rather than the store's answer.
pub fn is_injected(e: &Error) -> bool {
    matches!(e, Error::Connect { target, .. } if target == SIM_TARGET)
}

const SIM_TARGET: &str = "sim";

/// A [`SqliteStore`] under a simulated clock and seeded write faults.
pub struct SimStore {
    inner: SqliteStore,
    clock: SimClock,
    faults: Mutex<Faults>,
}

impl SimStore {
    pub fn new(inner: SqliteStore, clock: SimClock, faults: Faults) -> SimStore {
        SimStore {
            inner,
            clock,
            faults: Mutex::new(faults),
        }
    }

    pub fn clock(&self) -> &SimClock {
        &self.clock
    }

    /// The wrapped store, read without faults: what an oracle (the
    /// simulator's invariant checks) sees of the truth.
    pub fn inner(&self) -> &SqliteStore {
        &self.inner
    }

    /// Changes the fault rates from now on (a quiet period sets 0); the
    /// generator and the broken mode are kept.
    pub fn set_rates(&self, before_ppm: u64, after_ppm: u64) {
        let mut f = self.faults.lock().expect("faults lock");
        f.before_ppm = before_ppm;
        f.after_ppm = after_ppm;
    }

    pub fn set_unfenced(&self, on: bool) {
        self.faults.lock().expect("faults lock").unfenced = on;
    }

    /// Runs the write `f`, cut before or after by the fault drawn for it.
    fn write<T>(&self, op: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
        let cut = self.faults.lock().expect("faults lock").roll();
        let lost = |when: &str| Error::Connect {
            target: SIM_TARGET.into(),
            reason: format!("the connection was cut {when} {op}"),
        };
        match cut {
            None => f(),
            Some(Cut::Before) => Err(lost("before")),
            Some(Cut::After) => {
                let _ = f();
                Err(lost("after"))
            }
        }
    }

    /// The broken mode's commit: forced in when fencing refuses it.
    fn commit_unfenced(
        &self,
        owner: &LeaseOwner,
        state: &TaskState,
        phases: &PhaseWrites,
        events: &[EventRecord],
        durability: Durability,
    ) -> Result<()> {
        match self.inner.commit(owner, state, phases, events, durability) {
            Err(Error::LeaseLost { .. } | Error::SeqConflict { .. }) => {}
            other => return other,
        }
        let Some(snap) = self.inner.load(&state.task_id)? else {
            return Err(Error::NotFound(state.task_id.clone()));
        };
        let now = self.store_now()?;
        let lease = Lease {
            owner: owner.clone(),
            acquired_at: now,
            expires_at: snap.lease.as_ref().map_or(now, |l| l.expires_at),
        };
        let holder = snap.lease.as_ref().map(|l| &l.owner);
        self.inner.acquire(&state.task_id, &lease, holder)?;
        let base = snap.state.last_seq;
        let renumbered: Vec<EventRecord> = events
            .iter()
            .enumerate()
            .map(|(i, r)| EventRecord {
                seq: base + 1 + i as u64,
                ..r.clone()
            })
            .collect();
        let mut forced = state.clone();
        forced.last_seq = base + renumbered.len() as u64;
        self.inner
            .commit(owner, &forced, &PhaseWrites::All, &renumbered, durability)
    }
}

impl Store for SimStore {
    fn put_definition(&self, def: &StoredDefinition) -> Result<()> {
        self.write("put_definition", || self.inner.put_definition(def))
    }
    fn definition(&self, hash: &str) -> Result<Option<StoredDefinition>> {
        self.inner.definition(hash)
    }
    fn create_task(
        &self,
        state: &TaskState,
        events: &[EventRecord],
        holder: Holder<'_>,
    ) -> Result<()> {
        self.write("create_task", || {
            self.inner.create_task(state, events, holder)
        })
    }
    fn commit(
        &self,
        owner: &LeaseOwner,
        state: &TaskState,
        phases: &PhaseWrites,
        events: &[EventRecord],
        durability: Durability,
    ) -> Result<()> {
        let unfenced = self.faults.lock().expect("faults lock").unfenced;
        self.write("commit", || {
            if unfenced {
                self.commit_unfenced(owner, state, phases, events, durability)
            } else {
                self.inner.commit(owner, state, phases, events, durability)
            }
        })
    }
    fn load(&self, id: &TaskId) -> Result<Option<TaskSnapshot>> {
        self.inner.load(id)
    }
    fn list(&self) -> Result<Vec<TaskSummary>> {
        self.inner.list()
    }
    fn events(&self, id: &TaskId, after: u64, limit: usize) -> Result<Vec<EventRecord>> {
        self.inner.events(id, after, limit)
    }
    fn acquire(&self, id: &TaskId, lease: &Lease, replace: Option<&LeaseOwner>) -> Result<Acquire> {
        self.write("acquire", || self.inner.acquire(id, lease, replace))
    }
    fn renew(
        &self,
        id: &TaskId,
        owner: &LeaseOwner,
        expires_at: Timestamp,
    ) -> Result<RenewOutcome> {
        self.write("renew", || self.inner.renew(id, owner, expires_at))
    }
    fn release(&self, id: &TaskId, owner: &LeaseOwner) -> Result<()> {
        self.write("release", || self.inner.release(id, owner))
    }
    fn request_cancel(&self, id: &TaskId) -> Result<()> {
        self.write("request_cancel", || self.inner.request_cancel(id))
    }
    fn delete_task(&self, id: &TaskId) -> Result<bool> {
        self.write("delete_task", || self.inner.delete_task(id))
    }
    fn replace_projection(&self, state: &TaskState, seen_lease: Option<&Lease>) -> Result<()> {
        self.write("replace_projection", || {
            self.inner.replace_projection(state, seen_lease)
        })
    }
    fn check(&self) -> Result<Vec<String>> {
        self.inner.check()
    }
    fn claim(&self, lease: &Lease, skip: &[TaskId]) -> Result<Option<TaskId>> {
        self.write("claim", || self.inner.claim(lease, skip))
    }
    fn wait_for_work(&self, timeout: std::time::Duration) -> Result<()> {
        self.inner.wait_for_work(timeout)
    }
    fn definitions(&self) -> Result<Vec<StoredDefinition>> {
        self.inner.definitions()
    }
    fn definition_hashes(&self) -> Result<Vec<String>> {
        self.inner.definition_hashes()
    }
    fn import_task(&self, snap: &TaskSnapshot, events: &[EventRecord]) -> Result<()> {
        self.write("import_task", || self.inner.import_task(snap, events))
    }
    fn describe(&self) -> String {
        format!("{} (simulated)", self.inner.describe())
    }
}

impl InstanceStore for SimStore {
    fn instances(&self) -> Result<Instances> {
        self.inner.instances()
    }
    fn commit_instances(
        &self,
        expected: u64,
        records: &[InstanceRecord],
        changed: &[&Instance],
    ) -> Result<()> {
        self.write("commit_instances", || {
            self.inner.commit_instances(expected, records, changed)
        })
    }
    fn instance_events(&self, after: u64, limit: usize) -> Result<Vec<InstanceRecord>> {
        self.inner.instance_events(after, limit)
    }
}

impl BufferStore for SimStore {
    fn buffer_event(&self, b: &Buffered) -> Result<bool> {
        self.write("buffer_event", || self.inner.buffer_event(b))
    }
    fn buffered_for(&self, task: &TaskId) -> Result<Vec<Buffered>> {
        self.inner.buffered_for(task)
    }
    fn buffered_all(&self) -> Result<Vec<Buffered>> {
        self.inner.buffered_all()
    }
    fn drop_buffered(&self, task: &TaskId, phase: Option<&str>) -> Result<usize> {
        self.write("drop_buffered", || self.inner.drop_buffered(task, phase))
    }
    fn drop_buffered_delivery(&self, task: &TaskId, delivery: &str) -> Result<usize> {
        self.write("drop_buffered_delivery", || {
            self.inner.drop_buffered_delivery(task, delivery)
        })
    }
    fn expire_buffered(&self, now: Timestamp) -> Result<usize> {
        self.write("expire_buffered", || self.inner.expire_buffered(now))
    }
}

impl CapabilityStore for SimStore {
    fn grant_capability(&self, digest: &str, scope: &Scope, at: Timestamp) -> Result<()> {
        self.write("grant_capability", || {
            self.inner.grant_capability(digest, scope, at)
        })
    }
    fn capability(&self, digest: &str) -> Result<Option<Scope>> {
        self.inner.capability(digest)
    }
    fn revoke_capabilities(&self, which: Revoke<'_>) -> Result<usize> {
        self.write("revoke_capabilities", || {
            self.inner.revoke_capabilities(which)
        })
    }
}

impl DeliveryStore for SimStore {
    fn record_deliveries(&self, new: &[NewDelivery]) -> Result<Vec<bool>> {
        self.write("record_deliveries", || self.inner.record_deliveries(new))
    }
    fn settle_deliveries(&self, settled: &[(String, Settlement)]) -> Result<Vec<bool>> {
        self.write("settle_deliveries", || {
            self.inner.settle_deliveries(settled)
        })
    }
    fn delivery_counts(&self) -> Result<Vec<(String, i64)>> {
        self.inner.delivery_counts()
    }
    fn deliveries(&self, limit: usize) -> Result<Vec<DeliveryRow>> {
        self.inner.deliveries(limit)
    }
    fn unsettled_deliveries(&self) -> Result<Vec<NewDelivery>> {
        self.inner.unsettled_deliveries()
    }
    fn delivery(&self, id: &str) -> Result<Option<DeliveryRow>> {
        self.inner.delivery(id)
    }
    fn resettle_delivery(&self, id: &str, how: &Settlement) -> Result<bool> {
        self.write("resettle_delivery", || {
            self.inner.resettle_delivery(id, how)
        })
    }
}

impl ProgressStore for SimStore {
    fn put_progress(&self, p: &Progress) -> Result<()> {
        self.write("put_progress", || self.inner.put_progress(p))
    }
    fn put_task_stage(&self, p: &Progress) -> Result<()> {
        self.write("put_task_stage", || self.inner.put_task_stage(p))
    }
    fn progress(&self, repository: Option<&str>) -> Result<Vec<Progress>> {
        self.inner.progress(repository)
    }
    fn task_stages(&self, repository: Option<&str>) -> Result<Vec<Progress>> {
        self.inner.task_stages(repository)
    }
    fn task_stage(&self, repository: &str, task: &str) -> Result<Option<Progress>> {
        self.inner.task_stage(repository, task)
    }
    fn clear_progress(&self, repository: &str) -> Result<bool> {
        self.write("clear_progress", || self.inner.clear_progress(repository))
    }
    fn clear_task_stage(&self, repository: &str, task: &str) -> Result<bool> {
        self.write("clear_task_stage", || {
            self.inner.clear_task_stage(repository, task)
        })
    }
}

impl PlayStore for SimStore {
    fn put_play(&self, p: &Play) -> Result<()> {
        self.write("put_play", || self.inner.put_play(p))
    }
    fn plays(&self) -> Result<Vec<Play>> {
        self.inner.plays()
    }
}

impl WorkspaceStore for SimStore {
    fn put_workspace(&self, w: &WorkspaceRecord) -> Result<()> {
        self.write("put_workspace", || self.inner.put_workspace(w))
    }
    fn workspaces(&self) -> Result<Vec<WorkspaceRecord>> {
        self.inner.workspaces()
    }
    fn delete_workspace(&self, name: &str) -> Result<bool> {
        self.write("delete_workspace", || self.inner.delete_workspace(name))
    }
}

impl TeamStore for SimStore {
    fn store_now(&self) -> Result<Timestamp> {
        match self.clock.now() {
            Some(t) => Ok(t),
            None => self.inner.store_now(),
        }
    }
    fn create_team(&self, team: &Team, records: &[TeamRecord]) -> Result<bool> {
        self.write("create_team", || self.inner.create_team(team, records))
    }
    fn team(&self, id: &str) -> Result<Option<Team>> {
        self.inner.team(id)
    }
    fn teams(&self) -> Result<Vec<Team>> {
        self.inner.teams()
    }
    fn commit_team(&self, expected: u64, team: &Team, records: &[TeamRecord]) -> Result<()> {
        self.write("commit_team", || {
            self.inner.commit_team(expected, team, records)
        })
    }
    fn team_records(&self, id: &str, after: u64, limit: usize) -> Result<Vec<TeamRecord>> {
        self.inner.team_records(id, after, limit)
    }
    fn send_message(&self, team: &str, m: &NewMessage) -> Result<(Message, bool)> {
        self.write("send_message", || self.inner.send_message(team, m))
    }
    fn messages(&self, team: &str, q: &MessageQuery) -> Result<Vec<Message>> {
        self.inner.messages(team, q)
    }
    fn message_count(&self, team: &str) -> Result<u64> {
        self.inner.message_count(team)
    }
    fn unread_count(&self, team: &str, name: &str, up_to: u64) -> Result<u64> {
        self.inner.unread_count(team, name, up_to)
    }
    fn import_messages(&self, team: &str, messages: &[Message]) -> Result<()> {
        self.write("import_messages", || {
            self.inner.import_messages(team, messages)
        })
    }
    fn ack_messages(&self, team: &str, by: &str, seqs: &[u64]) -> Result<usize> {
        self.write("ack_messages", || self.inner.ack_messages(team, by, seqs))
    }
    fn heartbeat(
        &self,
        team: &str,
        name: &str,
        seq: Option<u64>,
        sent_at: Option<Timestamp>,
    ) -> Result<Presence> {
        self.write("heartbeat", || {
            self.inner.heartbeat(team, name, seq, sent_at)
        })
    }
    fn presences(&self, team: &str) -> Result<Vec<Presence>> {
        self.inner.presences(team)
    }
}

impl InboxStore for SimStore {
    fn raise_item(&self, item: &InboxItem) -> Result<InboxItem> {
        self.write("raise_item", || self.inner.raise_item(item))
    }
    fn inbox_item(&self, id: &str) -> Result<Option<InboxItem>> {
        self.inner.inbox_item(id)
    }
    fn inbox_items(&self, open_only: bool) -> Result<Vec<InboxItem>> {
        self.inner.inbox_items(open_only)
    }
    fn answer_item(&self, id: &str, answer: &Answer) -> Result<Answered> {
        self.write("answer_item", || self.inner.answer_item(id, answer))
    }
}

impl CommentStore for SimStore {
    fn add_comment(&self, c: &Comment) -> Result<()> {
        self.write("add_comment", || self.inner.add_comment(c))
    }
    fn comments(&self, target: &str) -> Result<Vec<Comment>> {
        self.inner.comments(target)
    }
    fn deliver_comments(&self, target: &str, ids: &[String], d: &Delivered) -> Result<usize> {
        self.write("deliver_comments", || {
            self.inner.deliver_comments(target, ids, d)
        })
    }
}

impl LinkStore for SimStore {
    fn add_link(&self, link: &Link) -> Result<bool> {
        self.write("add_link", || self.inner.add_link(link))
    }
    fn links(&self, pending_only: bool) -> Result<Vec<Link>> {
        self.inner.links(pending_only)
    }
    fn start_link(&self, id: &str, started: &Started) -> Result<LinkStart> {
        self.write("start_link", || self.inner.start_link(id, started))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_draws_the_same_numbers_and_another_seed_others() {
        let draw = |seed| {
            let mut r = SplitMix64::new(seed);
            (0..8).map(|_| r.next_u64()).collect::<Vec<_>>()
        };
        assert_eq!(draw(7), draw(7));
        assert_ne!(draw(7), draw(8));
    }

    #[test]
    fn a_cut_before_writes_nothing_and_a_cut_after_writes_but_errs() {
        let store = |before, after| {
            SimStore::new(
                SqliteStore::in_memory().unwrap(),
                SimClock::manual(Timestamp(5)),
                Faults::seeded(1, before, after),
            )
        };
        let def = |h: &str| StoredDefinition {
            hash: h.into(),
            name: "w".into(),
            json: "{}".into(),
        };
        let s = store(1_000_000, 0);
        let e = s.put_definition(&def("a")).unwrap_err();
        assert!(is_injected(&e), "{e}");
        assert!(s.definition("a").unwrap().is_none(), "nothing written");
        let s = store(0, 1_000_000);
        let e = s.put_definition(&def("a")).unwrap_err();
        assert!(is_injected(&e), "{e}");
        assert!(s.definition("a").unwrap().is_some(), "written all the same");
        assert_eq!(s.store_now().unwrap(), Timestamp(5));
        s.clock().advance(10);
        assert_eq!(s.store_now().unwrap(), Timestamp(15));
    }
}
