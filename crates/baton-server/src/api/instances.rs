//! The board's moves on coding and review agent instances, as `baton
//! agent …` makes them: start one, ask for a review, merge a review back
//! with its feedback, push and open the pull request, end one (a worktree
//! that holds work is kept, as the CLI keeps it). Their turns run in the
//! background, kept by the server (stopped with it, journaled).

use crate::App;
use crate::input::{Json, KillRequest, MergeBack, NewInstance, PushRequest, ReviewRequest};
use crate::views::{ApiError, blocking};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use baton_core::instance::InstanceId;
use baton_engine::instances::{PushOptions, ReviewOptions, SpawnOptions};
use serde_json::Value;

pub(crate) fn instance_id(id: &str) -> Result<InstanceId, ApiError> {
    InstanceId::parse(id).map_err(|e| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            "BAD_INSTANCE_ID",
            e.to_string(),
            "list the instances with GET /api/v1/instances",
        )
    })
}

/// Starts a coding agent instance in a worktree of its own, its agent's
/// first turn in the background.
#[utoipa::path(post, path = "/api/v1/instances", request_body = NewInstance,
    responses((status = 201, description = "the instance, as `baton agent show --json` prints it", body = Object),
        (status = 400, body = ApiError), (status = 503, body = ApiError)))]
pub async fn spawn(
    State(app): State<App>,
    Json(n): Json<NewInstance>,
) -> Result<(StatusCode, axum::Json<Value>), ApiError> {
    blocking(move || {
        let agents = app.eng.agents()?;
        let i = agents.spawn(SpawnOptions {
            id: n.id,
            instructions: n.instructions,
            issue: n.issue,
            system_prompt: None,
            agent: n.agent,
            base: n.base,
            branch: None,
            require_review: n.require_review,
            max_reviews: n.max_reviews,
            execution_timeout_ms: None,
            interactive: false,
            for_phase: None,
        })?;
        Ok((
            StatusCode::CREATED,
            axum::Json(agents.show(&i.id)?.to_json()),
        ))
    })
    .await
}

/// Asks for a review of a coding instance's work: a review instance on a
/// fork of its branch, its agent started.
#[utoipa::path(post, path = "/api/v1/instances/{id}/review", params(("id" = String, Path, description = "the coding instance")),
    request_body = ReviewRequest,
    responses((status = 201, description = "the review instance", body = Object),
        (status = 400, body = ApiError), (status = 404, body = ApiError), (status = 409, body = ApiError)))]
pub async fn review(
    State(app): State<App>,
    Path(id): Path<String>,
    Json(r): Json<ReviewRequest>,
) -> Result<(StatusCode, axum::Json<Value>), ApiError> {
    let id = instance_id(&id)?;
    blocking(move || {
        let agents = app.eng.agents()?;
        let review = agents.request_review(
            &id,
            ReviewOptions {
                id: None,
                prompt: r.prompt,
                agent: r.agent,
                timeout_ms: None,
            },
        )?;
        Ok((
            StatusCode::CREATED,
            axum::Json(agents.show(&review.id)?.to_json()),
        ))
    })
    .await
}

/// Merges a review's branch into its parent's, all or nothing; the
/// feedback goes to the coding agent as its next turn, in its own session.
#[utoipa::path(post, path = "/api/v1/instances/{id}/merge-back", params(("id" = String, Path, description = "the review instance")),
    request_body = MergeBack,
    responses((status = 200, description = "the coding instance", body = Object),
        (status = 400, body = ApiError), (status = 404, body = ApiError), (status = 409, body = ApiError)))]
pub async fn merge_back(
    State(app): State<App>,
    Path(id): Path<String>,
    Json(m): Json<MergeBack>,
) -> Result<axum::Json<Value>, ApiError> {
    let id = instance_id(&id)?;
    blocking(move || {
        let agents = app.eng.agents()?;
        let parent = agents.merge_back(&id, &m.feedback)?;
        Ok(axum::Json(agents.show(&parent.id)?.to_json()))
    })
    .await
}

/// Pushes a coding instance's branch and opens its pull request.
#[utoipa::path(post, path = "/api/v1/instances/{id}/push", params(("id" = String, Path, description = "the coding instance")),
    request_body = PushRequest,
    responses((status = 200, description = "the instance, its pull request in `state.pull_request`", body = Object),
        (status = 400, body = ApiError), (status = 404, body = ApiError), (status = 409, body = ApiError), (status = 503, body = ApiError)))]
pub async fn push(
    State(app): State<App>,
    Path(id): Path<String>,
    Json(p): Json<PushRequest>,
) -> Result<axum::Json<Value>, ApiError> {
    let id = instance_id(&id)?;
    blocking(move || {
        let agents = app.eng.agents()?;
        let owner = agents.push(
            &id,
            PushOptions {
                title: p.title,
                body: p.body,
                draft: p.draft,
            },
        )?;
        Ok(axum::Json(agents.show(&owner.id)?.to_json()))
    })
    .await
}

/// Ends an instance: its agent stopped, its worktree and branch removed
/// unless they hold work (then kept, and why is said).
#[utoipa::path(post, path = "/api/v1/instances/{id}/kill", params(("id" = String, Path, description = "the instance")),
    request_body = KillRequest,
    responses((status = 200, description = "`{removed, kept, failed}`, each `[{instance, detail}]`", body = Object),
        (status = 404, body = ApiError), (status = 409, body = ApiError)))]
pub async fn kill(
    State(app): State<App>,
    Path(id): Path<String>,
    Json(k): Json<KillRequest>,
) -> Result<axum::Json<Value>, ApiError> {
    let id = instance_id(&id)?;
    blocking(move || {
        let reason = k.reason.unwrap_or_else(|| "ended from the board".into());
        let removal = app.eng.agents()?.kill(&id, &reason)?;
        Ok(axum::Json(removal.to_json()))
    })
    .await
}
