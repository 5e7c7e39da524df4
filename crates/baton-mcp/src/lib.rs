//! `baton mcp`: baton's MCP server, which the agent CLIs baton starts are
//! told about. Over stdio (rmcp) it offers the review loop's tools to the
//! agent of a coding or review instance (`request_review`, `create_pr`,
//! `merge_back`, `push_to_github`) and, to any agent phase,
//! `phase_complete`, `report_blocker` and `checkpoint`.
//!
//! The server knows who calls from the environment baton gave the agent
//! (`BATON_INSTANCE`, `BATON_SUMMARY_FILE`, …), or over HTTP from the
//! capability baton handed it (see [`Caller`]). A refused
//! or failed call is a tool error (`isError`) whose text starts with the
//! review loop's code (`WORKFLOW_*`) and gives a hint. A call repeated by
//! a client (a retry) has its effect once and answers as the first did.
//! stdout carries JSON-RPC only (baton's own messages go to stderr), and
//! the server exits when stdin closes.

#[doc(hidden)]
pub mod arguments;
mod caller;
mod inbox_tools;
pub mod jsonrpc;
mod lines;
mod team_tools;
mod tools;

pub use caller::Caller;

use baton_engine::{Engine, Project};
use std::sync::Arc;

/// What the agent reads about the server (Claude Code and Codex show it
/// to the model).
pub const INSTRUCTIONS: &str = "baton runs this agent as part of a durable workflow and records every step. \
Coding agents: call request_review when your work is ready to be reviewed (a review agent checks a copy of your branch; its changes and feedback come back to you), \
and create_pr when it is ready to be merged. Review agents: finish with merge_back(feedback) when more work is needed, or push_to_github when it is ready. \
Any agent: checkpoint(note) to record where the work stands, phase_complete(summary) when the phase's work is done, report_blocker(reason) when it cannot go on. \
Teammates: team_task_claim to start your task, team_checkpoint as you go, team_inbox and team_ack for messages, team_send to write to the lead or a teammate, team_task_update to complete or block a task. \
Errors carry a WORKFLOW_* code and a hint saying what to do.";

/// What [`http_service`] makes.
pub type HttpService = rmcp::transport::streamable_http_server::StreamableHttpService<
    tools::Baton,
    rmcp::transport::streamable_http_server::session::local::LocalSessionManager,
>;

/// baton's MCP tools over Streamable HTTP, for `baton serve` to mount at
/// `/mcp`: every protocol revision rmcp speaks, sessions kept in memory
/// for the revisions that have them. The caller is what the request's
/// capability says: `baton serve` checks it and puts a [`Caller`] in the
/// request's extensions (none: an anonymous caller, who may use the tools
/// that need no identity). `Host` and `Origin` are checked by the server
/// for every route, this one included.
pub fn http_service(
    engine: Arc<Engine>,
    max_body: usize,
    stop: tokio_util::sync::CancellationToken,
) -> HttpService {
    use rmcp::transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
    };
    // No SSE priming events (an event with empty data opening each
    // stream, here and in each session's request streams): Gemini CLI
    // 0.61's client parses every event as JSON and drops the connection on
    // them. Nothing here resumes a stream anyway (no event store).
    let config = StreamableHttpServerConfig::default()
        .with_sse_retry(None)
        .with_cancellation_token(stop)
        .with_max_request_body_bytes(max_body)
        .disable_allowed_hosts();
    let mut sessions = LocalSessionManager::default();
    sessions.session_config.sse_retry = None;
    StreamableHttpService::new(
        move || Ok(tools::Baton::new(engine.clone(), Caller::default())),
        Arc::new(sessions),
        config,
    )
}

/// Every tool's name and input schema, as `tools/list` gives them (for
/// the fuzz target, which judges arguments against each).
#[doc(hidden)]
pub fn tool_schemas() -> Vec<(String, serde_json::Map<String, serde_json::Value>)> {
    tools::Baton::all_tools()
        .list_all()
        .into_iter()
        .map(|t| (t.name.to_string(), (*t.input_schema).clone()))
        .collect()
}

/// Serves MCP as `baton mcp` does (one JSON-RPC message a line) on any
/// reader and writer until `input` ends, for `caller` (the fuzz target
/// drives it over an in-process pipe).
#[doc(hidden)]
pub async fn serve_lines<R, W>(
    engine: Arc<Engine>,
    caller: Caller,
    input: R,
    output: W,
) -> Result<(), String>
where
    R: tokio::io::AsyncRead + Unpin + Send + 'static,
    W: tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    lines::serve(tools::Baton::new(engine, caller), input, output).await
}

/// Serves MCP over stdin/stdout until stdin closes.
pub fn serve_stdio(project: Project) -> Result<(), baton_engine::Error> {
    let caller = Caller::from_env(&project.root);
    let engine = Engine::open(project, Arc::new(baton_engine::engine::Silent))?;
    let server = tools::Baton::new(Arc::new(engine), caller);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| baton_engine::Error::op(format!("cannot start the MCP server: {e}")))?;
    rt.block_on(lines::serve(
        server,
        tokio::io::stdin(),
        tokio::io::stdout(),
    ))
    .map_err(baton_engine::Error::op)
}
