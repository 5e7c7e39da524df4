//! The agent CLIs' own session files (their transcripts on disk), read into
//! baton's event model, for `baton import`.
//!
//! These are not the CLIs' stdout streams ([`crate::stream`]) but what each
//! CLI keeps to resume a session later; each adapter knows its own
//! ([`AgentCli::native_file`], [`AgentCli::parse_native`]) and where to find
//! it ([`AgentCli::locate_native`]).
//!
//! Pure: the text in, the transcript out. A malformed line is counted in
//! [`NativeTranscript::warnings`] and skipped; a text that is not the
//! CLI's session file at all is refused, saying what was expected.

use crate::json::{str_of, text_of};
use crate::{AgentEvent, Cli, Recognition};
use baton_core::agent_stream::{SUMMARY_CHARS, shorten, summarize_args};
use serde::Serialize;
use serde_json::Value;

/// A native session, as baton can replay it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NativeTranscript {
    /// The CLI's own session id (to resume it natively).
    pub native_id: Option<String>,
    /// The folder the session ran in.
    pub cwd: Option<String>,
    /// The first thing the user asked.
    pub first_prompt: Option<String>,
    /// Every user message in order, the first one included.
    pub user_messages: Vec<String>,
    /// Assistant text, tool calls with their results, token usage.
    pub events: Vec<AgentEvent>,
    /// Lines (or records) that could not be read and were skipped.
    pub warnings: usize,
}

impl NativeTranscript {
    pub(crate) fn new() -> NativeTranscript {
        NativeTranscript {
            native_id: None,
            cwd: None,
            first_prompt: None,
            user_messages: Vec::new(),
            events: Vec::new(),
            warnings: 0,
        }
    }

    pub(crate) fn user(&mut self, text: String) {
        let text = text.trim().to_string();
        if text.is_empty() {
            return;
        }
        if self.first_prompt.is_none() {
            self.first_prompt = Some(text.clone());
        }
        self.user_messages.push(text);
    }

    pub(crate) fn assistant(&mut self, text: &str) {
        if !text.trim().is_empty() {
            self.events
                .push(AgentEvent::AssistantText { text: text.into() });
        }
    }
}

impl NativeTranscript {
    /// A user turn of Anthropic-style blocks (Claude Code, droid): its
    /// text (unless `keep_text` is false: context the CLI added itself)
    /// and the tool results it carries.
    pub(crate) fn anthropic_user(&mut self, blocks: &[Value], keep_text: bool) {
        let mut said = Vec::new();
        for b in blocks {
            match str_of(b, "type") {
                "text" if keep_text => said.push(str_of(b, "text").to_string()),
                "tool_result" => self.events.push(AgentEvent::ToolResult {
                    id: str_of(b, "tool_use_id").into(),
                    ok: !b["is_error"].as_bool().unwrap_or(false),
                    summary: shorten(&text_of(&b["content"]), SUMMARY_CHARS),
                }),
                _ => {}
            }
        }
        self.user(said.join("\n"));
    }

    /// An assistant turn of Anthropic-style blocks: text and tool calls.
    pub(crate) fn anthropic_assistant(&mut self, blocks: &[Value]) {
        for b in blocks {
            match str_of(b, "type") {
                "text" => self.assistant(str_of(b, "text")),
                "tool_use" => self.events.push(AgentEvent::ToolCall {
                    id: str_of(b, "id").into(),
                    name: str_of(b, "name").into(),
                    summary: summarize_args(&b["input"]),
                }),
                _ => {}
            }
        }
    }
}

/// Which CLI wrote this session file, judged from its first readable
/// record (or the whole text, when it is one JSON document); `None` when
/// it looks like none of them.
pub fn detect(text: &str) -> Option<Cli> {
    if let Ok(Value::Object(o)) = serde_json::from_str::<Value>(document(text)) {
        return best(&o);
    }
    text.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l.trim()).ok())
        .filter_map(|v| v.as_object().and_then(best))
        .next()
}

/// The adapter sure of `record`, else one that finds it plausible.
fn best(record: &serde_json::Map<String, Value>) -> Option<Cli> {
    let all = crate::all();
    let of = |r: Recognition| all.iter().copied().find(|c| c.recognizes(record) == r);
    of(Recognition::Sure).or_else(|| of(Recognition::Loose))
}

/// The JSON document in `text`, past a line `opencode export` prints
/// first on stderr ("Exporting session: …") when both were captured.
pub(crate) fn document(text: &str) -> &str {
    if text.trim_start().starts_with('{') {
        return text;
    }
    text.find("\n{").map_or(text, |i| &text[i + 1..])
}

/// Reads `text`, the native session file of `cli`, into a transcript.
/// Malformed lines are counted in `warnings`; a text that is not that
/// CLI's session file is an `Err` naming the file expected.
pub fn parse_transcript(cli: Cli, text: &str) -> Result<NativeTranscript, String> {
    let refuse = |why: String| Err(format!("this is not {}: {why}", cli.native_file()));
    if text.trim().is_empty() {
        return refuse("the file is empty".into());
    }
    match detect(text) {
        Some(found) if found.name() == cli.name() => {}
        Some(found) => {
            return refuse(format!(
                "it looks like a {} session file; import it with `baton import {}`",
                found.title(),
                found.name()
            ));
        }
        None => {
            let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
            let json = serde_json::from_str::<Value>(first.trim()).is_ok();
            return refuse(cli.not_native_because(json).to_string());
        }
    }
    let mut t = NativeTranscript::new();
    cli.parse_native(text, &mut t)?;
    Ok(t)
}
