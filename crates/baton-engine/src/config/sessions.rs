//! `[sessions]` of `.baton/config.toml`: how session logs show subagents,
//! and how `baton session plan` splits a session and routes its phases.

use crate::error::{Error, Result};
pub use baton_core::session_log::journal::SubagentMode;
use baton_core::session_log::plan::Rules;
use serde::Deserialize;

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionsConfig {
    /// How a subagent's session shows in its parent's log: "inline" (its
    /// text in a callout), "link" (`[[id]]`, the default) or "embed"
    /// (`![[id]]`).
    pub subagents: Option<String>,
    /// A session over this many tokens is split by phases (default 50000).
    pub split_tokens: Option<u64>,
    /// The agent (or model) routine phases go to.
    pub fast: Option<String>,
    /// The agent (or model) decision phases go to.
    pub strong: Option<String>,
    /// Words in a phase's name that make it a decision phase (default:
    /// plan, design, decide, review, architect, approve); a phase with a
    /// decision or a question for a person in its log is one too.
    pub decision_phases: Option<Vec<String>>,
}

impl SessionsConfig {
    pub fn subagent_mode(&self) -> Result<SubagentMode> {
        match self.subagents.as_deref() {
            None | Some("link") => Ok(SubagentMode::Link),
            Some("inline") => Ok(SubagentMode::Inline),
            Some("embed") => Ok(SubagentMode::Embed),
            Some(other) => Err(Error::bad_input(format!(
                "[sessions] subagents = {other:?}: not a way to show subagents"
            ))
            .hint("use \"inline\", \"link\" or \"embed\" in .baton/config.toml")),
        }
    }

    pub fn rules(&self) -> Result<Rules> {
        let threshold = self.split_tokens.unwrap_or(50_000);
        if threshold == 0 {
            return Err(Error::bad_input(
                "[sessions] split_tokens = 0: a part must hold some tokens",
            )
            .hint("set it to the most tokens one agent should get at once, e.g. 50000"));
        }
        Ok(Rules {
            threshold,
            fast: self.fast.clone(),
            strong: self.strong.clone(),
            decision_words: self.decision_phases.clone().unwrap_or_else(|| {
                ["plan", "design", "decide", "review", "architect", "approve"]
                    .map(String::from)
                    .to_vec()
            }),
        })
    }
}
