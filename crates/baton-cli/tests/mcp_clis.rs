//! The real agent CLIs baton tells about its MCP server (Claude Code,
//! Codex, OpenCode, Qwen Code, Gemini CLI, Copilot, droid) calling baton's tools in an agent phase, driven by the
//! scripted model server, which asks for the tool by the name each CLI
//! gives it: the CLI starts `baton mcp` with what baton wrote into its
//! configuration, and the call reaches baton's journal. Each also over
//! Streamable HTTP: with `[mcp] url`, the CLI reaches a running `baton
//! serve`'s `/mcp` with the capability baton granted the attempt, read
//! from its environment (no argument, file or log holds the token).

use baton_testkit::TestProject;
use baton_testkit::agents::Agent;
use baton_testkit::model_server::{ModelServer, Reply};
use serde_json::json;

fn checkpoint_through(agent: Agent, tool_name: &str) -> TestProject {
    checkpoint_via(agent, tool_name, None)
}

/// The same call over Streamable HTTP: `[mcp] url` names a running `baton
/// serve`'s `/mcp`, and the CLI sends the capability baton handed the
/// attempt (from its environment, never its arguments).
fn checkpoint_over_http(agent: Agent, tool_name: &str) {
    let p = TestProject::new();
    let server = baton_testkit::serve::Server::start(
        &p,
        &[("BATON_SERVER_TOKEN", baton_testkit::serve::TOKEN)],
    );
    let p = checkpoint_via(agent, tool_name, Some((p, &server.url)));
    // The token went through the environment only: no argument, no file
    // baton wrote, no log holds it.
    let mut seen = Vec::new();
    for entry in walk(&p.root().join(".baton/tasks/t")) {
        let text = fs_err::read(&entry).unwrap_or_default();
        if text.windows(9).any(|w| w == b"batoncap_") {
            seen.push(entry.display().to_string());
        }
    }
    assert!(seen.is_empty(), "a capability was written to {seen:?}");
    assert!(server.log().is_empty() || !server.log().contains("batoncap_"));
    assert_eq!(server.stop().code(), Some(0));
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
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

fn checkpoint_via(agent: Agent, tool_name: &str, http: Option<(TestProject, &str)>) -> TestProject {
    let server = ModelServer::start(vec![
        Reply::tool(tool_name, json!({"note": "half way there"})),
        Reply::text("all done"),
    ]);
    let home = tempfile::tempdir().unwrap();
    let (p, url) = match http {
        Some((p, url)) => (p, Some(url)),
        None => (TestProject::new(), None),
    };
    let cfg = p.root().join(".baton/config.toml");
    let mut text = fs_err::read_to_string(&cfg).unwrap();
    text.push_str(&agent.baton_config("cc", &server, home.path()));
    if let Some(url) = url {
        text.push_str(&format!("\n[mcp]\nurl = \"{url}/mcp\"\n"));
    }
    fs_err::write(&cfg, text).unwrap();
    p.workflow(
        "w",
        "name = \"w\"\n[[phase]]\nid = \"work\"\nagent = \"cc\"\nmax_attempts = 1\nprompt = \"Work on {{task}}\"\n",
    );
    if agent == Agent::Droid {
        // droid reads its servers from the project's own file, which
        // baton adds to for the run.
        fs_err::create_dir_all(p.root().join(".factory")).unwrap();
        fs_err::write(p.root().join(".factory/mcp.json"), USERS_DROID_MCP).unwrap();
    }
    let (code, out, err) = p.run(&["run", "w", "the thing", "--id", "t"]);
    assert_eq!(code, 0, "{out}\n{err}");
    let notes: Vec<String> = p
        .journal("t")
        .iter()
        .filter(|e| e["kind"] == "note")
        .map(|e| e["text"].as_str().unwrap_or("").to_string())
        .collect();
    let stderr: String = walk(&p.root().join(".baton/tasks/t/logs"))
        .iter()
        .filter(|f| f.extension().is_some_and(|e| e == "err"))
        .map(|f| fs_err::read_to_string(f).unwrap_or_default())
        .collect();
    assert!(
        notes.iter().any(|n| n == "checkpoint: half way there"),
        "{} did not call baton's checkpoint: notes {notes:?}; its stderr: {}; requests: {:?}",
        agent.program(),
        &stderr[stderr.len().saturating_sub(3000)..],
        server
            .model_requests()
            .iter()
            .map(|r| {
                let names: Vec<String> = r.body["tools"]
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .map(|t| format!("{}:{}", t["type"], t["name"]))
                            .collect()
                    })
                    .unwrap_or_default();
                let b = r.body.to_string();
                let i = b
                    .find("function_call_output")
                    .or_else(|| b.find("functionResponse"))
                    .unwrap_or(0);
                format!(
                    "tools {names:?}; {}",
                    b.chars()
                        .skip(i.saturating_sub(200))
                        .take(800)
                        .collect::<String>()
                )
            })
            .collect::<Vec<_>>()
    );
    p
}

/// A user's own droid MCP servers file, spaced their way.
const USERS_DROID_MCP: &str = "{\n    \"mcpServers\": {\"docs\": {\"type\": \"http\", \"url\": \"http://127.0.0.1:9/mcp\", \"disabled\": true}}\n}";

#[test]
fn opencode_calls_baton_checkpoint() {
    checkpoint_through(Agent::Opencode, "baton_checkpoint");
}

#[test]
fn claude_code_calls_baton_checkpoint() {
    checkpoint_through(Agent::Claude, "mcp__baton__checkpoint");
}

#[test]
fn codex_calls_baton_checkpoint() {
    checkpoint_through(Agent::Codex, "mcp__baton__checkpoint");
}

#[test]
fn claude_code_calls_baton_checkpoint_over_http_with_its_capability() {
    checkpoint_over_http(Agent::Claude, "mcp__baton__checkpoint");
}

#[test]
fn codex_calls_baton_checkpoint_over_http_with_its_capability() {
    checkpoint_over_http(Agent::Codex, "mcp__baton__checkpoint");
}

#[test]
fn gemini_cli_calls_baton_checkpoint_over_http_with_its_capability() {
    checkpoint_over_http(Agent::Gemini, "mcp_baton_checkpoint");
}

#[test]
fn qwen_code_calls_baton_checkpoint_over_http_with_its_capability() {
    checkpoint_over_http(Agent::Qwen, "mcp__baton__checkpoint");
}

#[test]
fn opencode_calls_baton_checkpoint_over_http_with_its_capability() {
    checkpoint_over_http(Agent::Opencode, "baton_checkpoint");
}

#[test]
fn copilot_calls_baton_checkpoint_over_http_with_its_capability() {
    checkpoint_over_http(Agent::Copilot, "baton-checkpoint");
}

#[test]
fn droid_calls_baton_checkpoint_over_http_with_its_capability() {
    checkpoint_over_http(Agent::Droid, "baton___checkpoint");
}

#[test]
fn gemini_cli_calls_baton_checkpoint() {
    checkpoint_through(Agent::Gemini, "mcp_baton_checkpoint");
}

#[test]
fn qwen_code_calls_baton_checkpoint() {
    checkpoint_through(Agent::Qwen, "mcp__baton__checkpoint");
}

#[test]
fn copilot_calls_baton_checkpoint() {
    checkpoint_through(Agent::Copilot, "baton-checkpoint");
}

#[test]
fn droid_calls_baton_checkpoint_and_finds_its_servers_file_as_it_was() {
    let p = checkpoint_through(Agent::Droid, "baton___checkpoint");
    assert_eq!(
        fs_err::read_to_string(p.root().join(".factory/mcp.json")).unwrap(),
        USERS_DROID_MCP,
        "the user's file, byte for byte, after the run"
    );
}

/// Gemini CLI skips a settings file below a folder others may write (a
/// project under /tmp): baton gives it one in a folder of its own under
/// the user's private state instead, so the run has baton's server
/// wherever the project lives, and nothing goes where Gemini would skip
/// it.
#[test]
fn gemini_cli_below_a_folder_others_may_write_gets_its_settings_from_a_private_folder() {
    let server = ModelServer::start(vec![Reply::text("all done")]);
    let home = tempfile::tempdir().unwrap();
    let p = TestProject::new();
    assert!(
        p.root().starts_with(std::env::temp_dir()),
        "a project under /tmp"
    );
    let cfg = p.root().join(".baton/config.toml");
    let mut text = fs_err::read_to_string(&cfg).unwrap();
    text.push_str(&Agent::Gemini.baton_config("g", &server, home.path()));
    fs_err::write(&cfg, text).unwrap();
    p.workflow(
        "w",
        "name = \"w\"\n[[phase]]\nid = \"work\"\nagent = \"g\"\nmax_attempts = 1\nprompt = \"Work on {{task}}\"\n",
    );
    let (code, out, err) = p.run(&["run", "w", "the thing", "--id", "t"]);
    assert_eq!(code, 0, "{out}\n{err}");
    let unseen = p
        .journal("t")
        .iter()
        .filter(|e| e["kind"] == "note")
        .filter_map(|e| e["text"].as_str().map(str::to_string))
        .find(|n| n.starts_with("Gemini CLI is not told about baton mcp"));
    assert_eq!(unseen, None, "Gemini CLI was told about baton's server");
    assert!(
        !p.root().join(".baton/tasks/t/mcp").exists(),
        "no settings file where Gemini would skip it"
    );
    // The tools it was offered include baton's.
    let offered = server.model_requests()[0].body.to_string();
    assert!(offered.contains("mcp_baton_checkpoint"), "{offered}");
}
