//! Gemini CLI (`@google/gemini-cli`): `gemini -p PROMPT -o stream-json`, a
//! session id chosen by baton (`--session-id`) and continued with
//! `--resume`; sessions kept per folder in
//! `~/.gemini/tmp/<project>/chats/session-<time>-<id8>.jsonl`: a header
//! line (`sessionId`, `projectHash` = sha256 of the folder), then message
//! records and `{"$set": …}` updates (a record may be written again with
//! the same `id`, updated). The older single-JSON `session-*.json` is read
//! too. Verified: docs/dev/agent-clis.md.

use super::claude::session_flags;
use crate::json::{content_text, first_of, num, objects, set_once, str_of, text_of};
use crate::locate::{file_name, in_subfolders, one_of, under_home};
use crate::{
    AgentCli, AgentEvent, Env, Invocation, NativeTranscript, Options, Package, Permission,
    Recognition, Seen, SessionIds, words,
};
use baton_core::agent_stream::{SUMMARY_CHARS, shorten, summarize_args};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Copy)]
pub struct Gemini;

impl AgentCli for Gemini {
    fn name(&self) -> &'static str {
        "gemini"
    }
    fn title(&self) -> &'static str {
        "Gemini CLI"
    }
    fn package(&self) -> Package {
        Package {
            name: "@google/gemini-cli",
            version: "0.61.0",
        }
    }
    fn session_ids(&self) -> SessionIds {
        SessionIds::Chosen
    }
    fn argv(&self, o: &Options<'_>, how: Invocation<'_>) -> Vec<String> {
        let mut argv = words(&["gemini", "-p", "{{prompt}}", "-o", "stream-json"]);
        argv.extend(words(approval(o.permission)));
        argv.push("--skip-trust".into());
        if let Some(m) = o.model {
            argv.extend(words(&["-m", m]));
        }
        argv.extend(o.args.iter().cloned());
        argv.extend(session_flags(how));
        argv
    }
    fn tui_argv(&self, o: &Options<'_>, how: Invocation<'_>) -> Option<Vec<String>> {
        let mut argv = words(&["gemini"]);
        argv.extend(words(approval(o.permission)));
        argv.push("--skip-trust".into());
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
        "GEMINI.md"
    }
    fn mcp_wiring(
        &self,
        server: &crate::McpServer<'_>,
        _env: crate::Env<'_>,
    ) -> Option<crate::McpWiring> {
        // Gemini CLI expands a header's `${VAR}` only from variables it
        // does not redact, and it redacts every name holding TOKEN: the
        // capability's own variable is let through, nothing else.
        let allow = server.http.map(|h| {
            serde_json::json!({"security": {"environmentVariableRedaction": {"allowed": [h.token_var]}}})
        });
        // The run's folder in the project when Gemini CLI would read a
        // settings file there; else one of baton's under the user's own
        // private state, so where the project lives does not matter.
        let mut why_not = Vec::new();
        let dir = std::iter::once(server.scratch)
            .chain(server.private.iter().map(PathBuf::as_path))
            .find(|d| match insecure_for_gemini(d) {
                None => true,
                Some(why) => {
                    why_not.push(why);
                    false
                }
            });
        let Some(dir) = dir else {
            why_not.dedup();
            return Some(crate::McpWiring {
                unseen: Some(format!(
                    "Gemini CLI is not told about baton mcp in this run: it reads a system settings file only when the file and every folder above it belong to root and only root may write them, and {} (its agent can still run `baton agent …` commands)",
                    why_not.join("; ")
                )),
                ..Default::default()
            });
        };
        Some(crate::settings_file_wiring_in(
            dir,
            server,
            "GEMINI_CLI_SYSTEM_SETTINGS_PATH",
            allow.unwrap_or(Value::Null),
        ))
    }
    fn parse_line(&self, v: &Value, seen: &Seen<'_>) -> Vec<AgentEvent> {
        parse_line(v, seen.last_text)
    }
    fn text_in_deltas(&self) -> bool {
        true
    }
    fn stale_session(&self, exit_code: Option<i32>, text: &str) -> bool {
        exit_code == Some(42)
            || ["Invalid session identifier", "No previous sessions found"]
                .iter()
                .any(|n| text.contains(n))
    }
    fn authentication_exit(&self, exit_code: Option<i32>) -> bool {
        exit_code == Some(41)
    }
    fn native_file(&self) -> &'static str {
        "a Gemini CLI session file (~/.gemini/tmp/<project>/chats/session-<time>-<id>.jsonl)"
    }
    fn recognizes(&self, o: &Map<String, Value>) -> Recognition {
        let has = |k: &str| o.get(k).is_some_and(|v| !v.is_null());
        let ty = o.get("type").and_then(Value::as_str).unwrap_or("");
        let older_document = o.get("messages").is_some_and(Value::is_array)
            && o.get("sessionId").is_some()
            && o.get("projectHash").is_some();
        if older_document || has("projectHash") || has("$set") || ty == "gemini" {
            Recognition::Sure
        } else {
            Recognition::No
        }
    }
    fn not_native_because(&self, json: bool) -> &'static str {
        if json {
            "line 1 has no sessionId and projectHash"
        } else {
            "line 1 is not JSON"
        }
    }
    fn parse_native(&self, text: &str, t: &mut NativeTranscript) -> Result<(), String> {
        parse_native(text, t);
        Ok(())
    }
    fn locate_native(&self, id: &str, env: Env<'_>) -> Result<PathBuf, String> {
        let base = match env("GEMINI_CLI_HOME").filter(|v| !v.is_empty()) {
            Some(h) => PathBuf::from(h).join(".gemini").join("tmp"),
            None => under_home(env, ".gemini/tmp")?,
        };
        let short: String = id.chars().take(8).collect();
        let found = in_subfolders(&base, &["*", "chats"], &|f| {
            let n = file_name(f);
            n.starts_with("session-")
                && (n.ends_with(&format!("-{short}.jsonl"))
                    || n.ends_with(&format!("-{short}.json")))
                && gemini_session_id(f).as_deref() == Some(id)
        });
        one_of(
            self,
            id,
            &base,
            found,
            "<project>/chats/session-*.jsonl holding that sessionId",
            "the full session id (`gemini --list-sessions` shows them)",
        )
    }
}

/// The `sessionId` of a Gemini CLI session file (its first line, or the
/// whole document in the older `.json` form).
fn gemini_session_id(f: &Path) -> Option<String> {
    use std::io::BufRead;
    let file = std::fs::File::open(f).ok()?;
    let mut first = String::new();
    std::io::BufReader::new(file).read_line(&mut first).ok()?;
    let v: serde_json::Value = match serde_json::from_str(first.trim()) {
        Ok(v) => v,
        Err(_) => serde_json::from_str(&std::fs::read_to_string(f).ok()?).ok()?,
    };
    v.get("sessionId")?.as_str().map(String::from)
}

/// Gemini CLI `-o stream-json`.
pub(crate) fn parse_line(v: &Value, last_text: &str) -> Vec<AgentEvent> {
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
                text: last_text.to_string(),
            });
        }
        _ => {}
    }
    out
}

/// Gemini CLI: the header, then records (`id`, `type`: user / gemini /
/// info / warning / error) and `$set` updates; a record written again with
/// the same id replaces the earlier one in place.
pub(crate) fn parse_native(text: &str, t: &mut NativeTranscript) {
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

/// Why Gemini CLI would skip a system settings file in `dir` (0.61 checks
/// that the file and each folder above it are owned by root and not
/// writable by group or others): the first folder that fails, or `None`.
/// The folders not made yet are made by this process, owned by its user:
/// fine only for root.
fn insecure_for_gemini(dir: &Path) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    for d in dir.ancestors() {
        let Ok(m) = std::fs::metadata(d) else {
            // Made by this process: its user's (the owner of /proc/self).
            if let Ok(me) = std::fs::metadata("/proc/self")
                && me.uid() != 0
            {
                return Some(format!(
                    "{} would belong to uid {} (baton does not run as root)",
                    d.display(),
                    me.uid()
                ));
            }
            continue;
        };
        if m.uid() != 0 {
            return Some(format!("{} belongs to uid {}", d.display(), m.uid()));
        }
        if m.mode() & 0o022 != 0 {
            return Some(format!(
                "{} may be written by others (mode {:o})",
                d.display(),
                m.mode() & 0o7777
            ));
        }
    }
    None
}

/// Its approval flags for baton's permission mode.
fn approval(p: Permission) -> &'static [&'static str] {
    match p {
        Permission::Edit => &["--approval-mode", "auto_edit"],
        Permission::ReadOnly => &["--approval-mode", "plan"],
        Permission::Full => &["--yolo"],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gemini_folder_is_trusted_only_when_it_matches_the_project_hash() {
        let ctx = "<session_context>\n- **Workspace Directories:**\n  - /w/other\n  - /w/repo\n- **Directory Structure:**";
        let h = format!("{:x}", Sha256::digest(b"/w/repo"));
        assert_eq!(gemini_workspace(ctx, Some(&h)).as_deref(), Some("/w/repo"));
        assert_eq!(gemini_workspace(ctx, Some("00")), None);
    }

    #[test]
    fn a_settings_folder_gemini_would_skip_is_named_with_its_reason() {
        // /tmp may be written by anyone (1777): Gemini skips what is below.
        let why = insecure_for_gemini(Path::new("/tmp/a-project/.baton/tasks/t/mcp")).unwrap();
        assert!(
            why.starts_with("/tmp may be written by others (mode 1777)"),
            "{why}"
        );
        let server = crate::McpServer {
            command: "baton",
            args: &[],
            env: &[],
            scratch: Path::new("/tmp/p/.baton/tasks/t/mcp"),
            private: &[PathBuf::from("/tmp/elsewhere/mcp")],
            cwd: Path::new("/tmp/p"),
            http: None,
        };
        let w = Gemini.mcp_wiring(&server, &|_| None).unwrap();
        assert!(w.files.is_empty() && w.env.is_empty(), "{w:?}");
        assert!(w.unseen.unwrap().contains("belong to root"));
        // Folders of root's that only root may write are fine.
        assert_eq!(insecure_for_gemini(Path::new("/usr/lib/x")), None);
    }

    #[test]
    fn a_project_gemini_would_skip_gets_its_settings_in_a_private_folder() {
        // Where the project is, nobody else may write above /usr/lib; a
        // project below /tmp gets the private folder.
        let private = [
            PathBuf::from("/tmp/x/mcp"),
            PathBuf::from("/usr/lib/baton-test/mcp"),
        ];
        let server = crate::McpServer {
            command: "baton",
            args: &[],
            env: &[],
            scratch: Path::new("/tmp/p/.baton/tasks/t/mcp"),
            private: &private,
            cwd: Path::new("/tmp/p"),
            http: None,
        };
        let w = Gemini.mcp_wiring(&server, &|_| None).unwrap();
        if insecure_for_gemini(Path::new("/usr/lib/baton-test/mcp")).is_some() {
            // Not root here: no folder will do.
            assert!(w.unseen.is_some());
            return;
        }
        assert_eq!(w.unseen, None);
        assert_eq!(
            w.env,
            [(
                "GEMINI_CLI_SYSTEM_SETTINGS_PATH".to_string(),
                "/usr/lib/baton-test/mcp/gemini_cli_system_settings_path-settings.json".to_string()
            )]
        );
    }
}
