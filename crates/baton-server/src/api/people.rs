//! What people answer and watch: the inbox (every open decision, approval,
//! notification and human wait, and their answers) and the teams
//! (members, tasks, mailbox).

use crate::App;
use crate::input::{InboxAnswer, InboxFilter, Json, Query};
use crate::views::{ApiError, blocking};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use baton_engine::inbox::AnswerOutcome;
use serde_json::Value;

/// The inbox, oldest first: open items (or all, with `all=true`).
#[utoipa::path(get, path = "/api/v1/inbox", params(InboxFilter),
    responses((status = 200, description = "items as `baton inbox --json` prints them: id, kind, session, phase, text, options, raised_by, created_at, answer", body = Vec<Object>)))]
pub async fn list_inbox(
    State(app): State<App>,
    Query(f): Query<InboxFilter>,
) -> Result<axum::Json<Vec<Value>>, ApiError> {
    let open_only = !f.all.unwrap_or(false);
    blocking(move || {
        let items = app.eng.inbox().items(open_only)?;
        Ok(axum::Json(items.iter().map(item_json).collect()))
    })
    .await
}

/// Answers an inbox item. A task's human wait (`TASK/PHASE`, the slash
/// written `%2F`) passes and the task runs on in a process of its own; an
/// agent's question is answered for the agent waiting on it.
#[utoipa::path(post, path = "/api/v1/inbox/{id}/answer", params(("id" = String, Path, description = "the item id")),
    request_body = InboxAnswer,
    responses((status = 200, description = "`{item}`: answered", body = Object),
        (status = 202, description = "`{item, task, pid}`: the wait passed, the task runs on", body = Object),
        (status = 400, body = ApiError), (status = 404, body = ApiError), (status = 409, body = ApiError)))]
pub async fn answer_item(
    State(app): State<App>,
    Path(id): Path<String>,
    Json(a): Json<InboxAnswer>,
) -> Result<(StatusCode, axum::Json<Value>), ApiError> {
    blocking(move || {
        let inbox = app.eng.inbox();
        let Some(item) = inbox.items(false)?.into_iter().find(|i| i.id == id) else {
            return Err(ApiError::new(
                StatusCode::NOT_FOUND,
                "ITEM_NOT_FOUND",
                format!("no inbox item {id}"),
                "list the open items with GET /api/v1/inbox",
            ));
        };
        if let Some(done) = &item.answer {
            return Err(ApiError::new(
                StatusCode::CONFLICT,
                "ALREADY_ANSWERED",
                format!("item {id} was answered already: {} by {}", done.choice, done.by),
                "nothing changed; list the open items with GET /api/v1/inbox",
            ));
        }
        let by = a.by.unwrap_or_else(|| "api".into());
        let answered = inbox.answer(&id, &a.answer, a.reason, &by).map_err(|e| {
            let mut err = ApiError::from(e);
            if err.status == StatusCode::BAD_REQUEST.as_u16() {
                err.code = "BAD_ANSWER".into();
            }
            err
        })?;
        match answered {
            AnswerOutcome::Item(item) => Ok((
                StatusCode::OK,
                axum::Json(serde_json::json!({"item": item_json(&item)})),
            )),
            AnswerOutcome::Task(item, passed) => {
                let task = app.eng.let_go(*passed);
                let child = app.eng.detach_child(&task)?;
                let pid = child.id();
                app.runs.adopt(child);
                Ok((
                    StatusCode::ACCEPTED,
                    axum::Json(serde_json::json!({"item": item_json(&item), "task": task.as_str(), "pid": pid})),
                ))
            }
        }
    })
    .await
}

fn item_json(i: &baton_core::inbox::InboxItem) -> Value {
    let mut v = serde_json::to_value(i).expect("an item is JSON");
    v["created_at"] = Value::String(i.created_at.rfc3339());
    if let Some(a) = &i.answer {
        v["answer"]["at"] = Value::String(a.at.rfc3339());
    }
    v
}

/// The teams, each with its lead, teammates and tasks.
#[utoipa::path(get, path = "/api/v1/teams",
    responses((status = 200, description = "every team as `baton team ls --json` prints it", body = Vec<Object>)))]
pub async fn list_teams(State(app): State<App>) -> Result<axum::Json<Value>, ApiError> {
    blocking(move || {
        let all = app.eng.teams()?.list()?;
        Ok(axum::Json(
            serde_json::to_value(all).expect("teams are JSON"),
        ))
    })
    .await
}

/// One team: its members (the lead first, each with its liveness and when
/// it was last heard from, as `baton team probe` sees them), its tasks and
/// the newest 100 messages of its mailbox.
#[utoipa::path(get, path = "/api/v1/teams/{name}", params(("name" = String, Path, description = "the team")),
    responses((status = 200, description = "`{team, members, tasks_by_status, messages}`", body = Object), (status = 404, body = ApiError)))]
pub async fn get_team(
    State(app): State<App>,
    Path(name): Path<String>,
) -> Result<axum::Json<Value>, ApiError> {
    blocking(move || {
        let teams = app.eng.teams()?;
        if !teams.list()?.iter().any(|t| t.id.as_str() == name) {
            return Err(ApiError::new(
                StatusCode::NOT_FOUND,
                "TEAM_NOT_FOUND",
                format!("no team {name}"),
                "list the teams with GET /api/v1/teams",
            ));
        }
        let probe = teams.probe(&name)?;
        let messages = teams.messages(&name, 0, 100, true)?;
        let mut members = vec![probe.lead];
        members.extend(probe.teammates);
        Ok(axum::Json(serde_json::json!({
            "team": probe.team,
            "members": members,
            "tasks_by_status": probe.tasks_by_status,
            "messages": messages,
        })))
    })
    .await
}
