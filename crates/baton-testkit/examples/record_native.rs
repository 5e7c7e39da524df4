//! Records the native session files the seven real agent CLIs write, as
//! fixtures for `baton import` (crates/baton-core/tests/fixtures/native/).
//!
//! Each CLI runs once, offline, against the scripted model server (a
//! write-file tool call, then "done") in a fresh git repository with its own
//! config home, all under a fixed folder (`/tmp/baton-native-record`) so the
//! paths inside the files are the same on every recording and the files
//! are copied byte for byte. OpenCode keeps its sessions in SQLite: its
//! fixture is what `opencode export <sessionID>` prints.
//!
//! Codex, OpenCode and droid choose their own session ids, and every file holds
//! timestamps: after recording again, update the ids expected in
//! crates/baton-core/tests/native_import.rs.
//!
//! ```sh
//! BATON_AGENT_CLIS=… BATON_AGENT_CLIS_CACHE=… cargo run -p baton-testkit --example record_native [CLI…]
//! ```

use baton_testkit::agents::{Agent, Run};
use baton_testkit::model_server::{ModelServer, Reply};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The folder every recording runs under.
const ROOT: &str = "/tmp/baton-native-record";
/// The session id chosen up front for the CLIs that take one.
const SESSION: &str = "5e551011-0000-4000-8000-00000000beef";
const PROMPT: &str = "write hello please";

fn main() {
    let only: Vec<String> = std::env::args().skip(1).collect();
    let out_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../baton-core/tests/fixtures/native");
    std::fs::create_dir_all(&out_dir).expect("fixtures folder");
    for agent in Agent::ALL {
        if !only.is_empty() && !only.iter().any(|o| o == agent.program()) {
            continue;
        }
        let (ext, bytes) = record(agent);
        let dest = out_dir.join(format!("{}.{ext}", agent.program()));
        std::fs::write(&dest, bytes).expect("write fixture");
        println!("{}: {}", agent.program(), dest.display());
    }
}

/// Runs `agent` once and returns the extension and bytes of its session file.
fn record(agent: Agent) -> (&'static str, Vec<u8>) {
    let root = PathBuf::from(ROOT).join(agent.program());
    let _ = std::fs::remove_dir_all(&root);
    let work = root.join("repo");
    let home = root.join("home");
    std::fs::create_dir_all(&work).expect("repo");
    std::fs::create_dir_all(&home).expect("home");
    let init = Command::new("git")
        .args(["init", "-q"])
        .current_dir(&work)
        .status()
        .expect("git init");
    assert!(init.success());
    let (tool, args) = agent.write_tool(&work.join("hello.txt"), "hi there");
    let server = ModelServer::start(vec![Reply::tool(tool, args), Reply::text("done")]);
    let run = Run {
        agent,
        server: &server,
        workdir: &work,
        home: &home,
    };
    let chosen = agent.takes_session_id().then_some(SESSION);
    let stdout = run_to_end(run.command(PROMPT, chosen, None), agent);
    assert!(
        work.join("hello.txt").is_file(),
        "{} did not write hello.txt",
        agent.program()
    );
    let files = all_files(&home);
    eprintln!("{} wrote under its home:", agent.program());
    for f in &files {
        eprintln!("  {}", f.strip_prefix(&home).unwrap_or(f).display());
    }
    let pick = |pred: &dyn Fn(&str) -> bool| -> PathBuf {
        let found: Vec<&PathBuf> = files
            .iter()
            .filter(|f| pred(&f.display().to_string()))
            .collect();
        assert_eq!(found.len(), 1, "{}: {found:?}", agent.program());
        found[0].clone()
    };
    match agent {
        Agent::Claude => {
            let f = pick(&|p| p.contains("/.claude/projects/") && p.ends_with(".jsonl"));
            ("jsonl", std::fs::read(f).expect("read"))
        }
        Agent::Codex => {
            let f = pick(&|p| p.contains("/.codex/sessions/") && p.ends_with(".jsonl"));
            ("jsonl", std::fs::read(f).expect("read"))
        }
        Agent::Gemini => {
            let f = pick(&|p| p.contains("/.gemini/tmp/") && p.contains("/chats/session-"));
            let ext = if f.extension().is_some_and(|e| e == "json") {
                "json"
            } else {
                "jsonl"
            };
            (ext, std::fs::read(f).expect("read"))
        }
        Agent::Qwen => {
            let f = pick(&|p| p.contains("/.qwen/projects/") && p.contains("/chats/"));
            ("jsonl", std::fs::read(f).expect("read"))
        }
        Agent::Copilot => {
            let f =
                pick(&|p| p.contains("/.copilot/session-state/") && p.ends_with("/events.jsonl"));
            ("jsonl", std::fs::read(f).expect("read"))
        }
        Agent::Droid => {
            let f = pick(&|p| p.contains("/.factory/sessions/") && p.ends_with(".jsonl"));
            ("jsonl", std::fs::read(f).expect("read"))
        }
        Agent::Opencode => {
            let id = String::from_utf8_lossy(&stdout)
                .lines()
                .find_map(|l| {
                    let v: serde_json::Value = serde_json::from_str(l).ok()?;
                    v["sessionID"].as_str().map(str::to_string)
                })
                .expect("a sessionID in opencode's stream");
            // Same program and environment, other arguments.
            let base = run.command(PROMPT, None, None);
            let mut c = Command::new(base.get_program());
            c.current_dir(&work).stdin(Stdio::null());
            for (k, v) in base.get_envs() {
                if let Some(v) = v {
                    c.env(k, v);
                }
            }
            c.args(["export", &id]);
            let out = run_to_end(c, agent);
            ("json", out)
        }
    }
}

/// Runs `c` to its end (at most 180 s), panicking unless it exits 0;
/// returns its stdout.
fn run_to_end(mut c: Command, agent: Agent) -> Vec<u8> {
    let mut child = c
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let until = Instant::now() + Duration::from_secs(180);
    // Drain stdout while waiting so a long output cannot block the child.
    let mut stdout = child.stdout.take().expect("stdout");
    let reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        std::io::Read::read_to_end(&mut stdout, &mut buf).expect("read stdout");
        buf
    });
    while child.try_wait().expect("wait").is_none() {
        if Instant::now() > until {
            let _ = child.kill();
            panic!("{} did not finish within 180 s", agent.program());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().expect("output");
    let stdout = reader.join().expect("reader");
    assert!(
        out.status.success(),
        "{} exited {}: {}",
        agent.program(),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

fn all_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in rd.flatten() {
        let p = e.path();
        let ft = e.file_type().expect("file type");
        if ft.is_dir() {
            // Package caches and OpenCode's snapshot repository.
            if p.ends_with("node_modules") || p.ends_with(".npm") || p.ends_with("snapshot") {
                continue;
            }
            out.extend(all_files(&p));
        } else if ft.is_file() {
            out.push(p);
        }
    }
    out.sort();
    out
}
