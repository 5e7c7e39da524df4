//! Session logs: a task (or an agent session) as a readable markdown file.
//!
//! A log is rendered from the journal ([`journal::of_task`]), never the
//! other way round, and read back by [`parse`] into the same model, so a
//! log copied to another clone, or written by hand, can be resumed,
//! codified into a workflow or mined for learning cases. Rendering then
//! parsing then rendering gives the same bytes (a property test holds
//! this); a hand-edited file is read as far as it makes sense, and a broken
//! one is refused with the line at fault.
//!
//! ```markdown
//! ---
//! type: session
//! session_id: fix-login
//! status: completed
//! participants: [claude@2.0.14]
//! tokens_used: 12400
//! subagents: []
//! resume_point: review
//! ---
//! # Fix the login form
//!
//! ## plan @claude #dev
//! The agent's messages, as prose.
//!
//! **Tool calls:**
//! - `Read src/login.rs` → 120 lines
//!
//! > [!summary] passed
//! > The plan.
//! ```
//!
//! The layout: `frontmatter.rs` (the YAML block, a subset written and
//! read here), `render.rs`, `parse.rs`, `journal.rs` (from a task's
//! journal), `extract.rs` (what a log says: phases, summaries, errors and
//! corrections).

pub mod codify;
mod extract;
mod frontmatter;
pub mod index;
pub mod journal;
mod parse;
pub mod plan;
mod render;
pub mod team;
#[cfg(test)]
mod tests;

pub use extract::{Correction, LogPhase, corrections, phases, summary_of};
pub use parse::{ParseError, parse};
pub use render::{render, section as render_section};

/// How an `Adopted` event's source begins when a task continues a session
/// log (`baton session resume`): its next agent gets the brief.
pub const FROM_LOG: &str = "session log";

/// A whole session log.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize)]
pub struct SessionLog {
    pub front: Front,
    /// The `# ` heading: the task's title.
    pub title: String,
    /// What comes before the first section (the rest of the description).
    pub intro: Vec<Block>,
    pub sections: Vec<Section>,
}

/// The frontmatter.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize)]
pub struct Front {
    pub session_id: String,
    /// The workflow the task ran (baton's own key: resuming needs it).
    pub workflow: Option<String>,
    /// RFC 3339.
    pub started: Option<String>,
    pub ended: Option<String>,
    pub status: LogStatus,
    pub channel: Option<String>,
    /// `agent` or `agent@version`, in the order they first ran.
    pub participants: Vec<String>,
    pub model: Option<String>,
    pub tokens_used: u64,
    pub subagents: Vec<Subagent>,
    /// The phase to continue at; none when nothing is left.
    pub resume_point: Option<String>,
    /// The task's labels (`task-id`, `repository`, …).
    pub labels: Vec<(String, String)>,
    /// The task's flags and their values (`--flag`, the workflow's
    /// `[flags]`), which its phases' `when` conditions were judged on.
    pub flags: Vec<(String, String)>,
    /// Keys baton does not know, as written (a hand edit keeps them).
    pub extra: Vec<(String, String)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LogStatus {
    #[default]
    Active,
    Completed,
    Failed,
    Paused,
    /// The task's runner died while it ran (CRASHED, as `baton ls` shows
    /// it): written by whoever finds it so, since the runner cannot.
    Crashed,
    /// Stopped by a person (`baton cancel`): not a failure.
    Cancelled,
    /// Waiting for a worker (`baton run --queue`).
    Queued,
}

impl LogStatus {
    /// Every status, as a sentence names them.
    pub const NAMES: &str = "active, queued, paused, crashed, failed, completed, cancelled";

    pub fn as_str(self) -> &'static str {
        match self {
            LogStatus::Active => "active",
            LogStatus::Completed => "completed",
            LogStatus::Failed => "failed",
            LogStatus::Paused => "paused",
            LogStatus::Crashed => "crashed",
            LogStatus::Cancelled => "cancelled",
            LogStatus::Queued => "queued",
        }
    }
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "active" => LogStatus::Active,
            "completed" => LogStatus::Completed,
            "failed" => LogStatus::Failed,
            "paused" => LogStatus::Paused,
            "crashed" => LogStatus::Crashed,
            "cancelled" => LogStatus::Cancelled,
            "queued" => LogStatus::Queued,
            _ => return None,
        })
    }
}

/// The one word a log says for each status `baton ls` shows
/// ([`DisplayStatus`](crate::lease::DisplayStatus), the one list of them).
impl From<crate::lease::DisplayStatus> for LogStatus {
    fn from(d: crate::lease::DisplayStatus) -> Self {
        use crate::lease::DisplayStatus as D;
        match d {
            D::Running => LogStatus::Active,
            D::Queued => LogStatus::Queued,
            D::Waiting => LogStatus::Paused,
            D::Crashed => LogStatus::Crashed,
            D::Failed => LogStatus::Failed,
            D::Complete => LogStatus::Completed,
            D::Cancelled => LogStatus::Cancelled,
        }
    }
}

/// A child session: a CLI's own subagent, or a review agent or teammate.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize)]
pub struct Subagent {
    pub session: String,
    pub agent: String,
    pub model: Option<String>,
    pub tokens: u64,
}

/// One `## <phase> @<agent> #<channel>` section: a phase's attempt or
/// iteration (a phase that runs again gets a section again).
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize)]
pub struct Section {
    pub name: String,
    pub agent: Option<String>,
    pub channel: Option<String>,
    pub blocks: Vec<Block>,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "kind", content = "value", rename_all = "snake_case")]
pub enum Block {
    /// Markdown as the agent wrote it (lines that would read as the log's
    /// own structure are escaped with `\` when rendered).
    Prose(String),
    /// `**Tool calls:**` and one line per call.
    ToolCalls(Vec<ToolLine>),
    Callout(Callout),
}

/// `` - `call` → result ``.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize)]
pub struct ToolLine {
    /// The tool and its arguments in a few words.
    pub call: String,
    /// None: no result came (the run was cut off, or it is still running).
    pub result: Option<String>,
    pub ok: bool,
}

/// `> [!kind] title` and its lines (Obsidian's callouts).
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize)]
pub struct Callout {
    pub kind: String,
    pub title: String,
    pub body: Vec<String>,
}

/// The callout kinds baton writes.
pub mod kind {
    pub const DECISION: &str = "decision";
    pub const ERROR: &str = "error";
    pub const USER: &str = "user";
    pub const SUBAGENT: &str = "subagent";
    pub const SUMMARY: &str = "summary";
    pub const NOTE: &str = "note";
    pub const DECISION_NEEDED: &str = "decision_needed";
    pub const APPROVAL_REQUIRED: &str = "approval_required";
    pub const TASK_COMPLETE: &str = "task_complete";
    /// What a phase's definition holds that its story would not show: the
    /// `when` it ran on (its title), the command it runs (its lines),
    /// what it waits for (its title, the `wait = { … }` table).
    pub const WHEN: &str = "when";
    pub const COMMAND: &str = "command";
    pub const WAIT: &str = "wait";
}

impl Callout {
    pub fn new(kind: &str, title: impl Into<String>, body: &str) -> Callout {
        Callout {
            kind: kind.to_string(),
            title: one_line(&title.into()),
            body: trimmed_lines(&clean(body)),
        }
    }
}

impl Section {
    /// The text of the callouts of `kind`, in order.
    pub fn callouts<'a>(&'a self, kind: &'a str) -> impl Iterator<Item = &'a Callout> + 'a {
        self.blocks.iter().filter_map(move |b| match b {
            Block::Callout(c) if c.kind == kind => Some(c),
            _ => None,
        })
    }
}

/// `s` with `\r` taken out (logs use `\n` only).
pub(crate) fn clean(s: &str) -> String {
    s.replace("\r\n", "\n").replace('\r', "")
}

/// The lines of `s` without the blank ones at its start and end.
pub(crate) fn trimmed_lines(s: &str) -> Vec<String> {
    let lines: Vec<&str> = s.lines().collect();
    let start = lines.iter().position(|l| !l.trim().is_empty());
    let end = lines.iter().rposition(|l| !l.trim().is_empty());
    match (start, end) {
        (Some(a), Some(b)) => lines[a..=b].iter().map(|l| l.to_string()).collect(),
        _ => Vec::new(),
    }
}

/// `s` on one line.
pub(crate) fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}
