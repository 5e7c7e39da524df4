//! Agent benchmark: what baton adds to one agent phase, next to the agent
//! CLI's own start-up and one model turn.
//!
//! `cargo bench -p baton-cli --bench agents`
//!
//! Needs the real CLIs, as `./scripts/test` installs them
//! (`BATON_AGENT_CLIS`, and `BATON_AGENT_CLIS_CACHE` for OpenCode); they
//! run offline against the testkit's scripted model server, whose every
//! turn here is the text "done". For each of the seven built-in adapters,
//! in one git project per CLI (`baton init`, the workflow committed), with
//! one config home the two sides share:
//!
//! - CLI alone: the CLI run directly as the testkit runs it
//!   (`Run::command`: same arguments, environment and working folder as
//!   baton gives it, a chosen session id where the CLI takes one, stdin
//!   closed, stdout and stderr captured);
//! - via baton: `baton run w bench --id tN`, a workflow of one prompt phase
//!   on the built-in adapter (`[agents.bench] cli = "NAME"`), the same
//!   prompt; wall time from spawning `baton` to its exit.
//!
//! One warm-up of each side, then `RUNS` rounds, alternating which side
//! goes first; every figure is a median over the rounds. baton's overhead
//! is the difference of the two medians, so it carries the CLI's own noise
//! (the spread of the CLI alone is printed next to it); "baton's own" is,
//! per round, the run through baton less the CLI's own time inside it (see
//! below), which that noise does not reach.
//!
//! Where the time goes under baton: the agent's PATH (its
//! `[agents.bench.env]`) starts with a folder holding a bash wrapper named
//! like the CLI that stamps the time (`$EPOCHREALTIME`) just before it
//! runs the real CLI and just after it exits; baton's journal
//! (`baton log --json`, whole milliseconds) stamps `phase_started`,
//! `phase_process` (the process is spawned, held at baton's gate, and its
//! pid journaled), `phase_passed` and `task_completed`. Together with the
//! bench's own clock around the `baton` process, one run splits into:
//! before spawn (start-up → `phase_process`), launch (gate released →
//! the wrapper runs the CLI: an `sh` exec and the wrapper's own bash
//! start), the CLI under baton, and after exit (CLI exit → `baton` exited);
//! the journal splits before spawn and after exit further.
//! The wrapper's own cost is measured in the same run and printed; it is
//! inside "via baton", not inside "CLI alone".
//!
//! The floor: a `run = "true"` command phase through baton against
//! `sh -c true` run directly, the same splits from the journal.
//!
//! `BATON_BENCH_AGENTS=claude,codex` runs only those CLIs (and the floor).

mod common;

use baton_testkit::agents::{Agent, PINNED, Run};
use baton_testkit::model_server::{ModelServer, Reply};
use common::{git_env, load_average, median};
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

const BATON: &str = env!("CARGO_BIN_EXE_baton");
/// Measured rounds per CLI, after one warm-up round.
const RUNS: usize = 5;
/// Runs of the wrapper (and of what it wraps) to measure its own cost.
const WRAPPER_RUNS: usize = 21;
const PROMPT: &str = "Say done.";
const AGENTS: [Agent; 7] = Agent::ALL;

/// Wall-clock time in microseconds since the epoch: the clock of the
/// journal's timestamps and of bash's `$EPOCHREALTIME`.
fn now_us() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock after 1970")
        .as_micros() as i64
}

/// A random (version 4) UUID, for the session id baton would choose.
fn uuid() -> String {
    let mut b = [0u8; 16];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut b))
        .expect("/dev/urandom");
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

/// A git repository with `.baton/` initialised, run with a hermetic
/// environment (like the testkit's).
struct BenchProject {
    dir: tempfile::TempDir,
    root: PathBuf,
    home: PathBuf,
}

impl BenchProject {
    fn new() -> BenchProject {
        let dir = tempfile::Builder::new()
            .prefix("baton-bench-agents-")
            .tempdir()
            .expect("tempdir");
        let root = dir.path().join("project");
        let home = dir.path().join("home");
        std::fs::create_dir_all(&root).expect("mkdir project");
        std::fs::create_dir_all(&home).expect("mkdir home");
        let p = BenchProject { dir, root, home };
        p.git(&["init", "-q", "-b", "main"]);
        std::fs::write(p.root.join("README.md"), "# bench project\n").expect("README");
        p.git(&["add", "."]);
        p.git(&["commit", "-qm", "initial"]);
        let out = p.baton(&["init"]).output().expect("spawn baton");
        assert!(
            out.status.success(),
            "baton init: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        p
    }

    /// Appends `config_extra` to `.baton/config.toml`, writes `workflow` as
    /// workflow `w`, and commits both.
    fn configure(&self, config_extra: &str, workflow: &str) {
        let cfg = self.root.join(".baton/config.toml");
        let mut text = std::fs::read_to_string(&cfg).expect("config.toml");
        text.push_str(config_extra);
        std::fs::write(&cfg, text).expect("config.toml");
        std::fs::write(self.root.join(".baton/workflows/w.toml"), workflow).expect("workflow");
        self.git(&["add", "-A"]);
        self.git(&["commit", "-qm", "workflow"]);
    }

    /// A folder of its own next to the project (config homes, wrappers).
    fn side_dir(&self, name: &str) -> PathBuf {
        let d = self.dir.path().join(name);
        std::fs::create_dir_all(&d).expect("mkdir");
        d
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

    fn baton(&self, args: &[&str]) -> Command {
        let mut c = Command::new(BATON);
        self.env(&mut c).args(args);
        c
    }

    /// `baton run w bench --id ID`, timed from spawning `baton` to its exit,
    /// with the journal's timestamps of that task.
    fn run_task(&self, id: &str) -> TaskRun {
        let t0 = now_us();
        let started = Instant::now();
        let out = self
            .baton(&["run", "w", "bench", "--id", id])
            .output()
            .expect("spawn baton");
        let wall_us = started.elapsed().as_micros() as i64;
        assert!(
            out.status.success(),
            "baton run --id {id}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let log = self
            .baton(&["log", id, "--json"])
            .output()
            .expect("spawn baton log");
        assert!(log.status.success(), "baton log {id}");
        let mut stamps = Journal::default();
        for line in String::from_utf8_lossy(&log.stdout).lines() {
            let e: serde_json::Value = serde_json::from_str(line).expect("log --json line");
            let ts = e["ts"]
                .as_str()
                .and_then(|t| t.parse::<jiff::Timestamp>().ok())
                .map(|t| t.as_microsecond())
                .expect("log --json: ts");
            let slot = match e["kind"].as_str().unwrap_or("") {
                "phase_started" => &mut stamps.phase_started,
                "phase_process" => &mut stamps.phase_process,
                "phase_passed" => &mut stamps.phase_passed,
                "task_completed" => &mut stamps.task_completed,
                _ => continue,
            };
            slot.get_or_insert(ts);
        }
        TaskRun {
            t0,
            end: t0 + wall_us,
            wall_us,
            journal: stamps,
        }
    }
}

/// Journal timestamps of one task, µs since the epoch (whole ms).
#[derive(Debug, Default, Clone, Copy)]
struct Journal {
    phase_started: Option<i64>,
    phase_process: Option<i64>,
    phase_passed: Option<i64>,
    task_completed: Option<i64>,
}

#[derive(Debug, Clone, Copy)]
struct TaskRun {
    /// When `baton` was spawned, and when it had exited (µs since epoch).
    t0: i64,
    end: i64,
    wall_us: i64,
    journal: Journal,
}

/// The bash wrapper named `program` in `dir`: runs `real` with its
/// arguments and writes "START END" (`$EPOCHREALTIME`) to `stamps`.
fn write_wrapper(dir: &Path, program: &str, real: &Path, stamps: &Path) -> PathBuf {
    let path = dir.join(program);
    std::fs::write(
        &path,
        format!(
            "#!/bin/bash\nstart=$EPOCHREALTIME\n'{}' \"$@\"\nrc=$?\nend=$EPOCHREALTIME\necho \"$start $end\" > '{}'\nexit $rc\n",
            real.display(),
            stamps.display()
        ),
    )
    .expect("wrapper");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    path
}

/// The wrapper's "START END", in µs since the epoch.
fn read_stamps(stamps: &Path) -> (i64, i64) {
    let text = std::fs::read_to_string(stamps).expect("the wrapper's stamps");
    let us = |s: &str| -> i64 {
        let (secs, frac) = s
            .split_once(['.', ','])
            .expect("$EPOCHREALTIME has a fraction");
        let frac = format!("{frac:0<6}");
        secs.parse::<i64>().expect("seconds") * 1_000_000
            + frac[..6].parse::<i64>().expect("microseconds")
    };
    let mut w = text.split_whitespace();
    let start = us(w.next().expect("start stamp"));
    let end = us(w.next().expect("end stamp"));
    (start, end)
}

fn ms(us: i64) -> f64 {
    us as f64 / 1000.0
}

/// One round's figures of one CLI, ms.
#[derive(Debug, Clone, Copy)]
struct Round {
    alone: f64,
    via: f64,
    /// `baton` spawned → `phase_process` journaled.
    before: f64,
    /// `phase_process` → the wrapper starts the CLI (gate release, exec,
    /// the wrapper's bash start). The floor: none.
    launch: Option<f64>,
    /// The CLI under baton (wrapper start → exit). The floor: none.
    cli: Option<f64>,
    /// CLI exit → `baton` exited. The floor: `phase_process` → exited.
    after: f64,
    /// `baton` spawned → `phase_started`.
    to_started: f64,
    /// `phase_started` → `phase_process`.
    to_process: f64,
    /// CLI exit (the floor: `phase_process`) → `phase_passed`.
    to_passed: f64,
    /// `phase_passed` → `task_completed`.
    to_completed: f64,
    /// `task_completed` → `baton` exited.
    to_exit: f64,
    /// Model turns the CLI took alone, and under baton.
    turns_alone: usize,
    turns_via: usize,
}

struct Row {
    name: String,
    rounds: Vec<Round>,
}

impl Row {
    fn med(&self, f: impl Fn(&Round) -> f64) -> f64 {
        median(self.rounds.iter().map(f).collect())
    }
    fn spread_alone(&self) -> (f64, f64) {
        let v: Vec<f64> = self.rounds.iter().map(|r| r.alone).collect();
        (
            v.iter().copied().fold(f64::INFINITY, f64::min),
            v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        )
    }
}

fn journal_splits(run: &TaskRun, exit_at: i64) -> (f64, f64, f64, f64, f64) {
    let j = run.journal;
    let get = |v: Option<i64>, what: &str| v.unwrap_or_else(|| panic!("no {what} in the journal"));
    let started = get(j.phase_started, "phase_started");
    let process = get(j.phase_process, "phase_process");
    let passed = get(j.phase_passed, "phase_passed");
    let completed = get(j.task_completed, "task_completed");
    (
        ms(started - run.t0),
        ms(process - started),
        ms(passed - exit_at),
        ms(completed - passed),
        ms(run.end - completed),
    )
}

/// One CLI: direct runs against runs through baton, interleaved.
fn bench_agent(agent: Agent) -> Row {
    let program = agent.program();
    let server = ModelServer::start(vec![Reply::text("done")]);
    // The config home (shared by both sides) and the wrapper's folder sit
    // next to the project.
    let project = BenchProject::new();
    let home = project.side_dir("agent-home");
    let wrap_dir = project.side_dir("wrap");
    let stamps = project.side_dir("stamps").join("stamps");
    write_wrapper(&wrap_dir, program, &agent.bin(), &stamps);
    // baton's built-in adapter, its PATH starting with the wrapper.
    let table: String = agent
        .baton_config("bench", &server, &home)
        .lines()
        .map(|l| match l.strip_prefix("PATH = '") {
            Some(rest) => format!("PATH = '{}:{rest}\n", wrap_dir.display()),
            None => format!("{l}\n"),
        })
        .collect();
    assert!(table.contains(&format!("PATH = '{}:", wrap_dir.display())));
    project.configure(
        &table,
        &format!(
            "name = \"w\"\n[[phase]]\nid = \"answer\"\nagent = \"bench\"\nmax_attempts = 1\nprompt = \"{PROMPT}\"\n"
        ),
    );

    let chooses_session = matches!(
        agent,
        Agent::Claude | Agent::Gemini | Agent::Qwen | Agent::Copilot
    );
    let direct = || -> (f64, usize) {
        let run = Run {
            agent,
            server: &server,
            workdir: &project.root,
            home: &home,
        };
        let session = chooses_session.then(uuid);
        let mut c = run.command(PROMPT, session.as_deref(), None);
        git_env(&mut c)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let turns = server.turns_taken();
        let started = Instant::now();
        let out = c.output().expect("spawn the CLI");
        let took = started.elapsed().as_micros() as i64;
        assert!(
            out.status.success() && !out.stdout.is_empty(),
            "{program} alone: {}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        (ms(took), server.turns_taken() - turns)
    };
    let mut task = 0;
    let mut via = || -> (TaskRun, (i64, i64), usize) {
        let _ = std::fs::remove_file(&stamps);
        let turns = server.turns_taken();
        task += 1;
        let run = project.run_task(&format!("t{task}"));
        (run, read_stamps(&stamps), server.turns_taken() - turns)
    };

    // Warm-up: first starts fill caches (page cache, the CLIs' own).
    direct();
    via();
    let mut rounds = Vec::new();
    for round in 0..RUNS {
        let ((alone, turns_alone), (run, (cli_start, cli_end), turns_via)) = if round % 2 == 0 {
            let a = direct();
            (a, via())
        } else {
            let v = via();
            (direct(), v)
        };
        let process = run.journal.phase_process.expect("phase_process");
        let (to_started, to_process, to_passed, to_completed, to_exit) =
            journal_splits(&run, cli_end);
        rounds.push(Round {
            alone,
            via: ms(run.wall_us),
            before: ms(process - run.t0),
            launch: Some(ms(cli_start - process)),
            cli: Some(ms(cli_end - cli_start)),
            after: ms(run.end - cli_end),
            to_started,
            to_process,
            to_passed,
            to_completed,
            to_exit,
            turns_alone,
            turns_via,
        });
    }
    Row {
        name: program.to_string(),
        rounds,
    }
}

/// The floor: a `run = "true"` phase through baton against `sh -c true`.
fn bench_floor() -> Row {
    let project = BenchProject::new();
    project.configure(
        "",
        "name = \"w\"\n[[phase]]\nid = \"floor\"\nrun = \"true\"\nmax_attempts = 1\n",
    );
    let direct = || {
        let started = Instant::now();
        let out = Command::new("sh")
            .args(["-c", "true"])
            .stdin(Stdio::null())
            .output()
            .expect("spawn sh");
        assert!(out.status.success());
        ms(started.elapsed().as_micros() as i64)
    };
    let mut task = 0;
    let mut via = || {
        task += 1;
        project.run_task(&format!("f{task}"))
    };
    direct();
    via();
    let mut rounds = Vec::new();
    for round in 0..RUNS {
        let (alone, run) = if round % 2 == 0 {
            let a = direct();
            (a, via())
        } else {
            let v = via();
            (direct(), v)
        };
        let process = run.journal.phase_process.expect("phase_process");
        let (to_started, to_process, to_passed, to_completed, to_exit) =
            journal_splits(&run, process);
        rounds.push(Round {
            alone,
            via: ms(run.wall_us),
            before: ms(process - run.t0),
            launch: None,
            cli: None,
            after: ms(run.end - process),
            to_started,
            to_process,
            to_passed,
            to_completed,
            to_exit,
            turns_alone: 0,
            turns_via: 0,
        });
    }
    Row {
        name: "run = \"true\"".into(),
        rounds,
    }
}

/// What the stamping wrapper itself adds: a wrapper around /bin/true
/// against /bin/true, medians of `WRAPPER_RUNS`.
fn wrapper_cost() -> f64 {
    let dir = tempfile::Builder::new()
        .prefix("baton-bench-wrapper-")
        .tempdir()
        .expect("tempdir");
    let stamps = dir.path().join("stamps");
    let wrapper = write_wrapper(dir.path(), "wrapped-true", Path::new("/bin/true"), &stamps);
    let time = |p: &Path| {
        let started = Instant::now();
        let st = Command::new(p)
            .stdin(Stdio::null())
            .status()
            .expect("spawn");
        assert!(st.success());
        ms(started.elapsed().as_micros() as i64)
    };
    let (mut bare, mut wrapped) = (Vec::new(), Vec::new());
    for _ in 0..WRAPPER_RUNS {
        bare.push(time(Path::new("/bin/true")));
        wrapped.push(time(&wrapper));
    }
    median(wrapped) - median(bare)
}

fn print_rows(rows: &[Row], wrapper: f64) {
    let head = |c: [&str; 11]| {
        println!(
            "  {:<12} | {:>9} | {:>9} | {:>8} | {:>8} | {:>11} | {:>8} | {:>6} | {:>7} | {:>9} | {:>11}",
            c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7], c[8], c[9], c[10]
        )
    };
    head([
        "cli",
        "CLI alone",
        "via baton",
        "overhead",
        "overhead",
        "baton's own",
        "before",
        "launch",
        "after",
        "CLI under",
        "CLI alone",
    ]);
    head([
        "",
        "median ms",
        "median ms",
        "ms",
        "%",
        "stamped ms",
        "spawn ms",
        "ms",
        "exit ms",
        "baton ms",
        "min-max ms",
    ]);
    for r in rows {
        let alone = r.med(|x| x.alone);
        let via = r.med(|x| x.via);
        let (lo, hi) = r.spread_alone();
        let opt = |f: fn(&Round) -> Option<f64>, digits: usize| {
            if r.rounds.iter().all(|x| f(x).is_some()) {
                format!("{:.*}", digits, r.med(|x| f(x).unwrap_or(0.0)))
            } else {
                "-".to_string()
            }
        };
        let agent = r.rounds.iter().all(|x| x.cli.is_some());
        let percent = if agent {
            format!("{:.1}%", (via - alone) / alone * 100.0)
        } else {
            "-".to_string()
        };
        let digits = if hi < 100.0 { 1 } else { 0 };
        println!(
            "  {:<12} | {:>9.1} | {:>9.1} | {:>8.1} | {:>8} | {:>11.1} | {:>8.1} | {:>6} | {:>7.1} | {:>9} | {:>11}",
            r.name,
            alone,
            via,
            via - alone,
            percent,
            r.med(|x| x.via - x.cli.unwrap_or(x.alone)),
            r.med(|x| x.before),
            opt(|x| x.launch, 1),
            r.med(|x| x.after),
            opt(|x| x.cli, 0),
            format!("{lo:.digits$}-{hi:.digits$}"),
        );
    }
    println!(
        "  (medians of {RUNS} rounds after 1 warm-up, the two sides alternating which goes first. overhead = via baton - CLI alone,"
    );
    println!(
        "   medians of different runs, so it carries the CLI's own run-to-run noise (min-max): on the slow CLIs it can come out"
    );
    println!(
        "   negative. baton's own = via baton - CLI under baton, per round: what baton adds around the CLI, free of that noise,"
    );
    println!(
        "   = before spawn + launch + after exit. before spawn = `baton` spawned -> the phase process spawned at baton's gate and"
    );
    println!(
        "   its pid journaled (process start, config, store open, task created and claimed, git checkpoint, phase_started, prompt"
    );
    println!(
        "   file, agent_session); launch = gate released -> the wrapper starts the CLI (an sh exec and the stamping wrapper's bash"
    );
    println!(
        "   start: {wrapper:.1} ms of it is the wrapper, measured in this run); CLI under baton = the wrapper's stamps around the real"
    );
    println!(
        "   CLI (stdout to a file, not a pipe); after exit = CLI exit -> `baton` exited (exit noticed, stream read and judged,"
    );
    println!(
        "   summary, git snapshot, phase_passed, output rendered, task_completed, state.json, process exit). Floor row: CLI alone"
    );
    println!(
        "   = `sh -c true` spawned directly; no wrapper, so after exit counts from phase_process and holds the gate and `true`.)"
    );
    println!();
    println!("where baton's own time goes (medians, ms; journal stamps are whole milliseconds):");
    println!(
        "  {:<12} | {:>22} | {:>22} | {:>22} | {:>22} | {:>20}",
        "cli",
        "start-up -> started",
        "started -> process",
        "CLI exit -> passed",
        "passed -> completed",
        "completed -> exited"
    );
    for r in rows {
        println!(
            "  {:<12} | {:>22.0} | {:>22.0} | {:>22.0} | {:>22.0} | {:>20.0}",
            r.name,
            r.med(|x| x.to_started),
            r.med(|x| x.to_process),
            r.med(|x| x.to_passed),
            r.med(|x| x.to_completed),
            r.med(|x| x.to_exit),
        );
    }
    println!(
        "  (start-up -> started: baton's start, config, store, task created + claimed, checkpoint; started -> process: prompt"
    );
    println!(
        "   rendered, session journaled, spawn at the gate, pid journaled; CLI exit -> passed: exit noticed, stream judged, git"
    );
    println!(
        "   snapshot, phase_passed committed (floor: from phase_process, so it holds the gate and `true`); passed -> completed:"
    );
    println!(
        "   phase output rendered, next step decided; completed -> exited: state.json, lease release, process exit)"
    );
    for r in rows {
        let alone: Vec<usize> = r.rounds.iter().map(|x| x.turns_alone).collect();
        let via: Vec<usize> = r.rounds.iter().map(|x| x.turns_via).collect();
        if alone != via {
            println!(
                "  NOTE {}: model turns per round differ, alone {alone:?} vs via baton {via:?}: the two sides did not do the same work",
                r.name
            );
        }
    }
}

fn main() {
    let total = Instant::now();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let load = load_average();
    let only = std::env::var("BATON_BENCH_AGENTS").unwrap_or_default();
    let agents: Vec<Agent> = AGENTS
        .into_iter()
        .filter(|a| only.is_empty() || only.split(',').any(|n| n.trim() == a.program()))
        .collect();
    assert!(
        !agents.is_empty(),
        "BATON_BENCH_AGENTS={only:?} names none of claude, codex, gemini, qwen, opencode, copilot, droid"
    );
    let steps = agents.len() + 2;
    eprintln!("[1/{steps}] the stamping wrapper's own cost…");
    let wrapper = wrapper_cost();
    let mut rows = Vec::new();
    for (i, agent) in agents.iter().enumerate() {
        eprintln!(
            "[{}/{steps}] {}: {RUNS} rounds of the CLI alone and via `baton run`…",
            i + 2,
            agent.program()
        );
        let started = Instant::now();
        rows.push(bench_agent(*agent));
        eprintln!("      {:.0}s", started.elapsed().as_secs_f64());
    }
    eprintln!("[{steps}/{steps}] the floor: a `run = \"true\"` phase…");
    rows.push(bench_floor());

    println!();
    println!("baton agent-phase benchmark (same machine, same run)");
    println!(
        "machine: {cores} cores, load average at start {load}; CLIs: {}",
        PINNED
            .iter()
            .map(|(p, v)| format!("{p}@{v}"))
            .collect::<Vec<_>>()
            .join(" ")
    );
    println!(
        "one prompt phase, one model turn (scripted server on 127.0.0.1 answers \"done\"; the phase changes no file), git project, SQLite store (FULL):"
    );
    print_rows(&rows, wrapper);
    println!("load average at end {}", load_average());
    println!("total bench time {:.0}s", total.elapsed().as_secs_f64());
}
