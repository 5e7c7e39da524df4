//! Teams: a lead and teammates sharing a task list and a mailbox (the
//! team-state seed's model). A team is a journal of [`Event`]s and its
//! projection [`Team`], as a task is: [`decide`] checks an [`Input`]
//! against the rules and returns the events it causes (or a
//! [`TeamError`]), [`apply`] folds an event into the team. The mailbox and
//! the heartbeats are kept beside the journal by the store (a message is
//! appended with a per-team sequence the store assigns; a heartbeat only
//! moves its sender's presence), and [`liveness`] reads a presence against
//! the store's own clock. No IO, no clock: times are passed in.
//!
//! The rules are in `team/decide.rs`, the folding in `team/apply.rs`,
//! liveness and clock skew in `team/liveness.rs`.

mod apply;
mod decide;
mod liveness;

pub use apply::{apply, replay};
pub use decide::decide;
pub use liveness::{Liveness, Presence, Thresholds, human_ms, lead_liveness, liveness, skew_ms};

use crate::time::Timestamp;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A team's id: the rules of a task id.
pub type TeamId = crate::ids::TaskId;

/// The journal format of teams; an older one is read by documented rules.
pub const SCHEMA_VERSION: u32 = 1;

/// The name the lead goes by in the mailbox and among the presences.
pub const LEAD: &str = "lead";
/// Every teammate, as a message's `to`.
pub const EVERYONE: &str = "*";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TeamStatus {
    Pending,
    Active,
    /// Its lead timed out; the teammates go on (zombie mode).
    Suspended,
    Consolidating,
    /// Read-only.
    Completed,
}

impl TeamStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            TeamStatus::Pending => "pending",
            TeamStatus::Active => "active",
            TeamStatus::Suspended => "suspended",
            TeamStatus::Consolidating => "consolidating",
            TeamStatus::Completed => "completed",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    Pending,
    InProgress,
    Blocked,
    Completed,
}

impl TaskStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Pending => "pending",
            TaskStatus::InProgress => "in_progress",
            TaskStatus::Blocked => "blocked",
            TaskStatus::Completed => "completed",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    Engineer,
    Validator,
    Tester,
    Integrator,
}

impl Role {
    pub const NAMES: &'static str = "engineer, validator, tester, integrator";

    pub fn parse(s: &str) -> Option<Role> {
        match s {
            "engineer" => Some(Role::Engineer),
            "validator" => Some(Role::Validator),
            "tester" => Some(Role::Tester),
            "integrator" => Some(Role::Integrator),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Role::Engineer => "engineer",
            Role::Validator => "validator",
            Role::Tester => "tester",
            Role::Integrator => "integrator",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LocalStatus {
    Green,
    Red,
    Pending,
}

impl LocalStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            LocalStatus::Green => "green",
            LocalStatus::Red => "red",
            LocalStatus::Pending => "pending",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MessageType {
    Info,
    Question,
    Challenge,
    Resolution,
}

impl MessageType {
    pub const NAMES: &'static str = "info, question, challenge, resolution";

    pub fn parse(s: &str) -> Option<MessageType> {
        match s {
            "info" => Some(MessageType::Info),
            "question" => Some(MessageType::Question),
            "challenge" => Some(MessageType::Challenge),
            "resolution" => Some(MessageType::Resolution),
            _ => None,
        }
    }
}

/// Where a teammate's work on a task stands, as it last said.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Checkpoint {
    pub last_progress_at: Timestamp,
    #[serde(default)]
    pub files_modified: Vec<String>,
    pub local_status: LocalStatus,
    /// 1 for a task's first checkpoint, then one more each time.
    pub checkpoint_seq: u64,
    pub git_branch: Option<String>,
    pub head: Option<String>,
    /// Set when the lead rolled the work back to this checkpoint (`team
    /// resolve … rollback`): where what the branch held after it is saved.
    /// That work was discarded; whoever takes the task goes on from here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rolled_back: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TeamTask {
    pub id: String,
    pub title: String,
    pub assigned_to: Option<String>,
    pub status: TaskStatus,
    /// Tasks that must be completed before this one starts.
    #[serde(default)]
    pub dependencies: Vec<String>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    pub started_at: Option<Timestamp>,
    pub completed_at: Option<Timestamp>,
    pub blocked_reason: Option<String>,
    pub checkpoint: Option<Checkpoint>,
    /// The latest checkpoint whose local checks were green: the last good
    /// commit a roll back goes to.
    #[serde(default)]
    pub last_green: Option<Checkpoint>,
}

/// A teammate's work tree as it last said.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LocalChanges {
    pub staged: u32,
    pub unstaged: u32,
    pub branch: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Teammate {
    pub name: String,
    pub role: Role,
    /// The agent baton runs it with (`[agents.NAME]`), if baton starts it.
    pub agent: Option<String>,
    /// Its native agent session, where there is one.
    pub session_id: Option<String>,
    /// The agent instance baton runs it as (`baton agent ls`), if baton
    /// started it.
    #[serde(default)]
    pub instance: Option<String>,
    pub current_task: Option<String>,
    pub local_changes: Option<LocalChanges>,
    pub context_usage_percent: Option<u8>,
}

/// The lead attached to the team.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lead {
    /// The lead's session (its agent CLI's, or `--session`).
    pub session_id: String,
    /// Where it attached from (host and process).
    pub owner: String,
    pub attached_at: Timestamp,
}

/// A consolidation under way.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Consolidation {
    pub started_at: Timestamp,
    /// The commit message (the same on every retry unless a retry gives a
    /// new one).
    pub message: String,
    /// HEAD when it started: the last good commit an abort goes back to.
    pub base: Option<String>,
    /// The checks every run of it runs before committing (`--check`, else
    /// `[teams] checks` when it started; a retry's `--check` replaces
    /// them). `None`: recorded before baton kept them.
    #[serde(default)]
    pub checks: Option<Vec<String>>,
    /// The teammates' branches already merged into the project's work
    /// tree, at the commits merged: the commit's parents besides HEAD.
    #[serde(default)]
    pub merged: Vec<MergedBranch>,
}

/// A teammate's branch merged by a consolidation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MergedBranch {
    /// Whose it is (`None`: named by a checkpoint of a task nobody has).
    pub teammate: Option<String>,
    pub branch: String,
    /// Its tip when it was merged.
    pub commit: String,
}

/// A team as its journal leaves it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Team {
    pub id: TeamId,
    pub schema_version: u32,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    pub status: TeamStatus,
    pub lead: Option<Lead>,
    /// When a lead silent for too long was noticed (zombie mode began);
    /// kept until a lead attaches again.
    pub lead_timeout_detected_at: Option<Timestamp>,
    pub teammates: BTreeMap<String, Teammate>,
    /// In the order they were added.
    pub tasks: Vec<TeamTask>,
    /// Files the team declared as facts, with their SHA-256 when declared.
    #[serde(default)]
    pub facts: BTreeMap<String, String>,
    pub consolidation: Option<Consolidation>,
    /// The commit of the last consolidation, and when it was made.
    pub last_good_commit: Option<String>,
    pub last_consolidated_at: Option<Timestamp>,
    /// When the team was imported into this store from a git copy (`team
    /// import`): its members were never heard from here before, so a lead
    /// timeout counts from then.
    #[serde(default)]
    pub imported_at: Option<Timestamp>,
    /// The journal's last sequence number.
    pub last_seq: u64,
}

impl Team {
    pub fn task(&self, id: &str) -> Option<&TeamTask> {
        self.tasks.iter().find(|t| t.id == id)
    }

    fn task_mut(&mut self, id: &str) -> Option<&mut TeamTask> {
        self.tasks.iter_mut().find(|t| t.id == id)
    }

    /// How many tasks are in each status.
    pub fn task_counts(&self) -> BTreeMap<&'static str, usize> {
        let mut m = BTreeMap::new();
        for t in &self.tasks {
            *m.entry(t.status.as_str()).or_insert(0) += 1;
        }
        m
    }
}

/// A teammate as a team is created or joined.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NewTeammate {
    pub name: String,
    pub role: Role,
    pub agent: Option<String>,
}

/// A task as it is added.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NewTask {
    pub id: String,
    pub title: String,
    #[serde(default)]
    pub dependencies: Vec<String>,
}

/// What happened to a team.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Event {
    Created {
        lead: Lead,
        teammates: Vec<NewTeammate>,
        tasks: Vec<NewTask>,
        #[serde(default)]
        facts: BTreeMap<String, String>,
    },
    LeadAttached {
        lead: Lead,
        /// The lead it replaced (silent past the replace threshold).
        replaced: Option<String>,
    },
    LeadTimeoutDetected {
        /// When the lead was last seen.
        last_seen: Option<Timestamp>,
    },
    TeammateAdded {
        teammate: NewTeammate,
    },
    /// baton started the teammate as agent instance `instance`.
    TeammateStarted {
        name: String,
        instance: String,
    },
    TeammateReported {
        name: String,
        session_id: Option<String>,
        local_changes: Option<LocalChanges>,
        context_usage_percent: Option<u8>,
    },
    TaskAdded {
        task: NewTask,
    },
    TaskAssigned {
        task: String,
        to: String,
    },
    TaskStarted {
        task: String,
        by: String,
    },
    TaskBlocked {
        task: String,
        by: String,
        reason: String,
    },
    TaskCompleted {
        task: String,
        by: String,
    },
    TaskCheckpointed {
        task: String,
        by: String,
        checkpoint: Checkpoint,
    },
    TaskReassigned {
        task: String,
        from: Option<String>,
        to: String,
        forced: bool,
    },
    /// The lead's choice for a teammate's work after zombie mode.
    ZombieResolved {
        teammate: String,
        choice: String,
        /// Where what a roll back replaced was saved.
        saved: Option<String>,
        head: Option<String>,
        /// The branch it was about.
        #[serde(default)]
        branch: Option<String>,
    },
    ConsolidationStarted {
        message: String,
        base: Option<String>,
        #[serde(default)]
        checks: Option<Vec<String>>,
    },
    /// A retry gave a new message or new checks.
    ConsolidationAmended {
        message: Option<String>,
        checks: Option<Vec<String>>,
    },
    /// These branches were merged into the project's work tree.
    ConsolidationMerged {
        merged: Vec<MergedBranch>,
    },
    ConsolidationCommitted {
        commit: String,
    },
    ConsolidationAborted {
        back_to: Option<String>,
        reopened: Vec<String>,
    },
    /// Rebuilt in this store from a git copy at `from`.
    Imported {
        from: String,
    },
    Completed {
        /// The tasks left open (`team complete --force`).
        #[serde(default)]
        open: Vec<String>,
    },
}

impl Event {
    /// Its kind as the journal names it (`task_started`, …).
    pub fn kind(&self) -> String {
        serde_json::to_value(self)
            .ok()
            .and_then(|v| v["kind"].as_str().map(str::to_string))
            .unwrap_or_default()
    }
}

/// A message as it is sent. `msg_id` makes sending idempotent: the same id
/// sent again (a retry, a partition healed) is stored once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NewMessage {
    pub msg_id: String,
    pub from: String,
    /// A teammate's name, `lead`, or `*` for everyone.
    pub to: String,
    #[serde(rename = "type")]
    pub kind: MessageType,
    pub subject: String,
    pub body: String,
}

/// A message in a team's mailbox: its place `seq` (per team, gapless,
/// given by the store), the store's time it arrived, and who acknowledged it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    pub msg_id: String,
    pub seq: u64,
    pub from: String,
    pub to: String,
    pub ts_ms: i64,
    #[serde(rename = "type")]
    pub kind: MessageType,
    pub subject: String,
    pub body: String,
    pub acked_by: Vec<String>,
}

impl MessageType {
    pub fn as_str(self) -> &'static str {
        match self {
            MessageType::Info => "info",
            MessageType::Question => "question",
            MessageType::Challenge => "challenge",
            MessageType::Resolution => "resolution",
        }
    }
}

/// One journal record of a team.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    pub seq: u64,
    pub ts: Timestamp,
    pub event: Event,
}

/// What is asked of a team.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    Create {
        lead: Lead,
        teammates: Vec<NewTeammate>,
        tasks: Vec<NewTask>,
        facts: BTreeMap<String, String>,
    },
    /// A lead attaches. `lead_silent_ms`: how long the attached lead has
    /// been silent by the store's clock (`None`: never seen).
    Attach {
        lead: Lead,
        lead_silent_ms: Option<i64>,
        replace_after_ms: i64,
    },
    /// The lead has been silent `silent_ms` (past the timeout).
    LeadTimedOut {
        last_seen: Option<Timestamp>,
    },
    AddTeammate(NewTeammate),
    Started {
        name: String,
        instance: String,
    },
    Report {
        name: String,
        session_id: Option<String>,
        local_changes: Option<LocalChanges>,
        context_usage_percent: Option<u8>,
    },
    AddTask(NewTask),
    Assign {
        task: String,
        to: String,
    },
    /// `by` starts (or claims, when it is not assigned) the task.
    Start {
        task: String,
        by: String,
    },
    Block {
        task: String,
        by: String,
        reason: String,
    },
    Complete {
        task: String,
        by: String,
    },
    Checkpoint {
        task: String,
        by: String,
        files_modified: Vec<String>,
        local_status: LocalStatus,
        git_branch: Option<String>,
        head: Option<String>,
    },
    /// `owner_online`: the current owner's liveness is online.
    Reassign {
        task: String,
        to: String,
        force: bool,
        owner_online: bool,
    },
    ResolveZombie {
        teammate: String,
        choice: String,
        saved: Option<String>,
        head: Option<String>,
        branch: Option<String>,
    },
    StartConsolidation {
        message: String,
        base: Option<String>,
        checks: Vec<String>,
    },
    /// A retry with a new message or new checks (`None`: kept).
    AmendConsolidation {
        message: Option<String>,
        checks: Option<Vec<String>>,
    },
    /// Branches merged into the project's work tree.
    ConsolidationMerged {
        merged: Vec<MergedBranch>,
    },
    ConsolidationCommitted {
        commit: String,
    },
    AbortConsolidation,
    /// `team import`: the team now lives in this store too.
    Imported {
        from: String,
    },
    /// `team complete`: the team becomes read-only. Refused while tasks are
    /// open unless `force`.
    Finish {
        force: bool,
    },
}

/// Why a team refused an input: a stable code, what was wrong and what to
/// do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct TeamError {
    pub code: &'static str,
    pub message: String,
    pub hint: String,
    /// The refusal may pass by itself (another lead may go silent):
    /// exit 1 rather than 2.
    pub transient: bool,
}

#[cfg(test)]
mod tests;
