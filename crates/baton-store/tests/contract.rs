//! The store contract: every backend must pass these. They run here on
//! SQLite (in memory and on disk); the PostgreSQL backend will run them too.

use baton_core::lease::{Lease, LeaseOwner};
use baton_core::machine::{self, Input, NewTask};
use baton_core::{EventRecord, TaskId, TaskState, Timestamp, Workflow};
use baton_store::{
    Acquire, Error, PhaseWrites, RenewOutcome, SqliteStore, Store, StoredDefinition, Synchronous,
};

fn owner(pid: u32) -> LeaseOwner {
    LeaseOwner {
        host: "h".into(),
        boot_id: "b".into(),
        pid,
        start_time: 1,
    }
}

fn lease(pid: u32, exp: i64) -> Lease {
    Lease {
        owner: owner(pid),
        acquired_at: Timestamp(0),
        expires_at: Timestamp(exp),
    }
}

fn workflow() -> Workflow {
    Workflow::parse("name = \"w\"\n[[phase]]\nid = \"a\"\nrun = \"true\"\n[[phase]]\nid = \"b\"\nrun = \"true\"\n", "w.toml", "w", &|_| Err("none".into())).unwrap()
}

fn create(store: &dyn Store, id: &str, pid: u32) -> (TaskState, Workflow) {
    let wf = workflow();
    store
        .put_definition(&StoredDefinition {
            hash: wf.hash(),
            name: wf.name.clone(),
            json: serde_json::to_string(&wf).unwrap(),
        })
        .unwrap();
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
        ts: Timestamp(10),
        event: ev,
    };
    let state = machine::initial(TaskId::parse(id).unwrap(), &rec).unwrap();
    store
        .create_task(&state, &[rec], &lease(pid, 1000))
        .unwrap();
    (state, wf)
}

/// Decides, applies and commits one input the way the engine does.
fn step(
    store: &dyn Store,
    state: &mut TaskState,
    wf: &Workflow,
    input: Input,
    by: u32,
) -> Result<(), Error> {
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
    store.commit(&owner(by), state, &PhaseWrites::Changed(ix), &recs)
}

fn contract(store: &dyn Store) {
    let (mut state, wf) = create(store, "t1", 7);
    let id = state.task_id.clone();

    // A duplicate id is refused and the first task is untouched.
    let rec = store.events(&id, 0, 10).unwrap();
    assert!(matches!(
        store.create_task(&state, &rec, &lease(7, 1000)),
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
        step(
            store,
            &mut stale,
            &wf,
            Input::Note {
                phase: None,
                text: "x".into()
            },
            7
        ),
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

    // Listing and deleting.
    create(store, "t2", 7);
    let list = store.list().unwrap();
    assert_eq!(
        list.iter().map(|t| t.id.as_str()).collect::<Vec<_>>(),
        vec!["t1", "t2"]
    );
    assert_eq!(list[0].last_phase.as_deref(), Some("a"));
    assert!(store.delete_task(&id).unwrap());
    assert!(!store.delete_task(&id).unwrap());
    assert!(store.load(&id).unwrap().is_none());
    assert!(store.events(&id, 0, 10).unwrap().is_empty());
    assert!(store.check().unwrap().is_empty());
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
fn garbage_file_is_a_clear_open_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("baton.db");
    std::fs::write(&path, b"this is not a database, just some bytes that are long enough to look like a header........................................").unwrap();
    match SqliteStore::open(&path, Synchronous::Full) {
        Err(Error::Open { reason, .. }) => assert!(reason.contains("not a database"), "{reason}"),
        Err(e) => panic!("unexpected error {e}"),
        Ok(_) => panic!("garbage opened as a store"),
    }
}
