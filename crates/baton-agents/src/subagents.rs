//! The subagents a CLI runs in sessions of their own (Codex's spawned
//! agents: its stream says only that one started and in which session),
//! read from their session files while they are written, as
//! [`AgentEvent::Subagent`]s tied to the tool call that started each.
//!
//! Where the stream does not even say that (Codex's `multi_agent_v2`),
//! the run's own session file does: it is read when the stream shows the
//! model waiting for its agents, and when the run ends.
//!
//! IO at the edge: the files are found with [`AgentCli::locate_native`]
//! and read with [`AgentCli::parse_subagent`] and
//! [`AgentCli::spawns_in_session`] (pure).
//!
//! [`AgentCli::locate_native`]: crate::AgentCli::locate_native
//! [`AgentCli::parse_subagent`]: crate::AgentCli::parse_subagent
//! [`AgentCli::spawns_in_session`]: crate::AgentCli::spawns_in_session

use crate::{AgentEvent, Cli};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// How often a running subagent's file is read again.
pub const READ_EVERY: Duration = Duration::from_secs(2);

/// The subagents one run started, and how much of each was said.
pub struct Subagents {
    cli: Cli,
    /// The run's environment (where the CLI keeps its sessions).
    env: Vec<(String, String)>,
    children: Vec<Child>,
    read: Option<Instant>,
    /// The run's own session (and its file, once found), and whether to
    /// look in it for agents the stream did not show being started.
    session: Option<String>,
    session_file: Option<PathBuf>,
    look: bool,
}

struct Child {
    /// The tool call that started it.
    parent: String,
    native_id: String,
    file: Option<PathBuf>,
    /// The file's size when last read (unchanged: nothing new to read).
    size: u64,
    /// Its events already returned.
    said: usize,
}

impl Subagents {
    pub fn new(cli: Cli, env: Vec<(String, String)>) -> Subagents {
        Subagents {
            cli,
            env,
            children: Vec::new(),
            read: None,
            session: None,
            session_file: None,
            look: false,
        }
    }

    /// Notes the subagents `events` say were started in sessions of their
    /// own.
    pub fn saw(&mut self, events: &[AgentEvent]) {
        if !self.cli.subagents_apart() {
            return;
        }
        for e in events {
            match e {
                AgentEvent::SessionStarted { native_id } => self.session = Some(native_id.clone()),
                AgentEvent::ToolCall { name, .. } if name == "wait_agent" => self.look = true,
                _ => {}
            }
            if let AgentEvent::Subagent { parent, event, .. } = e
                && let AgentEvent::SessionStarted { native_id } = event.as_ref()
                && !self.children.iter().any(|c| &c.native_id == native_id)
            {
                self.children.push(Child {
                    parent: parent.clone(),
                    native_id: native_id.clone(),
                    file: None,
                    size: 0,
                    said: 0,
                });
            }
        }
    }

    /// What they did since the last call: read at most every
    /// [`READ_EVERY`], or now when `now` (the run ended).
    pub fn poll(&mut self, now: bool) -> Vec<AgentEvent> {
        let mut out = Vec::new();
        if !self.cli.subagents_apart() {
            return out;
        }
        if self.look || now {
            self.look = false;
            out = self.spawned_unseen();
            self.saw(&out);
        }
        if self.children.is_empty()
            || (!now && out.is_empty() && self.read.is_some_and(|t| t.elapsed() < READ_EVERY))
        {
            return out;
        }
        self.read = Some(Instant::now());
        let env = |k: &str| env_of(&self.env, k);
        for c in &mut self.children {
            if c.file.is_none() {
                c.file = self.cli.locate_native(&c.native_id, &env).ok();
            }
            let Some(file) = &c.file else { continue };
            let size = std::fs::metadata(file).map_or(0, |m| m.len());
            if size == c.size {
                continue;
            }
            let Ok(text) = std::fs::read_to_string(file) else {
                continue;
            };
            c.size = size;
            let (model, events) = self.cli.parse_subagent(&text);
            // A line still being written is left out until it is whole, so
            // what was said is a prefix of what is said next time.
            let new = events.into_iter().skip(c.said);
            let before = out.len();
            out.extend(new.map(|e| AgentEvent::Subagent {
                parent: c.parent.clone(),
                model: model.clone(),
                event: Box::new(e),
            }));
            c.said += out.len() - before;
        }
        out
    }

    /// The agents the run's session file says were started and the stream
    /// did not.
    fn spawned_unseen(&mut self) -> Vec<AgentEvent> {
        let Some(session) = &self.session else {
            return Vec::new();
        };
        if self.session_file.is_none() {
            let env = |k: &str| env_of(&self.env, k);
            self.session_file = self.cli.locate_native(session, &env).ok();
        }
        let Some(text) = self
            .session_file
            .as_ref()
            .and_then(|f| std::fs::read_to_string(f).ok())
        else {
            return Vec::new();
        };
        let spawns = self.cli.spawns_in_session(&text);
        // The calls whose agent is followed already.
        let known: Vec<&str> = spawns
            .iter()
            .filter_map(|e| match e {
                AgentEvent::Subagent { parent, event, .. } => match event.as_ref() {
                    AgentEvent::SessionStarted { native_id }
                        if self.children.iter().any(|c| &c.native_id == native_id) =>
                    {
                        Some(parent.as_str())
                    }
                    _ => None,
                },
                _ => None,
            })
            .collect();
        spawns
            .iter()
            .filter(|e| {
                let id = match e {
                    AgentEvent::ToolCall { id, .. } | AgentEvent::ToolResult { id, .. } => id,
                    AgentEvent::Subagent { parent, .. } => parent,
                    _ => return true,
                };
                !known.contains(&id.as_str())
            })
            .cloned()
            .collect()
    }
}

/// `k` in the run's environment, else in baton's.
fn env_of(env: &[(String, String)], k: &str) -> Option<String> {
    env.iter()
        .find(|(n, _)| n == k)
        .map(|(_, v)| v.clone())
        .or_else(|| std::env::var(k).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A Codex subagent's rollout (recorded from Codex 0.169's
    /// `spawn_agent`), written in two steps: each step's events once.
    #[test]
    fn a_subagents_file_is_read_as_it_grows() {
        let home = tempfile::tempdir().unwrap();
        let day = home.path().join("sessions/2026/11/26");
        std::fs::create_dir_all(&day).unwrap();
        let file = day.join("rollout-2026-11-26T06-35-48-child-1.jsonl");
        let lines = [
            r#"{"timestamp":"t","type":"session_meta","payload":{"id":"child-1","parent_thread_id":"main","cwd":"/w"}}"#,
            r#"{"timestamp":"t","type":"event_msg","payload":{"type":"task_started","turn_attribution":{"parent_turn_id":"turn-0"}}}"#,
            r#"{"timestamp":"t","type":"turn_context","payload":{"model":"gpt-5-codex","cwd":"/w"}}"#,
            r#"{"timestamp":"t","type":"response_item","payload":{"type":"function_call","name":"exec_command","arguments":"{\"cmd\":\"ls\"}","call_id":"c1"}}"#,
            r#"{"timestamp":"t","type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":"Process exited with code 0\nOutput:\nREADME.md\n"}}"#,
            r#"{"timestamp":"t","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Seen: a README."}]}}"#,
        ];
        std::fs::write(&file, lines[..4].join("\n") + "\n").unwrap();
        let env = vec![("CODEX_HOME".to_string(), home.path().display().to_string())];
        let mut s = Subagents::new(&crate::clis::Codex, env);
        assert!(s.poll(true).is_empty(), "no subagent started yet");
        s.saw(&[AgentEvent::Subagent {
            parent: "item_1".into(),
            model: None,
            event: Box::new(AgentEvent::SessionStarted {
                native_id: "child-1".into(),
            }),
        }]);
        let first = s.poll(true);
        assert!(
            matches!(&first[..], [AgentEvent::Subagent { parent, model: Some(m), event }]
                if parent == "item_1" && m == "gpt-5-codex"
                && matches!(event.as_ref(), AgentEvent::ToolCall { name, .. } if name == "exec_command")),
            "{first:?}"
        );
        assert!(s.poll(false).is_empty(), "not read again within 2 s");
        std::fs::write(&file, lines.join("\n") + "\n").unwrap();
        let rest: Vec<AgentEvent> = s
            .poll(true)
            .into_iter()
            .map(|e| match e {
                AgentEvent::Subagent { event, .. } => *event,
                other => other,
            })
            .collect();
        assert_eq!(
            rest,
            vec![
                AgentEvent::ToolResult {
                    id: "c1".into(),
                    ok: true,
                    summary: "README.md".into()
                },
                AgentEvent::AssistantText {
                    text: "Seen: a README.".into()
                },
            ]
        );
    }
}
