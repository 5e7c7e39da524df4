//! The team tools: a teammate's side of `baton team`, so any MCP-capable
//! agent CLI can be a teammate. The team and the member come from the
//! caller (`BATON_TEAM`, `BATON_TEAMMATE`, or the `Baton-Team` and
//! `Baton-Teammate` headers), or from the call's `team` and `as`. Every
//! call is also the member's heartbeat. The work is
//! `baton_engine::teams`.

use crate::caller::Caller;
use crate::tools::{Baton, ToolError, no_formats};
use baton_core::team::{self, LocalStatus, MessageType, NewMessage, TaskStatus};
use baton_engine::Error;
use baton_engine::teams::{CheckpointOptions, Teams};
use rmcp::handler::server::wrapper::{Json, Parameters};
use rmcp::schemars::{self, JsonSchema};
use rmcp::{tool, tool_router};
use serde::{Deserialize, Serialize};

/// Which team and member a call is about.
#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct Member {
    /// The team (default: the one baton started you in).
    pub team: Option<String>,
    /// Your name in it (default: the one baton gave you).
    #[serde(rename = "as")]
    pub member: Option<String>,
}

fn who(caller: &Caller, m: &Member, tool: &str) -> Result<(String, String), ToolError> {
    if let (Some(me), Some(my_team)) = (&caller.teammate, &caller.team) {
        let other_name = m.member.as_ref().filter(|n| *n != me);
        let other_team = m.team.as_ref().filter(|t| *t != my_team);
        if let Some(claimed) = other_name.or(other_team) {
            return Err(ToolError::from(
                Error::coded(
                    baton_core::instance::ErrorCode::InvalidState,
                    format!(
                        "{tool}: you are {me} of team {my_team}, and may not act as {claimed:?}"
                    ),
                )
                .hint("leave out `team` and `as`: baton knows who you are"),
            ));
        }
    }
    let team = m.team.clone().or(caller.team.clone());
    let name = m.member.clone().or(caller.teammate.clone());
    match (team, name) {
        (Some(t), Some(n)) => Ok((t, n)),
        _ => Err(ToolError::from(
            Error::bad_input(format!(
                "{tool} needs to know your team and your name in it"
            ))
            .hint("pass `team` and `as`, or run as a teammate baton started (BATON_TEAM, BATON_TEAMMATE)"),
        )),
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(transform = no_formats)]
pub struct SendInput {
    #[serde(flatten)]
    pub member: Member,
    /// A teammate's name, `lead`, or `*` for everyone.
    pub to: String,
    pub body: String,
    #[serde(default)]
    pub subject: String,
    /// info (default), question, challenge or resolution.
    #[serde(rename = "type")]
    pub kind: Option<String>,
    /// Its id: sending it again (a retry) stores it once (default: a new one).
    pub msg_id: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
#[schemars(transform = no_formats)]
pub struct TeamMessage {
    pub seq: u64,
    pub msg_id: String,
    pub from: String,
    pub to: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub subject: String,
    pub body: String,
    /// When the store received it (ms since the epoch).
    pub ts_ms: i64,
}

impl From<team::Message> for TeamMessage {
    fn from(m: team::Message) -> Self {
        TeamMessage {
            seq: m.seq,
            msg_id: m.msg_id,
            from: m.from,
            to: m.to,
            kind: m.kind.as_str().into(),
            subject: m.subject,
            body: m.body,
            ts_ms: m.ts_ms,
        }
    }
}

#[derive(Debug, Serialize, JsonSchema)]
#[schemars(transform = no_formats)]
pub struct Sent {
    pub seq: u64,
    pub msg_id: String,
    /// False when that msg_id had been sent before (it is stored once).
    pub new: bool,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(transform = no_formats)]
pub struct InboxInput {
    #[serde(flatten)]
    pub member: Member,
    /// At most this many (default 50).
    pub limit: Option<u32>,
}

#[derive(Debug, Serialize, JsonSchema)]
#[schemars(transform = no_formats)]
pub struct Inbox {
    /// What is addressed to you (or to everyone) that you have not
    /// acknowledged, oldest first. Acknowledge with team_ack.
    pub messages: Vec<TeamMessage>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(transform = no_formats)]
pub struct AckInput {
    #[serde(flatten)]
    pub member: Member,
    /// The messages' seq numbers.
    pub seqs: Vec<u64>,
}

#[derive(Debug, Serialize, JsonSchema)]
#[schemars(transform = no_formats)]
pub struct Acked {
    /// How many were new to you.
    pub acknowledged: usize,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(transform = no_formats)]
pub struct ClaimInput {
    #[serde(flatten)]
    pub member: Member,
    /// The task to start (default: yours in progress, else the first one
    /// ready: assigned to you or to nobody, its dependencies completed).
    pub task: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
#[schemars(transform = no_formats)]
pub struct TeamTaskOut {
    pub id: String,
    pub title: String,
    pub status: String,
    pub assigned_to: Option<String>,
    pub dependencies: Vec<String>,
    /// The latest checkpoint (a reassigned task's is where to continue).
    pub checkpoint: Option<serde_json::Value>,
}

#[derive(Debug, Serialize, JsonSchema)]
#[schemars(transform = no_formats)]
pub struct Claimed {
    /// The task you now work on; none when no task is ready.
    pub task: Option<TeamTaskOut>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(transform = no_formats)]
pub struct UpdateInput {
    #[serde(flatten)]
    pub member: Member,
    pub task: String,
    /// in_progress, blocked or completed.
    pub status: String,
    /// Why it is blocked.
    pub reason: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(transform = no_formats)]
pub struct TeamCheckpointInput {
    #[serde(flatten)]
    pub member: Member,
    pub task: String,
    #[serde(default)]
    pub files_modified: Vec<String>,
    /// green, red or pending (default): how your local checks stand.
    pub local_status: Option<String>,
    pub git_branch: Option<String>,
    pub head: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
#[schemars(transform = no_formats)]
pub struct TeamCheckpointTaken {
    /// 1 for the task's first checkpoint, then one more each time.
    pub checkpoint_seq: u64,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(transform = no_formats)]
pub struct HeartbeatInput {
    #[serde(flatten)]
    pub member: Member,
    /// Your heartbeat's sequence number (default: one more than the last).
    pub seq: Option<u64>,
    /// How full your context is, in percent.
    pub context_usage_percent: Option<u8>,
    /// Your agent CLI's session id.
    pub session_id: Option<String>,
    /// Files staged and not, in your work tree.
    pub staged: Option<u32>,
    pub unstaged: Option<u32>,
    /// The branch you work on.
    pub branch: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
#[schemars(transform = no_formats)]
pub struct Beat {
    pub seq: u64,
    /// When the store received it (ms since the epoch).
    pub received_at: i64,
    /// The lead timed out: keep working and checkpointing; your messages
    /// to it wait for it.
    pub lead_timed_out: bool,
}

fn task_out(t: &team::TeamTask) -> TeamTaskOut {
    TeamTaskOut {
        id: t.id.clone(),
        title: t.title.clone(),
        status: t.status.as_str().into(),
        assigned_to: t.assigned_to.clone(),
        dependencies: t.dependencies.clone(),
        checkpoint: t
            .checkpoint
            .as_ref()
            .and_then(|c| serde_json::to_value(c).ok()),
    }
}

/// The task `name` should work on: its own in progress, else the first
/// ready one.
fn next_task(t: &team::Team, name: &str) -> Option<String> {
    let done = |id: &str| {
        t.task(id)
            .is_some_and(|x| x.status == TaskStatus::Completed)
    };
    t.tasks
        .iter()
        .find(|x| x.status == TaskStatus::InProgress && x.assigned_to.as_deref() == Some(name))
        .or_else(|| {
            t.tasks.iter().find(|x| {
                matches!(x.status, TaskStatus::Pending | TaskStatus::Blocked)
                    && x.assigned_to.as_deref().is_none_or(|a| a == name)
                    && x.dependencies.iter().all(|d| done(d))
            })
        })
        .map(|x| x.id.clone())
}

impl Baton {
    /// Runs `f` with the project's teams on a blocking thread.
    async fn with_teams<T: Send + 'static>(
        &self,
        ext: &rmcp::model::Extensions,
        f: impl FnOnce(&Teams<'_>, &Caller) -> Result<T, ToolError> + Send + 'static,
    ) -> Result<T, ToolError> {
        let engine = self.engine();
        let caller = self.caller_of(ext);
        tokio::task::spawn_blocking(move || {
            let teams = engine.teams()?;
            f(&teams, &caller)
        })
        .await
        .map_err(|e| ToolError::from(Error::op(format!("the tool call panicked: {e}"))))?
    }
}

#[tool_router(router = team_tools, vis = "pub(crate)")]
impl Baton {
    #[tool(
        description = "Send a message to your team: to a teammate, to `lead`, or to `*` (everyone). A message to someone away waits for them. Sending the same msg_id again stores it once.",
        annotations(
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn team_send(
        &self,
        ext: rmcp::model::Extensions,
        Parameters(input): Parameters<SendInput>,
    ) -> Result<Json<Sent>, ToolError> {
        self.with_teams(&ext, move |teams, caller| {
            let (team, me) = who(caller, &input.member, "team_send")?;
            let kind = match input.kind.as_deref() {
                None => MessageType::Info,
                Some(k) => MessageType::parse(k).ok_or_else(|| {
                    ToolError::from(
                        Error::bad_input(format!("{k:?} is not a message type"))
                            .hint(format!("use one of: {}", MessageType::NAMES)),
                    )
                })?,
            };
            let (m, new) = teams.send(
                &team,
                &NewMessage {
                    msg_id: input.msg_id.unwrap_or_else(baton_engine::engine::new_uuid),
                    from: me,
                    to: input.to,
                    kind,
                    subject: input.subject,
                    body: input.body,
                },
            )?;
            Ok(Json(Sent {
                seq: m.seq,
                msg_id: m.msg_id,
                new,
            }))
        })
        .await
    }

    #[tool(
        description = "Your inbox: messages to you (or to everyone) you have not acknowledged, oldest first. Acknowledge them with team_ack once handled.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn team_inbox(
        &self,
        ext: rmcp::model::Extensions,
        Parameters(input): Parameters<InboxInput>,
    ) -> Result<Json<Inbox>, ToolError> {
        self.with_teams(&ext, move |teams, caller| {
            let (team, me) = who(caller, &input.member, "team_inbox")?;
            let limit = input.limit.unwrap_or(50) as usize;
            let messages = teams.inbox(&team, &me, limit)?;
            Ok(Json(Inbox {
                messages: messages.into_iter().map(TeamMessage::from).collect(),
            }))
        })
        .await
    }

    #[tool(
        description = "Acknowledge messages of your inbox by their seq: they leave your inbox.",
        annotations(
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn team_ack(
        &self,
        ext: rmcp::model::Extensions,
        Parameters(input): Parameters<AckInput>,
    ) -> Result<Json<Acked>, ToolError> {
        self.with_teams(&ext, move |teams, caller| {
            let (team, me) = who(caller, &input.member, "team_ack")?;
            Ok(Json(Acked {
                acknowledged: teams.ack(&team, &me, &input.seqs)?,
            }))
        })
        .await
    }

    #[tool(
        description = "Start a task of the team's list: the one named, else yours in progress, else the first one ready (assigned to you or to nobody, its dependencies completed). A reassigned task comes with its last checkpoint: continue from there.",
        annotations(
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn team_task_claim(
        &self,
        ext: rmcp::model::Extensions,
        Parameters(input): Parameters<ClaimInput>,
    ) -> Result<Json<Claimed>, ToolError> {
        self.with_teams(&ext, move |teams, caller| {
            let (team, me) = who(caller, &input.member, "team_task_claim")?;
            let t = teams.get(&team)?;
            let Some(task) = input.task.or_else(|| next_task(&t, &me)) else {
                teams.touch(&team, &me)?;
                return Ok(Json(Claimed { task: None }));
            };
            let after = teams.start(&team, &me, &task)?;
            Ok(Json(Claimed {
                task: after.task(&task).map(task_out),
            }))
        })
        .await
    }

    #[tool(
        description = "Move your task: in_progress, blocked (with a reason) or completed.",
        annotations(
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn team_task_update(
        &self,
        ext: rmcp::model::Extensions,
        Parameters(input): Parameters<UpdateInput>,
    ) -> Result<Json<TeamTaskOut>, ToolError> {
        self.with_teams(&ext, move |teams, caller| {
            let (team, me) = who(caller, &input.member, "team_task_update")?;
            let t = match input.status.as_str() {
                "in_progress" => teams.start(&team, &me, &input.task)?,
                "completed" => teams.complete_task(&team, &me, &input.task)?,
                "blocked" => {
                    let reason = input
                        .reason
                        .clone()
                        .filter(|r| !r.trim().is_empty())
                        .ok_or_else(|| {
                            ToolError::from(
                                Error::bad_input("a blocked task needs a reason")
                                    .hint("say why it cannot go on, and what would unblock it"),
                            )
                        })?;
                    teams.block(&team, &me, &input.task, &reason)?
                }
                other => {
                    return Err(ToolError::from(
                        Error::bad_input(format!("{other:?} is not a status to move a task to"))
                            .hint("use in_progress, blocked or completed"),
                    ));
                }
            };
            Ok(Json(task_out(t.task(&input.task).expect("the task moved"))))
        })
        .await
    }

    #[tool(
        description = "Record where your task stands (files modified, your local checks green/red/pending, branch and HEAD): the lead sees it, and whoever takes the task over continues from it. Checkpoint every 30 seconds or so while working.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn team_checkpoint(
        &self,
        ext: rmcp::model::Extensions,
        Parameters(input): Parameters<TeamCheckpointInput>,
    ) -> Result<Json<TeamCheckpointTaken>, ToolError> {
        self.with_teams(&ext, move |teams, caller| {
            let (team, me) = who(caller, &input.member, "team_checkpoint")?;
            let local_status = match input.local_status.as_deref() {
                None | Some("pending") => LocalStatus::Pending,
                Some("green") => LocalStatus::Green,
                Some("red") => LocalStatus::Red,
                Some(other) => {
                    return Err(ToolError::from(
                        Error::bad_input(format!("{other:?} is not a local status"))
                            .hint("use green, red or pending"),
                    ));
                }
            };
            let t = teams.checkpoint(
                &team,
                &me,
                &input.task,
                &CheckpointOptions {
                    files_modified: input.files_modified,
                    local_status,
                    git_branch: input.git_branch,
                    head: input.head,
                },
            )?;
            let n = t
                .task(&input.task)
                .and_then(|x| x.checkpoint.as_ref())
                .map_or(0, |c| c.checkpoint_seq);
            Ok(Json(TeamCheckpointTaken { checkpoint_seq: n }))
        })
        .await
    }

    #[tool(
        description = "Say you are alive (every team tool call also does), with how full your context is. Tells you when the lead has timed out: keep working and checkpointing then.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn team_heartbeat(
        &self,
        ext: rmcp::model::Extensions,
        Parameters(input): Parameters<HeartbeatInput>,
    ) -> Result<Json<Beat>, ToolError> {
        self.with_teams(&ext, move |teams, caller| {
            let (team, me) = who(caller, &input.member, "team_heartbeat")?;
            let p = teams.heartbeat(&team, &me, input.seq, None)?;
            let changes =
                (input.staged.is_some() || input.unstaged.is_some() || input.branch.is_some())
                    .then(|| team::LocalChanges {
                        staged: input.staged.unwrap_or(0),
                        unstaged: input.unstaged.unwrap_or(0),
                        branch: input.branch.clone(),
                    });
            if me != team::LEAD
                && (input.context_usage_percent.is_some()
                    || input.session_id.is_some()
                    || changes.is_some())
            {
                teams.report(
                    &team,
                    &me,
                    input.session_id,
                    changes,
                    input.context_usage_percent,
                )?;
            }
            let t = teams.get(&team)?;
            Ok(Json(Beat {
                seq: p.seq,
                received_at: p.received_at.millis(),
                lead_timed_out: t.lead_timeout_detected_at.is_some(),
            }))
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use baton_core::Timestamp;
    use baton_core::team::{Input, NewTask, NewTeammate, Record, Role, Team, TeamId};

    fn team_with(tasks: Vec<NewTask>) -> Team {
        let id = TeamId::parse("crew").unwrap();
        let events = team::decide(
            None,
            Input::Create {
                lead: team::Lead {
                    session_id: "s".into(),
                    owner: "h".into(),
                    attached_at: Timestamp(0),
                },
                teammates: vec![NewTeammate {
                    name: "ana".into(),
                    role: Role::Engineer,
                    agent: None,
                }],
                tasks,
                facts: Default::default(),
            },
            Timestamp(0),
        )
        .unwrap();
        let records: Vec<Record> = events
            .into_iter()
            .enumerate()
            .map(|(i, event)| Record {
                seq: i as u64 + 1,
                ts: Timestamp(0),
                event,
            })
            .collect();
        team::replay(&id, &records).unwrap()
    }

    #[test]
    fn the_next_task_is_one_whose_dependencies_are_done() {
        let t = team_with(vec![
            NewTask {
                id: "t1".into(),
                title: "a".into(),
                dependencies: vec![],
            },
            NewTask {
                id: "t2".into(),
                title: "b".into(),
                dependencies: vec!["t1".into()],
            },
        ]);
        assert_eq!(next_task(&t, "ana").as_deref(), Some("t1"));
    }
}
