//! The JSON API under `/api/v1`: tasks (a filtered list, one task's state
//! document, its journal in pages), deliveries and agent instances to
//! read; resume and cancel a task. What the board starts and reviews is
//! in `api/board.rs` (new tasks, workflows, diffs) and `api/comments.rs`
//! (comments on a diff's lines), the moves on agent
//! instances in `api/instances.rs`, what people answer and watch in
//! `api/people.rs` (the inbox, teams). The OpenAPI 3.1 document at
//! `/api/v1/openapi.json` is generated from these handlers (utoipa).
//! Errors are JSON with a stable `code` and a `hint`; what a request
//! carries is read in `input.rs`.

mod board;
mod comments;
mod instances;
mod people;

use crate::App;
use crate::input::{Answer, Json, Newest, Page, Query, TaskFilter};
use crate::views::{ApiError, DeliveryView, JournalPage, TaskRow, blocking, not_found, task_id};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use baton_core::lease::DisplayStatus;
use serde_json::Value;
use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

#[derive(OpenApi)]
#[openapi(
    info(
        title = "baton",
        description = "Durable multi-phase workflows for AI coding agents: the tasks, their journals, webhook deliveries and agent instances of one project."
    ),
    components(schemas(ApiError))
)]
struct Doc;

/// The API's routes and its OpenAPI document.
pub fn routes() -> (axum::Router<App>, utoipa::openapi::OpenApi) {
    OpenApiRouter::with_openapi(Doc::openapi())
        .routes(routes!(list_tasks, board::create_task))
        .routes(routes!(board::list_workflows))
        .routes(routes!(board::list_agents))
        .routes(routes!(board::list_links))
        .routes(routes!(board::cancel_link))
        .routes(routes!(board::task_diff))
        .routes(routes!(comments::task_comments, comments::comment_task))
        .routes(routes!(
            comments::instance_comments,
            comments::comment_instance
        ))
        .routes(routes!(board::instance_diff))
        .routes(routes!(people::list_inbox))
        .routes(routes!(people::answer_item))
        .routes(routes!(people::list_teams))
        .routes(routes!(people::get_team))
        .routes(routes!(get_task))
        .routes(routes!(task_journal))
        .routes(routes!(crate::output::task_output))
        .routes(routes!(crate::output::task_output_stream))
        .routes(routes!(crate::output::task_log))
        .routes(routes!(crate::output::activity))
        .routes(routes!(resume_task))
        .routes(routes!(cancel_task))
        .routes(routes!(handoff_task))
        .routes(routes!(answer_task))
        .routes(routes!(list_deliveries))
        .routes(routes!(list_instances, instances::spawn))
        .routes(routes!(instances::review))
        .routes(routes!(instances::merge_back))
        .routes(routes!(instances::push))
        .routes(routes!(instances::kill))
        .split_for_parts()
}

/// The tasks, newest first.
#[utoipa::path(get, path = "/api/v1/tasks", params(TaskFilter),
    responses((status = 200, body = Vec<TaskRow>), (status = 400, body = ApiError), (status = 401, body = ApiError)))]
async fn list_tasks(
    State(app): State<App>,
    Query(f): Query<TaskFilter>,
) -> Result<axum::Json<Vec<TaskRow>>, ApiError> {
    let f = f.check()?;
    blocking(move || {
        let eng = &app.eng;
        let mut rows = Vec::new();
        for (t, status) in eng.list()? {
            if f.status.is_some_and(|s| s != status)
                || f.workflow.as_deref().is_some_and(|w| w != t.workflow)
            {
                continue;
            }
            if let Some((k, v)) = &f.label {
                let snap = eng.load(&t.id)?;
                if snap.state.labels.get(k) != Some(v) {
                    continue;
                }
            }
            rows.push(TaskRow::of(&t, status));
        }
        rows.sort_by(|a, b| b.created_at.cmp(&a.created_at).then(a.id.cmp(&b.id)));
        Ok(axum::Json(rows))
    })
    .await
}

/// One task's state document (as `baton show --json` prints it).
#[utoipa::path(get, path = "/api/v1/tasks/{id}", params(("id" = String, Path, description = "the task id")),
    responses((status = 200, description = "the state document (docs/cli.md, `show --json`)", body = Object), (status = 404, body = ApiError)))]
async fn get_task(
    State(app): State<App>,
    Path(id): Path<String>,
) -> Result<axum::Json<Value>, ApiError> {
    let id = task_id(&id)?;
    blocking(move || {
        let snap = app.eng.find(&id)?.ok_or_else(|| not_found(&id))?;
        Ok(axum::Json(app.eng.document(&snap)?))
    })
    .await
}

/// One task's journal, a page at a time (as `baton log --json` prints it).
#[utoipa::path(get, path = "/api/v1/tasks/{id}/journal", params(("id" = String, Path, description = "the task id"), Page),
    responses((status = 200, body = JournalPage), (status = 404, body = ApiError)))]
async fn task_journal(
    State(app): State<App>,
    Path(id): Path<String>,
    Query(page): Query<Page>,
) -> Result<axum::Json<JournalPage>, ApiError> {
    let id = task_id(&id)?;
    let after = u64::from(page.after.unwrap_or(0));
    let limit = page.limit.unwrap_or(200).clamp(1, 1000) as usize;
    blocking(move || {
        app.eng.find(&id)?.ok_or_else(|| not_found(&id))?;
        let records = app.eng.events(&id, after, limit)?;
        let next_after = records.last().map(|r| r.seq as u32);
        Ok(axum::Json(JournalPage {
            events: records
                .iter()
                .map(|r| baton_core::document::journal_line(id.as_str(), r))
                .collect(),
            next_after: if records.len() == limit {
                next_after
            } else {
                None
            },
        }))
    })
    .await
}

/// Resumes a CRASHED, FAILED or WAITING task, as `baton resume ID` in a
/// process of its own; answers once it started. A task waiting for a
/// person's answer is refused: a resume would do nothing, the answer is
/// what moves it (`…/answer`).
#[utoipa::path(post, path = "/api/v1/tasks/{id}/resume", params(("id" = String, Path, description = "the task id")),
    responses((status = 202, description = "`{task, pid}`: the resume runs", body = Object), (status = 404, body = ApiError), (status = 409, body = ApiError)))]
async fn resume_task(
    State(app): State<App>,
    Path(id): Path<String>,
) -> Result<(StatusCode, axum::Json<Value>), ApiError> {
    let id = task_id(&id)?;
    blocking(move || {
        let snap = app.eng.find(&id)?.ok_or_else(|| not_found(&id))?;
        let status = app.eng.status_of(&snap);
        if !status.resumable() {
            let hint = match status {
                DisplayStatus::Running => "it runs now; cancel it first to stop it",
                DisplayStatus::Queued => "a worker runs it; start one with `baton worker`",
                _ => "run its phases again with `baton resume ID --from PHASE`",
            };
            return Err(ApiError::new(
                StatusCode::CONFLICT,
                "NOT_RESUMABLE",
                format!("task {id} is {}", status.as_str()),
                hint,
            ));
        }
        if let Some(refused) = waits_for_a_person(&app, &snap) {
            return Err(refused);
        }
        let pid = app.runs.start(&app.eng, &id, &[])?;
        Ok((
            StatusCode::ACCEPTED,
            axum::Json(serde_json::json!({"task": id.as_str(), "pid": pid})),
        ))
    })
    .await
}

/// 409 `WAITING_FOR_AN_ANSWER` for a task waiting in a `wait = { human }`
/// phase, saying how to answer it.
fn waits_for_a_person(app: &App, snap: &baton_store::TaskSnapshot) -> Option<ApiError> {
    use baton_core::workflow::{PhaseKind, WaitSpec};
    let id = &snap.state.task_id;
    let phase = snap.state.waiting_phase()?;
    let wf = app.eng.pinned(&snap.state.definition_hash).ok()?;
    let PhaseKind::Wait(WaitSpec::Human { question, options }) = &wf.phase(phase.id.as_str())?.kind
    else {
        return None;
    };
    let choice = if options.is_empty() {
        "ANSWER".to_string()
    } else {
        format!("CHOICE (one of: {})", options.join(", "))
    };
    Some(ApiError::new(
        StatusCode::CONFLICT,
        "WAITING_FOR_AN_ANSWER",
        format!(
            "task {id} waits in {} for a person's answer to {question:?}; resuming it would change nothing",
            phase.id
        ),
        &format!(
            "answer it: POST /api/v1/tasks/{id}/answer with {{\"answer\": …}} (the dashboard's answer buttons), or `baton inbox answer {id}/{} {choice}`",
            phase.id
        ),
    ))
}

/// Hands a task that stopped (crashed, failed, waiting) to another agent,
/// as `baton handoff ID --to AGENT` in a process of its own: its agent
/// phases go on with that agent, a new session getting the handoff brief.
#[utoipa::path(post, path = "/api/v1/tasks/{id}/handoff", params(("id" = String, Path, description = "the task id")),
    request_body = crate::input::Handoff,
    responses((status = 202, description = "`{task, to, pid}`: the handoff runs", body = Object), (status = 400, body = ApiError),
        (status = 404, body = ApiError), (status = 409, body = ApiError)))]
async fn handoff_task(
    State(app): State<App>,
    Path(id): Path<String>,
    Json(h): Json<crate::input::Handoff>,
) -> Result<(StatusCode, axum::Json<Value>), ApiError> {
    let id = task_id(&id)?;
    blocking(move || {
        let snap = app.eng.find(&id)?.ok_or_else(|| not_found(&id))?;
        let agents = &app.eng.project.config.agents;
        if !agents.contains_key(&h.to) {
            let known: Vec<&str> = agents.keys().map(String::as_str).collect();
            return Err(ApiError::new(
                StatusCode::BAD_REQUEST,
                "UNKNOWN_AGENT",
                format!("no agent {:?} in .baton/config.toml", h.to),
                &format!("its agents are: {}", known.join(", ")),
            ));
        }
        let status = app.eng.status_of(&snap);
        if !status.resumable() {
            return Err(ApiError::new(
                StatusCode::CONFLICT,
                "NOT_RESUMABLE",
                format!("task {id} is {}: only a task that stopped can be handed off", status.as_str()),
                "cancel a running task first; a task that ended runs phases again with `baton resume ID --from PHASE --agent AGENT`",
            ));
        }
        if let Some(refused) = waits_for_a_person(&app, &snap) {
            return Err(refused);
        }
        let pid = app
            .runs
            .start_baton(&app.eng, &id, &["handoff", id.as_str(), "--to", &h.to])?;
        Ok((
            StatusCode::ACCEPTED,
            axum::Json(serde_json::json!({"task": id.as_str(), "to": h.to, "pid": pid})),
        ))
    })
    .await
}

/// Cancels a task: its running phase is stopped and the task is CANCELLED.
#[utoipa::path(post, path = "/api/v1/tasks/{id}/cancel", params(("id" = String, Path, description = "the task id")),
    responses((status = 200, description = "`{task, status}`", body = Object), (status = 404, body = ApiError), (status = 409, body = ApiError)))]
async fn cancel_task(
    State(app): State<App>,
    Path(id): Path<String>,
) -> Result<axum::Json<Value>, ApiError> {
    let id = task_id(&id)?;
    blocking(move || {
        let snap = app.eng.find(&id)?.ok_or_else(|| not_found(&id))?;
        if matches!(
            app.eng.status_of(&snap),
            DisplayStatus::Complete | DisplayStatus::Cancelled
        ) {
            return Err(ApiError::new(
                StatusCode::CONFLICT,
                "NOT_CANCELLABLE",
                format!("task {id} is {}", app.eng.status_of(&snap).as_str()),
                "only a task that has not ended can be cancelled",
            ));
        }
        app.eng.cancel(&id)?;
        baton_engine::instances::task_stopped(&app.eng, &id);
        let snap = app.eng.load(&id)?;
        Ok(axum::Json(serde_json::json!({
            "task": id.as_str(),
            "status": app.eng.status_of(&snap).as_str(),
        })))
    })
    .await
}

/// Answers the question of a task waiting in a `wait = { human }` phase:
/// the phase passes with the answer as its summary (who gave it
/// journaled), and the task runs on in a process of its own.
#[utoipa::path(post, path = "/api/v1/tasks/{id}/answer", params(("id" = String, Path, description = "the task id")),
    request_body = Answer,
    responses((status = 202, description = "`{task, phase, answer, pid}`: answered; the task runs on", body = Object),
        (status = 400, body = ApiError), (status = 404, body = ApiError), (status = 409, body = ApiError)))]
async fn answer_task(
    State(app): State<App>,
    Path(id): Path<String>,
    Json(a): Json<Answer>,
) -> Result<(StatusCode, axum::Json<Value>), ApiError> {
    let id = task_id(&id)?;
    blocking(move || {
        app.eng.find(&id)?.ok_or_else(|| not_found(&id))?;
        let by = a.by.unwrap_or_else(|| "api".into());
        let (phase, passed) = app.eng.answer(&id, &a.answer, &by).map_err(|e| {
            let busy = e.kind == baton_core::ErrorKind::Busy;
            let mut err = ApiError::from(e);
            if busy {
                err.status = StatusCode::CONFLICT.as_u16();
                err.code = "NOT_WAITING_FOR_AN_ANSWER".into();
            } else {
                err.status = StatusCode::BAD_REQUEST.as_u16();
                err.code = "BAD_ANSWER".into();
            }
            err
        })?;
        let id = app.eng.let_go(passed);
        let child = app.eng.detach_child(&id)?;
        let pid = child.id();
        app.runs.adopt(child);
        Ok((
            StatusCode::ACCEPTED,
            axum::Json(serde_json::json!({"task": id.as_str(), "phase": phase.as_str(), "answer": a.answer.trim(), "pid": pid})),
        ))
    })
    .await
}

/// The webhook deliveries received, newest first, with what each did.
#[utoipa::path(get, path = "/api/v1/deliveries", params(Newest),
    responses((status = 200, body = Vec<DeliveryView>)))]
async fn list_deliveries(
    State(app): State<App>,
    Query(n): Query<Newest>,
) -> Result<axum::Json<Vec<DeliveryView>>, ApiError> {
    let limit = n.limit.unwrap_or(50).clamp(1, 1000) as usize;
    blocking(move || {
        Ok(axum::Json(
            app.eng
                .deliveries(limit)?
                .iter()
                .map(DeliveryView::of)
                .collect(),
        ))
    })
    .await
}

/// The coding and review agent instances.
#[utoipa::path(get, path = "/api/v1/instances",
    responses((status = 200, description = "every instance as stored: id, type, status, state, resources, config, times (RFC 3339)", body = Vec<Object>)))]
async fn list_instances(State(app): State<App>) -> Result<axum::Json<Vec<Value>>, ApiError> {
    blocking(move || {
        let all = app.eng.agents()?.stored()?;
        Ok(axum::Json(
            all.by_id.values().map(|i| i.to_json()).collect(),
        ))
    })
    .await
}
