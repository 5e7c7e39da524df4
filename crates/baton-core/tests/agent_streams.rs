//! The stream parsers on output recorded from the real CLIs (run headless
//! against baton's scripted model server: one tool call writing a file,
//! then a final "done").

use baton_core::agent_stream::{AgentEvent, Cli, StreamParser};

fn parse(cli: Cli, file: &str) -> Vec<AgentEvent> {
    let text = std::fs::read_to_string(format!(
        "{}/tests/fixtures/streams/{file}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    let mut p = StreamParser::new(cli);
    text.lines().flat_map(|l| p.line(l)).collect()
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
    let ev = parse(Cli::Claude, "claude-2.1.330-write.jsonl");
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
    let ev = parse(Cli::Codex, "codex-0.169.0-write.jsonl");
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
