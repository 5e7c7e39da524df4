//! Workspaces by agent role (seed 000): where an agent phase of a task
//! works, by the role of its agent. Implementation agents of one service
//! share one workspace, `workspace-<service>`, a worktree on the task's
//! branch; an agent of any other role (quality, testing, …) gets its own,
//! `workspace-<service>-<agent>`, seeded from the shared one's commit, so
//! a reviewer or a tester never changes the files the implementers work
//! on. Pure: the names and the record kept of each workspace; the engine
//! creates them and the store keeps the records.

use crate::time::Timestamp;
use serde::{Deserialize, Serialize};

/// The role whose agents share the service's workspace.
pub const SHARED_ROLE: &str = "implementation";

/// Where an agent of `role` works.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Place {
    /// The service's shared workspace (`workspace-<service>`).
    Shared(String),
    /// The agent's own (`workspace-<service>-<agent>`).
    Own(String),
}

impl Place {
    pub fn name(&self) -> &str {
        match self {
            Place::Shared(n) | Place::Own(n) => n,
        }
    }
}

/// The shared workspace of `service`.
pub fn shared(service: &str) -> String {
    format!("workspace-{}", slug(service))
}

/// Where agent `agent` of role `role` works for `service`.
pub fn place(service: &str, agent: &str, role: &str) -> Place {
    if role == SHARED_ROLE {
        Place::Shared(shared(service))
    } else {
        Place::Own(format!("{}-{}", shared(service), slug(agent)))
    }
}

/// The branch an agent of its own workspace commits on for task `task`:
/// `baton/<task>-<agent>` (the shared workspace is on `baton/<task>`).
pub fn own_branch(task: &str, agent: &str) -> String {
    format!("baton/{task}-{}", slug(agent))
}

/// A service's name as a folder and branch name: lower case letters,
/// digits, `-`, `_` and `.`; anything else (a `/` of `owner/name`, a space)
/// becomes `-`.
pub fn slug(s: &str) -> String {
    let out: String = s
        .chars()
        .map(|c| {
            let c = c.to_ascii_lowercase();
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '-'
            }
        })
        .collect();
    let out = out.trim_matches(|c| c == '-' || c == '.').to_string();
    if out.is_empty() {
        "service".into()
    } else {
        out
    }
}

/// What is known of one workspace: kept by the store, outliving the tasks
/// that worked in it (a workspace is never deleted with a task).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkspaceRecord {
    /// `workspace-<service>` or `workspace-<service>-<agent>`.
    pub name: String,
    /// Its folder (a git worktree of the project).
    pub path: String,
    pub service: String,
    /// `implementation` for the shared one, else its agent's role.
    pub role: String,
    /// The agent it belongs to (its own workspace); `None` when shared.
    pub agent: Option<String>,
    /// The branch checked out in it.
    pub branch: String,
    /// The task that last worked in it, and in which phase.
    pub task_id: String,
    pub phase: Option<String>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn implementation_agents_share_and_the_others_get_their_own() {
        assert_eq!(
            place("api", "claude", "implementation"),
            Place::Shared("workspace-api".into())
        );
        assert_eq!(
            place("api", "codex", "implementation"),
            Place::Shared("workspace-api".into())
        );
        assert_eq!(
            place("api", "reviewer", "quality"),
            Place::Own("workspace-api-reviewer".into())
        );
        assert_eq!(
            place("api", "tester", "testing"),
            Place::Own("workspace-api-tester".into())
        );
    }

    #[test]
    fn names_are_safe_as_folders_and_branches() {
        assert_eq!(
            shared("octo-org/Hello World"),
            "workspace-octo-org-hello-world"
        );
        assert_eq!(shared("/"), "workspace-service");
        assert_eq!(own_branch("t-1", "Cleo Bot"), "baton/t-1-cleo-bot");
    }
}
