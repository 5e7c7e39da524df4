//! Factory droid (`@factory/cli`, with its platform package named
//! explicitly): `droid exec -o stream-json --auto LEVEL PROMPT`, JSON
//! Lines in Claude Code's shape flattened, the session id on every line
//! (read from the stream). Offline (a BYOK custom model and
//! `FACTORY_AIRGAP_ENABLED=true`) `-s ID` cannot load a session, so a
//! session is continued with `--fork ID`: the conversation goes on under a
//! new id, which baton journals as a resume. droid starts an empty session
//! (or fails without a word) for an id it does not have, so baton checks
//! the transcript is there first. Sessions are kept in
//! `$FACTORY_HOME_OVERRIDE/.factory` (default `~/.factory`)
//! `/sessions/<cwd, / as ->/<session-id>.jsonl`. baton's MCP server goes
//! into the working folder's `.factory/mcp.json` for a run (droid reads
//! MCP servers from nowhere else it could be given). Verified:
//! docs/dev/agent-clis.md.

use crate::json::{first_of, num, objects, set_once, str_of};
use crate::locate::{file_name, in_subfolders, one_of};
use crate::{
    AgentCli, AgentEvent, Env, Invocation, McpServer, McpWiring, NativeTranscript, Options,
    Package, Permission, Recognition, Seen, SessionIds, folder_mcp, words,
};
use baton_core::agent_stream::{SUMMARY_CHARS, shorten, summarize_args};
use serde_json::{Map, Value};
use std::path::PathBuf;

#[derive(Debug, Clone, Copy)]
pub struct Droid;

impl AgentCli for Droid {
    fn name(&self) -> &'static str {
        "droid"
    }
    fn title(&self) -> &'static str {
        "Factory droid"
    }
    fn package(&self) -> Package {
        Package {
            name: "@factory/cli",
            version: "0.225.1",
        }
    }
    fn session_ids(&self) -> SessionIds {
        SessionIds::FromStream
    }
    fn argv(&self, o: &Options<'_>, how: Invocation<'_>) -> Vec<String> {
        let mut argv = words(&["droid", "exec", "-o", "stream-json"]);
        argv.extend(words(autonomy(o.permission)));
        if let Some(m) = o.model {
            argv.extend(words(&["-m", m]));
        }
        argv.extend(o.args.iter().cloned());
        if let Invocation::Resume { native_id, .. } = how {
            argv.extend(words(&["--fork", native_id]));
        }
        argv.push("{{prompt}}".into());
        argv
    }
    fn tui_argv(&self, o: &Options<'_>, how: Invocation<'_>) -> Option<Vec<String>> {
        let mut argv = words(&["droid"]);
        argv.extend(words(autonomy(o.permission)));
        // Its UI takes no -m: the model is the session's default in a
        // runtime settings file.
        if o.model.is_some() {
            argv.extend(words(&["--settings", "{{state_dir}}/droid-settings.json"]));
        }
        argv.extend(o.args.iter().cloned());
        if let Invocation::Resume { native_id, .. } = how {
            argv.extend(words(&["--fork", native_id]));
        }
        // The first message, sent at once.
        argv.push("{{prompt}}".into());
        Some(argv)
    }
    fn tui_files(&self, o: &Options<'_>) -> Vec<(&'static str, String)> {
        // The session defaults there replace `--auto`'s level, so the
        // level is said again.
        let level = match o.permission {
            Permission::Edit => "low",
            Permission::ReadOnly => "off",
            Permission::Full => "high",
        };
        o.model
            .map(|m| {
                let defaults = serde_json::json!({"model": m, "autonomyLevel": level});
                let settings = serde_json::json!({ "sessionDefaultSettings": defaults });
                ("droid-settings.json", settings.to_string())
            })
            .into_iter()
            .collect()
    }
    fn resume_keeps_id(&self) -> bool {
        false
    }
    fn missing_session(&self, native_id: &str, cwd: &str, env: Env<'_>) -> Option<String> {
        let file = sessions(env)?
            .join(cwd.replace('/', "-"))
            .join(format!("{native_id}.jsonl"));
        (!file.is_file()).then(|| {
            format!(
                "its transcript {} is gone, and droid would start an empty session in its place",
                file.display()
            )
        })
    }
    fn unattended_env(&self) -> &'static [(&'static str, &'static str)] {
        // Never updated under a running session.
        &[("FACTORY_DROID_AUTO_UPDATE_ENABLED", "false")]
    }
    fn memory_file(&self) -> &'static str {
        "AGENTS.md"
    }
    fn mcp_wiring(&self, server: &McpServer<'_>, _env: Env<'_>) -> Option<McpWiring> {
        // Only a servers file in its working folder (or the user's own
        // ~/.factory/mcp.json) tells droid about a server; baton adds its
        // own to the folder's for the run (see `folder_mcp`).
        let rel = crate::run_files::FOLDER_MCP_FILES[0];
        let path = server.cwd.join(rel);
        let existing = match std::fs::read_to_string(&path) {
            Ok(t) => Some(t),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => {
                return Some(McpWiring {
                    unseen: Some(unseen(&path, &e.to_string())),
                    ..Default::default()
                });
            }
        };
        let folder_exists = path.parent().is_some_and(std::path::Path::is_dir);
        let entry = match server.http {
            Some(h) => serde_json::json!({
                "type": "http",
                "url": h.url,
                "headers": h.headers(crate::dollar_braces),
                "disabled": false,
            }),
            None => serde_json::json!({
                "type": "stdio",
                "command": server.command,
                "args": server.args,
                "env": server.json_env(),
                "disabled": false,
            }),
        };
        Some(
            match folder_mcp::with_baton_server(existing.as_deref(), folder_exists, entry) {
                Ok(text) => McpWiring {
                    files: vec![(path, text)],
                    ..Default::default()
                },
                Err(why) => McpWiring {
                    unseen: Some(unseen(&path, &why)),
                    ..Default::default()
                },
            },
        )
    }
    fn parse_line(&self, v: &Value, seen: &Seen<'_>) -> Vec<AgentEvent> {
        parse_line(v, seen.last_text)
    }
    fn stale_session(&self, _exit_code: Option<i32>, _text: &str) -> bool {
        // droid says nothing of an unknown session: `--fork ID` exits 1
        // with no output (its log has SessionNotFoundError), `-s ID` starts
        // an empty session under that id. `missing_session` is asked first.
        false
    }
    fn native_file(&self) -> &'static str {
        "a Factory droid session file (~/.factory/sessions/<project>/<session-id>.jsonl)"
    }
    fn recognizes(&self, o: &Map<String, Value>) -> Recognition {
        // `session_start` (no sessionId: its `id` is the session's), then
        // `message` records holding an Anthropic-style `message`.
        let ty = o.get("type").and_then(Value::as_str).unwrap_or("");
        let has = |k: &str| o.get(k).is_some_and(|v| !v.is_null());
        if (ty == "session_start" && has("id") && has("cwd"))
            || (ty == "message" && o.get("message").is_some_and(|m| m.get("role").is_some()))
            || ty == "agent_turn_outcome"
        {
            Recognition::Sure
        } else {
            Recognition::No
        }
    }
    fn not_native_because(&self, json: bool) -> &'static str {
        if json {
            "line 1 is not a session_start or message record"
        } else {
            "line 1 is not JSON"
        }
    }
    fn parse_native(&self, text: &str, t: &mut NativeTranscript) -> Result<(), String> {
        parse_native(text, t);
        Ok(())
    }
    fn locate_native(&self, id: &str, env: Env<'_>) -> Result<PathBuf, String> {
        let sessions = sessions(env).ok_or_else(|| {
            "HOME is not set, so the session folder is unknown; pass the session file instead"
                .to_string()
        })?;
        let name = format!("{id}.jsonl");
        let found = in_subfolders(&sessions, &["*"], &|f| file_name(f) == name);
        one_of(
            self,
            id,
            &sessions,
            found,
            "<project>/<session-id>.jsonl",
            "the session id (the `session_id` of `droid exec -o stream-json`)",
        )
    }
}

/// droid's autonomy level for a permission mode. Without `--auto` it
/// withholds its file tools but runs any command the model itself rates
/// low risk.
fn autonomy(p: Permission) -> &'static [&'static str] {
    match p {
        Permission::Edit => &["--auto", "low"],
        Permission::ReadOnly => &[],
        Permission::Full => &["--skip-permissions-unsafe"],
    }
}

/// Why droid is not told about baton's server: its servers file `path`
/// cannot be added to (`why`), and is left as it is.
fn unseen(path: &std::path::Path, why: &str) -> String {
    format!(
        "droid is not told about baton mcp in this run: {} cannot be added to ({why}); it is left as it is (fix it to give the agent baton's tools; it can still run `baton agent …` commands)",
        path.display()
    )
}

/// droid's sessions folder: `$FACTORY_HOME_OVERRIDE/.factory/sessions`,
/// else `$HOME/.factory/sessions`.
fn sessions(env: Env<'_>) -> Option<PathBuf> {
    let var = |k: &str| env(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    Some(
        var("FACTORY_HOME_OVERRIDE")
            .or_else(|| var("HOME"))?
            .join(".factory")
            .join("sessions"),
    )
}

/// Factory droid `exec -o stream-json`: Claude's shape flattened, the
/// session id on every line (`system/init` first). A tool the autonomy
/// level does not allow comes back as an error result ("not permitted
/// in this exec session", or "insufficient permission", which also
/// ends the run): that is an error.
pub(crate) fn parse_line(v: &Value, last_text: &str) -> Vec<AgentEvent> {
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
                    .unwrap_or_else(|| last_text.to_string()),
            });
        }
        "error" => out.push(AgentEvent::Error {
            message: first_of(v, &["message"]),
        }),
        _ => {}
    }
    out
}

/// Factory droid's session file: `session_start` (id, folder), then
/// `message` records in Anthropic's shape (text, `tool_use`, `tool_result`
/// blocks). The context droid gathers itself (a user message with the id
/// `context-…`, seen by the model only) is not the user's.
pub(crate) fn parse_native(text: &str, t: &mut NativeTranscript) {
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
                let blocks = msg["content"].as_array().map_or(&[][..], Vec::as_slice);
                match str_of(msg, "role") {
                    "user" => t.anthropic_user(blocks, !injected),
                    "assistant" => t.anthropic_assistant(blocks),
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
    fn a_session_is_continued_by_forking_it() {
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
        assert!(
            Droid
                .argv(&o, r)
                .join(" ")
                .ends_with("-m m --x --fork S {{prompt}}")
        );
        let n = Invocation::New { session: Some("U") };
        assert!(!Droid.argv(&o, n).contains(&"U".to_string()));
        assert!(!Droid.resume_keeps_id());
    }

    #[test]
    fn permission_modes_map_to_its_autonomy_levels() {
        for (p, want) in [
            (
                Permission::Edit,
                "exec -o stream-json --auto low {{prompt}}",
            ),
            (Permission::ReadOnly, "exec -o stream-json {{prompt}}"),
            (
                Permission::Full,
                "exec -o stream-json --skip-permissions-unsafe {{prompt}}",
            ),
        ] {
            let o = Options {
                model: None,
                args: &[],
                permission: p,
            };
            let argv = Droid.argv(&o, Invocation::New { session: None });
            assert_eq!(argv[1..].join(" "), want, "{p:?}");
        }
    }

    #[test]
    fn a_missing_transcript_is_said_before_droid_is_asked() {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().display().to_string();
        let env = |k: &str| (k == "HOME").then(|| home.clone());
        let dir = tmp.path().join(".factory/sessions/-w-repo.d");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("S.jsonl"), "{}").unwrap();
        assert_eq!(Droid.missing_session("S", "/w/repo.d", &env), None);
        let why = Droid.missing_session("T", "/w/repo.d", &env).unwrap();
        assert!(
            why.contains("-w-repo.d/T.jsonl") && why.contains("is gone"),
            "{why}"
        );
        // FACTORY_HOME_OVERRIDE moves the .factory folder.
        let over = tmp.path().join("over").display().to_string();
        let env = |k: &str| match k {
            "HOME" => Some(home.clone()),
            "FACTORY_HOME_OVERRIDE" => Some(over.clone()),
            _ => None,
        };
        assert!(Droid.missing_session("S", "/w/repo.d", &env).is_some());
        assert_eq!(Droid.missing_session("S", "/w", &|_| None), None);
    }
}
