//! `baton mcp`, judged by the official MCP SDKs as clients (Python `mcp`
//! in both of its handshakes, and TypeScript `@modelcontextprotocol/sdk`,
//! which checks every structured result against the tool's output
//! schema), and on the raw wire in the revision Codex and Gemini CLI speak
//! (2025-06-18): every tool listed with its schemas, the review loop driven
//! through the tools, refusals as tool errors carrying their codes, and
//! retried calls having their effect once.

mod common;

use baton_testkit::baton_bin;
use baton_testkit::mcp::{self, McpClient};
use common::instances::*;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

const TOOLS: [&str; 17] = [
    "checkpoint",
    "create_pr",
    "merge_back",
    "notify",
    "phase_complete",
    "push_to_github",
    "report_blocker",
    "request_approval",
    "request_decision",
    "request_review",
    "team_ack",
    "team_checkpoint",
    "team_heartbeat",
    "team_inbox",
    "team_send",
    "team_task_claim",
    "team_task_update",
];

/// Runs `client` as the agent of instance `id` (or of no instance).
fn as_agent(
    p: &baton_testkit::TestProject,
    client: McpClient,
    id: Option<&str>,
    extra: &[(&str, &str)],
    calls: Value,
) -> Value {
    let root = p.root().display().to_string();
    let mut env: Vec<(&str, &str)> = vec![("BATON_PROJECT", &root)];
    if let Some(id) = id {
        env.push(("BATON_INSTANCE", id));
    }
    let url;
    if let Some(u) = &p.database_url {
        url = u.clone();
        env.push(("BATON_DATABASE_URL", &url));
    }
    env.extend_from_slice(extra);
    mcp::run(client, &baton_bin(), p.root(), &env, &calls)
}

fn result(report: &Value, i: usize) -> &Value {
    &report["results"][i]
}

/// A tool error with `code`, and its hint.
fn assert_refused(r: &Value, code: &str) {
    assert_eq!(r["isError"], true, "{r}");
    let text = r["text"].as_str().unwrap();
    assert!(text.starts_with(&format!("{code}: ")), "{r}");
    assert!(text.contains("\nhint: "), "{r}");
}

fn check_listing(report: &Value) {
    assert_eq!(report["server"], "baton");
    assert!(
        report["instructions"]
            .as_str()
            .unwrap_or("")
            .contains("request_review"),
        "{report}"
    );
    let mut names: Vec<&str> = report["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, TOOLS);
    for t in report["tools"].as_array().unwrap() {
        assert_eq!(t["inputSchema"]["type"], "object", "{t}");
        assert!(
            t["outputSchema"].is_object(),
            "every tool returns data: {t}"
        );
        assert!(
            !t.to_string().contains("\"format\""),
            "no integer formats that clients warn about: {t}"
        );
        // The tools that only report to baton say they change nothing the
        // agent works on (droid runs them at its lowest autonomy); the
        // others say what they change.
        let a = &t["annotations"];
        let reports = [
            "checkpoint",
            "notify",
            "phase_complete",
            "request_approval",
            "request_decision",
            "report_blocker",
            "team_checkpoint",
            "team_heartbeat",
            "team_inbox",
        ];
        let reporting = reports.contains(&t["name"].as_str().unwrap());
        assert_eq!(a["readOnlyHint"], reporting, "{t}");
        if !reporting {
            assert_eq!(a["destructiveHint"], false, "{t}");
            assert_eq!(a["idempotentHint"], true, "{t}");
            let opens_world =
                ["create_pr", "push_to_github"].contains(&t["name"].as_str().unwrap());
            assert_eq!(a["openWorldHint"], opens_world, "{t}");
        }
    }
}

/// The review loop through the tools, in one client's hands: the coding
/// agent asks for a review (and its retry gets the same review), the
/// reviewer merges back (twice: once in effect), and each may call only
/// its own tools.
fn review_loop_through(client: McpClient) {
    let (p, _remote) = project();
    ok(
        &p,
        &[
            "agent",
            "spawn",
            "x",
            "--id",
            "c1",
            "--agent",
            "idle",
            "--max-reviews",
            "1",
        ],
    );
    settled(&p, "c1");
    let coding = as_agent(
        &p,
        client,
        Some("c1"),
        &[],
        json!([
            {"tool": "checkpoint", "args": {"note": "tests pass"}},
            {"tool": "checkpoint", "args": {"note": "tests pass"}},
            {"tool": "request_review", "args": {}},
            {"tool": "request_review", "args": {}},
            {"tool": "request_review", "args": {"prompt": "look at something else"}},
            {"tool": "merge_back", "args": {"feedback": "x"}},
            {"tool": "push_to_github", "args": {}},
            {"tool": "create_pr", "args": {}},
            {"tool": "checkpoint", "args": {"note": " "}},
        ]),
    );
    check_listing(&coding);
    let (c1, c2) = (result(&coding, 0), result(&coding, 1));
    assert_eq!(c1["isError"], false, "{c1}");
    assert_eq!(
        c1["structured"], c2["structured"],
        "a retried checkpoint is one"
    );
    let r = result(&coding, 2);
    assert_eq!(r["isError"], false, "{r}");
    assert_eq!(r["structured"]["review_id"], "c1-r1");
    assert_eq!(r["structured"]["iteration"], 1);
    assert_eq!(r["structured"]["branch"], "baton/c1-r1");
    assert_eq!(
        result(&coding, 3)["structured"],
        r["structured"],
        "a retried request_review answers as the first"
    );
    assert_refused(result(&coding, 4), "WORKFLOW_REVIEW_IN_PROGRESS");
    assert_refused(result(&coding, 5), "WORKFLOW_INVALID_STATE");
    assert_refused(result(&coding, 6), "WORKFLOW_INVALID_STATE");
    assert_refused(result(&coding, 7), "WORKFLOW_REVIEW_IN_PROGRESS");
    assert_refused(result(&coding, 8), "WORKFLOW_INVALID_CONFIGURATION");
    let kinds = ok(&p, &["agent", "log", "c1", "--json"]);
    assert_eq!(
        kinds.matches("\"kind\":\"checkpoint\"").count(),
        1,
        "{kinds}"
    );
    assert_eq!(kinds.matches("\"kind\":\"review_requested\"").count(), 1);

    settled(&p, "c1-r1");
    let review = as_agent(
        &p,
        client,
        Some("c1-r1"),
        &[],
        json!([
            {"tool": "request_review", "args": {}},
            {"tool": "create_pr", "args": {}},
            {"tool": "merge_back", "args": {"feedback": "add tests"}},
            {"tool": "merge_back", "args": {"feedback": "add tests"}},
            {"tool": "merge_back", "args": {"feedback": "something else"}},
        ]),
    );
    assert_refused(result(&review, 0), "WORKFLOW_INVALID_STATE");
    assert_refused(result(&review, 1), "WORKFLOW_INVALID_STATE");
    let m = result(&review, 2);
    assert_eq!(m["isError"], false, "{m}");
    assert_eq!(m["structured"]["parent_id"], "c1");
    assert_eq!(m["structured"]["review_count"], 1);
    assert_eq!(result(&review, 3)["structured"], m["structured"], "retry");
    assert_refused(result(&review, 4), "WORKFLOW_INVALID_STATE");
    let kinds = ok(&p, &["agent", "log", "c1", "--json"]);
    assert_eq!(
        kinds.matches("\"kind\":\"merged_back\"").count(),
        1,
        "{kinds}"
    );
    assert_eq!(show(&p, "c1")["state"]["review_count"], 1);

    // Past its one review; no GitHub repository to open a pull request
    // in (the remote is a local path); an instance that does not exist.
    settled(&p, "c1");
    let after = as_agent(
        &p,
        client,
        Some("c1"),
        &[],
        json!([
            {"tool": "request_review", "args": {}},
            {"tool": "create_pr", "args": {}},
        ]),
    );
    assert_refused(result(&after, 0), "WORKFLOW_MAX_REVIEWS_EXCEEDED");
    assert_refused(result(&after, 1), "WORKFLOW_PR_CREATION_FAILED");
    let ghost = as_agent(
        &p,
        client,
        Some("nope"),
        &[],
        json!([{"tool": "checkpoint", "args": {"note": "x"}}]),
    );
    assert_refused(result(&ghost, 0), "WORKFLOW_INSTANCE_NOT_FOUND");

    // Not an instance, not in a phase; then inside a phase's attempt.
    let none = as_agent(
        &p,
        client,
        None,
        &[],
        json!([
            {"tool": "request_review", "args": {}},
            {"tool": "phase_complete", "args": {"summary": "done"}},
        ]),
    );
    assert_refused(result(&none, 0), "WORKFLOW_INVALID_STATE");
    assert_refused(result(&none, 1), "WORKFLOW_INVALID_STATE");
    // Where baton puts an attempt's reports: the task's run folder.
    let run = p.root().join(".baton/tasks/t1/run");
    fs_err::create_dir_all(&run).unwrap();
    let summary = run.join("01-build.i0.a1.summary");
    let s = summary.display().to_string();
    let phase = as_agent(
        &p,
        client,
        None,
        &[("BATON_SUMMARY_FILE", &s), ("BATON_TASK_ID", "t1")],
        json!([
            {"tool": "phase_complete", "args": {"summary": "built it", "files_changed": ["a.rs"], "acceptance_criteria": ["it spins"]}},
            {"tool": "checkpoint", "args": {"note": "half way"}},
            {"tool": "checkpoint", "args": {"note": "half way"}},
            {"tool": "report_blocker", "args": {"reason": "needs a key"}},
            {"tool": "report_blocker", "args": {"reason": ""}},
        ]),
    );
    for i in 0..4 {
        assert_eq!(result(&phase, i)["isError"], false, "{}", result(&phase, i));
    }
    assert_eq!(result(&phase, 2)["structured"]["seq"], 1, "one checkpoint");
    assert_refused(result(&phase, 4), "WORKFLOW_INVALID_CONFIGURATION");
    let text = fs_err::read_to_string(&summary).unwrap();
    assert!(text.starts_with("built it"), "{text}");
    assert!(
        text.contains("a.rs") && text.contains("- it spins"),
        "{text}"
    );
    assert_eq!(
        fs_err::read_to_string(run.join("01-build.i0.a1.summary.blocker")).unwrap(),
        "needs a key"
    );
}

#[test]
fn the_python_sdk_drives_the_loop_through_server_discover() {
    review_loop_through(McpClient::PythonAuto);
}

#[test]
fn the_typescript_sdk_drives_the_loop_and_every_result_fits_its_schema() {
    review_loop_through(McpClient::TypeScript);
}

/// The codes an agent meets only when something went wrong around it,
/// each returned to it as a tool error (the review loop above covers
/// the invalid state, review in progress, configuration, unknown
/// instance, review limit and pull request codes): a fork onto a branch
/// that exists, a review agent that cannot start, a merge conflict, a
/// merge the parent's uncommitted work blocks, a review past its
/// timeout, a parent a person ended, a coding instance past its
/// execution timeout, and a review asked by an instance that does not
/// exist. `WORKFLOW_CLEANUP_FAILED` is never returned to a caller: a
/// cleanup runs after the tool's effect, and its failure is journaled
/// (see agent_instances.rs).
#[test]
fn every_code_an_agent_can_meet_reaches_it_as_a_tool_error() {
    let client = McpClient::PythonLegacy;
    let (p, _remote) = project();
    let call = |id: &str, tool: &str, args: Value| {
        let report = as_agent(
            &p,
            client,
            Some(id),
            &[],
            json!([{"tool": tool, "args": args}]),
        );
        result(&report, 0).clone()
    };
    ok(
        &p,
        &["agent", "spawn", "x", "--id", "c1", "--agent", "committer"],
    );
    let c = settled(&p, "c1");

    // A git process left the coder's worktree locked: its work cannot be
    // committed for the fork, and the coder works on.
    let out = Command::new("git")
        .args(["rev-parse", "--absolute-git-dir"])
        .current_dir(worktree(&c))
        .output()
        .unwrap();
    let lock =
        std::path::PathBuf::from(String::from_utf8(out.stdout).unwrap().trim()).join("index.lock");
    fs_err::write(&lock, "").unwrap();
    let r = call("c1", "request_review", json!({}));
    assert_refused(&r, "WORKFLOW_FORK_FAILED");
    assert!(r["text"].as_str().unwrap().contains("index.lock"), "{r}");
    assert_eq!(show(&p, "c1")["status"], "working");
    fs_err::remove_file(&lock).unwrap();

    // The agent the review would run is gone from the settings.
    let cfg = p.root().join(".baton/config.toml");
    let settings = fs_err::read_to_string(&cfg).unwrap();
    fs_err::write(
        &cfg,
        settings.replace("[agents.committer]", "[agents.renamed]"),
    )
    .unwrap();
    let r = call("c1", "request_review", json!({}));
    assert_refused(&r, "WORKFLOW_RESOURCE_ALLOCATION_FAILED");
    fs_err::write(&cfg, &settings).unwrap();
    let c1 = show(&p, "c1");
    assert_eq!(c1["status"], "working", "the coding agent works on: {c1}");

    // Both sides change mine.txt after the fork.
    let r = call("c1", "request_review", json!({}));
    assert_eq!(r["isError"], false, "{r}");
    let rid = r["structured"]["review_id"].as_str().unwrap().to_string();
    let rv = settled(&p, &rid);
    commit_file(&worktree(&c), "mine.txt", "coder's version\n");
    commit_file(&worktree(&rv), "mine.txt", "reviewer's version\n");
    let head = p.git(&["rev-parse", "baton/c1"]);
    let m = call(&rid, "merge_back", json!({"feedback": "x"}));
    assert_refused(&m, "WORKFLOW_MERGE_CONFLICT");
    assert!(m["text"].as_str().unwrap().contains("mine.txt"), "{m}");
    assert_eq!(p.git(&["rev-parse", "baton/c1"]), head, "nothing merged");

    // The reviewer takes the coder's version and adds a file the coder
    // holds uncommitted: git will not overwrite it.
    let git_in = |dir: &std::path::Path, args: &[&str]| {
        let s = Command::new("git")
            .args(args)
            .current_dir(dir)
            .status()
            .unwrap();
        assert!(s.success(), "git {args:?}");
    };
    git_in(&worktree(&rv), &["reset", "-q", "--hard", "baton/c1"]);
    commit_file(&worktree(&rv), "notes.txt", "the reviewer's notes\n");
    fs_err::write(worktree(&c).join("notes.txt"), "the coder's draft\n").unwrap();
    let m = call(&rid, "merge_back", json!({"feedback": "x"}));
    assert_refused(&m, "WORKFLOW_PARENT_UPDATE_FAILED");
    assert_eq!(
        fs_err::read_to_string(worktree(&c).join("notes.txt")).unwrap(),
        "the coder's draft\n",
        "the coder's work is as it was"
    );
    fs_err::remove_file(worktree(&c).join("notes.txt")).unwrap();
    let m = call(&rid, "merge_back", json!({"feedback": "x"}));
    assert_eq!(m["isError"], false, "{m}");
    settled(&p, "c1");

    // A review past its timeout, its agent still calling.
    ok(
        &p,
        &[
            "agent",
            "review",
            "c1",
            "--review-id",
            "late",
            "--agent",
            "idle",
            "--timeout",
            "1s",
        ],
    );
    settled(&p, "late");
    std::thread::sleep(std::time::Duration::from_millis(1200));
    let m = call("late", "merge_back", json!({"feedback": "x"}));
    assert_refused(&m, "WORKFLOW_REVIEW_TIMEOUT");

    // A person ended the coding instance; its agent still asks.
    ok(&p, &["agent", "kill", "c1"]);
    let r = call("c1", "request_review", json!({}));
    assert_refused(&r, "WORKFLOW_PARENT_INVALID_STATE");

    // A coding instance past its execution timeout.
    ok(
        &p,
        &[
            "agent",
            "spawn",
            "y",
            "--id",
            "c2",
            "--agent",
            "idle",
            "--timeout",
            "1s",
        ],
    );
    settled(&p, "c2");
    std::thread::sleep(std::time::Duration::from_millis(1200));
    for (tool, args) in [
        ("checkpoint", json!({"note": "still here"})),
        ("request_review", json!({})),
        ("create_pr", json!({})),
    ] {
        let r = call("c2", tool, args);
        assert_refused(&r, "WORKFLOW_EXECUTION_TIMEOUT");
        assert!(
            r["text"].as_str().unwrap().contains("execution_timeout"),
            "{r}"
        );
    }

    // An agent whose instance does not exist asks for a review.
    let r = call("ghost", "request_review", json!({}));
    assert_refused(&r, "WORKFLOW_PARENT_NOT_FOUND");
}

/// The three protocol revisions the agent CLIs speak: 2026-07-28 (Claude
/// Code, Python SDK), 2025-11-25 (Qwen, OpenCode, TypeScript SDK),
/// 2025-06-18 (Codex, Gemini CLI) — the last on the raw wire, where
/// stdout must carry JSON-RPC only and the server must exit when stdin
/// closes.
#[test]
fn three_protocol_revisions_are_spoken() {
    let (p, _remote) = project();
    let calls = json!([]);
    let auto = as_agent(&p, McpClient::PythonAuto, None, &[], calls.clone());
    assert_eq!(auto["protocol"], "2026-07-28");
    let legacy = as_agent(&p, McpClient::PythonLegacy, None, &[], calls.clone());
    assert_eq!(legacy["protocol"], "2025-11-25");
    let ts = as_agent(&p, McpClient::TypeScript, None, &[], calls);
    assert_eq!(ts["protocol"], "2025-11-25");
    assert_eq!(ts["warnings"], json!([]), "the SDK warned: {ts}");

    let mut child = Command::new(baton_bin())
        .arg("mcp")
        .current_dir(p.root())
        .env_remove("BATON_INSTANCE")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut ask = |msg: Value| {
        writeln!(stdin, "{msg}").unwrap();
    };
    ask(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "codex-like", "version": "1"}}}),
    );
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    let init: Value = serde_json::from_str(&line).expect("stdout carries JSON-RPC only");
    assert_eq!(init["result"]["protocolVersion"], "2025-06-18", "{init}");
    ask(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    ask(
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "merge_back", "arguments": {"feedback": "x"}}}),
    );
    line.clear();
    out.read_line(&mut line).unwrap();
    let call: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(call["id"], 2);
    assert_eq!(call["result"]["isError"], true, "{call}");
    assert!(
        call["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("WORKFLOW_INVALID_STATE: ")
    );
    // Arguments that do not fit the schema are a tool error too.
    ask(
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "merge_back", "arguments": {}}}),
    );
    line.clear();
    out.read_line(&mut line).unwrap();
    let bad: Value = serde_json::from_str(&line).unwrap();
    assert!(
        bad["result"]["isError"] == true || bad["error"].is_object(),
        "{bad}"
    );
    drop(stdin);
    let started = std::time::Instant::now();
    let status = baton_testkit::wait_child(&mut child, "baton mcp after stdin closed");
    assert!(status.success(), "{status}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(5),
        "exits promptly when stdin closes"
    );
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut out, &mut rest).unwrap();
    assert!(
        rest.trim().is_empty(),
        "nothing but JSON-RPC on stdout: {rest}"
    );
}

/// The official MCP conformance suite, latest release and the 0.2
/// prerelease (which adds wire-schema validation), over a Streamable HTTP
/// relay to `baton mcp` on stdio: every check of the scenarios that apply
/// to a tools-only server passes (the others ask for resources, prompts,
/// logging, completions or the suite's own fixture tools).
#[test]
fn the_official_conformance_suite_passes_every_check_that_applies() {
    let (p, _remote) = project();
    let bin = baton_bin();
    let env: Vec<(&str, &str)> = p
        .database_url
        .as_deref()
        .map(|u| ("BATON_DATABASE_URL", u))
        .into_iter()
        .collect();
    baton_testkit::mcp::run_conformance(&[bin.as_os_str(), p.root().as_os_str()], &env);
}
