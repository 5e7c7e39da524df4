//! Capabilities: how an agent reaching baton's MCP tools over HTTP proves
//! what it is. baton grants one to each phase attempt or agent instance
//! whose agent it wires to `/mcp` (the token goes into the agent's MCP
//! configuration, its digest into the store), and revokes it when the
//! attempt ends. A token is trusted only while what it names still runs:
//! the attempt in progress at that iteration, the instance not ended. What
//! a caller may touch is derived from that, never taken from the request:
//! the attempt's summary file is named by baton inside the task's folder.

use crate::engine::Engine;
use crate::error::Result;
use baton_core::TaskId;
use baton_core::instance::InstanceId;
use baton_core::token::{self, Scope};
use baton_store::Revoke;
use std::path::PathBuf;

/// Who a capability says its holder is, as of now.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Identity {
    pub task: Option<TaskId>,
    pub phase: Option<String>,
    /// Where the attempt's reports go (baton's own path).
    pub summary_file: Option<PathBuf>,
    pub instance: Option<InstanceId>,
    /// The team and teammate the instance is, if it is one.
    pub team: Option<String>,
    pub teammate: Option<String>,
}

impl Engine {
    /// Makes a capability for `scope` and stores its digest; the token is
    /// returned once and kept nowhere else.
    pub fn grant(&self, scope: &Scope) -> Result<String> {
        let t = crate::secrets::new_capability()?;
        self.store
            .grant_capability(&token::digest(&t), scope, self.now())?;
        Ok(t)
    }

    /// The scope of the attempt (or, without one, the instance) an agent's
    /// `BATON_*` environment names: what its capability is for.
    pub fn scope_of_env(env: &[(String, String)]) -> Option<Scope> {
        let var = |k: &str| {
            env.iter()
                .rev()
                .find(|(key, _)| key == k)
                .map(|(_, v)| v.as_str())
        };
        let instance = var("BATON_INSTANCE").and_then(|i| InstanceId::parse(i).ok());
        let attempt = (|| {
            Some(Scope::attempt(
                TaskId::parse(var("BATON_TASK_ID")?).ok()?,
                var("BATON_PHASE")?,
                var("BATON_ITERATION")?.parse().ok()?,
                var("BATON_ATTEMPT")?.parse().ok()?,
            ))
        })();
        match (attempt, instance) {
            (Some(mut s), i) => {
                s.instance = i;
                Some(s)
            }
            (None, Some(i)) => Some(Scope::instance(i)),
            (None, None) => None,
        }
    }

    /// Who holds `token`: `None` when it is no capability, unknown, or
    /// what it names has ended.
    pub fn identify(&self, token: &str) -> Result<Option<Identity>> {
        if !token.starts_with(token::CAPABILITY_PREFIX) {
            return Ok(None);
        }
        let Some(scope) = self.store.capability(&token::digest(token))? else {
            return Ok(None);
        };
        let mut who = Identity::default();
        if let (Some(task), Some(phase)) = (&scope.task, &scope.phase) {
            let Some(snap) = self.store.load(task)? else {
                return Ok(None);
            };
            if !scope.attempt_runs(&snap.state) {
                return Ok(None);
            }
            let idx = snap
                .state
                .phases
                .iter()
                .position(|p| p.id.as_str() == phase)
                .expect("a running attempt's phase is the task's");
            let label = crate::engine::attempt_label(
                idx,
                phase,
                scope.iteration.unwrap_or(0),
                scope.attempt.unwrap_or(0),
            );
            who.summary_file = Some(crate::engine::summary_file(
                &self.project.task_dir(task),
                &label,
            ));
            who.task = Some(task.clone());
            who.phase = Some(phase.clone());
        }
        if let Some(id) = &scope.instance {
            let all = self.store.instances()?;
            match all.by_id.get(id) {
                Some(i) if !i.status.ended() => {}
                _ => return Ok(None),
            }
            if let Some((team, name)) = self.team_member_of_instance(id.as_str()) {
                who.team = Some(team);
                who.teammate = Some(name);
            }
            who.instance = Some(id.clone());
        }
        Ok(Some(who))
    }

    /// Voids the capabilities of a phase attempt that ended (every attempt
    /// of that phase: only one runs at a time). A failure is said, not
    /// fatal: [`Engine::identify`] refuses an ended attempt's anyway.
    pub(crate) fn revoke_phase_capabilities(&self, task: &TaskId, phase: &str) {
        if let Err(e) = self.store.revoke_capabilities(Revoke::Phase(task, phase)) {
            self.observer().info(&format!(
                "warning: the MCP capabilities of {task} {phase} were not revoked: {e} (they open nothing once the phase ended)"
            ));
        }
    }

    /// Voids the capabilities of an instance that ended.
    pub(crate) fn revoke_instance_capabilities(&self, id: &InstanceId) {
        if let Err(e) = self.store.revoke_capabilities(Revoke::Instance(id)) {
            self.observer().info(&format!(
                "warning: the MCP capabilities of {id} were not revoked: {e} (they open nothing once it ended)"
            ));
        }
    }
}
