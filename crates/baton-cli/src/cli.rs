//! Command-line definitions (clap); no behaviour lives here.

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

mod session;
mod team;
pub use session::*;
pub use team::*;

/// The exit codes, for `baton --help` and the man page.
pub const EXIT_CODES: &str = "\
Exit codes:
  0  done: the task is complete (or the command did what it was asked)
  1  the task failed, was cancelled or was interrupted, or an operational error
  2  bad input: usage, an invalid workflow or config, an unknown task or phase
  3  busy: another live process holds the task's lease (the message names it)
  4  waiting: the task is suspended on a timer, an event or a human

Every command works from any folder inside the project (or with --project DIR).
Workflow files: docs/workflow.md; commands and JSON shapes: docs/cli.md.";

#[derive(Debug, Parser)]
#[command(
    name = "baton",
    version,
    about = "Durable multi-phase workflows for AI coding agents",
    long_about = "baton runs multi-phase workflows (analyze, plan, execute, validate, review, test, ...) with agent CLIs and commands, records every transition in a journal, and resumes exactly where the work stopped after any crash.",
    after_help = "Exit codes: 0 done, 1 failed or error, 2 bad input, 3 busy, 4 waiting (--help says more).",
    after_long_help = EXIT_CODES
)]
pub struct Cli {
    /// The project folder (default: found by walking up to `.baton/`).
    #[arg(long, global = true, env = "BATON_PROJECT", value_name = "DIR")]
    pub project: Option<PathBuf>,
    /// Print only errors.
    #[arg(long, short, global = true, conflicts_with = "verbose")]
    pub quiet: bool,
    /// Print more detail (and debug logs).
    #[arg(long, short, global = true)]
    pub verbose: bool,
    /// How messages and progress are written to stderr: `text` for people,
    /// `json` one object per line (task, phase, attempt, worker) for a log
    /// pipeline. Data on stdout is unchanged.
    #[arg(
        long,
        global = true,
        env = "BATON_LOG_FORMAT",
        value_enum,
        default_value = "text"
    )]
    pub log_format: crate::json_log::LogFormat,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Create `.baton/` here: config.toml, workflows/example.toml and workflows/apex.toml.
    Init(InitArgs),
    /// Start a task and drive it until it completes, fails or waits.
    Run(RunArgs),
    /// Continue a crashed, failed or waiting task (default: the current task).
    Resume(ResumeArgs),
    /// Continue a task on another agent CLI: the brief goes into its memory file and prompt.
    Handoff(HandoffArgs),
    /// Turn a session begun in an agent CLI outside baton into a task, and continue it.
    Import(ImportArgs),
    /// Start a new task from a recorded checkpoint of another; the original stays untouched.
    Fork(ForkArgs),
    /// List tasks: id, workflow, status, last phase, updated, resumable.
    Ls(LsArgs),
    /// Show one task (default: the current task).
    Show(ShowArgs),
    /// Print a task's journal.
    Log(LogArgs),
    /// Stop a task.
    Cancel(IdArg),
    /// Delete a task's record, rendered files and checkpoints.
    Rm(IdArg),
    /// Delete the records of completed tasks, keeping their rendered outputs.
    Clean(CleanArgs),
    /// Check the store, rendered files, leases and checkpoints; repair with --fix.
    Doctor(DoctorArgs),
    /// Coding and review agents in their own git worktrees, with a bounded review loop.
    #[command(subcommand)]
    Agent(AgentCommand),
    /// Serve baton's MCP tools over stdio (agent CLIs start this; see docs/agents.md).
    Mcp(McpArgs),
    /// Run queued tasks (`baton run --queue`), N at a time, until stopped.
    Worker(WorkerArgs),
    /// Hand a GitHub webhook payload to the tasks that wait for it (as `baton serve` does for a delivery).
    Deliver(DeliverArgs),
    /// List the webhook deliveries received, newest first, with what each did.
    Deliveries(DeliveriesArgs),
    /// Show (or clear) each repository's progress record: its task, stage and status.
    Progress(ProgressArgs),
    /// Run a list of tasks one after another, with a durable marker (continue with --resume).
    Play(PlayArgs),
    /// Serve GitHub webhooks that resume the tasks waiting for them, a live dashboard and API, and restart crashed tasks (see docs/server.md).
    Serve(ServeArgs),
    /// Teams: a lead and teammates sharing a task list and a mailbox, re-attachable after any crash.
    #[command(subcommand)]
    Team(TeamCommand),
    /// The active sessions, live in the terminal (--line: one line for a tmux status bar).
    Status(StatusArgs),
    /// What waits on a person across all sessions: agents' decisions and approvals, tasks waiting for an answer.
    Inbox(InboxArgs),
    /// Session logs in markdown (.baton/sessions): list, show, resume from a log, codify into a workflow.
    #[command(subcommand)]
    Session(SessionCommand),
    /// The workspaces of agents by role (`[agents.NAME] role`): list them, remove one.
    #[command(subcommand)]
    Workspace(WorkspaceCommand),
    /// Manage the store: apply migrations, copy a project's history to another store.
    #[command(subcommand)]
    Store(StoreCommand),
    /// Show a real crash and resume in a throw-away git repository.
    Demo(DemoArgs),
    /// Print a shell completion script.
    Completions(CompletionsArgs),
    /// Print the man page (roff).
    Man,
}

#[derive(Debug, Args)]
pub struct InitArgs {
    /// Rewrite config.toml and the example workflows even if they exist, and
    /// create a separate project even inside another one.
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The workflow: `.baton/workflows/WORKFLOW.toml`.
    pub workflow: String,
    /// What the task is about ({{task}} in templates).
    #[arg(value_name = "DESC")]
    pub description: Option<String>,
    /// The task id (default: a slug of the description).
    #[arg(long)]
    pub id: Option<String>,
    /// Set a workflow flag, e.g. --flag tests=false.
    #[arg(long = "flag", value_name = "K=V")]
    pub flags: Vec<String>,
    /// Attach a label, e.g. --label issue=42.
    #[arg(long = "label", value_name = "K=V")]
    pub labels: Vec<String>,
    /// Run every agent phase with this agent.
    #[arg(long)]
    pub agent: Option<String>,
    /// Run in the background and return at once.
    #[arg(long, conflicts_with = "queue")]
    pub detach: bool,
    /// Queue the task for `baton worker` (on any machine sharing the store
    /// and the git remote) instead of running it here; prints its id.
    #[arg(long)]
    pub queue: bool,
    /// Start over, even where the repository's progress record says a
    /// deleted task of this id and workflow got further.
    #[arg(long)]
    pub fresh: bool,
}

#[derive(Debug, Args)]
pub struct WorkerArgs {
    /// How many tasks to run at once.
    #[arg(long, short = 'n', default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=256))]
    pub concurrency: u16,
    /// Exit once no queued task is left to run.
    #[arg(long)]
    pub until_idle: bool,
    /// Claim one task, drive it until it completes, fails or waits, and
    /// exit as a Kubernetes Job understands it (KEDA's ScaledJob): 0 when
    /// it completed or waits for its event (durably; a worker goes on
    /// then), 1 when it failed; with nothing to claim, 0 at once.
    #[arg(long, conflicts_with_all = ["until_idle", "concurrency"])]
    pub once: bool,
    /// On SIGTERM the worker claims nothing more and lets its running
    /// phases finish for this long (then interrupts them and releases
    /// their tasks), releasing each task before its next phase. Keep it
    /// below the pod's terminationGracePeriodSeconds (30s by default).
    #[arg(long, default_value = "25s", value_parser = duration)]
    pub drain_timeout: std::time::Duration,
    /// Answer /healthz (alive), /readyz (the store answers and the worker
    /// claims work) and /metrics (Prometheus) on this address, such as
    /// 0.0.0.0:9090 in a pod. They only read.
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<std::net::SocketAddr>,
}

/// `25s`, `5m`, `1h 30m`.
fn duration(s: &str) -> Result<std::time::Duration, String> {
    humantime::parse_duration(s).map_err(|e| format!("{e}: write it as 25s, 5m or 1h"))
}

#[derive(Debug, Subcommand)]
pub enum StoreCommand {
    /// Apply the store's migrations now (every command also does on start).
    Migrate,
    /// Copy this project's whole history (tasks, journals, definitions) to another
    /// store, then check that nothing was lost. The source is left as it is.
    Copy(StoreCopyArgs),
}

#[derive(Debug, Args)]
pub struct StoreCopyArgs {
    /// The target: postgres://USER@HOST[:PORT]/DB, or the path of an SQLite file.
    #[arg(long, value_name = "URL")]
    pub to: String,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ResumeArgs {
    /// The task (default: the current task).
    pub id: Option<String>,
    /// Rewind to PHASE first (state and, where recorded, the worktree).
    #[arg(long, value_name = "PHASE")]
    pub from: Option<String>,
    /// Run every agent phase with this agent.
    #[arg(long)]
    pub agent: Option<String>,
    /// Adopt the edited workflow definition.
    #[arg(long)]
    pub upgrade: bool,
    /// Hand a queued task that failed (or whose timer is due) back to the
    /// workers instead of running it here (with --upgrade, on the edited
    /// workflow).
    #[arg(long, conflicts_with_all = ["from", "agent", "takeover_from"])]
    pub queue: bool,
    /// Internal: take the lease over from this pid (used by `run --detach`).
    #[arg(long, hide = true, value_name = "PID")]
    pub takeover_from: Option<u32>,
    /// Internal: a restart by `baton serve`'s supervisor, within
    /// [supervisor]'s limits and journaled with its reason.
    #[arg(long, hide = true, conflicts_with_all = ["from", "agent", "upgrade", "takeover_from", "queue"])]
    pub supervised: bool,
}

#[derive(Debug, Args)]
pub struct ImportArgs {
    /// The CLI that wrote the session: claude, codex, gemini, qwen, opencode,
    /// copilot or droid.
    pub cli: String,
    /// Its session file, or its session id (looked up in that CLI's own
    /// folders; OpenCode sessions through `opencode export ID`).
    #[arg(value_name = "FILE_OR_ID")]
    pub session: String,
    /// The workflow that continues it (default: `continue`, one agent phase;
    /// `.baton/workflows/continue.toml` replaces it).
    #[arg(long, default_value = "continue")]
    pub workflow: String,
    /// The task id (default: a slug of the session's first prompt).
    #[arg(long)]
    pub id: Option<String>,
    /// Run its agent phases with this agent (another CLI than the one it
    /// began in, for a handoff).
    #[arg(long)]
    pub agent: Option<String>,
}

#[derive(Debug, Args)]
pub struct HandoffArgs {
    /// The task (default: the current task).
    pub id: Option<String>,
    /// The agent (`[agents.NAME]` in .baton/config.toml) that runs the
    /// remaining phases.
    #[arg(long, value_name = "AGENT")]
    pub to: String,
}

#[derive(Debug, Args)]
pub struct ForkArgs {
    /// The task to fork.
    pub id: String,
    /// The phase the new task starts at.
    #[arg(long, value_name = "PHASE")]
    pub from: String,
    /// The new task's id.
    #[arg(long = "id", value_name = "NEW")]
    pub new_id: String,
}

#[derive(Debug, Args)]
pub struct LsArgs {
    /// Include completed and cancelled tasks.
    #[arg(long, short)]
    pub all: bool,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ShowArgs {
    pub id: Option<String>,
    /// Print the state document (state.json).
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct LogArgs {
    pub id: Option<String>,
    /// Print JSON Lines.
    #[arg(long)]
    pub json: bool,
    /// Keep printing new events until the task stops.
    #[arg(long, short)]
    pub follow: bool,
}

#[derive(Debug, Args)]
pub struct IdArg {
    pub id: String,
}

#[derive(Debug, Args)]
pub struct CleanArgs {
    /// Delete without asking.
    #[arg(long, short)]
    pub yes: bool,
    /// Print JSON (the ids deleted, or that would be).
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct DeliverArgs {
    /// The event type, as GitHub's X-GitHub-Event header says it (`pull_request`).
    pub event: String,
    /// The payload: a JSON file as GitHub posts it (`-` for standard input).
    pub payload: std::path::PathBuf,
    /// The delivery id, as X-GitHub-Delivery says it (default: a new
    /// `manual-…` id). An id already recorded changes nothing.
    #[arg(long)]
    pub delivery: Option<String>,
    /// How a task id is read from a pull request's head branch.
    #[arg(long, default_value = baton_core::webhook::DEFAULT_BRANCH_PATTERN)]
    pub branch_pattern: String,
    /// Print what it did to each task as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct DeliveriesArgs {
    /// How many to list, newest first.
    #[arg(long, default_value_t = 50)]
    pub limit: usize,
    /// Print them as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct PlayArgs {
    /// The tasks: TOML `[[task]]` tables or JSON Lines, each with id,
    /// description and labels.
    #[arg(required_unless_present = "resume")]
    pub file: Option<std::path::PathBuf>,
    /// The workflow every task runs.
    #[arg(long, required_unless_present = "resume")]
    pub workflow: Option<String>,
    /// Start at task N (counted from 1).
    #[arg(long, value_name = "N", conflicts_with = "resume")]
    pub start_from_task: Option<usize>,
    /// Stop after M tasks.
    #[arg(long, value_name = "M")]
    pub max_tasks: Option<usize>,
    /// Continue the unfinished play at the task it stopped at.
    #[arg(long, conflicts_with_all = ["file", "workflow"])]
    pub resume: bool,
}

#[derive(Debug, Args)]
pub struct ProgressArgs {
    /// The repository (`owner/name`, as the task's `repository` label); default: all.
    pub repository: Option<String>,
    /// One task's stage record in the repository.
    #[arg(long, value_name = "ID", requires = "repository")]
    pub task: Option<String>,
    /// Delete the repository's records, or with --task that task's (a
    /// deleted task then starts over).
    #[arg(long, requires = "repository")]
    pub clear: bool,
    /// Print the records as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Subcommand)]
pub enum WorkspaceCommand {
    /// List the workspaces: service, role, agent, branch, the task that worked there last, and whether removing it would lose work.
    Ls(WorkspaceLsArgs),
    /// Remove a workspace (its folder, branch and record); refused when it holds uncommitted or unpushed work, unless --force.
    Rm(WorkspaceRmArgs),
}

#[derive(Debug, Args)]
pub struct WorkspaceLsArgs {
    /// Print them as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct WorkspaceRmArgs {
    /// The workspace's name, as `baton workspace ls` shows it.
    pub name: String,
    /// Remove it even if it holds work (which is saved under refs/baton-saved/NAME/ first).
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Args)]
pub struct McpArgs {
    #[command(subcommand)]
    pub command: Option<McpCommand>,
}

#[derive(Debug, Subcommand)]
pub enum McpCommand {
    /// Make a capability for an agent baton did not start (one on another
    /// machine) to reach `baton serve`'s /mcp as the running attempt of a
    /// task's phase, or as an agent instance; printed once, on stdout.
    Grant(GrantArgs),
}

#[derive(Debug, Args)]
pub struct GrantArgs {
    /// The task whose running phase the agent works in.
    #[arg(long, requires = "phase", conflicts_with = "instance")]
    pub task: Option<String>,
    /// That phase (it must be running now; the capability ends with it).
    #[arg(long, requires = "task")]
    pub phase: Option<String>,
    /// The agent instance the agent is (the capability ends with it).
    #[arg(long)]
    pub instance: Option<String>,
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Where to listen (default: [server] addr, else 127.0.0.1:7777).
    #[arg(long)]
    pub addr: Option<String>,
    /// Make a new API token, keep it in .baton/server.token (readable by
    /// you only) and serve with it; the old one stops working.
    #[arg(long)]
    pub new_token: bool,
}

#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Repair what can be repaired.
    #[arg(long)]
    pub fix: bool,
    /// Print the findings as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Keep the demo repository instead of deleting it.
    #[arg(long)]
    pub keep: bool,
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    pub shell: clap_complete::Shell,
}

#[derive(Debug, Subcommand)]
pub enum AgentCommand {
    /// Start a coding agent in its own worktree on branch baton/<id>, in the background.
    Spawn(AgentSpawnArgs),
    /// List agent instances: id, kind, status, its agent's turn, branch, reviews.
    Ls(AgentLsArgs),
    /// Show one instance: state, resources, turns.
    Show(AgentIdArgs),
    /// Print an instance's journal (and its reviews' requests and decisions).
    Log(AgentIdArgs),
    /// Attach your terminal to an interactive instance's tmux session (detach: Ctrl-b d).
    Attach(AgentAttachArgs),
    /// Ask for a review: a review agent starts on a fork of the coding agent's branch.
    Review(AgentReviewArgs),
    /// End a review: merge its branch into the coding agent's, and send it the feedback.
    MergeBack(AgentMergeBackArgs),
    /// Push the coding agent's branch and open its pull request (from a review: merge it in first).
    Push(AgentPushArgs),
    /// End an instance and its reviews; remove their worktrees unless that would lose work.
    Kill(AgentKillArgs),
    /// Wait until an instance's work is done: its pull request open (exit 0), or it failed (exit 1).
    Wait(AgentIdArgs),
    /// Internal: the process of a workflow's agent phase run as a coding instance.
    #[command(hide = true)]
    Phase(AgentPhaseArgs),
}

#[derive(Debug, Args)]
pub struct AgentPhaseArgs {
    #[arg(long)]
    pub id: String,
    /// The task and phase it works for: the instance ends with them.
    #[arg(long, requires = "phase")]
    pub task: Option<String>,
    #[arg(long, requires = "task")]
    pub phase: Option<String>,
    #[arg(long, value_name = "FILE")]
    pub instructions_file: std::path::PathBuf,
    #[arg(long)]
    pub agent: Option<String>,
    #[arg(long)]
    pub base: Option<String>,
    #[arg(long)]
    pub require_review: Option<bool>,
    #[arg(long)]
    pub max_reviews: Option<u32>,
    #[arg(long, value_name = "MS")]
    pub timeout_ms: Option<u64>,
    #[arg(long)]
    pub interactive: bool,
}

#[derive(Debug, Args)]
pub struct AgentPushArgs {
    /// The coding instance, or the review deciding to push (default: $BATON_INSTANCE).
    pub id: Option<String>,
    /// The pull request's title (default: the first line of the instructions).
    #[arg(long)]
    pub title: Option<String>,
    /// Its description (default: the instructions).
    #[arg(long)]
    pub body: Option<String>,
    /// Open it as a draft.
    #[arg(long)]
    pub draft: bool,
    /// Print the coding instance as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct AgentSpawnArgs {
    /// What the agent is to do (`-` reads it from standard input; with
    /// --issue, added to the issue's text).
    #[arg(required_unless_present = "issue")]
    pub instructions: Option<String>,
    /// Work on this GitHub issue of the repository: its title and body are the instructions.
    #[arg(long, value_name = "N")]
    pub issue: Option<u32>,
    /// Standing instructions given ahead of the work (default: [instances.coding] system_prompt).
    #[arg(long, value_name = "TEXT")]
    pub system_prompt: Option<String>,
    /// The instance id (default: a slug of the instructions, or issue-N-<title>).
    #[arg(long)]
    pub id: Option<String>,
    /// The agent (`[agents.NAME]` in .baton/config.toml; default: [defaults] agent).
    #[arg(long)]
    pub agent: Option<String>,
    /// The branch the work starts from (default: the one checked out).
    #[arg(long, value_name = "BRANCH")]
    pub base: Option<String>,
    /// The branch it works on (default: baton/<id>).
    #[arg(long, value_name = "BRANCH")]
    pub branch: Option<String>,
    /// A review is required before a pull request.
    #[arg(long)]
    pub require_review: bool,
    /// At most this many reviews (default: [instances.coding] max_reviews, 3).
    #[arg(long, value_name = "N")]
    pub max_reviews: Option<u32>,
    /// Fail the instance after this long (default: [instances.coding] execution_timeout, 24h).
    #[arg(long, value_name = "DURATION")]
    pub timeout: Option<String>,
    /// Run the agent's own terminal UI in a tmux session (`baton agent attach`).
    #[arg(long)]
    pub interactive: bool,
    /// Print the instance as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct AgentAttachArgs {
    pub id: String,
}

#[derive(Debug, Args)]
pub struct AgentLsArgs {
    /// Include ended instances.
    #[arg(long, short)]
    pub all: bool,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct AgentIdArgs {
    /// The instance (default: the one this agent runs as, $BATON_INSTANCE).
    pub id: Option<String>,
    /// Print JSON (`log`: JSON Lines).
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct AgentReviewArgs {
    /// The coding instance to review (default: $BATON_INSTANCE).
    pub id: Option<String>,
    /// What the reviewer is asked (default: [instances.review] review_prompt).
    #[arg(long)]
    pub prompt: Option<String>,
    /// The reviewing agent (default: the coding instance's).
    #[arg(long)]
    pub agent: Option<String>,
    /// The review instance's id (default: <id>-r<N>).
    #[arg(long = "review-id", value_name = "ID")]
    pub review_id: Option<String>,
    /// Fail the review after this long (default: [instances.review] timeout_minutes, 30).
    #[arg(long, value_name = "DURATION")]
    pub timeout: Option<String>,
    /// Print the review instance as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct AgentMergeBackArgs {
    /// The review instance (default: $BATON_INSTANCE).
    pub id: Option<String>,
    /// What the coding agent is told to do next.
    #[arg(long)]
    pub feedback: String,
    /// Print the coding instance as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct AgentKillArgs {
    pub id: String,
    /// Why (recorded).
    #[arg(long, default_value = "killed by `baton agent kill`")]
    pub reason: String,
    /// Print what was removed and kept as JSON.
    #[arg(long)]
    pub json: bool,
}
