//! The agent CLIs' own session files (their transcripts on disk), read into
//! baton's event model, for `baton import`.
//!
//! These are not the CLIs' stdout streams ([`crate::agent_stream`]) but what
//! each CLI keeps to resume a session later (verified with the pinned
//! versions, docs/dev/agent-clis.md):
//!
//! * Claude Code: `$CLAUDE_CONFIG_DIR/projects/<cwd, / as ->/<session-id>.jsonl`
//!   (default `~/.claude`), one JSON object a line.
//! * Codex: `$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<thread-id>.jsonl`
//!   (default `~/.codex`): `{timestamp, type, payload}` lines.
//! * Gemini CLI: `~/.gemini/tmp/<project name>/chats/session-<time>-<id8>.jsonl`:
//!   a header line (`sessionId`, `projectHash` = sha256 of the folder), then
//!   message records and `{"$set": …}` updates (a record may be written
//!   again with the same `id`, updated). The older single-JSON
//!   `session-*.json` (header fields plus `messages`) is read too.
//! * Qwen Code: `~/.qwen/projects/<cwd, / as ->/chats/<session-id>.jsonl`.
//! * OpenCode: keeps sessions in SQLite (`$XDG_DATA_HOME/opencode/opencode.db`);
//!   what is read here is the JSON `opencode export <sessionID>` prints
//!   (`{info, messages: [{info, parts}]}`).
//! * GitHub Copilot CLI: `$COPILOT_HOME/session-state/<session-id>/events.jsonl`
//!   (default `~/.copilot`): `{type, data, id, timestamp, parentId}` events,
//!   `session.start` first.
//! * Factory droid: `~/.factory/sessions/<cwd, / as ->/<session-id>.jsonl`:
//!   `session_start`, then Anthropic-style `message` records. Its token
//!   counts are not in it (they are in `<session-id>.settings.json` beside).
//!
//! Pure: the text in, the transcript out. A malformed line is counted in
//! [`NativeTranscript::warnings`] and skipped; a text that is not the
//! CLI's session file at all is refused, saying what was expected.

use crate::agent_stream::{AgentEvent, Cli, SUMMARY_CHARS, shorten, summarize_args};
use serde::Serialize;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

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
    fn new() -> NativeTranscript {
        NativeTranscript {
            native_id: None,
            cwd: None,
            first_prompt: None,
            user_messages: Vec::new(),
            events: Vec::new(),
            warnings: 0,
        }
    }

    fn user(&mut self, text: String) {
        let text = text.trim().to_string();
        if text.is_empty() {
            return;
        }
        if self.first_prompt.is_none() {
            self.first_prompt = Some(text.clone());
        }
        self.user_messages.push(text);
    }

    fn assistant(&mut self, text: &str) {
        if !text.trim().is_empty() {
            self.events
                .push(AgentEvent::AssistantText { text: text.into() });
        }
    }
}

/// Where each CLI keeps the file [`parse_transcript`] reads, for messages.
pub fn expected_file(cli: Cli) -> &'static str {
    match cli {
        Cli::Claude => {
            "a Claude Code session file ($CLAUDE_CONFIG_DIR/projects/<project>/<session-id>.jsonl, by default under ~/.claude)"
        }
        Cli::Codex => {
            "a Codex session file ($CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<thread-id>.jsonl, by default under ~/.codex)"
        }
        Cli::Gemini => {
            "a Gemini CLI session file (~/.gemini/tmp/<project>/chats/session-<time>-<id>.jsonl)"
        }
        Cli::Qwen => {
            "a Qwen Code session file (~/.qwen/projects/<project>/chats/<session-id>.jsonl)"
        }
        Cli::Opencode => {
            "an OpenCode session export (the JSON `opencode export <sessionID>` prints)"
        }
        Cli::Copilot => {
            "a GitHub Copilot CLI session file ($COPILOT_HOME/session-state/<session-id>/events.jsonl, by default under ~/.copilot)"
        }
        Cli::Droid => {
            "a Factory droid session file (~/.factory/sessions/<project>/<session-id>.jsonl)"
        }
    }
}

/// Which CLI wrote this session file, judged from its first readable
/// record; `None` when it looks like none of them.
pub fn detect(text: &str) -> Option<Cli> {
    if let Ok(Value::Object(o)) = serde_json::from_str::<Value>(document(text)) {
        return classify_document(&o);
    }
    text.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l.trim()).ok())
        .filter_map(|v| v.as_object().and_then(classify_line))
        .next()
}

/// A whole-file JSON document: an OpenCode export, an older Gemini
/// session, or one line of a JSON Lines file.
/// The JSON document in `text`, past a line `opencode export` prints
/// first on stderr ("Exporting session: …") when both were captured.
fn document(text: &str) -> &str {
    if text.trim_start().starts_with('{') {
        return text;
    }
    text.find("\n{").map_or(text, |i| &text[i + 1..])
}

fn classify_document(o: &Map<String, Value>) -> Option<Cli> {
    let info = o.get("info").and_then(Value::as_object);
    if let Some(info) = info
        && o.get("messages").is_some_and(Value::is_array)
        && info.get("id").and_then(Value::as_str).is_some()
    {
        return Some(Cli::Opencode);
    }
    if o.get("messages").is_some_and(Value::is_array)
        && o.get("sessionId").is_some()
        && o.get("projectHash").is_some()
    {
        return Some(Cli::Gemini);
    }
    classify_line(o)
}

fn classify_line(o: &Map<String, Value>) -> Option<Cli> {
    let ty = o.get("type").and_then(Value::as_str).unwrap_or("");
    let has = |k: &str| o.get(k).is_some_and(|v| !v.is_null());
    // Copilot: dotted event types (`session.start`, `user.message`) with
    // their `data`, chained by `parentId`.
    if ty.contains('.') && o.get("data").is_some_and(Value::is_object) && o.contains_key("parentId")
    {
        return Some(Cli::Copilot);
    }
    if has("payload")
        && matches!(
            ty,
            "session_meta"
                | "response_item"
                | "event_msg"
                | "turn_context"
                | "compacted"
                | "world_state"
                | "token_usage_record"
        )
    {
        return Some(Cli::Codex);
    }
    if has("projectHash") || has("$set") || ty == "gemini" {
        return Some(Cli::Gemini);
    }
    let message = o.get("message");
    if has("sessionId")
        && (message.is_some_and(|m| m.get("parts").is_some())
            || has("systemPayload")
            || has("toolCallResult"))
    {
        return Some(Cli::Qwen);
    }
    if has("sessionId") || (ty == "summary" && has("leafUuid")) {
        return Some(Cli::Claude);
    }
    // droid: `session_start` (no sessionId: its `id` is the session's),
    // then `message` records holding an Anthropic-style `message`.
    if (ty == "session_start" && has("id") && has("cwd"))
        || (ty == "message" && o.get("message").is_some_and(|m| m.get("role").is_some()))
        || ty == "agent_turn_outcome"
    {
        return Some(Cli::Droid);
    }
    None
}

fn cli_name(cli: Cli) -> &'static str {
    match cli {
        Cli::Claude => "Claude Code",
        Cli::Codex => "Codex",
        Cli::Gemini => "Gemini CLI",
        Cli::Qwen => "Qwen Code",
        Cli::Opencode => "OpenCode",
        Cli::Copilot => "GitHub Copilot CLI",
        Cli::Droid => "Factory droid",
    }
}

/// Reads `text`, the native session file of `cli`, into a transcript.
/// Malformed lines are counted in `warnings`; a text that is not that
/// CLI's session file is an `Err` naming the file expected.
pub fn parse_transcript(cli: Cli, text: &str) -> Result<NativeTranscript, String> {
    let refuse = |why: String| Err(format!("this is not {}: {why}", expected_file(cli)));
    if text.trim().is_empty() {
        return refuse("the file is empty".into());
    }
    match detect(text) {
        Some(found) if found == cli => {}
        Some(found) => {
            return refuse(format!(
                "it looks like a {} session file; import it with `baton import {}`",
                cli_name(found),
                found.as_str()
            ));
        }
        None => {
            let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
            let why = match serde_json::from_str::<Value>(first.trim()) {
                Err(_) if cli == Cli::Opencode => "it is not JSON (or it was cut off)".to_string(),
                Err(_) => "line 1 is not JSON".to_string(),
                Ok(_) => match cli {
                    Cli::Claude | Cli::Qwen => "line 1 has no sessionId".to_string(),
                    Cli::Codex => "line 1 is not a {type, payload} rollout record".to_string(),
                    Cli::Gemini => "line 1 has no sessionId and projectHash".to_string(),
                    Cli::Opencode => "it has no info.id and messages".to_string(),
                    Cli::Copilot => "line 1 is not a {type, data, parentId} event".to_string(),
                    Cli::Droid => "line 1 is not a session_start or message record".to_string(),
                },
            };
            return refuse(why);
        }
    }
    let mut t = NativeTranscript::new();
    match cli {
        Cli::Claude => claude(text, &mut t),
        Cli::Codex => codex(text, &mut t),
        Cli::Gemini => gemini(text, &mut t),
        Cli::Qwen => qwen(text, &mut t),
        Cli::Opencode => opencode(text, &mut t)?,
        Cli::Copilot => copilot(text, &mut t),
        Cli::Droid => droid(text, &mut t),
    }
    Ok(t)
}

/// The JSON objects of a JSON Lines text; every other non-blank line is a
/// warning.
fn objects(text: &str, warnings: &mut usize) -> Vec<Map<String, Value>> {
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        match serde_json::from_str::<Value>(line) {
            Ok(Value::Object(o)) => out.push(o),
            _ => *warnings += 1,
        }
    }
    out
}

fn str_of<'a>(v: &'a Value, k: &str) -> &'a str {
    v.get(k).and_then(Value::as_str).unwrap_or("")
}

fn num(v: &Value) -> u64 {
    v.as_u64().unwrap_or(0)
}

/// Text of a content value: a string, or the `text` of each block.
fn text_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(items) => items
            .iter()
            .filter_map(|i| match i {
                Value::String(s) => Some(s.clone()),
                other => other.get("text").and_then(Value::as_str).map(String::from),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        Value::Null => String::new(),
        other => other
            .get("text")
            .or_else(|| other.get("output"))
            .and_then(Value::as_str)
            .map(String::from)
            .unwrap_or_else(|| other.to_string()),
    }
}

fn set_once(slot: &mut Option<String>, v: &Value) {
    if slot.is_none()
        && let Some(s) = v.as_str().filter(|s| !s.is_empty())
    {
        *slot = Some(s.to_string());
    }
}

/// Claude Code: `user` lines (prompts, tool results), `assistant` lines (one
/// per content block, each repeating the message's usage); the rest is
/// housekeeping. Side chains (sub-agents) and meta messages are left out.
fn claude(text: &str, t: &mut NativeTranscript) {
    // Where each assistant message's usage went, to update it in place.
    let mut usage_at: Vec<(String, usize)> = Vec::new();
    for o in objects(text, &mut t.warnings) {
        let v = Value::Object(o);
        set_once(&mut t.native_id, &v["sessionId"]);
        set_once(&mut t.cwd, &v["cwd"]);
        if v["isSidechain"].as_bool() == Some(true) || v["isMeta"].as_bool() == Some(true) {
            continue;
        }
        let msg = &v["message"];
        match str_of(&v, "type") {
            "user" => match &msg["content"] {
                Value::String(s) => t.user(s.clone()),
                Value::Array(blocks) => {
                    let mut said = Vec::new();
                    for b in blocks {
                        match str_of(b, "type") {
                            "text" => said.push(str_of(b, "text").to_string()),
                            "tool_result" => t.events.push(AgentEvent::ToolResult {
                                id: str_of(b, "tool_use_id").into(),
                                ok: !b["is_error"].as_bool().unwrap_or(false),
                                summary: shorten(&text_of(&b["content"]), SUMMARY_CHARS),
                            }),
                            _ => {}
                        }
                    }
                    t.user(said.join("\n"));
                }
                _ => t.warnings += 1,
            },
            "assistant" => {
                for b in msg["content"].as_array().into_iter().flatten() {
                    match str_of(b, "type") {
                        "text" => t.assistant(str_of(b, "text")),
                        "tool_use" => t.events.push(AgentEvent::ToolCall {
                            id: str_of(b, "id").into(),
                            name: str_of(b, "name").into(),
                            summary: summarize_args(&b["input"]),
                        }),
                        _ => {}
                    }
                }
                let u = &msg["usage"];
                if u.is_object() {
                    let usage = AgentEvent::Usage {
                        input_tokens: num(&u["input_tokens"])
                            + num(&u["cache_read_input_tokens"])
                            + num(&u["cache_creation_input_tokens"]),
                        output_tokens: num(&u["output_tokens"]),
                        cost_usd: None,
                    };
                    let id = str_of(msg, "id").to_string();
                    match usage_at.iter().find(|(m, _)| !id.is_empty() && *m == id) {
                        Some((_, at)) => t.events[*at] = usage,
                        None => {
                            usage_at.push((id, t.events.len()));
                            t.events.push(usage);
                        }
                    }
                }
            }
            _ => {}
        }
    }
}

/// The user messages Codex adds itself (instructions, environment).
const CODEX_INJECTED: [&str; 6] = [
    "<environment_context>",
    "<user_instructions>",
    "<skills_instructions>",
    "# AGENTS.md instructions",
    "<permissions instructions>",
    "<turn_aborted>",
];

/// Codex rollouts: `session_meta` (id, cwd), `response_item`s (messages,
/// tool calls and outputs, as sent to the model), `event_msg`s (token
/// counts among them).
fn codex(text: &str, t: &mut NativeTranscript) {
    for o in objects(text, &mut t.warnings) {
        let v = Value::Object(o);
        let p = &v["payload"];
        match str_of(&v, "type") {
            "session_meta" => {
                set_once(&mut t.native_id, &p["id"]);
                set_once(&mut t.cwd, &p["cwd"]);
            }
            "turn_context" => set_once(&mut t.cwd, &p["cwd"]),
            "response_item" => codex_item(p, t),
            "event_msg" if str_of(p, "type") == "token_count" => {
                let u = &p["info"]["last_token_usage"];
                if u.is_object() {
                    t.events.push(AgentEvent::Usage {
                        input_tokens: num(&u["input_tokens"]),
                        output_tokens: num(&u["output_tokens"]),
                        cost_usd: None,
                    });
                }
            }
            _ => {}
        }
    }
}

fn codex_item(p: &Value, t: &mut NativeTranscript) {
    let call_id = || str_of(p, "call_id").to_string();
    match str_of(p, "type") {
        "message" => {
            let text = text_of(&p["content"]);
            match str_of(p, "role") {
                "user" => {
                    let harness =
                        p["internal_chat_message_metadata_passthrough"]["content_item_metadata"]
                            .as_array()
                            .into_iter()
                            .flatten()
                            .any(|m| m["provenance"]["type"] == "harness");
                    let injected = CODEX_INJECTED
                        .iter()
                        .any(|pre| text.trim_start().starts_with(pre));
                    if !harness && !injected {
                        t.user(text);
                    }
                }
                "assistant" => t.assistant(&text),
                _ => {}
            }
        }
        "function_call" => {
            let args: Value = serde_json::from_str(str_of(p, "arguments"))
                .unwrap_or_else(|_| Value::String(str_of(p, "arguments").into()));
            t.events.push(AgentEvent::ToolCall {
                id: call_id(),
                name: str_of(p, "name").into(),
                summary: summarize_args(&args),
            });
        }
        "custom_tool_call" => t.events.push(AgentEvent::ToolCall {
            id: call_id(),
            name: str_of(p, "name").into(),
            summary: shorten(&patch_files(str_of(p, "input")), SUMMARY_CHARS),
        }),
        "local_shell_call" => t.events.push(AgentEvent::ToolCall {
            id: call_id(),
            name: "shell".into(),
            summary: summarize_args(&p["action"]),
        }),
        "function_call_output" | "custom_tool_call_output" => {
            let out = &p["output"];
            let text = text_of(out);
            t.events.push(AgentEvent::ToolResult {
                id: call_id(),
                ok: out["success"].as_bool().unwrap_or(true) && codex_exit_ok(&text),
                summary: shorten(&text, SUMMARY_CHARS),
            });
        }
        _ => {}
    }
}

/// The files an `apply_patch` input touches ("add a.txt, update b.rs"), or
/// the input itself when it names none.
fn patch_files(input: &str) -> String {
    let files: Vec<String> = input
        .lines()
        .filter_map(|l| {
            let l = l.trim();
            [
                ("*** Add File: ", "add"),
                ("*** Update File: ", "update"),
                ("*** Delete File: ", "delete"),
            ]
            .iter()
            .find_map(|(pre, kind)| l.strip_prefix(pre).map(|f| format!("{kind} {f}")))
        })
        .collect();
    if files.is_empty() {
        input.to_string()
    } else {
        files.join(", ")
    }
}

/// Whether a Codex tool output says the command succeeded ("Process exited
/// with code 0", "Exit code: 0", or no exit code at all).
fn codex_exit_ok(text: &str) -> bool {
    for pre in ["Process exited with code ", "Exit code: "] {
        if let Some(rest) = text.lines().find_map(|l| l.trim().strip_prefix(pre)) {
            return rest.trim() == "0";
        }
    }
    true
}

/// Gemini CLI: the header, then records (`id`, `type`: user / gemini /
/// info / warning / error) and `$set` updates; a record written again with
/// the same id replaces the earlier one in place.
fn gemini(text: &str, t: &mut NativeTranscript) {
    let mut records: Vec<Value> = Vec::new();
    let put = |records: &mut Vec<Value>, r: Value| {
        let id = str_of(&r, "id").to_string();
        match records
            .iter_mut()
            .find(|x| !id.is_empty() && str_of(x, "id") == id)
        {
            Some(x) => *x = r,
            None => records.push(r),
        }
    };
    let mut project_hash = None;
    let header = |o: &Map<String, Value>, t: &mut NativeTranscript, hash: &mut Option<String>| {
        if let Some(id) = o.get("sessionId") {
            set_once(&mut t.native_id, id);
        }
        if hash.is_none() {
            *hash = o
                .get("projectHash")
                .and_then(Value::as_str)
                .map(String::from);
        }
    };
    match serde_json::from_str::<Value>(text) {
        // The older single-document session-*.json.
        Ok(Value::Object(o)) if o.get("messages").is_some_and(Value::is_array) => {
            header(&o, t, &mut project_hash);
            for r in o["messages"].as_array().into_iter().flatten() {
                put(&mut records, r.clone());
            }
        }
        _ => {
            for o in objects(text, &mut t.warnings) {
                if o.contains_key("projectHash") {
                    header(&o, t, &mut project_hash);
                } else if let Some(set) = o.get("$set") {
                    if let Some(ms) = set.get("messages").and_then(Value::as_array) {
                        records.clear();
                        for r in ms {
                            put(&mut records, r.clone());
                        }
                    }
                } else if o.contains_key("type") {
                    put(&mut records, Value::Object(o));
                }
            }
        }
    }
    for r in &records {
        match str_of(r, "type") {
            "user" => {
                let text = match &r["content"] {
                    Value::String(s) => s.clone(),
                    parts => text_of(parts),
                };
                // The context Gemini CLI sets up itself; it names the folder.
                if text.trim_start().starts_with("<session_context>") {
                    if t.cwd.is_none() {
                        t.cwd = gemini_workspace(&text, project_hash.as_deref());
                    }
                    continue;
                }
                t.user(text);
            }
            "gemini" => {
                let text = match &r["content"] {
                    Value::String(s) => s.clone(),
                    parts => text_of(parts),
                };
                t.assistant(&text);
                for c in r["toolCalls"].as_array().into_iter().flatten() {
                    let id = str_of(c, "id").to_string();
                    t.events.push(AgentEvent::ToolCall {
                        id: id.clone(),
                        name: str_of(c, "name").into(),
                        summary: summarize_args(&c["args"]),
                    });
                    let status = str_of(c, "status");
                    if matches!(status, "success" | "error" | "cancelled") {
                        let out: Vec<String> = c["result"]
                            .as_array()
                            .into_iter()
                            .flatten()
                            .map(|p| {
                                let resp = &p["functionResponse"]["response"];
                                text_of(if resp["output"].is_null() {
                                    &resp["error"]
                                } else {
                                    &resp["output"]
                                })
                            })
                            .collect();
                        t.events.push(AgentEvent::ToolResult {
                            id,
                            ok: status == "success",
                            summary: shorten(&out.join("\n"), SUMMARY_CHARS),
                        });
                    }
                }
                let tk = &r["tokens"];
                if tk.is_object() {
                    t.events.push(AgentEvent::Usage {
                        input_tokens: num(&tk["input"]),
                        output_tokens: num(&tk["output"]) + num(&tk["thoughts"]),
                        cost_usd: None,
                    });
                }
            }
            "error" => t.events.push(AgentEvent::Error {
                message: text_of(&r["content"]),
            }),
            _ => {}
        }
    }
}

/// The workspace folder named in Gemini CLI's session context, trusted
/// only when its sha256 is the session's project hash (when there is one).
fn gemini_workspace(context: &str, project_hash: Option<&str>) -> Option<String> {
    let mut lines = context.lines();
    lines.find(|l| l.contains("Workspace Directories"))?;
    let candidates: Vec<&str> = lines
        .map_while(|l| l.trim_start().strip_prefix("- "))
        .map(str::trim)
        .collect();
    let hash = |p: &str| format!("{:x}", Sha256::digest(p.as_bytes()));
    match project_hash {
        Some(h) => candidates.into_iter().find(|c| hash(c) == h),
        None => candidates.into_iter().next(),
    }
    .map(String::from)
}

/// Qwen Code: `user` / `assistant` / `tool_result` lines holding Gemini-style
/// `parts`, and `system` lines (telemetry, snapshots) that are skipped.
fn qwen(text: &str, t: &mut NativeTranscript) {
    for o in objects(text, &mut t.warnings) {
        let v = Value::Object(o);
        set_once(&mut t.native_id, &v["sessionId"]);
        set_once(&mut t.cwd, &v["cwd"]);
        let parts = v["message"]["parts"].as_array();
        match str_of(&v, "type") {
            "user" => {
                let text: Vec<&str> = parts
                    .into_iter()
                    .flatten()
                    .filter_map(|p| p["text"].as_str())
                    .collect();
                t.user(text.join("\n"));
            }
            "assistant" => {
                for p in parts.into_iter().flatten() {
                    if let Some(s) = p["text"].as_str()
                        && p["thought"].as_bool() != Some(true)
                    {
                        t.assistant(s);
                    }
                    let call = &p["functionCall"];
                    if call.is_object() {
                        t.events.push(AgentEvent::ToolCall {
                            id: str_of(call, "id").into(),
                            name: str_of(call, "name").into(),
                            summary: summarize_args(&call["args"]),
                        });
                    }
                }
                let u = &v["usageMetadata"];
                if u.is_object() {
                    t.events.push(AgentEvent::Usage {
                        input_tokens: num(&u["promptTokenCount"]),
                        output_tokens: num(&u["candidatesTokenCount"])
                            + num(&u["thoughtsTokenCount"]),
                        cost_usd: None,
                    });
                }
            }
            "tool_result" => {
                let status = str_of(&v["toolCallResult"], "status");
                for p in parts.into_iter().flatten() {
                    let r = &p["functionResponse"];
                    if !r.is_object() {
                        continue;
                    }
                    let resp = &r["response"];
                    let failed =
                        !resp["error"].is_null() || matches!(status, "error" | "cancelled");
                    t.events.push(AgentEvent::ToolResult {
                        id: str_of(r, "id").into(),
                        ok: !failed,
                        summary: shorten(
                            &text_of(if failed && !resp["error"].is_null() {
                                &resp["error"]
                            } else {
                                &resp["output"]
                            }),
                            SUMMARY_CHARS,
                        ),
                    });
                }
            }
            _ => {}
        }
    }
}

/// OpenCode's `opencode export` JSON: `info` (id, directory) and messages
/// with their parts (text, tool with its state, step-finish with tokens).
fn opencode(text: &str, t: &mut NativeTranscript) -> Result<(), String> {
    let v: Value = serde_json::from_str(document(text)).map_err(|e| {
        format!(
            "this is not {}: it is not complete JSON ({e})",
            expected_file(Cli::Opencode)
        )
    })?;
    set_once(&mut t.native_id, &v["info"]["id"]);
    set_once(&mut t.cwd, &v["info"]["directory"]);
    for m in v["messages"].as_array().into_iter().flatten() {
        let parts = m["parts"].as_array();
        if !m["info"].is_object() || parts.is_none() {
            t.warnings += 1;
            continue;
        }
        match str_of(&m["info"], "role") {
            "user" => {
                let text: Vec<&str> = parts
                    .into_iter()
                    .flatten()
                    .filter(|p| str_of(p, "type") == "text" && p["synthetic"] != true)
                    .filter_map(|p| p["text"].as_str())
                    .collect();
                t.user(text.join("\n"));
            }
            "assistant" => {
                for p in parts.into_iter().flatten() {
                    match str_of(p, "type") {
                        "text" if p["synthetic"] != true => t.assistant(str_of(p, "text")),
                        "tool" => {
                            let id = str_of(p, "callID").to_string();
                            let state = &p["state"];
                            t.events.push(AgentEvent::ToolCall {
                                id: id.clone(),
                                name: str_of(p, "tool").into(),
                                summary: summarize_args(&state["input"]),
                            });
                            match str_of(state, "status") {
                                "completed" => t.events.push(AgentEvent::ToolResult {
                                    id,
                                    ok: true,
                                    summary: shorten(&text_of(&state["output"]), SUMMARY_CHARS),
                                }),
                                "error" => t.events.push(AgentEvent::ToolResult {
                                    id,
                                    ok: false,
                                    summary: shorten(&text_of(&state["error"]), SUMMARY_CHARS),
                                }),
                                _ => {}
                            }
                        }
                        "step-finish" => {
                            let tk = &p["tokens"];
                            t.events.push(AgentEvent::Usage {
                                input_tokens: num(&tk["input"])
                                    + num(&tk["cache"]["read"])
                                    + num(&tk["cache"]["write"]),
                                output_tokens: num(&tk["output"]) + num(&tk["reasoning"]),
                                cost_usd: p["cost"].as_f64(),
                            });
                        }
                        _ => {}
                    }
                }
            }
            _ => t.warnings += 1,
        }
    }
    Ok(())
}

/// GitHub Copilot CLI's `events.jsonl`: `session.start` (id, folder), the
/// user's messages, the assistant's (with its tool requests), each tool's
/// completion, a `session.usage_record` per model call; system prompts,
/// turn marks and accounting are skipped. Every run of the session appends
/// to the same file (`session.resume` marks the next one).
fn copilot(text: &str, t: &mut NativeTranscript) {
    for o in objects(text, &mut t.warnings) {
        let v = Value::Object(o);
        let d = &v["data"];
        match str_of(&v, "type") {
            "session.start" => {
                set_once(&mut t.native_id, &d["sessionId"]);
                set_once(&mut t.cwd, &d["context"]["cwd"]);
            }
            "user.message" => t.user(str_of(d, "content").to_string()),
            "assistant.message" => {
                t.assistant(str_of(d, "content"));
                for r in d["toolRequests"].as_array().into_iter().flatten() {
                    t.events.push(AgentEvent::ToolCall {
                        id: str_of(r, "toolCallId").into(),
                        name: str_of(r, "name").into(),
                        summary: summarize_args(&r["arguments"]),
                    });
                }
            }
            "tool.execution_complete" => {
                let ok = d["success"].as_bool().unwrap_or(false);
                let out = if ok {
                    text_of(&d["result"]["content"])
                } else {
                    text_of(&d["error"]["message"])
                };
                t.events.push(AgentEvent::ToolResult {
                    id: str_of(d, "toolCallId").into(),
                    ok,
                    summary: shorten(&out, SUMMARY_CHARS),
                });
            }
            "session.usage_record" => {
                let u = &d["usage"];
                t.events.push(AgentEvent::Usage {
                    input_tokens: num(&u["inputTokens"])
                        + num(&u["cacheReadTokens"])
                        + num(&u["cacheWriteTokens"]),
                    output_tokens: num(&u["outputTokens"]) + num(&u["reasoningTokens"]),
                    cost_usd: None,
                });
            }
            "session.error" => t.events.push(AgentEvent::Error {
                message: str_of(d, "message").into(),
            }),
            _ => {}
        }
    }
}

/// Factory droid's session file: `session_start` (id, folder), then
/// `message` records in Anthropic's shape (text, `tool_use`, `tool_result`
/// blocks). The context droid gathers itself (a user message with the id
/// `context-…`, seen by the model only) is not the user's.
fn droid(text: &str, t: &mut NativeTranscript) {
    for o in objects(text, &mut t.warnings) {
        let v = Value::Object(o);
        match str_of(&v, "type") {
            "session_start" => {
                set_once(&mut t.native_id, &v["id"]);
                set_once(&mut t.cwd, &v["cwd"]);
            }
            "message" => {
                let msg = &v["message"];
                let injected = str_of(&v, "id").starts_with("context-")
                    || str_of(msg, "visibility") == "llm_only";
                let blocks = msg["content"].as_array();
                match str_of(msg, "role") {
                    "user" => {
                        let mut said = Vec::new();
                        for b in blocks.into_iter().flatten() {
                            match str_of(b, "type") {
                                "text" if !injected => said.push(str_of(b, "text").to_string()),
                                "tool_result" => t.events.push(AgentEvent::ToolResult {
                                    id: str_of(b, "tool_use_id").into(),
                                    ok: !b["is_error"].as_bool().unwrap_or(false),
                                    summary: shorten(&text_of(&b["content"]), SUMMARY_CHARS),
                                }),
                                _ => {}
                            }
                        }
                        t.user(said.join("\n"));
                    }
                    "assistant" => {
                        for b in blocks.into_iter().flatten() {
                            match str_of(b, "type") {
                                "text" => t.assistant(str_of(b, "text")),
                                "tool_use" => t.events.push(AgentEvent::ToolCall {
                                    id: str_of(b, "id").into(),
                                    name: str_of(b, "name").into(),
                                    summary: summarize_args(&b["input"]),
                                }),
                                _ => {}
                            }
                        }
                    }
                    _ => t.warnings += 1,
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codex_exit_codes_decide_the_result() {
        assert!(codex_exit_ok("Process exited with code 0\nOutput:\n"));
        assert!(!codex_exit_ok("Exit code: 2\nOutput:\nno such file"));
        assert!(codex_exit_ok("Success. Updated the following files"));
    }

    #[test]
    fn an_apply_patch_is_summarized_by_the_files_it_touches() {
        let patch = "*** Begin Patch\n*** Add File: hello.txt\n+hi\n*** Update File: src/a.rs\n@@\n*** End Patch";
        assert_eq!(patch_files(patch), "add hello.txt, update src/a.rs");
    }

    #[test]
    fn the_gemini_folder_is_trusted_only_when_it_matches_the_project_hash() {
        let ctx = "<session_context>\n- **Workspace Directories:**\n  - /w/other\n  - /w/repo\n- **Directory Structure:**";
        let h = format!("{:x}", Sha256::digest(b"/w/repo"));
        assert_eq!(gemini_workspace(ctx, Some(&h)).as_deref(), Some("/w/repo"));
        assert_eq!(gemini_workspace(ctx, Some("00")), None);
    }
}
