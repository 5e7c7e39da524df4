//! A team's session log, `team@<name>.md`: the team as it stands (its
//! lead, each teammate's tasks with their checkpoints, what is blocked,
//! the consolidation), the newest messages of its mailbox, and each
//! teammate's turns (the tasks of the agent instance baton runs it as,
//! each with its own log) as `[!subagent]` links. A team's lead is a
//! person's shell, not a task: this log is where its teammates' sessions
//! are children of something. Pure: the team and what it links in, the
//! log out.

use super::journal::{ChildSession, SubagentMode, child_body};
use super::{Block, Callout, Front, LogStatus, Section, SessionLog, Subagent, kind};
use crate::team::{LEAD, Message, TaskStatus, Team, TeamStatus, TeamTask, Teammate};
use crate::time::Timestamp;

/// How many of the newest messages a team's log shows.
pub const MESSAGES_SHOWN: usize = 50;

/// The id of team `team`'s log (its file is `<id>.md`): `team@NAME`,
/// which no task id can be (`@` is not allowed in them).
pub fn log_id(team: &str) -> String {
    format!("team@{team}")
}

/// The frontmatter key naming the team a log is of.
pub const TEAM_KEY: &str = "team";

/// The team a log is of, if it is a team's log.
pub fn team_of(log: &SessionLog) -> Option<&str> {
    log.front
        .extra
        .iter()
        .find(|(k, _)| k == TEAM_KEY)
        .map(|(_, v)| v.as_str())
}

/// What a team's log shows besides the team itself.
#[derive(Debug, Clone, Default)]
pub struct TeamLinks {
    /// Each teammate's turns, in order (by teammate name).
    pub turns: Vec<(String, Vec<ChildSession>)>,
    /// The newest messages, oldest first.
    pub messages: Vec<Message>,
    /// How many messages the mailbox holds in all.
    pub message_count: u64,
}

/// Team `t`'s log.
pub fn of_team(t: &Team, links: &TeamLinks, mode: SubagentMode) -> SessionLog {
    let mut front = Front {
        session_id: log_id(t.id.as_str()),
        started: Some(t.created_at.rfc3339()),
        ended: (t.status == TeamStatus::Completed).then(|| t.updated_at.rfc3339()),
        status: match t.status {
            TeamStatus::Completed => LogStatus::Completed,
            TeamStatus::Suspended => LogStatus::Paused,
            _ => LogStatus::Active,
        },
        participants: std::iter::once(LEAD.to_string())
            .chain(t.teammates.keys().cloned())
            .collect(),
        extra: vec![(TEAM_KEY.into(), t.id.to_string())],
        ..Front::default()
    };
    let mut sections = vec![lead_section(t)];
    for m in t.teammates.values() {
        let turns = links
            .turns
            .iter()
            .find(|(name, _)| name == &m.name)
            .map_or(&[][..], |(_, turns)| turns.as_slice());
        for c in turns {
            front.subagents.push(Subagent {
                session: c.session.clone(),
                agent: c.agent.clone(),
                model: None,
                tokens: c.tokens,
            });
            front.tokens_used += c.tokens;
        }
        sections.push(teammate_section(t, m, turns, mode));
    }
    if links.message_count > 0 {
        sections.push(mailbox_section(t, links));
    }
    let counts: Vec<String> = t
        .task_counts()
        .into_iter()
        .filter(|(_, n)| *n > 0)
        .map(|(s, n)| format!("{n} {}", s.replace('_', " ")))
        .collect();
    let mut intro = format!(
        "Team {} is {}: {} teammate(s), {} task(s)",
        t.id,
        t.status.as_str(),
        t.teammates.len(),
        t.tasks.len()
    );
    if !counts.is_empty() {
        intro.push_str(&format!(" ({})", counts.join(", ")));
    }
    intro.push('.');
    SessionLog {
        front,
        title: format!("Team {}", t.id),
        intro: vec![Block::Prose(intro)],
        sections,
    }
}

/// The lead's part: who leads, a lead gone silent, the consolidation, the
/// tasks nobody has.
fn lead_section(t: &Team) -> Section {
    let mut blocks = Vec::new();
    match &t.lead {
        Some(l) => blocks.push(Block::Prose(format!(
            "Led from session {} ({}), attached {}.",
            l.session_id,
            l.owner,
            l.attached_at.rfc3339()
        ))),
        None => blocks.push(Block::Prose("No lead is attached.".into())),
    }
    if let Some(at) = t.lead_timeout_detected_at {
        blocks.push(Block::Callout(Callout::new(
            kind::ERROR,
            "the lead timed out",
            &format!(
                "Seen silent at {}: the teammates go on, their messages to the lead wait in the mailbox. Re-attach with `baton team resume {}`.",
                at.rfc3339(),
                t.id
            ),
        )));
    }
    if let Some(c) = &t.consolidation {
        blocks.push(Block::Callout(Callout::new(
            kind::DECISION,
            "consolidating",
            &format!("Since {}: {}", c.started_at.rfc3339(), c.message),
        )));
    }
    if let Some(commit) = &t.last_good_commit {
        blocks.push(Block::Prose(format!(
            "Last consolidated commit: {commit}{}.",
            t.last_consolidated_at
                .map(|at| format!(" at {}", at.rfc3339()))
                .unwrap_or_default()
        )));
    }
    let open: Vec<&TeamTask> = t
        .tasks
        .iter()
        .filter(|k| k.assigned_to.is_none() && k.status != TaskStatus::Completed)
        .collect();
    if !open.is_empty() {
        blocks.push(Block::Prose(format!(
            "Not assigned yet:\n{}",
            open.iter()
                .map(|k| task_line(k))
                .collect::<Vec<_>>()
                .join("\n")
        )));
    }
    Section {
        name: LEAD.into(),
        agent: Some(LEAD.into()),
        channel: None,
        blocks,
    }
}

/// A teammate's part: who it is, its tasks, what blocks it, its turns.
fn teammate_section(t: &Team, m: &Teammate, turns: &[ChildSession], mode: SubagentMode) -> Section {
    let mut who = format!("The {}", m.role.as_str());
    match (&m.agent, &m.instance) {
        (Some(a), Some(i)) => who.push_str(&format!(", agent {a}, run by baton as {i}")),
        (Some(a), None) => who.push_str(&format!(", agent {a}, not started yet")),
        (None, _) => who.push_str(", run by hand"),
    }
    if let Some(s) = &m.session_id {
        who.push_str(&format!(", session {s}"));
    }
    match &m.current_task {
        Some(k) => who.push_str(&format!("; working on {k}.")),
        None => who.push('.'),
    }
    let mut blocks = vec![Block::Prose(who)];
    let mine: Vec<&TeamTask> = t
        .tasks
        .iter()
        .filter(|k| k.assigned_to.as_deref() == Some(m.name.as_str()))
        .collect();
    if !mine.is_empty() {
        blocks.push(Block::Prose(
            mine.iter()
                .map(|k| task_line(k))
                .collect::<Vec<_>>()
                .join("\n"),
        ));
    }
    for k in mine.iter().filter(|k| k.status == TaskStatus::Blocked) {
        blocks.push(Block::Callout(Callout::new(
            kind::ERROR,
            format!("{} is blocked", k.id),
            k.blocked_reason.as_deref().unwrap_or("no reason given"),
        )));
    }
    for (n, c) in turns.iter().enumerate() {
        blocks.push(Block::Callout(Callout::new(
            kind::SUBAGENT,
            format!("@{} ({}, turn {})", c.agent, m.role.as_str(), n + 1),
            &child_body(&c.title, &c.blocks, mode, Some(&c.session)),
        )));
    }
    Section {
        name: m.name.clone(),
        agent: Some(m.name.clone()),
        channel: None,
        blocks,
    }
}

/// `- t1 Write the parser: in progress, checkpoint 3 green (2 files) at …`
fn task_line(k: &TeamTask) -> String {
    let mut line = format!(
        "- {} {}: {}",
        k.id,
        k.title,
        k.status.as_str().replace('_', " ")
    );
    if let Some(c) = &k.checkpoint
        && k.status != TaskStatus::Completed
    {
        line.push_str(&format!(
            ", checkpoint {} {} ({} file(s)) at {}",
            c.checkpoint_seq,
            c.local_status.as_str(),
            c.files_modified.len(),
            c.last_progress_at.rfc3339()
        ));
    }
    if let Some(at) = k.completed_at {
        line.push_str(&format!(" at {}", at.rfc3339()));
    }
    if !k.dependencies.is_empty() {
        line.push_str(&format!(" (after {})", k.dependencies.join(", ")));
    }
    line
}

/// The newest messages, oldest first.
fn mailbox_section(t: &Team, links: &TeamLinks) -> Section {
    let mut blocks = Vec::new();
    let earlier = links
        .message_count
        .saturating_sub(links.messages.len() as u64);
    if earlier > 0 {
        blocks.push(Block::Prose(format!(
            "{earlier} earlier message(s) are in the mailbox: `baton team msg ls {} --limit {}`.",
            t.id, links.message_count
        )));
    }
    let lines: Vec<String> = links
        .messages
        .iter()
        .map(|m| {
            let to = if m.to == crate::team::EVERYONE {
                "everyone"
            } else {
                m.to.as_str()
            };
            let body = m.body.split_whitespace().collect::<Vec<_>>().join(" ");
            format!(
                "- {} {} → {} ({}) {}: {}",
                Timestamp::from_millis(m.ts_ms).rfc3339(),
                m.from,
                to,
                m.kind.as_str(),
                m.subject,
                body
            )
        })
        .collect();
    if !lines.is_empty() {
        blocks.push(Block::Prose(lines.join("\n")));
    }
    Section {
        name: "mailbox".into(),
        agent: None,
        channel: None,
        blocks,
    }
}
