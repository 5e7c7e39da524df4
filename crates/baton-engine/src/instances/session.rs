//! Interactive instances: the agent's own terminal UI in a tmux session on
//! baton's socket (`baton agent attach` puts a person inside it), feedback
//! typed into its pane, the pane captured into the instance's log before
//! the session ends.

use super::Agents;
use crate::error::{Error, Result};
use baton_agents::Invocation;
use baton_core::instance::{ErrorCode, Instance, InstanceId};
use baton_sys::tmux::Tmux;
use std::path::PathBuf;

impl Agents<'_> {
    pub(super) fn tmux(&self) -> Tmux {
        Tmux::for_project(&self.eng.project.root)
    }

    /// Where `inst`'s tmux session runs, when that is not here: another
    /// host, or another container (PID namespace) of this one, whose tmux
    /// server this process cannot reach. `None`: here (or headless).
    pub(super) fn session_elsewhere(&self, inst: &Instance) -> Option<String> {
        let h = inst.resources.session_host.as_ref()?;
        let local = self.eng.local();
        if local.can_probe(&h.host, &h.boot_id, &h.pid_ns) {
            return None;
        }
        Some(if h.host != local.host {
            format!("on host {}", h.host)
        } else if h.boot_id != local.boot_id {
            "on this machine before its last boot".into()
        } else {
            format!(
                "in another container of this host (PID namespace {})",
                h.pid_ns
            )
        })
    }

    /// Where an instance's own files go (its prompt, its captured pane).
    pub fn folder(&self, id: &InstanceId) -> PathBuf {
        self.eng
            .project
            .baton_dir()
            .join("agents")
            .join(id.as_str())
    }

    /// Starts `inst`'s agent in its tmux session, with `prompt`: a
    /// built-in CLI's own terminal UI (told about baton's MCP server,
    /// continuing or starting the native session recorded as the
    /// instance's), or a generic agent's command.
    pub(super) fn start_session(&self, inst: &Instance, agent: &str, prompt: &str) -> Result<()> {
        let name = inst
            .resources
            .session_name
            .as_deref()
            .expect("an interactive instance has a session name");
        let cfg = &self.eng.project.config.agents[agent];
        let dir = self.folder(&inst.id);
        fs_err::create_dir_all(&dir)?;
        let prompt_file = dir.join("prompt.md");
        fs_err::write(&prompt_file, prompt)?;
        let how = Invocation::New {
            session: inst.resources.agent_session_id.as_deref(),
        };
        let template = cfg.tui_argv_for(how).ok_or_else(|| no_tui(agent, cfg))?;
        for (name, text) in cfg.tui_files() {
            fs_err::write(dir.join(name), text)?;
        }
        let state_dir = dir.display().to_string();
        let mut argv: Vec<String> = baton_agents::generic::fill(&template, prompt, &prompt_file)
            .into_iter()
            .map(|a| a.replace("{{state_dir}}", &state_dir))
            .collect();
        let mut env = vec![
            (
                "BATON_PROJECT".to_string(),
                self.eng.project.root.display().to_string(),
            ),
            ("BATON_INSTANCE".to_string(), inst.id.to_string()),
            ("BATON_AGENT".to_string(), agent.to_string()),
            ("BATON_STATE_DIR".to_string(), dir.display().to_string()),
        ];
        env.extend(cfg.cli_env());
        env.extend(cfg.env.iter().map(|(k, v)| (k.clone(), v.clone())));
        if let Some(url) = std::env::var("BATON_DATABASE_URL")
            .ok()
            .filter(|u| !u.is_empty())
        {
            env.push(("BATON_DATABASE_URL".into(), url));
        }
        // The CLI is told about baton's MCP server, which learns the
        // instance from the environment passed to it.
        let cwd = PathBuf::from(inst.resources.worktree_path.as_deref().unwrap_or("."));
        if let Some(w) = cfg
            .cli
            .filter(|_| cfg.mcp.unwrap_or(true))
            .and_then(|c| self.eng.mcp_wiring(c, &cwd, &env))
        {
            if let Some(why) = &w.unseen {
                self.eng.observer().info(why);
            }
            argv.splice(1..1, w.args);
            env.extend(w.env);
        }
        self.tmux()
            .new_session(name, &cwd, &argv, &env)
            .map_err(|e| Error::coded(ErrorCode::ResourceAllocationFailed, e))
    }

    /// The native session id an interactive instance of `agent` starts
    /// with, where its CLI lets baton choose it.
    pub(super) fn chosen_session_id(&self, agent: &str) -> Option<String> {
        let cli = self.eng.project.config.agents.get(agent)?.cli?;
        (cli.session_ids() == baton_agents::SessionIds::Chosen).then(crate::engine::new_uuid)
    }

    /// Refuses an interactive instance of an agent whose terminal UI baton
    /// does not run, before anything is made.
    pub(super) fn check_tui(&self, agent: &str) -> Result<()> {
        let cfg = &self.eng.project.config.agents[agent];
        match cfg.tui_argv_for(Invocation::New { session: None }) {
            Some(_) => Ok(()),
            None => Err(no_tui(agent, cfg)),
        }
    }

    /// The command that attaches a person's terminal to `id`'s session.
    pub fn attach_command(&self, id: &InstanceId) -> Result<std::process::Command> {
        let v = self.show(id)?;
        let Some(name) = v.instance.resources.session_name.clone() else {
            return Err(Error::coded(
                ErrorCode::InvalidState,
                format!("{id} runs headless: it has no terminal to attach to"),
            )
            .hint(format!(
                "follow its turns with `baton log TASK --follow` (`baton agent show {id}` names them); spawn with --interactive for a terminal"
            )));
        };
        if let Some(there) = self.session_elsewhere(&v.instance) {
            return Err(Error::coded(
                ErrorCode::InvalidState,
                format!("{id}'s tmux session {name} runs {there}: this shell cannot reach it"),
            )
            .hint(format!(
                "run `baton agent attach {id}` where it was spawned; `baton agent log {id}` shows its turns from anywhere"
            )));
        }
        let tmux = self.tmux();
        if !tmux.has_session(&name) {
            return Err(Error::coded(
                ErrorCode::InvalidState,
                format!(
                    "{id}'s tmux session {name} is gone ({})",
                    v.instance.status.as_str()
                ),
            )
            .hint(format!("`baton agent log {id}` shows what its pane showed")));
        }
        Ok(tmux.attach_command(&name))
    }

    /// Saves what the pane shows into the instance's folder, then ends the
    /// session and its processes, and takes out of its worktree what baton
    /// put there for the run (droid's MCP file), so a worktree that is kept
    /// holds only the work.
    pub(super) fn end_session(&self, inst: &Instance) -> Result<(), String> {
        let Some(name) = inst.resources.session_name.as_deref() else {
            return Ok(());
        };
        let tmux = self.tmux();
        if tmux.has_session(name) {
            if let Ok(text) = tmux.capture(name) {
                let dir = self.folder(&inst.id);
                let _ = fs_err::create_dir_all(&dir);
                let _ = fs_err::write(dir.join("pane.log"), text);
            }
            tmux.kill(name)?;
        }
        if let Some(wt) = &inst.resources.worktree_path {
            baton_agents::run_files::undo(std::path::Path::new(wt)).map_err(|e| e.to_string())?;
        }
        Ok(())
    }
}

/// A tmux session name for instance `id` (tmux reads `.` and `:` in a
/// target as window and pane).
pub(super) fn session_name(id: &InstanceId) -> String {
    id.as_str().replace(['.', ':'], "_")
}

fn no_tui(agent: &str, cfg: &crate::config::AgentConfig) -> Error {
    let title = cfg.cli.map(|c| c.title()).unwrap_or("this CLI");
    Error::coded(
        ErrorCode::InvalidConfiguration,
        format!("agent {agent:?} runs {title}, whose terminal UI baton does not run in tmux"),
    )
    .hint("drop --interactive (its turns then run headless, with native resume), or define an agent with command = [\"PROGRAM\", \"{{prompt}}\"] for its terminal UI")
}
