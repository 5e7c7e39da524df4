//! Teammates baton starts: each one with an agent (`--teammate
//! NAME:ROLE:AGENT`) runs as a coding agent instance (`baton agent ls`) in
//! its own worktree, told who it is and how to work with the team through
//! baton's MCP tools, which know it by `BATON_TEAM` and `BATON_TEAMMATE`
//! (given to every turn of its instance, see `Engine::team_member_of_instance`).

use super::Teams;
use crate::error::{Error, Result};
use crate::instances::SpawnOptions;
use baton_core::team::{Input, Team, Teammate};

/// The prompt a teammate starts with.
pub fn teammate_prompt(t: &Team, m: &Teammate) -> String {
    format!(
        "You are {name}, the {role} of team {team}, which baton runs. Work with the team through baton's MCP tools:\n\
         1. Call team_task_claim to get your task (it may come with a checkpoint: continue from there).\n\
         2. Work on it in this folder, your own git worktree; commit as you go.\n\
         3. Call team_checkpoint about every 30 seconds with the files you changed, whether your checks pass (green, red or pending), your branch and HEAD.\n\
         4. Read team_inbox now and then, and team_ack what you handled; ask the lead with team_send(to=\"lead\").\n\
         5. When the task is done, call team_task_update(status=\"completed\"), then team_task_claim again; stop when it gives you none.\n\
         If the lead times out, keep working and checkpointing: your messages wait for it.",
        name = m.name,
        role = m.role.as_str(),
        team = t.id,
    )
}

impl Teams<'_> {
    /// Starts every teammate of `id` that has an agent and no instance yet
    /// (`interactive`: in its terminal UI, in tmux). The instances
    /// started, by teammate.
    pub fn start_teammates(&self, id: &str, interactive: bool) -> Result<Vec<(String, String)>> {
        let t = self.get(id)?;
        let to_start: Vec<Teammate> = t
            .teammates
            .values()
            .filter(|m| m.agent.is_some() && m.instance.is_none())
            .cloned()
            .collect();
        if to_start.is_empty() {
            return Ok(Vec::new());
        }
        let agents = self.eng.agents()?;
        let mut started = Vec::new();
        for m in to_start {
            let instance = format!("{}-{}", t.id, m.name);
            // Known to the team before its first turn starts, so that turn
            // gets the team's MCP identity.
            self.step(id, |_, _| {
                Ok(Input::Started {
                    name: m.name.clone(),
                    instance: instance.clone(),
                })
            })?;
            agents
                .spawn(SpawnOptions {
                    id: Some(instance.clone()),
                    instructions: teammate_prompt(&t, &m),
                    agent: m.agent.clone(),
                    interactive,
                    ..Default::default()
                })
                .map_err(|e| {
                    Error::new(e.kind, format!("cannot start teammate {}: {}", m.name, e.message))
                        .hint("`baton agent ls` shows the instances; fix the agent and run `baton team start` again")
                })?;
            started.push((m.name.clone(), instance));
        }
        Ok(started)
    }
}

impl Teams<'_> {
    /// The branch baton gave teammate `m` when it started it as an agent
    /// instance (`baton/<team>-<name>`, as the instance records it; by its
    /// name when this store does not know the instance, e.g. after `team
    /// import` in another clone).
    pub(super) fn instance_branch(&self, m: &Teammate) -> Option<String> {
        let id = m.instance.as_deref()?;
        let recorded = baton_core::instance::InstanceId::parse(id)
            .ok()
            .and_then(|iid| {
                self.eng
                    .store
                    .instances()
                    .ok()?
                    .get(&iid)
                    .and_then(|i| i.resources.branch.clone())
            });
        Some(recorded.unwrap_or_else(|| format!("baton/{id}")))
    }
}
