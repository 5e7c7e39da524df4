//! Board benchmark: how long the board takes to show its first cards with
//! 10,000 tasks in the store, against 10 tasks, in one run.
//!
//! `cargo bench -p baton-cli --bench board`
//!
//! Two projects, each with a real `baton serve` over SQLite: one holding
//! 10 completed two-phase tasks, one holding 10,000 (stored through the
//! Store API exactly as the engine writes them, so the seeding takes
//! seconds, not an hour of phases). A headless Chromium (the tests' own,
//! over WebDriver) opens the board (`/`) on each in turn; the figure is the
//! time from the start of the navigation to the first card drawn, read
//! from the page's own clock (`performance.now()`). Rounds alternate the
//! sides; figures are medians. Goal: 10,000 tasks at most 3 × 10 tasks.

mod common;

use baton_store::{SqliteStore, Store, Synchronous};
use baton_testkit::browser::Browser;
use common::{Driver, claim, median, parse_workflow, pass, start, workflow_toml};
use serde_json::json;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BATON: &str = env!("CARGO_BIN_EXE_baton");
const ROUNDS: usize = 7;
const SIZES: [usize; 2] = [10, 10_000];

struct Served {
    _dir: tempfile::TempDir,
    child: Child,
    url: String,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A project of `n` completed tasks, served.
fn served(n: usize) -> Served {
    let dir = tempfile::Builder::new()
        .prefix("baton-bench-board-")
        .tempdir()
        .expect("tempdir");
    let root = dir.path().join("project");
    std::fs::create_dir_all(&root).expect("mkdir");
    let baton = |args: &[&str]| {
        let mut c = Command::new(BATON);
        c.args(["--project", root.to_str().expect("utf-8")])
            .args(args)
            .env("HOME", dir.path())
            .env("NO_COLOR", "1");
        c
    };
    let ok = baton(&["init"]).output().expect("baton init");
    assert!(ok.status.success(), "baton init: {ok:?}");
    let toml = workflow_toml("w", 2);
    std::fs::write(root.join(".baton/workflows/w.toml"), &toml).expect("workflow");
    seed(
        &root.join(".baton/baton.db"),
        &parse_workflow("w", &toml),
        n,
    );
    let port = baton_testkit::free_port();
    let child = baton(&["serve", "--addr", &format!("127.0.0.1:{port}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("baton serve");
    let url = format!("http://127.0.0.1:{port}");
    let until = Instant::now() + Duration::from_secs(60);
    let agent = baton_testkit::serve::http();
    while agent.get(&format!("{url}/healthz")).call().is_err() {
        assert!(Instant::now() < until, "baton serve did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    Served {
        _dir: dir,
        child,
        url,
    }
}

/// `n` tasks of `wf`, each created, run through both phases and released,
/// as the engine stores them.
fn seed(db: &Path, wf: &baton_core::Workflow, n: usize) {
    let store = SqliteStore::open(db, Synchronous::Normal).expect("store");
    let store: &dyn Store = &store;
    for i in 0..n {
        let mut d = Driver::create(Some(store), wf, &format!("t{i:05}"), &[]);
        d.decide_commit(claim());
        for p in 0..2 {
            d.decide_commit(start(p));
            d.decide_commit(pass(p, "done"));
        }
        d.decide_commit(baton_core::machine::Input::Complete);
        d.release();
    }
}

/// Milliseconds from the start of the navigation to the board (`/`) to its first
/// card, by the page's clock.
fn first_cards(b: &Browser, url: &str) -> f64 {
    b.goto("about:blank");
    b.goto(url);
    let v = b.js_async(
        "const look = () => document.querySelector('.card') ? done(performance.now()) : requestAnimationFrame(look); look();",
        json!([]),
    );
    v.as_f64().unwrap_or_else(|| panic!("no time: {v}"))
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let started = Instant::now();
    eprintln!(
        "[1/2] two projects: {} and {} completed tasks, each served…",
        SIZES[0], SIZES[1]
    );
    let small = served(SIZES[0]);
    let large = served(SIZES[1]);
    let b = Browser::start(1400, 900);
    // A first look at each, untimed: the browser's and the server's caches
    // are warm on both sides alike.
    for (side, n) in [(&small, SIZES[0]), (&large, SIZES[1])] {
        first_cards(&b, &side.url);
        let done = b.text("[data-column=done] .count");
        assert_eq!(
            done,
            Some(n.to_string()),
            "the board counts every task done"
        );
    }
    eprintln!("[2/2] {ROUNDS} rounds, the sides alternating…");
    let (mut s, mut l, mut ratios) = (vec![], vec![], vec![]);
    for round in 0..ROUNDS {
        let (a, z) = if round % 2 == 0 {
            let a = first_cards(&b, &small.url);
            (a, first_cards(&b, &large.url))
        } else {
            let z = first_cards(&b, &large.url);
            (first_cards(&b, &small.url), z)
        };
        eprintln!(
            "      round {}: 10 tasks {a:.0} ms, 10,000 tasks {z:.0} ms, ratio {:.2}",
            round + 1,
            z / a
        );
        s.push(a);
        l.push(z);
        ratios.push(z / a);
    }
    let ratio = median(ratios);
    println!();
    println!("baton board benchmark (same machine, same run)");
    println!("machine: 2 cores, load average {}", common::load_average());
    println!(
        "time from opening the board to its first cards, headless Chromium, SQLite; medians of {ROUNDS} rounds"
    );
    println!("  10 tasks:                {:>7.0} ms", median(s));
    println!("  10,000 tasks:            {:>7.0} ms", median(l));
    println!(
        "  ratio 10,000 / 10:       {ratio:>7.2}   (goal <= 3: {})",
        if ratio <= 3.0 { "ok" } else { "MISSED" }
    );
    println!("total bench time {:.0}s", started.elapsed().as_secs_f64());
}
