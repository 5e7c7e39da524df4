//! The native session files of the real CLIs (recorded by
//! `cargo run -p baton-testkit --example record_native`: one prompt, a
//! write-file tool call, then "done") read as a user would expect to see
//! them imported.

use baton_agents::clis::{Claude, Codex, Copilot, Droid, Gemini, Opencode, Qwen};
use baton_agents::native::{detect, parse_transcript};
use baton_agents::{AgentEvent, Cli, NativeTranscript};

const CLAUDE_: Cli = &Claude;
const CODEX_: Cli = &Codex;
const GEMINI_: Cli = &Gemini;
const QWEN_: Cli = &Qwen;
const OPENCODE_: Cli = &Opencode;
const COPILOT_: Cli = &Copilot;
const DROID_: Cli = &Droid;

const CLIS: [Cli; 7] = [CLAUDE_, CODEX_, GEMINI_, QWEN_, OPENCODE_, COPILOT_, DROID_];

/// The recorded file, built into the test.
fn fixture(cli: Cli) -> &'static str {
    match cli.name() {
        "claude" => include_str!("fixtures/native/claude.jsonl"),
        "codex" => include_str!("fixtures/native/codex.jsonl"),
        "gemini" => include_str!("fixtures/native/gemini.jsonl"),
        "qwen" => include_str!("fixtures/native/qwen.jsonl"),
        "opencode" => include_str!("fixtures/native/opencode.json"),
        "copilot" => include_str!("fixtures/native/copilot.jsonl"),
        "droid" => include_str!("fixtures/native/droid.jsonl"),
        other => panic!(
            "no recorded native session for {other}: record one with the record_native example"
        ),
    }
}

/// What the recording did, per CLI: its session id, its folder, and the
/// name of the tool it wrote the file with.
fn expected(cli: Cli) -> (&'static str, &'static str, &'static str) {
    match cli.name() {
        "claude" => (
            "5e551011-0000-4000-8000-00000000beef",
            "/tmp/baton-native-record/claude/repo",
            "Write",
        ),
        "codex" => (
            "01a20159-bb6a-7f41-ba43-d3198e740954",
            "/tmp/baton-native-record/codex/repo",
            "exec_command",
        ),
        "gemini" => (
            "5e551011-0000-4000-8000-00000000beef",
            "/tmp/baton-native-record/gemini/repo",
            "write_file",
        ),
        "qwen" => (
            "5e551011-0000-4000-8000-00000000beef",
            "/tmp/baton-native-record/qwen/repo",
            "write_file",
        ),
        "opencode" => (
            "ses_dfea60f4fffebEcbJsStaHiMbx",
            "/tmp/baton-native-record/opencode/repo",
            "write",
        ),
        "copilot" => (
            "5e551011-0000-4000-8000-00000000beef",
            "/tmp/baton-native-record/copilot/repo",
            "create",
        ),
        "droid" => (
            "64a561b5-76c5-40c5-ac3c-95e529e588a9",
            "/tmp/baton-native-record/droid/repo",
            "Create",
        ),
        other => panic!("no expectations for {other}"),
    }
}

/// How many model calls' tokens the file holds: two (a tool call, then
/// "done"), but droid keeps its tokens beside the session file
/// (`<id>.settings.json`), not in it.
fn usage_records(cli: Cli) -> usize {
    match cli.name() {
        "droid" => 0,
        _ => 2,
    }
}

fn parse(cli: Cli) -> NativeTranscript {
    parse_transcript(cli, fixture(cli)).unwrap_or_else(|e| panic!("{}: {e}", cli.name()))
}

/// The tool call that wrote hello.txt and its result.
fn write_call(t: &NativeTranscript) -> Option<(&str, &str, &str, bool)> {
    t.events.iter().find_map(|e| match e {
        AgentEvent::ToolCall { id, name, summary } if summary.contains("hello.txt") => {
            t.events.iter().find_map(|r| match r {
                AgentEvent::ToolResult { id: rid, ok, .. } if rid == id => {
                    Some((id.as_str(), name.as_str(), summary.as_str(), *ok))
                }
                _ => None,
            })
        }
        _ => None,
    })
}

fn last_text(t: &NativeTranscript) -> Option<&str> {
    t.events.iter().rev().find_map(|e| match e {
        AgentEvent::AssistantText { text } => Some(text.as_str()),
        _ => None,
    })
}

fn reads_as_the_session_it_was(cli: Cli) {
    let t = parse(cli);
    let (id, cwd, tool) = expected(cli);
    assert_eq!(t.native_id.as_deref(), Some(id), "{t:#?}");
    assert_eq!(t.cwd.as_deref(), Some(cwd), "{t:#?}");
    // `opencode run` quotes a message argument that holds spaces, and keeps
    // it so in its session.
    let prompt = match cli.name() {
        "opencode" => "\"write hello please\"",
        _ => "write hello please",
    };
    assert_eq!(t.first_prompt.as_deref(), Some(prompt), "{t:#?}");
    assert_eq!(t.user_messages, vec![prompt.to_string()], "{t:#?}");
    let (call_id, name, summary, ok) =
        write_call(&t).unwrap_or_else(|| panic!("no answered write of hello.txt: {t:#?}"));
    assert_eq!(name, tool);
    assert!(summary.contains(&format!("{cwd}/hello.txt")), "{summary}");
    assert!(ok, "the write succeeded: {t:#?}");
    assert_eq!(last_text(&t), Some("done"), "{t:#?}");
    // In that order: the call, its result, then the answer.
    let at = |f: &dyn Fn(&AgentEvent) -> bool| t.events.iter().position(f).unwrap();
    let call = at(&|e| matches!(e, AgentEvent::ToolCall { id, .. } if id == call_id));
    let result = at(&|e| matches!(e, AgentEvent::ToolResult { id, .. } if id == call_id));
    let done = at(&|e| matches!(e, AgentEvent::AssistantText { text } if text == "done"));
    assert!(call < result && result < done, "{t:#?}");
    // Two model calls, each with its tokens.
    let usage: Vec<u64> = t
        .events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::Usage {
                input_tokens,
                output_tokens,
                ..
            } => Some(input_tokens + output_tokens),
            _ => None,
        })
        .collect();
    assert_eq!(usage.len(), usage_records(cli), "{t:#?}");
    assert!(usage.iter().all(|n| *n > 0), "{t:#?}");
    assert_eq!(t.warnings, 0);
    assert_eq!(detect(fixture(cli)), Some(cli));
}

#[test]
fn a_claude_code_session_reads_as_it_was() {
    reads_as_the_session_it_was(CLAUDE_);
}

#[test]
fn a_codex_rollout_reads_as_it_was() {
    reads_as_the_session_it_was(CODEX_);
}

#[test]
fn a_gemini_cli_session_reads_as_it_was() {
    reads_as_the_session_it_was(GEMINI_);
}

#[test]
fn a_qwen_code_session_reads_as_it_was() {
    reads_as_the_session_it_was(QWEN_);
}

#[test]
fn an_opencode_export_reads_as_it_was() {
    reads_as_the_session_it_was(OPENCODE_);
}

#[test]
fn a_copilot_session_reads_as_it_was() {
    reads_as_the_session_it_was(COPILOT_);
}

#[test]
fn a_droid_session_reads_as_it_was() {
    reads_as_the_session_it_was(DROID_);
}

/// A session file cut off mid-line (the CLI was killed while writing it)
/// still imports: what was written before the cut is there, the broken
/// line is one warning.
#[test]
fn a_file_cut_mid_line_still_imports_with_a_warning() {
    for cli in [CLAUDE_, CODEX_, GEMINI_, QWEN_, COPILOT_, DROID_] {
        let text = fixture(cli);
        // Cut inside the line holding the final answer: keep the lines
        // before it and half of it.
        let line_start = text[..text.rfind("\"done\"").unwrap()]
            .rfind('\n')
            .map_or(0, |i| i + 1);
        let line_end = line_start + text[line_start..].find('\n').unwrap();
        let cut = &text[..(line_start + line_end) / 2];
        let t = parse_transcript(cli, cut).unwrap_or_else(|e| panic!("{}: {e}", cli.name()));
        assert_eq!(t.warnings, 1, "{}: {t:#?}", cli.name());
        assert_eq!(t.native_id.as_deref(), Some(expected(cli).0));
        assert!(write_call(&t).is_some(), "{}: {t:#?}", cli.name());
    }
}

/// A broken line in the middle is skipped and counted; the rest of the
/// session is all there.
#[test]
fn a_broken_line_in_the_middle_is_skipped_and_counted() {
    for cli in [CLAUDE_, CODEX_, GEMINI_, QWEN_, COPILOT_, DROID_] {
        let text = fixture(cli);
        let mut lines: Vec<&str> = text.lines().collect();
        lines.insert(lines.len() / 2, "{\"type\": \"assistant\", \"mess");
        lines.insert(lines.len() / 2, "[1, 2, 3]");
        let t = parse_transcript(cli, &lines.join("\n")).unwrap();
        assert_eq!(t.warnings, 2, "{}", cli.name());
        assert_eq!(last_text(&t), Some("done"), "{}", cli.name());
        assert!(write_call(&t).is_some(), "{}", cli.name());
    }
}

/// An OpenCode export is one JSON document: cut off, it is refused,
/// saying what it should have been.
#[test]
fn a_cut_off_opencode_export_is_refused() {
    let text = fixture(OPENCODE_);
    let err = parse_transcript(OPENCODE_, &text[..text.len() / 2]).unwrap_err();
    assert!(err.contains("opencode export <sessionID>"), "{err}");
    assert!(err.contains("not"), "{err}");
}

/// `opencode export` says "Exporting session: …" on stderr first: an
/// export captured with it still reads.
#[test]
fn an_opencode_export_captured_with_its_stderr_line_still_reads() {
    let text = format!(
        "Exporting session: ses_dfea60f4fffebEcbJsStaHiMbx\n{}",
        fixture(OPENCODE_)
    );
    assert_eq!(parse_transcript(OPENCODE_, &text), Ok(parse(OPENCODE_)));
}

/// Another CLI's session file is refused, naming the file expected and the
/// CLI it came from.
#[test]
fn another_clis_file_is_refused_naming_both() {
    let names = |cli: Cli| match cli.name() {
        "claude" => ("Claude Code session file", "~/.claude"),
        "codex" => ("Codex session file", "~/.codex"),
        "gemini" => ("Gemini CLI session file", "~/.gemini/tmp/"),
        "qwen" => ("Qwen Code session file", "~/.qwen/projects/"),
        "opencode" => ("OpenCode session export", "opencode export"),
        "copilot" => ("GitHub Copilot CLI session file", "~/.copilot"),
        "droid" => ("Factory droid session file", "~/.factory/sessions/"),
        other => panic!("no expectations for {other}"),
    };
    for wanted in CLIS {
        for given in CLIS.into_iter().filter(|c| *c != wanted) {
            let err = parse_transcript(wanted, fixture(given)).unwrap_err();
            let (what, place) = names(wanted);
            assert!(
                err.starts_with(&format!("this is not a {what}"))
                    || err.starts_with(&format!("this is not an {what}")),
                "{err}"
            );
            assert!(err.contains(place), "{err}");
            assert!(
                err.contains(&format!("`baton import {}`", given.name())),
                "{err}"
            );
        }
    }
}

#[test]
fn garbage_is_refused_naming_the_file_expected() {
    let err = parse_transcript(CLAUDE_, "hello world\nnot json\n").unwrap_err();
    assert_eq!(
        err,
        "this is not a Claude Code session file ($CLAUDE_CONFIG_DIR/projects/<project>/<session-id>.jsonl, by default under ~/.claude): line 1 is not JSON"
    );
    let err = parse_transcript(QWEN_, "{\"hello\": 1}\n").unwrap_err();
    assert!(
        err.contains("Qwen Code session file") && err.ends_with("line 1 has no sessionId"),
        "{err}"
    );
    let err = parse_transcript(CODEX_, "").unwrap_err();
    assert!(
        err.contains("Codex session file") && err.ends_with("the file is empty"),
        "{err}"
    );
    let err = parse_transcript(OPENCODE_, "[]").unwrap_err();
    assert!(err.contains("opencode export <sessionID>"), "{err}");
    let err = parse_transcript(GEMINI_, "{\"a\":1}\n{\"b\":2}\n").unwrap_err();
    assert!(err.contains("~/.gemini/tmp/"), "{err}");
    assert_eq!(detect("hello"), None);
}
