//! GitHub Copilot CLI (`@github/copilot`): `copilot -p PROMPT
//! --output-format json`, a session id chosen by baton (`--session-id`,
//! which creates the session) and continued with `--resume=ID` from any
//! folder; its stream has no token counts, so they come from the file
//! `--usage-output-file` writes when the run ends. Sessions are kept in
//! `$COPILOT_HOME/session-state/<session-id>/events.jsonl` (default
//! `~/.copilot`): `{type, data, id, timestamp, parentId}` events,
//! `session.start` first. Offline it runs on a BYOK provider
//! (`COPILOT_PROVIDER_BASE_URL`, `COPILOT_OFFLINE=true`). Verified:
//! docs/dev/agent-clis.md.

use crate::json::{content_text, first_of, num, objects, set_once, str_of, text_of};
use crate::locate::{dir_from, one_of};
use crate::{
    AgentCli, AgentEvent, Env, Invocation, NativeTranscript, Options, Package, Permission,
    Recognition, Seen, SessionIds, words,
};
use baton_core::agent_stream::{SUMMARY_CHARS, shorten, summarize_args};
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Copy)]
pub struct Copilot;

impl AgentCli for Copilot {
    fn name(&self) -> &'static str {
        "copilot"
    }
    fn title(&self) -> &'static str {
        "GitHub Copilot CLI"
    }
    fn package(&self) -> Package {
        Package {
            name: "@github/copilot",
            version: "1.0.102",
        }
    }
    fn session_ids(&self) -> SessionIds {
        SessionIds::Chosen
    }
    fn argv(&self, o: &Options<'_>, how: Invocation<'_>) -> Vec<String> {
        let mut argv = words(&["copilot", "-p", "{{prompt}}", "--output-format", "json"]);
        // Read-only denies the write and shell tools (reading needs no
        // permission); edit allows file writes, which Copilot keeps inside
        // the working folder (and the temp folder); full allows every
        // tool, path and URL.
        argv.extend(words(permission_flags(o.permission)));
        if let Some(m) = o.model {
            argv.extend(words(&["--model", m]));
        }
        argv.extend(o.args.iter().cloned());
        argv.extend(session_flags(how));
        argv
    }
    fn tui_argv(&self, o: &Options<'_>, how: Invocation<'_>) -> Option<Vec<String>> {
        let mut argv = words(&["copilot"]);
        argv.extend(words(permission_flags(o.permission)));
        if let Some(m) = o.model {
            argv.extend(words(&["--model", m]));
        }
        argv.extend(o.args.iter().cloned());
        argv.extend(session_flags(how));
        // -i: the first message, sent at once, and the UI stays.
        argv.extend(words(&["-i", "{{prompt}}"]));
        Some(argv)
    }
    fn usage_file_args(&self, file: &Path) -> Option<Vec<String>> {
        Some(vec![
            "--usage-output-file".into(),
            file.display().to_string(),
        ])
    }
    fn usage_from_file(&self, text: &str) -> Option<AgentEvent> {
        usage(text)
    }
    fn unattended_env(&self) -> &'static [(&'static str, &'static str)] {
        // Never updated under a running session.
        &[("COPILOT_AUTO_UPDATE", "false")]
    }
    fn memory_file(&self) -> &'static str {
        "AGENTS.md"
    }
    fn mcp_wiring(
        &self,
        server: &crate::McpServer<'_>,
        _env: crate::Env<'_>,
    ) -> Option<crate::McpWiring> {
        let config = match server.http {
            Some(h) => serde_json::json!({"mcpServers": {"baton": {
                "type": "http",
                "url": h.url,
                "headers": h.headers(crate::dollar_braces),
                "tools": ["*"],
            }}}),
            None => server.mcp_servers_json(serde_json::json!({"type": "local", "tools": ["*"]})),
        };
        Some(crate::McpWiring {
            // Added to the user's servers; its tools allowed without asking.
            args: vec![
                format!("--additional-mcp-config={config}"),
                "--allow-tool=baton".into(),
            ],
            env: Vec::new(),
            files: Vec::new(),
            unseen: None,
        })
    }
    fn parse_line(&self, v: &Value, seen: &Seen<'_>) -> Vec<AgentEvent> {
        parse_line(v, seen)
    }
    fn stale_session(&self, _exit_code: Option<i32>, text: &str) -> bool {
        [
            "No session, task, or name matched",
            "No session or task matched",
        ]
        .iter()
        .any(|n| text.contains(n))
    }
    fn native_file(&self) -> &'static str {
        "a GitHub Copilot CLI session file ($COPILOT_HOME/session-state/<session-id>/events.jsonl, by default under ~/.copilot)"
    }
    fn recognizes(&self, o: &Map<String, Value>) -> Recognition {
        // Dotted event types (`session.start`, `user.message`) with their
        // `data`, chained by `parentId`.
        let ty = o.get("type").and_then(Value::as_str).unwrap_or("");
        if ty.contains('.')
            && o.get("data").is_some_and(Value::is_object)
            && o.contains_key("parentId")
        {
            Recognition::Sure
        } else {
            Recognition::No
        }
    }
    fn not_native_because(&self, json: bool) -> &'static str {
        if json {
            "line 1 is not a {type, data, parentId} event"
        } else {
            "line 1 is not JSON"
        }
    }
    fn parse_native(&self, text: &str, t: &mut NativeTranscript) -> Result<(), String> {
        parse_native(text, t);
        Ok(())
    }
    fn locate_native(&self, id: &str, env: Env<'_>) -> Result<PathBuf, String> {
        let states = dir_from(env, "COPILOT_HOME", ".copilot")?.join("session-state");
        let file = states.join(id).join("events.jsonl");
        let found = if file.is_file() { vec![file] } else { vec![] };
        one_of(
            self,
            id,
            &states,
            found,
            "<session-id>/events.jsonl",
            "the session id (`copilot --resume` lists them)",
        )
    }
}

/// GitHub Copilot CLI `--output-format json`: `{type, data, id,
/// timestamp, parentId}` events, many of them `ephemeral` (deltas,
/// model call bookkeeping) and skipped; the session id only on the last
/// line (`result`), which has no text and no tokens (those come from
/// `--usage-output-file`, see [`usage`]). A tool the run was not
/// allowed to use ends `success:false` with code `denied`, and the run
/// still exits 0: that is an error.
pub(crate) fn parse_line(v: &Value, seen: &Seen<'_>) -> Vec<AgentEvent> {
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
            if !ok && str_of(&d["error"], "code") == "denied" {
                let call = seen.call(&id).unwrap_or("a tool");
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
                text: seen.last_text.to_string(),
            });
        }
        _ => {}
    }
    out
}

/// The tokens of a Copilot run, from the file `--usage-output-file` names
/// (written when the run ends): `modelMetrics.<model>.usage`, summed over
/// the models. None when the text holds no usage.
pub(crate) fn usage(text: &str) -> Option<AgentEvent> {
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

/// GitHub Copilot CLI's `events.jsonl`: `session.start` (id, folder), the
/// user's messages, the assistant's (with its tool requests), each tool's
/// completion, a `session.usage_record` per model call; system prompts,
/// turn marks and accounting are skipped. Every run of the session appends
/// to the same file (`session.resume` marks the next one).
pub(crate) fn parse_native(text: &str, t: &mut NativeTranscript) {
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

fn permission_flags(p: Permission) -> &'static [&'static str] {
    match p {
        Permission::Edit => &["--allow-tool=write"],
        Permission::ReadOnly => &["--deny-tool=write", "--deny-tool=shell"],
        Permission::Full => &["--allow-all"],
    }
}

fn session_flags(how: Invocation<'_>) -> Vec<String> {
    match how {
        Invocation::New { session: Some(id) } => words(&["--session-id", id]),
        Invocation::New { session: None } => Vec::new(),
        // Its value is optional: joined, so nothing else is taken for it.
        Invocation::Resume { native_id, .. } => vec![format!("--resume={native_id}")],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(permission: Permission) -> (Vec<String>, Permission) {
        (vec!["--x".to_string()], permission)
    }

    #[test]
    fn a_chosen_id_starts_it_and_a_joined_resume_continues_it() {
        let (args, p) = options(Permission::Edit);
        let o = Options {
            model: Some("m"),
            args: &args,
            permission: p,
        };
        assert_eq!(
            Copilot
                .argv(&o, Invocation::New { session: Some("U") })
                .join(" "),
            "copilot -p {{prompt}} --output-format json --allow-tool=write --model m --x --session-id U"
        );
        let r = Invocation::Resume {
            native_id: "S",
            dir: Some("/w"),
        };
        assert!(
            Copilot
                .argv(&o, r)
                .join(" ")
                .ends_with("--model m --x --resume=S")
        );
    }

    #[test]
    fn permission_modes_map_to_its_tool_rules() {
        for (p, want) in [
            (Permission::Edit, "json --allow-tool=write"),
            (
                Permission::ReadOnly,
                "json --deny-tool=write --deny-tool=shell",
            ),
            (Permission::Full, "json --allow-all"),
        ] {
            let o = Options {
                model: None,
                args: &[],
                permission: p,
            };
            let argv = Copilot.argv(&o, Invocation::New { session: None });
            assert!(argv.join(" ").ends_with(want), "{p:?}: {argv:?}");
        }
    }

    #[test]
    fn its_tokens_come_from_the_usage_file() {
        let file = Path::new("/t/write.out.usage.json");
        assert_eq!(
            Copilot.usage_file_args(file).unwrap(),
            ["--usage-output-file", "/t/write.out.usage.json"]
        );
        assert_eq!(Copilot.usage_from_file("not json"), None);
        assert!(matches!(
            Copilot.usage_from_file(
                r#"{"modelMetrics":{"m":{"usage":{"inputTokens":3,"outputTokens":2}}}}"#
            ),
            Some(AgentEvent::Usage {
                input_tokens: 3,
                output_tokens: 2,
                ..
            })
        ));
    }
}
