//! The tools: their input and output schemas, who may call each, and how a
//! client's retry of a call that already had its effect answers as the
//! first call did. The work is `baton_engine::instances` and
//! `baton_engine::agent_reports`; each call runs on a blocking thread.

use crate::caller::Caller;
use baton_core::instance::{Decision, ErrorCode, Instance, Kind, Status};
use baton_engine::instances::{Agents, PushOptions, ReviewOptions};
use baton_engine::{Engine, Error, agent_reports};
use rmcp::handler::server::wrapper::{Json, Parameters};
use rmcp::model::{CallToolResponse, CallToolResult, ContentBlock};
use rmcp::schemars::{self, JsonSchema};
use rmcp::{tool, tool_handler, tool_router};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// A refused or failed call: `isError`, its text `CODE: message` and a
/// `hint:` line.
#[derive(Debug)]
pub struct ToolError(Error);

impl rmcp::handler::server::tool::IntoCallToolResult for ToolError {
    fn into_call_tool_result(self) -> Result<CallToolResponse, rmcp::ErrorData> {
        let e = self.0;
        let mut text = match e.code {
            Some(c) if !e.message.starts_with(c.as_str()) => format!("{c}: {}", e.message),
            Some(_) => e.message.clone(),
            None => format!("{}: {}", ErrorCode::InvalidState, e.message),
        };
        for h in &e.hints {
            text.push_str(&format!("\nhint: {h}"));
        }
        Ok(CallToolResult::error(vec![ContentBlock::text(text)]).into())
    }
}

impl From<Error> for ToolError {
    fn from(e: Error) -> Self {
        ToolError(e)
    }
}

fn refused(code: ErrorCode, message: String, hint: &str) -> ToolError {
    ToolError(Error::coded(code, message).hint(hint))
}

// ----- inputs and outputs --------------------------------------------------

/// Integers are plain `"type": "integer"`: schemars' `"format": "int64"`
/// (or `uint64`) makes some clients print warnings about an unknown format.
/// Every `format` of a property goes, nested definitions' too.
pub(crate) fn no_formats(schema: &mut schemars::Schema) {
    fn strip(v: &mut serde_json::Value) {
        match v {
            serde_json::Value::Object(o) => {
                if o.get("format").is_some_and(|f| f.is_string()) && o.get("type").is_some() {
                    o.remove("format");
                }
                for x in o.values_mut() {
                    strip(x);
                }
            }
            serde_json::Value::Array(a) => a.iter_mut().for_each(strip),
            _ => {}
        }
    }
    if let Some(o) = schema.as_object_mut() {
        for v in o.values_mut() {
            strip(v);
        }
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct RequestReviewInput {
    /// What the reviewer should look at (default: the project's review prompt).
    pub prompt: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
#[schemars(transform = no_formats)]
pub struct ReviewStarted {
    /// The review instance's id.
    pub review_id: String,
    /// Which review of this work it is (1 for the first).
    pub iteration: i64,
    /// The review's branch, a fork of yours.
    pub branch: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct PullRequestInput {
    /// The pull request's title (default: the first line of the instructions).
    pub title: Option<String>,
    /// Its description (default: the instructions).
    pub body: Option<String>,
    /// Open it as a draft.
    #[serde(default)]
    pub draft: bool,
}

#[derive(Debug, Serialize, JsonSchema)]
#[schemars(transform = no_formats)]
pub struct PullRequestOpened {
    pub number: i64,
    pub url: String,
    /// The branch pushed (the coding instance's).
    pub branch: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct MergeBackInput {
    /// What the coding agent is to do next: it receives this as its next prompt.
    pub feedback: String,
}

#[derive(Debug, Serialize, JsonSchema)]
#[schemars(transform = no_formats)]
pub struct MergedBack {
    /// The coding instance your branch was merged into.
    pub parent_id: String,
    /// Its reviews so far, this one included.
    pub review_count: i64,
    pub max_reviews: i64,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct PhaseCompleteInput {
    /// What was done, for the people and agents that come next.
    pub summary: String,
    /// The files changed (baton also reads them from git).
    #[serde(default)]
    pub files_changed: Vec<String>,
    /// The acceptance criteria met.
    #[serde(default)]
    pub acceptance_criteria: Vec<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct BlockerInput {
    /// Why the work cannot go on, and what would unblock it.
    pub reason: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct CheckpointInput {
    /// Where the work stands, in a sentence.
    pub note: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Recorded {
    /// Always true: the report is on disk.
    pub recorded: bool,
    /// What happens with it.
    pub effect: String,
}

#[derive(Debug, Serialize, JsonSchema)]
#[schemars(transform = no_formats)]
pub struct CheckpointTaken {
    /// Its position: in the instance's journal, or among the phase's checkpoints.
    pub seq: i64,
}

// ----- the server ------------------------------------------------------------

#[derive(Clone)]
pub struct Baton {
    engine: Arc<Engine>,
    caller: Arc<Caller>,
}

impl Baton {
    pub fn new(engine: Arc<Engine>, caller: Caller) -> Baton {
        Baton {
            engine,
            caller: Arc::new(caller),
        }
    }

    pub(crate) fn engine(&self) -> Arc<Engine> {
        self.engine.clone()
    }

    /// Who calls: over HTTP, what the request's capability says (put there
    /// by `baton serve`, nobody without one); over stdio, the environment
    /// baton gave the agent.
    pub(crate) fn caller_of(&self, ext: &rmcp::model::Extensions) -> Arc<Caller> {
        match ext.get::<http::request::Parts>() {
            Some(parts) => Arc::new(
                parts
                    .extensions
                    .get::<Caller>()
                    .cloned()
                    .unwrap_or_default(),
            ),
            None => self.caller.clone(),
        }
    }

    /// Runs `f` with the project's agents on a blocking thread.
    async fn with_agents<T: Send + 'static>(
        &self,
        caller: Arc<Caller>,
        f: impl FnOnce(&Agents<'_>, &Caller) -> Result<T, ToolError> + Send + 'static,
    ) -> Result<T, ToolError> {
        let engine = self.engine.clone();
        tokio::task::spawn_blocking(move || {
            let agents = engine.agents()?;
            f(&agents, &caller)
        })
        .await
        .map_err(|e| ToolError(Error::op(format!("the tool call panicked: {e}"))))?
    }

    async fn blocking<T: Send + 'static>(
        &self,
        caller: Arc<Caller>,
        f: impl FnOnce(&Caller) -> Result<T, ToolError> + Send + 'static,
    ) -> Result<T, ToolError> {
        tokio::task::spawn_blocking(move || f(&caller))
            .await
            .map_err(|e| ToolError(Error::op(format!("the tool call panicked: {e}"))))?
    }
}

/// The caller's instance, which must be of `kind` for `tool`.
fn caller_instance(
    agents: &Agents<'_>,
    caller: &Caller,
    kind: Kind,
    tool: &str,
) -> Result<Instance, ToolError> {
    let Some(id) = &caller.instance else {
        return Err(refused(
            ErrorCode::InvalidState,
            format!("{tool} is for baton's coding and review agents, and this agent is not one"),
            "run the agent as an instance (`baton agent spawn`, or `instance = { … }` on its phase)",
        ));
    };
    let v = agents.show(id)?;
    if v.instance.kind() != kind {
        let (is, may) = match kind {
            Kind::Coding => (
                "a review agent",
                "a review finishes with merge_back or push_to_github",
            ),
            Kind::Review => (
                "a coding agent",
                "a coding agent asks for a review (request_review) or opens its pull request (create_pr)",
            ),
        };
        return Err(refused(
            ErrorCode::InvalidState,
            format!("{id} is {is}, which may not call {tool}"),
            may,
        ));
    }
    Ok(v.instance)
}

/// The attempt's summary file, for the phase tools.
fn summary_file(caller: &Caller, tool: &str) -> Result<std::path::PathBuf, ToolError> {
    if let Some(why) = &caller.summary_refused {
        return Err(refused(
            ErrorCode::InvalidConfiguration,
            format!("{tool} is refused: {why}"),
            "baton names where a phase's reports go; run the agent through baton, which sets it",
        ));
    }
    caller.summary_file.clone().ok_or_else(|| {
        refused(
            ErrorCode::InvalidState,
            format!("{tool} reports on a phase baton runs, and this agent runs in none"),
            "only agents started by baton (a workflow's phase or an agent instance) report phases",
        )
    })
}

fn pull_request_of(owner: &Instance) -> Option<PullRequestOpened> {
    let pr = owner.coding()?.pull_request.clone()?;
    Some(PullRequestOpened {
        number: i64::from(pr.number),
        url: pr.url,
        branch: owner.resources.branch.clone().unwrap_or_default(),
    })
}

#[tool_router]
impl Baton {
    #[tool(
        description = "Ask for a review of your work (coding agents). Your changes are committed on your branch, and a review agent starts on a copy of it; its changes and its feedback come back to you as your next prompt. Refused past the review limit or while a review is in flight.",
        annotations(
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn request_review(
        &self,
        ext: rmcp::model::Extensions,
        Parameters(input): Parameters<RequestReviewInput>,
    ) -> Result<Json<ReviewStarted>, ToolError> {
        self.with_agents(self.caller_of(&ext), move |agents, caller| {
            // The instance to review is the caller's: when it does not
            // exist, the parent is not found, as with `baton agent review`.
            let me = caller_instance(agents, caller, Kind::Coding, "request_review").map_err(
                |e| match (e.0.code, &caller.instance) {
                    (Some(ErrorCode::InstanceNotFound), Some(id)) => refused(
                        ErrorCode::ParentNotFound,
                        format!("there is no instance {id} to review"),
                        "this agent's BATON_INSTANCE names no instance: `baton agent ls` lists them",
                    ),
                    _ => e,
                },
            )?;
            let wanted = input
                .prompt
                .clone()
                .or(agents.settings().review.review_prompt.clone());
            let all = agents.show(&me.id)?;
            // A retry: the review this request started is in flight.
            let current = all
                .instance
                .coding()
                .and_then(|c| c.current_review_instance_id.clone());
            let review = match current {
                Some(r) => {
                    let rv = agents.show(&r)?.instance;
                    let same = matches!(&rv.config, baton_core::instance::Config::Review(rc) if rc.review_prompt == wanted);
                    if !same {
                        return Err(refused(
                            ErrorCode::ReviewInProgress,
                            format!("{} already has review {r} in flight", me.id),
                            "wait for it to merge back or push, or ask a person to end it",
                        ));
                    }
                    rv
                }
                None => agents.request_review(
                    &me.id,
                    ReviewOptions {
                        prompt: input.prompt,
                        ..Default::default()
                    },
                )?,
            };
            Ok(Json(ReviewStarted {
                review_id: review.id.to_string(),
                iteration: i64::from(review.review().map(|r| r.iteration).unwrap_or(1)),
                branch: review.resources.branch.clone().unwrap_or_default(),
            }))
        })
        .await
    }

    #[tool(
        description = "Open the pull request for your work (coding agents): your branch is pushed and a pull request opened on GitHub. Refused while a review is in flight, or before the first review when one is required.",
        annotations(
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = true
        )
    )]
    async fn create_pr(
        &self,
        ext: rmcp::model::Extensions,
        Parameters(input): Parameters<PullRequestInput>,
    ) -> Result<Json<PullRequestOpened>, ToolError> {
        self.with_agents(self.caller_of(&ext), move |agents, caller| {
            let me = caller_instance(agents, caller, Kind::Coding, "create_pr")?;
            if me.status == Status::PrCreated
                && let Some(pr) = pull_request_of(&me)
            {
                return Ok(Json(pr));
            }
            let owner = agents.push(
                &me.id,
                PushOptions {
                    title: input.title,
                    body: input.body,
                    draft: input.draft,
                },
            )?;
            pull_request_of(&owner)
                .map(Json)
                .ok_or_else(|| ToolError(Error::op("the pull request was not recorded")))
        })
        .await
    }

    #[tool(
        description = "Finish your review with feedback (review agents): your commits are merged into the coding agent's branch, which gets your feedback as its next prompt. A conflict changes nothing and names the files.",
        annotations(
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn merge_back(
        &self,
        ext: rmcp::model::Extensions,
        Parameters(input): Parameters<MergeBackInput>,
    ) -> Result<Json<MergedBack>, ToolError> {
        self.with_agents(self.caller_of(&ext), move |agents, caller| {
            let me = caller_instance(agents, caller, Kind::Review, "merge_back")?;
            let r = me.review().expect("a review").clone();
            let done_before = r.decision == Some(Decision::MergeBack)
                && r.decision_reason.as_deref() == Some(input.feedback.as_str());
            let parent = if done_before {
                agents.show(&r.parent_instance_id)?.instance
            } else {
                agents.merge_back(&me.id, &input.feedback)?
            };
            let c = parent.coding().expect("a review's parent codes");
            Ok(Json(MergedBack {
                parent_id: parent.id.to_string(),
                review_count: i64::from(c.review_count),
                max_reviews: i64::from(c.max_reviews),
            }))
        })
        .await
    }

    #[tool(
        description = "Finish your review by opening the pull request (review agents): your commits are merged into the coding agent's branch, which is pushed, and a pull request is opened on GitHub.",
        annotations(
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = true
        )
    )]
    async fn push_to_github(
        &self,
        ext: rmcp::model::Extensions,
        Parameters(input): Parameters<PullRequestInput>,
    ) -> Result<Json<PullRequestOpened>, ToolError> {
        self.with_agents(self.caller_of(&ext), move |agents, caller| {
            let me = caller_instance(agents, caller, Kind::Review, "push_to_github")?;
            let r = me.review().expect("a review").clone();
            let owner = if r.decision == Some(Decision::PushToGithub) {
                agents.show(&r.parent_instance_id)?.instance
            } else {
                agents.push(
                    &me.id,
                    PushOptions {
                        title: input.title,
                        body: input.body,
                        draft: input.draft,
                    },
                )?
            };
            pull_request_of(&owner)
                .map(Json)
                .ok_or_else(|| ToolError(Error::op("the pull request was not recorded")))
        })
        .await
    }

    #[tool(
        description = "Say that this phase's work is done, with its summary: baton records the summary as the phase's when the phase ends.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn phase_complete(
        &self,
        ext: rmcp::model::Extensions,
        Parameters(input): Parameters<PhaseCompleteInput>,
    ) -> Result<Json<Recorded>, ToolError> {
        self.blocking(self.caller_of(&ext), move |caller| {
            let file = summary_file(caller, "phase_complete")?;
            if input.summary.trim().is_empty() {
                return Err(refused(
                    ErrorCode::InvalidConfiguration,
                    "the summary is empty".into(),
                    "say in a few sentences what was done",
                ));
            }
            let mut text = input.summary.trim().to_string();
            if !input.files_changed.is_empty() {
                text.push_str("\n\nFiles changed: ");
                text.push_str(&input.files_changed.join(", "));
            }
            if !input.acceptance_criteria.is_empty() {
                text.push_str("\n\nAcceptance criteria met:\n");
                for c in &input.acceptance_criteria {
                    text.push_str(&format!("- {c}\n"));
                }
            }
            agent_reports::write_summary(&file, &text).map_err(|e| {
                ToolError(Error::op(format!("cannot write {}: {e}", file.display())))
            })?;
            Ok(Json(Recorded {
                recorded: true,
                effect: "it becomes the phase's summary when the phase ends".into(),
            }))
        })
        .await
    }

    #[tool(
        description = "Say that the work cannot go on and why: when this agent's run ends, its phase fails with this reason as its blocker, for a person to resolve.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn report_blocker(
        &self,
        ext: rmcp::model::Extensions,
        Parameters(input): Parameters<BlockerInput>,
    ) -> Result<Json<Recorded>, ToolError> {
        self.blocking(self.caller_of(&ext), move |caller| {
            let file = summary_file(caller, "report_blocker")?;
            if input.reason.trim().is_empty() {
                return Err(refused(
                    ErrorCode::InvalidConfiguration,
                    "the reason is empty".into(),
                    "say what blocks the work and what would unblock it",
                ));
            }
            agent_reports::write_blocker(&file, input.reason.trim())
                .map_err(|e| ToolError(Error::op(format!("cannot write the blocker: {e}"))))?;
            Ok(Json(Recorded {
                recorded: true,
                effect: "the phase fails with this blocker when this run ends".into(),
            }))
        })
        .await
    }

    #[tool(
        description = "Record where the work stands, durably (in baton's journal): after a crash, the next agent is told.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn checkpoint(
        &self,
        ext: rmcp::model::Extensions,
        Parameters(input): Parameters<CheckpointInput>,
    ) -> Result<Json<CheckpointTaken>, ToolError> {
        let in_instance = self.caller_of(&ext).instance.is_some();
        if in_instance {
            return self
                .with_agents(self.caller_of(&ext), move |agents, caller| {
                    let id = caller.instance.clone().expect("checked");
                    let seq = agents.checkpoint(&id, &input.note)?;
                    Ok(Json(CheckpointTaken {
                        seq: i64::try_from(seq).unwrap_or(i64::MAX),
                    }))
                })
                .await;
        }
        self.blocking(self.caller_of(&ext), move |caller| {
            let file = summary_file(caller, "checkpoint")?;
            let note = input.note.trim().to_string();
            if note.is_empty() {
                return Err(refused(
                    ErrorCode::InvalidConfiguration,
                    "the checkpoint's note is empty".into(),
                    "say in a sentence where the work stands",
                ));
            }
            let before = agent_reports::checkpoints(&file);
            // A retry of the last checkpoint is that checkpoint.
            let n = if before.last() == Some(&note) {
                before.len()
            } else {
                agent_reports::append_checkpoint(&file, &note)
                    .map_err(|e| ToolError(Error::op(format!("cannot record it: {e}"))))?
            };
            Ok(Json(CheckpointTaken { seq: n as i64 }))
        })
        .await
    }
}

impl Baton {
    /// Every tool: the agents', the teammates' (`team_tools.rs`) and the
    /// inbox's (`inbox_tools.rs`).
    pub(crate) fn all_tools() -> rmcp::handler::server::router::tool::ToolRouter<Baton> {
        Self::tool_router() + Self::team_tools() + Self::inbox_tools()
    }
}

#[tool_handler(router = Self::all_tools())]
impl rmcp::ServerHandler for Baton {
    /// A call's arguments are judged against the tool's schema and the
    /// size limits first (`arguments.rs`), and what the SDK still cannot
    /// read into the tool's input comes back the same way: a tool error
    /// the agent can correct, `WORKFLOW_INVALID_ARGUMENTS` with a hint.
    async fn call_tool(
        &self,
        request: rmcp::model::CallToolRequestParams,
        context: rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> Result<CallToolResponse, rmcp::ErrorData> {
        use rmcp::handler::server::tool::IntoCallToolResult;
        let router = Self::all_tools();
        let invalid = |message: String, hint: String| {
            ToolError(Error::coded(ErrorCode::InvalidArguments, message).hint(hint))
                .into_call_tool_result()
        };
        if let Some(tool) = router.get(&request.name) {
            let none = serde_json::Map::new();
            let args = request.arguments.as_ref().unwrap_or(&none);
            if let Some((message, hint)) =
                crate::arguments::judge(&request.name, &tool.input_schema, args)
            {
                return invalid(message, hint);
            }
        }
        let name = request.name.clone();
        let tcc = rmcp::handler::server::tool::ToolCallContext::new(self, request, context);
        match router.call(tcc).await {
            Err(e)
                if e.code == rmcp::model::ErrorCode::INVALID_PARAMS && router.has_route(&name) =>
            {
                invalid(
                    format!("the arguments of {name} cannot be read: {}", e.message),
                    format!("{name}'s schema is in tools/list"),
                )
            }
            other => other,
        }
    }

    fn get_info(&self) -> rmcp::model::ServerConfig {
        rmcp::model::ServerConfig::new(
            rmcp::model::ServerCapabilities::builder()
                .enable_tools()
                .build(),
        )
        .with_server_info(rmcp::model::Implementation::new(
            "baton",
            env!("CARGO_PKG_VERSION"),
        ))
        .with_instructions(crate::INSTRUCTIONS)
    }
}
