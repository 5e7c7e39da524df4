//! `baton team …`: a lead and teammates sharing a task list and a mailbox.

use clap::{Args, Subcommand};

#[derive(Debug, Subcommand)]
pub enum TeamCommand {
    /// Create a team with its teammates and tasks; this shell is its lead.
    Create(TeamCreateArgs),
    /// List the teams: status, lead, teammates, tasks by status.
    Ls(TeamJsonArgs),
    /// Start the teammates that have an agent and are not running yet (create does it too).
    Start(TeamIdArgs),
    /// One team: its lead, teammates with their liveness, tasks, last messages.
    Show(TeamIdArgs),
    /// What re-attaching would show, changing nothing.
    Probe(TeamIdArgs),
    /// Re-attach as the team's lead (exit 0 attached, 1 retry later, 2 refused).
    Resume(TeamResumeArgs),
    /// The task list: add, assign, start (claim), block, complete, checkpoint.
    #[command(subcommand)]
    Task(TeamTaskCommand),
    /// The mailbox: send, list (or a member's inbox), acknowledge.
    #[command(subcommand)]
    Msg(TeamMsgCommand),
    /// A member's heartbeat (every other team command is one too).
    Heartbeat(TeamHeartbeatArgs),
    /// Move a task to another teammate, who inherits its checkpoint.
    Reassign(TeamReassignArgs),
    /// After zombie mode, the lead's choice for a teammate's work: continue, commit, or rollback.
    Resolve(TeamResolveArgs),
    /// Merge the teammates' branches and commit the team's work once the checks pass; then --retry, --abort or --inspect.
    Consolidate(TeamConsolidateArgs),
    /// Write the team's copy to branch baton-teams (.team-state/NAME/), without touching your work tree.
    Sync(TeamIdArgs),
    /// Rebuild the teams copied on a branch or commit (default baton-teams) in this store.
    Import(TeamImportArgs),
    /// Make the team read-only (refused while tasks are open, unless --force).
    Complete(TeamCompleteArgs),
    /// A completed (or any) team's record: who did what, the journal's length, the mailbox.
    Review(TeamIdArgs),
}

#[derive(Debug, Args)]
pub struct TeamJsonArgs {
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct TeamIdArgs {
    /// The team's name.
    pub team: String,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct TeamCreateArgs {
    /// The team's name (letters, digits, '-', '_', '.').
    pub name: String,
    /// A teammate: NAME:ROLE[:AGENT] (ROLE: engineer, validator, tester, integrator).
    #[arg(long = "teammate", value_name = "NAME:ROLE[:AGENT]")]
    pub teammates: Vec<String>,
    /// A task: TITLE[:DEPS]; tasks are t1, t2, … in order, DEPS their ids (t1,t2).
    #[arg(long = "task", value_name = "TITLE[:DEPS]")]
    pub tasks: Vec<String>,
    /// A file the team takes as a fact; `resume` warns when it changed.
    #[arg(long = "fact", value_name = "FILE")]
    pub facts: Vec<String>,
    /// The lead's session (default: $BATON_LEAD_SESSION, else USER@HOST).
    #[arg(long)]
    pub session: Option<String>,
    /// Run the teammates' agents in their terminal UIs, each in a tmux session (`baton agent attach`).
    #[arg(long)]
    pub interactive: bool,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct TeamCompleteArgs {
    /// The team's name.
    pub team: String,
    /// Complete it even with tasks open (they stay open, read-only).
    #[arg(long)]
    pub force: bool,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct TeamResumeArgs {
    pub team: String,
    /// The lead's session (default: $BATON_LEAD_SESSION, else USER@HOST).
    #[arg(long)]
    pub session: Option<String>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// Who does it: a teammate's name, or `lead`.
#[derive(Debug, Args)]
pub struct AsMember {
    /// Act as this member (default: $BATON_TEAMMATE, else lead).
    #[arg(
        long = "as",
        value_name = "NAME",
        env = "BATON_TEAMMATE",
        default_value = "lead"
    )]
    pub member: String,
}

#[derive(Debug, Subcommand)]
pub enum TeamTaskCommand {
    /// Add a task.
    Add(TeamTaskAddArgs),
    /// Assign a task to a teammate.
    Assign(TeamTaskAssignArgs),
    /// Start a task (claim it when nobody has it); its dependencies must be completed.
    Start(TeamTaskArgs),
    /// Mark a task in progress as blocked.
    Block(TeamTaskBlockArgs),
    /// Complete a task in progress.
    Complete(TeamTaskArgs),
    /// Record where the work on a task stands.
    Checkpoint(TeamTaskCheckpointArgs),
}

#[derive(Debug, Args)]
pub struct TeamTaskAddArgs {
    pub team: String,
    pub title: String,
    /// Its id (default: t<N>, the next free one).
    #[arg(long)]
    pub id: Option<String>,
    /// Tasks it depends on (comma-separated ids).
    #[arg(long, value_delimiter = ',')]
    pub after: Vec<String>,
    #[command(flatten)]
    pub by: AsMember,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct TeamTaskAssignArgs {
    pub team: String,
    pub task: String,
    pub to: String,
    #[command(flatten)]
    pub by: AsMember,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct TeamTaskArgs {
    pub team: String,
    pub task: String,
    #[command(flatten)]
    pub by: AsMember,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct TeamTaskBlockArgs {
    pub team: String,
    pub task: String,
    /// Why it cannot go on.
    #[arg(long)]
    pub reason: String,
    #[command(flatten)]
    pub by: AsMember,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct TeamTaskCheckpointArgs {
    pub team: String,
    pub task: String,
    /// A file modified (repeat).
    #[arg(long = "file")]
    pub files: Vec<String>,
    /// The local checks: green, red or pending.
    #[arg(long, default_value = "pending")]
    pub status: String,
    /// The branch the work is on.
    #[arg(long)]
    pub branch: Option<String>,
    /// Its HEAD commit.
    #[arg(long)]
    pub head: Option<String>,
    #[command(flatten)]
    pub by: AsMember,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Subcommand)]
pub enum TeamMsgCommand {
    /// Send a message (the same --id sent again is stored once).
    Send(TeamMsgSendArgs),
    /// The mailbox, in order; with --inbox NAME only what NAME has not acknowledged.
    Ls(TeamMsgLsArgs),
    /// Acknowledge messages by their seq.
    Ack(TeamMsgAckArgs),
}

#[derive(Debug, Args)]
pub struct TeamMsgSendArgs {
    pub team: String,
    /// The message's text.
    pub body: String,
    /// To whom: a teammate, `lead`, or `*` for everyone.
    #[arg(long)]
    pub to: String,
    /// info, question, challenge or resolution.
    #[arg(long = "type", default_value = "info")]
    pub kind: String,
    #[arg(long, default_value = "")]
    pub subject: String,
    /// Its id: sending it again (a retry) stores it once (default: a new one).
    #[arg(long)]
    pub id: Option<String>,
    #[command(flatten)]
    pub by: AsMember,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct TeamMsgLsArgs {
    pub team: String,
    /// Only what this member has not acknowledged, addressed to it or to everyone.
    #[arg(long)]
    pub inbox: Option<String>,
    /// Only messages after this seq.
    #[arg(long, default_value_t = 0)]
    pub after: u64,
    /// At most this many (the newest, unless --after or --inbox).
    #[arg(long, default_value_t = 50)]
    pub limit: usize,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct TeamMsgAckArgs {
    pub team: String,
    /// The messages' seq numbers.
    #[arg(required = true)]
    pub seqs: Vec<u64>,
    #[command(flatten)]
    pub by: AsMember,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct TeamHeartbeatArgs {
    pub team: String,
    /// The member: a teammate's name, or `lead`.
    pub name: String,
    /// Its heartbeat's sequence number (default: one more than the last).
    #[arg(long)]
    pub seq: Option<u64>,
    /// Its own clock (RFC 3339; default: this machine's).
    #[arg(long)]
    pub sent_at: Option<String>,
    /// How full its context is, in percent.
    #[arg(long)]
    pub context: Option<u8>,
    /// Its native agent session.
    #[arg(long)]
    pub session: Option<String>,
    /// Files staged in its work tree.
    #[arg(long)]
    pub staged: Option<u32>,
    /// Files changed and not staged.
    #[arg(long)]
    pub unstaged: Option<u32>,
    /// The branch it works on.
    #[arg(long)]
    pub branch: Option<String>,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct TeamReassignArgs {
    pub team: String,
    pub task: String,
    /// The new owner.
    #[arg(long)]
    pub to: String,
    /// Even when the owner is online.
    #[arg(long)]
    pub force: bool,
    #[command(flatten)]
    pub by: AsMember,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct TeamResolveArgs {
    pub team: String,
    /// The teammate.
    pub name: String,
    /// continue (leave it), commit (its worktree's changes onto its branch),
    /// or rollback (its branch back to the last good commit, what it held saved).
    pub choice: String,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct TeamConsolidateArgs {
    pub team: String,
    /// Run the consolidation under way again: merge, run the checks, commit (never twice).
    #[arg(long, conflicts_with_all = ["abort", "inspect"])]
    pub retry: bool,
    /// Put the project back at the last good commit (what it holds is saved) and reopen the tasks since.
    #[arg(long, conflicts_with = "inspect")]
    pub abort: bool,
    /// Show the staged changes of the consolidation under way.
    #[arg(long)]
    pub inspect: bool,
    /// The commit message (default: the tasks completed since the last one; on --retry, a new one).
    #[arg(long, short)]
    pub message: Option<String>,
    /// A check to run before committing (repeat; default: [teams] checks; on --retry, the ones it started with).
    #[arg(long = "check")]
    pub checks: Vec<String>,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct TeamImportArgs {
    /// The branch or commit holding `.team-state/` (default: baton-teams, else a remote's baton-teams).
    #[arg(default_value = "baton-teams")]
    pub rev: String,
    /// Only this team.
    #[arg(long)]
    pub team: Option<String>,
    #[arg(long)]
    pub json: bool,
}
