//! `baton session …`: the markdown session logs.

use clap::{Args, Subcommand};
use std::path::PathBuf;

#[derive(Debug, Subcommand)]
pub enum SessionCommand {
    /// List the session logs under .baton/sessions: id, status, phases, agents, tokens.
    Ls(SessionLsArgs),
    /// Print a session log (a session id, or a log's path).
    Show(SessionShowArgs),
    /// Continue a session log as a task: at its resume_point, on a fresh clone too.
    Resume(SessionResumeArgs),
    /// Draft a workflow from a session log: a phase per heading, agents, tools as hints, loops.
    Codify(SessionCodifyArgs),
    /// Find sessions in the index (.baton/index.toon) by status, agent, dates and text.
    Query(SessionQueryArgs),
    /// Learning cases (JSON Lines) from a log's errors and a person's corrections.
    Learn(SessionLearnArgs),
    /// A session's tokens per phase, split into parts over [sessions] split_tokens, each phase routed fast or strong.
    Plan(SessionShowArgs),
}

#[derive(Debug, Args)]
pub struct SessionLearnArgs {
    /// A session id or the path of a log.
    pub session: String,
    /// The kind of case: puzzle (context, what went wrong, the correction, the outcome).
    #[arg(long = "type", default_value = "puzzle")]
    pub kind: String,
    /// records (default) or chat (system/user/assistant messages, for fine-tuning).
    #[arg(long, default_value = "records")]
    pub format: String,
    /// Write to this file instead of stdout (appended to, one case per line).
    #[arg(long, short)]
    pub output: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct SessionQueryArgs {
    /// active, completed, failed, paused or crashed.
    #[arg(long)]
    pub status: Option<String>,
    /// An agent that took part (its name, without the version).
    #[arg(long)]
    pub agent: Option<String>,
    /// Started at or after this time or date (RFC 3339, e.g. 2026-11-20).
    #[arg(long)]
    pub since: Option<String>,
    /// Started at or before this time or date.
    #[arg(long)]
    pub until: Option<String>,
    /// Text in the id, title, workflow or phase names (any case).
    #[arg(long)]
    pub text: Option<String>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct SessionLsArgs {
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct SessionShowArgs {
    /// A session id (its log, else the task of that id) or the path of a log.
    pub session: String,
    /// Print what the log says as JSON (frontmatter, phases, sections).
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct SessionResumeArgs {
    /// A session id or the path of a log (copied from elsewhere, or written by hand).
    pub session: String,
    /// The workflow to continue in (default: the log's, else one codified from it).
    #[arg(long)]
    pub workflow: Option<String>,
    /// The new task's id (default: the log's session id).
    #[arg(long)]
    pub id: Option<String>,
    /// Run the agent phases on this agent.
    #[arg(long)]
    pub agent: Option<String>,
    /// Run the shell commands ([!command]) of a log this project has no
    /// workflow for; without it such a log is refused and its commands
    /// are listed.
    #[arg(long)]
    pub run_commands: bool,
}

#[derive(Debug, Args)]
pub struct SessionCodifyArgs {
    /// A session id or the path of a log.
    pub session: String,
    /// Where to write the workflow (its file name is its name), e.g. .baton/workflows/fix-bug.toml.
    #[arg(long, short)]
    pub output: PathBuf,
    /// Go through the phases one by one: keep, rename or drop each.
    #[arg(long)]
    pub interactive: bool,
    /// Have this agent clean the draft up (the draft is kept if its answer does not load).
    #[arg(long, value_name = "AGENT")]
    pub refine: Option<String>,
}

/// `baton inbox`: what waits on a person.
#[derive(Debug, Args)]
pub struct InboxArgs {
    #[command(subcommand)]
    pub command: Option<InboxCommand>,
    /// Print JSON (the open items, or what an answer did).
    #[arg(long, global = true)]
    pub json: bool,
    /// List answered items too.
    #[arg(long)]
    pub all: bool,
}

#[derive(Debug, Subcommand)]
pub enum InboxCommand {
    /// Answer a decision with one of its options (a task waiting in `wait = { human }` runs on).
    Answer(InboxAnswerArgs),
    /// Approve what an agent asked to do.
    Approve(InboxIdArgs),
    /// Deny what an agent asked to do.
    Deny(InboxDenyArgs),
    /// Acknowledge a notification (it leaves the open items).
    Ack(InboxIdArgs),
}

#[derive(Debug, Args)]
pub struct InboxAnswerArgs {
    /// The item's id, from `baton inbox`.
    pub id: String,
    /// The answer: one of the item's options.
    pub choice: String,
    /// Who answers (default: $USER).
    #[arg(long)]
    pub by: Option<String>,
}

#[derive(Debug, Args)]
pub struct InboxIdArgs {
    pub id: String,
    #[arg(long)]
    pub by: Option<String>,
}

#[derive(Debug, Args)]
pub struct InboxDenyArgs {
    pub id: String,
    /// Why, for the agent.
    #[arg(long)]
    pub reason: Option<String>,
    #[arg(long)]
    pub by: Option<String>,
}

/// `baton status`: the active sessions, live.
#[derive(Debug, Args)]
pub struct StatusArgs {
    /// Print one line for a tmux status bar: `[1] main/claude  [2] feat/auth/codex  |  2 inbox`.
    #[arg(long, conflicts_with = "json")]
    pub line: bool,
    /// Print the active sessions as JSON, once.
    #[arg(long)]
    pub json: bool,
}
