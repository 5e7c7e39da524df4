//! The task list: adding, assigning, starting (claiming), blocking and
//! completing tasks, the teammates' checkpoints of where their work
//! stands, what they report of themselves, and moving a task from an
//! offline owner to another, who inherits its checkpoint and is told so
//! in its first message (after a roll back, from the good commit, told
//! that the work after it was discarded). Every operation is its caller's
//! heartbeat.

use super::Teams;
use crate::error::Result;
use baton_core::team::{
    self, Input, LocalChanges, LocalStatus, MessageType, NewMessage, NewTask, Team,
};

/// `baton team task checkpoint` / the `team_checkpoint` tool.
#[derive(Debug, Clone)]
pub struct CheckpointOptions {
    pub files_modified: Vec<String>,
    pub local_status: LocalStatus,
    pub git_branch: Option<String>,
    pub head: Option<String>,
}

impl Teams<'_> {
    pub fn add_task(&self, id: &str, by: &str, task: NewTask) -> Result<Team> {
        self.touch(id, by)?;
        Ok(self.step(id, |_, _| Ok(Input::AddTask(task.clone())))?.0)
    }

    pub fn assign(&self, id: &str, by: &str, task: &str, to: &str) -> Result<Team> {
        self.touch(id, by)?;
        Ok(self
            .step(id, |_, _| {
                Ok(Input::Assign {
                    task: task.into(),
                    to: to.into(),
                })
            })?
            .0)
    }

    /// `by` starts the task (claims it when nobody has it).
    pub fn start(&self, id: &str, by: &str, task: &str) -> Result<Team> {
        self.touch(id, by)?;
        Ok(self
            .step(id, |_, _| {
                Ok(Input::Start {
                    task: task.into(),
                    by: by.into(),
                })
            })?
            .0)
    }

    pub fn block(&self, id: &str, by: &str, task: &str, reason: &str) -> Result<Team> {
        self.touch(id, by)?;
        Ok(self
            .step(id, |_, _| {
                Ok(Input::Block {
                    task: task.into(),
                    by: by.into(),
                    reason: reason.into(),
                })
            })?
            .0)
    }

    pub fn complete_task(&self, id: &str, by: &str, task: &str) -> Result<Team> {
        self.touch(id, by)?;
        Ok(self
            .step(id, |_, _| {
                Ok(Input::Complete {
                    task: task.into(),
                    by: by.into(),
                })
            })?
            .0)
    }

    pub fn checkpoint(
        &self,
        id: &str,
        by: &str,
        task: &str,
        c: &CheckpointOptions,
    ) -> Result<Team> {
        self.touch(id, by)?;
        Ok(self
            .step(id, |_, _| {
                Ok(Input::Checkpoint {
                    task: task.into(),
                    by: by.into(),
                    files_modified: c.files_modified.clone(),
                    local_status: c.local_status,
                    git_branch: c.git_branch.clone(),
                    head: c.head.clone(),
                })
            })?
            .0)
    }

    /// What a teammate says of itself: its native session, its work tree,
    /// how full its context is.
    pub fn report(
        &self,
        id: &str,
        name: &str,
        session_id: Option<String>,
        local_changes: Option<LocalChanges>,
        context_usage_percent: Option<u8>,
    ) -> Result<Team> {
        self.touch(id, name)?;
        Ok(self
            .step(id, |_, _| {
                Ok(Input::Report {
                    name: name.into(),
                    session_id: session_id.clone(),
                    local_changes: local_changes.clone(),
                    context_usage_percent,
                })
            })?
            .0)
    }

    /// `baton team reassign TASK --to NAME`: refused while the owner is
    /// online unless `force`. The new owner inherits the task's latest
    /// checkpoint and branch and is told so in a message.
    pub fn reassign(&self, id: &str, by: &str, task: &str, to: &str, force: bool) -> Result<Team> {
        self.touch(id, by)?;
        let th = self.settings.thresholds;
        let (after, records) = self.step(id, |t, now| {
            let owner = t.task(task).and_then(|x| x.assigned_to.clone());
            let online = match owner {
                Some(o) => {
                    let p = self
                        .eng
                        .store
                        .presences(t.id.as_str())?
                        .into_iter()
                        .find(|p| p.name == o);
                    team::liveness(p.as_ref(), now, &th) == team::Liveness::Online
                }
                None => false,
            };
            Ok(Input::Reassign {
                task: task.into(),
                to: to.into(),
                force,
                owner_online: online,
            })
        })?;
        let Some(from) = records.iter().find_map(|r| match &r.event {
            team::Event::TaskReassigned { from, .. } => Some(from.clone()),
            _ => None,
        }) else {
            return Ok(after);
        };
        let x = after.task(task).expect("reassigned task");
        let inherited = match &x.checkpoint {
            Some(c) if c.rolled_back.is_some() => format!(
                "The lead rolled its work back to the last good commit: branch {}, HEAD {} (checkpoint #{}, {}). What came after that commit was discarded (kept at {} for reference only), so do not build on it.",
                c.git_branch.as_deref().unwrap_or("-"),
                c.head.as_deref().unwrap_or("-"),
                c.checkpoint_seq,
                c.last_progress_at,
                c.rolled_back.as_deref().unwrap_or("-"),
            ),
            Some(c) => format!(
                "Its latest checkpoint (#{}, {}): branch {}, HEAD {}, local status {}, files modified: {}.",
                c.checkpoint_seq,
                c.last_progress_at,
                c.git_branch.as_deref().unwrap_or("-"),
                c.head.as_deref().unwrap_or("-"),
                c.local_status.as_str(),
                if c.files_modified.is_empty() {
                    "none".to_string()
                } else {
                    c.files_modified.join(", ")
                }
            ),
            None => "It has no checkpoint yet: start from the task's title.".into(),
        };
        self.send(
            id,
            &NewMessage {
                msg_id: format!("reassign-{task}-{}", after.last_seq),
                from: team::LEAD.into(),
                to: to.into(),
                kind: MessageType::Info,
                subject: format!("task {task} is yours now"),
                body: format!(
                    "Task {task} ({}) was reassigned to you from {}. {inherited} Continue from there.",
                    x.title,
                    from.as_deref().unwrap_or("nobody")
                ),
            },
        )?;
        Ok(after)
    }
}
