//! The store contract: every backend must pass these. Each contract test
//! runs three times, as `NAME::sqlite` (a file in a temporary folder),
//! `NAME::postgres` (a fresh database on the test process's private
//! PostgreSQL cluster, `baton_testkit::pg`) and `NAME::sim` (the
//! simulator's store, `baton_store::sim`, with faults off: it must be the
//! store it wraps, or what the simulator finds would be about another store). The PostgreSQL-only tests at
//! the end cover what only a server has: notifications, a server that goes
//! away and comes back, connection errors.

use baton_core::lease::{Lease, LeaseOwner};
use baton_core::machine::{self, Input, NewTask};
use baton_core::state::TaskStatus;
use baton_core::{Event, EventRecord, TaskId, TaskState, Timestamp, Workflow};
use baton_store::{
    Acquire, Durability, Error, Faults, Holder, PgStore, PhaseWrites, RenewOutcome, SimClock,
    SimStore, SqliteStore, Store, StoredDefinition, Synchronous,
};
use baton_testkit::pg::{self, PgCluster};
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How long the PostgreSQL stores of these tests keep reconnecting.
const RECONNECT_FOR: Duration = Duration::from_secs(60);

/// Where a test's stores live: it can open several stores (as several
/// processes would) on the same database, and make another empty one.
enum Backend {
    Sqlite(tempfile::TempDir),
    Postgres(String),
    /// A SQLite file under [`SimStore`], faults off, the wall clock.
    Sim(tempfile::TempDir),
}

impl Backend {
    /// The backend of the running test (`NAME::sqlite` or `NAME::postgres`).
    fn current() -> Backend {
        match baton_testkit::backend() {
            baton_testkit::Backend::Sqlite => Backend::sqlite(),
            baton_testkit::Backend::Postgres => Backend::postgres(),
        }
    }

    fn sqlite() -> Backend {
        Backend::Sqlite(tempfile::tempdir().unwrap())
    }

    fn postgres() -> Backend {
        Backend::Postgres(pg::shared().create_database())
    }

    fn sim() -> Backend {
        Backend::Sim(tempfile::tempdir().unwrap())
    }

    /// A new store instance (its own connection) on this database.
    fn open(&self) -> Box<dyn Store> {
        match self {
            Backend::Sqlite(dir) => Box::new(
                SqliteStore::open(&dir.path().join("baton.db"), Synchronous::Full).unwrap(),
            ),
            Backend::Postgres(url) => Box::new(PgStore::connect(url, RECONNECT_FOR).unwrap()),
            Backend::Sim(dir) => Box::new(SimStore::new(
                SqliteStore::open(&dir.path().join("baton.db"), Synchronous::Full).unwrap(),
                SimClock::Wall,
                Faults::none(),
            )),
        }
    }

    /// Another, empty database of the same kind.
    fn fresh(&self) -> Backend {
        match self {
            Backend::Sqlite(_) => Backend::sqlite(),
            Backend::Postgres(_) => Backend::postgres(),
            Backend::Sim(_) => Backend::sim(),
        }
    }
}

/// Each contract test as `NAME::sqlite` and `NAME::postgres` (through
/// baton-testkit's backend switch, as the engine suites use) and
/// `NAME::sim`, which the testkit does not know: one list, three backends.
macro_rules! contract_suite {
    ($($name:ident)*) => {$(
        mod $name {
            use super::*;
            #[test]
            fn sqlite() {
                baton_testkit::with_backend(baton_testkit::Backend::Sqlite, || {
                    $name(&Backend::current())
                })
            }
            #[test]
            fn postgres() {
                baton_testkit::with_backend(baton_testkit::Backend::Postgres, || {
                    $name(&Backend::current())
                })
            }
            #[test]
            fn sim() {
                $name(&Backend::sim())
            }
        }
    )*};
}

contract_suite! {
    meets_the_contract
    claim_gives_the_oldest_free_queued_running_task
    concurrent_claimers_never_get_the_same_task
    concurrent_holders_never_gap_or_duplicate_the_journal
    import_task_round_trips
    definitions_lists_what_was_put
    instances_round_trip_and_writers_serialise
    replayed_bodies_are_redeliveries_within_their_window
    capabilities_are_found_by_digest_and_revoked_by_scope
    early_deliveries_are_kept_once_per_stage_and_go_with_their_task_or_time
    deliveries_are_stored_once_and_settled_once
    progress_and_plays_round_trip
    workspace_records_keep_their_creation_and_outlive_nothing_but_rm
    a_team_journal_commits_in_order_and_refuses_a_stale_writer
    a_mailbox_is_gapless_idempotent_and_read_per_recipient
    a_presence_keeps_only_newer_heartbeats_stamped_by_the_store
    inbox_items_are_raised_once_per_key_and_answered_once
    comments_are_kept_by_target_and_delivered_once
    links_are_kept_until_started_and_started_once
}

fn owner(pid: u32) -> LeaseOwner {
    LeaseOwner {
        host: "h".into(),
        boot_id: "b".into(),
        pid,
        start_time: 1,
        pid_ns: String::new(),
    }
}

fn lease(pid: u32, exp: i64) -> Lease {
    lease_at(pid, 0, exp)
}

fn lease_at(pid: u32, acquired: i64, exp: i64) -> Lease {
    Lease {
        owner: owner(pid),
        acquired_at: Timestamp(acquired),
        expires_at: Timestamp(exp),
    }
}

fn workflow() -> Workflow {
    Workflow::parse(
        "name = \"w\"\n[[phase]]\nid = \"a\"\nrun = \"true\"\n[[phase]]\nid = \"b\"\nrun = \"true\"\n",
        "w.toml",
        "w",
        &|_| Err("none".into()),
    )
    .unwrap()
}

fn put_workflow(store: &dyn Store, wf: &Workflow) -> StoredDefinition {
    let def = StoredDefinition {
        hash: wf.hash(),
        name: wf.name.clone(),
        json: serde_json::to_string(wf).unwrap(),
    };
    store.put_definition(&def).unwrap();
    def
}

fn create(store: &dyn Store, id: &str, pid: u32) -> (TaskState, Workflow) {
    create_with(store, id, Holder::Lease(&lease(pid, 1000)), 10)
}

/// Creates task `id` at time `ts` (its `created_at`), held or queued.
fn create_with(store: &dyn Store, id: &str, holder: Holder<'_>, ts: i64) -> (TaskState, Workflow) {
    let wf = workflow();
    put_workflow(store, &wf);
    let ev = machine::create(
        &wf,
        NewTask {
            task_id: TaskId::parse(id).unwrap(),
            description: "d".into(),
            project_name: "p".into(),
            flags: Default::default(),
            labels: Default::default(),
            tech_stack: serde_json::json!({}),
        },
    )
    .unwrap();
    let rec = EventRecord {
        seq: 1,
        ts: Timestamp(ts),
        event: ev,
    };
    let state = machine::initial(TaskId::parse(id).unwrap(), &rec).unwrap();
    store.create_task(&state, &[rec], holder).unwrap();
    (state, wf)
}

/// Decides, applies and commits one input the way the engine does; returns
/// how many events were committed.
fn step(
    store: &dyn Store,
    state: &mut TaskState,
    wf: &Workflow,
    input: Input,
    by: u32,
) -> Result<usize, Error> {
    step_with(store, state, wf, input, by, Durability::Disk)
}

/// [`step`], committed with `durability`.
fn step_with(
    store: &dyn Store,
    state: &mut TaskState,
    wf: &Workflow,
    input: Input,
    by: u32,
    durability: Durability,
) -> Result<usize, Error> {
    let events = machine::decide(state, wf, input, Timestamp(20)).unwrap();
    let mut touched = Vec::new();
    let mut recs = Vec::new();
    for ev in events {
        touched.extend(machine::touched(state, &ev).unwrap_or_default());
        let r = EventRecord {
            seq: state.last_seq + 1,
            ts: Timestamp(20),
            event: ev,
        };
        machine::apply(state, &r);
        recs.push(r);
    }
    let ix = touched
        .iter()
        .filter_map(|t| state.phases.iter().position(|p| &p.id == t))
        .collect();
    store.commit(
        &owner(by),
        state,
        &PhaseWrites::Changed(ix),
        &recs,
        durability,
    )?;
    Ok(recs.len())
}

fn note(text: &str) -> Input {
    Input::Note {
        phase: None,
        text: text.into(),
    }
}

fn id(s: &str) -> TaskId {
    TaskId::parse(s).unwrap()
}

/// The texts of the task's `note` events, in journal order.
fn notes(store: &dyn Store, task: &TaskId) -> Vec<String> {
    store
        .events(task, 0, usize::MAX)
        .unwrap()
        .into_iter()
        .filter_map(|r| match r.event {
            Event::Note { text, .. } => Some(text),
            _ => None,
        })
        .collect()
}

/// The journal is numbered 1..=last_seq without a gap, replays to the
/// stored projection, and the backend's own check finds nothing.
fn assert_consistent(store: &dyn Store, task: &TaskId) -> TaskState {
    let events = store.events(task, 0, usize::MAX).unwrap();
    let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
    let stored = store.load(task).unwrap().unwrap().state;
    assert_eq!(seqs, (1..=stored.last_seq).collect::<Vec<_>>());
    assert_eq!(machine::replay(task, &events).unwrap(), stored);
    assert_eq!(store.check().unwrap(), Vec::<String>::new());
    stored
}

fn contract(store: &dyn Store) {
    let (mut state, wf) = create(store, "t1", 7);
    let id = state.task_id.clone();
    let snap = store.load(&id).unwrap().unwrap();
    assert!(!snap.queued && !snap.cancel_requested);
    assert_eq!(snap.lease, Some(lease(7, 1000)));

    // A duplicate id is refused and the first task is untouched.
    let rec = store.events(&id, 0, 10).unwrap();
    assert!(matches!(
        store.create_task(&state, &rec, Holder::Lease(&lease(7, 1000))),
        Err(Error::AlreadyExists(_))
    ));
    assert!(matches!(
        store.create_task(&state, &rec, Holder::Queue),
        Err(Error::AlreadyExists(_))
    ));

    // Commits by the lease holder land, projection and journal together.
    step(
        store,
        &mut state,
        &wf,
        Input::Start {
            phase: wf.phases[0].id.clone(),
            checkpoint: None,
        },
        7,
    )
    .unwrap();
    step(
        store,
        &mut state,
        &wf,
        Input::Pass {
            phase: wf.phases[0].id.clone(),
            summary: "s".repeat(200),
            output: "o".into(),
            files_changed: vec!["x.rs".into()],
        },
        7,
    )
    .unwrap();
    let snap = store.load(&id).unwrap().unwrap();
    assert_eq!(snap.state, state, "projection round-trips");
    assert_eq!(
        machine::replay(&id, &store.events(&id, 0, usize::MAX).unwrap()).unwrap(),
        state,
        "journal replays to the projection"
    );
    assert_eq!(store.events(&id, 1, 1).unwrap()[0].seq, 2, "paging by seq");

    // A process without the lease cannot write (fencing), nothing changes.
    let mut other = state.clone();
    let err = step(
        store,
        &mut other,
        &wf,
        Input::Start {
            phase: wf.phases[1].id.clone(),
            checkpoint: None,
        },
        8,
    )
    .unwrap_err();
    assert!(matches!(err, Error::LeaseLost { holder: Some(ref l), .. } if l.owner.pid == 7));
    assert_eq!(
        store.load(&id).unwrap().unwrap().state.last_seq,
        state.last_seq
    );

    // A stale writer (wrong seq) is refused.
    let mut stale = state.clone();
    stale.last_seq -= 1;
    assert!(matches!(
        step(store, &mut stale, &wf, note("x"), 7),
        Err(Error::SeqConflict { .. })
    ));

    // Lease compare-and-swap: held by 7; 8 is refused unless it names 7 as dead.
    assert_eq!(
        store.acquire(&id, &lease(8, 2000), None).unwrap(),
        Acquire::Held(lease(7, 1000))
    );
    assert_eq!(
        store
            .acquire(&id, &lease(8, 2000), Some(&owner(6)))
            .unwrap(),
        Acquire::Held(lease(7, 1000))
    );
    assert_eq!(
        store
            .acquire(&id, &lease(8, 2000), Some(&owner(7)))
            .unwrap(),
        Acquire::Acquired
    );
    // 7 lost it: its renew says so, and a second replacer of 7 loses the race.
    assert_eq!(
        store.renew(&id, &owner(7), Timestamp(5000)).unwrap(),
        RenewOutcome::Lost
    );
    assert_eq!(
        store
            .acquire(&id, &lease(9, 2000), Some(&owner(7)))
            .unwrap(),
        Acquire::Held(lease(8, 2000))
    );
    // Cancel requests reach the holder's heartbeat.
    store.request_cancel(&id).unwrap();
    assert_eq!(
        store.renew(&id, &owner(8), Timestamp(6000)).unwrap(),
        RenewOutcome::Renewed {
            cancel_requested: true
        }
    );
    assert_eq!(
        store.load(&id).unwrap().unwrap().lease.unwrap().expires_at,
        Timestamp(6000)
    );
    store.release(&id, &owner(9)).unwrap(); // not the holder: no effect
    assert!(store.load(&id).unwrap().unwrap().lease.is_some());
    store.release(&id, &owner(8)).unwrap();
    assert!(store.load(&id).unwrap().unwrap().lease.is_none());
    assert_eq!(
        store.acquire(&id, &lease(9, 2000), None).unwrap(),
        Acquire::Acquired
    );
    assert!(
        !store.load(&id).unwrap().unwrap().cancel_requested,
        "a new holder starts without the old cancel request"
    );

    // doctor --fix: the projection is put back only if the journal and the
    // lease are as the caller saw them.
    let held = store.load(&id).unwrap().unwrap().lease;
    let mut fixed = state.clone();
    fixed.resume_note = Some("replayed".into());
    assert!(matches!(
        store.replace_projection(&fixed, None),
        Err(Error::LeaseLost { .. })
    ));
    let mut behind = fixed.clone();
    behind.last_seq -= 1;
    assert!(matches!(
        store.replace_projection(&behind, held.as_ref()),
        Err(Error::SeqConflict { .. })
    ));
    store.replace_projection(&fixed, held.as_ref()).unwrap();
    assert_eq!(store.load(&id).unwrap().unwrap().state, fixed);
    store.replace_projection(&state, held.as_ref()).unwrap();

    // Unknown tasks.
    let nobody = TaskId::parse("nope").unwrap();
    assert!(store.load(&nobody).unwrap().is_none());
    assert!(matches!(
        store.request_cancel(&nobody),
        Err(Error::NotFound(_))
    ));
    assert!(matches!(
        store.acquire(&nobody, &lease(1, 1), None),
        Err(Error::NotFound(_))
    ));
    assert_eq!(
        store.renew(&nobody, &owner(1), Timestamp(1)).unwrap(),
        RenewOutcome::Lost
    );

    // Listing and deleting.
    create(store, "t2", 7);
    let list = store.list().unwrap();
    assert_eq!(
        list.iter().map(|t| t.id.as_str()).collect::<Vec<_>>(),
        vec!["t1", "t2"]
    );
    assert_eq!(list[0].last_phase.as_deref(), Some("a"));
    assert_eq!(list[0].status, TaskStatus::Running);
    assert!(store.delete_task(&id).unwrap());
    assert!(!store.delete_task(&id).unwrap());
    assert!(store.load(&id).unwrap().is_none());
    assert!(store.events(&id, 0, 10).unwrap().is_empty());
    assert!(store.check().unwrap().is_empty());
}

fn meets_the_contract(b: &Backend) {
    contract(&*b.open());
    let again = b.open();
    assert_eq!(
        again.list().unwrap().len(),
        1,
        "t2 is still there for another store instance"
    );
}

#[test]
fn sqlite_in_memory_meets_the_contract() {
    contract(&SqliteStore::in_memory().unwrap());
}

#[test]
fn sqlite_on_disk_meets_the_contract_and_survives_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("baton.db");
    {
        let s = SqliteStore::open(&path, Synchronous::Full).unwrap();
        contract(&s);
    }
    let s = SqliteStore::open(&path, Synchronous::Normal).unwrap();
    assert_eq!(
        s.list().unwrap().len(),
        1,
        "t2 is still there after reopening"
    );
}

#[test]
fn sqlite_process_commits_survive_a_crash_of_the_writer() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("baton.db");
    let s = SqliteStore::open(&path, Synchronous::Full).unwrap();
    let (mut state, wf) = create(&s, "t1", 7);
    let id = state.task_id.clone();
    step_with(&s, &mut state, &wf, note("one"), 7, Durability::Process).unwrap();
    step_with(&s, &mut state, &wf, note("two"), 7, Durability::Disk).unwrap();
    step_with(&s, &mut state, &wf, note("three"), 7, Durability::Process).unwrap();
    // The writer dies: its connection is never closed or checkpointed.
    std::mem::forget(s);
    let s = SqliteStore::open(&path, Synchronous::Full).unwrap();
    assert_eq!(notes(&s, &id), ["one", "two", "three"]);
    assert_consistent(&s, &id);
    // The next writer goes on from there, durably.
    step(&s, &mut state, &wf, note("four"), 7).unwrap();
    drop(s);
    let s = SqliteStore::open(&path, Synchronous::Full).unwrap();
    assert_eq!(notes(&s, &id), ["one", "two", "three", "four"]);
    assert_consistent(&s, &id);
}

#[test]
fn garbage_file_is_a_clear_open_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("baton.db");
    std::fs::write(&path, b"this is not a database, just some bytes that are long enough to look like a header........................................").unwrap();
    // Damage (doctor --fix sets it aside), never a folder that cannot be
    // read (which doctor leaves alone).
    match SqliteStore::open(&path, Synchronous::Full) {
        Err(Error::Corrupt(reason)) => {
            assert!(
                reason.contains("not a database") && reason.contains("baton.db"),
                "{reason}"
            )
        }
        Err(e) => panic!("unexpected error {e}"),
        Ok(_) => panic!("garbage opened as a store"),
    }
}

fn claim_gives_the_oldest_free_queued_running_task(b: &Backend) {
    let s = b.open();
    let s = &*s;
    // The oldest queued task is finished: never claimed.
    let (mut done, _) = create_with(s, "q0", Holder::Queue, 5);
    assert_eq!(
        s.acquire(&done.task_id, &lease(99, 100), None).unwrap(),
        Acquire::Acquired
    );
    done.status = TaskStatus::Cancelled;
    s.commit(
        &owner(99),
        &done,
        &PhaseWrites::Changed(vec![]),
        &[],
        Durability::Disk,
    )
    .unwrap();
    s.release(&done.task_id, &owner(99)).unwrap();
    // A task run in the foreground is not queued: never claimed, even
    // when its lease expired.
    create_with(s, "held", Holder::Lease(&lease(98, 1)), 6);
    for (name, ts) in [("q1", 10), ("q2", 20), ("q3", 30)] {
        create_with(s, name, Holder::Queue, ts);
    }
    let q1 = s.load(&id("q1")).unwrap().unwrap();
    assert!(q1.queued && q1.lease.is_none());

    assert_eq!(
        s.claim(&lease_at(1, 100, 1000), &[]).unwrap(),
        Some(id("q1"))
    );
    assert_eq!(
        s.claim(&lease_at(2, 100, 5000), &[]).unwrap(),
        Some(id("q2"))
    );
    // At 1500 q1's lease (to 1000) expired: the oldest free task again.
    s.request_cancel(&id("q1")).unwrap();
    assert_eq!(
        s.claim(&lease_at(3, 1500, 9000), &[]).unwrap(),
        Some(id("q1"))
    );
    let q1 = s.load(&id("q1")).unwrap().unwrap();
    assert_eq!(q1.lease, Some(lease_at(3, 1500, 9000)));
    assert!(
        q1.cancel_requested,
        "a cancel asked of a runner that died is kept for the next claimer"
    );
    // Tasks the worker could not start lately are left out.
    assert_eq!(
        s.claim(&lease_at(8, 1500, 9000), &[id("q3")]).unwrap(),
        None
    );
    assert_eq!(
        s.claim(&lease_at(4, 1500, 9000), &[]).unwrap(),
        Some(id("q3"))
    );
    assert_eq!(s.claim(&lease_at(5, 1500, 9000), &[]).unwrap(), None);
    // A released queued task is free again.
    s.release(&id("q2"), &owner(2)).unwrap();
    assert_eq!(
        s.claim(&lease_at(6, 1500, 9000), &[]).unwrap(),
        Some(id("q2"))
    );
    assert_eq!(s.claim(&lease_at(7, 1500, 9000), &[]).unwrap(), None);

    let list = s.list().unwrap();
    let queued: Vec<_> = list
        .iter()
        .filter(|t| t.queued)
        .map(|t| t.id.as_str())
        .collect();
    assert_eq!(queued, vec!["q0", "q1", "q2", "q3"]);
    assert_eq!(
        list.iter().find(|t| t.id.as_str() == "q0").unwrap().status,
        TaskStatus::Cancelled
    );
}

fn concurrent_claimers_never_get_the_same_task(b: &Backend) {
    const TASKS: usize = 50;
    let s = b.open();
    for i in 0..TASKS {
        create_with(&*s, &format!("c{i:02}"), Holder::Queue, i as i64);
    }
    let claimed: Vec<Vec<TaskId>> = std::thread::scope(|sc| {
        let workers: Vec<_> = (0..4)
            .map(|w| {
                sc.spawn(move || {
                    let store = b.open();
                    let mut mine = Vec::new();
                    while let Some(t) = store.claim(&lease(100 + w, 1_000_000), &[]).unwrap() {
                        mine.push(t);
                    }
                    mine
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).collect()
    });
    let all: Vec<&TaskId> = claimed.iter().flatten().collect();
    let unique: BTreeSet<&str> = all.iter().map(|t| t.as_str()).collect();
    assert_eq!(
        all.len(),
        TASKS,
        "every task claimed exactly once: {claimed:?}"
    );
    assert_eq!(unique.len(), TASKS, "no task claimed twice: {claimed:?}");
    // Each holder is recorded as the one that claimed it.
    for (w, mine) in claimed.iter().enumerate() {
        for t in mine {
            let l = s.load(t).unwrap().unwrap().lease.unwrap();
            assert_eq!(l.owner.pid, 100 + w as u32);
        }
    }
}

fn concurrent_holders_never_gap_or_duplicate_the_journal(b: &Backend) {
    const ROUNDS: usize = 40;
    let s = b.open();
    let (state, wf) = create(&*s, "race", 1);
    let task = state.task_id.clone();
    let landed: Vec<Vec<String>> = std::thread::scope(|sc| {
        let writers: Vec<_> = [1u32, 2]
            .into_iter()
            .map(|me| {
                let (task, wf) = (&task, &wf);
                sc.spawn(move || {
                    let store = b.open();
                    let rival = owner(3 - me);
                    let mut landed = Vec::new();
                    for i in 0..ROUNDS {
                        // Take the lease from the rival, then write from
                        // what we read; the rival does the same.
                        store.acquire(task, &lease(me, 1000), Some(&rival)).unwrap();
                        let mut st = store.load(task).unwrap().unwrap().state;
                        let text = format!("{me}-{i}");
                        match step(&*store, &mut st, wf, note(&text), me) {
                            Ok(n) => {
                                assert_eq!(n, 1);
                                landed.push(text);
                            }
                            Err(Error::LeaseLost { .. } | Error::SeqConflict { .. }) => {}
                            Err(e) => panic!("writer {me}: {e}"),
                        }
                    }
                    landed
                })
            })
            .collect();
        writers.into_iter().map(|w| w.join().unwrap()).collect()
    });
    let stored = assert_consistent(&*s, &task);
    let in_journal = notes(&*s, &task);
    let landed: BTreeSet<&String> = landed.iter().flatten().collect();
    assert_eq!(
        in_journal.len(),
        landed.len(),
        "each accepted commit is in the journal once"
    );
    assert_eq!(in_journal.iter().collect::<BTreeSet<_>>(), landed);
    assert_eq!(stored.last_seq, 1 + landed.len() as u64);
}

fn import_task_round_trips(b: &Backend) {
    let src = b.open();
    let src = &*src;
    let (mut state, wf) = create(src, "t1", 7);
    for input in [
        Input::Start {
            phase: wf.phases[0].id.clone(),
            checkpoint: None,
        },
        Input::Pass {
            phase: wf.phases[0].id.clone(),
            summary: "summary".into(),
            output: "output".into(),
            files_changed: vec!["a.rs".into()],
        },
        note("copied"),
    ] {
        step(src, &mut state, &wf, input, 7).unwrap();
    }
    src.request_cancel(&state.task_id).unwrap();
    create_with(src, "q1", Holder::Queue, 50);
    let other = Workflow::parse(
        "name = \"other\"\n[[phase]]\nid = \"x\"\nrun = \"true\"\n",
        "other.toml",
        "other",
        &|_| Err("none".into()),
    )
    .unwrap();
    put_workflow(src, &other);

    // `baton store copy`: definitions first, then every task.
    let dst_backend = b.fresh();
    let dst = dst_backend.open();
    let dst = &*dst;
    for def in src.definitions().unwrap() {
        dst.put_definition(&def).unwrap();
    }
    for t in src.list().unwrap() {
        let snap = src.load(&t.id).unwrap().unwrap();
        let events = src.events(&t.id, 0, usize::MAX).unwrap();
        dst.import_task(&snap, &events).unwrap();
    }

    for t in src.list().unwrap() {
        let a = src.load(&t.id).unwrap().unwrap();
        let b = dst.load(&t.id).unwrap().unwrap();
        assert_eq!(a.state, b.state, "{}: projection", t.id);
        assert_eq!(a.queued, b.queued, "{}: queued", t.id);
        assert_eq!(a.cancel_requested, b.cancel_requested, "{}: cancel", t.id);
        assert_eq!(b.lease, None, "{}: the lease is never copied", t.id);
        assert_eq!(
            src.events(&t.id, 0, usize::MAX).unwrap(),
            dst.events(&t.id, 0, usize::MAX).unwrap(),
            "{}: journal",
            t.id
        );
    }
    assert!(dst.load(&state.task_id).unwrap().unwrap().cancel_requested);
    assert_eq!(
        src.definitions()
            .unwrap()
            .iter()
            .map(|d| (&d.hash, &d.name, &d.json))
            .collect::<Vec<_>>(),
        dst.definitions()
            .unwrap()
            .iter()
            .map(|d| (&d.hash, &d.name, &d.json))
            .collect::<Vec<_>>()
    );
    assert_consistent(dst, &state.task_id);

    // Importing again is refused and changes nothing.
    let snap = src.load(&state.task_id).unwrap().unwrap();
    let events = src.events(&state.task_id, 0, usize::MAX).unwrap();
    assert!(matches!(
        dst.import_task(&snap, &events),
        Err(Error::AlreadyExists(_))
    ));
    // The copied queued task is there for workers of the new store.
    assert_eq!(dst.claim(&lease(5, 1000), &[]).unwrap(), Some(id("q1")));
}

fn definitions_lists_what_was_put(b: &Backend) {
    let s = b.open();
    let s = &*s;
    assert!(s.definitions().unwrap().is_empty());
    let w = put_workflow(s, &workflow());
    let other = Workflow::parse(
        "name = \"other\"\n[[phase]]\nid = \"x\"\nrun = \"true\"\n",
        "other.toml",
        "other",
        &|_| Err("none".into()),
    )
    .unwrap();
    let o = put_workflow(s, &other);
    put_workflow(s, &workflow()); // again: still one copy
    let mut expected = vec![
        (w.hash.clone(), w.name.clone(), w.json.clone()),
        (o.hash.clone(), o.name.clone(), o.json.clone()),
    ];
    expected.sort();
    let listed: Vec<_> = s
        .definitions()
        .unwrap()
        .into_iter()
        .map(|d| (d.hash, d.name, d.json))
        .collect();
    assert_eq!(listed, expected);
    assert_eq!(
        s.definition_hashes().unwrap(),
        expected
            .iter()
            .map(|(h, _, _)| h.clone())
            .collect::<Vec<_>>()
    );
    let got = s.definition(&o.hash).unwrap().unwrap();
    assert_eq!((got.name, got.json), (o.name, o.json));
    assert!(s.definition("no-such-hash").unwrap().is_none());
}

// ---- PostgreSQL only ----

fn pg_store(url: &str) -> PgStore {
    PgStore::connect(url, RECONNECT_FOR).unwrap()
}

/// Runs `f` and returns how long it took.
fn timed(f: impl FnOnce()) -> Duration {
    let t = Instant::now();
    f();
    t.elapsed()
}

#[test]
fn postgres_wait_for_work_wakes_when_work_is_queued_or_released() {
    let url = pg::shared().create_database();
    let waiter = pg_store(&url);
    let other = pg_store(&url);

    // Nothing queued: it waits the whole timeout.
    let waited = timed(|| waiter.wait_for_work(Duration::from_secs(1)).unwrap());
    assert!(waited >= Duration::from_millis(900), "{waited:?}");

    // Another store (another worker's process) queues a task: woken.
    let woken = std::thread::scope(|sc| {
        let h = sc.spawn(|| timed(|| waiter.wait_for_work(Duration::from_secs(20)).unwrap()));
        std::thread::sleep(Duration::from_millis(300));
        create_with(&other, "q1", Holder::Queue, 10);
        h.join().unwrap()
    });
    assert!(woken < Duration::from_secs(2), "woken after {woken:?}");

    // That announcement was used up: nothing new, so it waits again.
    let waited = timed(|| waiter.wait_for_work(Duration::from_secs(1)).unwrap());
    assert!(waited >= Duration::from_millis(900), "{waited:?}");

    // A claim announces nothing; releasing the queued task does.
    assert_eq!(
        other.claim(&lease(5, 1_000_000), &[]).unwrap(),
        Some(id("q1"))
    );
    let woken = std::thread::scope(|sc| {
        let h = sc.spawn(|| timed(|| waiter.wait_for_work(Duration::from_secs(20)).unwrap()));
        std::thread::sleep(Duration::from_millis(300));
        other.release(&id("q1"), &owner(5)).unwrap();
        h.join().unwrap()
    });
    assert!(woken < Duration::from_secs(2), "woken after {woken:?}");

    // A worker that starts listening after the task was queued still
    // finds it: its first wait returns at once.
    let late = pg_store(&url);
    let waited = timed(|| late.wait_for_work(Duration::from_secs(20)).unwrap());
    assert!(waited < Duration::from_secs(2), "{waited:?}");
}

#[test]
fn postgres_store_rides_out_a_server_restart() {
    let cluster = PgCluster::start();
    let url = cluster.create_database();
    let store = pg_store(&url);
    let (mut state, wf) = create(&store, "t1", 7);
    store.wait_for_work(Duration::from_millis(10)).unwrap(); // listening

    // An operation issued while the server is down completes once it is
    // back (within reconnect_for).
    cluster.stop();
    let started = std::thread::scope(|sc| {
        sc.spawn(|| {
            std::thread::sleep(Duration::from_millis(1500));
            cluster.start_again();
        });
        let t = Instant::now();
        step(
            &store,
            &mut state,
            &wf,
            Input::Start {
                phase: wf.phases[0].id.clone(),
                checkpoint: None,
            },
            7,
        )
        .unwrap();
        t.elapsed()
    });
    assert!(
        started >= Duration::from_millis(1000),
        "it waited: {started:?}"
    );
    assert_eq!(assert_consistent(&store, &state.task_id), state);

    // A writer keeps committing while the server is stopped and started
    // again: every commit returns Ok, and each is in the journal once.
    let stop = AtomicBool::new(false);
    let (written, state) = std::thread::scope(|sc| {
        let writer = sc.spawn(|| {
            let mut state = state.clone();
            let mut written = Vec::new();
            let mut i = 0;
            while !stop.load(Ordering::SeqCst) {
                let text = format!("n{i}");
                step(&store, &mut state, &wf, note(&text), 7)
                    .unwrap_or_else(|e| panic!("commit {text}: {e}"));
                written.push(text);
                i += 1;
            }
            (written, state)
        });
        std::thread::sleep(Duration::from_millis(300));
        cluster.restart_after(Duration::from_secs(1));
        std::thread::sleep(Duration::from_millis(300));
        stop.store(true, Ordering::SeqCst);
        writer.join().unwrap()
    });
    assert!(written.len() > 2, "the writer wrote: {written:?}");
    assert_eq!(
        notes(&store, &state.task_id),
        written,
        "none lost, none doubled"
    );
    assert_eq!(assert_consistent(&store, &state.task_id), state);

    // The listener noticed the restart and listens again.
    store.wait_for_work(Duration::from_secs(5)).unwrap();
    let woken = std::thread::scope(|sc| {
        let h = sc.spawn(|| timed(|| store.wait_for_work(Duration::from_secs(20)).unwrap()));
        std::thread::sleep(Duration::from_millis(300));
        create_with(&pg_store(&url), "q1", Holder::Queue, 10);
        h.join().unwrap()
    });
    assert!(woken < Duration::from_secs(2), "woken after {woken:?}");

    // A server down for longer than reconnect_for is an error naming it.
    let impatient = PgStore::connect(&url, Duration::from_secs(1)).unwrap();
    cluster.stop();
    let t = Instant::now();
    match impatient.list() {
        Err(Error::Connect { target, reason }) => {
            assert_eq!(target, format!("127.0.0.1:{}", cluster.port()));
            assert!(reason.contains("connection refused"), "{reason}");
        }
        other => panic!("expected a connection error, got {other:?}"),
    }
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
}

#[test]
fn postgres_connect_errors_name_the_server_and_the_cause() {
    let unused = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let t = Instant::now();
    let err = PgStore::connect(
        &format!("postgres://postgres@127.0.0.1:{unused}/db"),
        RECONNECT_FOR,
    )
    .err()
    .expect("nothing listens there");
    assert!(
        t.elapsed() < Duration::from_secs(5),
        "a wrong URL fails fast"
    );
    let text = err.to_string();
    assert!(
        matches!(&err, Error::Connect { target, .. } if *target == format!("127.0.0.1:{unused}")),
        "{err:?}"
    );
    assert!(text.contains(&format!("127.0.0.1:{unused}")), "{text}");
    assert!(text.contains("connection refused"), "{text}");

    let err = PgStore::connect(&pg::shared().url("no_such_database"), RECONNECT_FOR)
        .err()
        .expect("no such database");
    let text = err.to_string();
    assert!(matches!(err, Error::Connect { .. }), "{err:?}");
    assert!(
        text.contains(&format!("127.0.0.1:{}", pg::shared().port())),
        "{text}"
    );
    assert!(
        text.contains("database \"no_such_database\" does not exist"),
        "{text}"
    );

    let err = PgStore::connect("postgres://u:s3cret@127.0.0.1:notaport/db", RECONNECT_FOR)
        .err()
        .expect("not a URL");
    let text = err.to_string();
    assert!(matches!(err, Error::InvalidUrl { .. }), "{err:?}");
    assert!(text.contains("not a valid PostgreSQL URL"), "{text}");
    assert!(
        !text.contains("s3cret"),
        "the password is not shown: {text}"
    );

    let err = PgStore::connect("postgres://postgres@no-such-host.invalid/db", RECONNECT_FOR)
        .err()
        .expect("no such host");
    let text = err.to_string();
    assert!(text.contains("no-such-host.invalid:5432"), "{text}");
    assert!(text.contains("could not resolve host"), "{text}");
}

#[test]
fn postgres_describes_itself_without_the_password() {
    let url = pg::shared().create_database();
    let db = url.rsplit('/').next().unwrap();
    let with_password = url.replace("postgres@", "postgres:pw@");
    let s = PgStore::connect(&with_password, RECONNECT_FOR).unwrap();
    assert_eq!(
        s.describe(),
        format!("127.0.0.1:{}/{db}", pg::shared().port())
    );
}

#[test]
fn postgres_refuses_a_newer_schema() {
    let url = pg::shared().create_database();
    drop(pg_store(&url));
    let mut c = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    c.execute("UPDATE baton_schema SET version = 999", &[])
        .unwrap();
    match PgStore::connect(&url, RECONNECT_FOR) {
        Err(Error::NewerSchema { path, found, known }) => {
            assert_eq!(found, 999);
            // The tasks' schema, the instances', the deliveries', progress
            // and plays, workspaces, teams, the inbox, capabilities and
            // the bodies of deliveries, deliveries kept for a later stage,
            // the tasks' stage records, a person's comments, and progress
            // keyed by the repository's name in lower case.
            assert_eq!(known, 12);
            assert!(path.starts_with("127.0.0.1:"), "{path}");
        }
        Err(e) => panic!("unexpected error {e}"),
        Ok(_) => panic!("a newer schema was accepted"),
    }
}

#[test]
fn postgres_workers_starting_together_migrate_once() {
    let url = pg::shared().create_database();
    std::thread::scope(|sc| {
        let hs: Vec<_> = (0..6).map(|_| sc.spawn(|| pg_store(&url))).collect();
        for h in hs {
            h.join().unwrap();
        }
    });
    let mut c = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    let versions: Vec<i32> = c
        .query("SELECT version FROM baton_schema", &[])
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(versions, vec![12]);
}

// ----- coding and review instances -----------------------------------------

/// Decides `input` on what the store holds and commits it the way the
/// engine does; a refusal of the rules panics.
fn instance_step(s: &dyn Store, input: baton_core::instance::Input, at: i64) -> Result<(), Error> {
    use baton_core::instance::{self, Record};
    let before = s.instances()?;
    let events = instance::decide(&before, input, Timestamp(at)).expect("allowed");
    let mut after = before.clone();
    let mut records = Vec::new();
    for event in events {
        let r = Record {
            seq: after.last_seq + 1,
            ts: Timestamp(at),
            event,
        };
        instance::apply(&mut after, &r);
        records.push(r);
    }
    s.commit_instances(before.last_seq, &records, &after.changed_since(&before))
}

fn instances_round_trip_and_writers_serialise(b: &Backend) {
    use baton_core::instance::{self, CodingConfig, Input, ReviewConfig, Status};
    let s = b.open();
    let s = &*s;
    assert_eq!(s.instances().unwrap(), instance::Instances::default());
    let coding = |n: &str| Input::Spawn {
        id: id(n),
        config: CodingConfig {
            base_branch: "main".into(),
            target_branch: None,
            instructions: "fix it".into(),
            require_review: true,
            max_reviews: 2,
            execution_timeout_ms: 3_600_000,
            agent: Some("claude".into()),
            issue: Some(baton_core::instance::GithubIssue {
                number: 7,
                title: "Found a bug".into(),
                body: "It breaks.".into(),
                url: "https://github.com/acme/widgets/issues/7".into(),
            }),
            system_prompt: Some("You write Rust.".into()),
            for_phase: Some(baton_core::instance::ForPhase {
                task: baton_core::TaskId::parse("t1").unwrap(),
                phase: "implement".into(),
            }),
        },
    };
    instance_step(s, coding("c1"), 10).unwrap();
    instance_step(
        s,
        Input::Allocated {
            id: id("c1"),
            resources: Default::default(),
        },
        11,
    )
    .unwrap();
    instance_step(
        s,
        Input::RequestReview {
            parent: id("c1"),
            review: id("r1"),
            config: ReviewConfig {
                review_prompt: None,
                preserve_changes: false,
                timeout_ms: 60_000,
                agent: None,
            },
        },
        12,
    )
    .unwrap();
    let all = s.instances().unwrap();
    assert_eq!(all.last_seq, 4);
    assert_eq!(all.get(&id("c1")).unwrap().status, Status::ReviewRequested);
    assert_eq!(all.get(&id("r1")).unwrap().status, Status::Started);
    // The journal replays to what the rows hold, from another connection.
    let other = b.open();
    let journal = other.instance_events(0, usize::MAX).unwrap();
    assert_eq!(
        journal.iter().map(|r| r.seq).collect::<Vec<_>>(),
        [1, 2, 3, 4]
    );
    assert_eq!(instance::replay(&journal), other.instances().unwrap());
    assert_eq!(other.instance_events(2, 1).unwrap(), journal[2..3].to_vec());

    // A writer that decided on an older state is refused, and writes nothing.
    let stale = s.instances().unwrap();
    instance_step(&*other, coding("c2"), 13).unwrap();
    let late = baton_core::instance::Record {
        seq: stale.last_seq + 1,
        ts: Timestamp(14),
        event: baton_core::instance::Event::Activity { id: id("c1") },
    };
    assert!(matches!(
        s.commit_instances(stale.last_seq, &[late], &[]),
        Err(Error::InstancesChanged {
            expected: 4,
            found: 5
        })
    ));
    assert_eq!(s.instances().unwrap().last_seq, 5);

    // Writers on many connections at once: every step lands once, in one
    // unbroken sequence (a refused one decides again).
    let handles: Vec<_> = (0..4)
        .map(|t| {
            let st = b.open();
            std::thread::spawn(move || {
                for k in 0..5 {
                    loop {
                        match instance_step(&*st, coding(&format!("w{t}-{k}")), 20) {
                            Ok(()) => break,
                            Err(Error::InstancesChanged { .. }) => continue,
                            Err(e) => panic!("{e}"),
                        }
                    }
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let all = s.instances().unwrap();
    let journal = s.instance_events(0, usize::MAX).unwrap();
    assert_eq!(all.last_seq, 25);
    assert_eq!(
        journal.iter().map(|r| r.seq).collect::<Vec<_>>(),
        (1..=25).collect::<Vec<_>>()
    );
    assert_eq!(all.by_id.len(), 2 + 1 + 20);
    assert_eq!(instance::replay(&journal), all);
}

fn delivery(id: &str, at: i64) -> baton_store::NewDelivery {
    baton_store::NewDelivery {
        id: id.into(),
        received_at: Timestamp(at),
        event: "pull_request".into(),
        action: Some("opened".into()),
        repository: Some("octocat/Hello-World".into()),
        payload: format!("{{\"n\":\"{id}\"}}"),
        essentials: None,
        settled: None,
        body: None,
    }
}

/// A delivery that came over the wire with a signed body.
fn signed(id: &str, at: i64, body: &str) -> baton_store::NewDelivery {
    baton_store::NewDelivery {
        body: Some(baton_store::BodyDigest {
            digest: baton_core::token::digest(body),
            window_ms: 1000,
        }),
        ..delivery(id, at)
    }
}

/// A captured body sent again under a new delivery id is a redelivery
/// within the window (also later in one batch, also from servers racing),
/// and new again once the window passed; GitHub's own redelivery (same id,
/// same body) stays a redelivery.
fn replayed_bodies_are_redeliveries_within_their_window(b: &Backend) {
    let s = b.open();
    assert_eq!(
        s.record_deliveries(&[signed("a", 100, "body-1"), signed("b", 101, "body-1")])
            .unwrap(),
        [true, false]
    );
    assert_eq!(
        s.record_deliveries(&[signed("c", 900, "body-1")]).unwrap(),
        [false]
    );
    assert_eq!(
        s.record_deliveries(&[signed("a", 950, "body-1")]).unwrap(),
        [false]
    );
    assert_eq!(
        s.record_deliveries(&[signed("d", 960, "body-2")]).unwrap(),
        [true]
    );
    // The window counts from the body's last acceptance.
    assert_eq!(
        s.record_deliveries(&[signed("e", 1200, "body-1")]).unwrap(),
        [true]
    );
    assert_eq!(
        s.record_deliveries(&[signed("f", 1300, "body-1")]).unwrap(),
        [false]
    );
    let ids: Vec<String> = s
        .deliveries(10)
        .unwrap()
        .into_iter()
        .map(|d| d.id)
        .collect();
    assert_eq!(ids, ["e", "d", "a"]);
    // Servers racing with one replayed body: one of them takes it.
    let handles: Vec<_> = (0..4)
        .map(|k| {
            let st = b.open();
            std::thread::spawn(move || {
                st.record_deliveries(&[signed(&format!("r{k}"), 5000, "body-3")])
                    .unwrap()[0]
            })
        })
        .collect();
    let taken = handles
        .into_iter()
        .map(|h| h.join().unwrap())
        .filter(|t| *t)
        .count();
    assert_eq!(taken, 1);
}

/// A delivery kept for a task's later wait is kept once (the same one
/// again is not a second), listed for its task oldest first, and goes
/// when that stage uses it, when the task goes, or when it expires.
fn early_deliveries_are_kept_once_per_stage_and_go_with_their_task_or_time(b: &Backend) {
    use baton_store::Buffered;
    let s = b.open();
    let t = TaskId::parse("t1").unwrap();
    let kept = |delivery: &str, phase: &str, at: i64, until: i64| Buffered {
        task: t.clone(),
        phase: phase.into(),
        delivery: delivery.into(),
        event: "pull_request".into(),
        payload: "{}".into(),
        branch_pattern: "baton/{task-id}".into(),
        received_at: Timestamp(at),
        expires_at: Timestamp(until),
    };
    assert!(s.buffer_event(&kept("d1", "wait-pr", 10, 100)).unwrap());
    assert!(
        !s.buffer_event(&kept("d1", "wait-pr", 11, 100)).unwrap(),
        "kept once"
    );
    assert!(s.buffer_event(&kept("d2", "wait-merge", 20, 50)).unwrap());
    let other = TaskId::parse("t2").unwrap();
    assert!(
        s.buffer_event(&Buffered {
            task: other.clone(),
            ..kept("d1", "wait-pr", 30, 100)
        })
        .unwrap()
    );
    let mine: Vec<String> = s
        .buffered_for(&t)
        .unwrap()
        .into_iter()
        .map(|b| b.delivery)
        .collect();
    assert_eq!(mine, ["d1", "d2"]);
    assert_eq!(s.buffered_all().unwrap().len(), 3);
    assert_eq!(
        s.buffered_for(&t).unwrap()[0],
        kept("d1", "wait-pr", 10, 100)
    );
    assert_eq!(s.expire_buffered(Timestamp(50)).unwrap(), 1, "d2 expired");
    assert_eq!(s.drop_buffered(&t, Some("wait-pr")).unwrap(), 1);
    assert!(s.buffered_for(&t).unwrap().is_empty());
    assert_eq!(s.drop_buffered(&other, None).unwrap(), 1);
    assert!(s.buffered_all().unwrap().is_empty());
}

/// A capability is found by its digest only, with its scope, and goes
/// with its phase, its task or its instance.
fn capabilities_are_found_by_digest_and_revoked_by_scope(b: &Backend) {
    use baton_core::token::{Scope, digest};
    use baton_store::Revoke;
    let s = b.open();
    let t = TaskId::parse("t1").unwrap();
    let i = TaskId::parse("c1").unwrap();
    let plan = Scope::attempt(t.clone(), "plan", 0, 1);
    let build = Scope::attempt(t.clone(), "build", 0, 2);
    let mut coder = Scope::attempt(TaskId::parse("t2").unwrap(), "turn", 0, 1);
    coder.instance = Some(i.clone());
    s.grant_capability(&digest("tok-plan"), &plan, Timestamp(1))
        .unwrap();
    s.grant_capability(&digest("tok-build"), &build, Timestamp(2))
        .unwrap();
    s.grant_capability(&digest("tok-coder"), &coder, Timestamp(3))
        .unwrap();
    assert_eq!(s.capability(&digest("tok-plan")).unwrap(), Some(plan));
    assert_eq!(
        s.capability("tok-plan").unwrap(),
        None,
        "never by the token itself"
    );
    assert_eq!(s.capability(&digest("nope")).unwrap(), None);
    assert_eq!(s.revoke_capabilities(Revoke::Phase(&t, "plan")).unwrap(), 1);
    assert_eq!(s.capability(&digest("tok-plan")).unwrap(), None);
    assert_eq!(s.capability(&digest("tok-build")).unwrap(), Some(build));
    assert_eq!(s.revoke_capabilities(Revoke::Instance(&i)).unwrap(), 1);
    assert_eq!(s.capability(&digest("tok-coder")).unwrap(), None);
    assert_eq!(s.revoke_capabilities(Revoke::Task(&t)).unwrap(), 1);
    assert_eq!(s.capability(&digest("tok-build")).unwrap(), None);
}

fn deliveries_are_stored_once_and_settled_once(b: &Backend) {
    use baton_store::{Settlement, TaskDecision};
    let s = b.open();
    // A batch: new ones are new, a copy later in the same batch is not.
    let fresh = s
        .record_deliveries(&[delivery("d1", 10), delivery("d2", 11), delivery("d1", 12)])
        .unwrap();
    assert_eq!(fresh, [true, true, false]);
    // A redelivery, from another connection (another server), is not new.
    let other = b.open();
    assert_eq!(
        other
            .record_deliveries(&[delivery("d2", 20), delivery("d3", 21)])
            .unwrap(),
        [false, true]
    );
    let pending: Vec<String> = s
        .unsettled_deliveries()
        .unwrap()
        .into_iter()
        .map(|d| d.id)
        .collect();
    assert_eq!(pending, ["d1", "d2", "d3"]);
    assert_eq!(s.unsettled_deliveries().unwrap()[0], delivery("d1", 10));

    let how = Settlement {
        at: Timestamp(30),
        decision: "resumed".into(),
        why: "resumed task t1 at wait-pr".into(),
        tasks: vec![TaskDecision {
            task: "t1".into(),
            decision: "resumed".into(),
            why: "resumed at wait-pr".into(),
        }],
    };
    assert_eq!(
        s.settle_deliveries(&[("d1".into(), how.clone())]).unwrap(),
        [true]
    );
    // Settled once: a second server's settlement does not overwrite it.
    let late = Settlement {
        decision: "skipped".into(),
        ..how.clone()
    };
    assert_eq!(
        other
            .settle_deliveries(&[("d1".into(), late.clone()), ("nope".into(), late)])
            .unwrap(),
        [false, false]
    );

    let all = other.deliveries(10).unwrap();
    assert_eq!(
        all.iter().map(|d| d.id.as_str()).collect::<Vec<_>>(),
        ["d3", "d2", "d1"],
        "newest first"
    );
    let d1 = &all[2];
    assert_eq!(d1.decision, "resumed");
    assert_eq!(d1.settled_at, Some(Timestamp(30)));
    assert_eq!(d1.tasks, how.tasks);
    assert_eq!(d1.repository.as_deref(), Some("octocat/Hello-World"));
    assert_eq!(all[0].decision, "pending");
    assert_eq!(all[0].settled_at, None);
    assert_eq!(other.deliveries(1).unwrap().len(), 1);
    assert_eq!(
        s.unsettled_deliveries()
            .unwrap()
            .into_iter()
            .map(|d| d.id)
            .collect::<Vec<_>>(),
        ["d2", "d3"]
    );

    // One that no task waits for is stored settled, without its body.
    let ignored = Settlement {
        at: Timestamp(50),
        decision: "ignored".into(),
        why: "no task waits for github.push".into(),
        tasks: vec![],
    };
    let push = baton_store::NewDelivery {
        settled: Some(ignored.clone()),
        ..delivery("d4", 50)
    };
    assert_eq!(s.record_deliveries(&[push]).unwrap(), [true]);
    let d4 = s.deliveries(1).unwrap().remove(0);
    assert_eq!((d4.id.as_str(), d4.decision.as_str()), ("d4", "ignored"));
    assert_eq!(d4.settled_at, Some(Timestamp(50)));
    assert!(
        s.unsettled_deliveries()
            .unwrap()
            .iter()
            .all(|d| d.id != "d4"),
        "settled as it arrived"
    );

    // Many servers at once, the same ids: each id is new exactly once.
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let st = b.open();
            std::thread::spawn(move || {
                let batch: Vec<_> = (0..8).map(|k| delivery(&format!("c{k}"), 40)).collect();
                st.record_deliveries(&batch).unwrap()
            })
        })
        .collect();
    let news: usize = handles
        .into_iter()
        .map(|h| h.join().unwrap().into_iter().filter(|n| *n).count())
        .sum();
    assert_eq!(news, 8);
}

// ----- TLS -------------------------------------------------------------------

/// A CA, and a server certificate it signed for `names`: (CA PEM, chain PEM, key PEM).
fn certificates(names: &[&str]) -> (String, String, String) {
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
    let ca_key = KeyPair::generate().unwrap();
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(DnType::CommonName, "baton test CA");
    let ca_cert = ca.self_signed(&ca_key).unwrap();
    let key = KeyPair::generate().unwrap();
    let mut server =
        CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>()).unwrap();
    server.distinguished_name.push(DnType::CommonName, names[0]);
    let cert = server
        .signed_by(&key, &Issuer::from_params(&ca, &ca_key))
        .unwrap();
    (ca_cert.pem(), cert.pem(), key.serialize_pem())
}

/// A managed PostgreSQL demands TLS: `require` connects (unverified, as
/// libpq), `verify-full` checks the chain against `sslrootcert` and the
/// host name, `verify-ca` only the chain; a wrong CA, a wrong name under
/// verify-full, and plain TCP are refused, each with a clear reason.
#[test]
fn postgres_over_tls_honours_sslmode() {
    // The server's certificate names `localhost` only, not 127.0.0.1.
    let (ca, cert, key) = certificates(&["localhost"]);
    let cluster = PgCluster::start_tls(&cert, &key);
    let dir = tempfile::tempdir().unwrap();
    let ca_file = dir.path().join("ca.pem");
    std::fs::write(&ca_file, &ca).unwrap();
    let (other_ca, _, _) = certificates(&["localhost"]);
    let other_file = dir.path().join("other-ca.pem");
    std::fs::write(&other_file, &other_ca).unwrap();
    let port = cluster.port();
    let url =
        |host: &str, q: &str| format!("postgres://{}@{host}:{port}/postgres?{q}", pg::SUPERUSER);
    let open = |u: String| PgStore::connect(&u, Duration::from_secs(1));

    let s = open(url("127.0.0.1", "sslmode=require")).unwrap_or_else(|e| panic!("require: {e}"));
    assert!(s.check().unwrap().is_empty());
    // This server refuses plain TCP, so that connection was encrypted.
    assert!(
        postgres::Client::connect(&url("127.0.0.1", "sslmode=disable"), postgres::NoTls).is_err(),
        "plain TCP is refused by this server"
    );
    let (ca_q, other_q) = (
        format!("sslmode=verify-full&sslrootcert={}", ca_file.display()),
        format!("sslmode=verify-full&sslrootcert={}", other_file.display()),
    );
    open(url("localhost", &ca_q)).unwrap_or_else(|e| panic!("verify-full: {e}"));
    match open(url("127.0.0.1", &ca_q)) {
        Err(Error::Connect { reason, .. }) => {
            assert!(reason.to_lowercase().contains("certificate"), "{reason}")
        }
        other => panic!(
            "verify-full with the wrong name connected: {:?}",
            other.err()
        ),
    }
    open(url(
        "127.0.0.1",
        &format!("sslmode=verify-ca&sslrootcert={}", ca_file.display()),
    ))
    .unwrap_or_else(|e| panic!("verify-ca: {e}"));
    match open(url("localhost", &other_q)) {
        Err(Error::Connect { reason, .. }) => {
            assert!(reason.to_lowercase().contains("certificate"), "{reason}")
        }
        other => panic!("an unknown CA was trusted: {:?}", other.err()),
    }
    match open(url("localhost", "sslmode=disable")) {
        Err(Error::Connect { reason, .. }) => assert!(
            reason.contains("no encryption") || reason.contains("pg_hba"),
            "{reason}"
        ),
        other => panic!("plain TCP connected: {:?}", other.err()),
    }
    match open(url("localhost", "sslmode=sometimes")) {
        Err(Error::InvalidUrl { reason, .. }) => {
            assert!(reason.contains("sslmode=sometimes"), "{reason}")
        }
        other => panic!("a bad sslmode was accepted: {:?}", other.err()),
    }
}

fn progress_and_plays_round_trip(b: &Backend) {
    use baton_core::play::{Play, PlayTask};
    use baton_core::progress::Progress;
    let s = b.open();
    let rec = |repo: &str, task: &str, at: i64| Progress {
        repository: repo.into(),
        branch: Some("main".into()),
        task_id: task.into(),
        workflow: "build".into(),
        status: "in-progress".into(),
        stage: Some("implement".into()),
        started_at: Timestamp(1),
        last_updated: Timestamp(at),
        phases: vec![],
        labels: [("pr-number".to_string(), at.to_string())].into(),
    };
    s.put_progress(&rec("acme/app", "t1", 10)).unwrap();
    s.put_progress(&rec("acme/lib", "t9", 11)).unwrap();
    // A later task of the same repository replaces its record.
    s.put_progress(&rec("acme/app", "t2", 12)).unwrap();
    let other = b.open();
    let all = other.progress(None).unwrap();
    assert_eq!(all.len(), 2);
    assert_eq!(all[0], rec("acme/app", "t2", 12));
    assert_eq!(
        other.progress(Some("acme/lib")).unwrap(),
        [rec("acme/lib", "t9", 11)]
    );
    // Each task keeps its own stage record, with its labels, beside its
    // repository's.
    assert_eq!(
        other.task_stages(Some("acme/app")).unwrap(),
        [rec("acme/app", "t1", 10), rec("acme/app", "t2", 12)]
    );
    assert_eq!(other.task_stages(None).unwrap().len(), 3);
    assert_eq!(
        other.task_stage("acme/app", "t1").unwrap(),
        Some(rec("acme/app", "t1", 10))
    );
    assert_eq!(other.task_stage("acme/lib", "t1").unwrap(), None);
    // A copy writes a task's record alone; it is cleared alone too.
    other.put_task_stage(&rec("acme/app", "t3", 13)).unwrap();
    assert_eq!(
        other.progress(Some("acme/app")).unwrap(),
        [rec("acme/app", "t2", 12)]
    );
    assert!(other.clear_task_stage("acme/app", "t3").unwrap());
    assert!(!other.clear_task_stage("acme/app", "t3").unwrap());
    assert!(other.clear_progress("acme/lib").unwrap());
    assert!(!other.clear_progress("acme/lib").unwrap());
    assert!(s.progress(Some("acme/lib")).unwrap().is_empty());
    assert!(s.task_stages(Some("acme/lib")).unwrap().is_empty());
    assert_eq!(s.task_stages(None).unwrap().len(), 2);

    let play = |name: &str, next: usize, at: i64| Play {
        name: name.into(),
        file: format!("{name}.toml"),
        workflow: "step".into(),
        tasks: vec![PlayTask {
            id: "t1".into(),
            description: "First".into(),
            labels: Default::default(),
        }],
        next,
        done: vec![],
        status: "running".into(),
        stopped: None,
        started_at: Timestamp(1),
        updated_at: Timestamp(at),
    };
    s.put_play(&play("a", 0, 5)).unwrap();
    s.put_play(&play("b", 0, 6)).unwrap();
    s.put_play(&play("a", 1, 7)).unwrap();
    let plays = other.plays().unwrap();
    assert_eq!(
        plays,
        [play("a", 1, 7), play("b", 0, 6)],
        "the most recent first"
    );
}

fn workspace_records_keep_their_creation_and_outlive_nothing_but_rm(b: &Backend) {
    use baton_core::workspace::WorkspaceRecord;
    let s = b.open();
    let rec = |name: &str, task: &str, created: i64, at: i64| WorkspaceRecord {
        name: name.into(),
        path: format!("/p/.baton/workspaces/{name}"),
        service: "api".into(),
        role: "implementation".into(),
        agent: None,
        branch: format!("baton/{task}"),
        task_id: task.into(),
        phase: Some("implement".into()),
        created_at: Timestamp(created),
        updated_at: Timestamp(at),
    };
    s.put_workspace(&rec("workspace-api", "t1", 10, 10))
        .unwrap();
    s.put_workspace(&rec("workspace-api-tester", "t1", 11, 11))
        .unwrap();
    // A later task in the same workspace: the record says so, and keeps
    // when the workspace was made.
    s.put_workspace(&rec("workspace-api", "t2", 99, 20))
        .unwrap();
    let other = b.open();
    assert_eq!(
        other.workspaces().unwrap(),
        [
            rec("workspace-api", "t2", 10, 20),
            rec("workspace-api-tester", "t1", 11, 11)
        ]
    );
    assert!(other.delete_workspace("workspace-api-tester").unwrap());
    assert!(!other.delete_workspace("workspace-api-tester").unwrap());
    assert_eq!(s.workspaces().unwrap().len(), 1);
}

fn inbox_items_are_raised_once_per_key_and_answered_once(b: &Backend) {
    use baton_core::inbox::{Answer, InboxItem, ItemKind, key};
    use baton_store::Answered;
    let s = b.open();
    let item = |id: &str, text: &str, at: i64| InboxItem {
        id: id.into(),
        key: key(Some("t1"), Some("plan"), ItemKind::Decision, text),
        kind: ItemKind::Decision,
        session: Some("t1".into()),
        phase: Some("plan".into()),
        text: text.into(),
        options: vec!["a".into(), "b".into()],
        task_complete: false,
        raised_by: "cc".into(),
        created_at: Timestamp(at),
        answer: None,
    };
    assert_eq!(s.raise_item(&item("d1", "which?", 5)).unwrap().id, "d1");
    // The same question again (an agent back after a crash): the same item.
    assert_eq!(s.raise_item(&item("d9", "which?", 7)).unwrap().id, "d1");
    s.raise_item(&item("d2", "and then?", 6)).unwrap();
    let ids = |items: Vec<InboxItem>| items.into_iter().map(|i| i.id).collect::<Vec<_>>();
    assert_eq!(ids(s.inbox_items(true).unwrap()), ["d1", "d2"]);
    let by = |who: &str| Answer {
        choice: "a".into(),
        reason: None,
        by: who.into(),
        at: Timestamp(9),
    };
    // Answered by one of two stores at once: once.
    let other = b.open();
    let (x, y) = std::thread::scope(|sc| {
        let x = sc.spawn(|| s.answer_item("d1", &by("ana")).unwrap());
        let y = sc.spawn(|| other.answer_item("d1", &by("bo")).unwrap());
        (x.join().unwrap(), y.join().unwrap())
    });
    let first = match (&x, &y) {
        (Answered::Now(i), Answered::Already(j)) | (Answered::Already(j), Answered::Now(i)) => {
            assert_eq!(i, j, "the second sees the first's answer");
            i.clone()
        }
        other => panic!("answered twice or never: {other:?}"),
    };
    assert_eq!(s.inbox_item("d1").unwrap().unwrap(), first);
    assert_eq!(ids(other.inbox_items(true).unwrap()), ["d2"]);
    assert_eq!(ids(other.inbox_items(false).unwrap()), ["d1", "d2"]);
    assert_eq!(
        s.answer_item("nope", &by("ana")).unwrap(),
        Answered::NotFound
    );
    // Raised again once answered: the answer comes back with it.
    assert!(
        s.raise_item(&item("d3", "which?", 8))
            .unwrap()
            .answer
            .is_some()
    );
}

// ----- teams ----------------------------------------------------------------

fn new_team(s: &dyn Store, id: &str) -> baton_core::team::Team {
    use baton_core::team::{self, Event, Input, Lead, NewTeammate, Record, Role};
    let tid = TaskId::parse(id).unwrap();
    let events = team::decide(
        None,
        Input::Create {
            lead: Lead {
                session_id: "s1".into(),
                owner: "h".into(),
                attached_at: Timestamp(1),
            },
            teammates: ["ana", "bo"]
                .map(|n| NewTeammate {
                    name: n.into(),
                    role: Role::Engineer,
                    agent: None,
                })
                .to_vec(),
            tasks: vec![],
            facts: Default::default(),
        },
        Timestamp(1),
    )
    .unwrap();
    let records: Vec<Record> = events
        .into_iter()
        .enumerate()
        .map(|(i, event): (usize, Event)| Record {
            seq: i as u64 + 1,
            ts: Timestamp(1),
            event,
        })
        .collect();
    let t = team::replay(&tid, &records).unwrap();
    assert!(s.create_team(&t, &records).unwrap());
    t
}

fn a_team_journal_commits_in_order_and_refuses_a_stale_writer(b: &Backend) {
    use baton_core::team::{self, Event, NewTask, Record};
    let s = b.open();
    let t = new_team(&*s, "crew");
    assert!(!s.create_team(&t, &[]).unwrap(), "one team of an id");
    let add = |t: &team::Team, id: &str| {
        let rec = Record {
            seq: t.last_seq + 1,
            ts: Timestamp(5),
            event: Event::TaskAdded {
                task: NewTask {
                    id: id.into(),
                    title: id.into(),
                    dependencies: vec![],
                },
            },
        };
        let next = team::apply(Some(t.clone()), &t.id, &rec).unwrap();
        (next, rec)
    };
    let (t2, r2) = add(&t, "a");
    s.commit_team(t.last_seq, &t2, &[r2]).unwrap();
    // A writer that decided on the old team is refused.
    let (t3, r3) = add(&t, "b");
    match s.commit_team(t.last_seq, &t3, &[r3]) {
        Err(Error::TeamChanged {
            expected, found, ..
        }) => assert_eq!((expected, found), (1, 2)),
        other => panic!("{other:?}"),
    }
    let other = b.open();
    let read = other.team("crew").unwrap().unwrap();
    assert_eq!(read, t2);
    assert_eq!(read.tasks.len(), 1);
    let records = other.team_records("crew", 0, 100).unwrap();
    assert_eq!(records.len(), 2);
    assert_eq!(team::replay(&t.id, &records).unwrap(), t2);
    assert_eq!(other.teams().unwrap().len(), 1);
    assert!(other.team("nope").unwrap().is_none());
}

fn a_mailbox_is_gapless_idempotent_and_read_per_recipient(b: &Backend) {
    use baton_core::team::{MessageType, NewMessage};
    use baton_store::MessageQuery;
    let s = b.open();
    new_team(&*s, "crew");
    let msg = |id: &str, from: &str, to: &str| NewMessage {
        msg_id: id.into(),
        from: from.into(),
        to: to.into(),
        kind: MessageType::Info,
        subject: format!("about {id}"),
        body: "text".into(),
    };
    // 8 writers, each sending 10 messages, every one of them twice.
    std::thread::scope(|sc| {
        for w in 0..8 {
            let store = b.open();
            sc.spawn(move || {
                for i in 0..10 {
                    for _ in 0..2 {
                        store
                            .send_message("crew", &msg(&format!("m{w}-{i}"), "ana", "bo"))
                            .unwrap();
                    }
                }
            });
        }
    });
    let all = s
        .messages(
            "crew",
            &MessageQuery {
                limit: 1000,
                ..Default::default()
            },
        )
        .unwrap();
    let seqs: Vec<u64> = all.iter().map(|m| m.seq).collect();
    assert_eq!(
        seqs,
        (1..=80).collect::<Vec<_>>(),
        "gapless, each stored once"
    );
    assert_eq!(s.message_count("crew").unwrap(), 80);
    let (again, new) = s.send_message("crew", &msg("m3-4", "ana", "bo")).unwrap();
    assert!(!new);
    assert_eq!(again.msg_id, "m3-4");
    // A broadcast reaches everyone but its sender.
    let (b1, _) = s.send_message("crew", &msg("all", "bo", "*")).unwrap();
    let inbox = |name: &str| {
        s.messages(
            "crew",
            &MessageQuery {
                to: Some(name.into()),
                unacked: true,
                limit: 1000,
                ..Default::default()
            },
        )
        .unwrap()
    };
    assert_eq!(inbox("bo").len(), 80);
    assert_eq!(inbox("ana").len(), 1);
    assert_eq!(inbox("ana")[0].seq, b1.seq);
    // Acknowledged: out of the inbox, once.
    assert_eq!(s.ack_messages("crew", "bo", &[1, 2, 2, 999]).unwrap(), 2);
    assert_eq!(inbox("bo").len(), 78);
    assert_eq!(s.unread_count("crew", "bo", 1000).unwrap(), 78);
    assert_eq!(
        s.unread_count("crew", "bo", 10).unwrap(),
        10,
        "counted up to 10"
    );
    assert_eq!(s.unread_count("crew", "ana", 1000).unwrap(), 1);
    let first = &s
        .messages(
            "crew",
            &MessageQuery {
                limit: 1,
                ..Default::default()
            },
        )
        .unwrap()[0];
    assert_eq!(first.acked_by, ["bo"]);
    // The newest, in order.
    let last = s
        .messages(
            "crew",
            &MessageQuery {
                limit: 2,
                newest: true,
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(last.iter().map(|m| m.seq).collect::<Vec<_>>(), [80, 81]);
    assert!(matches!(
        s.send_message("nope", &msg("x", "a", "b")),
        Err(Error::NoTeam(_))
    ));
}

fn a_presence_keeps_only_newer_heartbeats_stamped_by_the_store(b: &Backend) {
    let s = b.open();
    new_team(&*s, "crew");
    let before = s.store_now().unwrap();
    // A sender whose clock is an hour ahead.
    let ahead = Timestamp(before.millis() + 3_600_000);
    let p = s.heartbeat("crew", "ana", Some(5), Some(ahead)).unwrap();
    assert_eq!(p.seq, 5);
    assert_eq!(p.sent_at, Some(ahead));
    let after = s.store_now().unwrap();
    assert!(
        p.received_at >= before && p.received_at <= after,
        "the store's own clock"
    );
    // An older or repeated sequence moves nothing.
    let q = s
        .heartbeat("crew", "ana", Some(4), Some(Timestamp(0)))
        .unwrap();
    assert_eq!(q, p);
    // Without a sequence: the next one.
    assert_eq!(s.heartbeat("crew", "ana", None, None).unwrap().seq, 6);
    assert_eq!(s.heartbeat("crew", "bo", None, None).unwrap().seq, 1);
    let all = b.open().presences("crew").unwrap();
    assert_eq!(
        all.iter()
            .map(|p| (p.name.as_str(), p.seq))
            .collect::<Vec<_>>(),
        [("ana", 6), ("bo", 1)]
    );
    assert!(matches!(
        s.heartbeat("nope", "a", None, None),
        Err(Error::NoTeam(_))
    ));
}

/// Two baton commands opening a new SQLite store at once both get it,
/// migrated once.
#[test]
fn sqlite_stores_opened_at_once_are_migrated_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("baton.db");
    let opened: Vec<_> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..8)
            .map(|_| {
                s.spawn(|| {
                    // Opened and used at once, as two commands would.
                    let store = SqliteStore::open(&path, baton_store::Synchronous::Full)?;
                    baton_store::InboxStore::inbox_items(&store, true).map(|_| store)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for o in opened {
        let s = o.expect("every open succeeds");
        assert!(s.list().unwrap().is_empty());
    }
}

fn comments_are_kept_by_target_and_delivered_once(b: &Backend) {
    use baton_core::comment::{Comment, Delivered, instance_target, task_target};
    let s = b.open();
    let c = |id: &str, target: &str, at: i64| Comment {
        id: id.into(),
        target: target.into(),
        path: "src/a.rs".into(),
        line: 3,
        body: format!("comment {id}"),
        by: "ana".into(),
        created_at: Timestamp(at),
        delivered: None,
    };
    s.add_comment(&c("c2", &task_target("t1"), 20)).unwrap();
    s.add_comment(&c("c1", &task_target("t1"), 10)).unwrap();
    s.add_comment(&c("c3", &instance_target("t1"), 5)).unwrap();
    assert!(
        s.add_comment(&c("c1", &task_target("t1"), 10)).is_err(),
        "an id is one comment"
    );
    let ids = |v: Vec<Comment>| v.into_iter().map(|c| c.id).collect::<Vec<_>>();
    assert_eq!(ids(s.comments(&task_target("t1")).unwrap()), ["c1", "c2"]);
    assert_eq!(ids(s.comments(&instance_target("t1")).unwrap()), ["c3"]);
    let d = Delivered {
        to: "plan.i0.a1".into(),
        at: Timestamp(30),
    };
    let all = vec!["c1".to_string(), "c2".into(), "c3".into()];
    assert_eq!(
        s.deliver_comments(&task_target("t1"), &all, &d).unwrap(),
        2,
        "c3 is another target's"
    );
    let again = Delivered {
        to: "plan.i0.a2".into(),
        at: Timestamp(40),
    };
    assert_eq!(
        s.deliver_comments(&task_target("t1"), &all, &again)
            .unwrap(),
        0,
        "delivered once"
    );
    let got = s.comments(&task_target("t1")).unwrap();
    assert!(
        got.iter().all(|c| c.delivered.as_ref() == Some(&d)),
        "{got:?}"
    );
    assert!(
        s.comments(&instance_target("t1")).unwrap()[0]
            .delivered
            .is_none()
    );
}

fn links_are_kept_until_started_and_started_once(b: &Backend) {
    use baton_core::link::{Link, Started};
    use baton_store::LinkStart;
    let s = b.open();
    let l = |id: &str, at: i64| Link {
        id: id.into(),
        workflow: "w".into(),
        description: "after a".into(),
        flags: vec!["fast=true".into()],
        labels: vec![],
        agent: None,
        queue: false,
        needs: vec!["a".into()],
        created_at: Timestamp(at),
        started: None,
    };
    assert!(s.add_link(&l("b2", 20)).unwrap());
    assert!(s.add_link(&l("b1", 10)).unwrap());
    assert!(!s.add_link(&l("b1", 30)).unwrap(), "an id is one link");
    let ids = |v: Vec<Link>| v.into_iter().map(|l| l.id).collect::<Vec<_>>();
    assert_eq!(ids(s.links(true).unwrap()), ["b1", "b2"]);
    let started = Started {
        at: Timestamp(40),
        outcome: "RUNNING".into(),
    };
    match s.start_link("b1", &started).unwrap() {
        LinkStart::Now(link) => assert_eq!(link.started.as_ref(), Some(&started)),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        s.start_link("b1", &started).unwrap(),
        LinkStart::Already,
        "started once"
    );
    assert_eq!(s.start_link("nope", &started).unwrap(), LinkStart::Already);
    assert_eq!(ids(s.links(true).unwrap()), ["b2"]);
    let all = s.links(false).unwrap();
    assert_eq!(all.len(), 2);
    assert_eq!(all[0].flags, ["fast=true"]);
}
