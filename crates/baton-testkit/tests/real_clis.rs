//! The seven real agent CLIs run headless, offline, against the scripted
//! model server: each writes a file through its own tool, and its stream
//! reads as a session with an id, a tool call with its result, and a
//! successful end. (The CLIs are installed by ./scripts/test; a missing
//! one fails the test.)

use baton_agents::{AgentEvent, Cli, StreamParser};
use baton_testkit::agents::{Agent, Run};
use baton_testkit::model_server::{ModelServer, Reply};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// A fresh UUID-shaped id (the CLIs that take one want a UUID).
fn uuid() -> String {
    let n = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let h = format!("{:032x}", n ^ ((std::process::id() as u128) << 64));
    format!(
        "{}-{}-4{}-8{}-{}",
        &h[0..8],
        &h[8..12],
        &h[13..16],
        &h[17..20],
        &h[20..32]
    )
}

fn cli_of(a: Agent) -> Cli {
    baton_agents::by_name(a.program()).expect("a built-in adapter of that name")
}

/// Runs the CLI once and returns its parsed stream and its stderr; panics
/// unless it exits 0 within 180 s.
fn run_once(
    run: &Run<'_>,
    prompt: &str,
    session: Option<&str>,
    resume: Option<&str>,
) -> (Vec<AgentEvent>, String) {
    let agent = run.agent;
    let mut child = run
        .command(prompt, session, resume)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The first OpenCode run fetches its provider package: allow for it.
    let until = Instant::now() + Duration::from_secs(180);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > until {
            let _ = child.kill();
            panic!("{} did not finish within 180 s", agent.program());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.success(),
        "{} exited {}: {stderr}",
        agent.program(),
        out.status
    );
    let mut parser = StreamParser::new(cli_of(agent));
    let mut events: Vec<AgentEvent> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .flat_map(|l| parser.line(l))
        .collect();
    // Copilot's tokens are in the file it writes at the end.
    if let Some(f) = run.usage_file() {
        let text = std::fs::read_to_string(&f).unwrap_or_default();
        events.extend(cli_of(agent).usage_from_file(&text));
    }
    (events, stderr)
}

/// A temp folder holding an empty git repository (`repo`) and a config
/// home for the CLI (`home`).
fn fresh_repo() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let tmp = tempfile::Builder::new()
        .prefix("baton-cli-")
        .tempdir()
        .unwrap();
    let work = tmp.path().join("repo");
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    let init = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(&work)
        .status()
        .unwrap();
    assert!(init.success());
    (tmp, work, home)
}

fn session_of(events: &[AgentEvent]) -> String {
    events
        .iter()
        .find_map(|e| match e {
            AgentEvent::SessionStarted { native_id } => Some(native_id.clone()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no session id in the stream: {events:?}"))
}

fn writes_a_file_through_its_tool(agent: Agent) {
    let (_tmp, work, home) = fresh_repo();
    let target = work.join("hello.txt");
    let content = format!("hi from {}", agent.program());
    let (tool, args) = agent.write_tool(&target, &content);
    let server = ModelServer::start(vec![Reply::tool(tool, args), Reply::text("done")]);
    let chosen = agent.takes_session_id().then(uuid);
    let run = Run {
        agent,
        server: &server,
        workdir: &work,
        home: &home,
    };
    let (events, stderr) = run_once(&run, "write hello please", chosen.as_deref(), None);
    assert_eq!(
        std::fs::read_to_string(&target).unwrap_or_default().trim(),
        content,
        "{stderr}"
    );
    let session = session_of(&events);
    if let Some(c) = &chosen {
        assert_eq!(&session, c, "the session id chosen up front is used");
    }
    assert!(
        events
            .iter()
            .any(|e| matches!(e, AgentEvent::ToolCall { .. })),
        "{events:?}"
    );
    assert!(
        events
            .iter()
            .any(|e| matches!(e, AgentEvent::ToolResult { ok: true, .. })),
        "{events:?}"
    );
    assert!(
        events
            .iter()
            .any(|e| matches!(e, AgentEvent::Usage { output_tokens, .. } if *output_tokens > 0)),
        "{events:?}"
    );
    assert!(
        matches!(
            events
                .iter()
                .rev()
                .find(|e| matches!(e, AgentEvent::Final { .. })),
            Some(AgentEvent::Final { ok: true, .. })
        ),
        "{events:?}"
    );
    // The prompt reached the model, and the tool call was answered.
    let model = server.model_requests();
    assert!(model.len() >= 2, "{} model requests", model.len());
    assert!(model[0].body.to_string().contains("write hello please"));
}

#[test]
fn claude_code_writes_a_file() {
    writes_a_file_through_its_tool(Agent::Claude);
}

#[test]
fn codex_writes_a_file() {
    writes_a_file_through_its_tool(Agent::Codex);
}

#[test]
fn gemini_cli_writes_a_file() {
    writes_a_file_through_its_tool(Agent::Gemini);
}

#[test]
fn qwen_code_writes_a_file() {
    writes_a_file_through_its_tool(Agent::Qwen);
}

#[test]
fn opencode_writes_a_file() {
    writes_a_file_through_its_tool(Agent::Opencode);
}

#[test]
fn copilot_writes_a_file() {
    writes_a_file_through_its_tool(Agent::Copilot);
}

#[test]
fn droid_writes_a_file() {
    writes_a_file_through_its_tool(Agent::Droid);
}

/// A second run resumes the first one's native session: the same session
/// id (droid, offline, forks it: a new id), the earlier conversation (the
/// first prompt and its tool call) sent to the model again, and the new
/// work done.
fn resumes_its_own_session(agent: Agent) {
    let (_tmp, work, home) = fresh_repo();
    let (t1, a1) = agent.write_tool(&work.join("one.txt"), "first");
    let (t2, a2) = agent.write_tool(&work.join("two.txt"), "second");
    let server = ModelServer::start(vec![
        Reply::tool(t1, a1),
        Reply::text("done"),
        Reply::tool(t2, a2),
        Reply::text("done again"),
    ]);
    let run = Run {
        agent,
        server: &server,
        workdir: &work,
        home: &home,
    };
    let chosen = agent.takes_session_id().then(uuid);
    let (first, _) = run_once(&run, "write the first file", chosen.as_deref(), None);
    let id = session_of(&first);
    let before = server.model_requests().len();
    let (second, stderr) = run_once(&run, "now write the second file", None, Some(&id));
    if agent == Agent::Droid {
        assert_ne!(session_of(&second), id, "droid forks: a new id: {stderr}");
    } else {
        assert_eq!(session_of(&second), id, "the same native session: {stderr}");
    }
    assert_eq!(
        std::fs::read_to_string(work.join("two.txt"))
            .unwrap_or_default()
            .trim(),
        "second",
        "{stderr}"
    );
    let resumed = &server.model_requests()[before];
    let body = resumed.body.to_string();
    assert!(
        body.contains("write the first file") && body.contains("now write the second file"),
        "the resumed request carries the earlier conversation"
    );
}

#[test]
fn claude_code_resumes_natively() {
    resumes_its_own_session(Agent::Claude);
}

#[test]
fn codex_resumes_natively() {
    resumes_its_own_session(Agent::Codex);
}

#[test]
fn gemini_cli_resumes_natively() {
    resumes_its_own_session(Agent::Gemini);
}

#[test]
fn qwen_code_resumes_natively() {
    resumes_its_own_session(Agent::Qwen);
}

#[test]
fn opencode_resumes_natively() {
    resumes_its_own_session(Agent::Opencode);
}

#[test]
fn copilot_resumes_natively() {
    resumes_its_own_session(Agent::Copilot);
}

#[test]
fn droid_resumes_natively_by_forking() {
    resumes_its_own_session(Agent::Droid);
}
