//! `GET /api/v1/tasks/{id}/output`: what a task's running phase prints,
//! a piece at a time after a cursor (the dashboard polls it while a task
//! runs, as `baton log --follow` reads it). The lines are the phase's own
//! text, as written: whoever shows them escapes them.

use crate::App;
use crate::input::Query;
use crate::views::ApiError;
use crate::views::{blocking, not_found, task_id};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use baton_engine::engine::OutputCursor;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

/// Where to read on from.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct After {
    /// The `cursor` of the previous answer; none: start near the end of
    /// what the running phase printed so far.
    pub after: Option<String>,
}

/// Lines a phase printed.
#[derive(Debug, Serialize, ToSchema)]
pub struct OutputPage {
    /// Oldest first: `{phase, attempt, stream, text}`, `stream` being
    /// `stdout` or `stderr`; an attempt that ended since the cursor gives
    /// its last lines first.
    #[schema(value_type = Vec<Object>)]
    pub lines: Vec<baton_engine::engine::OutputLine>,
    /// Pass as `after` next time.
    pub cursor: String,
    /// The phase whose output streams now (a command, or an agent run
    /// through `command = [...]`), or `null`.
    pub running: Option<String>,
}

/// What the task's running phase printed since `after`.
#[utoipa::path(get, path = "/api/v1/tasks/{id}/output", params(("id" = String, Path, description = "the task id"), After),
    responses((status = 200, body = OutputPage), (status = 400, body = ApiError), (status = 404, body = ApiError)))]
pub async fn task_output(
    State(app): State<App>,
    Path(id): Path<String>,
    Query(q): Query<After>,
) -> Result<axum::Json<OutputPage>, ApiError> {
    let id = task_id(&id)?;
    let after = OutputCursor::parse(q.after.as_deref().unwrap_or("")).ok_or_else(|| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            "BAD_CURSOR",
            "`after` is not a cursor this endpoint gave".into(),
            "pass the `cursor` of the previous answer, or nothing to start",
        )
    })?;
    blocking(move || {
        let snap = app.eng.find(&id)?.ok_or_else(|| not_found(&id))?;
        let read = app.eng.phase_output(&snap, &after, &[])?;
        Ok(axum::Json(OutputPage {
            lines: read.lines,
            cursor: read.cursor.to_string(),
            running: read.running,
        }))
    })
    .await
}
