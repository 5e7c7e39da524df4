//! Scale benchmark: the PostgreSQL backend and `baton worker`.
//!
//! `cargo bench -p baton-cli --bench scale`
//!
//! A private PostgreSQL cluster (`baton_testkit::PgCluster`, server
//! defaults: `fsync = on`, `synchronous_commit = on`) serves both parts.
//! Every figure is set against a baseline taken in the same run on the same
//! machine, because absolute numbers on a shared 2-core VM are noise:
//!
//! 1. durable transitions/s through `PgStore::commit` (driven exactly as
//!    `Engine::commit` drives it) vs raw single-row INSERT transactions (one
//!    200-byte row each, autocommit, prepared) on the same server and
//!    database; then what each transaction costs on either side, so a
//!    reader sees what dominates: the round-trip time (`SELECT 1`), round
//!    trips counted by a relay between client and server, client and
//!    server-backend CPU (`/proc`), and WAL bytes;
//! 2. task throughput of 1, 2, 4 and 8 `baton worker --until-idle`
//!    processes (one slot each) on 200 queued two-phase tasks, each count
//!    on a fresh database and a fresh git project, as a speed-up over one
//!    worker, with the CPU per task of baton, of what it runs (git, sh) and
//!    of the server, and how busy the machine was.
//!
//! `BATON_BENCH_PART=store` (or `workers`) runs one part only.

mod common;

use baton_store::PgStore;
use common::{Driver, claim, median, parse_workflow, pass, start, text, workflow_toml};
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const BATON: &str = env!("CARGO_BIN_EXE_baton");
/// Transactions per store-throughput run (1,000 phases × Start + Pass).
const N_TX: usize = 2000;
/// `SELECT 1` samples for the round-trip time.
const RTT_SAMPLES: usize = 200;
/// Commits (and raw inserts) whose round trips are counted, untimed.
const COUNTED_TX: usize = 100;
/// Queued tasks per worker run.
const TASKS: usize = 200;
const WORKER_COUNTS: [usize; 4] = [1, 2, 4, 8];
/// How long the store keeps reconnecting if the server goes away.
const RECONNECT: Duration = Duration::from_secs(30);

fn connect_raw(url: &str) -> postgres::Client {
    postgres::Client::connect(url, postgres::NoTls).expect("raw postgres connection")
}

fn connect_store(url: &str) -> PgStore {
    PgStore::connect(url, RECONNECT).expect("PgStore::connect")
}

// ----- 1. store throughput ---------------------------------------------------

/// What `/proc/PID/stat` says of a process; times in USER_HZ (100/s on
/// Linux).
struct ProcStat {
    state: char,
    ppid: u32,
    utime: u64,
    stime: u64,
    /// Of its waited-for children (each including its own).
    cutime: u64,
    cstime: u64,
}

fn proc_stat(pid: &str) -> Option<ProcStat> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The fields after the command name (which may hold spaces).
    let f: Vec<&str> = stat[stat.rfind(')')? + 2..].split_whitespace().collect();
    let n = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok());
    Some(ProcStat {
        state: f.first()?.chars().next()?,
        ppid: f.get(1)?.parse().ok()?,
        utime: n(11)?,
        stime: n(12)?,
        cutime: n(13)?,
        cstime: n(14)?,
    })
}

/// CPU seconds (user + system) of process `pid` (`self` or a number). With
/// `children`, of its waited-for children instead.
fn cpu_secs(pid: &str, children: bool) -> f64 {
    let p = proc_stat(pid).unwrap_or_else(|| panic!("cannot read /proc/{pid}/stat"));
    let ticks = if children {
        p.cutime + p.cstime
    } else {
        p.utime + p.stime
    };
    ticks as f64 / 100.0
}

/// CPU seconds of the whole server: the postmaster, its children that
/// exited (reaped: in its `cutime + cstime`) and those running.
fn server_cpu_secs(postmaster: u32) -> f64 {
    let Some(pm) = proc_stat(&postmaster.to_string()) else {
        return 0.0;
    };
    let mut ticks = pm.utime + pm.stime + pm.cutime + pm.cstime;
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .filter(|n| n.bytes().all(|b| b.is_ascii_digit()))
        else {
            continue;
        };
        if let Some(p) = proc_stat(pid)
            && p.ppid == postmaster
        {
            ticks += p.utime + p.stime;
        }
    }
    ticks as f64 / 100.0
}

/// The server's postmaster pid: the first line of `postmaster.pid`.
fn postmaster_pid(cluster: &baton_testkit::PgCluster) -> u32 {
    let text =
        std::fs::read_to_string(cluster.data_dir().join("postmaster.pid")).expect("postmaster.pid");
    text.lines()
        .next()
        .and_then(|l| l.trim().parse().ok())
        .expect("a pid in postmaster.pid")
}

/// What one side of the comparison cost, per transaction.
#[derive(Debug, Clone, Copy)]
struct Side {
    tps: f64,
    /// CPU of this (client) process, µs.
    client_us: f64,
    /// CPU of the server backend serving it, µs.
    server_us: f64,
    /// WAL bytes written.
    wal: f64,
}

/// Watches one side's cost: WAL position and CPU before and after.
struct Meter {
    lsn: String,
    client: f64,
    server: f64,
    backend: i32,
    started: Instant,
}

impl Meter {
    /// `backend`: pid of the server process serving the measured connection.
    fn start(probe: &mut postgres::Client, backend: i32) -> Meter {
        let lsn: String = probe
            .query_one("SELECT pg_current_wal_insert_lsn()::text", &[])
            .expect("wal lsn")
            .get(0);
        Meter {
            lsn,
            client: cpu_secs("self", false),
            server: cpu_secs(&backend.to_string(), false),
            backend,
            started: Instant::now(),
        }
    }

    fn stop(self, probe: &mut postgres::Client, n: usize) -> Side {
        let secs = self.started.elapsed().as_secs_f64();
        let client = cpu_secs("self", false) - self.client;
        let server = cpu_secs(&self.backend.to_string(), false) - self.server;
        let wal: f64 = probe
            .query_one(
                "SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), $1::text::pg_lsn)::float8",
                &[&self.lsn],
            )
            .expect("wal diff")
            .get(0);
        let n = n as f64;
        Side {
            tps: n / secs,
            client_us: client * 1e6 / n,
            server_us: server * 1e6 / n,
            wal: wal / n,
        }
    }
}

fn backend_pid(client: &mut postgres::Client) -> i32 {
    client
        .query_one("SELECT pg_backend_pid()", &[])
        .expect("pg_backend_pid")
        .get(0)
}

/// The backend serving the store's connection: the only other client of
/// this database named `baton`.
fn store_backend_pid(probe: &mut postgres::Client) -> i32 {
    probe
        .query_one(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'baton' AND pid <> pg_backend_pid() ORDER BY backend_start LIMIT 1",
            &[],
        )
        .expect("the store's backend")
        .get(0)
}

/// `n` autocommit INSERTs of one 200-byte row, prepared once: one round trip
/// and one WAL flush each.
fn raw_inserts(client: &mut postgres::Client, n: usize) -> Side {
    let insert = client
        .prepare("INSERT INTO bench_raw (payload) VALUES ($1)")
        .expect("prepare insert");
    let payload = text(200, 0);
    let backend = backend_pid(client);
    let meter = Meter::start(client, backend);
    for _ in 0..n {
        client.execute(&insert, &[&payload]).expect("insert");
    }
    meter.stop(client, n)
}

/// A task of `n / 2` phases (1,000 for `N_TX`) driven through
/// `PgStore::commit`: claimed, then Start + Pass per phase with 200-byte
/// summaries, `n` commits measured.
fn baton_commits(store: &PgStore, probe: &mut postgres::Client, task: &str, n: usize) -> Side {
    let wf = parse_workflow("store", &workflow_toml("store", n.div_ceil(2)));
    let mut d = Driver::create(Some(store), &wf, task, &[]);
    d.decide_commit(claim());
    let summary = text(200, 1);
    let backend = store_backend_pid(probe);
    let meter = Meter::start(probe, backend);
    for i in 0..n / 2 {
        d.decide_commit(start(i));
        d.decide_commit(pass(i, &summary));
    }
    let side = meter.stop(probe, n);
    assert_eq!(d.state.last_seq as usize, 2 + n);
    d.release();
    side
}

fn median_side(v: &[Side]) -> Side {
    let m = |f: fn(&Side) -> f64| median(v.iter().map(f).collect());
    Side {
        tps: m(|s| s.tps),
        client_us: m(|s| s.client_us),
        server_us: m(|s| s.server_us),
        wal: m(|s| s.wal),
    }
}

/// A warm-up (a fresh cluster's first WAL segments and pages are slow), then
/// three rounds, alternating which side goes first (raw, baton / baton, raw
/// / raw, baton), so a slow moment of the machine does not land on one side
/// only. Returns the median of each side (each figure on its own) and the
/// median of the per-round ratios baton/raw of transactions/s.
fn store_pair(store: &PgStore, raw: &mut postgres::Client) -> (Side, Side, f64) {
    raw_inserts(raw, N_TX / 4);
    baton_commits(store, raw, "store-warm-up", N_TX / 4);
    let (mut raws, mut batons, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..3 {
        let task = format!("store-bench-{round}");
        let (r, b) = if round % 2 == 0 {
            let r = raw_inserts(raw, N_TX);
            (r, baton_commits(store, raw, &task, N_TX))
        } else {
            let b = baton_commits(store, raw, &task, N_TX);
            (raw_inserts(raw, N_TX), b)
        };
        eprintln!(
            "      round {}: baton {:.0}/s, raw {:.0}/s",
            round + 1,
            b.tps,
            r.tps
        );
        raws.push(r);
        batons.push(b);
        ratios.push(b.tps / r.tps);
    }
    (median_side(&batons), median_side(&raws), median(ratios))
}

/// Median of `RTT_SAMPLES` prepared `SELECT 1`, in milliseconds.
fn round_trip_ms(client: &mut postgres::Client) -> f64 {
    let select = client.prepare("SELECT 1").expect("prepare SELECT 1");
    for _ in 0..10 {
        client.query_one(&select, &[]).expect("warm-up");
    }
    let samples = (0..RTT_SAMPLES)
        .map(|_| {
            let t = Instant::now();
            client.query_one(&select, &[]).expect("SELECT 1");
            t.elapsed().as_secs_f64() * 1000.0
        })
        .collect();
    median(samples)
}

/// A TCP relay in front of the server that counts round trips: a "turn"
/// is the client sending after it heard from the server (or for the first
/// time), i.e. once per wait for an answer, however many messages a batch
/// pipelines. For each turn it notes how long the server took to start
/// answering (as seen from the relay).
struct Relay {
    port: u16,
    /// Server wait of every turn so far, ms.
    waits: Arc<Mutex<Vec<f64>>>,
}

/// One relayed connection: has the server spoken since the client last
/// sent, and when did the client's current turn start.
#[derive(Default)]
struct Turn {
    server_spoke: bool,
    sent_at: Option<Instant>,
}

impl Relay {
    fn start(server_port: u16) -> Relay {
        let listener = TcpListener::bind("127.0.0.1:0").expect("relay bind");
        let port = listener.local_addr().expect("relay addr").port();
        let waits = Arc::new(Mutex::new(Vec::new()));
        let all = waits.clone();
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { continue };
                let Ok(server) = TcpStream::connect(("127.0.0.1", server_port)) else {
                    continue;
                };
                let _ = client.set_nodelay(true);
                let _ = server.set_nodelay(true);
                let turn = Arc::new(Mutex::new(Turn {
                    server_spoke: true,
                    sent_at: None,
                }));
                let (c2, s2, turn2, all2) = (
                    client.try_clone().expect("clone"),
                    server.try_clone().expect("clone"),
                    turn.clone(),
                    all.clone(),
                );
                std::thread::spawn(move || {
                    pump(client, server, || {
                        let mut t = turn.lock().expect("turn");
                        if std::mem::take(&mut t.server_spoke) {
                            t.sent_at = Some(Instant::now());
                        }
                    })
                });
                std::thread::spawn(move || {
                    pump(s2, c2, || {
                        let mut t = turn2.lock().expect("turn");
                        if let Some(at) = t.sent_at.take() {
                            let ms = at.elapsed().as_secs_f64() * 1000.0;
                            all2.lock().expect("waits").push(ms);
                        }
                        t.server_spoke = true;
                    })
                });
            }
        });
        Relay { port, waits }
    }

    /// Turns answered so far.
    fn turns(&self) -> usize {
        self.waits.lock().expect("waits").len()
    }

    fn waits_since(&self, from: usize) -> Vec<f64> {
        self.waits.lock().expect("waits")[from..].to_vec()
    }

    /// `url` with its port replaced by the relay's.
    fn url(&self, url: &str, server_port: u16) -> String {
        url.replacen(&format!(":{server_port}/"), &format!(":{}/", self.port), 1)
    }
}

/// Copies `from` to `to`, calling `seen` before forwarding each read.
fn pump(mut from: TcpStream, mut to: TcpStream, mut seen: impl FnMut()) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                seen();
                if to.write_all(&buf[..n]).is_err() {
                    break;
                }
            }
        }
    }
    let _ = to.shutdown(Shutdown::Write);
}

/// Round trips per transaction of one side, and the median server wait of
/// each round trip in a transaction's order (when every transaction made
/// the same number).
#[derive(Debug, Clone)]
struct Trips {
    per_tx: f64,
    waits_ms: Vec<f64>,
}

fn trips(waits: Vec<f64>, n: usize) -> Trips {
    let per_tx = waits.len() as f64 / n as f64;
    let k = waits.len() / n;
    let waits_ms = if k * n == waits.len() {
        (0..k)
            .map(|i| median(waits.iter().skip(i).step_by(k).copied().collect()))
            .collect()
    } else {
        Vec::new()
    };
    Trips { per_tx, waits_ms }
}

/// Round trips per `PgStore::commit` and per raw INSERT, through the relay
/// (untimed: the relay adds its own latency).
fn round_trips(url: &str, server_port: u16) -> (Trips, Trips) {
    let relay = Relay::start(server_port);
    let via = relay.url(url, server_port);
    let store = connect_store(&via);
    let wf = parse_workflow("count", &workflow_toml("count", COUNTED_TX / 2));
    let mut d = Driver::create(Some(&store), &wf, "round-trips", &[]);
    d.decide_commit(claim());
    let summary = text(200, 1);
    let before = relay.turns();
    for i in 0..COUNTED_TX / 2 {
        d.decide_commit(start(i));
        d.decide_commit(pass(i, &summary));
    }
    let baton = trips(relay.waits_since(before), COUNTED_TX);
    d.release();
    drop(d);
    drop(store);

    let mut raw = connect_raw(&via);
    let insert = raw
        .prepare("INSERT INTO bench_raw (payload) VALUES ($1)")
        .expect("prepare insert");
    let payload = text(200, 0);
    let before = relay.turns();
    for _ in 0..COUNTED_TX {
        raw.execute(&insert, &[&payload]).expect("insert");
    }
    let raw_trips = trips(relay.waits_since(before), COUNTED_TX);
    (baton, raw_trips)
}

// ----- 2. workers -------------------------------------------------------------

const WORKER_WORKFLOW: &str = r#"name = "w"
description = "two short command phases"

[[phase]]
id = "a"
run = "true"

[[phase]]
id = "b"
needs = ["a"]
run = "true"
"#;

/// A git repository with `.baton/` initialised and the workflow committed,
/// on its own database, run with a hermetic environment (like the testkit's).
struct WorkerProject {
    _dir: tempfile::TempDir,
    root: PathBuf,
    home: PathBuf,
    url: String,
}

impl WorkerProject {
    fn new(url: String) -> WorkerProject {
        let dir = tempfile::Builder::new()
            .prefix("baton-bench-workers-")
            .tempdir()
            .expect("tempdir");
        let root = dir.path().join("project");
        let home = dir.path().join("home");
        std::fs::create_dir_all(&root).expect("mkdir project");
        std::fs::create_dir_all(&home).expect("mkdir home");
        let p = WorkerProject {
            _dir: dir,
            root,
            home,
            url,
        };
        p.git(&["init", "-q", "-b", "main"]);
        std::fs::write(p.root.join("README.md"), "# bench project\n").expect("README");
        p.git(&["add", "."]);
        p.git(&["commit", "-qm", "initial"]);
        p.baton_ok(&["init"]);
        std::fs::write(p.root.join(".baton/workflows/w.toml"), WORKER_WORKFLOW).expect("workflow");
        p.git(&["add", "-A"]);
        p.git(&["commit", "-qm", "workflow"]);
        p
    }

    fn env<'a>(&self, c: &'a mut Command) -> &'a mut Command {
        c.current_dir(&self.root)
            .env("HOME", &self.home)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_AUTHOR_NAME", "Bench")
            .env("GIT_AUTHOR_EMAIL", "bench@localhost")
            .env("GIT_COMMITTER_NAME", "Bench")
            .env("GIT_COMMITTER_EMAIL", "bench@localhost")
            .env("NO_COLOR", "1")
            .env("BATON_DATABASE_URL", &self.url)
            .env_remove("BATON_PROJECT")
            .env_remove("BATON_TEST_CRASH_AT")
            .env_remove("BATON_LOG")
            .env_remove("BATON_HOST")
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

    fn baton_ok(&self, args: &[&str]) -> String {
        let out = self.baton(args).output().expect("spawn baton");
        assert!(
            out.status.success(),
            "baton {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// `baton run w t --queue --id tNNN` for each task, a few at a time
    /// (each mostly waits: on process start-up, the server, git).
    fn queue(&self, tasks: usize) {
        const AT_ONCE: usize = 4;
        std::thread::scope(|s| {
            for k in 0..AT_ONCE {
                s.spawn(move || {
                    for i in (k..tasks).step_by(AT_ONCE) {
                        self.baton_ok(&["run", "w", "t", "--queue", "--id", &format!("t{i:03}")]);
                    }
                });
            }
        });
    }

    /// How many tasks are COMPLETE, how many there are, and when the last
    /// one was last written (its completion).
    fn completed(&self) -> (usize, usize, jiff::Timestamp) {
        let out = self.baton_ok(&["ls", "--all", "--json"]);
        let rows: serde_json::Value = serde_json::from_str(&out).expect("ls --json parses");
        let rows = rows.as_array().expect("ls --json is an array");
        let done = rows.iter().filter(|t| t["status"] == "COMPLETE").count();
        let last = rows
            .iter()
            .map(|t| {
                t["updated_at"]
                    .as_str()
                    .and_then(|u| u.parse::<jiff::Timestamp>().ok())
                    .expect("ls --json: updated_at")
            })
            .max()
            .expect("tasks");
        (done, rows.len(), last)
    }
}

/// The whole machine's CPU time so far, in seconds summed over cores, from
/// the first line of `/proc/stat` (USER_HZ).
#[derive(Debug, Clone, Copy)]
struct Machine {
    busy: f64,
    iowait: f64,
    total: f64,
}

fn machine() -> Machine {
    let stat = std::fs::read_to_string("/proc/stat").expect("/proc/stat");
    let cpu: Vec<u64> = stat
        .lines()
        .next()
        .expect("cpu line")
        .split_whitespace()
        .skip(1)
        .map(|v| v.parse().expect("jiffies"))
        .collect();
    // user nice system idle iowait irq softirq steal (guest is in user).
    let total: u64 = cpu.iter().take(8).sum();
    let (idle, iowait) = (cpu[3], cpu[4]);
    Machine {
        busy: (total - idle - iowait) as f64 / 100.0,
        iowait: iowait as f64 / 100.0,
        total: total as f64 / 100.0,
    }
}

struct WorkerRun {
    workers: usize,
    /// From starting the workers to the last task's completion.
    secs: f64,
    /// From starting the workers to the last one's exit.
    wall: f64,
    setup_secs: f64,
    /// CPU seconds of the worker processes themselves.
    baton_cpu: f64,
    /// CPU seconds of the workers and everything they ran (git, sh).
    tree_cpu: f64,
    /// CPU seconds of the PostgreSQL server.
    server_cpu: f64,
    /// The machine from the workers' start to the last task's completion
    /// (all cores).
    machine: Machine,
}

impl WorkerRun {
    fn tasks_per_sec(&self) -> f64 {
        TASKS as f64 / self.secs
    }

    /// Share of the machine's CPU time.
    fn share(&self, secs: f64) -> f64 {
        100.0 * secs / self.machine.total.max(0.01)
    }
}

fn worker_run(cluster: &baton_testkit::PgCluster, workers: usize) -> WorkerRun {
    let setup = Instant::now();
    let p = WorkerProject::new(cluster.create_database());
    p.queue(TASKS);
    let setup_secs = setup.elapsed().as_secs_f64();

    let postmaster = postmaster_pid(cluster);
    let logs: Vec<PathBuf> = (0..workers)
        .map(|i| p.home.join(format!("worker-{i}.log")))
        .collect();
    let tree_before = cpu_secs("self", true);
    let server_before = server_cpu_secs(postmaster);
    let m0 = machine();
    let started_at = jiff::Timestamp::now();
    let started = Instant::now();
    let mut children: Vec<_> = logs
        .iter()
        .map(|log| {
            let err = std::fs::File::create(log).expect("worker log");
            p.baton(&["worker", "--until-idle"])
                .stdout(Stdio::null())
                .stderr(err)
                .spawn()
                .expect("spawn baton worker")
        })
        .collect();
    // Wait, sampling each worker's own CPU time until it exits (what it
    // ran is only in our `cutime` once it is reaped, its own is not apart).
    // And the machine's counters, to read them where the last task ended.
    let mut own = vec![0.0; workers];
    let mut statuses = vec![None; workers];
    let mut samples = vec![(0.0, m0)];
    while statuses.iter().any(Option::is_none) {
        samples.push((started.elapsed().as_secs_f64(), machine()));
        for (i, c) in children.iter_mut().enumerate() {
            if statuses[i].is_some() {
                continue;
            }
            if let Some(p) = proc_stat(&c.id().to_string())
                && p.state != 'Z'
            {
                own[i] = (p.utime + p.stime) as f64 / 100.0;
            }
            statuses[i] = c.try_wait().expect("wait for worker");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let wall = started.elapsed().as_secs_f64();
    let server_cpu = server_cpu_secs(postmaster) - server_before;
    let tree_cpu = cpu_secs("self", true) - tree_before;
    for (status, log) in statuses.iter().flatten().zip(&logs) {
        assert!(
            status.success(),
            "a worker failed ({status}):\n{}",
            std::fs::read_to_string(log).unwrap_or_default()
        );
    }
    let (done, all, last) = p.completed();
    assert_eq!(
        (done, all),
        (TASKS, TASKS),
        "every queued task completes; worker log:\n{}",
        std::fs::read_to_string(&logs[0]).unwrap_or_default()
    );
    let secs = last.duration_since(started_at).as_secs_f64();
    // Idle workers waiting to exit use next to no CPU: what the workers and
    // the server used is set against the machine up to the last task.
    let m1 = samples
        .iter()
        .rev()
        .find(|(at, _)| *at <= secs)
        .map_or(m0, |(_, m)| *m);
    WorkerRun {
        workers,
        secs,
        wall,
        setup_secs,
        baton_cpu: own.iter().sum(),
        tree_cpu,
        server_cpu,
        machine: Machine {
            busy: m1.busy - m0.busy,
            iowait: m1.iowait - m0.iowait,
            total: m1.total - m0.total,
        },
    }
}

// ----- main -----------------------------------------------------------------

struct StoreReport {
    settings: String,
    baton: Side,
    raw: Side,
    ratio: f64,
    rtt_ms: f64,
    trips_baton: Trips,
    trips_raw: Trips,
}

fn store_part(cluster: &baton_testkit::PgCluster) -> StoreReport {
    let url = cluster.create_database();
    let store = connect_store(&url);
    let mut raw = connect_raw(&url);
    raw.batch_execute("CREATE TABLE bench_raw (id BIGSERIAL PRIMARY KEY, payload TEXT NOT NULL)")
        .expect("create bench_raw");
    let settings: Vec<String> = [
        "server_version",
        "synchronous_commit",
        "fsync",
        "wal_sync_method",
    ]
    .iter()
    .map(|s| {
        let v: String = raw
            .query_one(&format!("SHOW {s}"), &[])
            .expect("SHOW")
            .get(0);
        format!("{s}={v}")
    })
    .collect();
    let (baton, raw_side, ratio) = store_pair(&store, &mut raw);
    let rtt_ms = round_trip_ms(&mut raw);
    let (trips_baton, trips_raw) = round_trips(&url, cluster.port());
    StoreReport {
        settings: settings.join(", "),
        baton,
        raw: raw_side,
        ratio,
        rtt_ms,
        trips_baton,
        trips_raw,
    }
}

fn print_store(r: &StoreReport) {
    let ms_per = |tps: f64| 1000.0 / tps;
    let waits = |t: &Trips| {
        t.waits_ms
            .iter()
            .map(|w| format!("{w:.3}"))
            .collect::<Vec<_>>()
            .join(" + ")
    };
    println!("PostgreSQL: {}", r.settings);
    println!(
        "store transitions/s:            baton {:>7.0}   raw INSERT {:>7.0}   ratio {:.2} (goal >= 0.5: {})",
        r.baton.tps,
        r.raw.tps,
        r.ratio,
        verdict(r.ratio >= 0.5)
    );
    println!(
        "  (1,000-phase task through PgStore::commit, Start+Pass per phase, 200-byte summaries = {N_TX} commits;"
    );
    println!(
        "   raw = one 200-byte row per autocommit INSERT, prepared; same server and database;"
    );
    println!("   medians of 3 interleaved rounds, ratio = median of per-round ratios)");
    println!(
        "round trip:                     {:.3} ms (median of {RTT_SAMPLES} prepared SELECT 1)",
        r.rtt_ms
    );
    println!("per transaction (medians):      baton        raw");
    println!(
        "  wall time                     {:>6.3} ms    {:>6.3} ms",
        ms_per(r.baton.tps),
        ms_per(r.raw.tps)
    );
    println!(
        "  round trips                   {:>6.1}       {:>6.1}      (counted by a relay over {COUNTED_TX} of each, untimed)",
        r.trips_baton.per_tx, r.trips_raw.per_tx
    );
    println!(
        "  round trips x round trip      {:>6.3} ms    {:>6.3} ms",
        r.trips_baton.per_tx * r.rtt_ms,
        r.trips_raw.per_tx * r.rtt_ms
    );
    println!(
        "  client CPU (this process)     {:>6.3} ms    {:>6.3} ms",
        r.baton.client_us / 1000.0,
        r.raw.client_us / 1000.0
    );
    println!(
        "  server CPU (its backend)      {:>6.3} ms    {:>6.3} ms",
        r.baton.server_us / 1000.0,
        r.raw.server_us / 1000.0
    );
    println!(
        "  WAL written                   {:>6.0} B     {:>6.0} B",
        r.baton.wal, r.raw.wal
    );
    println!(
        "  server wait per round trip    baton {} ms; raw {} ms (via the relay)",
        waits(&r.trips_baton),
        waits(&r.trips_raw)
    );
    let extra = ms_per(r.baton.tps) - ms_per(r.raw.tps);
    let client = (r.baton.client_us - r.raw.client_us) / 1000.0;
    let server = (r.baton.server_us - r.raw.server_us) / 1000.0;
    let trips = (r.trips_baton.per_tx - r.trips_raw.per_tx) * r.rtt_ms;
    println!(
        "  => baton's extra {extra:.3} ms per commit: client CPU {client:+.3}, server CPU {server:+.3}, round trips {trips:+.3}, the rest (waits) {:+.3}",
        extra - client - server - trips
    );
}

fn workers_part(cluster: &baton_testkit::PgCluster) -> Vec<WorkerRun> {
    WORKER_COUNTS
        .iter()
        .map(|&n| {
            let r = worker_run(cluster, n);
            eprintln!(
                "      {n} worker(s): {:.1}s to the last task, {:.1}s to exit ({:.1}s to set up and queue)",
                r.secs, r.wall, r.setup_secs
            );
            r
        })
        .collect()
}

fn print_workers(runs: &[WorkerRun], cores: usize) {
    let base = runs[0].tasks_per_sec();
    println!(
        "worker throughput ({TASKS} queued tasks, 2 `run = \"true\"` phases each; one slot per worker process; {cores} cores):"
    );
    println!(
        "  workers  tasks/s  speed-up  to last task  to exit | CPU ms/task: baton  git+sh  postgres | machine: busy (workers+git+sh, postgres, rest)  iowait"
    );
    for r in runs {
        let per_task = |secs: f64| secs * 1000.0 / TASKS as f64;
        let rest = r.machine.busy - r.tree_cpu - r.server_cpu;
        println!(
            "  {:>7}  {:>7.1}  {:>7.2}x  {:>11.1}s  {:>6.1}s | {:>17.0}  {:>6.0}  {:>8.0} | {:>13.0}% ({:.0}%, {:.0}%, {:.0}%)  {:>19.0}%",
            r.workers,
            r.tasks_per_sec(),
            r.tasks_per_sec() / base,
            r.secs,
            r.wall,
            per_task(r.baton_cpu),
            per_task(r.tree_cpu - r.baton_cpu),
            per_task(r.server_cpu),
            r.share(r.machine.busy),
            r.share(r.tree_cpu),
            r.share(r.server_cpu),
            r.share(rest),
            r.share(r.machine.iowait),
        );
    }
    println!(
        "  (tasks/s up to the last task's completion; `to exit` adds the wait of idle `--until-idle` workers before they see the queue empty;"
    );
    println!(
        "   machine shares are of all cores' time from the workers' start to the last task's completion; rest = other processes and the kernel)"
    );
    // Where doubling the workers stops buying at least 15% more throughput.
    match runs.windows(2).find(|w| w[1].secs > w[0].secs / 1.15) {
        Some(w) => println!(
            "  scaling stops at {} worker(s) on this machine ({cores} cores): {} gave {:.2}x the throughput of {}, the machine {:.0}% busy",
            w[0].workers,
            w[1].workers,
            w[0].secs / w[1].secs,
            w[0].workers,
            w[1].share(w[1].machine.busy),
        ),
        None => println!(
            "  still scaling at {} workers on this machine ({cores} cores)",
            runs.last().expect("runs").workers
        ),
    }
}

fn verdict(ok: bool) -> &'static str {
    if ok { "ok" } else { "MISSED" }
}

fn main() {
    let total = Instant::now();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let part = std::env::var("BATON_BENCH_PART").unwrap_or_default();
    let (do_store, do_workers) = match part.as_str() {
        "" => (true, true),
        "store" => (true, false),
        "workers" => (false, true),
        other => panic!("BATON_BENCH_PART={other:?}: use `store` or `workers`"),
    };
    let cluster = baton_testkit::PgCluster::start();

    let store = do_store.then(|| {
        eprintln!("[1/2] PostgreSQL: PgStore::commit vs raw INSERT transactions…");
        store_part(&cluster)
    });
    let runs = do_workers.then(|| {
        eprintln!(
            "[2/2] baton worker: {TASKS} queued tasks with {WORKER_COUNTS:?} workers ({cores} cores)…"
        );
        workers_part(&cluster)
    });

    println!();
    println!("baton scale benchmark (same machine, same run)");
    if let Some(r) = &store {
        print_store(r);
    }
    if let Some(runs) = &runs {
        print_workers(runs, cores);
    }
    println!("total bench time {:.0}s", total.elapsed().as_secs_f64());
}
