//! A person's comments on the lines of a task's or a coding instance's
//! diff: added and read. They reach the agent as `eng.comments()` says: a
//! task's with its next phase, an instance's as its agent's next turn.

use crate::App;
use crate::input::{CommentBody, Json};
use crate::views::{ApiError, blocking, not_found, task_id};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use baton_core::comment::Comment;
use baton_engine::comments::NewComment;
use serde_json::Value;

fn new(c: CommentBody) -> NewComment {
    NewComment {
        path: c.path,
        line: c.line,
        body: c.body,
        by: c.by.unwrap_or_else(|| "api".into()),
    }
}

fn view(c: &Comment) -> Value {
    let mut v = serde_json::to_value(c).expect("a comment is JSON");
    v["created_at"] = Value::String(c.created_at.rfc3339());
    if let Some(d) = &c.delivered {
        v["delivered"]["at"] = Value::String(d.at.rfc3339());
    }
    v
}

fn bad_comment(e: baton_engine::Error) -> ApiError {
    let mut err = ApiError::from(e);
    if err.code == "BAD_INPUT" {
        err.code = "BAD_COMMENT".into();
    }
    err
}

/// The comments on a task's work, oldest first, each with where it
/// reached the agent (`delivered`), once it has.
#[utoipa::path(get, path = "/api/v1/tasks/{id}/comments", params(("id" = String, Path, description = "the task id")),
    responses((status = 200, description = "`[{id, path, line, body, by, created_at, delivered}]`", body = Vec<Object>), (status = 404, body = ApiError)))]
pub async fn task_comments(
    State(app): State<App>,
    Path(id): Path<String>,
) -> Result<axum::Json<Vec<Value>>, ApiError> {
    let id = task_id(&id)?;
    blocking(move || {
        app.eng.find(&id)?.ok_or_else(|| not_found(&id))?;
        let all = app.eng.comments().of_task(&id)?;
        Ok(axum::Json(all.iter().map(view).collect()))
    })
    .await
}

/// Comments on a line of a task's diff: it goes into the prompt and brief
/// of the task's next phase (or the one resumed), and its session log.
#[utoipa::path(post, path = "/api/v1/tasks/{id}/comments", params(("id" = String, Path, description = "the task id")),
    request_body = CommentBody,
    responses((status = 201, description = "the comment", body = Object), (status = 400, body = ApiError), (status = 404, body = ApiError)))]
pub async fn comment_task(
    State(app): State<App>,
    Path(id): Path<String>,
    Json(c): Json<CommentBody>,
) -> Result<(StatusCode, axum::Json<Value>), ApiError> {
    let id = task_id(&id)?;
    blocking(move || {
        app.eng.find(&id)?.ok_or_else(|| not_found(&id))?;
        let stored = app
            .eng
            .comments()
            .on_task(&id, new(c))
            .map_err(bad_comment)?;
        Ok((StatusCode::CREATED, axum::Json(view(&stored))))
    })
    .await
}

/// The comments on a coding instance's work.
#[utoipa::path(get, path = "/api/v1/instances/{id}/comments", params(("id" = String, Path, description = "the instance id")),
    responses((status = 200, description = "as a task's comments", body = Vec<Object>), (status = 404, body = ApiError)))]
pub async fn instance_comments(
    State(app): State<App>,
    Path(id): Path<String>,
) -> Result<axum::Json<Vec<Value>>, ApiError> {
    let id = super::instances::instance_id(&id)?;
    blocking(move || {
        let all = app.eng.comments().of_instance(&id)?;
        Ok(axum::Json(all.iter().map(view).collect()))
    })
    .await
}

/// Comments on a line of a coding instance's diff: its agent gets the
/// comments as its next turn, in its own session (at once when its turn
/// before has ended).
#[utoipa::path(post, path = "/api/v1/instances/{id}/comments", params(("id" = String, Path, description = "the instance id")),
    request_body = CommentBody,
    responses((status = 201, description = "the comment", body = Object), (status = 400, body = ApiError),
        (status = 404, body = ApiError), (status = 409, body = ApiError)))]
pub async fn comment_instance(
    State(app): State<App>,
    Path(id): Path<String>,
    Json(c): Json<CommentBody>,
) -> Result<(StatusCode, axum::Json<Value>), ApiError> {
    let id = super::instances::instance_id(&id)?;
    blocking(move || {
        let stored = app
            .eng
            .comments()
            .on_instance(&id, new(c))
            .map_err(bad_comment)?;
        Ok((StatusCode::CREATED, axum::Json(view(&stored))))
    })
    .await
}
