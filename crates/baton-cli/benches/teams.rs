//! Teams benchmark.
//!
//! `cargo bench -p baton-cli --bench teams`
//!
//! 1. **Re-attach does not replay history.** `baton team resume` (the real
//!    binary, SQLite `synchronous=FULL`) on a team with 100,000 messages and
//!    1,000 tasks, next to the same on a team with 100 messages and 10
//!    tasks, in the same run; the median of several runs each, alternating.
//!    Goal: at most 2x. The absolute time is printed too (the seed's target:
//!    under 5 minutes, about 20 s in practice).
//! 2. **Mailbox appends.** `team_send`'s store call (`TeamStore::send_message`:
//!    a gapless per-team `seq` and idempotent `msg_id`) per second, next to
//!    raw rusqlite single-row inserts of the same size with the same
//!    durability (WAL, `synchronous=FULL`, one transaction each). Goal:
//!    ratio at least 0.5.

mod common;

use baton_core::Timestamp;
use baton_core::team::{
    self, Input, Lead, MessageType, NewMessage, NewTask, NewTeammate, Record, Role,
};
use baton_store::{SqliteStore, Synchronous, TeamStore};
use common::{median, tempdir, text};
use std::path::Path;
use std::process::Command;
use std::time::Instant;

const BATON: &str = env!("CARGO_BIN_EXE_baton");
const RUNS: usize = 7;
const APPENDS: usize = 1000;

/// A project at `root` whose store holds team `crew` with `tasks` tasks and
/// `messages` messages (written with `synchronous=NORMAL` to build it
/// quickly; the project itself runs with FULL).
fn team_project(root: &Path, tasks: usize, messages: usize) {
    std::fs::create_dir_all(root.join(".baton/workflows")).expect("mkdir");
    std::fs::write(
        root.join(".baton/config.toml"),
        "[store]\nsynchronous = \"full\"\n",
    )
    .expect("config");
    let git = |args: &[&str]| {
        let ok = Command::new("git")
            .args(args)
            .current_dir(root)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .output()
            .expect("git")
            .status
            .success();
        assert!(ok, "git {args:?}");
    };
    git(&["init", "-q"]);
    let store =
        SqliteStore::open(&root.join(".baton/baton.db"), Synchronous::Normal).expect("store");
    let id = team::TeamId::parse("crew").unwrap();
    let now = store.store_now().unwrap();
    let events = team::decide(
        None,
        Input::Create {
            lead: Lead {
                session_id: "bench-lead".into(),
                owner: "bench".into(),
                attached_at: now,
            },
            teammates: ["ana", "bo", "cy", "di"]
                .map(|n| NewTeammate {
                    name: n.into(),
                    role: Role::Engineer,
                    agent: None,
                })
                .to_vec(),
            tasks: (0..tasks)
                .map(|i| NewTask {
                    id: format!("t{}", i + 1),
                    title: format!("task number {}", i + 1),
                    dependencies: if i > 0 { vec![format!("t{i}")] } else { vec![] },
                })
                .collect(),
            facts: Default::default(),
        },
        now,
    )
    .expect("create");
    let records: Vec<Record> = events
        .into_iter()
        .enumerate()
        .map(|(k, event)| Record {
            seq: k as u64 + 1,
            ts: now,
            event,
        })
        .collect();
    let t = team::replay(&id, &records).unwrap();
    assert!(store.create_team(&t, &records).unwrap());
    let body = text(200, 7);
    let from = ["ana", "bo", "cy", "di"];
    for i in 0..messages {
        store
            .send_message(
                "crew",
                &NewMessage {
                    msg_id: format!("m{i}"),
                    from: from[i % 4].into(),
                    to: if i % 10 == 0 {
                        "lead".into()
                    } else {
                        from[(i + 1) % 4].into()
                    },
                    kind: MessageType::Info,
                    subject: format!("note {i}"),
                    body: body.clone(),
                },
            )
            .expect("message");
    }
    for n in from {
        store
            .heartbeat("crew", n, None, Some(Timestamp(now.millis())))
            .unwrap();
    }
    store
        .heartbeat("crew", team::LEAD, None, Some(now))
        .unwrap();
}

fn resume_ms(root: &Path) -> f64 {
    let started = Instant::now();
    let out = Command::new(BATON)
        .args([
            "team",
            "resume",
            "crew",
            "--session",
            "bench-lead",
            "--json",
        ])
        .current_dir(root)
        .env_remove("BATON_DATABASE_URL")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .expect("baton");
    let ms = started.elapsed().as_secs_f64() * 1000.0;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    ms
}

fn raw_inserts_per_s(dir: &Path) -> f64 {
    let conn = rusqlite::Connection::open(dir.join("raw.db")).expect("open");
    let _mode: String = conn
        .query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))
        .expect("wal");
    conn.execute_batch("PRAGMA synchronous=FULL; CREATE TABLE m (id INTEGER PRIMARY KEY, msg_id TEXT, body TEXT NOT NULL);")
        .expect("table");
    let body = text(200, 3);
    let started = Instant::now();
    for i in 0..APPENDS {
        let tx = conn.unchecked_transaction().expect("begin");
        tx.prepare_cached("INSERT INTO m (msg_id, body) VALUES (?1, ?2)")
            .expect("prepare")
            .execute(rusqlite::params![format!("m{i}"), body])
            .expect("insert");
        tx.commit().expect("commit");
    }
    APPENDS as f64 / started.elapsed().as_secs_f64()
}

fn mailbox_appends_per_s(dir: &Path, round: usize) -> f64 {
    let store = SqliteStore::open(&dir.join(format!("baton-{round}.db")), Synchronous::Full)
        .expect("store");
    let id = team::TeamId::parse("crew").unwrap();
    let now = store.store_now().unwrap();
    let events = team::decide(
        None,
        Input::Create {
            lead: Lead {
                session_id: "s".into(),
                owner: "bench".into(),
                attached_at: now,
            },
            teammates: vec![NewTeammate {
                name: "ana".into(),
                role: Role::Engineer,
                agent: None,
            }],
            tasks: vec![],
            facts: Default::default(),
        },
        now,
    )
    .unwrap();
    let records: Vec<Record> = events
        .into_iter()
        .enumerate()
        .map(|(k, event)| Record {
            seq: k as u64 + 1,
            ts: now,
            event,
        })
        .collect();
    store
        .create_team(&team::replay(&id, &records).unwrap(), &records)
        .unwrap();
    let body = text(200, 3);
    let started = Instant::now();
    for i in 0..APPENDS {
        store
            .send_message(
                "crew",
                &NewMessage {
                    msg_id: format!("m{i}"),
                    from: "ana".into(),
                    to: "lead".into(),
                    kind: MessageType::Info,
                    subject: String::new(),
                    body: body.clone(),
                },
            )
            .unwrap();
    }
    let rate = APPENDS as f64 / started.elapsed().as_secs_f64();
    assert_eq!(store.message_count("crew").unwrap(), APPENDS as u64);
    rate
}

fn main() {
    let (small, big) = (tempdir(), tempdir());
    let built = Instant::now();
    team_project(small.path(), 10, 100);
    team_project(big.path(), 1_000, 100_000);
    println!(
        "teams: built a team of 100,000 messages and 1,000 tasks (and one of 100 and 10) in {:.1} s",
        built.elapsed().as_secs_f64()
    );
    if std::env::var_os("BATON_BENCH_KEEP").is_some() {
        // For looking closer: the two projects stay, and nothing is measured.
        println!(
            "  kept: {} {}",
            small.keep().display(),
            big.keep().display()
        );
        return;
    }
    let (mut s, mut b) = (Vec::new(), Vec::new());
    // One run of each first, unmeasured (page cache, binary).
    resume_ms(small.path());
    resume_ms(big.path());
    for i in 0..RUNS {
        if i % 2 == 0 {
            s.push(resume_ms(small.path()));
            b.push(resume_ms(big.path()));
        } else {
            b.push(resume_ms(big.path()));
            s.push(resume_ms(small.path()));
        }
    }
    let (sm, bm) = (median(s), median(b));
    println!(
        "  baton team resume, 100 messages / 10 tasks:        {sm:>7.1} ms (median of {RUNS})"
    );
    println!(
        "  baton team resume, 100,000 messages / 1,000 tasks: {bm:>7.1} ms (median of {RUNS})   ratio {:.2} (goal <= 2; the seed's target: re-attach under 5 minutes)",
        bm / sm
    );

    let dir = tempdir();
    let (mut raw, mut mine, mut ratio) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..3 {
        let (r, m) = if round % 2 == 0 {
            let r = raw_inserts_per_s(dir.path());
            (r, mailbox_appends_per_s(dir.path(), round))
        } else {
            let m = mailbox_appends_per_s(dir.path(), round);
            (raw_inserts_per_s(dir.path()), m)
        };
        let _ = std::fs::remove_file(dir.path().join("raw.db"));
        raw.push(r);
        mine.push(m);
        ratio.push(m / r);
    }
    println!(
        "  mailbox appends (seq per team, idempotent msg_id), synchronous=FULL: {:>7.0}/s   raw SQLite single-row inserts: {:>7.0}/s   ratio {:.2} (goal >= 0.5; median of 3 rounds of {APPENDS})",
        median(mine),
        median(raw),
        median(ratio)
    );
}
