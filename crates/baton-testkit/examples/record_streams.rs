//! Records what the real agent CLIs print on stdout, as fixtures for the
//! stream parsers (crates/baton-core/tests/fixtures/streams/): a `write`
//! run (a write-file tool call, then "done") and a `401` run (every model
//! request refused with HTTP 401), named `<cli>-<version>-<run>.jsonl`.
//!
//! Each run is offline, against the scripted model server, in a fresh git
//! repository with its own config home under a fixed folder
//! (`/tmp/baton-stream-record`), so the paths in the streams are the same
//! on every recording. The CLIs that take a session id up front get
//! `11111111-2222-4333-8444-555555555555`. After recording again, update
//! the ids expected in crates/baton-core/tests/agent_streams.rs.
//!
//! ```sh
//! BATON_AGENT_CLIS=… BATON_AGENT_CLIS_CACHE=… cargo run -p baton-testkit --example record_streams [CLI…]
//! ```
//!
//! Without arguments it records the CLIs whose fixtures were made this way
//! (Copilot and droid; the others were recorded by hand, see
//! docs/dev/agent-clis.md).

use baton_testkit::agents::{Agent, Run};
use baton_testkit::model_server::{ModelServer, Reply};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const ROOT: &str = "/tmp/baton-stream-record";
const SESSION: &str = "11111111-2222-4333-8444-555555555555";
const PROMPT: &str = "write hello please";

fn main() {
    let only: Vec<String> = std::env::args().skip(1).collect();
    let out_dir =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../baton-core/tests/fixtures/streams");
    std::fs::create_dir_all(&out_dir).expect("fixtures folder");
    for agent in Agent::ALL {
        let wanted = if only.is_empty() {
            matches!(agent, Agent::Copilot | Agent::Droid)
        } else {
            only.iter().any(|o| o == agent.program())
        };
        if !wanted {
            continue;
        }
        for label in ["write", "401"] {
            let bytes = record(agent, label);
            let dest = out_dir.join(format!(
                "{}-{}-{label}.jsonl",
                agent.program(),
                agent.pinned_version()
            ));
            std::fs::write(&dest, bytes).expect("write fixture");
            println!("{}: {}", agent.program(), dest.display());
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
        // The CLIs retry: refuse every request.
        _ => vec![Reply::fail(401); 20],
    };
    let server = ModelServer::start(script);
    let run = Run {
        agent,
        server: &server,
        workdir: &work,
        home: &home,
    };
    let chosen = agent.takes_session_id().then_some(SESSION);
    let (ok, stdout) = run_to_end(run.command(PROMPT, chosen, None), agent);
    assert_eq!(
        ok,
        label == "write",
        "{} {label}: exit status not as expected",
        agent.program()
    );
    stdout
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
