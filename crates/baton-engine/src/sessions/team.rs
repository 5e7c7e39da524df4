//! A team's log, `.baton/sessions/team@<name>.md` (its model is
//! `baton_core::session_log::team`): the team as it stands, the newest
//! messages, and each teammate's turns (the tasks of the agent instance
//! baton runs it as) linked as child sessions with the tokens they used.
//! Written after every change to the team and, for messages, at most
//! every 2 s (a derived file: atomically, without fsync; a failure to
//! write it never fails the change), and rendered on demand for `baton
//! session show team@<name>`.

use crate::engine::Engine;
use crate::error::Result;
use crate::render;
use baton_core::agent_stream::shorten;
use baton_core::session_log::journal::ChildSession;
use baton_core::session_log::team::{self, MESSAGES_SHOWN, TeamLinks};
use baton_core::session_log::{self, SessionLog};
use baton_core::team::Team;
use baton_store::MessageQuery;
use std::time::Duration;

/// How often messages alone write a team's log again.
pub(crate) const MAIL_EVERY: Duration = Duration::from_secs(2);

impl Engine {
    /// Team `t`'s log, from the store.
    pub fn team_log(&self, t: &Team) -> Result<SessionLog> {
        let mode = self.subagent_mode();
        let instances = self.store.instances()?;
        let mut turns = Vec::new();
        for m in t.teammates.values() {
            let Some(i) = m
                .instance
                .as_deref()
                .and_then(|i| instances.by_id.values().find(|x| x.id.as_str() == i))
            else {
                continue;
            };
            let mut mine = Vec::new();
            for task in &i.turns {
                let state = self.store.load(task)?.map(|s| s.state);
                let usage = state.as_ref().map(|s| s.usage());
                mine.push(ChildSession {
                    session: task.to_string(),
                    agent: m.name.clone(),
                    title: state.map_or_else(
                        || task.to_string(),
                        |s| shorten(s.description.lines().next().unwrap_or(""), 100),
                    ),
                    tokens: usage.map_or(0, |u| u.input_tokens + u.output_tokens),
                    blocks: crate::render::child_blocks(self.store.as_ref(), task, mode),
                });
            }
            turns.push((m.name.clone(), mine));
        }
        let messages = self.store.messages(
            t.id.as_str(),
            &MessageQuery {
                limit: MESSAGES_SHOWN,
                newest: true,
                ..Default::default()
            },
        )?;
        // A team's messages are numbered from 1 without gaps.
        let message_count = messages.last().map_or(0, |m| m.seq);
        let links = TeamLinks {
            turns,
            messages,
            message_count,
        };
        Ok(team::of_team(t, &links, mode))
    }

    /// Writes team `t`'s log and its index row when it says something new;
    /// whether it wrote.
    pub fn render_team_log(&self, t: &Team) -> Result<bool> {
        let log = self.team_log(t)?;
        let md = session_log::render(&log);
        let path = self
            .project
            .sessions_dir()
            .join(format!("{}.md", log.front.session_id));
        if std::fs::read_to_string(&path).ok().as_deref() == Some(md.as_str()) {
            return Ok(false);
        }
        render::derived_write(&path, md.as_bytes())?;
        self.session_index()
            .upsert(session_log::index::row_of(&log, 0))?;
        Ok(true)
    }

    /// After a message to team `t`: its log shows the newest messages, but
    /// is written again at most every [`MAIL_EVERY`] for them (a mailbox
    /// takes thousands a second; any change to the team writes it too).
    pub(crate) fn team_mail_sent(&self, t: &Team) {
        let path = self
            .project
            .sessions_dir()
            .join(format!("{}.md", team::log_id(t.id.as_str())));
        let fresh = std::fs::metadata(&path)
            .and_then(|m| m.modified())
            .is_ok_and(|at| at.elapsed().is_ok_and(|e| e < MAIL_EVERY));
        if !fresh {
            self.team_changed(t);
        }
    }

    /// After a change to team `t`: its log, a failure only said.
    pub(crate) fn team_changed(&self, t: &Team) {
        if let Err(e) = self.render_team_log(t) {
            tracing::warn!(team = %t.id, error = %e, "team log not written");
        }
    }
}
