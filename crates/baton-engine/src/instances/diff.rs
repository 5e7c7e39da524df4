//! What an agent instance's work changed: its worktree as it is now
//! against where its branch left its base (a coding instance's base
//! branch, a review's parent's branch), committed or not.

use super::{Agents, found};
use crate::engine::{WorkDiff, worktree_diff};
use crate::error::{Error, Result};
use baton_core::instance::{Config, ErrorCode, Instance, InstanceId, Instances};

impl Agents<'_> {
    /// Instance `id`'s work against its base.
    pub fn diff(&self, id: &InstanceId) -> Result<WorkDiff> {
        let all = self.stored()?;
        let i = found(&all, id)?;
        let folder = i
            .resources
            .worktree_path
            .as_deref()
            .map(std::path::PathBuf::from)
            .filter(|p| p.is_dir())
            .ok_or_else(|| {
                Error::coded(
                    ErrorCode::InvalidState,
                    format!("agent instance {id} has no worktree (any more) to compare"),
                )
                .hint("its work, if it held any, is on its branch or in its pull request")
            })?;
        let base = base_of(i, &all);
        let fork = self
            .git
            .run(
                &["merge-base", &base, &format!("{}^{{commit}}", head_of(i))],
                &[],
            )
            .map(|s| s.trim().to_string())
            .unwrap_or(base);
        worktree_diff(&folder, &fork)
    }
}

/// What an instance's work is measured against: a coding instance's base
/// branch, a review's parent's branch.
pub(super) fn base_of(i: &Instance, all: &Instances) -> String {
    match &i.config {
        Config::Coding(c) => c.base_branch.clone(),
        Config::Review(_) => i
            .review()
            .and_then(|r| all.get(&r.parent_instance_id))
            .and_then(|p| p.resources.branch.clone())
            .unwrap_or_else(|| "HEAD".into()),
    }
}

/// Its branch, else HEAD.
fn head_of(i: &Instance) -> String {
    i.resources.branch.clone().unwrap_or_else(|| "HEAD".into())
}
