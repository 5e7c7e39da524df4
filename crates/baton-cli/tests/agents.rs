//! Prompt phases on a built-in CLI adapter (`cli = "claude"`), with the
//! real Claude Code run headless against the scripted model server.

use baton_testkit::TestProject;
use baton_testkit::agents::Agent;
use baton_testkit::model_server::{ModelServer, Reply};
use serde_json::json;

/// `[agents.cc]`: the built-in Claude Code adapter, pointed at `server`,
/// with its own config folder.
fn claude_agent(p: &TestProject, server: &ModelServer) {
    let bin_dir = Agent::Claude.bin().parent().unwrap().to_path_buf();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let config_dir = p
        .root()
        .join("../claude-config-".to_string() + &std::process::id().to_string());
    let cfg = p.root().join(".baton/config.toml");
    let mut text = fs_err::read_to_string(&cfg).unwrap();
    text.push_str(&format!(
        r#"
[agents.cc]
cli = "claude"
model = "claude-sonnet-4-5"
env = {{ PATH = "{path}", ANTHROPIC_BASE_URL = "{url}", ANTHROPIC_API_KEY = "scripted", CLAUDE_CONFIG_DIR = "{config}", CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC = "1", DISABLE_AUTOUPDATER = "1" }}
"#,
        url = server.base_url(),
        config = config_dir.display()
    ));
    fs_err::write(&cfg, text).unwrap();
    p.workflow(
        "w",
        "name = \"w\"\n[[phase]]\nid = \"write\"\nagent = \"cc\"\nmax_attempts = 1\nprompt = \"Write the greeting for {{task}}\"\n",
    );
}

#[test]
fn a_prompt_phase_runs_claude_code_and_reads_its_stream() {
    let p = TestProject::new();
    let target = p.root().join("hello.txt");
    let server = ModelServer::start(vec![
        Reply::tool("Write", json!({ "file_path": target, "content": "hi" })),
        Reply::text("all written"),
    ]);
    claude_agent(&p, &server);
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
    claude_agent(&p, &server);
    let (code, _, err) = p.run(&["run", "w", "x", "--id", "t"]);
    assert_eq!(code, 1, "the task fails: {err}");
    assert!(!outside.path().join("x.txt").exists());
    assert!(err.contains("permission denied"), "{err}");
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
            "model and args go with a built-in cli",
        ),
        ("[agents.x]\ncli = \"copilot\"\n", "unknown variant"),
    ] {
        fs_err::write(&cfg, format!("{base}\n{bad}")).unwrap();
        let (code, _, err) = p.run(&["ls"]);
        assert_eq!(code, 2, "{bad}: {err}");
        assert!(err.contains(says), "{bad}: {err}");
    }
}
