//! What the board starts and reviews: a new task from a workflow (the
//! workflows with their declared flags, to pick from), and what a task's
//! or an agent instance's work changed against its base.

use crate::App;
use crate::input::{CancelLink, Json, NewTask};
use crate::views::{ApiError, blocking, not_found, task_id};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use baton_engine::engine::WorkDiff;
use baton_engine::{Outcome, RunOptions};
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

/// A workflow to start a task with.
#[derive(Debug, Serialize, ToSchema)]
pub struct WorkflowView {
    pub name: String,
    pub description: String,
    /// Its declared flags and their defaults (`--flag name=value`).
    #[schema(value_type = Object)]
    pub flags: serde_json::Map<String, Value>,
    /// Its phases, in order.
    pub phases: Vec<String>,
    /// Why it cannot be used as it is written, when it cannot.
    pub error: Option<String>,
}

/// The project's workflows.
#[utoipa::path(get, path = "/api/v1/workflows",
    responses((status = 200, body = Vec<WorkflowView>)))]
pub async fn list_workflows(
    State(app): State<App>,
) -> Result<axum::Json<Vec<WorkflowView>>, ApiError> {
    blocking(move || {
        let views = app
            .eng
            .workflow_names()
            .into_iter()
            .map(|name| match app.eng.load_workflow(&name) {
                Ok(wf) => WorkflowView {
                    name,
                    description: wf.description,
                    flags: wf.flags.into_iter().collect(),
                    phases: wf.phases.iter().map(|p| p.id.to_string()).collect(),
                    error: None,
                },
                Err(e) => WorkflowView {
                    name,
                    description: String::new(),
                    flags: Default::default(),
                    phases: Vec::new(),
                    error: Some(e.message),
                },
            })
            .collect();
        Ok(axum::Json(views))
    })
    .await
}

/// Starts a task, as `baton run WORKFLOW DESCRIPTION --detach` does (or
/// `--queue` with `queue`): created, then run by a process of its own.
/// With `needs`, it is linked instead: it starts by itself once those
/// tasks are all COMPLETE (`GET /api/v1/links`).
#[utoipa::path(post, path = "/api/v1/tasks", request_body = NewTask,
    responses((status = 201, description = "`{id, status, pid?}`: created; it runs (or waits for a worker); `{id, status: \"LINKED\", needs}` with `needs`", body = Object),
        (status = 400, body = ApiError), (status = 409, body = ApiError)))]
pub async fn create_task(
    State(app): State<App>,
    Json(t): Json<NewTask>,
) -> Result<(StatusCode, axum::Json<Value>), ApiError> {
    blocking(move || {
        if !t.needs.is_empty() {
            let l = app.eng.links().add(baton_engine::links::NewLink {
                workflow: t.workflow,
                description: t.description,
                id: t.id,
                flags: t.flags,
                labels: t.labels,
                agent: t.agent,
                queue: t.queue,
                needs: t.needs,
            })?;
            return Ok((
                StatusCode::CREATED,
                axum::Json(serde_json::json!({"id": l.id, "status": "LINKED", "needs": l.needs})),
            ));
        }
        let (id, outcome) = app.eng.run(RunOptions {
            workflow: t.workflow,
            description: t.description,
            id: t.id,
            flags: t.flags,
            labels: t.labels,
            agent: t.agent,
            create_only: !t.queue,
            queue: t.queue,
            imported: None,
            instance: None,
            fresh: false,
            from_log: None,
        })?;
        if outcome == Outcome::Queued {
            return Ok((
                StatusCode::CREATED,
                axum::Json(serde_json::json!({"id": id.as_str(), "status": "QUEUED"})),
            ));
        }
        let child = app.eng.detach_child(&id)?;
        let pid = child.id();
        app.runs.adopt(child);
        Ok((
            StatusCode::CREATED,
            axum::Json(serde_json::json!({"id": id.as_str(), "status": "RUNNING", "pid": pid})),
        ))
    })
    .await
}

/// What a task's work changed against where its first phase started: the
/// files, and the unified diff (at most 2 MiB of it).
#[utoipa::path(get, path = "/api/v1/tasks/{id}/diff", params(("id" = String, Path, description = "the task id")),
    responses((status = 200, description = "`{base, head, files: [{path, change, added, removed}], patch, truncated}`", body = Object),
        (status = 404, body = ApiError)))]
pub async fn task_diff(
    State(app): State<App>,
    Path(id): Path<String>,
) -> Result<axum::Json<WorkDiff>, ApiError> {
    let id = task_id(&id)?;
    blocking(move || {
        let snap = app.eng.find(&id)?.ok_or_else(|| not_found(&id))?;
        Ok(axum::Json(app.eng.task_diff(&snap)?))
    })
    .await
}

/// What an agent instance's work changed against its base, committed or
/// not.
#[utoipa::path(get, path = "/api/v1/instances/{id}/diff", params(("id" = String, Path, description = "the instance id")),
    responses((status = 200, description = "as the task's diff", body = Object),
        (status = 404, body = ApiError), (status = 409, body = ApiError)))]
pub async fn instance_diff(
    State(app): State<App>,
    Path(id): Path<String>,
) -> Result<axum::Json<WorkDiff>, ApiError> {
    let id = super::instances::instance_id(&id)?;
    blocking(move || Ok(axum::Json(app.eng.agents()?.diff(&id)?))).await
}

/// An agent of the project, to start an instance with.
#[derive(Debug, Serialize, ToSchema)]
pub struct AgentView {
    pub name: String,
    /// The built-in CLI it runs (`claude`, `codex`, …); none for a
    /// `command = [...]` agent.
    pub cli: Option<String>,
    /// The project's default agent (`[defaults] agent`).
    pub default: bool,
}

/// The agents configured in `.baton/config.toml`.
#[utoipa::path(get, path = "/api/v1/agents",
    responses((status = 200, body = Vec<AgentView>)))]
pub async fn list_agents(State(app): State<App>) -> axum::Json<Vec<AgentView>> {
    let cfg = &app.eng.project.config;
    axum::Json(
        cfg.agents
            .iter()
            .map(|(name, a)| AgentView {
                name: name.clone(),
                cli: a.cli.map(|c| c.name().to_string()),
                default: cfg.defaults.agent.as_deref() == Some(name),
            })
            .collect(),
    )
}

/// The linked tasks: each with what it needs and how each of those
/// stands now (`needs_status`: `{id: STATUS}`, `null` for one that is
/// gone) and, once started or ended, when and how (`RUNNING`, `QUEUED`,
/// why it could not be, or who cancelled it).
#[utoipa::path(get, path = "/api/v1/links",
    responses((status = 200, description = "`[{id, workflow, description, needs, needs_status, created_at, started}]`", body = Vec<Object>)))]
pub async fn list_links(State(app): State<App>) -> Result<axum::Json<Vec<Value>>, ApiError> {
    blocking(move || {
        let all = app.eng.links().list(false)?;
        let statuses: std::collections::HashMap<String, String> = if all.is_empty() {
            Default::default()
        } else {
            app.eng
                .list()?
                .into_iter()
                .map(|(t, s)| (t.id.to_string(), s.as_str().to_string()))
                .collect()
        };
        Ok(axum::Json(
            all.iter()
                .map(|l| {
                    let mut v = serde_json::to_value(l).expect("a link is JSON");
                    v["created_at"] = Value::String(l.created_at.rfc3339());
                    if let Some(s) = &l.started {
                        v["started"]["at"] = Value::String(s.at.rfc3339());
                    }
                    v["needs_status"] = l
                        .needs
                        .iter()
                        .map(|n| (n.clone(), statuses.get(n).cloned().into()))
                        .collect::<serde_json::Map<_, _>>()
                        .into();
                    v
                })
                .collect(),
        ))
    })
    .await
}

/// Cancels a linked task before it starts: it never starts, and the
/// link says who cancelled it.
#[utoipa::path(post, path = "/api/v1/links/{id}/cancel", params(("id" = String, Path, description = "the linked task's id")),
    request_body = CancelLink,
    responses((status = 200, description = "the link, ended", body = Object), (status = 404, body = ApiError), (status = 409, body = ApiError)))]
pub async fn cancel_link(
    State(app): State<App>,
    Path(id): Path<String>,
    Json(c): Json<CancelLink>,
) -> Result<axum::Json<Value>, ApiError> {
    blocking(move || {
        let links = app.eng.links();
        let find = |id: &str| -> Result<Option<baton_core::link::Link>, ApiError> {
            Ok(links.list(false)?.into_iter().find(|l| l.id == id))
        };
        let Some(l) = find(&id)? else {
            return Err(ApiError::new(
                StatusCode::NOT_FOUND,
                "LINK_NOT_FOUND",
                format!("no linked task {id}"),
                "GET /api/v1/links lists them",
            ));
        };
        let by = c.by.unwrap_or_else(|| "api".into());
        if l.started.is_some() || !links.cancel(&id, &by)? {
            let now = find(&id)?.and_then(|l| l.started).map(|s| s.outcome);
            return Err(ApiError::new(
                StatusCode::CONFLICT,
                "LINK_ENDED",
                format!(
                    "linked task {id} has started or ended already ({})",
                    now.unwrap_or_default()
                ),
                "cancel the task itself: POST /api/v1/tasks/{id}/cancel",
            ));
        }
        let ended = find(&id)?.expect("a link is never removed");
        let mut v = serde_json::to_value(&ended).expect("a link is JSON");
        v["created_at"] = Value::String(ended.created_at.rfc3339());
        if let Some(s) = &ended.started {
            v["started"]["at"] = Value::String(s.at.rfc3339());
        }
        Ok(axum::Json(v))
    })
    .await
}
