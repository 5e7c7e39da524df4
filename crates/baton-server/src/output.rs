//! `GET /api/v1/tasks/{id}/output`: what a task's running phase prints,
//! a piece at a time after a cursor (the dashboard polls it while a task
//! runs, as `baton log --follow` reads it), and the same as server-sent
//! events, `…/output/stream` (a card's page follows it); and its session
//! log, `…/log`. The lines are the phase's own text, as written: whoever
//! shows them escapes them.

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

/// Where a stream starts, and the token a browser's EventSource passes.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct StreamAfter {
    /// As `…/output`'s `after`.
    pub after: Option<String>,
    /// The API token, for a client that cannot send headers (`auth.rs`
    /// reads it from the query before the handler runs).
    #[allow(dead_code)]
    pub access_token: Option<String>,
}

/// How often a stream looks for new lines.
const LOOK_EVERY: std::time::Duration = std::time::Duration::from_millis(300);

/// What the task's phases print, as it is printed: an `output` event (an
/// [`OutputPage`]) whenever there are new lines, until the client goes or
/// the server stops.
#[utoipa::path(get, path = "/api/v1/tasks/{id}/output/stream", params(("id" = String, Path, description = "the task id"), StreamAfter),
    responses((status = 200, description = "text/event-stream: `output` events, each an OutputPage"), (status = 400, body = ApiError), (status = 404, body = ApiError)))]
pub async fn task_output_stream(
    State(app): State<App>,
    Path(id): Path<String>,
    Query(q): Query<StreamAfter>,
) -> Result<
    axum::response::sse::Sse<
        impl futures_util::Stream<Item = Result<axum::response::sse::Event, std::convert::Infallible>>,
    >,
    ApiError,
> {
    use axum::response::sse::{Event, KeepAlive, Sse};
    let id = task_id(&id)?;
    let after = OutputCursor::parse(q.after.as_deref().unwrap_or("")).ok_or_else(|| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            "BAD_CURSOR",
            "`after` is not a cursor this endpoint gave".into(),
            "pass the `cursor` of an earlier page, or nothing to start",
        )
    })?;
    {
        let (app, id) = (app.clone(), id.clone());
        blocking(move || app.eng.find(&id)?.map(|_| ()).ok_or_else(|| not_found(&id))).await?;
    }
    let changes = app.watched.changes.clone();
    let events = futures_util::stream::unfold(
        (app, id, after, changes),
        |(app, id, mut cursor, mut changes)| async move {
            loop {
                let (a, i, c) = (app.clone(), id.clone(), cursor.clone());
                let read = tokio::task::spawn_blocking(move || {
                    let snap = a.eng.find(&i).ok()??;
                    a.eng.phase_output(&snap, &c, &[]).ok()
                })
                .await
                .ok()
                .flatten()?;
                cursor = read.cursor.clone();
                if !read.lines.is_empty() {
                    let page = OutputPage {
                        lines: read.lines,
                        cursor: read.cursor.to_string(),
                        running: read.running,
                    };
                    let event = Event::default().event("output").json_data(&page).ok()?;
                    return Some((Ok(event), (app, id, cursor, changes)));
                }
                tokio::select! {
                    _ = tokio::time::sleep(LOOK_EVERY) => {}
                    gone = changes.changed() => if gone.is_err() { return None },
                }
            }
        },
    );
    Ok(Sse::new(events).keep_alive(KeepAlive::default()))
}

/// A task's session log.
#[derive(Debug, Serialize, ToSchema)]
pub struct SessionLogView {
    /// The log as markdown (as `.baton/sessions/<id>.md` holds it): the
    /// agents' messages and tool calls, summaries, callouts. Its text is
    /// the agents' own: whoever shows it escapes it.
    pub markdown: String,
}

/// Task `id`'s session log, rendered from the store as it stands now (the
/// board's card page shows it, again at each change).
#[utoipa::path(get, path = "/api/v1/tasks/{id}/log", params(("id" = String, Path, description = "the task id")),
    responses((status = 200, body = SessionLogView), (status = 404, body = ApiError)))]
pub async fn task_log(
    State(app): State<App>,
    Path(id): Path<String>,
) -> Result<axum::Json<SessionLogView>, ApiError> {
    let id = task_id(&id)?;
    blocking(move || {
        app.eng.find(&id)?.ok_or_else(|| not_found(&id))?;
        let log = app.eng.task_log(&id)?;
        Ok(axum::Json(SessionLogView {
            markdown: baton_core::session_log::render(&log),
        }))
    })
    .await
}

/// What one running task is doing now.
#[derive(Debug, Serialize, ToSchema)]
pub struct ActivityRow {
    pub id: String,
    /// The phase in progress.
    pub phase: Option<String>,
    /// The agent its latest agent run is on.
    pub agent: Option<String>,
    /// What the running phase said or did last: the last line a command
    /// printed, or the last message or tool call of a built-in agent CLI
    /// (`→ Write hello.txt`). The task's own text: escape it to show it.
    pub line: Option<String>,
    /// Input and output tokens over its agent runs.
    pub tokens: u64,
}

/// At most this many running tasks are looked at, newest first.
const ACTIVITY_TASKS: usize = 100;

/// What every running task is doing now, newest first: the live line of
/// the board's cards.
#[utoipa::path(get, path = "/api/v1/activity",
    responses((status = 200, body = Vec<ActivityRow>), (status = 401, body = ApiError)))]
pub async fn activity(State(app): State<App>) -> Result<axum::Json<Vec<ActivityRow>>, ApiError> {
    blocking(move || {
        let mut running: Vec<_> = app
            .eng
            .list()?
            .into_iter()
            .filter(|(_, s)| *s == baton_core::lease::DisplayStatus::Running)
            .map(|(t, _)| t)
            .collect();
        running.sort_by_key(|t| std::cmp::Reverse(t.created_at));
        let mut rows = Vec::new();
        for t in running.into_iter().take(ACTIVITY_TASKS) {
            // One that ended since it was listed is left out.
            let Some(snap) = app.eng.find(&t.id)? else {
                continue;
            };
            let a = app.eng.activity(&snap)?;
            rows.push(ActivityRow {
                id: t.id.to_string(),
                phase: a.phase,
                agent: a.agent,
                line: a.line,
                tokens: a.tokens,
            });
        }
        Ok(axum::Json(rows))
    })
    .await
}
