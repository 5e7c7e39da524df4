//! Codex (`@openai/codex`): `codex exec --json -s MODE PROMPT`, the
//! thread id read from the stream (`thread.started`) and continued with
//! `codex exec … resume ID`; rollouts kept in
//! `$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<thread-id>.jsonl`
//! (default `~/.codex`). Verified: docs/dev/agent-clis.md.

use crate::json::{content_text, first_of, num, objects, set_once, str_of, text_of};
use crate::locate::{dir_from, file_name, in_subfolders, one_of};
use crate::{
    AgentCli, AgentEvent, Env, Invocation, NativeTranscript, Options, Package, Permission,
    Recognition, Seen, SessionIds, words,
};
use baton_core::agent_stream::{SUMMARY_CHARS, shorten, summarize_args};
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Copy)]
pub struct Codex;

impl AgentCli for Codex {
    fn name(&self) -> &'static str {
        "codex"
    }
    fn title(&self) -> &'static str {
        "Codex"
    }
    fn package(&self) -> Package {
        Package {
            name: "@openai/codex",
            version: "0.169.0",
        }
    }
    fn session_ids(&self) -> SessionIds {
        SessionIds::FromStream
    }
    fn argv(&self, o: &Options<'_>, how: Invocation<'_>) -> Vec<String> {
        let mut argv = words(&[
            "codex",
            "exec",
            "--json",
            "-s",
            sandbox(o.permission),
            "--skip-git-repo-check",
        ]);
        if let Some(m) = o.model {
            argv.extend(words(&["-m", m]));
        }
        argv.extend(o.args.iter().cloned());
        // `exec`'s own flags stay before `resume`.
        if let Invocation::Resume { native_id, .. } = how {
            argv.extend(words(&["resume", native_id]));
        }
        argv.push("{{prompt}}".into());
        argv
    }
    fn tui_argv(&self, o: &Options<'_>, how: Invocation<'_>) -> Option<Vec<String>> {
        // Never asks before a command: the sandbox is the limit.
        let mut argv = words(&["codex", "-s", sandbox(o.permission), "-a", "never"]);
        if let Some(m) = o.model {
            argv.extend(words(&["-m", m]));
        }
        argv.extend(o.args.iter().cloned());
        if let Invocation::Resume { native_id, .. } = how {
            argv.extend(words(&["resume", native_id]));
        }
        argv.push("{{prompt}}".into());
        Some(argv)
    }
    fn memory_file(&self) -> &'static str {
        "AGENTS.md"
    }
    fn mcp_wiring(
        &self,
        server: &crate::McpServer<'_>,
        _env: crate::Env<'_>,
    ) -> Option<crate::McpWiring> {
        // `-c key=TOML value`; JSON strings and arrays of strings are TOML.
        let s = |v: &str| Value::String(v.to_string()).to_string();
        let env: Vec<String> = server
            .env
            .iter()
            .map(|(k, v)| format!("{k}={}", s(v)))
            .collect();
        let args: Vec<String> = server.args.iter().map(|a| s(a)).collect();
        if let Some(h) = server.http {
            // Streamable HTTP, the capability read from the environment.
            return Some(crate::McpWiring {
                args: vec![
                    "-c".into(),
                    format!("mcp_servers.baton.url={}", s(h.url)),
                    "-c".into(),
                    format!("mcp_servers.baton.bearer_token_env_var={}", s(h.token_var)),
                    "-c".into(),
                    "mcp_servers.baton.default_tools_approval_mode=\"approve\"".into(),
                ],
                env: Vec::new(),
                files: Vec::new(),
                unseen: None,
            });
        }
        Some(crate::McpWiring {
            args: vec![
                "-c".into(),
                format!("mcp_servers.baton.command={}", s(server.command)),
                "-c".into(),
                format!("mcp_servers.baton.args=[{}]", args.join(",")),
                "-c".into(),
                format!("mcp_servers.baton.env={{{}}}", env.join(",")),
                // Its tools run without asking: a headless run cannot ask.
                "-c".into(),
                "mcp_servers.baton.default_tools_approval_mode=\"approve\"".into(),
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
        text.contains("no rollout found for thread id")
    }
    fn native_file(&self) -> &'static str {
        "a Codex session file ($CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<thread-id>.jsonl, by default under ~/.codex)"
    }
    fn recognizes(&self, o: &Map<String, Value>) -> Recognition {
        let ty = o.get("type").and_then(Value::as_str).unwrap_or("");
        let rollout = o.get("payload").is_some_and(|v| !v.is_null())
            && matches!(
                ty,
                "session_meta"
                    | "response_item"
                    | "event_msg"
                    | "turn_context"
                    | "compacted"
                    | "world_state"
                    | "token_usage_record"
            );
        if rollout {
            Recognition::Sure
        } else {
            Recognition::No
        }
    }
    fn not_native_because(&self, json: bool) -> &'static str {
        if json {
            "line 1 is not a {type, payload} rollout record"
        } else {
            "line 1 is not JSON"
        }
    }
    fn parse_native(&self, text: &str, t: &mut NativeTranscript) -> Result<(), String> {
        parse_native(text, t);
        Ok(())
    }
    fn subagents_apart(&self) -> bool {
        true
    }
    fn parse_subagent(&self, text: &str) -> (Option<String>, Vec<AgentEvent>) {
        parse_subagent(text)
    }
    fn spawns_in_session(&self, text: &str) -> Vec<AgentEvent> {
        spawns_in_rollout(text)
    }
    fn locate_native(&self, id: &str, env: Env<'_>) -> Result<PathBuf, String> {
        let root = dir_from(env, "CODEX_HOME", ".codex")?;
        let suffix = format!("-{id}.jsonl");
        let is_it = |f: &Path| {
            let n = file_name(f);
            n.starts_with("rollout-") && n.ends_with(&suffix)
        };
        let sessions = root.join("sessions");
        let mut found = in_subfolders(&sessions, &["*", "*", "*"], &is_it);
        found.extend(in_subfolders(&root.join("archived_sessions"), &[], &is_it));
        one_of(
            self,
            id,
            &sessions,
            found,
            "YYYY/MM/DD/rollout-<time>-<thread-id>.jsonl and archived_sessions/",
            "the thread id (the `thread.started` id of `codex exec --json`)",
        )
    }
}

/// Codex `exec --json`.
pub(crate) fn parse_line(v: &Value, last_text: &str) -> Vec<AgentEvent> {
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
            "collab_tool_call" => out.push(collab_call(item)),
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
            "collab_tool_call" => out.extend(collab_result(item)),
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
                text: last_text.to_string(),
            });
        }
        "turn.failed" => {
            out.push(AgentEvent::Error {
                message: first_of(&v["error"], &["message"]),
            });
            out.push(AgentEvent::Final {
                ok: false,
                text: last_text.to_string(),
            });
        }
        "error" => out.push(AgentEvent::Error {
            message: first_of(v, &["message"]),
        }),
        _ => {}
    }
    out
}

/// One of Codex's own agent tools (`spawn_agent`, `wait`, `send_input`,
/// `close_agent`, …) called: the stream names them without the namespace.
fn collab_call(item: &Value) -> AgentEvent {
    let tool = match str_of(item, "tool") {
        "wait" => "wait_agent",
        t => t,
    };
    let agents = thread_ids(item).join(", ");
    let summary = match tool {
        // `default: what for` (the role Codex gives a spawned agent when
        // the model names none, then its task), as for Claude's Agent tool.
        "spawn_agent" => format!("default: {}", str_of(item, "prompt")),
        _ if item["prompt"].is_string() => format!("{agents}: {}", str_of(item, "prompt")),
        _ => agents,
    };
    AgentEvent::ToolCall {
        id: str_of(item, "id").into(),
        name: tool.into(),
        summary: shorten(&summary, SUMMARY_CHARS),
    }
}

/// Its result; for `spawn_agent`, also the session each new agent runs
/// in, whose file holds what it does (see [`parse_subagent`]).
fn collab_result(item: &Value) -> Vec<AgentEvent> {
    let id = str_of(item, "id").to_string();
    let ids = thread_ids(item);
    let states: Vec<String> = ids
        .iter()
        .filter_map(|t| {
            let s = &item["agents_states"][t.as_str()];
            let status = s["status"].as_str()?;
            Some(match s["message"].as_str() {
                Some(m) => format!("{status}: {m}"),
                None => status.to_string(),
            })
        })
        .collect();
    let spawn = str_of(item, "tool") == "spawn_agent";
    let summary = match spawn {
        true => format!("started {}", ids.join(", ")),
        false => states.join("; "),
    };
    let mut out = vec![AgentEvent::ToolResult {
        id: id.clone(),
        ok: str_of(item, "status") != "failed",
        summary: shorten(&summary, SUMMARY_CHARS),
    }];
    if spawn {
        out.extend(ids.into_iter().map(|native_id| AgentEvent::Subagent {
            parent: id.clone(),
            model: None,
            event: Box::new(AgentEvent::SessionStarted { native_id }),
        }));
    }
    out
}

fn thread_ids(item: &Value) -> Vec<String> {
    item["receiver_thread_ids"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t.as_str().map(str::to_string))
        .collect()
}

/// The agents a rollout says were spawned in its latest turn (the run
/// reading it: `codex exec` runs one turn, a resumed session appends its
/// turn to the same file) — `SubAgentActivity` items, which
/// `multi_agent_v2` keeps out of the `exec --json` stream: each as its
/// `spawn_agent` call (`task_name: message`), its result and the session
/// it runs in.
pub(crate) fn spawns_in_rollout(text: &str) -> Vec<AgentEvent> {
    let mut asked: Vec<(String, String)> = Vec::new();
    let mut out = Vec::new();
    for line in text.lines() {
        let turn = line.contains("\"task_started\"");
        if !(turn || line.contains("\"spawn_agent\"") || line.contains("\"SubAgentActivity\"")) {
            continue;
        }
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let p = &v["payload"];
        // A turn of its own (not one a parent's turn started): a new run.
        if turn && p["type"] == "task_started" && p["turn_attribution"]["parent_turn_id"].is_null()
        {
            asked.clear();
            out.clear();
            continue;
        }
        if p["type"] == "function_call" && p["name"] == "spawn_agent" {
            let args: Value = serde_json::from_str(str_of(p, "arguments")).unwrap_or_default();
            let what = format!(
                "{}: {}",
                str_of(&args, "task_name"),
                str_of(&args, "message")
            );
            asked.push((str_of(p, "call_id").into(), what));
        }
        let item = &p["item"];
        if p["type"] == "item_completed"
            && item["type"] == "SubAgentActivity"
            && item["kind"] == "started"
            && let Some(thread) = item["agent_thread_id"].as_str()
        {
            let id = str_of(item, "id").to_string();
            let what = asked.iter().find(|(c, _)| *c == id).map_or_else(
                || str_of(item, "agent_path").to_string(),
                |(_, w)| w.clone(),
            );
            out.push(AgentEvent::ToolCall {
                id: id.clone(),
                name: "spawn_agent".into(),
                summary: shorten(&what, SUMMARY_CHARS),
            });
            out.push(AgentEvent::ToolResult {
                id: id.clone(),
                ok: true,
                summary: format!("started {}", str_of(item, "agent_path")),
            });
            out.push(AgentEvent::Subagent {
                parent: id,
                model: item["model"].as_str().map(str::to_string),
                event: Box::new(AgentEvent::SessionStarted {
                    native_id: thread.into(),
                }),
            });
        }
    }
    out
}

/// A spawned agent's own rollout: the model it ran and what it did, from
/// its first own turn on (what comes before is the parent's history it was
/// given: a turn without a `parent_turn_id`); nothing until that turn
/// starts, its own usage and, when its turn completes, its last message as
/// a `Final`.
pub(crate) fn parse_subagent(text: &str) -> (Option<String>, Vec<AgentEvent>) {
    let Some(own) = text.lines().position(|l| {
        l.contains("\"task_started\"")
            && serde_json::from_str::<Value>(l).is_ok_and(|v| {
                v["payload"]["type"] == "task_started"
                    && v["payload"]["turn_attribution"]["parent_turn_id"].is_string()
            })
    }) else {
        return (None, Vec::new());
    };
    let rest: Vec<&str> = text.lines().skip(own).collect();
    let mut t = NativeTranscript::new();
    parse_rollout(&rest.join("\n"), &mut t, true);
    let model = rest.iter().find_map(|l| {
        let v: Value = serde_json::from_str(l).ok()?;
        (v["type"] == "turn_context")
            .then(|| v["payload"]["model"].as_str().map(str::to_string))
            .flatten()
    });
    (model, t.events)
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
pub(crate) fn parse_native(text: &str, t: &mut NativeTranscript) {
    parse_rollout(text, t, false)
}

/// A rollout into `t`; with `finals`, each completed turn as a `Final`
/// with its last message, in its place.
fn parse_rollout(text: &str, t: &mut NativeTranscript, finals: bool) {
    let mut total = (0u64, 0u64);
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
            "event_msg" if finals && str_of(p, "type") == "task_complete" => {
                t.events.push(AgentEvent::Final {
                    ok: true,
                    text: str_of(p, "last_agent_message").into(),
                })
            }
            // The thread's running total: what grew since the last count
            // (Codex counts again when only its rate limits changed).
            "event_msg" if str_of(p, "type") == "token_count" => {
                let u = &p["info"]["total_token_usage"];
                if u.is_object() {
                    let now = (num(&u["input_tokens"]), num(&u["output_tokens"]));
                    let (input, output) =
                        (now.0.saturating_sub(total.0), now.1.saturating_sub(total.1));
                    total = now;
                    if input + output > 0 {
                        t.events.push(AgentEvent::Usage {
                            input_tokens: input,
                            output_tokens: output,
                            cost_usd: None,
                        });
                    }
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
                summary: shorten(command_output(&text).trim(), SUMMARY_CHARS),
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

/// What a command printed, without the lines Codex puts before it (`Chunk
/// ID`, `Wall time`, the exit code, `Output:`).
fn command_output(text: &str) -> &str {
    match text.split_once("\nOutput:\n") {
        Some((head, out)) if head.contains("exited with code") => out,
        _ => text,
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

/// Codex's sandbox for baton's permission mode.
fn sandbox(p: Permission) -> &'static str {
    match p {
        Permission::Edit => "workspace-write",
        Permission::ReadOnly => "read-only",
        Permission::Full => "danger-full-access",
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
    fn a_commands_output_is_summarized_without_codexs_header() {
        let out = "Chunk ID: 8d5c06\nWall time: 0.0000 seconds\nProcess exited with code 0\nOriginal token count: 8\nOutput:\n.\n..\n.git\n";
        assert_eq!(command_output(out), ".\n..\n.git\n");
        assert_eq!(command_output("Output:\nplain"), "Output:\nplain");
    }

    #[test]
    fn an_apply_patch_is_summarized_by_the_files_it_touches() {
        let patch = "*** Begin Patch\n*** Add File: hello.txt\n+hi\n*** Update File: src/a.rs\n@@\n*** End Patch";
        assert_eq!(patch_files(patch), "add hello.txt, update src/a.rs");
    }

    #[test]
    fn resume_arguments_keep_execs_flags_first() {
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
        assert_eq!(
            Codex.argv(&o, r)[5..].join(" "),
            "--skip-git-repo-check -m m --x resume S {{prompt}}"
        );
        let n = Invocation::New { session: Some("U") };
        assert!(!Codex.argv(&o, n).contains(&"U".to_string()));
    }
}
