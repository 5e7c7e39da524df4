//! Qwen Code (`@qwen-code/qwen-code`): `qwen -o stream-json PROMPT` (the
//! stream in Claude Code's shape), a session id chosen by baton
//! (`--session-id`) and continued with `--resume`; sessions kept per
//! folder in `$QWEN_RUNTIME_DIR` or `$QWEN_HOME` (default `~/.qwen`)
//! `/projects/<cwd, / as ->/chats/<session-id>.jsonl`. Verified:
//! docs/dev/agent-clis.md.

use super::claude::session_flags;
use crate::json::{num, objects, set_once, str_of, text_of};
use crate::locate::{file_name, in_subfolders, one_of, under_home};
use crate::{
    AgentCli, AgentEvent, Env, Invocation, NativeTranscript, Options, Package, Permission,
    Recognition, Seen, SessionIds, words,
};
use baton_core::agent_stream::{SUMMARY_CHARS, shorten, summarize_args};
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Copy)]
pub struct Qwen;

impl AgentCli for Qwen {
    fn name(&self) -> &'static str {
        "qwen"
    }
    fn title(&self) -> &'static str {
        "Qwen Code"
    }
    fn package(&self) -> Package {
        Package {
            name: "@qwen-code/qwen-code",
            version: "0.15.10",
        }
    }
    fn session_ids(&self) -> SessionIds {
        SessionIds::Chosen
    }
    fn argv(&self, o: &Options<'_>, how: Invocation<'_>) -> Vec<String> {
        let mut argv = words(&["qwen", "-o", "stream-json"]);
        argv.extend(words(approval(o.permission)));
        if let Some(m) = o.model {
            argv.extend(words(&["-m", m]));
        }
        argv.extend(o.args.iter().cloned());
        argv.extend(session_flags(how));
        argv.push("{{prompt}}".into());
        argv
    }
    fn tui_argv(&self, o: &Options<'_>, how: Invocation<'_>) -> Option<Vec<String>> {
        let mut argv = words(&["qwen"]);
        argv.extend(words(approval(o.permission)));
        if let Some(m) = o.model {
            argv.extend(words(&["-m", m]));
        }
        argv.extend(o.args.iter().cloned());
        argv.extend(session_flags(how));
        // -i: the first message, sent at once, and the UI stays.
        argv.extend(words(&["-i", "{{prompt}}"]));
        Some(argv)
    }
    fn resumes_from(&self, ran_in: &str, cwd: &Path) -> bool {
        Path::new(ran_in) == cwd
    }
    fn memory_file(&self) -> &'static str {
        "QWEN.md"
    }
    fn mcp_wiring(
        &self,
        server: &crate::McpServer<'_>,
        _env: crate::Env<'_>,
    ) -> Option<crate::McpWiring> {
        Some(crate::settings_file_wiring(
            server,
            "QWEN_CODE_SYSTEM_SETTINGS_PATH",
            Value::Null,
        ))
    }
    fn parse_line(&self, v: &Value, seen: &Seen<'_>) -> Vec<AgentEvent> {
        // Qwen Code writes Claude Code's stream-json.
        super::claude::parse_line(v, seen.last_text)
    }
    fn stale_session(&self, _exit_code: Option<i32>, text: &str) -> bool {
        text.contains("No saved session found")
    }
    fn native_file(&self) -> &'static str {
        "a Qwen Code session file (~/.qwen/projects/<project>/chats/<session-id>.jsonl)"
    }
    fn recognizes(&self, o: &Map<String, Value>) -> Recognition {
        let has = |k: &str| o.get(k).is_some_and(|v| !v.is_null());
        let message = o.get("message");
        if has("sessionId")
            && (message.is_some_and(|m| m.get("parts").is_some())
                || has("systemPayload")
                || has("toolCallResult"))
        {
            Recognition::Sure
        } else {
            Recognition::No
        }
    }
    fn parse_native(&self, text: &str, t: &mut NativeTranscript) -> Result<(), String> {
        parse_native(text, t);
        Ok(())
    }
    fn locate_native(&self, id: &str, env: Env<'_>) -> Result<PathBuf, String> {
        let var = |k: &str| env(k).filter(|v| !v.is_empty()).map(PathBuf::from);
        let root = match var("QWEN_RUNTIME_DIR").or_else(|| var("QWEN_HOME")) {
            Some(d) => d,
            None => under_home(env, ".qwen")?,
        };
        let projects = root.join("projects");
        let name = format!("{id}.jsonl");
        let found = in_subfolders(&projects, &["*", "chats"], &|f| file_name(f) == name);
        one_of(
            self,
            id,
            &projects,
            found,
            "<project>/chats/<session-id>.jsonl",
            "the session id (`qwen --resume` lists them)",
        )
    }
}

/// Qwen Code: `user` / `assistant` / `tool_result` lines holding Gemini-style
/// `parts`, and `system` lines (telemetry, snapshots) that are skipped.
pub(crate) fn parse_native(text: &str, t: &mut NativeTranscript) {
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

/// Its approval flags for baton's permission mode.
fn approval(p: Permission) -> &'static [&'static str] {
    match p {
        Permission::Edit => &["--approval-mode", "auto-edit"],
        Permission::ReadOnly => &["--approval-mode", "plan"],
        Permission::Full => &["--yolo"],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chosen_id_and_the_prompt_go_last() {
        let args = Vec::new();
        let o = Options {
            model: None,
            args: &args,
            permission: Permission::Full,
        };
        let n = Qwen.argv(&o, Invocation::New { session: Some("U") });
        assert!(n.join(" ").ends_with("--yolo --session-id U {{prompt}}"));
    }
}
