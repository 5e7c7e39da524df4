//! Coding and review agent instances: the pure rules of the review loop.
//!
//! A coding instance works in its own worktree; when it asks for a review
//! (`request_review`), a review instance works on a fork of its branch and
//! either merges back with feedback (`merge_back`) or opens a pull request
//! (`push_to_github`); a coding instance may also open one itself
//! (`create_pr`). As for tasks, [`decide`] checks an [`Input`] against the
//! rules and returns the events it causes (or a typed [`InstanceError`]),
//! and [`apply`] folds an event into the [`Instances`]: no IO, no clock, no
//! randomness; ids and times are passed in.
//!
//! This file holds the types; the rules are in `instance/decide.rs`, the
//! folding of events in `instance/apply.rs`.

mod apply;
mod decide;

pub use apply::{apply, replay};
pub use decide::{decide, due};

use crate::time::Timestamp;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// An instance id: the rules of a task id (it names the branch
/// `baton/<id>` and the tmux session).
pub type InstanceId = crate::ids::TaskId;

/// What an instance does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    Coding,
    Review,
}

/// Where an instance is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Created; its worktree, session and agent are being set up.
    Started,
    Working,
    /// A coding instance whose review is in flight.
    ReviewRequested,
    /// A coding instance whose pull request is open.
    PrCreated,
    PrMerged,
    PrClosed,
    /// A workflow phase's instance whose work is done (its agent finished,
    /// no review required and none in flight): its phase passed.
    Finished,
    Terminated,
    Failed,
}

impl Status {
    /// Whether the instance has ended: nothing moves it any more.
    pub fn ended(self) -> bool {
        matches!(
            self,
            Status::PrMerged
                | Status::PrClosed
                | Status::Finished
                | Status::Terminated
                | Status::Failed
        )
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Status::Started => "started",
            Status::Working => "working",
            Status::ReviewRequested => "review_requested",
            Status::PrCreated => "pr_created",
            Status::PrMerged => "pr_merged",
            Status::PrClosed => "pr_closed",
            Status::Finished => "finished",
            Status::Terminated => "terminated",
            Status::Failed => "failed",
        }
    }
}

/// A coding instance's phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CodingPhase {
    Initializing,
    Working,
    ReviewRequested,
    PrCreated,
    Terminated,
    Cleanup,
}

/// A review instance's phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReviewPhase {
    Initializing,
    Working,
    MergeBack,
    PushToGithub,
    Cleanup,
}

/// What a review decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    MergeBack,
    PushToGithub,
}

/// What a coding instance is given.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CodingConfig {
    pub base_branch: String,
    /// The branch it works on (`baton/<id>` when not given).
    pub target_branch: Option<String>,
    /// What the agent is to do: custom instructions, or what is added to
    /// the GitHub issue's text (empty: the issue alone).
    pub instructions: String,
    pub require_review: bool,
    pub max_reviews: u32,
    pub execution_timeout_ms: u64,
    /// The agent (`[agents.NAME]`) that runs it (the project's default
    /// when not given).
    #[serde(default)]
    pub agent: Option<String>,
    /// The GitHub issue it works on, as read when it was spawned.
    #[serde(default)]
    pub issue: Option<GithubIssue>,
    /// Standing instructions given ahead of the work (the role, the
    /// house rules).
    #[serde(default)]
    pub system_prompt: Option<String>,
    /// The workflow phase it was started for (`instance = { … }`): it ends
    /// with that phase's work, or with its task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub for_phase: Option<ForPhase>,
}

/// The phase of a task an instance works for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ForPhase {
    pub task: crate::ids::TaskId,
    pub phase: String,
}

/// A GitHub issue, as a coding instance was given it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GithubIssue {
    pub number: u32,
    pub title: String,
    pub body: String,
    pub url: String,
}

impl CodingConfig {
    /// What the agent is asked to do: the issue (number, title, body),
    /// then the instructions.
    pub fn task(&self) -> String {
        let mut s = String::new();
        if let Some(i) = &self.issue {
            s.push_str(&format!(
                "GitHub issue #{}: {}\n{}\n",
                i.number, i.title, i.url
            ));
            if !i.body.trim().is_empty() {
                s.push_str(&format!("\n{}\n", i.body.trim()));
            }
            if !self.instructions.trim().is_empty() {
                s.push('\n');
            }
        }
        s.push_str(&self.instructions);
        s
    }
}

/// What a review instance is given.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReviewConfig {
    pub review_prompt: Option<String>,
    pub preserve_changes: bool,
    pub timeout_ms: u64,
    /// The agent that reviews (its parent's when not given).
    #[serde(default)]
    pub agent: Option<String>,
}

/// The resources an instance holds, recorded when allocated.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Resources {
    pub worktree_path: Option<String>,
    pub session_name: Option<String>,
    pub branch: Option<String>,
    pub agent_session_id: Option<String>,
    /// Where its tmux session runs (host, boot and PID namespace of the
    /// process that made it): only there can the session be seen, judged
    /// gone, attached to or ended. `None` for headless instances and in
    /// records from before baton kept it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_host: Option<crate::lease::LocalHost>,
}

/// An opened pull request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PullRequest {
    pub number: u32,
    pub url: String,
}

/// The state of a coding instance.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CodingState {
    pub phase: CodingPhase,
    /// Reviews that ended with a decision (merged back or pushed).
    pub review_count: u32,
    pub max_reviews: u32,
    pub current_review_instance_id: Option<InstanceId>,
    pub last_activity: Option<Timestamp>,
    pub last_error: Option<String>,
    pub failure_reason: Option<String>,
    pub pull_request: Option<PullRequest>,
}

/// The state of a review instance.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReviewState {
    pub phase: ReviewPhase,
    pub parent_instance_id: InstanceId,
    /// Which review of its parent this is (1-based).
    pub iteration: u32,
    pub decision: Option<Decision>,
    pub decision_reason: Option<String>,
    pub feedback_delivered: bool,
}

/// An instance's kind-specific state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum State {
    Coding(CodingState),
    Review(ReviewState),
}

/// An instance's configuration, by kind.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Config {
    Coding(CodingConfig),
    Review(ReviewConfig),
}

/// One coding or review instance.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Instance {
    pub id: InstanceId,
    pub status: Status,
    pub state: State,
    pub resources: Resources,
    pub config: Config,
    pub started_at: Timestamp,
    pub updated_at: Timestamp,
    pub terminated_at: Option<Timestamp>,
    /// Why it was terminated or failed.
    pub end_reason: Option<String>,
    /// The tasks that ran its agent, one per turn, oldest first: the
    /// first with its instructions, each later one with a review's
    /// feedback, continuing the agent's native session.
    #[serde(default)]
    pub turns: Vec<crate::ids::TaskId>,
}

impl Instance {
    /// The instance as `--json` and the API show it: its stored form, with
    /// every time written as RFC 3339 UTC (stored as epoch milliseconds).
    pub fn to_json(&self) -> serde_json::Value {
        let mut v = serde_json::to_value(self).expect("an instance is JSON");
        let rfc3339 = |v: &mut serde_json::Value| {
            if let Some(ms) = v.as_i64() {
                *v = serde_json::Value::String(Timestamp(ms).rfc3339());
            }
        };
        for key in ["started_at", "updated_at", "terminated_at"] {
            if let Some(t) = v.get_mut(key) {
                rfc3339(t);
            }
        }
        if let Some(t) = v.pointer_mut("/state/last_activity") {
            rfc3339(t);
        }
        v
    }

    pub fn kind(&self) -> Kind {
        match self.state {
            State::Coding(_) => Kind::Coding,
            State::Review(_) => Kind::Review,
        }
    }

    pub fn coding(&self) -> Option<&CodingState> {
        match &self.state {
            State::Coding(c) => Some(c),
            State::Review(_) => None,
        }
    }

    pub fn review(&self) -> Option<&ReviewState> {
        match &self.state {
            State::Review(r) => Some(r),
            State::Coding(_) => None,
        }
    }

    /// When it has run too long: its execution timeout (coding) or its
    /// review timeout, from its start.
    pub fn deadline(&self) -> Timestamp {
        let ms = match &self.config {
            Config::Coding(c) => c.execution_timeout_ms,
            Config::Review(r) => r.timeout_ms,
        };
        self.started_at
            .plus_millis(i64::try_from(ms).unwrap_or(i64::MAX))
    }
}

/// Every instance, by id, and the journal position they reflect.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Instances {
    pub by_id: BTreeMap<InstanceId, Instance>,
    pub last_seq: u64,
}

impl Instances {
    pub fn get(&self, id: &InstanceId) -> Option<&Instance> {
        self.by_id.get(id)
    }

    /// The reviews spawned for `parent`, oldest first.
    /// The instances that differ from `before` (new or changed): what a
    /// commit writes.
    pub fn changed_since<'a>(&'a self, before: &Instances) -> Vec<&'a Instance> {
        self.by_id
            .values()
            .filter(|i| before.by_id.get(&i.id) != Some(*i))
            .collect()
    }

    pub fn reviews_of<'a>(&'a self, parent: &'a InstanceId) -> impl Iterator<Item = &'a Instance> {
        self.by_id
            .values()
            .filter(move |i| i.review().is_some_and(|r| &r.parent_instance_id == parent))
    }
}

/// The typed errors of the review loop: shown with a hint by the CLI and
/// returned to MCP callers by these exact names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ErrorCode {
    InvalidConfiguration,
    ResourceAllocationFailed,
    MaxReviewsExceeded,
    ExecutionTimeout,
    CleanupFailed,
    InstanceNotFound,
    InvalidState,
    ParentNotFound,
    ParentInvalidState,
    ForkFailed,
    MergeConflict,
    PrCreationFailed,
    ReviewInProgress,
    ReviewTimeout,
    ParentUpdateFailed,
    /// A tool call's arguments do not fit the tool (a wrong type, a
    /// missing value, a text over the size limit).
    InvalidArguments,
}

impl ErrorCode {
    pub const ALL: [ErrorCode; 16] = [
        ErrorCode::InvalidConfiguration,
        ErrorCode::ResourceAllocationFailed,
        ErrorCode::MaxReviewsExceeded,
        ErrorCode::ExecutionTimeout,
        ErrorCode::CleanupFailed,
        ErrorCode::InstanceNotFound,
        ErrorCode::InvalidState,
        ErrorCode::ParentNotFound,
        ErrorCode::ParentInvalidState,
        ErrorCode::ForkFailed,
        ErrorCode::MergeConflict,
        ErrorCode::PrCreationFailed,
        ErrorCode::ReviewInProgress,
        ErrorCode::ReviewTimeout,
        ErrorCode::ParentUpdateFailed,
        ErrorCode::InvalidArguments,
    ];

    /// The code as callers see it, e.g. `WORKFLOW_MERGE_CONFLICT`.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::InvalidConfiguration => "WORKFLOW_INVALID_CONFIGURATION",
            ErrorCode::ResourceAllocationFailed => "WORKFLOW_RESOURCE_ALLOCATION_FAILED",
            ErrorCode::MaxReviewsExceeded => "WORKFLOW_MAX_REVIEWS_EXCEEDED",
            ErrorCode::ExecutionTimeout => "WORKFLOW_EXECUTION_TIMEOUT",
            ErrorCode::CleanupFailed => "WORKFLOW_CLEANUP_FAILED",
            ErrorCode::InstanceNotFound => "WORKFLOW_INSTANCE_NOT_FOUND",
            ErrorCode::InvalidState => "WORKFLOW_INVALID_STATE",
            ErrorCode::ParentNotFound => "WORKFLOW_PARENT_NOT_FOUND",
            ErrorCode::ParentInvalidState => "WORKFLOW_PARENT_INVALID_STATE",
            ErrorCode::ForkFailed => "WORKFLOW_FORK_FAILED",
            ErrorCode::MergeConflict => "WORKFLOW_MERGE_CONFLICT",
            ErrorCode::PrCreationFailed => "WORKFLOW_PR_CREATION_FAILED",
            ErrorCode::ReviewInProgress => "WORKFLOW_REVIEW_IN_PROGRESS",
            ErrorCode::ReviewTimeout => "WORKFLOW_REVIEW_TIMEOUT",
            ErrorCode::ParentUpdateFailed => "WORKFLOW_PARENT_UPDATE_FAILED",
            ErrorCode::InvalidArguments => "WORKFLOW_INVALID_ARGUMENTS",
        }
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A request the rules refuse: its code, what was wrong and what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{code}: {message}")]
pub struct InstanceError {
    pub code: ErrorCode,
    pub message: String,
    pub hint: String,
}

/// What the engine (or an MCP tool call, a webhook, a person) reports or
/// asks of the instances.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    /// A new coding instance.
    Spawn {
        id: InstanceId,
        config: CodingConfig,
    },
    /// Its worktree, session and agent are up.
    Allocated {
        id: InstanceId,
        resources: Resources,
    },
    /// The agent did something (keeps `last_activity`).
    Activity { id: InstanceId },
    /// The agent recorded where its work stands (`checkpoint`).
    Checkpoint { id: InstanceId, note: String },
    /// A turn of its agent starts as task `task`.
    Turn {
        id: InstanceId,
        task: crate::ids::TaskId,
    },
    /// `request_review`: a review instance `review` on a fork of
    /// `parent`'s branch.
    RequestReview {
        parent: InstanceId,
        review: InstanceId,
        config: ReviewConfig,
    },
    /// `merge_back`: the review's branch was merged into its parent's.
    MergeBack {
        review: InstanceId,
        feedback: String,
    },
    /// The feedback of a merge-back reached the parent's agent.
    FeedbackDelivered { review: InstanceId },
    /// `push_to_github` (a review) or `create_pr` (a coding instance): the
    /// branch is pushed and the pull request opened.
    PrCreated { id: InstanceId, pr: PullRequest },
    /// The pull request was merged or closed (a webhook, a person).
    PrClosed { id: InstanceId, merged: bool },
    /// Ended by a person or a parent's end; its children end with it.
    Terminate { id: InstanceId, reason: String },
    /// A workflow phase's instance whose work is done: it ends with its
    /// phase (`working`, no review in flight).
    Finish { id: InstanceId, reason: String },
    /// Something failed that the instance cannot go on from.
    Fail {
        id: InstanceId,
        code: ErrorCode,
        reason: String,
    },
    /// Its deadline passed ([`due`] says which).
    TimedOut { id: InstanceId },
    /// Its resources could not all be removed (kept, and said).
    CleanupFailed { id: InstanceId, error: String },
}

/// What happened to the instances: the journal's entries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Event {
    Spawned {
        id: InstanceId,
        config: Config,
        /// A review's parent and which review of it this is.
        parent: Option<(InstanceId, u32)>,
    },
    Allocated {
        id: InstanceId,
        resources: Resources,
    },
    Activity {
        id: InstanceId,
    },
    Checkpoint {
        id: InstanceId,
        note: String,
    },
    Turn {
        id: InstanceId,
        task: crate::ids::TaskId,
    },
    ReviewRequested {
        parent: InstanceId,
        review: InstanceId,
    },
    MergedBack {
        review: InstanceId,
        parent: InstanceId,
        feedback: String,
    },
    FeedbackDelivered {
        review: InstanceId,
    },
    PrCreated {
        id: InstanceId,
        /// The coding instance that now has the pull request (`id` itself,
        /// or the parent of review `id`).
        owner: InstanceId,
        pr: PullRequest,
    },
    PrClosed {
        id: InstanceId,
        merged: bool,
    },
    Terminated {
        id: InstanceId,
        reason: String,
    },
    Finished {
        id: InstanceId,
        reason: String,
    },
    Failed {
        id: InstanceId,
        code: ErrorCode,
        reason: String,
    },
    CleanupFailed {
        id: InstanceId,
        error: String,
    },
}

impl Event {
    /// The instance the event is about (for a review's decision, the
    /// review).
    pub fn instance(&self) -> &InstanceId {
        match self {
            Event::Spawned { id, .. }
            | Event::Allocated { id, .. }
            | Event::Activity { id }
            | Event::Checkpoint { id, .. }
            | Event::Turn { id, .. }
            | Event::PrCreated { id, .. }
            | Event::PrClosed { id, .. }
            | Event::Terminated { id, .. }
            | Event::Finished { id, .. }
            | Event::Failed { id, .. }
            | Event::CleanupFailed { id, .. } => id,
            Event::ReviewRequested { parent, .. } => parent,
            Event::MergedBack { review, .. } | Event::FeedbackDelivered { review } => review,
        }
    }

    /// The event's kind, as the journal names it.
    pub fn kind(&self) -> &'static str {
        match self {
            Event::Spawned { .. } => "spawned",
            Event::Allocated { .. } => "allocated",
            Event::Activity { .. } => "activity",
            Event::Checkpoint { .. } => "checkpoint",
            Event::Turn { .. } => "turn",
            Event::ReviewRequested { .. } => "review_requested",
            Event::MergedBack { .. } => "merged_back",
            Event::FeedbackDelivered { .. } => "feedback_delivered",
            Event::PrCreated { .. } => "pr_created",
            Event::PrClosed { .. } => "pr_closed",
            Event::Terminated { .. } => "terminated",
            Event::Finished { .. } => "finished",
            Event::Failed { .. } => "failed",
            Event::CleanupFailed { .. } => "cleanup_failed",
        }
    }
}

/// An event at its place in the instances' journal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    pub seq: u64,
    pub ts: Timestamp,
    pub event: Event,
}
