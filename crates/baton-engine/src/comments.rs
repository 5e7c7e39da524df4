//! A person's comments on a task's or a coding instance's work, each on a
//! line of its diff (the board's inline comments): `eng.comments()`, the
//! one way to add and read them. They are kept in the store until they
//! reach the agent: a task's with its next phase attempt (in its brief and
//! its agent's prompt; marked delivered once that attempt passes,
//! `engine/phase`), an instance's as the next turn of its agent, in its
//! own native session (`instances/turn.rs`). A task's comments are
//! `[!user]` callouts in its session log.

use crate::engine::Engine;
use crate::error::{Error, Result};
use baton_core::TaskId;
use baton_core::comment::{self, Comment};
use baton_core::instance::{Config, ErrorCode, InstanceId};

pub struct Comments<'a> {
    eng: &'a Engine,
}

/// What a person writes.
#[derive(Debug, Clone)]
pub struct NewComment {
    pub path: String,
    pub line: u32,
    pub body: String,
    pub by: String,
}

impl Engine {
    pub fn comments(&self) -> Comments<'_> {
        Comments { eng: self }
    }
}

impl Comments<'_> {
    /// Adds a comment on task `id`'s work (the task must exist).
    pub fn on_task(&self, id: &TaskId, c: NewComment) -> Result<Comment> {
        let stored = self.add(comment::task_target(id.as_str()), c)?;
        if let Err(e) = self.eng.render_session(id) {
            tracing::warn!(task = %id, error = %e, "session log not rendered");
        }
        Ok(stored)
    }

    /// Adds a comment on coding instance `id`'s work; its agent gets it
    /// as its next turn (now, when its turn before has ended).
    pub fn on_instance(&self, id: &InstanceId, c: NewComment) -> Result<Comment> {
        let agents = self.eng.agents()?;
        let all = agents.stored()?;
        let i = all.get(id).ok_or_else(|| {
            Error::coded(
                ErrorCode::InstanceNotFound,
                format!("no agent instance {id}"),
            )
            .hint("`baton agent ls` lists the instances")
        })?;
        if !matches!(i.config, Config::Coding(_)) || i.status.ended() {
            return Err(Error::coded(
                ErrorCode::InvalidState,
                format!(
                    "agent instance {id} is {}: only a live coding instance takes comments",
                    if i.status.ended() { "ended" } else { "a review" }
                ),
            )
            .hint("comment on the coding instance; a review's work comes back to it when it is merged back"));
        }
        let stored = self.add(comment::instance_target(id.as_str()), c)?;
        agents.tick()?;
        Ok(stored)
    }

    pub fn of_task(&self, id: &TaskId) -> Result<Vec<Comment>> {
        Ok(self
            .eng
            .store
            .comments(&comment::task_target(id.as_str()))?)
    }

    pub fn of_instance(&self, id: &InstanceId) -> Result<Vec<Comment>> {
        Ok(self
            .eng
            .store
            .comments(&comment::instance_target(id.as_str()))?)
    }

    fn add(&self, target: String, c: NewComment) -> Result<Comment> {
        comment::check(&c.path, &c.body).map_err(|why| {
            Error::bad_input(why).hint("send {path, line, body}: the file and line of the diff, and what the agent should change")
        })?;
        let stored = Comment {
            id: format!("c-{}", &crate::new_uuid()[..12]),
            target,
            path: c.path,
            line: c.line,
            body: self.eng.redacted(c.body.trim().to_string()),
            by: c.by,
            created_at: self.eng.now(),
            delivered: None,
        };
        self.eng.store.add_comment(&stored)?;
        Ok(stored)
    }
}
