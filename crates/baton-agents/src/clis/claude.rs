//! Claude Code (`@anthropic-ai/claude-code`): `claude -p PROMPT
//! --output-format stream-json --verbose`, a session id chosen by baton
//! (`--session-id`) and continued with `--resume`; sessions are kept per
//! folder in `$CLAUDE_CONFIG_DIR/projects/<cwd, / as ->/<session-id>.jsonl`
//! (default `~/.claude`). Verified: docs/dev/agent-clis.md.

use crate::json::{content_text, first_of, num, objects, set_once, str_of};
use crate::locate::{dir_from, file_name, in_subfolders, one_of};
use crate::{
    AgentCli, AgentEvent, Env, Invocation, NativeTranscript, Options, Package, Permission,
    Recognition, Seen, SessionIds, words,
};
use baton_core::agent_stream::{SUBAGENT_TOOLS, SUMMARY_CHARS, shorten, summarize_args};
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Copy)]
pub struct Claude;

impl AgentCli for Claude {
    fn name(&self) -> &'static str {
        "claude"
    }
    fn title(&self) -> &'static str {
        "Claude Code"
    }
    fn package(&self) -> Package {
        Package {
            name: "@anthropic-ai/claude-code",
            version: "2.1.330",
        }
    }
    fn session_ids(&self) -> SessionIds {
        SessionIds::Chosen
    }
    fn argv(&self, o: &Options<'_>, how: Invocation<'_>) -> Vec<String> {
        let mut argv = words(&[
            "claude",
            "-p",
            "{{prompt}}",
            "--output-format",
            "stream-json",
            "--verbose",
            "--permission-mode",
            permission_mode(o.permission),
        ]);
        if let Some(m) = o.model {
            argv.extend(words(&["--model", m]));
        }
        argv.extend(o.args.iter().cloned());
        argv.extend(session_flags(how));
        argv
    }
    fn tui_argv(&self, o: &Options<'_>, how: Invocation<'_>) -> Option<Vec<String>> {
        // The first message is its last argument, after options that take
        // one value each (not a list, which would swallow it).
        let mut argv = words(&["claude"]);
        if let Some(m) = o.model {
            argv.extend(words(&["--model", m]));
        }
        argv.extend(o.args.iter().cloned());
        argv.extend(session_flags(how));
        argv.extend(words(&["--permission-mode", permission_mode(o.permission)]));
        argv.push("{{prompt}}".into());
        Some(argv)
    }
    fn resumes_from(&self, ran_in: &str, cwd: &Path) -> bool {
        Path::new(ran_in) == cwd
    }
    fn unattended_env(&self) -> &'static [(&'static str, &'static str)] {
        // Never updated under a running session.
        &[("DISABLE_AUTOUPDATER", "1")]
    }
    fn memory_file(&self) -> &'static str {
        "CLAUDE.md"
    }
    fn mcp_wiring(
        &self,
        server: &crate::McpServer<'_>,
        _env: crate::Env<'_>,
    ) -> Option<crate::McpWiring> {
        // Only baton's server (--strict-mcp-config), its tools allowed
        // without asking (a headless run cannot be asked). Over HTTP, the
        // capability comes from the environment (Claude Code expands
        // `${VAR}` in an MCP configuration), never from the argument.
        let config = match server.http {
            Some(h) => serde_json::json!({"mcpServers": {"baton": {
                "type": "http",
                "url": h.url,
                "headers": h.headers(crate::dollar_braces),
            }}}),
            None => server.mcp_servers_json(serde_json::json!({"type": "stdio"})),
        };
        Some(crate::McpWiring {
            args: vec![
                "--mcp-config".into(),
                config.to_string(),
                "--strict-mcp-config".into(),
                "--allowedTools".into(),
                "mcp__baton".into(),
            ],
            env: Vec::new(),
            files: Vec::new(),
            unseen: None,
        })
    }
    fn parse_line(&self, v: &Value, seen: &Seen<'_>) -> Vec<AgentEvent> {
        parse_line(v, seen.last_text)
    }
    fn stale_session(&self, _exit_code: Option<i32>, text: &str) -> bool {
        text.contains("No conversation found with session ID")
    }
    fn native_file(&self) -> &'static str {
        "a Claude Code session file ($CLAUDE_CONFIG_DIR/projects/<project>/<session-id>.jsonl, by default under ~/.claude)"
    }
    fn recognizes(&self, o: &Map<String, Value>) -> Recognition {
        let has = |k: &str| o.get(k).is_some_and(|v| !v.is_null());
        let ty = o.get("type").and_then(Value::as_str).unwrap_or("");
        // Many CLIs write a sessionId: only taken when none is sure.
        if has("sessionId") || (ty == "summary" && has("leafUuid")) {
            Recognition::Loose
        } else {
            Recognition::No
        }
    }
    fn parse_native(&self, text: &str, t: &mut NativeTranscript) -> Result<(), String> {
        parse_native(text, t);
        Ok(())
    }
    fn locate_native(&self, id: &str, env: Env<'_>) -> Result<PathBuf, String> {
        let projects = dir_from(env, "CLAUDE_CONFIG_DIR", ".claude")?.join("projects");
        let name = format!("{id}.jsonl");
        let found = in_subfolders(&projects, &[], &|f| file_name(f) == name);
        one_of(
            self,
            id,
            &projects,
            found,
            "every project's <session-id>.jsonl",
            "the session id `claude --resume` shows",
        )
    }
}

fn permission_mode(p: Permission) -> &'static str {
    match p {
        Permission::Edit => "acceptEdits",
        Permission::ReadOnly => "plan",
        Permission::Full => "bypassPermissions",
    }
}

/// `--session-id ID` for a new session whose id baton chose, `--resume
/// ID` to continue one (Claude Code, Gemini CLI, Qwen Code).
pub(crate) fn session_flags(how: Invocation<'_>) -> Vec<String> {
    match how {
        Invocation::New { session: Some(id) } => words(&["--session-id", id]),
        Invocation::New { session: None } => Vec::new(),
        Invocation::Resume { native_id, .. } => words(&["--resume", native_id]),
    }
}

/// Claude Code `stream-json` (Qwen Code writes the same shape).
pub(crate) fn parse_line(v: &Value, last_text: &str) -> Vec<AgentEvent> {
    // A subagent's messages (the Agent tool's) name the call that started it.
    if let Some(parent) = v["parent_tool_use_id"].as_str()
        && matches!(str_of(v, "type"), "assistant" | "user")
    {
        let model = v["message"]["model"].as_str().map(str::to_string);
        let mut own = v.clone();
        own["parent_tool_use_id"] = Value::Null;
        return parse_line(&own, last_text)
            .into_iter()
            .map(|e| AgentEvent::Subagent {
                parent: parent.to_string(),
                model: model.clone(),
                event: Box::new(e),
            })
            .collect();
    }
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
                        summary: if SUBAGENT_TOOLS.contains(&str_of(c, "name")) {
                            // `general-purpose: look around`: which subagent, and what for.
                            shorten(
                                &format!(
                                    "{}: {}",
                                    str_of(&c["input"], "subagent_type"),
                                    str_of(&c["input"], "description")
                                ),
                                SUMMARY_CHARS,
                            )
                        } else {
                            summarize_args(&c["input"])
                        },
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
                    .unwrap_or_else(|| last_text.to_string()),
            });
        }
        _ => {}
    }
    out
}

/// Claude Code: `user` lines (prompts, tool results), `assistant` lines (one
/// per content block, each repeating the message's usage); the rest is
/// housekeeping. Side chains (sub-agents) and meta messages are left out.
pub(crate) fn parse_native(text: &str, t: &mut NativeTranscript) {
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
                Value::Array(blocks) => t.anthropic_user(blocks, true),
                _ => t.warnings += 1,
            },
            "assistant" => {
                t.anthropic_assistant(msg["content"].as_array().map_or(&[], Vec::as_slice));
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::StreamParser;

    #[test]
    fn claude_denials_and_failures_are_errors_even_when_the_exit_code_is_0() {
        let mut p = StreamParser::new(&Claude);
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

    #[test]
    fn a_resume_and_a_chosen_id_go_last() {
        let args = vec!["--x".to_string()];
        let o = Options {
            model: Some("m"),
            args: &args,
            permission: Permission::Edit,
        };
        let r = Invocation::Resume {
            native_id: "S",
            dir: Some("/w"),
        };
        assert!(Claude.argv(&o, r).ends_with(&[
            "--model".into(),
            "m".into(),
            "--x".into(),
            "--resume".into(),
            "S".into()
        ]));
        let n = Claude.argv(&o, Invocation::New { session: Some("U") });
        assert!(n.join(" ").ends_with("--session-id U"));
        assert!(n.contains(&"acceptEdits".to_string()));
    }

    #[test]
    fn a_subagents_messages_are_tied_to_the_call_that_started_it() {
        let call = serde_json::json!({"type": "assistant", "parent_tool_use_id": null, "message": {"content": [
            {"type": "tool_use", "id": "t1", "name": "Agent", "input": {"subagent_type": "general-purpose", "description": "look around", "prompt": "p"}}
        ]}});
        assert_eq!(
            parse_line(&call, ""),
            [AgentEvent::ToolCall {
                id: "t1".into(),
                name: "Agent".into(),
                summary: "general-purpose: look around".into()
            }]
        );
        let sub = serde_json::json!({"type": "assistant", "parent_tool_use_id": "t1", "message": {"model": "claude-haiku", "content": [
            {"type": "text", "text": "found it"}
        ]}});
        assert_eq!(
            parse_line(&sub, ""),
            [AgentEvent::Subagent {
                parent: "t1".into(),
                model: Some("claude-haiku".into()),
                event: Box::new(AgentEvent::AssistantText {
                    text: "found it".into()
                })
            }]
        );
    }
}
