//! What the API (and `baton deliveries --json`) answer: one type per
//! shape, each with its OpenAPI schema.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use baton_core::TaskId;
use baton_core::lease::DisplayStatus;
use baton_store::{DeliveryRow, TaskSummary};
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

/// An error: a stable code, what was wrong, what to do.
#[derive(Debug, Serialize, ToSchema)]
pub struct ApiError {
    #[serde(skip)]
    #[schema(ignore)]
    pub status: u16,
    /// Stable, e.g. `TASK_NOT_FOUND`, `NOT_RESUMABLE`, `UNAUTHORIZED`.
    pub code: String,
    pub message: String,
    pub hint: String,
}

impl ApiError {
    pub fn new(status: StatusCode, code: &str, message: String, hint: &str) -> Self {
        ApiError {
            status: status.as_u16(),
            code: code.into(),
            message,
            hint: hint.into(),
        }
    }

    pub fn internal(message: String) -> Self {
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "INTERNAL",
            message,
            "see baton serve's output",
        )
    }
}

impl From<baton_engine::Error> for ApiError {
    fn from(e: baton_engine::Error) -> Self {
        use baton_core::ErrorKind;
        let (status, code) = match e.kind {
            ErrorKind::BadInput => (StatusCode::BAD_REQUEST, "BAD_INPUT"),
            ErrorKind::Busy => (StatusCode::CONFLICT, "BUSY"),
            ErrorKind::Operational => (StatusCode::SERVICE_UNAVAILABLE, "UNAVAILABLE"),
        };
        // The review loop's codes that name a missing thing or a wrong
        // moment answer as HTTP says those.
        let status = match e.code {
            Some(
                baton_core::instance::ErrorCode::InstanceNotFound
                | baton_core::instance::ErrorCode::ParentNotFound,
            ) => StatusCode::NOT_FOUND,
            Some(baton_core::instance::ErrorCode::InvalidState) => StatusCode::CONFLICT,
            _ => status,
        };
        let code = e.code.map_or(code.to_string(), |c| c.as_str().to_string());
        ApiError {
            status: status.as_u16(),
            code,
            message: e.message,
            hint: e.hints.join("; "),
        }
    }
}

impl From<baton_store::Error> for ApiError {
    fn from(e: baton_store::Error) -> Self {
        baton_engine::Error::from(e).into()
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = StatusCode::from_u16(self.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        (status, Json(self)).into_response()
    }
}

/// A task in the list.
#[derive(Debug, Serialize, ToSchema)]
pub struct TaskRow {
    pub id: String,
    pub workflow: String,
    pub description: String,
    /// RUNNING, QUEUED, WAITING, CRASHED, FAILED, COMPLETE or CANCELLED.
    pub status: String,
    /// The phase it is at (or ended at).
    pub phase: Option<String>,
    pub created_at: String,
    pub updated_at: String,
    pub resumable: bool,
}

impl TaskRow {
    pub fn of(t: &TaskSummary, status: DisplayStatus) -> TaskRow {
        TaskRow {
            id: t.id.to_string(),
            workflow: t.workflow.clone(),
            description: t.description.clone(),
            status: status.as_str().into(),
            phase: t.last_phase.clone(),
            created_at: t.created_at.rfc3339(),
            updated_at: t.updated_at.rfc3339(),
            resumable: status.resumable(),
        }
    }
}

/// What a delivery did to one task.
#[derive(Debug, Serialize, ToSchema)]
pub struct TaskDecisionView {
    pub task: String,
    /// `resumed` or `skipped`.
    pub decision: String,
    pub why: String,
}

/// A webhook delivery and what it did.
#[derive(Debug, Serialize, ToSchema)]
pub struct DeliveryView {
    /// `X-GitHub-Delivery`.
    pub id: String,
    pub received_at: String,
    /// `X-GitHub-Event`.
    pub event: String,
    pub action: Option<String>,
    pub repository: Option<String>,
    /// `null` while it is still being handed over.
    pub settled_at: Option<String>,
    /// `pending`, `resumed`, `skipped`, `ignored` or `applied`.
    pub decision: String,
    pub why: String,
    pub tasks: Vec<TaskDecisionView>,
}

impl DeliveryView {
    pub fn of(r: &DeliveryRow) -> DeliveryView {
        DeliveryView {
            id: r.id.clone(),
            received_at: r.received_at.rfc3339(),
            event: r.event.clone(),
            action: r.action.clone(),
            repository: r.repository.clone(),
            settled_at: r.settled_at.map(|t| t.rfc3339()),
            decision: r.decision.clone(),
            why: r.why.clone(),
            tasks: r
                .tasks
                .iter()
                .map(|t| TaskDecisionView {
                    task: t.task.clone(),
                    decision: t.decision.clone(),
                    why: t.why.clone(),
                })
                .collect(),
        }
    }
}

/// A page of a task's journal.
#[derive(Debug, Serialize, ToSchema)]
pub struct JournalPage {
    /// The records, oldest first, as `baton log --json` prints them.
    #[schema(value_type = Vec<Object>)]
    pub events: Vec<Value>,
    /// Pass as `after` for the next page; `null` when this was the last.
    pub next_after: Option<u32>,
}

/// Runs blocking store work off the async threads.
pub async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(f).await.unwrap_or_else(|e| {
        Err(ApiError::internal(format!(
            "the request's work failed: {e}"
        )))
    })
}

pub(crate) fn task_id(id: &str) -> Result<TaskId, ApiError> {
    TaskId::parse(id).map_err(|e| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            "BAD_TASK_ID",
            e.to_string(),
            "task ids use letters, digits, '-', '_' and '.'",
        )
    })
}

pub(crate) fn not_found(id: &TaskId) -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "TASK_NOT_FOUND",
        format!("no task {id}"),
        "list the tasks with GET /api/v1/tasks",
    )
}
