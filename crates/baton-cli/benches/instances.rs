//! Agent-instance benchmark: durable MCP tool calls next to a call that
//! does no work, and `baton agent spawn` next to starting the same CLI
//! directly.
//!
//! `cargo bench -p baton-cli --bench instances`
//!
//! 1. **MCP tool calls.** One `baton mcp` process (SQLite store, FULL
//!    sync), spoken to over stdio by one client (this bench, raw JSON-RPC,
//!    one call at a time), as the agent of a prepared coding instance:
//!    - baseline: `phase_complete` refused at its first check (no phase
//!      attempt: no IO), i.e. the whole tool path — JSON-RPC, argument
//!      parsing, the blocking thread, the answer — without the work;
//!    - `checkpoint`: a note journaled in the instance's journal (a
//!      durable commit), a new note each call;
//!    - `request_review`: a review instance forked (commit, `git worktree
//!      add`, the review's turn created and started in the background);
//!      between rounds, untimed, `baton agent kill` ends the review.
//!
//!    p50 and p99 of each, and their ratios to the baseline's.
//! 2. **Spawn.** Claude Code on the testkit's scripted model server (one
//!    turn answering "done"): run directly as the testkit runs it, next to
//!    `baton agent spawn` (worktree, branch, the instance's records, MCP
//!    configuration, the turn's task, its background runner) until the
//!    turn's task is COMPLETE (from the journal's timestamps). Needs the
//!    real CLIs (`BATON_AGENT_CLIS`), as `./scripts/test` installs them.

use baton_testkit::agents::{Agent, Run};
use baton_testkit::model_server::ModelServer;
use baton_testkit::{TestProject, baton_bin, wait_for};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Instant;

const CALLS: usize = 1000;
const REVIEWS: usize = 30;
const SPAWNS: usize = 7;

struct Client {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next: u64,
}

impl Client {
    fn start(p: &TestProject, instance: &str) -> Client {
        let mut child = Command::new(baton_bin())
            .arg("mcp")
            .current_dir(p.root())
            .env("BATON_INSTANCE", instance)
            .env_remove("BATON_SUMMARY_FILE")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut c = Client {
            child,
            stdin,
            stdout,
            next: 1,
        };
        c.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}),
        );
        writeln!(
            c.stdin,
            "{}",
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
        )
        .unwrap();
        c
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next;
        self.next += 1;
        writeln!(
            self.stdin,
            "{}",
            json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
        )
        .unwrap();
        let mut line = String::new();
        loop {
            line.clear();
            self.stdout.read_line(&mut line).unwrap();
            let v: Value = serde_json::from_str(&line).unwrap();
            if v["id"] == id {
                return v;
            }
        }
    }

    /// One tool call; its latency in microseconds and its result.
    fn call(&mut self, tool: &str, args: Value) -> (f64, Value) {
        let t = Instant::now();
        let r = self.request("tools/call", json!({"name": tool, "arguments": args}));
        (t.elapsed().as_secs_f64() * 1e6, r["result"].clone())
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn pct(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let i = ((v.len() as f64 - 1.0) * p).round() as usize;
    v[i]
}

fn ok(p: &TestProject, args: &[&str]) -> String {
    let (code, out, err) = p.run(args);
    assert_eq!(code, 0, "baton {args:?}: {out}\n{err}");
    out
}

fn project() -> TestProject {
    let p = TestProject::new();
    let cfg = p.root().join(".baton/config.toml");
    let mut text = fs_err::read_to_string(&cfg).unwrap();
    text.push_str(
        "\n[instances]\nworktree_base = \".wt\"\nmax_concurrent_instances = 50\n\n[agents.idle]\ncommand = [\"sh\", \"-c\", \"echo idle\"]\n",
    );
    fs_err::write(&cfg, text).unwrap();
    fs_err::write(p.root().join(".git/info/exclude"), ".wt/\n").unwrap();
    p.git(&["add", "-A"]);
    p.git(&["commit", "-qm", "settings"]);
    p
}

fn turn_done(p: &TestProject, id: &str) -> Value {
    wait_for(&format!("{id}'s turn"), || {
        let v: Value = serde_json::from_str(&ok(p, &["agent", "show", id, "--json"])).unwrap();
        (v["turn"]["status"] != "RUNNING").then_some(v)
    })
}

fn tool_calls() {
    let p = project();
    ok(
        &p,
        &[
            "agent",
            "spawn",
            "bench",
            "--id",
            "c1",
            "--agent",
            "idle",
            "--max-reviews",
            "1000",
        ],
    );
    turn_done(&p, "c1");
    let mut client = Client::start(&p, "c1");
    for i in 0..50 {
        client.call("phase_complete", json!({"summary": "x"}));
        client.call("checkpoint", json!({"note": format!("warm-up {i}")}));
    }
    let mut noop = Vec::with_capacity(CALLS);
    let mut checkpoint = Vec::with_capacity(CALLS);
    for i in 0..CALLS {
        // Interleaved, so both see the same machine.
        let (us, r) = client.call("phase_complete", json!({"summary": "x"}));
        assert_eq!(r["isError"], true, "the baseline is refused before any IO");
        noop.push(us);
        let (us, r) = client.call("checkpoint", json!({"note": format!("note {i}")}));
        assert_eq!(r["isError"], false, "{r}");
        checkpoint.push(us);
    }
    let mut review = Vec::with_capacity(REVIEWS);
    for _ in 0..REVIEWS {
        let (us, r) = client.call("request_review", json!({}));
        assert_eq!(r["isError"], false, "{r}");
        review.push(us);
        let rid = r["structuredContent"]["review_id"]
            .as_str()
            .unwrap()
            .to_string();
        turn_done(&p, &rid);
        ok(&p, &["agent", "kill", &rid]);
    }
    let (n50, n99) = (pct(&mut noop, 0.5), pct(&mut noop, 0.99));
    let (c50, c99) = (pct(&mut checkpoint, 0.5), pct(&mut checkpoint, 0.99));
    let (r50, r99) = (pct(&mut review, 0.5), pct(&mut review, 0.99));
    println!("MCP tool calls: one `baton mcp` (SQLite, FULL), one client, one call at a time");
    println!(
        "  baseline (phase_complete refused, no IO): p50 {:>8.0} µs   p99 {:>8.0} µs   ({CALLS} calls)",
        n50, n99
    );
    println!(
        "  checkpoint (journaled):                   p50 {:>8.0} µs   p99 {:>8.0} µs   ({CALLS} calls)   ratio p50 {:.2}  p99 {:.2}",
        c50,
        c99,
        c50 / n50,
        c99 / n99
    );
    println!(
        "  request_review (fork + review turn):      p50 {:>8.0} µs   p99 {:>8.0} µs   ({REVIEWS} calls)   ratio p50 {:.1}  p99 {:.1}",
        r50,
        r99,
        r50 / n50,
        r99 / n99
    );
}

fn spawn_overhead() {
    if std::env::var("BATON_AGENT_CLIS").is_err() {
        panic!(
            "BATON_AGENT_CLIS is not set: the spawn half needs the real CLIs (./scripts/test installs them)"
        );
    }
    let server = ModelServer::start(Vec::new());
    let home = tempfile::tempdir().unwrap();
    let p = project();
    let cfg = p.root().join(".baton/config.toml");
    let mut text = fs_err::read_to_string(&cfg).unwrap();
    text.push_str(&Agent::Claude.baton_config("bench", &server, home.path()));
    fs_err::write(&cfg, text).unwrap();
    let direct_dir = tempfile::tempdir().unwrap();
    let mut direct = Vec::new();
    let mut via = Vec::new();
    for round in 0..=SPAWNS {
        let run = Run {
            agent: Agent::Claude,
            server: &server,
            workdir: direct_dir.path(),
            home: home.path(),
        };
        let t = Instant::now();
        let out = run
            .command("say done", None, None)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .unwrap();
        assert!(out.success());
        let d = t.elapsed().as_secs_f64() * 1000.0;
        let id = format!("s{round}");
        let t0_ms = jiff::Timestamp::now().as_millisecond();
        ok(
            &p,
            &[
                "agent", "spawn", "say done", "--id", &id, "--agent", "bench",
            ],
        );
        let v = turn_done(&p, &id);
        assert_eq!(v["turn"]["status"], "COMPLETE", "{v}");
        // The turn's end, from the journal (not the polling).
        let journal = ok(&p, &["log", &id, "--json"]);
        let end = journal
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|e| e["kind"] == "task_completed")
            .filter_map(|e| e["ts"].as_str().map(str::to_string))
            .next()
            .expect("task_completed");
        let end_ms = end.parse::<jiff::Timestamp>().unwrap().as_millisecond();
        let b = (end_ms - t0_ms) as f64;
        if round > 0 {
            direct.push(d);
            via.push(b);
        }
        ok(&p, &["agent", "kill", &id]);
    }
    let (dm, bm) = (median_of(&direct), median_of(&via));
    println!("agent spawn: Claude Code, one scripted turn; medians of {SPAWNS} rounds");
    println!("  CLI alone:                 {dm:>7.0} ms");
    println!(
        "  baton agent spawn → turn done: {bm:>7.0} ms   (+{:.0} ms, ratio {:.2})",
        bm - dm,
        bm / dm
    );
}

fn median_of(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    pct(&mut v, 0.5)
}

fn main() {
    let started = Instant::now();
    println!("baton agent-instance benchmark (same machine, same run)");
    tool_calls();
    spawn_overhead();
    println!("total bench time {:.0}s", started.elapsed().as_secs_f64());
}
