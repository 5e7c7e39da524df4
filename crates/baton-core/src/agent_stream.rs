//! Agent CLI output streams (JSON Lines) turned into one event model.
//!
//! Each CLI writes its own JSON Lines when run headless (Claude Code
//! `--output-format stream-json`, Codex `exec --json`, Gemini CLI and Qwen
//! Code `-o stream-json`, OpenCode `run --format json`, GitHub Copilot CLI
//! `--output-format json`, Factory droid `exec -o stream-json`). [`StreamParser`]
//! reads them a line at a time into [`AgentEvent`]s: the session started
//! (with its native id), assistant text, tool calls and their results,
//! token usage, the final message, errors. A line that is not JSON, or not
//! what the CLI is known to write, becomes a [`AgentEvent::Warning`]; it
//! never stops the parse.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The agent CLIs baton knows the streams of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Cli {
    Claude,
    Codex,
    Gemini,
    Qwen,
    Opencode,
    /// GitHub Copilot CLI.
    Copilot,
    /// Factory droid.
    Droid,
}

impl Cli {
    pub fn as_str(self) -> &'static str {
        match self {
            Cli::Claude => "claude",
            Cli::Codex => "codex",
            Cli::Gemini => "gemini",
            Cli::Qwen => "qwen",
            Cli::Opencode => "opencode",
            Cli::Copilot => "copilot",
            Cli::Droid => "droid",
        }
    }
}

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
}

/// How long summaries (tool arguments, results) may be.
pub const SUMMARY_CHARS: usize = 160;

/// Reads one CLI's stream a line at a time.
#[derive(Debug, Clone)]
pub struct StreamParser {
    cli: Cli,
    line_no: usize,
    /// The assistant's latest message (Gemini streams it in deltas).
    last_text: String,
    session: Option<String>,
    /// Copilot's tool calls still waiting for their result (id, "name
    /// summary"): its results and refusals name only the call's id.
    calls: Vec<(String, String)>,
}

impl StreamParser {
    pub fn new(cli: Cli) -> StreamParser {
        StreamParser {
            cli,
            line_no: 0,
            last_text: String::new(),
            session: None,
            calls: Vec::new(),
        }
    }

    /// The events of one line (without its newline).
    pub fn line(&mut self, line: &str) -> Vec<AgentEvent> {
        self.line_no += 1;
        let line = line.trim();
        if line.is_empty() {
            return Vec::new();
        }
        let v: Value = match serde_json::from_str(line) {
            Ok(v) => v,
            Err(e) => {
                return vec![AgentEvent::Warning {
                    message: format!(
                        "{} output line {} is not JSON ({e}): {}",
                        self.cli.as_str(),
                        self.line_no,
                        shorten(line, 80)
                    ),
                }];
            }
        };
        let mut out = match self.cli {
            Cli::Claude | Cli::Qwen => self.claude(&v),
            Cli::Codex => self.codex(&v),
            Cli::Gemini => self.gemini(&v),
            Cli::Opencode => self.opencode(&v),
            Cli::Copilot => self.copilot(&v),
            Cli::Droid => self.droid(&v),
        };
        // OpenCode names its session on every event: say it once (again
        // only if it changes, e.g. a resume that started a new one).
        out.retain(|e| match e {
            AgentEvent::SessionStarted { native_id } => {
                let new = self.session.as_deref() != Some(native_id.as_str());
                self.session = Some(native_id.clone());
                new
            }
            _ => true,
        });
        for e in &out {
            match e {
                AgentEvent::AssistantText { text } if self.cli == Cli::Gemini => {
                    self.last_text.push_str(text)
                }
                AgentEvent::AssistantText { text } => self.last_text = text.clone(),
                AgentEvent::ToolCall { .. } => self.last_text.clear(),
                _ => {}
            }
        }
        if out.is_empty() && v.get("type").is_none() {
            out.push(AgentEvent::Warning {
                message: format!(
                    "{} output line {} has no type: {}",
                    self.cli.as_str(),
                    self.line_no,
                    shorten(line, 80)
                ),
            });
        }
        out
    }

    /// Claude Code `stream-json` (Qwen Code writes the same shape).
    fn claude(&self, v: &Value) -> Vec<AgentEvent> {
        let mut out = Vec::new();
        match str_of(v, "type") {
            "system" if str_of(v, "subtype") == "init" => {
                if let Some(id) = v["session_id"].as_str() {
                    out.push(AgentEvent::SessionStarted {
                        native_id: id.into(),
                    });
                }
            }
            // Claude retries API errors (even 401) itself; say each one.
            "system" if str_of(v, "subtype") == "api_retry" => out.push(AgentEvent::Warning {
                message: format!(
                    "API error {} ({}), retry {} of {}",
                    v["error_status"],
                    str_of(v, "error"),
                    v["attempt"],
                    v["max_retries"]
                ),
            }),
            "assistant" => {
                for c in v["message"]["content"].as_array().into_iter().flatten() {
                    match str_of(c, "type") {
                        "text" => out.push(AgentEvent::AssistantText {
                            text: str_of(c, "text").into(),
                        }),
                        "tool_use" => out.push(AgentEvent::ToolCall {
                            id: str_of(c, "id").into(),
                            name: str_of(c, "name").into(),
                            summary: summarize_args(&c["input"]),
                        }),
                        _ => {}
                    }
                }
            }
            "user" => {
                for c in v["message"]["content"].as_array().into_iter().flatten() {
                    if str_of(c, "type") == "tool_result" {
                        out.push(AgentEvent::ToolResult {
                            id: str_of(c, "tool_use_id").into(),
                            ok: !c["is_error"].as_bool().unwrap_or(false),
                            summary: shorten(&content_text(&c["content"]), SUMMARY_CHARS),
                        });
                    }
                }
            }
            "result" => {
                let u = &v["usage"];
                out.push(AgentEvent::Usage {
                    input_tokens: num(&u["input_tokens"])
                        + num(&u["cache_read_input_tokens"])
                        + num(&u["cache_creation_input_tokens"]),
                    output_tokens: num(&u["output_tokens"]),
                    cost_usd: v["total_cost_usd"].as_f64(),
                });
                for d in v["permission_denials"].as_array().into_iter().flatten() {
                    out.push(AgentEvent::Error {
                        message: format!(
                            "permission denied: {} {}",
                            str_of(d, "tool_name"),
                            summarize_args(&d["tool_input"])
                        ),
                    });
                }
                // Qwen reports an API error as a successful result whose
                // text is "[API Error: …]".
                let api_error = str_of(v, "result").starts_with("[API Error");
                let ok = !v["is_error"].as_bool().unwrap_or(false)
                    && str_of(v, "subtype") == "success"
                    && !api_error;
                if !ok {
                    out.push(AgentEvent::Error {
                        message: first_of(v, &["errors", "result", "error", "subtype"]),
                    });
                }
                out.push(AgentEvent::Final {
                    ok,
                    text: v["result"]
                        .as_str()
                        .map(str::to_string)
                        .unwrap_or_else(|| self.last_text.clone()),
                });
            }
            _ => {}
        }
        out
    }

    /// Codex `exec --json`.
    fn codex(&self, v: &Value) -> Vec<AgentEvent> {
        let mut out = Vec::new();
        let item = &v["item"];
        match str_of(v, "type") {
            "thread.started" => {
                if let Some(id) = v["thread_id"].as_str() {
                    out.push(AgentEvent::SessionStarted {
                        native_id: id.into(),
                    });
                }
            }
            "item.started" => match str_of(item, "type") {
                "command_execution" => out.push(AgentEvent::ToolCall {
                    id: str_of(item, "id").into(),
                    name: "shell".into(),
                    summary: shorten(str_of(item, "command"), SUMMARY_CHARS),
                }),
                "mcp_tool_call" => out.push(AgentEvent::ToolCall {
                    id: str_of(item, "id").into(),
                    name: format!("{}.{}", str_of(item, "server"), str_of(item, "tool")),
                    summary: summarize_args(&item["arguments"]),
                }),
                _ => {}
            },
            "item.completed" => match str_of(item, "type") {
                "agent_message" => out.push(AgentEvent::AssistantText {
                    text: str_of(item, "text").into(),
                }),
                "command_execution" => out.push(AgentEvent::ToolResult {
                    id: str_of(item, "id").into(),
                    ok: item["exit_code"].as_i64() == Some(0) && str_of(item, "status") != "failed",
                    summary: shorten(str_of(item, "aggregated_output").trim(), SUMMARY_CHARS),
                }),
                "mcp_tool_call" => out.push(AgentEvent::ToolResult {
                    id: str_of(item, "id").into(),
                    ok: str_of(item, "status") != "failed" && item["error"].is_null(),
                    summary: shorten(&content_text(&item["result"]), SUMMARY_CHARS),
                }),
                "file_change" => {
                    let files: Vec<String> = item["changes"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .map(|c| format!("{} {}", str_of(c, "kind"), str_of(c, "path")))
                        .collect();
                    let id = str_of(item, "id").to_string();
                    out.push(AgentEvent::ToolCall {
                        id: id.clone(),
                        name: "apply_patch".into(),
                        summary: shorten(&files.join(", "), SUMMARY_CHARS),
                    });
                    out.push(AgentEvent::ToolResult {
                        id,
                        ok: str_of(item, "status") != "failed",
                        summary: format!("{} file(s)", files.len()),
                    });
                }
                // Codex reports non-fatal trouble as an `error` item.
                "error" => out.push(AgentEvent::Warning {
                    message: str_of(item, "message").into(),
                }),
                _ => {}
            },
            "turn.completed" => {
                let u = &v["usage"];
                out.push(AgentEvent::Usage {
                    input_tokens: num(&u["input_tokens"]),
                    output_tokens: num(&u["output_tokens"]),
                    cost_usd: None,
                });
                out.push(AgentEvent::Final {
                    ok: true,
                    text: self.last_text.clone(),
                });
            }
            "turn.failed" => {
                out.push(AgentEvent::Error {
                    message: first_of(&v["error"], &["message"]),
                });
                out.push(AgentEvent::Final {
                    ok: false,
                    text: self.last_text.clone(),
                });
            }
            "error" => out.push(AgentEvent::Error {
                message: first_of(v, &["message"]),
            }),
            _ => {}
        }
        out
    }

    /// Gemini CLI `-o stream-json`.
    fn gemini(&self, v: &Value) -> Vec<AgentEvent> {
        let mut out = Vec::new();
        match str_of(v, "type") {
            "init" => {
                if let Some(id) = v["session_id"].as_str() {
                    out.push(AgentEvent::SessionStarted {
                        native_id: id.into(),
                    });
                }
            }
            "message" if str_of(v, "role") == "assistant" => out.push(AgentEvent::AssistantText {
                text: content_text(&v["content"]),
            }),
            "tool_use" => out.push(AgentEvent::ToolCall {
                id: str_of(v, "tool_id").into(),
                name: str_of(v, "tool_name").into(),
                summary: summarize_args(&v["parameters"]),
            }),
            "tool_result" => out.push(AgentEvent::ToolResult {
                id: str_of(v, "tool_id").into(),
                ok: str_of(v, "status") == "success",
                summary: shorten(&first_of(v, &["output", "error"]), SUMMARY_CHARS),
            }),
            "error" => out.push(AgentEvent::Error {
                message: first_of(v, &["message", "error"]),
            }),
            "result" => {
                let s = &v["stats"];
                out.push(AgentEvent::Usage {
                    input_tokens: num(&s["input_tokens"]),
                    output_tokens: num(&s["output_tokens"]),
                    cost_usd: None,
                });
                let ok = str_of(v, "status") == "success";
                if !ok {
                    out.push(AgentEvent::Error {
                        message: first_of(&v["error"], &["message"]),
                    });
                }
                out.push(AgentEvent::Final {
                    ok,
                    text: self.last_text.clone(),
                });
            }
            _ => {}
        }
        out
    }

    /// OpenCode `run --format json`: every event carries `sessionID`.
    fn opencode(&self, v: &Value) -> Vec<AgentEvent> {
        let mut out = Vec::new();
        let part = &v["part"];
        match str_of(v, "type") {
            "step_start" => {
                if let Some(id) = v["sessionID"].as_str() {
                    out.push(AgentEvent::SessionStarted {
                        native_id: id.into(),
                    });
                }
            }
            "text" => out.push(AgentEvent::AssistantText {
                text: str_of(part, "text").into(),
            }),
            "tool_use" => {
                let id = str_of(part, "callID").to_string();
                let state = &part["state"];
                out.push(AgentEvent::ToolCall {
                    id: id.clone(),
                    name: str_of(part, "tool").into(),
                    summary: summarize_args(&state["input"]),
                });
                match str_of(state, "status") {
                    "completed" => out.push(AgentEvent::ToolResult {
                        id,
                        ok: true,
                        summary: shorten(&first_of(state, &["title", "output"]), SUMMARY_CHARS),
                    }),
                    "error" => out.push(AgentEvent::ToolResult {
                        id,
                        ok: false,
                        summary: shorten(&first_of(state, &["error"]), SUMMARY_CHARS),
                    }),
                    _ => {}
                }
            }
            "step_finish" => {
                let t = &part["tokens"];
                out.push(AgentEvent::Usage {
                    input_tokens: num(&t["input"])
                        + num(&t["cache"]["read"])
                        + num(&t["cache"]["write"]),
                    output_tokens: num(&t["output"]) + num(&t["reasoning"]),
                    cost_usd: part["cost"].as_f64(),
                });
                if str_of(part, "reason") == "stop" {
                    out.push(AgentEvent::Final {
                        ok: true,
                        text: self.last_text.clone(),
                    });
                }
            }
            "error" => out.push(AgentEvent::Error {
                message: first_of(&v["error"], &["data", "message", "name"]),
            }),
            _ => {}
        }
        out
    }
}

impl StreamParser {
    /// GitHub Copilot CLI `--output-format json`: `{type, data, id,
    /// timestamp, parentId}` events, many of them `ephemeral` (deltas,
    /// model call bookkeeping) and skipped; the session id only on the last
    /// line (`result`), which has no text and no tokens (those come from
    /// `--usage-output-file`, see [`copilot_usage`]). A tool the run was not
    /// allowed to use ends `success:false` with code `denied`, and the run
    /// still exits 0: that is an error.
    fn copilot(&mut self, v: &Value) -> Vec<AgentEvent> {
        let mut out = Vec::new();
        let d = &v["data"];
        match str_of(v, "type") {
            "assistant.message" => {
                let text = str_of(d, "content");
                if !text.trim().is_empty() {
                    out.push(AgentEvent::AssistantText { text: text.into() });
                }
                for t in d["toolRequests"].as_array().into_iter().flatten() {
                    let id = str_of(t, "toolCallId").to_string();
                    let name = str_of(t, "name").to_string();
                    let summary = summarize_args(&t["arguments"]);
                    self.calls.push((id.clone(), format!("{name} {summary}")));
                    out.push(AgentEvent::ToolCall { id, name, summary });
                }
            }
            "tool.execution_complete" => {
                let id = str_of(d, "toolCallId").to_string();
                let ok = d["success"].as_bool().unwrap_or(false);
                let text = if ok {
                    content_text(&d["result"]["content"])
                } else {
                    first_of(&d["error"], &["message"])
                };
                // Answered: its call need not be remembered any longer.
                let call = self
                    .calls
                    .iter()
                    .position(|(c, _)| *c == id)
                    .map(|at| self.calls.swap_remove(at).1);
                if !ok && str_of(&d["error"], "code") == "denied" {
                    let call = call.as_deref().unwrap_or("a tool");
                    out.push(AgentEvent::Error {
                        message: format!("permission denied: {call} ({})", shorten(&text, 120)),
                    });
                }
                out.push(AgentEvent::ToolResult {
                    id,
                    ok,
                    summary: shorten(&text, SUMMARY_CHARS),
                });
            }
            "session.error" => out.push(AgentEvent::Error {
                message: format!("{}: {}", str_of(d, "errorType"), str_of(d, "message")),
            }),
            "result" => {
                if let Some(id) = v["sessionId"].as_str() {
                    out.push(AgentEvent::SessionStarted {
                        native_id: id.into(),
                    });
                }
                out.push(AgentEvent::Final {
                    ok: v["exitCode"].as_i64() == Some(0),
                    text: self.last_text.clone(),
                });
            }
            _ => {}
        }
        out
    }

    /// Factory droid `exec -o stream-json`: Claude's shape flattened, the
    /// session id on every line (`system/init` first). A tool the autonomy
    /// level does not allow comes back as an error result ("not permitted
    /// in this exec session", or "insufficient permission", which also
    /// ends the run): that is an error.
    fn droid(&self, v: &Value) -> Vec<AgentEvent> {
        let mut out = Vec::new();
        match str_of(v, "type") {
            "system" if str_of(v, "subtype") == "init" => {
                if let Some(id) = v["session_id"].as_str() {
                    out.push(AgentEvent::SessionStarted {
                        native_id: id.into(),
                    });
                }
            }
            "message" if str_of(v, "role") == "assistant" => out.push(AgentEvent::AssistantText {
                text: str_of(v, "text").into(),
            }),
            "tool_call" => out.push(AgentEvent::ToolCall {
                id: str_of(v, "id").into(),
                name: first_of(v, &["toolName", "toolId"]),
                summary: summarize_args(&v["parameters"]),
            }),
            "tool_result" => {
                let ok = !v["isError"].as_bool().unwrap_or(false);
                let text = if ok {
                    first_of(v, &["value"])
                } else {
                    first_of(&v["error"], &["message"])
                };
                if !ok
                    && (text.contains("not permitted in this exec session")
                        || text.contains("insufficient permission"))
                {
                    out.push(AgentEvent::Error {
                        message: format!(
                            "permission denied: {} ({})",
                            str_of(v, "toolId"),
                            shorten(text.trim_start_matches("Error: "), 120)
                        ),
                    });
                }
                out.push(AgentEvent::ToolResult {
                    id: str_of(v, "id").into(),
                    ok,
                    summary: shorten(&text, SUMMARY_CHARS),
                });
            }
            "completion" => {
                let u = &v["usage"];
                out.push(AgentEvent::Usage {
                    input_tokens: num(&u["input_tokens"])
                        + num(&u["cache_read_input_tokens"])
                        + num(&u["cache_creation_input_tokens"]),
                    output_tokens: num(&u["output_tokens"]),
                    cost_usd: None,
                });
                out.push(AgentEvent::Final {
                    ok: true,
                    text: v["finalText"]
                        .as_str()
                        .map(str::to_string)
                        .unwrap_or_else(|| self.last_text.clone()),
                });
            }
            "error" => out.push(AgentEvent::Error {
                message: first_of(v, &["message"]),
            }),
            _ => {}
        }
        out
    }
}

/// The tokens of a Copilot run, from the file `--usage-output-file` names
/// (written when the run ends): `modelMetrics.<model>.usage`, summed over
/// the models. None when the text holds no usage.
pub fn copilot_usage(text: &str) -> Option<AgentEvent> {
    let v: Value = serde_json::from_str(text).ok()?;
    let models = v["modelMetrics"].as_object()?;
    let (mut input, mut output) = (0, 0);
    for m in models.values() {
        let u = &m["usage"];
        input += num(&u["inputTokens"]) + num(&u["cacheReadTokens"]) + num(&u["cacheWriteTokens"]);
        output += num(&u["outputTokens"]) + num(&u["reasoningTokens"]);
    }
    Some(AgentEvent::Usage {
        input_tokens: input,
        output_tokens: output,
        cost_usd: None,
    })
}

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

impl Cli {
    /// Whether baton can give the session id up front (`--session-id`).
    pub fn chooses_session_id(self) -> bool {
        matches!(self, Cli::Claude | Cli::Gemini | Cli::Qwen | Cli::Copilot)
    }

    /// Whether continuing a session keeps its id. droid cannot load a
    /// session offline (`-s ID` needs Factory's service): it forks it
    /// (`--fork ID`), the conversation going on under a new id read from
    /// the stream.
    pub fn resume_keeps_id(self) -> bool {
        self != Cli::Droid
    }

    /// The npm package that installs it.
    pub fn package(self) -> &'static str {
        match self {
            Cli::Claude => "@anthropic-ai/claude-code",
            Cli::Codex => "@openai/codex",
            Cli::Gemini => "@google/gemini-cli",
            Cli::Qwen => "@qwen-code/qwen-code",
            Cli::Opencode => "opencode-ai",
            Cli::Copilot => "@github/copilot",
            Cli::Droid => "@factory/cli",
        }
    }
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

/// Classifies a failed run from its exit code, the tail of its stderr and
/// the events of its stream. The texts are those the real CLIs print
/// (docs/dev/agent-clis.md).
pub fn classify_failure(
    cli: Cli,
    exit_code: Option<i32>,
    stderr: &str,
    events: &[AgentEvent],
) -> FailureKind {
    if exit_code == Some(127) {
        return FailureKind::NotInstalled;
    }
    let mut text = stderr.to_string();
    for e in events {
        if let AgentEvent::Error { message } | AgentEvent::Warning { message } = e {
            text.push('\n');
            text.push_str(message);
        }
    }
    let has = |needles: &[&str]| needles.iter().any(|n| text.contains(n));
    let stale = match cli {
        Cli::Claude => has(&["No conversation found with session ID"]),
        Cli::Codex => has(&["no rollout found for thread id"]),
        Cli::Gemini => {
            exit_code == Some(42)
                || has(&["Invalid session identifier", "No previous sessions found"])
        }
        Cli::Qwen => has(&["No saved session found"]),
        Cli::Opencode => has(&["Session not found"]),
        Cli::Copilot => has(&[
            "No session, task, or name matched",
            "No session or task matched",
        ]),
        // droid says nothing of an unknown session: `--fork ID` exits 1
        // with no output (its log has SessionNotFoundError), `-s ID` starts
        // an empty session under that id. baton checks that the transcript
        // is there before it continues one.
        Cli::Droid => false,
    };
    if stale {
        FailureKind::StaleSession
    } else if has(&[
        " 401",
        "401 ",
        "authentication_failed",
        "Unauthorized",
        "UNAUTHENTICATED",
        "invalid x-api-key",
        "invalid_api_key",
        "Authentication failed",
    ]) || (cli == Cli::Gemini && exit_code == Some(41))
    {
        FailureKind::Authentication
    } else if has(&[
        "429",
        "rate_limit",
        "Too Many Requests",
        "RESOURCE_EXHAUSTED",
    ]) {
        FailureKind::RateLimit
    } else {
        FailureKind::Other
    }
}

fn str_of<'a>(v: &'a Value, k: &str) -> &'a str {
    v.get(k).and_then(Value::as_str).unwrap_or("")
}

fn num(v: &Value) -> u64 {
    v.as_u64().unwrap_or(0)
}

/// The first of `keys` that holds something, as text.
fn first_of(v: &Value, keys: &[&str]) -> String {
    keys.iter()
        .map(|k| &v[*k])
        .find(|x| !x.is_null())
        .map(content_text)
        .unwrap_or_default()
}

/// Text of a content value: a string, an array of `{text}` blocks, or JSON.
fn content_text(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        Value::Array(items) => items
            .iter()
            .map(|i| match i {
                Value::String(s) => s.clone(),
                other => other
                    .get("text")
                    .and_then(Value::as_str)
                    .map(str::to_string)
                    .unwrap_or_else(|| other.to_string()),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        Value::Object(o) => o
            .get("message")
            .or_else(|| o.get("text"))
            .and_then(Value::as_str)
            .map(str::to_string)
            .unwrap_or_else(|| v.to_string()),
        other => other.to_string(),
    }
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
    fn a_malformed_line_is_a_warning_and_parsing_goes_on() {
        let mut p = StreamParser::new(Cli::Claude);
        let w = p.line("{not json");
        assert!(matches!(&w[..], [AgentEvent::Warning { message }] if message.contains("line 1")));
        let ok = p.line(r#"{"type":"system","subtype":"init","session_id":"s-1"}"#);
        assert_eq!(
            ok,
            vec![AgentEvent::SessionStarted {
                native_id: "s-1".into()
            }]
        );
        assert!(p.line("   ").is_empty());
        assert!(matches!(&p.line("[1,2]")[..], [AgentEvent::Warning { .. }]));
    }

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

    #[test]
    fn claude_denials_and_failures_are_errors_even_when_the_exit_code_is_0() {
        let mut p = StreamParser::new(Cli::Claude);
        let ev = p.line(
            r#"{"type":"result","subtype":"success","is_error":false,"result":"I could not","usage":{"input_tokens":5,"output_tokens":2},"total_cost_usd":0.01,"permission_denials":[{"tool_name":"Write","tool_input":{"file_path":"x.txt"}}]}"#,
        );
        assert!(ev.contains(&AgentEvent::Error {
            message: "permission denied: Write x.txt".into()
        }));
        let ev = p.line(
            r#"{"type":"result","subtype":"error_during_execution","is_error":true,"usage":{}}"#,
        );
        assert!(ev.contains(&AgentEvent::Final {
            ok: false,
            text: String::new()
        }));
    }
}
