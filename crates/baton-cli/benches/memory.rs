//! Memory benchmark: baton's peak RSS while a phase prints a flood.
//!
//! `cargo bench -p baton-cli --bench memory`
//!
//! The real binary runs `baton run` in a fresh git project, once per
//! workflow, one after another: a phase that prints nothing (the
//! baseline, measured in the same run), one that prints 10 MB and one that
//! prints 3 GB of short lines (the input of issue 34: `yes 'a chatty
//! build line' | head -c N; echo; echo last-line`). Each figure is the
//! peak resident set of `baton run` and the processes it waited for
//! (`ru_maxrss` of its parent's children; the phase's `yes` and `head`
//! are a few MB),
//! and is printed as a ratio to the idle run's. The goal: the 3 GB run
//! within 1.5x of the idle one (before, baton read the whole output when
//! the phase ended: 780 MB for 800 MB printed).
//!
//! `BATON_BENCH_FLOOD_BYTES` sets the large phase's size (default 3 GB).

use std::path::Path;
use std::process::Command;

const BATON: &str = env!("CARGO_BIN_EXE_baton");

/// Runs `baton run WORKFLOW` in `root` and returns its exit code and the
/// peak RSS in KiB of it and the processes it waited for. Each run is
/// measured by a fresh process of this bench (`--measure`), whose only
/// child it is: `RUSAGE_CHILDREN`'s `ru_maxrss` is then that run's.
fn run_peak_kib(root: &Path, workflow: &str) -> (i32, i64) {
    let out = Command::new(std::env::current_exe().expect("this bench"))
        .args(["--measure", workflow])
        .current_dir(root)
        .output()
        .expect("measure");
    let text = String::from_utf8_lossy(&out.stdout);
    let mut words = text.split_whitespace();
    let code = words.next().and_then(|w| w.parse().ok()).unwrap_or(-1);
    let kib = words.next().and_then(|w| w.parse().ok()).unwrap_or(0);
    (code, kib)
}

/// `--measure WORKFLOW`: runs it in the current folder and prints its exit
/// code and the peak RSS (KiB) of the run.
fn measure(workflow: &str) {
    let status = Command::new(BATON)
        .args(["run", workflow, "memory bench", "--quiet"])
        .env("NO_COLOR", "1")
        .env_remove("BATON_DATABASE_URL")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .expect("start baton");
    let usage = nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_CHILDREN)
        .expect("getrusage");
    println!("{} {}", status.code().unwrap_or(-1), usage.max_rss());
}

fn git(root: &Path, args: &[&str]) {
    let ok = Command::new("git")
        .args(args)
        .current_dir(root)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "bench")
        .env("GIT_AUTHOR_EMAIL", "bench@localhost")
        .env("GIT_COMMITTER_NAME", "bench")
        .env("GIT_COMMITTER_EMAIL", "bench@localhost")
        .status()
        .expect("git");
    assert!(ok.success(), "git {args:?}");
}

fn flood(name: &str, bytes: u64) -> String {
    format!(
        "name = \"{name}\"\n[[phase]]\nid = \"build\"\nrun = \"yes 'a chatty build line' | head -c {bytes}; echo; echo last-line\"\n"
    )
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--measure") {
        measure(&args[i + 1]);
        return;
    }
    let big: u64 = std::env::var("BATON_BENCH_FLOOD_BYTES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3_000_000_000);
    let dir = tempfile::Builder::new()
        .prefix("baton-bench-memory-")
        .tempdir_in("/tmp")
        .expect("tempdir");
    let root = dir.path();
    git(root, &["init", "-q", "-b", "main"]);
    std::fs::write(root.join("README.md"), "bench\n").expect("readme");
    git(root, &["add", "."]);
    git(root, &["commit", "-qm", "initial"]);
    let out = Command::new(BATON)
        .arg("init")
        .current_dir(root)
        .output()
        .expect("baton init");
    assert!(out.status.success(), "baton init");
    let workflows = root.join(".baton/workflows");
    std::fs::write(
        workflows.join("idle.toml"),
        "name = \"idle\"\n[[phase]]\nid = \"build\"\nrun = \"true\"\n",
    )
    .expect("idle");
    std::fs::write(workflows.join("ten.toml"), flood("ten", 10_000_000)).expect("ten");
    std::fs::write(workflows.join("big.toml"), flood("big", big)).expect("big");

    println!(
        "memory: peak RSS of `baton run` (and what it waited for), by what its one phase prints"
    );
    let (code, idle) = run_peak_kib(root, "idle");
    assert_eq!(code, 0, "the idle run failed");
    let mut rows = vec![("nothing (baseline)".to_string(), idle)];
    for (label, wf) in [
        ("10 MB".to_string(), "ten"),
        (format!("{:.1} GB", big as f64 / 1e9), "big"),
    ] {
        let started = std::time::Instant::now();
        let (code, kib) = run_peak_kib(root, wf);
        assert_eq!(code, 0, "the {label} run failed");
        eprintln!("  ({label}: {:.1}s)", started.elapsed().as_secs_f64());
        rows.push((label, kib));
    }
    for (label, kib) in &rows {
        println!(
            "  {label:<20} {:>8.1} MB   {:>5.2}x idle",
            *kib as f64 / 1024.0,
            *kib as f64 / idle as f64
        );
    }
    let ratio = rows.last().map_or(0.0, |(_, k)| *k as f64 / idle as f64);
    println!(
        "memory: the flood's peak RSS is {ratio:.2}x the idle run's (goal <= 1.5x): {}",
        if ratio <= 1.5 { "met" } else { "NOT met" }
    );
}
