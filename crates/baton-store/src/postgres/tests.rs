//! Faults injected at the edge of a commit: the transaction is lost just
//! before or just after `COMMIT`, as if the server went away then.

use super::PgStore;
use super::conn::Fault;
use super::connect::{places, redact};
use crate::{Durability, Holder, PhaseWrites, Store, StoredDefinition};
use baton_core::lease::{Lease, LeaseOwner};
use baton_core::{EventRecord, TaskId, TaskState, Timestamp};
use postgres::Config;
use std::cell::Cell;
use std::time::Duration;

thread_local! {
    static ARMED: Cell<Option<Fault>> = const { Cell::new(None) };
}

/// Whether `f` is armed on this thread; disarms it.
pub(super) fn hit(f: Fault) -> bool {
    ARMED.with(|a| {
        if a.get() == Some(f) {
            a.set(None);
            true
        } else {
            false
        }
    })
}

impl Fault {
    fn arm(self) {
        ARMED.with(|a| a.set(Some(self)));
    }
}

#[test]
fn redact_drops_passwords() {
    assert_eq!(
        redact("postgres://u:secret@h:1/db?sslmode=disable&password=x"),
        "postgres://u@h:1/db?sslmode=disable"
    );
    assert_eq!(redact("postgres://h/db"), "postgres://h/db");
    assert_eq!(redact("host=h password=secret user=u"), "host=h user=u");
}

#[test]
fn places_name_host_port_and_database() {
    let c: Config = "postgres://u:p@db.example:6543/work".parse().unwrap();
    assert_eq!(
        places(&c),
        ("db.example:6543".into(), "db.example:6543/work".into())
    );
    let c: Config = "postgres://u@localhost".parse().unwrap();
    assert_eq!(places(&c).1, "localhost:5432/u");
}

fn task(store: &PgStore, owner: &LeaseOwner) -> TaskState {
    use baton_core::machine::{self, NewTask};
    let wf = baton_core::Workflow::parse(
        "name = \"w\"\n[[phase]]\nid = \"a\"\nrun = \"true\"\n",
        "w.toml",
        "w",
        &|_| Err("none".into()),
    )
    .unwrap();
    store
        .put_definition(&StoredDefinition {
            hash: wf.hash(),
            name: wf.name.clone(),
            json: serde_json::to_string(&wf).unwrap(),
        })
        .unwrap();
    let id = TaskId::parse("t1").unwrap();
    let new = NewTask {
        task_id: id.clone(),
        description: "d".into(),
        project_name: "p".into(),
        flags: Default::default(),
        labels: Default::default(),
        tech_stack: serde_json::json!({}),
    };
    let rec = EventRecord {
        seq: 1,
        ts: Timestamp(10),
        event: machine::create(&wf, new).unwrap(),
    };
    let state = machine::initial(id, &rec).unwrap();
    let lease = Lease {
        owner: owner.clone(),
        acquired_at: Timestamp(0),
        expires_at: Timestamp(1000),
    };
    Fault::AfterCommit.arm();
    store
        .create_task(&state, &[rec], Holder::Lease(&lease))
        .expect("a create whose answer was lost is recognised on retry");
    state
}

fn note(state: &mut TaskState, text: &str) -> EventRecord {
    let r = EventRecord {
        seq: state.last_seq + 1,
        ts: Timestamp(20),
        event: baton_core::Event::Note {
            phase: None,
            text: text.into(),
        },
    };
    baton_core::machine::apply(state, &r);
    r
}

#[test]
fn a_commit_lost_before_or_after_commit_lands_exactly_once() {
    let url = baton_testkit::pg::shared().create_database();
    let store = PgStore::connect(&url, Duration::from_secs(10)).unwrap();
    let owner = LeaseOwner {
        host: "h".into(),
        boot_id: "b".into(),
        pid: 7,
        start_time: 1,
        pid_ns: String::new(),
    };
    let mut state = task(&store, &owner);
    let id = state.task_id.clone();

    for fault in [Fault::BeforeCommit, Fault::AfterCommit, Fault::AfterCommit] {
        let r = note(&mut state, &format!("{fault:?}"));
        fault.arm();
        store
            .commit(
                &owner,
                &state,
                &PhaseWrites::Changed(vec![]),
                &[r],
                Durability::Disk,
            )
            .unwrap_or_else(|e| panic!("{fault:?}: {e}"));
        assert!(!hit(fault), "the fault fired");
    }
    let events = store.events(&id, 0, usize::MAX).unwrap();
    assert_eq!(
        events.iter().map(|e| e.seq).collect::<Vec<_>>(),
        vec![1, 2, 3, 4]
    );
    assert_eq!(store.load(&id).unwrap().unwrap().state, state);
    assert!(store.check().unwrap().is_empty());
}

#[test]
fn an_instance_commit_lost_before_or_after_commit_lands_exactly_once() {
    use crate::InstanceStore;
    use baton_core::instance::{self, CodingConfig, Input, Record};
    let url = baton_testkit::pg::shared().create_database();
    let store = PgStore::connect(&url, Duration::from_secs(10)).unwrap();
    for (k, fault) in [Fault::BeforeCommit, Fault::AfterCommit, Fault::AfterCommit]
        .into_iter()
        .enumerate()
    {
        let before = store.instances().unwrap();
        let input = Input::Spawn {
            id: TaskId::parse(&format!("c{k}")).unwrap(),
            config: CodingConfig {
                base_branch: "main".into(),
                target_branch: None,
                instructions: "x".into(),
                require_review: false,
                max_reviews: 1,
                execution_timeout_ms: 1000,
                agent: None,
                issue: None,
                system_prompt: None,
                for_phase: None,
            },
        };
        let mut after = before.clone();
        let records: Vec<Record> = instance::decide(&before, input, Timestamp(5))
            .unwrap()
            .into_iter()
            .map(|event| {
                let r = Record {
                    seq: after.last_seq + 1,
                    ts: Timestamp(5),
                    event,
                };
                instance::apply(&mut after, &r);
                r
            })
            .collect();
        fault.arm();
        store
            .commit_instances(before.last_seq, &records, &after.changed_since(&before))
            .unwrap_or_else(|e| panic!("{fault:?}: {e}"));
        assert!(!hit(fault), "the fault fired");
        assert_eq!(store.instances().unwrap(), after, "{fault:?}");
    }
    let journal = store.instance_events(0, usize::MAX).unwrap();
    assert_eq!(journal.iter().map(|r| r.seq).collect::<Vec<_>>(), [1, 2, 3]);
}
