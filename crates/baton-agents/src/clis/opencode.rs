//! OpenCode (`opencode-ai`): `opencode run --format json PROMPT`, the
//! session id read from the stream (every event carries `sessionID`) and
//! continued with `--session ID` (plus `--dir` from another folder); the
//! permission mode goes in `OPENCODE_PERMISSION`. Sessions are kept in
//! SQLite (`$XDG_DATA_HOME/opencode/opencode.db`), so a transcript is what
//! `opencode export <sessionID>` prints (`{info, messages: [{info,
//! parts}]}`). Verified: docs/dev/agent-clis.md.

use crate::json::{first_of, num, set_once, str_of, text_of};
use crate::locate::{dir_from, plain_id};
use crate::{
    AgentCli, AgentEvent, Env, Invocation, NativeTranscript, Options, Package, Permission,
    Recognition, Seen, SessionIds, words,
};
use baton_core::agent_stream::{SUMMARY_CHARS, shorten, summarize_args};
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Copy)]
pub struct Opencode;

impl AgentCli for Opencode {
    fn name(&self) -> &'static str {
        "opencode"
    }
    fn title(&self) -> &'static str {
        "OpenCode"
    }
    fn package(&self) -> Package {
        Package {
            name: "opencode-ai",
            version: "1.18.33",
        }
    }
    fn session_ids(&self) -> SessionIds {
        SessionIds::FromStream
    }
    fn argv(&self, o: &Options<'_>, how: Invocation<'_>) -> Vec<String> {
        let mut argv = words(&["opencode", "run", "--format", "json"]);
        if let Some(m) = o.model {
            argv.extend(words(&["-m", m]));
        }
        argv.extend(o.args.iter().cloned());
        if let Invocation::Resume { native_id, dir } = how {
            argv.extend(words(&["--session", native_id]));
            // Resumed from another folder it hangs unless told where the
            // session ran.
            if let Some(d) = dir {
                argv.extend(words(&["--dir", d]));
            }
        }
        argv.push("{{prompt}}".into());
        argv
    }
    fn tui_argv(&self, o: &Options<'_>, how: Invocation<'_>) -> Option<Vec<String>> {
        // --prompt: the first message, sent at once.
        let mut argv = words(&["opencode"]);
        if let Some(m) = o.model {
            argv.extend(words(&["-m", m]));
        }
        argv.extend(o.args.iter().cloned());
        if let Invocation::Resume { native_id, .. } = how {
            argv.extend(words(&["--session", native_id]));
        }
        argv.extend(words(&["--prompt", "{{prompt}}"]));
        Some(argv)
    }
    fn env(&self, o: &Options<'_>) -> Vec<(String, String)> {
        let p = match o.permission {
            Permission::Edit => r#"{"edit":"allow","external_directory":"deny"}"#,
            Permission::ReadOnly => r#"{"edit":"deny","bash":"deny"}"#,
            Permission::Full => r#"{"edit":"allow","bash":"allow","external_directory":"allow"}"#,
        };
        vec![("OPENCODE_PERMISSION".into(), p.into())]
    }
    fn unattended_env(&self) -> &'static [(&'static str, &'static str)] {
        // Never updated under a running session.
        &[("OPENCODE_DISABLE_AUTOUPDATE", "1")]
    }
    fn memory_file(&self) -> &'static str {
        "AGENTS.md"
    }
    fn mcp_wiring(
        &self,
        server: &crate::McpServer<'_>,
        env: crate::Env<'_>,
    ) -> Option<crate::McpWiring> {
        let mut command = vec![server.command.to_string()];
        command.extend(server.args.iter().cloned());
        // Added to the configuration the run has already (the user's own
        // OPENCODE_CONFIG_CONTENT: providers, models), never replacing it.
        let mut config: Map<String, Value> = env("OPENCODE_CONFIG_CONTENT")
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_default();
        let mcp = config
            .entry("mcp")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(m) = mcp {
            let entry = match server.http {
                // A remote server; OpenCode expands `{env:VAR}`.
                Some(h) => serde_json::json!({
                    "type": "remote",
                    "url": h.url,
                    "headers": h.headers(|v| format!("{{env:{v}}}")),
                    "enabled": true,
                }),
                None => serde_json::json!({
                    "type": "local",
                    "command": command,
                    "enabled": true,
                    "environment": server.json_env(),
                }),
            };
            m.insert("baton".into(), entry);
        }
        Some(crate::McpWiring {
            args: Vec::new(),
            env: vec![(
                "OPENCODE_CONFIG_CONTENT".into(),
                Value::Object(config).to_string(),
            )],
            files: Vec::new(),
            unseen: None,
        })
    }
    fn parse_line(&self, v: &Value, seen: &Seen<'_>) -> Vec<AgentEvent> {
        parse_line(v, seen.last_text)
    }
    fn stale_session(&self, _exit_code: Option<i32>, text: &str) -> bool {
        text.contains("Session not found")
    }
    fn native_file(&self) -> &'static str {
        "an OpenCode session export (the JSON `opencode export <sessionID>` prints)"
    }
    fn recognizes(&self, o: &Map<String, Value>) -> Recognition {
        let export = o
            .get("info")
            .and_then(Value::as_object)
            .is_some_and(|i| i.get("id").and_then(Value::as_str).is_some())
            && o.get("messages").is_some_and(Value::is_array);
        if export {
            Recognition::Sure
        } else {
            Recognition::No
        }
    }
    fn not_native_because(&self, json: bool) -> &'static str {
        if json {
            "it has no info.id and messages"
        } else {
            "it is not JSON (or it was cut off)"
        }
    }
    fn export_command(&self, id: &str) -> Option<Vec<String>> {
        let id = id.trim();
        (!Path::new(id).exists() && plain_id(id)).then(|| words(&["opencode", "export", id]))
    }
    fn parse_native(&self, text: &str, t: &mut NativeTranscript) -> Result<(), String> {
        parse_native(text, t)
    }
    fn locate_native(&self, id: &str, env: Env<'_>) -> Result<PathBuf, String> {
        let db = dir_from(env, "XDG_DATA_HOME", ".local/share")?
            .join("opencode")
            .join("opencode.db");
        Err(format!(
            "OpenCode keeps its sessions in a database ({}{}), not one file per session: \
             run `opencode export {id}` and import what it prints, or pass a file holding that export",
            db.display(),
            if db.is_file() { "" } else { ", not found" }
        ))
    }
}

/// OpenCode `run --format json`: every event carries `sessionID`.
pub(crate) fn parse_line(v: &Value, last_text: &str) -> Vec<AgentEvent> {
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
                    text: last_text.to_string(),
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

/// OpenCode's `opencode export` JSON: `info` (id, directory) and messages
/// with their parts (text, tool with its state, step-finish with tokens).
pub(crate) fn parse_native(text: &str, t: &mut NativeTranscript) -> Result<(), String> {
    let v: Value = serde_json::from_str(crate::native::document(text)).map_err(|e| {
        format!(
            "this is not {}: it is not complete JSON ({e})",
            Opencode.native_file()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_resume_from_another_folder_names_the_folder() {
        let args = Vec::new();
        let o = Options {
            model: None,
            args: &args,
            permission: Permission::Edit,
        };
        let r = Invocation::Resume {
            native_id: "S",
            dir: Some("/w"),
        };
        assert!(
            Opencode
                .argv(&o, r)
                .join(" ")
                .ends_with("--session S --dir /w {{prompt}}")
        );
    }
}
