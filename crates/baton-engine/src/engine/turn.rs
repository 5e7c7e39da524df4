//! What the engine reads of a task that is an agent instance's turn (its
//! `baton-instance` label, `crate::builtin::INSTANCE_LABEL`): where it
//! runs and, for a teammate, its team's identity. Read from the store, so
//! the engine needs nothing of the instances' or the teams' code.

use super::Engine;
use crate::error::{Error, Result};
use crate::workdir::Workdir;
use baton_core::instance::{ErrorCode, InstanceId};
use std::path::PathBuf;

impl Engine {
    /// Where a turn of instance `id` runs: the instance's worktree.
    pub(crate) fn instance_workspace(&self, id: &str) -> Result<Workdir> {
        let all = self.store.instances()?;
        let inst = InstanceId::parse(id)
            .ok()
            .and_then(|i| all.get(&i).cloned())
            .ok_or_else(|| {
                Error::coded(
                    ErrorCode::InstanceNotFound,
                    format!(
                        "this task is a turn of agent instance {id}, which the store does not know"
                    ),
                )
                .hint("`baton agent ls` lists the instances; cancel the task with `baton cancel`")
            })?;
        let path = inst
            .resources
            .worktree_path
            .as_deref()
            .map(PathBuf::from)
            .filter(|p| p.is_dir())
            .ok_or_else(|| {
                Error::coded(
                    ErrorCode::ResourceAllocationFailed,
                    format!("the worktree of agent instance {id} is gone"),
                )
                .hint(format!(
                    "`baton doctor` accounts for it; `baton agent kill {id}` ends the instance"
                ))
            })?;
        Ok(Workdir {
            git: crate::repo::open(&path),
            cwd: path,
            branch: None,
        })
    }

    /// The team and teammate agent instance `instance` is, if it is one.
    pub fn team_member_of_instance(&self, instance: &str) -> Option<(String, String)> {
        self.store.teams().ok()?.into_iter().find_map(|t| {
            t.teammates
                .values()
                .find(|m| m.instance.as_deref() == Some(instance))
                .map(|m| (t.id.to_string(), m.name.clone()))
        })
    }
}
