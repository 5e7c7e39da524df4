//! Interactive instances of the real agent CLIs: each CLI's own terminal
//! UI in baton's tmux session, against the scripted model server. A person
//! attaches with `baton agent attach` and talks to it; the agent calls
//! baton's MCP tools from inside its UI; a review's feedback is pasted into
//! its pane as one message; its native session is the one baton recorded;
//! and ending the instance saves the pane and ends the CLI.

mod common;

use baton_testkit::agents::Agent;
use baton_testkit::model_server::{ModelServer, Reply};
use baton_testkit::{Tmux, baton_bin, process_gone, wait_for};
use common::instances::*;
use serde_json::{Value, json};
use std::path::Path;

/// What a person has already done once with their CLI (onboarding, the
/// API key, trusting the folder), written into its config home so the UI
/// starts straight at its prompt.
fn first_run_done(agent: Agent, home: &Path, worktree: &Path) {
    match agent {
        Agent::Claude => {
            let dir = home.join(".claude");
            fs_err::create_dir_all(&dir).unwrap();
            let cfg = json!({
                "hasCompletedOnboarding": true,
                "theme": "dark",
                "customApiKeyResponses": {"approved": ["scripted"], "rejected": []},
                "projects": {worktree.display().to_string(): {
                    "hasTrustDialogAccepted": true,
                    "hasCompletedProjectOnboarding": true
                }}
            });
            fs_err::write(dir.join(".claude.json"), cfg.to_string()).unwrap();
        }
        Agent::Codex => {
            // Agent::setup wrote its config.toml: the folder is trusted.
            let cfg = home.join(".codex/config.toml");
            let mut text = fs_err::read_to_string(&cfg).unwrap();
            text.push_str(&format!(
                "\n[projects.\"{}\"]\ntrust_level = \"trusted\"\n",
                worktree.display()
            ));
            fs_err::write(&cfg, text).unwrap();
        }
        Agent::Copilot => {
            let dir = home.join(".copilot");
            fs_err::create_dir_all(&dir).unwrap();
            let cfg = json!({"trustedFolders": [worktree.display().to_string()]});
            fs_err::write(dir.join("config.json"), cfg.to_string()).unwrap();
        }
        Agent::Droid => {
            // Agent::setup wrote its settings (the scripted model).
            let file = home.join(".factory/settings.json");
            let mut cfg: Value =
                serde_json::from_str(&fs_err::read_to_string(&file).unwrap()).unwrap();
            cfg["trustedFolders"] =
                json!({worktree.display().to_string(): {"trustedAt": "2026-11-24T00:00:00Z"}});
            fs_err::write(&file, cfg.to_string()).unwrap();
        }
        // Agent::setup chose the API key; --skip-trust (Gemini) and the
        // approval mode leave nothing to ask.
        Agent::Gemini | Agent::Qwen | Agent::Opencode => {}
    }
}

/// The whole life of an interactive instance of `agent`, whose model
/// calls baton's checkpoint as `checkpoint_tool`.
fn a_person_and_baton_share_the_terminal_ui_of(agent: Agent, checkpoint_tool: &str) {
    let server = ModelServer::start(vec![
        Reply::tool(checkpoint_tool, json!({"note": "read the code"})),
        Reply::text("PANE-HELLO-1"),
        Reply::text("PANE-HELLO-2"),
        Reply::text("PANE-HELLO-3"),
    ]);
    let home = tempfile::tempdir().unwrap();
    let (p, _remote) = project();
    let cfg = p.root().join(".baton/config.toml");
    let mut text = fs_err::read_to_string(&cfg).unwrap();
    // `--title` of the tests' OpenCode agent is an option of `opencode
    // run`, which its terminal UI does not take.
    let agent_cfg = agent
        .baton_config("tui", &server, home.path())
        .replace("args = ['--title', 'baton test']\n", "");
    text.push_str(&agent_cfg);
    fs_err::write(&cfg, text).unwrap();
    first_run_done(agent, home.path(), &p.root().join(".wt/c1"));
    ok(
        &p,
        &[
            "agent",
            "spawn",
            "say hello",
            "--id",
            "c1",
            "--agent",
            "tui",
            "--interactive",
        ],
    );
    let v = show(&p, "c1");
    assert_eq!(v["tmux"]["state"], "running", "{v}");
    let term = Tmux::start(&format!(
        "cd {} && {} agent attach c1",
        p.root().display(),
        baton_bin().display()
    ));
    term.wait_for("PANE-HELLO-1", 60);
    // Its first message was the instance's instructions; its tool call
    // reached baton's journal through baton mcp.
    let first = &server.model_requests()[0].body;
    assert!(first.to_string().contains("say hello"), "{first}");
    let log = ok(&p, &["agent", "log", "c1", "--json"]);
    assert!(log.contains("read the code"), "{log}");

    // A person types into it.
    term.send(&["what next?"]);
    // A person's Enter comes a moment after the words (a terminal UI
    // takes an Enter right behind fast keys as part of a paste).
    std::thread::sleep(std::time::Duration::from_millis(300));
    term.send(&["Enter"]);
    term.wait_for("PANE-HELLO-2", 60);

    // A review's feedback arrives as one message, pasted.
    ok(&p, &["agent", "review", "c1", "--agent", "reviewer"]);
    term.wait_for("PANE-HELLO-3", 90);
    let asked = server.model_requests();
    let last = asked.last().unwrap().body.to_string();
    assert!(
        last.contains("Review 1 of your work is done") && last.contains("please write tests.txt"),
        "{last}"
    );
    assert_eq!(show(&p, "c1-r1")["state"]["feedback_delivered"], true);

    // Where baton chooses the session id, the native session is the one
    // it recorded for the instance.
    let v = show(&p, "c1");
    if agent.takes_session_id() {
        let session = v["resources"]["agent_session_id"].as_str().unwrap();
        let found = walk(home.path()).iter().any(|f| {
            f.to_string_lossy().contains(session)
                || fs_err::read_to_string(f).is_ok_and(|t| t.contains(session))
        });
        assert!(found, "no transcript for session {session}");
    }

    let pids = processes_in(&p.root().join(".wt/c1"));
    assert!(!pids.is_empty(), "the CLI runs in the worktree");
    let k: Value = serde_json::from_str(&ok(&p, &["agent", "kill", "c1", "--json"])).unwrap();
    assert_eq!(k["failed"], Value::Array(vec![]), "{k}");
    wait_for("the CLI to be ended", || {
        pids.iter().all(|p| process_gone(*p)).then_some(())
    });
    let pane = fs_err::read_to_string(p.root().join(".baton/agents/c1/pane.log")).unwrap();
    assert!(pane.contains("PANE-HELLO-3"), "{pane}");
}

/// The processes working in `dir`.
fn processes_in(dir: &Path) -> Vec<u32> {
    fs_err::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| fs_err::read_link(format!("/proc/{pid}/cwd")).is_ok_and(|d| d == dir))
        .collect()
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in fs_err::read_dir(dir).into_iter().flatten().flatten() {
        let path = e.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

#[test]
fn claude_code_in_tmux() {
    a_person_and_baton_share_the_terminal_ui_of(Agent::Claude, "mcp__baton__checkpoint");
}

#[test]
fn codex_in_tmux() {
    a_person_and_baton_share_the_terminal_ui_of(Agent::Codex, "mcp__baton__checkpoint");
}

#[test]
fn gemini_cli_in_tmux() {
    a_person_and_baton_share_the_terminal_ui_of(Agent::Gemini, "mcp_baton_checkpoint");
}

#[test]
fn qwen_code_in_tmux() {
    a_person_and_baton_share_the_terminal_ui_of(Agent::Qwen, "mcp__baton__checkpoint");
}

#[test]
fn opencode_in_tmux() {
    a_person_and_baton_share_the_terminal_ui_of(Agent::Opencode, "baton_checkpoint");
}

#[test]
fn droid_in_tmux() {
    a_person_and_baton_share_the_terminal_ui_of(Agent::Droid, "baton___checkpoint");
}

#[test]
fn copilot_in_tmux() {
    a_person_and_baton_share_the_terminal_ui_of(Agent::Copilot, "baton-checkpoint");
}
