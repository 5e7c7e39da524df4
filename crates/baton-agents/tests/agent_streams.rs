//! The stream parsers on output recorded from the real CLIs (run headless
//! against baton's scripted model server: one tool call writing a file,
//! then a final "done").

use baton_agents::clis::{Claude, Codex, Copilot, Droid, Gemini, Opencode, Qwen};
use baton_agents::{AgentCli, AgentEvent, Cli, StreamParser};

const CLAUDE_: Cli = &Claude;
const CODEX_: Cli = &Codex;
const GEMINI_: Cli = &Gemini;
const QWEN_: Cli = &Qwen;
const OPENCODE_: Cli = &Opencode;
const COPILOT_: Cli = &Copilot;
const DROID_: Cli = &Droid;

/// A recorded stream, built into the test (so it always matches the
/// source, wherever the build happened).
fn fixture(file: &str) -> &'static str {
    match file {
        "claude-2.1.330-401.jsonl" => include_str!("fixtures/streams/claude-2.1.330-401.jsonl"),
        "claude-2.1.330-missing-session.jsonl" => {
            include_str!("fixtures/streams/claude-2.1.330-missing-session.jsonl")
        }
        "claude-2.1.330-write.jsonl" => include_str!("fixtures/streams/claude-2.1.330-write.jsonl"),
        "copilot-1.0.102-401.jsonl" => include_str!("fixtures/streams/copilot-1.0.102-401.jsonl"),
        "copilot-1.0.102-write.jsonl" => {
            include_str!("fixtures/streams/copilot-1.0.102-write.jsonl")
        }
        "droid-0.225.2-401.jsonl" => include_str!("fixtures/streams/droid-0.225.2-401.jsonl"),
        "droid-0.225.2-write.jsonl" => include_str!("fixtures/streams/droid-0.225.2-write.jsonl"),
        "codex-0.169.0-401.jsonl" => include_str!("fixtures/streams/codex-0.169.0-401.jsonl"),
        "codex-0.169.0-apply-patch.jsonl" => {
            include_str!("fixtures/streams/codex-0.169.0-apply-patch.jsonl")
        }
        "codex-0.169.0-write.jsonl" => include_str!("fixtures/streams/codex-0.169.0-write.jsonl"),
        "codex-0.169.0-subagent.jsonl" => {
            include_str!("fixtures/streams/codex-0.169.0-subagent.jsonl")
        }
        "codex-0.169.0-subagent-v2.jsonl" => {
            include_str!("fixtures/streams/codex-0.169.0-subagent-v2.jsonl")
        }
        "gemini-0.61.0-401.jsonl" => include_str!("fixtures/streams/gemini-0.61.0-401.jsonl"),
        "gemini-0.61.0-write.jsonl" => include_str!("fixtures/streams/gemini-0.61.0-write.jsonl"),
        "opencode-1.18.33-401.jsonl" => include_str!("fixtures/streams/opencode-1.18.33-401.jsonl"),
        "opencode-1.18.33-write.jsonl" => {
            include_str!("fixtures/streams/opencode-1.18.33-write.jsonl")
        }
        "qwen-0.15.10-401.jsonl" => include_str!("fixtures/streams/qwen-0.15.10-401.jsonl"),
        "qwen-0.15.10-write.jsonl" => include_str!("fixtures/streams/qwen-0.15.10-write.jsonl"),
        other => panic!("no fixture {other}"),
    }
}

fn parse(cli: Cli, file: &str) -> Vec<AgentEvent> {
    let mut p = StreamParser::new(cli);
    fixture(file).lines().flat_map(|l| p.line(l)).collect()
}

fn session(events: &[AgentEvent]) -> Option<&str> {
    events.iter().find_map(|e| match e {
        AgentEvent::SessionStarted { native_id } => Some(native_id.as_str()),
        _ => None,
    })
}

/// Every tool call has its result, in order, with the same id.
fn calls_and_results(events: &[AgentEvent]) -> Vec<(String, String, bool)> {
    let mut out = Vec::new();
    for e in events {
        match e {
            AgentEvent::ToolCall { id, name, summary } => {
                out.push((format!("{name} {summary}"), id.clone(), false))
            }
            AgentEvent::ToolResult { id, ok, .. } => {
                let call = out
                    .iter_mut()
                    .rev()
                    .find(|(_, cid, done)| cid == id && !*done)
                    .unwrap_or_else(|| panic!("a result without its call: {id}"));
                assert!(*ok, "the tool call failed: {}", call.0);
                call.2 = true;
            }
            _ => {}
        }
    }
    out
}

#[test]
fn claude_code_2_1_stream() {
    let ev = parse(CLAUDE_, "claude-2.1.330-write.jsonl");
    assert_eq!(session(&ev), Some("11111111-2222-3333-4444-555555555555"));
    let calls = calls_and_results(&ev);
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].0, "Write /tmp/cl/repo/hello.txt");
    assert!(calls[0].2, "its result came");
    assert!(ev.contains(&AgentEvent::AssistantText {
        text: "done".into()
    }));
    let usage = ev.iter().find_map(|e| match e {
        AgentEvent::Usage {
            input_tokens,
            output_tokens,
            cost_usd,
        } => Some((*input_tokens, *output_tokens, *cost_usd)),
        _ => None,
    });
    let (input, output, cost) = usage.expect("usage");
    assert!(input > 0 && output > 0 && cost.is_some_and(|c| c > 0.0));
    assert_eq!(
        ev.last(),
        Some(&AgentEvent::Final {
            ok: true,
            text: "done".into()
        })
    );
    assert!(
        !ev.iter()
            .any(|e| matches!(e, AgentEvent::Warning { .. } | AgentEvent::Error { .. }))
    );
}

#[test]
fn codex_0_169_stream() {
    let ev = parse(CODEX_, "codex-0.169.0-write.jsonl");
    assert_eq!(session(&ev), Some("01a2011d-fad8-70f3-945b-a86625740907"));
    let calls = calls_and_results(&ev);
    assert_eq!(calls.len(), 1);
    assert!(
        calls[0]
            .0
            .starts_with("shell /bin/bash -lc 'echo hi from codex > hello.txt'"),
        "{calls:?}"
    );
    assert!(calls[0].2);
    // Codex's non-fatal `error` item (no model metadata for a custom
    // provider) is a warning, not a failure.
    assert!(ev.iter().any(
        |e| matches!(e, AgentEvent::Warning { message } if message.contains("Model metadata"))
    ));
    assert!(ev.iter().any(|e| matches!(e, AgentEvent::Usage { input_tokens, output_tokens: 11, .. } if *input_tokens > 0)));
    assert_eq!(
        ev.last(),
        Some(&AgentEvent::Final {
            ok: true,
            text: "done".into()
        })
    );
}

fn finals(events: &[AgentEvent]) -> Vec<(bool, String)> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::Final { ok, text } => Some((*ok, text.clone())),
            _ => None,
        })
        .collect()
}

fn errors(events: &[AgentEvent]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::Error { message } => Some(message.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn codex_apply_patch_stream() {
    let ev = parse(CODEX_, "codex-0.169.0-apply-patch.jsonl");
    let calls = calls_and_results(&ev);
    assert_eq!(calls.len(), 1);
    assert_eq!(
        calls[0].0,
        "apply_patch add /tmp/agentrec/runs/codex/repo/hello.txt"
    );
    assert_eq!(finals(&ev), [(true, "done".to_string())]);
}

#[test]
fn gemini_0_61_stream() {
    let ev = parse(GEMINI_, "gemini-0.61.0-write.jsonl");
    assert_eq!(session(&ev), Some("b70585a3-744b-40f2-97c1-f132b184730e"));
    let calls = calls_and_results(&ev);
    assert_eq!(calls.len(), 1);
    assert_eq!(
        calls[0].0,
        "write_file /tmp/agentrec/runs/gemini/repo/hello.txt"
    );
    assert!(ev.contains(&AgentEvent::Usage {
        input_tokens: 24908,
        output_tokens: 38,
        cost_usd: None
    }));
    assert_eq!(finals(&ev), [(true, "done".to_string())]);
}

#[test]
fn qwen_0_15_stream() {
    let ev = parse(QWEN_, "qwen-0.15.10-write.jsonl");
    assert_eq!(session(&ev), Some("025a22a0-3d6e-4eef-b5a4-017280b8ab59"));
    let calls = calls_and_results(&ev);
    assert_eq!(calls.len(), 1);
    assert_eq!(
        calls[0].0,
        "write_file /tmp/agentrec/runs/qwen/repo/hello.txt"
    );
    assert_eq!(finals(&ev), [(true, "done".to_string())]);
}

#[test]
fn opencode_1_18_stream() {
    let ev = parse(OPENCODE_, "opencode-1.18.33-write.jsonl");
    // Every event carries the session id; it is reported once.
    let sessions = ev
        .iter()
        .filter(|e| matches!(e, AgentEvent::SessionStarted { .. }))
        .count();
    assert_eq!(sessions, 1);
    assert_eq!(session(&ev), Some("ses_dfededf62ffeYHio981UNB2veA"));
    let calls = calls_and_results(&ev);
    assert_eq!(calls.len(), 1);
    assert_eq!(
        calls[0].0,
        "write /tmp/agentrec/runs/opencode/repo2/hello.txt"
    );
    // Usage per step: two steps.
    assert_eq!(
        ev.iter()
            .filter(|e| matches!(e, AgentEvent::Usage { .. }))
            .count(),
        2
    );
    assert_eq!(finals(&ev), [(true, "done".to_string())]);
}

#[test]
fn copilot_1_0_stream() {
    let ev = parse(COPILOT_, "copilot-1.0.102-write.jsonl");
    // The id is on the last line only (baton chose it up front).
    assert_eq!(session(&ev), Some("11111111-2222-4333-8444-555555555555"));
    let calls = calls_and_results(&ev);
    assert_eq!(calls.len(), 1);
    assert_eq!(
        calls[0].0,
        "create /tmp/baton-stream-record/copilot-write/repo/hello.txt"
    );
    assert!(calls[0].2);
    // Ephemeral events (deltas, model call bookkeeping) are not read.
    assert_eq!(
        ev.iter()
            .filter(|e| matches!(e, AgentEvent::AssistantText { .. }))
            .count(),
        1
    );
    // No tokens on stdout: they come from --usage-output-file.
    assert!(!ev.iter().any(|e| matches!(e, AgentEvent::Usage { .. })));
    assert_eq!(finals(&ev), [(true, "done".to_string())]);
    assert!(
        !ev.iter()
            .any(|e| matches!(e, AgentEvent::Warning { .. } | AgentEvent::Error { .. })),
        "{ev:?}"
    );
}

#[test]
fn copilots_usage_file_is_its_tokens() {
    let text = r#"{"totalPremiumRequestCost":0,"modelMetrics":{"scripted-model":{"requests":{"count":2,"cost":0},"usage":{"inputTokens":200,"outputTokens":14,"cacheReadTokens":5,"cacheWriteTokens":0}}},"lastCallInputTokens":100}"#;
    assert_eq!(
        Copilot.usage_from_file(text),
        Some(AgentEvent::Usage {
            input_tokens: 205,
            output_tokens: 14,
            cost_usd: None
        })
    );
    assert_eq!(Copilot.usage_from_file(""), None);
    assert_eq!(Copilot.usage_from_file("{}"), None);
}

/// Both new CLIs exit 0 when a tool is refused: the stream says so, and
/// that is an error (as Claude's permission denials are).
#[test]
fn a_refused_tool_is_an_error_for_copilot_and_droid() {
    let mut p = StreamParser::new(COPILOT_);
    let mut ev = p.line(
        r#"{"type":"assistant.message","data":{"content":"","toolRequests":[{"toolCallId":"c1","name":"create","arguments":{"path":"/x/a.txt","file_text":"no"}}]},"id":"1","parentId":"0"}"#,
    );
    ev.extend(p.line(
        r#"{"type":"tool.execution_complete","data":{"toolCallId":"c1","success":false,"error":{"message":"Permission to run this tool was denied due to the following rules: `write`","code":"denied"}},"id":"2","parentId":"1"}"#,
    ));
    // A tool that merely failed is not a refusal.
    ev.extend(p.line(
        r#"{"type":"tool.execution_complete","data":{"toolCallId":"c2","success":false,"error":{"message":"Path already exists","code":"failure"}},"id":"3","parentId":"1"}"#,
    ));
    assert_eq!(
        errors(&ev),
        [
            "permission denied: create /x/a.txt (Permission to run this tool was denied due to the following rules: `write`)"
        ]
    );
    assert_eq!(
        ev.iter()
            .filter(|e| matches!(e, AgentEvent::ToolResult { ok: false, .. }))
            .count(),
        2
    );

    let mut p = StreamParser::new(DROID_);
    let ev = p.line(
        r#"{"type":"tool_result","id":"call_0","toolId":"Create","isError":true,"error":{"type":"tool_error","message":"Error: Tool Create is not permitted in this exec session. Available tools: Read, LS, Execute."},"session_id":"s"}"#,
    );
    assert!(
        errors(&ev)
            .iter()
            .any(|m| m.starts_with("permission denied: Create (Tool Create is not permitted")),
        "{ev:?}"
    );
    let ev = p.line(
        r#"{"type":"tool_result","id":"call_1","toolId":"Execute","isError":true,"error":{"type":"tool_error","message":"Error: Exec ended early: insufficient permission to proceed. Re-run with --auto medium or --auto high."},"session_id":"s"}"#,
    );
    assert!(
        errors(&ev)
            .iter()
            .any(|m| m.starts_with("permission denied: Execute")),
        "{ev:?}"
    );
    let ev = p.line(
        r#"{"type":"tool_result","id":"call_2","toolId":"Execute","isError":true,"error":{"type":"tool_error","message":"Command failed with exit code 1"},"session_id":"s"}"#,
    );
    assert!(errors(&ev).is_empty(), "{ev:?}");
}

#[test]
fn droid_0_225_stream() {
    let ev = parse(DROID_, "droid-0.225.2-write.jsonl");
    // Every line carries the session id; it is reported once.
    assert_eq!(
        ev.iter()
            .filter(|e| matches!(e, AgentEvent::SessionStarted { .. }))
            .count(),
        1
    );
    assert_eq!(session(&ev), Some("f18549c9-19f4-4bef-9f89-6c9d9a0c6b54"));
    let calls = calls_and_results(&ev);
    assert_eq!(calls.len(), 1);
    assert_eq!(
        calls[0].0,
        "Create /tmp/baton-stream-record/droid-write/repo/hello.txt"
    );
    assert!(calls[0].2);
    assert!(ev.contains(&AgentEvent::Usage {
        input_tokens: 20702,
        output_tokens: 23,
        cost_usd: None
    }));
    assert_eq!(finals(&ev), [(true, "done".to_string())]);
    assert!(
        !ev.iter()
            .any(|e| matches!(e, AgentEvent::Warning { .. } | AgentEvent::Error { .. })),
        "{ev:?}"
    );
}

#[test]
fn errors_are_read_from_each_stream() {
    let ev = parse(CLAUDE_, "claude-2.1.330-missing-session.jsonl");
    assert!(
        errors(&ev)
            .iter()
            .any(|m| m.contains("No conversation found")),
        "{ev:?}"
    );
    assert_eq!(finals(&ev).first().map(|f| f.0), Some(false));

    // Claude retries a 401 itself (ten times): each retry is a warning.
    let ev = parse(CLAUDE_, "claude-2.1.330-401.jsonl");
    let retries = ev
        .iter()
        .filter(
            |e| matches!(e, AgentEvent::Warning { message } if message.contains("API error 401")),
        )
        .count();
    assert_eq!(retries, 7, "{ev:?}");

    let ev = parse(CODEX_, "codex-0.169.0-401.jsonl");
    assert!(errors(&ev).iter().any(|m| m.contains("401 Unauthorized")));
    assert_eq!(finals(&ev).last().map(|f| f.0), Some(false));

    let ev = parse(GEMINI_, "gemini-0.61.0-401.jsonl");
    assert!(
        errors(&ev).iter().any(|m| m.contains("invalid x-api-key")),
        "{ev:?}"
    );
    assert_eq!(finals(&ev).last().map(|f| f.0), Some(false));

    // Qwen exits 0 and says "success"; the text gives the API error away.
    let ev = parse(QWEN_, "qwen-0.15.10-401.jsonl");
    assert!(
        errors(&ev).iter().any(|m| m.contains("[API Error: 401")),
        "{ev:?}"
    );
    assert_eq!(finals(&ev).last().map(|f| f.0), Some(false));

    let ev = parse(OPENCODE_, "opencode-1.18.33-401.jsonl");
    assert!(
        errors(&ev).iter().any(|m| m.contains("invalid x-api-key")),
        "{ev:?}"
    );

    // Copilot: `session.error`, then a result with exitCode 1.
    let ev = parse(COPILOT_, "copilot-1.0.102-401.jsonl");
    assert!(
        errors(&ev)
            .iter()
            .any(|m| m.starts_with("authentication: Authentication failed")
                && m.contains("HTTP 401")),
        "{ev:?}"
    );
    assert_eq!(finals(&ev).last().map(|f| f.0), Some(false));

    // droid: two error lines and no completion.
    let ev = parse(DROID_, "droid-0.225.2-401.jsonl");
    assert_eq!(
        errors(&ev),
        ["401 scripted failure: HTTP 401", "Exec failed"],
        "{ev:?}"
    );
    assert!(finals(&ev).is_empty());
}

use baton_agents::FailureKind;
use baton_agents::failure::classify_failure;

#[test]
fn failures_are_classified_per_cli() {
    use FailureKind::*;
    // Missing native sessions, as each real CLI reports them.
    let stale = [
        (
            CLAUDE_,
            Some(1),
            "No conversation found with session ID: 1111",
        ),
        (
            CODEX_,
            Some(1),
            "Error: no rollout found for thread id 1111 (code -32600)",
        ),
        (
            GEMINI_,
            Some(42),
            "Error resuming session: No previous sessions found for this project.",
        ),
        (
            QWEN_,
            Some(1),
            "No saved session found with ID 025a. Run `qwen --resume` without an ID",
        ),
        (
            OPENCODE_,
            Some(1),
            "\u{1b}[91mError: \u{1b}[0mSession not found",
        ),
        (
            COPILOT_,
            Some(1),
            "Error: No session, task, or name matched '99999999-2222-4333-8444-555555555559'.\n\nTo resume by session or task ID:  copilot --resume=<id>",
        ),
    ];
    for (cli, code, stderr) in stale {
        assert_eq!(
            classify_failure(cli, code, stderr, &[]),
            StaleSession,
            "{cli:?}"
        );
    }
    // API errors, from the recorded streams.
    for (cli, file) in [
        (CODEX_, "codex-0.169.0-401.jsonl"),
        (GEMINI_, "gemini-0.61.0-401.jsonl"),
        (QWEN_, "qwen-0.15.10-401.jsonl"),
        (OPENCODE_, "opencode-1.18.33-401.jsonl"),
        (CLAUDE_, "claude-2.1.330-401.jsonl"),
        (COPILOT_, "copilot-1.0.102-401.jsonl"),
        (DROID_, "droid-0.225.2-401.jsonl"),
    ] {
        assert_eq!(
            classify_failure(cli, Some(1), "", &parse(cli, file)),
            Authentication,
            "{file}"
        );
    }
    let limited = [AgentEvent::Error {
        message: "exceeded retry limit, last status: 429 Too Many Requests".into(),
    }];
    assert_eq!(classify_failure(CODEX_, Some(1), "", &limited), RateLimit);
    assert_eq!(classify_failure(CLAUDE_, Some(127), "", &[]), NotInstalled);
    assert_eq!(
        classify_failure(CLAUDE_, Some(1), "something else broke", &[]),
        Other
    );
    assert_eq!(Opencode.package().name, "opencode-ai");
    assert_eq!(Copilot.package().name, "@github/copilot");
    assert_eq!(Droid.package().name, "@factory/cli");
    // droid tells nothing of an unknown session (`--fork ID` exits 1 and
    // prints nothing): baton checks for its transcript before resuming.
    assert_eq!(classify_failure(DROID_, Some(1), "", &[]), Other);
}

/// A run killed while its tool ran: the transcript baton builds from it
/// keeps no call without its result.
#[test]
fn a_cut_off_tool_call_never_reaches_a_transcript() {
    use baton_core::agent_stream::without_dangling_calls;
    let text = fixture("claude-2.1.330-write.jsonl");
    // The stream up to the tool call, as a SIGKILL would leave it.
    let cut: Vec<&str> = text.lines().take(2).collect();
    let mut p = StreamParser::new(CLAUDE_);
    let events: Vec<AgentEvent> = cut.iter().flat_map(|l| p.line(l)).collect();
    assert!(
        events
            .iter()
            .any(|e| matches!(e, AgentEvent::ToolCall { .. }))
    );
    let clean = without_dangling_calls(&events);
    assert!(
        !clean
            .iter()
            .any(|e| matches!(e, AgentEvent::ToolCall { .. })),
        "{clean:?}"
    );
    assert!(clean.iter().any(
        |e| matches!(e, AgentEvent::Warning { message } if message.contains("got no result"))
    ));
    // A whole run keeps its call and result.
    let whole = parse(CLAUDE_, "claude-2.1.330-write.jsonl");
    assert_eq!(without_dangling_calls(&whole), whole);
    // A result whose call is gone is left out too.
    let orphan = [AgentEvent::ToolResult {
        id: "x".into(),
        ok: true,
        summary: String::new(),
    }];
    assert!(without_dangling_calls(&orphan).is_empty());
}

/// Codex's own agents (`spawn_agent`, on by default in 0.169): the stream
/// says the agent was started, in which session, and what the wait for it
/// returned; what the agent did is in its own rollout, read without the
/// context Codex gave it.
#[test]
fn codex_spawned_agents() {
    let ev = parse(CODEX_, "codex-0.169.0-subagent.jsonl");
    let calls = calls_and_results(&ev);
    let names: Vec<&str> = calls
        .iter()
        .map(|(c, _, _)| c.split(' ').next().unwrap())
        .collect();
    assert_eq!(names, ["spawn_agent", "wait_agent"], "{ev:?}");
    assert_eq!(
        calls[0].0,
        "spawn_agent default: List the files and say what you see."
    );
    let child = ev
        .iter()
        .find_map(|e| match e {
            AgentEvent::Subagent { parent, event, .. } => match event.as_ref() {
                AgentEvent::SessionStarted { native_id } => Some((parent, native_id)),
                _ => None,
            },
            _ => None,
        })
        .expect("the spawned agent's session");
    assert_eq!(child.0, &calls[0].1, "tied to the spawn_agent call");
    assert!(
        ev.iter()
            .any(|e| matches!(e, AgentEvent::ToolResult { summary, .. }
        if summary == "completed: Seen: a git repository."))
    );
    assert!(
        matches!(ev.last(), Some(AgentEvent::Final { ok: true, text })
        if text == "The subagent saw the repository.")
    );

    let rollout = include_str!("fixtures/native/codex-0.169.0-subagent.jsonl");
    assert!(rollout.contains(child.1.as_str()), "the same run's rollout");
    assert!(CODEX_.subagents_apart());
    // Before its own turn starts it has done nothing (a forked agent's file
    // first holds its parent's history).
    let first_line = rollout.lines().next().unwrap();
    assert_eq!(CODEX_.parse_subagent(first_line), (None, Vec::new()));
    let (model, events) = CODEX_.parse_subagent(rollout);
    assert_eq!(model.as_deref(), Some("gpt-5-codex"));
    let said: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolCall { name, summary, .. } => Some(format!("{name} {summary}")),
            AgentEvent::ToolResult { summary, .. } => Some(format!("→ {summary}")),
            AgentEvent::AssistantText { text } => Some(text.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(said[0], "exec_command ls -a", "{said:?}");
    assert!(
        said[1].starts_with("→ .") && said[1].contains(".git"),
        "{said:?}"
    );
    assert_eq!(said[2..], ["Seen: a git repository."]);
    assert!(
        matches!(events.last(), Some(AgentEvent::Final { ok: true, text }) if text == "Seen: a git repository."),
        "its turn's end: {events:?}"
    );
    assert!(
        events
            .iter()
            .any(|e| matches!(e, AgentEvent::Usage { input_tokens, .. } if *input_tokens > 0)),
        "its tokens, which Codex counts per thread"
    );
}

/// With `--enable multi_agent_v2` Codex's stream does not say an agent was
/// spawned at all (only the wait for it, naming none): the main agent's
/// own rollout does, with the task name and message the model gave.
#[test]
fn codex_v2_spawned_agents_are_found_in_the_rollout() {
    let ev = parse(CODEX_, "codex-0.169.0-subagent-v2.jsonl");
    let calls = calls_and_results(&ev);
    assert_eq!(calls.len(), 1, "{ev:?}");
    assert_eq!(calls[0].0, "wait_agent ");
    assert!(!ev.iter().any(|e| matches!(e, AgentEvent::Subagent { .. })));
    let rollout = include_str!("fixtures/native/codex-0.169.0-subagent-v2-parent.jsonl");
    let spawns = CODEX_.spawns_in_session(rollout);
    assert!(
        matches!(&spawns[..], [
            AgentEvent::ToolCall { id, name, summary },
            AgentEvent::ToolResult { id: rid, ok: true, summary: started },
            AgentEvent::Subagent { parent, model: Some(model), event },
        ] if name == "spawn_agent"
            && summary == "look_around: List the files and say what you see."
            && rid == id && parent == id
            && started == "started /root/look_around"
            && model == "gpt-5-codex"
            && matches!(event.as_ref(), AgentEvent::SessionStarted { native_id } if !native_id.is_empty())),
        "{spawns:?}"
    );
    // A resumed session appends its own turn to the file: the agents of
    // an earlier turn are not this run's.
    let resumed = format!(
        "{rollout}{{\"timestamp\":\"t\",\"type\":\"event_msg\",\"payload\":{{\"type\":\"task_started\",\"turn_attribution\":{{\"parent_turn_id\":null}}}}}}\n"
    );
    assert!(CODEX_.spawns_in_session(&resumed).is_empty());
    // v1's rollout names none this way: its stream does.
    let v1 = include_str!("fixtures/native/codex-0.169.0-subagent.jsonl");
    assert!(CODEX_.spawns_in_session(v1).is_empty());
}
