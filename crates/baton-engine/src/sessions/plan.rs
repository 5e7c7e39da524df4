//! `baton session plan`: a session's tokens per phase (counted by
//! `crate::render::tokens`), split and routed by `[sessions]`.

use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::render::tokens::count;
use baton_core::session_log::plan::{self, Plan};

impl Engine {
    /// `baton session plan`: the session's tokens per phase, split and
    /// routed by `[sessions]`.
    pub fn plan_session(&self, arg: &str) -> Result<Plan> {
        let (log, _) = self.session_log(arg)?;
        let rules = self.project.config.sessions.rules()?;
        if log.sections.is_empty() {
            return Err(Error::bad_input(format!(
                "the session {} has no phases (`## ` headings) to plan",
                log.front.session_id
            ))
            .hint("a session log's phases are its `## <phase>` sections"));
        }
        Ok(plan::plan(&log, &count, &rules))
    }
}
