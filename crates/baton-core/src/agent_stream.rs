//! The common event model of agent sessions, whatever CLI ran them.
//!
//! Every agent CLI's stream (its JSON Lines, parsed by its adapter in the
//! `baton-agents` crate) and every native transcript read for `baton
//! import` becomes [`AgentEvent`]s: the session started (with its native
//! id), assistant text, tool calls and their results, token usage, the
//! final message, errors. They are journaled as they happen, so this model
//! is part of the journal's format.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One thing that happened in an agent session, whatever CLI ran it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum AgentEvent {
    /// The CLI's own session id, to resume it natively.
    SessionStarted {
        native_id: String,
    },
    AssistantText {
        text: String,
    },
    ToolCall {
        id: String,
        name: String,
        summary: String,
    },
    ToolResult {
        id: String,
        ok: bool,
        summary: String,
    },
    Usage {
        input_tokens: u64,
        output_tokens: u64,
        cost_usd: Option<f64>,
    },
    /// The session's end: whether the CLI says it succeeded, and its last
    /// message.
    Final {
        ok: bool,
        text: String,
    },
    Error {
        message: String,
    },
    /// A line baton could not read; recorded, never fatal.
    Warning {
        message: String,
    },
    /// What a subagent the CLI ran itself did (Claude Code's Agent tool:
    /// its messages carry the id of the tool call that started it; Codex's
    /// `spawn_agent`: a `SessionStarted` names the subagent's own session,
    /// whose file holds the rest). Never the session's own text or failure.
    Subagent {
        /// The id of the tool call that started it.
        parent: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        model: Option<String>,
        event: Box<AgentEvent>,
    },
}

/// The tool names with which a CLI starts a subagent of its own (Claude
/// Code's `Agent`, formerly `Task`; Codex's `spawn_agent`).
pub const SUBAGENT_TOOLS: [&str; 3] = ["Agent", "Task", "spawn_agent"];

/// How long summaries (tool arguments, results) may be.
pub const SUMMARY_CHARS: usize = 160;

/// The events of a session with every tool call that has no result (the
/// CLI was killed while the tool ran) left out, with a note of each, and
/// every result whose call is missing left out too. A transcript built from
/// these never shows the next model a call without its answer (which
/// providers refuse with a 400).
pub fn without_dangling_calls(events: &[AgentEvent]) -> Vec<AgentEvent> {
    let answered: std::collections::HashSet<&str> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolResult { id, .. } => Some(id.as_str()),
            _ => None,
        })
        .collect();
    let called: std::collections::HashSet<&str> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolCall { id, .. } => Some(id.as_str()),
            _ => None,
        })
        .collect();
    let mut out = Vec::with_capacity(events.len());
    for e in events {
        match e {
            AgentEvent::ToolCall { id, name, summary } if !answered.contains(id.as_str()) => {
                out.push(AgentEvent::Warning {
                    message: format!(
                        "the tool call {name} {summary} got no result (the run was cut off); left out"
                    ),
                });
            }
            AgentEvent::ToolResult { id, .. } if !called.contains(id.as_str()) => {}
            other => out.push(other.clone()),
        }
    }
    out
}

/// Why an agent run failed, as far as baton can tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureKind {
    /// The program is not there (`npm install -g <package>`).
    NotInstalled,
    /// The native session to resume is unknown to the CLI (deleted, made in
    /// another folder, or by another version): start fresh from the brief.
    StaleSession,
    /// The API key or login was refused.
    Authentication,
    RateLimit,
    Other,
}

/// A tool call's arguments in a few words: the path, command or pattern it
/// acts on when there is one, else compact JSON; at most
/// [`SUMMARY_CHARS`] characters.
pub fn summarize_args(args: &Value) -> String {
    const KEYS: [&str; 9] = [
        "file_path",
        "filePath",
        "path",
        "command",
        "cmd",
        "pattern",
        "url",
        "query",
        "description",
    ];
    let picked = KEYS.iter().find_map(|k| match &args[*k] {
        Value::String(s) => Some(s.clone()),
        Value::Array(a) => Some(
            a.iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(" "),
        ),
        _ => None,
    });
    shorten(
        &picked.unwrap_or_else(|| match args {
            Value::Null => String::new(),
            other => other.to_string(),
        }),
        SUMMARY_CHARS,
    )
}

/// At most `max` characters, on one line, `…` where it was cut.
impl AgentEvent {
    /// One line saying what happened, as `baton log` and the board's
    /// cards show it: `says: …`, `→ Tool summary`, `✓ result`, … The
    /// text is the agent's, untrusted: whoever shows it escapes it.
    pub fn describe(&self) -> String {
        use AgentEvent as A;
        match self {
            A::SessionStarted { native_id } => format!("session {native_id}"),
            A::AssistantText { text } => format!("says: {}", shorten(text, 200)),
            A::ToolCall { name, summary, .. } => format!("→ {name} {summary}"),
            A::ToolResult { ok, summary, .. } => format!(
                "{} {}",
                if *ok { "  ✓" } else { "  ✗" },
                shorten(summary, 200)
            ),
            A::Usage {
                input_tokens,
                output_tokens,
                cost_usd,
            } => format!(
                "tokens: {input_tokens} in, {output_tokens} out{}",
                cost_usd.map(|c| format!(", ${c:.4}")).unwrap_or_default()
            ),
            A::Final { ok, text } => format!(
                "{}: {}",
                if *ok { "done" } else { "ended in failure" },
                shorten(text, 200)
            ),
            A::Error { message } => format!("error: {}", shorten(message, 300)),
            A::Warning { message } => format!("warning: {}", shorten(message, 300)),
            A::Subagent { event, .. } => format!("subagent {}", event.describe()),
        }
    }

    /// Whether it says what the agent is doing (its words, a tool call or
    /// result, its end or an error), rather than bookkeeping (its session
    /// id, tokens, a line baton could not read).
    pub fn is_step(&self) -> bool {
        match self {
            AgentEvent::SessionStarted { .. }
            | AgentEvent::Usage { .. }
            | AgentEvent::Warning { .. } => false,
            AgentEvent::Subagent { event, .. } => event.is_step(),
            _ => true,
        }
    }
}

pub fn shorten(s: &str, max: usize) -> String {
    let one_line = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() <= max {
        return one_line;
    }
    let mut out: String = one_line.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summaries_pick_the_path_or_command_and_stay_short() {
        assert_eq!(
            summarize_args(&serde_json::json!({"file_path": "/a/b.rs", "content": "x"})),
            "/a/b.rs"
        );
        assert_eq!(
            summarize_args(&serde_json::json!({"command": ["bash", "-lc", "ls"]})),
            "bash -lc ls"
        );
        let long = "y".repeat(500);
        let s = summarize_args(&serde_json::json!({ "other": long }));
        assert_eq!(s.chars().count(), SUMMARY_CHARS);
        assert!(s.ends_with('…'));
    }
}
