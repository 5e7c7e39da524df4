//! Prompt phases on a built-in CLI adapter (`cli = "claude"`), with the
//! real CLIs run headless against the scripted model server.

use baton_testkit::TestProject;
use baton_testkit::agents::Agent;
use baton_testkit::model_server::{ModelServer, Reply};
use serde_json::json;

/// `[agents.cc]`: baton's built-in adapter for `agent`, pointed at
/// `server`; and workflow `w`, one prompt phase on it.
/// Returns the agent's config home, removed when dropped.
#[must_use]
fn agent_setup(p: &TestProject, agent: Agent, server: &ModelServer) -> tempfile::TempDir {
    let dir = tempfile::Builder::new()
        .prefix("baton-agent-home-")
        .tempdir()
        .unwrap();
    let home = dir.path();
    let cfg = p.root().join(".baton/config.toml");
    let mut text = fs_err::read_to_string(&cfg).unwrap();
    text.push_str(&agent.baton_config("cc", server, home));
    fs_err::write(&cfg, text).unwrap();
    p.workflow(
        "w",
        "name = \"w\"\n[[phase]]\nid = \"write\"\nagent = \"cc\"\nmax_attempts = 1\nprompt = \"Write the greeting for {{task}}\"\n",
    );
    dir
}

#[must_use]
fn claude_agent(p: &TestProject, server: &ModelServer) -> tempfile::TempDir {
    agent_setup(p, Agent::Claude, server)
}

/// Every built-in adapter: a prompt phase on the real CLI writes a file
/// through the CLI's own tool, and the agent's last message is the phase
/// summary.
fn a_prompt_phase_runs_on(agent: Agent) {
    let p = TestProject::new();
    let target = p.root().join("hello.txt");
    let (tool, args) = agent.write_tool(&target, "hi");
    let server = ModelServer::start(vec![Reply::tool(tool, args), Reply::text("all written")]);
    let _home = agent_setup(&p, agent, &server);
    let (code, _, err) = p.run(&["run", "w", "the team", "--id", "t"]);
    assert_eq!(code, 0, "{}: {err}", agent.program());
    assert_eq!(
        fs_err::read_to_string(&target).unwrap_or_default().trim(),
        "hi"
    );
    let doc = p.state("t");
    assert_eq!(doc["completed_phases"][0]["summary"], "all written");
    // Its native session is journaled (before the CLI starts where baton
    // chooses the id), with the folder it ran in.
    let journal = p.journal("t");
    let at = |kind: &str| journal.iter().position(|e| e["kind"] == kind);
    let session = at("agent_session").expect("an agent_session event");
    if agent.takes_session_id() {
        assert!(
            session < at("phase_process").unwrap(),
            "journaled before the CLI started"
        );
    }
    let recorded = &doc["completed_phases"][0]["agent_session"];
    assert_eq!(recorded["cli"], agent.program());
    assert!(
        !recorded["native_id"].as_str().unwrap_or("").is_empty(),
        "{recorded}"
    );
    assert_eq!(recorded["cwd"], p.root().display().to_string());
    // With the CLI's version (an update can orphan old sessions) and the
    // tokens the scripted server reported.
    let pinned = agent.pinned_version();
    let version = doc["phases"][0]["agent_runs"][0]["session"]["version"]
        .as_str()
        .unwrap_or_default();
    assert!(version.contains(pinned), "{}: {version:?}", agent.program());
    let tokens = &doc["completed_phases"][0]["tokens"];
    assert!(tokens["input"].as_u64().unwrap() > 0, "{tokens}");
    assert!(tokens["output"].as_u64().unwrap() > 0, "{tokens}");
    assert_eq!(doc["tokens"], *tokens, "the task's total");
    // `baton log` shows what the agent did.
    let (_, log, _) = p.run(&["log", "t"]);
    assert!(log.contains("→ "), "{log}");
    assert!(log.contains("hello.txt"), "{log}");
    assert!(
        server.model_requests()[0]
            .body
            .to_string()
            .contains("Write the greeting for the team")
    );
}

#[test]
fn a_prompt_phase_runs_on_claude_code() {
    a_prompt_phase_runs_on(Agent::Claude);
}

#[test]
fn a_prompt_phase_runs_on_codex() {
    a_prompt_phase_runs_on(Agent::Codex);
}

#[test]
fn a_prompt_phase_runs_on_gemini_cli() {
    a_prompt_phase_runs_on(Agent::Gemini);
}

#[test]
fn a_prompt_phase_runs_on_qwen_code() {
    a_prompt_phase_runs_on(Agent::Qwen);
}

#[test]
fn a_prompt_phase_runs_on_opencode() {
    a_prompt_phase_runs_on(Agent::Opencode);
}

#[test]
fn a_prompt_phase_runs_on_copilot() {
    a_prompt_phase_runs_on(Agent::Copilot);
}

#[test]
fn a_prompt_phase_runs_on_droid() {
    a_prompt_phase_runs_on(Agent::Droid);
}

#[test]
fn a_prompt_phase_runs_claude_code_and_reads_its_stream() {
    let p = TestProject::new();
    let target = p.root().join("hello.txt");
    let server = ModelServer::start(vec![
        Reply::tool("Write", json!({ "file_path": target, "content": "hi" })),
        Reply::text("all written"),
    ]);
    let _home = claude_agent(&p, &server);
    let (code, _, err) = p.run(&["run", "w", "the team", "--id", "t"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(fs_err::read_to_string(&target).unwrap(), "hi");
    let doc = p.state("t");
    let phase = &doc["completed_phases"][0];
    assert_eq!(
        phase["summary"], "all written",
        "the summary is the agent's last message"
    );
    let output =
        fs_err::read_to_string(p.root().join(phase["output_file"].as_str().unwrap())).unwrap();
    assert!(
        output.contains("→ Write"),
        "the output is a readable transcript: {output}"
    );
    // The rendered prompt reached the model.
    assert!(
        server.model_requests()[0]
            .body
            .to_string()
            .contains("Write the greeting for the team")
    );
}

#[test]
fn a_refused_write_fails_the_phase_although_claude_exits_0() {
    let p = TestProject::new();
    let outside = tempfile::tempdir().unwrap();
    let server = ModelServer::start(vec![
        Reply::tool(
            "Write",
            json!({ "file_path": outside.path().join("x.txt"), "content": "no" }),
        ),
        Reply::text("I could not write it"),
    ]);
    let _home = claude_agent(&p, &server);
    let (code, _, err) = p.run(&["run", "w", "x", "--id", "t"]);
    assert_eq!(code, 1, "the task fails: {err}");
    assert!(!outside.path().join("x.txt").exists());
    assert!(err.contains("permission denied"), "{err}");
}

/// Copilot and droid exit 0 when a tool is refused; their stream says so,
/// and the phase fails as Claude's does. With `permission = "read-only"`
/// Copilot denies its write tool and droid withholds its own.
fn a_refused_write_fails_the_phase_on(agent: Agent) {
    let p = TestProject::new();
    let target = p.root().join("x.txt");
    let (tool, args) = agent.write_tool(&target, "no");
    let server = ModelServer::start(vec![
        Reply::tool(tool, args),
        Reply::text("I could not write it"),
    ]);
    let home = agent_setup(&p, agent, &server);
    let cfg = p.root().join(".baton/config.toml");
    let text = fs_err::read_to_string(&cfg).unwrap().replace(
        "[agents.cc.env]",
        "permission = \"read-only\"\n[agents.cc.env]",
    );
    fs_err::write(&cfg, text).unwrap();
    let (code, _, err) = p.run(&["run", "w", "x", "--id", "t"]);
    assert_eq!(code, 1, "{}: the task fails: {err}", agent.program());
    assert!(!target.exists());
    assert!(err.contains("permission denied"), "{err}");
    assert!(err.contains("exited 0 but failed"), "{err}");
    drop(home);
}

#[test]
fn a_refused_write_fails_the_phase_although_copilot_exits_0() {
    a_refused_write_fails_the_phase_on(Agent::Copilot);
}

#[test]
fn a_refused_write_fails_the_phase_although_droid_exits_0() {
    a_refused_write_fails_the_phase_on(Agent::Droid);
}

#[test]
fn agent_config_mistakes_are_refused_with_a_hint() {
    let p = TestProject::new();
    let cfg = p.root().join(".baton/config.toml");
    let base = fs_err::read_to_string(&cfg).unwrap();
    for (bad, says) in [
        (
            "[agents.x]\ncli = \"claude\"\ncommand = [\"claude\"]\n",
            "both cli and command",
        ),
        (
            "[agents.x]\ncommand = [\"a\"]\nmodel = \"m\"\n",
            "model, args, permission and mcp go with a built-in cli",
        ),
        (
            "[agents.x]\ncommand = [\"a\"]\nmcp = false\n",
            "model, args, permission and mcp go with a built-in cli",
        ),
        // Crush has no built-in adapter (it cannot run offline: a generic
        // `command` preset).
        ("[agents.x]\ncli = \"crush\"\n", "unknown variant `crush`"),
        (
            "[agents.x]\ncli = \"codex\"\npermission = \"root\"\n",
            "unknown variant `root`, expected one of `edit`, `read-only`, `full`",
        ),
    ] {
        fs_err::write(&cfg, format!("{base}\n{bad}")).unwrap();
        let (code, _, err) = p.run(&["ls"]);
        assert_eq!(code, 2, "{bad}: {err}");
        assert!(err.contains(says), "{bad}: {err}");
    }
}
