//! The registry of active sessions: every task a live process holds (its
//! lease is the registration, so a session is gone the moment it closes
//! or its lease runs out) and every interactive agent instance whose tmux
//! session still runs. `baton status` shows it; `baton status --line`
//! prints it as one line for a tmux status bar.

use crate::engine::Engine;
use crate::error::Result;
use baton_core::agent_stream::{AgentEvent, shorten};
use baton_core::lease::DisplayStatus;
use baton_core::{Event, TaskId};
use baton_sys::tmux::Tmux;
use serde::Serialize;

/// One active session.
#[derive(Debug, Clone, Serialize)]
pub struct Active {
    pub session_id: String,
    pub title: String,
    pub status: String,
    pub phase: Option<String>,
    /// The folder it works in.
    pub worktree: String,
    pub branch: Option<String>,
    /// The `[agents.NAME]` it runs, and that agent's CLI.
    pub agent: Option<String>,
    pub cli: Option<String>,
    /// `socket:session` of its tmux session, when it has one.
    pub tmux: Option<String>,
    /// What it said or did last.
    pub last_lines: Vec<String>,
}

impl Engine {
    /// The active sessions: held tasks first (oldest first), then
    /// interactive instances.
    pub fn registry(&self) -> Result<Vec<Active>> {
        let mut out = Vec::new();
        let mut seen = std::collections::BTreeSet::new();
        for (t, d) in self.list()? {
            if d != DisplayStatus::Running {
                continue;
            }
            let Ok(snap) = self.load(&t.id) else { continue };
            let s = &snap.state;
            let phase = s.in_progress().or(s.current_phase());
            let session = phase.and_then(|p| p.agent_session.clone());
            let worktree = session
                .as_ref()
                .map(|a| a.cwd.clone())
                .unwrap_or_else(|| self.project.root.display().to_string());
            seen.insert(t.id.to_string());
            out.push(Active {
                session_id: t.id.to_string(),
                title: shorten(s.description.lines().next().unwrap_or(""), 60),
                status: d.as_str().to_string(),
                phase: phase.map(|p| p.id.to_string()),
                branch: branch_of(&worktree),
                worktree,
                agent: session
                    .as_ref()
                    .map(|a| a.agent.clone())
                    .or(s.agent.clone()),
                cli: session.map(|a| a.cli),
                tmux: None,
                last_lines: self.last_lines(&t.id, s.last_seq),
            });
        }
        if let Ok(agents) = self.agents() {
            let socket = Tmux::for_project(&self.project.root);
            for v in agents.list().unwrap_or_default() {
                if v.session != Some(true) {
                    continue;
                }
                let i = &v.instance;
                let id = i.id.to_string();
                let name = i.resources.session_name.clone();
                if let Some(turn) = v.turn.as_ref().map(|(t, _)| t.to_string())
                    && let Some(e) = out.iter_mut().find(|e| e.session_id == turn)
                {
                    e.tmux = name.map(|n| format!("{}:{n}", socket.socket()));
                    continue;
                }
                if !seen.insert(id.clone()) {
                    continue;
                }
                let worktree = i.resources.worktree_path.clone().unwrap_or_default();
                out.push(Active {
                    session_id: id,
                    title: format!("agent instance {}", i.id),
                    status: i.status.as_str().to_string(),
                    phase: None,
                    branch: i.resources.branch.clone().or_else(|| branch_of(&worktree)),
                    worktree,
                    agent: None,
                    cli: None,
                    tmux: name.map(|n| format!("{}:{n}", socket.socket())),
                    last_lines: Vec::new(),
                });
            }
        }
        Ok(out)
    }

    /// The last few things task `id`'s agent said or did.
    fn last_lines(&self, id: &TaskId, last_seq: u64) -> Vec<String> {
        let events = self
            .store
            .events(id, last_seq.saturating_sub(40), 40)
            .unwrap_or_default();
        let mut lines = Vec::new();
        for r in events.iter().rev() {
            if let Event::AgentActivity { events, .. } = &r.event {
                for e in events.iter().rev() {
                    let line = match e {
                        AgentEvent::AssistantText { text } => shorten(text, 100),
                        AgentEvent::ToolCall { name, summary, .. } => {
                            shorten(&format!("{name} {summary}"), 100)
                        }
                        _ => continue,
                    };
                    lines.push(line);
                    if lines.len() == 3 {
                        lines.reverse();
                        return lines;
                    }
                }
            }
        }
        lines.reverse();
        lines
    }
}

/// The branch checked out in `dir`, if it is a git work tree.
fn branch_of(dir: &str) -> Option<String> {
    let out = std::process::Command::new("git")
        .args(["-C", dir, "rev-parse", "--abbrev-ref", "HEAD"])
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    let b = String::from_utf8_lossy(&out.stdout).trim().to_string();
    (out.status.success() && !b.is_empty() && b != "HEAD").then_some(b)
}

/// The one-line bar: `[1] main/claude  [2] feat/auth/codex  |  2 inbox`.
pub fn status_line(active: &[Active], inbox: usize) -> String {
    let mut parts: Vec<String> = active
        .iter()
        .enumerate()
        .map(|(n, a)| {
            let place = a.branch.clone().unwrap_or_else(|| a.session_id.clone());
            match a.agent.as_deref().or(a.cli.as_deref()) {
                Some(agent) => format!("[{}] {place}/{agent}", n + 1),
                None => format!("[{}] {place}", n + 1),
            }
        })
        .collect();
    if parts.is_empty() {
        parts.push("no active sessions".into());
    }
    format!("{}  |  {inbox} inbox", parts.join("  "))
}
