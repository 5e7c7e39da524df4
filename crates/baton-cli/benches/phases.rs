//! Per-phase benchmark: what one phase costs baton, next to the least a
//! durable orchestrator must do for a phase.
//!
//! `cargo bench -p baton-cli --bench phases`
//!
//! - baton: `baton run w bench --id rN` (the real binary, wall time from
//!   spawning it to its exit, divided by the phases) on a workflow of
//!   `PHASES` `run = "true"` phases, in a git repository of `FILES` tracked
//!   files (`baton init`, the workflow committed). Every phase takes its
//!   git checkpoint and end snapshot as in real use.
//! - least durable (written here): per phase, spawn `true` in its own
//!   session and wait for it, and for each of the phase's two transitions
//!   (started, passed) commit one journal row (SQLite, WAL,
//!   `synchronous=FULL`) and rewrite a ~2 KB state file atomically (temp
//!   file, fsync, rename, fsync of the folder).
//! - the same 400 phases as `TASKS` tasks of `PHASES / TASKS` phases (one
//!   `baton run` each, so its start-up and the task's creation count too):
//!   `state.json` holds every phase and is rewritten at each transition,
//!   so in one 400-phase task it grows to ~300 KB;
//! - for reference, baton on the 400-phase workflow in a folder outside git
//!   (no checkpoints), which shows git's share.
//!
//! `ROUNDS` rounds, the order of the sides rotating, so a slow moment of
//! the machine does not land on one side only; figures are medians, the
//! ratio the median of the per-round ratios. Then, untimed, one more run
//! under `strace -f` counts the processes baton starts per phase (and the
//! fsyncs it and they do).

mod common;

use common::{git_env, load_average, median, tempdir, workflow_toml};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BATON: &str = env!("CARGO_BIN_EXE_baton");
const PHASES: usize = 400;
const FILES: usize = 1_000;
const ROUNDS: usize = 5;
/// The same phases split into this many tasks (workflow `small`).
const TASKS: usize = 20;
/// The ratio the issue asks for.
const GOAL: f64 = 2.0;

/// A project folder (`baton init` done, workflow `w` written and, in git,
/// committed), run with a hermetic environment.
struct Project {
    dir: tempfile::TempDir,
    root: PathBuf,
    home: PathBuf,
}

impl Project {
    /// In a git repository of `FILES` tracked files (in 20 folders), or in
    /// a plain folder outside any git work tree.
    fn new(git: bool) -> Project {
        let dir = tempdir();
        let root = dir.path().join("project");
        let home = dir.path().join("home");
        std::fs::create_dir_all(&root).expect("mkdir project");
        std::fs::create_dir_all(&home).expect("mkdir home");
        let p = Project { dir, root, home };
        if git {
            p.git(&["init", "-q", "-b", "main"]);
            for i in 0..FILES {
                let folder = p.root.join(format!("src/m{:02}", i % 20));
                std::fs::create_dir_all(&folder).expect("mkdir");
                std::fs::write(
                    folder.join(format!("f{i:04}.rs")),
                    format!("// file {i}\npub fn f{i}() -> usize {{ {i} }}\n"),
                )
                .expect("write file");
            }
            p.git(&["add", "-A"]);
            p.git(&["commit", "-qm", "1,000 files"]);
        }
        p.baton_ok(&["init"]);
        std::fs::write(
            p.root.join(".baton/workflows/w.toml"),
            workflow_toml("w", PHASES),
        )
        .expect("workflow");
        std::fs::write(
            p.root.join(".baton/workflows/small.toml"),
            workflow_toml("small", PHASES / TASKS),
        )
        .expect("workflow");
        if git {
            p.git(&["add", "-A"]);
            p.git(&["commit", "-qm", "baton"]);
            let tracked = p.git_out(&["ls-files"]).lines().count();
            assert!(tracked >= FILES, "{tracked} files tracked");
        }
        p
    }

    fn env<'a>(&self, c: &'a mut Command) -> &'a mut Command {
        git_env(c)
            .current_dir(&self.root)
            .env("HOME", &self.home)
            .env("NO_COLOR", "1")
            .env_remove("BATON_PROJECT")
            .env_remove("BATON_TEST_CRASH_AT")
            .env_remove("BATON_LOG")
            .env_remove("BATON_HOST")
            .env_remove("BATON_DATABASE_URL")
            .stdin(Stdio::null())
    }

    fn git(&self, args: &[&str]) {
        common::git_ok(self.env(&mut Command::new("git")).args(args), args);
    }

    fn git_out(&self, args: &[&str]) -> String {
        let out = self
            .env(&mut Command::new("git"))
            .args(args)
            .output()
            .expect("spawn git");
        assert!(out.status.success(), "git {args:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn baton_ok(&self, args: &[&str]) {
        let out = self
            .env(&mut Command::new(BATON))
            .args(args)
            .output()
            .expect("spawn baton");
        assert!(
            out.status.success(),
            "baton {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// `baton run w bench --id ID`: wall time per phase.
    fn run(&self, id: &str) -> Duration {
        let started = Instant::now();
        self.baton_ok(&["run", "w", "bench", "--id", id]);
        started.elapsed() / PHASES as u32
    }

    /// `TASKS` runs of workflow `small` one after the other: wall time per
    /// phase.
    fn run_small(&self, id: &str) -> Duration {
        let started = Instant::now();
        for t in 0..TASKS {
            self.baton_ok(&["run", "small", "bench", "--id", &format!("{id}-{t:02}")]);
        }
        started.elapsed() / PHASES as u32
    }
}

// ----- the least durable orchestrator --------------------------------------

/// What one phase must cost at least: its process, and two durable
/// transitions.
struct LeastDurable {
    conn: rusqlite::Connection,
    dir: PathBuf,
    state: PathBuf,
    seq: u64,
}

impl LeastDurable {
    fn new(dir: &Path) -> LeastDurable {
        let conn = rusqlite::Connection::open(dir.join("journal.db")).expect("open journal");
        let mode: String = conn
            .query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))
            .expect("wal");
        assert_eq!(mode, "wal");
        conn.execute_batch(
            "PRAGMA synchronous=FULL;
             CREATE TABLE journal (id INTEGER PRIMARY KEY, task TEXT NOT NULL,
                                   seq INTEGER NOT NULL, event TEXT NOT NULL);",
        )
        .expect("journal table");
        LeastDurable {
            conn,
            dir: dir.to_path_buf(),
            state: dir.join("state.json"),
            seq: 0,
        }
    }

    /// One journal row in its own transaction, then the state file.
    fn transition(&mut self, phase: usize, kind: &str) {
        self.seq += 1;
        let event = format!(
            "{{\"kind\":\"{kind}\",\"phase\":\"p{phase:04}\",\"seq\":{},\"at\":\"2025-01-01T00:00:00Z\",\"detail\":\"{}\"}}",
            self.seq,
            "x".repeat(100)
        );
        let tx = self.conn.unchecked_transaction().expect("begin");
        tx.prepare_cached("INSERT INTO journal (task, seq, event) VALUES ('bench', ?1, ?2)")
            .expect("prepare")
            .execute(rusqlite::params![self.seq as i64, event])
            .expect("insert");
        tx.commit().expect("commit");
        let mut doc = format!(
            "{{\n  \"task\": \"bench\",\n  \"seq\": {},\n  \"phase\": \"p{phase:04}\",\n  \"status\": \"{kind}\",\n  \"pad\": \"",
            self.seq
        );
        while doc.len() < 2040 {
            doc.push('.');
        }
        doc.push_str("\"\n}\n");
        self.write_state(doc.as_bytes());
    }

    /// Temp file, fsync, rename, fsync of the folder.
    fn write_state(&self, bytes: &[u8]) {
        let tmp = self.dir.join(".state.json.tmp");
        let mut f = std::fs::File::create(&tmp).expect("create temp");
        f.write_all(bytes).expect("write temp");
        f.sync_all().expect("fsync temp");
        drop(f);
        std::fs::rename(&tmp, &self.state).expect("rename");
        std::fs::File::open(&self.dir)
            .and_then(|d| d.sync_all())
            .expect("fsync folder");
    }

    /// Wall time per phase over `PHASES` phases.
    fn run(&mut self) -> Duration {
        let started = Instant::now();
        for i in 0..PHASES {
            self.transition(i, "phase_started");
            let status = in_own_session(Command::new("true").stdin(Stdio::null()))
                .status()
                .expect("spawn true");
            assert!(status.success());
            self.transition(i, "phase_passed");
        }
        started.elapsed() / PHASES as u32
    }
}

#[expect(
    unsafe_code,
    reason = "setsid() between fork and exec is async-signal-safe; the phase process gets its own session as baton's do"
)]
fn in_own_session(cmd: &mut Command) -> &mut Command {
    use std::os::unix::process::CommandExt;
    // SAFETY: the closure only calls setsid(2), which is async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            nix::unistd::setsid()
                .map(|_| ())
                .map_err(std::io::Error::from)
        })
    }
}

// ----- child processes ------------------------------------------------------

/// The processes a `baton run` of the workflow starts (children and their
/// children), counted with `strace -f` in a run of its own: every process
/// that successfully executed a program, named by its first program
/// (`git` with its subcommand). A pid counts again once its process has
/// exited (pids are reused). `None` without strace.
fn child_processes(p: &Project, id: &str) -> Option<(Vec<(String, usize)>, usize)> {
    let trace = p.dir.path().join("strace.txt");
    let out = p
        .env(&mut Command::new("strace"))
        .args(["-f", "-q", "-e", "trace=execve,fsync,fdatasync"])
        .args(["-e", "signal=none"])
        .args(["-s", "48", "-o"])
        .arg(&trace)
        .args([BATON, "run", "w", "bench", "--id", id])
        .output()
        .ok()?;
    assert!(
        out.status.success(),
        "baton under strace: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&trace).expect("strace output");
    // pid -> the program of its pending execve; the pids whose process has
    // already been counted (until it exits).
    let mut pending: std::collections::HashMap<&str, String> = Default::default();
    let mut counted: std::collections::HashSet<&str> = Default::default();
    let mut counts: std::collections::BTreeMap<String, usize> = Default::default();
    let mut root = None;
    let mut syncs = 0;
    for line in text.lines() {
        let Some((pid, rest)) = line.split_once(' ') else {
            continue;
        };
        let rest = rest.trim_start();
        if rest.starts_with("fsync(") || rest.starts_with("fdatasync(") {
            syncs += 1;
            continue;
        }
        if rest.starts_with("+++ exited") || rest.starts_with("+++ killed") {
            counted.remove(pid);
            continue;
        }
        if let Some(args) = rest.strip_prefix("execve(") {
            pending.insert(pid, program_of(args));
        }
        if rest.contains("execve") && rest.trim_end().ends_with("= 0") {
            if *root.get_or_insert(pid) == pid || !counted.insert(pid) {
                continue;
            }
            let name = pending.get(pid).cloned().unwrap_or_else(|| "?".into());
            *counts.entry(name).or_default() += 1;
        }
    }
    let mut v: Vec<(String, usize)> = counts.into_iter().collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    Some((v, syncs))
}

/// `"/usr/bin/git", ["git", "add", ...` → `git add`; else the program's name.
fn program_of(args: &str) -> String {
    let quoted: Vec<&str> = args.split('"').skip(1).step_by(2).take(3).collect();
    let name = quoted
        .first()
        .map(|p| p.rsplit('/').next().unwrap_or(p))
        .unwrap_or("?");
    match (name, quoted.get(2)) {
        ("git", Some(sub)) => format!("git {sub}"),
        _ => name.to_string(),
    }
}

// ----- main -----------------------------------------------------------------

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn main() {
    let total = Instant::now();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let load_start = load_average();

    eprintln!("[1/3] a git repository of {FILES} tracked files, and a folder outside git…");
    let repo = Project::new(true);
    let plain = Project::new(false);
    let base_dir = tempdir();

    eprintln!(
        "[2/3] {ROUNDS} rounds of {PHASES} phases: baton in git (1 task, then {TASKS} tasks), least durable, baton outside git…"
    );
    let (mut baton, mut small, mut least, mut nogit) = (vec![], vec![], vec![], vec![]);
    let (mut ratios, mut small_ratios) = (vec![], vec![]);
    for round in 0..ROUNDS {
        let sub = base_dir.path().join(format!("round{round}"));
        std::fs::create_dir_all(&sub).expect("mkdir");
        let id = format!("r{round}");
        let (mut b, mut s, mut l, mut n) = (None, None, None, None);
        for side in 0..4 {
            match (side + round) % 4 {
                0 => b = Some(repo.run(&id)),
                1 => l = Some(LeastDurable::new(&sub).run()),
                2 => s = Some(repo.run_small(&id)),
                _ => n = Some(plain.run(&id)),
            }
        }
        let [b, s, l, n] = [b, s, l, n].map(|d| ms(d.expect("every side ran")));
        eprintln!(
            "      round {}: baton {b:.2} ms/phase ({TASKS} tasks: {s:.2}), least durable {l:.2}, ratio {:.2} ({:.2}); outside git {n:.2}",
            round + 1,
            b / l,
            s / l
        );
        baton.push(b);
        small.push(s);
        least.push(l);
        nogit.push(n);
        ratios.push(b / l);
        small_ratios.push(s / l);
    }

    eprintln!("[3/3] child processes per phase: one more run under strace -f…");
    let children = child_processes(&repo, "counted");

    let ratio = median(ratios.clone());
    let small_ratio = median(small_ratios.clone());
    let verdict = |r: f64| if r <= GOAL { "ok" } else { "MISSED" };
    let list = |v: &[f64]| {
        v.iter()
            .map(|x| format!("{x:.2}"))
            .collect::<Vec<_>>()
            .join(" / ")
    };
    println!();
    println!("baton per-phase benchmark (same machine, same run)");
    println!("machine: {cores} cores, load average at start {load_start}");
    println!(
        "{PHASES} `run = \"true\"` phases through `baton run` (SQLite, FULL) in a git repository of {FILES} tracked files; medians of {ROUNDS} rounds"
    );
    println!(
        "least durable, per phase:          {:>6.2} ms   (spawn `true` in its own session and wait; 2 x [one-row FULL commit + atomic 2 KB state file]; rounds {})",
        median(least.clone()),
        list(&least)
    );
    println!(
        "baton, one task of {PHASES} phases:     {:>6.2} ms   (wall time of `baton run` / {PHASES}; rounds {})",
        median(baton.clone()),
        list(&baton)
    );
    println!(
        "  ratio baton / least durable:     {ratio:>6.2}      (median of per-round ratios {}; goal <= {GOAL}: {})",
        list(&ratios),
        verdict(ratio)
    );
    println!(
        "baton, {TASKS} tasks of {} phases:      {:>6.2} ms   (wall time of {TASKS} `baton run`s / {PHASES}; rounds {})",
        PHASES / TASKS,
        median(small.clone()),
        list(&small)
    );
    println!(
        "  ratio baton / least durable:     {small_ratio:>6.2}      (median of per-round ratios {}; goal <= {GOAL}: {})",
        list(&small_ratios),
        verdict(small_ratio)
    );
    println!(
        "baton outside git, one task:       {:>6.2} ms   (the {PHASES}-phase task, no checkpoints: git's share is the difference; rounds {})",
        median(nogit.clone()),
        list(&nogit)
    );
    match children {
        Some((counts, syncs)) => {
            let all: usize = counts.iter().map(|(_, n)| n).sum();
            let per = |n: usize| n as f64 / PHASES as f64;
            let parts: Vec<String> = counts
                .iter()
                .map(|(name, n)| format!("{name} {n}"))
                .collect();
            println!(
                "child processes per phase:         {:>6.2}      ({all} in a {PHASES}-phase run under `strace -f`, untimed: every process that executed a program, by program: {})",
                per(all),
                parts.join(", ")
            );
            println!(
                "fsyncs per phase:                  {:>6.2}      (fsync + fdatasync by baton and its children in that run; least durable: about 6, one per commit and two per state file)",
                per(syncs)
            );
        }
        None => println!(
            "child processes per phase:         not counted (strace is not installed: `apt-get install strace`)"
        ),
    }
    println!("load average at end {}", load_average());
    println!("total bench time {:.0}s", total.elapsed().as_secs_f64());
}
