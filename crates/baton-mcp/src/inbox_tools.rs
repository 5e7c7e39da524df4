//! The inbox tools: an agent tells a person something (`notify`), asks
//! them to choose (`request_decision`) or to allow an action
//! (`request_approval`). The two requests wait for the answer (up to
//! `wait_seconds`); asked again with the same text, after a timeout or a
//! crash, they find the same item, and an answer given meanwhile comes
//! back at once. The work is `baton_engine::inbox`.

use crate::caller::Caller;
use crate::tools::{Baton, ToolError, no_formats};
use baton_core::inbox::{InboxItem, ItemKind};
use baton_engine::Error;
use baton_engine::inbox::Raise;
use rmcp::handler::server::wrapper::{Json, Parameters};
use rmcp::schemars::{self, JsonSchema};
use rmcp::{tool, tool_router};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// How long a request waits for its answer by default, and at most.
const WAIT_DEFAULT: u64 = 600;
const WAIT_MAX: u64 = 3600;

#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(transform = no_formats)]
pub struct NotifyInput {
    pub message: String,
    /// info (default) or task_complete.
    pub level: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(transform = no_formats)]
pub struct DecisionInput {
    pub question: String,
    /// The choices; the answer is one of them.
    pub options: Vec<String>,
    /// How long to wait for the answer (default 600, at most 3600).
    pub wait_seconds: Option<u64>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(transform = no_formats)]
pub struct ApprovalInput {
    /// What you want to do, in a sentence.
    pub action: String,
    /// How long to wait for the answer (default 600, at most 3600).
    pub wait_seconds: Option<u64>,
}

#[derive(Debug, Serialize, JsonSchema)]
#[schemars(transform = no_formats)]
pub struct ItemOut {
    /// The inbox item's id (`baton inbox` shows it to the person).
    pub id: String,
    /// False while nobody has answered: ask again with the same text to
    /// keep waiting.
    pub answered: bool,
    /// The option chosen, `approved` or `denied`, or `acknowledged`.
    pub answer: Option<String>,
    pub reason: Option<String>,
    pub by: Option<String>,
}

impl From<InboxItem> for ItemOut {
    fn from(i: InboxItem) -> Self {
        ItemOut {
            id: i.id,
            answered: i.answer.is_some(),
            answer: i.answer.as_ref().map(|a| a.choice.clone()),
            reason: i.answer.as_ref().and_then(|a| a.reason.clone()),
            by: i.answer.map(|a| a.by),
        }
    }
}

fn raise(caller: &Caller, kind: ItemKind, text: String, options: Vec<String>) -> Raise {
    Raise {
        kind,
        session: caller.task.clone(),
        phase: caller.phase.clone(),
        text,
        options,
        task_complete: false,
        raised_by: caller
            .teammate
            .clone()
            .or_else(|| caller.instance.as_ref().map(|i| i.to_string()))
            .or_else(|| {
                caller
                    .phase
                    .as_ref()
                    .map(|p| format!("the agent of phase {p}"))
            })
            .unwrap_or_else(|| "an agent".into()),
    }
}

fn wait_of(s: Option<u64>) -> Duration {
    Duration::from_secs(s.unwrap_or(WAIT_DEFAULT).min(WAIT_MAX))
}

#[tool_router(router = inbox_tools, vis = "pub(crate)")]
impl Baton {
    #[tool(
        description = "Tell the person running baton something (it goes to their inbox and your session log). level = task_complete says the work is done.",
        annotations(
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn notify(
        &self,
        ext: rmcp::model::Extensions,
        Parameters(input): Parameters<NotifyInput>,
    ) -> Result<Json<ItemOut>, ToolError> {
        let eng = self.engine();
        let caller = self.caller_of(&ext);
        tokio::task::spawn_blocking(move || {
            let task_complete = match input.level.as_deref() {
                None | Some("info") => false,
                Some("task_complete") => true,
                Some(l) => {
                    return Err(ToolError::from(
                        Error::bad_input(format!("level {l:?} is neither info nor task_complete"))
                            .hint("leave it out, or say task_complete when the work is done"),
                    ));
                }
            };
            let mut r = raise(&caller, ItemKind::Notify, input.message, Vec::new());
            r.task_complete = task_complete;
            Ok(Json(eng.inbox().raise(r)?.into()))
        })
        .await
        .map_err(|e| ToolError::from(Error::op(format!("the tool call panicked: {e}"))))?
    }

    #[tool(
        description = "Ask the person running baton to choose between options, and wait for the answer (up to wait_seconds). Not answered yet: call it again with the same question to keep waiting; an answer given meanwhile comes back at once.",
        annotations(
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn request_decision(
        &self,
        ext: rmcp::model::Extensions,
        Parameters(input): Parameters<DecisionInput>,
    ) -> Result<Json<ItemOut>, ToolError> {
        let eng = self.engine();
        let caller = self.caller_of(&ext);
        tokio::task::spawn_blocking(move || {
            let options: Vec<String> = input
                .options
                .iter()
                .map(|o| o.trim().to_string())
                .filter(|o| !o.is_empty())
                .collect();
            if options.len() < 2 {
                return Err(ToolError::from(
                    Error::bad_input("a decision needs at least two options")
                        .hint("list the choices in `options`; for a yes or no on an action, use request_approval"),
                ));
            }
            let inbox = eng.inbox();
            let item = inbox.raise(raise(&caller, ItemKind::Decision, input.question, options))?;
            Ok(Json(inbox.wait(&item.id, wait_of(input.wait_seconds))?.into()))
        })
        .await
        .map_err(|e| ToolError::from(Error::op(format!("the tool call panicked: {e}"))))?
    }

    #[tool(
        description = "Ask the person running baton to approve an action before you take it, and wait for the answer (approved or denied, with a reason). Not answered yet: call it again with the same action to keep waiting.",
        annotations(
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn request_approval(
        &self,
        ext: rmcp::model::Extensions,
        Parameters(input): Parameters<ApprovalInput>,
    ) -> Result<Json<ItemOut>, ToolError> {
        let eng = self.engine();
        let caller = self.caller_of(&ext);
        tokio::task::spawn_blocking(move || {
            let inbox = eng.inbox();
            let item = inbox.raise(raise(&caller, ItemKind::Approval, input.action, Vec::new()))?;
            Ok(Json(
                inbox.wait(&item.id, wait_of(input.wait_seconds))?.into(),
            ))
        })
        .await
        .map_err(|e| ToolError::from(Error::op(format!("the tool call panicked: {e}"))))?
    }
}
