//! Records what the real agent CLIs print on stdout, as fixtures for the
//! stream parsers (crates/baton-agents/tests/fixtures/streams/): a `write`
//! run (a write-file tool call, then "done"), a `401` run (every model
//! request refused with HTTP 401) and, for Codex, a `subagent` run (the
//! model spawns one of Codex's own agents, which answers, then the main
//! agent answers; `subagent-v2` the same with `--enable multi_agent_v2`),
//! named `<cli>-<version>-<run>.jsonl`; the spawned agent's own rollout
//! goes to `../native/codex-<version>-subagent.jsonl`, and for v2 the main
//! agent's (the only place v2 says it spawned one) to
//! `../native/codex-<version>-subagent-v2-parent.jsonl`.
//!
//! Each run is offline, against the scripted model server, in a fresh git
//! repository with its own config home under a fixed folder
//! (`/tmp/baton-stream-record`), so the paths in the streams are the same
//! on every recording. The CLIs that take a session id up front get
//! `11111111-2222-4333-8444-555555555555`. After recording again, update
//! the ids expected in crates/baton-agents/tests/agent_streams.rs.
//!
//! ```sh
//! BATON_AGENT_CLIS=… BATON_AGENT_CLIS_CACHE=… cargo run -p baton-testkit --example record_streams [CLI[:RUN]…]
//! ```
//!
//! Without arguments it records the CLIs whose fixtures were made this way
//! (Copilot and droid; the others were recorded by hand, see
//! docs/dev/agent-clis.md). `codex:subagent` records only that run.

use baton_testkit::agents::{Agent, Run};
use baton_testkit::model_server::{ModelServer, Reply};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const ROOT: &str = "/tmp/baton-stream-record";
const SESSION: &str = "11111111-2222-4333-8444-555555555555";
const PROMPT: &str = "write hello please";
const SUBAGENT_TASK: &str = "List the files and say what you see.";

fn main() {
    let only: Vec<String> = std::env::args().skip(1).collect();
    let out_dir =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../baton-agents/tests/fixtures/streams");
    std::fs::create_dir_all(&out_dir).expect("fixtures folder");
    for agent in Agent::ALL {
        let labels: Vec<&str> = if only.is_empty() {
            match agent {
                Agent::Copilot | Agent::Droid => vec!["write", "401"],
                _ => vec![],
            }
        } else {
            only.iter()
                .filter_map(|o| match o.split_once(':') {
                    Some((cli, run)) if cli == agent.program() => Some(vec![run]),
                    None if o == agent.program() => Some(vec!["write", "401"]),
                    _ => None,
                })
                .flatten()
                .collect()
        };
        for label in labels {
            let bytes = record(agent, label);
            let dest = out_dir.join(format!(
                "{}-{}-{label}.jsonl",
                agent.program(),
                agent.pinned_version()
            ));
            std::fs::write(&dest, bytes).expect("write fixture");
            println!("{}: {}", agent.program(), dest.display());
            // v1: the spawned agent's rollout; v2: the main agent's, which
            // alone says that an agent was spawned.
            if let Some((name, spawned)) = match label {
                "subagent" => Some(("subagent", true)),
                "subagent-v2" => Some(("subagent-v2-parent", false)),
                _ => None,
            } {
                let dest = out_dir.join(format!(
                    "../native/{}-{}-{name}.jsonl",
                    agent.program(),
                    agent.pinned_version()
                ));
                std::fs::write(&dest, rollout(agent, label, spawned)).expect("write fixture");
                println!("{}: {}", agent.program(), dest.display());
            }
        }
    }
}

/// Runs `agent` once and returns its stdout.
fn record(agent: Agent, label: &str) -> Vec<u8> {
    let root = PathBuf::from(ROOT).join(format!("{}-{label}", agent.program()));
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
    let script = match label {
        "write" => {
            let (tool, args) = agent.write_tool(&work.join("hello.txt"), "hi there");
            vec![Reply::tool(tool, args), Reply::text("done")]
        }
        // Codex's own agents (`spawn_agent`, on by default in 0.169 as
        // `multi_agent`): the main agent spawns one and waits for it; the
        // spawned agent (its own conversation) runs `ls` and answers.
        "subagent-v2" => vec![
            Reply::tool(
                "collaboration__spawn_agent",
                serde_json::json!({"task_name": "look_around", "message": SUBAGENT_TASK, "fork_turns": "none"}),
            ),
            Reply::tool(
                "collaboration__wait_agent",
                serde_json::json!({"timeout_ms": 60000}),
            ),
            Reply::text("The subagent saw the repository."),
        ],
        "subagent" => vec![
            Reply::tool(
                "multi_agent_v1__spawn_agent",
                serde_json::json!({"message": SUBAGENT_TASK}),
            ),
            Reply::tool(
                "multi_agent_v1__wait_agent",
                serde_json::json!({"targets": ["{{agent_id}}"], "timeout_ms": 60000}),
            ),
            Reply::text("The subagent saw the repository."),
        ],
        // The CLIs retry: refuse every request.
        _ => vec![Reply::fail(401); 20],
    };
    let server = match label {
        "subagent" | "subagent-v2" => ModelServer::start_with_branches(
            script,
            vec![(
                SUBAGENT_TASK,
                vec![
                    Reply::tool("exec_command", serde_json::json!({"cmd": "ls -a"})),
                    Reply::text("Seen: a git repository."),
                ],
            )],
        ),
        _ => ModelServer::start(script),
    };
    let run = Run {
        agent,
        server: &server,
        workdir: &work,
        home: &home,
    };
    let chosen = agent.takes_session_id().then_some(SESSION);
    let mut command = run.command(PROMPT, chosen, None);
    if label == "subagent-v2" {
        command.args(["--enable", "multi_agent_v2"]);
    }
    let (ok, stdout) = run_to_end(command, agent);
    assert_eq!(
        ok,
        label != "401",
        "{} {label}: exit status not as expected",
        agent.program()
    );
    stdout
}

/// A rollout of Codex's `label` run: the spawned agent's (whose session
/// names a parent thread) or the main agent's.
fn rollout(agent: Agent, label: &str, spawned: bool) -> String {
    let sessions =
        PathBuf::from(ROOT).join(format!("{}-{label}/home/.codex/sessions", agent.program()));
    let mut dirs = vec![sessions];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).expect("sessions folder").flatten() {
            let p = e.path();
            if p.is_dir() {
                dirs.push(p);
                continue;
            }
            let text = std::fs::read_to_string(&p).expect("rollout");
            let first = text.lines().next().unwrap_or("");
            if first.contains("\"parent_thread_id\"") == spawned {
                return text;
            }
        }
    }
    panic!("no such rollout under {ROOT}");
}

/// Runs `c` to its end (at most 300 s); whether it exited 0, and its stdout.
fn run_to_end(mut c: Command, agent: Agent) -> (bool, Vec<u8>) {
    let mut child = c
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let until = Instant::now() + Duration::from_secs(300);
    let mut stdout = child.stdout.take().expect("stdout");
    let reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        std::io::Read::read_to_end(&mut stdout, &mut buf).expect("read stdout");
        buf
    });
    while child.try_wait().expect("wait").is_none() {
        if Instant::now() > until {
            let _ = child.kill();
            panic!("{} did not finish within 300 s", agent.program());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().expect("output");
    eprint!("{}", String::from_utf8_lossy(&out.stderr));
    (out.status.success(), reader.join().expect("reader"))
}
