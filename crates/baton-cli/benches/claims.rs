//! Claims benchmark: how fast a fleet of workers takes queued tasks off
//! one PostgreSQL.
//!
//! `cargo bench -p baton-cli --bench claims`
//!
//! A private PostgreSQL cluster (`baton_testkit::PgCluster`, server
//! defaults: `fsync = on`, `synchronous_commit = on`). In each round,
//! 16 claimers drain a queue of [`TASKS`] tasks at once:
//!
//! - baton: each claimer is what a worker's slot is, a `PgStore` of its
//!   own calling `Store::claim` (the lease written in the same `UPDATE …
//!   WHERE id = (SELECT … FOR UPDATE SKIP LOCKED)`), on tasks queued as
//!   `baton run --queue` stores them;
//! - the baseline: a bare dequeue loop on the same server, each claimer a
//!   plain connection running `UPDATE q SET taken = true WHERE id =
//!   (SELECT id FROM q WHERE NOT taken ORDER BY id LIMIT 1 FOR UPDATE
//!   SKIP LOCKED) RETURNING id` on a table of as many rows.
//!
//! The figure is baton's claims per second over the bare loop's, in the
//! same run (rounds alternate; medians): the goal is at least 0.5. Each
//! side also checks that every task was claimed exactly once.

mod common;

use baton_core::lease::Lease;
use baton_core::machine::{self, NewTask};
use baton_core::{EventRecord, TaskId};
use baton_store::{PgStore, Store};
use common::{bench_owner, median, now, parse_workflow, put_definition, workflow_toml};
use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Barrier, Mutex};
use std::time::{Duration, Instant};

/// Claimers at once.
const CLAIMERS: usize = 16;
/// Queued tasks per round.
const TASKS: usize = 1000;
const ROUNDS: usize = 5;

fn store(url: &str) -> PgStore {
    PgStore::connect(url, Duration::from_secs(30)).expect("PgStore::connect")
}

/// `TASKS` tasks queued as `baton run --queue` stores them (no lease).
fn queue(store: &PgStore, round: usize) {
    let wf = parse_workflow("claims", &workflow_toml("claims", 1));
    put_definition(store, &wf);
    for i in 0..TASKS {
        let id = TaskId::parse(&format!("r{round}-t{i:05}")).expect("id");
        let created = machine::create(
            &wf,
            NewTask {
                task_id: id.clone(),
                description: "claims benchmark".into(),
                project_name: "bench".into(),
                flags: BTreeMap::new(),
                labels: BTreeMap::new(),
                tech_stack: serde_json::Value::Null,
            },
        )
        .expect("create");
        let rec = EventRecord {
            seq: 1,
            ts: now(),
            event: created,
        };
        let state = machine::initial(id, &rec).expect("initial");
        store
            .create_task(&state, &[rec], baton_store::Holder::Queue)
            .expect("create_task");
    }
}

/// 16 claimers drain the queue: claims per second, and every id taken.
fn drain<C: Send + 'static>(
    claimers: Vec<C>,
    take: impl Fn(&mut C) -> Option<String> + Send + Sync + 'static,
) -> (f64, Vec<String>) {
    let take = Arc::new(take);
    let barrier = Arc::new(Barrier::new(claimers.len() + 1));
    let taken = Arc::new(Mutex::new(Vec::new()));
    let handles: Vec<_> = claimers
        .into_iter()
        .map(|mut c| {
            let (take, barrier, taken) = (take.clone(), barrier.clone(), taken.clone());
            std::thread::spawn(move || {
                let mut mine = Vec::new();
                barrier.wait();
                while let Some(id) = take(&mut c) {
                    mine.push(id);
                }
                taken.lock().unwrap().extend(mine);
            })
        })
        .collect();
    barrier.wait();
    let began = Instant::now();
    for h in handles {
        h.join().expect("a claimer panicked");
    }
    let secs = began.elapsed().as_secs_f64();
    let taken = std::mem::take(&mut *taken.lock().unwrap());
    (taken.len() as f64 / secs, taken)
}

fn exactly_once(taken: &[String], what: &str) {
    let unique: HashSet<&String> = taken.iter().collect();
    assert_eq!(
        taken.len(),
        TASKS,
        "{what}: claimed {} of {TASKS}",
        taken.len()
    );
    assert_eq!(unique.len(), TASKS, "{what}: a task was claimed twice");
}

fn baton_round(cluster: &baton_testkit::PgCluster, round: usize) -> f64 {
    let url = cluster.create_database();
    queue(&store(&url), round);
    let claimers: Vec<PgStore> = (0..CLAIMERS).map(|_| store(&url)).collect();
    let (rate, taken) = drain(claimers, |s: &mut PgStore| {
        let t = now();
        let lease = Lease {
            owner: bench_owner(),
            acquired_at: t,
            expires_at: t.plus_millis(60_000),
        };
        s.claim(&lease, &[])
            .expect("claim")
            .map(|id| id.to_string())
    });
    exactly_once(&taken, "baton");
    rate
}

fn bare_round(cluster: &baton_testkit::PgCluster) -> f64 {
    let url = cluster.create_database();
    let mut setup = postgres::Client::connect(&url, postgres::NoTls).expect("connect");
    setup
        .batch_execute(&format!(
            "CREATE TABLE q (id bigserial PRIMARY KEY, taken boolean NOT NULL DEFAULT false, payload text);
             INSERT INTO q (payload) SELECT 'task ' || g FROM generate_series(1, {TASKS}) g;"
        ))
        .expect("the bare queue");
    let claimers: Vec<postgres::Client> = (0..CLAIMERS)
        .map(|_| postgres::Client::connect(&url, postgres::NoTls).expect("connect"))
        .collect();
    let (rate, taken) = drain(claimers, |c: &mut postgres::Client| {
        c.query_opt(
            "UPDATE q SET taken = true WHERE id = (SELECT id FROM q WHERE NOT taken ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING id",
            &[],
        )
        .expect("dequeue")
        .map(|r| r.get::<_, i64>(0).to_string())
    });
    exactly_once(&taken, "bare");
    rate
}

fn main() {
    let cluster = baton_testkit::PgCluster::start();
    let (mut baton, mut bare) = (Vec::new(), Vec::new());
    for round in 0..ROUNDS {
        // Alternating, so both sides see the same machine over time.
        if round % 2 == 0 {
            baton.push(baton_round(&cluster, round));
            bare.push(bare_round(&cluster));
        } else {
            bare.push(bare_round(&cluster));
            baton.push(baton_round(&cluster, round));
        }
    }
    let (b, r) = (median(baton.clone()), median(bare.clone()));
    let ratio = b / r;
    println!();
    println!("baton claims benchmark (same machine, same PostgreSQL, same run)");
    println!(
        "machine: {} cores, load average {}",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        common::load_average()
    );
    println!(
        "{CLAIMERS} claimers draining {TASKS} queued tasks; medians of {ROUNDS} rounds, alternating"
    );
    let show = |v: &[f64]| {
        v.iter()
            .map(|x| format!("{x:.0}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    println!(
        "  baton Store::claim:          {b:>7.0} claims/s   (rounds: {})",
        show(&baton)
    );
    println!(
        "  bare SKIP LOCKED dequeue:    {r:>7.0} claims/s   (rounds: {})",
        show(&bare)
    );
    println!(
        "  ratio baton / bare:          {ratio:>7.2}   (goal >= 0.5: {})",
        if ratio >= 0.5 { "ok" } else { "MISSED" }
    );
    println!("  every task claimed exactly once on both sides");
}
