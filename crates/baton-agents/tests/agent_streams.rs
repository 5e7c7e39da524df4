//! The stream parsers on output recorded from the real CLIs (run headless
//! against baton's scripted model server: one tool call writing a file,
//! then a final "done").

use baton_agents::clis::{Claude, Codex, Gemini, Opencode, Qwen};
use baton_agents::{AgentCli, AgentEvent, Cli, StreamParser};

const CLAUDE_: Cli = &Claude;
const CODEX_: Cli = &Codex;
const GEMINI_: Cli = &Gemini;
const QWEN_: Cli = &Qwen;
const OPENCODE_: Cli = &Opencode;

/// A recorded stream, built into the test (so it always matches the
/// source, wherever the build happened).
fn fixture(file: &str) -> &'static str {
    match file {
        "claude-2.1.330-401.jsonl" => include_str!("fixtures/streams/claude-2.1.330-401.jsonl"),
        "claude-2.1.330-missing-session.jsonl" => {
            include_str!("fixtures/streams/claude-2.1.330-missing-session.jsonl")
        }
        "claude-2.1.330-write.jsonl" => include_str!("fixtures/streams/claude-2.1.330-write.jsonl"),
        "codex-0.169.0-401.jsonl" => include_str!("fixtures/streams/codex-0.169.0-401.jsonl"),
        "codex-0.169.0-apply-patch.jsonl" => {
            include_str!("fixtures/streams/codex-0.169.0-apply-patch.jsonl")
        }
        "codex-0.169.0-write.jsonl" => include_str!("fixtures/streams/codex-0.169.0-write.jsonl"),
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
