//! What the API reads from a request, and every way that can be wrong
//! answered in the documented shape: the query strings (a filter, a page),
//! JSON bodies, as pure functions (fuzzed: `fuzz/fuzz_targets/api_input.rs`)
//! behind the extractors the handlers take.

use crate::views::ApiError;
use axum::extract::FromRequestParts;
use axum::extract::{FromRequest, Request};
use axum::http::StatusCode;
use axum::http::request::Parts;
use baton_core::lease::DisplayStatus;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use utoipa::IntoParams;

/// Reads `query` (the part after `?`) as `T`.
pub fn parse_query<T: DeserializeOwned>(query: &str) -> Result<T, ApiError> {
    serde_urlencoded::from_str(query).map_err(|e| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            "BAD_QUERY",
            format!("the query string cannot be read: {e}"),
            "see the parameters each path takes in /api/v1/openapi.json",
        )
    })
}

/// Reads a JSON body as `T`.
pub fn parse_json<T: DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    // Every body the API takes is an object: serde would also read a
    // struct from an array of its fields in order (`["yes", "ana"]`).
    if body.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'[') {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "BAD_BODY",
            "the body cannot be read: it is a JSON array, not an object".into(),
            "send a JSON object as /api/v1/openapi.json describes, with Content-Type: application/json",
        ));
    }
    serde_json::from_slice(body).map_err(|e| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            "BAD_BODY",
            format!("the body cannot be read: {e}"),
            "send a JSON object as /api/v1/openapi.json describes, with Content-Type: application/json",
        )
    })
}

/// A query string read with [`parse_query`].
pub struct Query<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequestParts<S> for Query<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        parse_query(parts.uri.query().unwrap_or("")).map(Query)
    }
}

/// A JSON body read with [`parse_json`] (its size already bounded by the
/// server's body limit).
pub struct Json<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for Json<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        let bytes = axum::body::Bytes::from_request(req, state)
            .await
            .map_err(|e| {
                ApiError::new(
                    e.status(),
                    if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
                        "PAYLOAD_TOO_LARGE"
                    } else {
                        "BAD_BODY"
                    },
                    format!("the body could not be read: {e}"),
                    "send it again, no larger than max_body under [server]",
                )
            })?;
        parse_json(&bytes).map(Json)
    }
}

#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct TaskFilter {
    /// Only tasks with this status (RUNNING, QUEUED, WAITING, CRASHED,
    /// FAILED, COMPLETE, CANCELLED; any case).
    pub status: Option<String>,
    /// Only tasks of this workflow.
    pub workflow: Option<String>,
    /// Only tasks with this label, `key=value`.
    pub label: Option<String>,
}

/// A [`TaskFilter`] checked: a status that exists, a label that is
/// `key=value`.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Filter {
    pub status: Option<DisplayStatus>,
    pub workflow: Option<String>,
    pub label: Option<(String, String)>,
}

const STATUSES: [DisplayStatus; 7] = DisplayStatus::ALL;

impl TaskFilter {
    pub fn check(self) -> Result<Filter, ApiError> {
        let bad = |message: String, hint: &str| {
            ApiError::new(StatusCode::BAD_REQUEST, "BAD_FILTER", message, hint)
        };
        let status = match &self.status {
            None => None,
            Some(s) => Some(
                STATUSES
                    .into_iter()
                    .find(|d| d.as_str().eq_ignore_ascii_case(s))
                    .ok_or_else(|| {
                        bad(
                            format!("status={s:?} is no task status"),
                            "write one of RUNNING, QUEUED, WAITING, CRASHED, FAILED, COMPLETE, CANCELLED",
                        )
                    })?,
            ),
        };
        let label = match &self.label {
            None => None,
            Some(l) => Some(
                l.split_once('=')
                    .filter(|(k, _)| !k.is_empty())
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .ok_or_else(|| {
                        bad(
                            format!("label={l:?} is not key=value"),
                            "write e.g. label=repository=acme/app",
                        )
                    })?,
            ),
        };
        Ok(Filter {
            status,
            workflow: self.workflow,
            label,
        })
    }
}

#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct Page {
    /// Records after this journal position (default 0: from the start).
    pub after: Option<u32>,
    /// At most this many (default 200, at most 1000).
    pub limit: Option<u32>,
}

#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct Newest {
    /// How many, newest first (default 50, at most 1000).
    pub limit: Option<u32>,
}

/// A person's answer to the question a task waits on.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Answer {
    /// One of the question's options, when it has some.
    pub answer: String,
    /// Who answers (journaled with the answer); default `api`.
    pub by: Option<String>,
}

/// A task to start: `baton run WORKFLOW DESCRIPTION` from the board.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewTask {
    /// A workflow of the project (`GET /api/v1/workflows` lists them).
    pub workflow: String,
    #[serde(default)]
    pub description: String,
    /// Its id (default: made from the description).
    pub id: Option<String>,
    /// Values of the workflow's declared flags, as `--flag` takes them:
    /// `name=value`.
    #[serde(default)]
    pub flags: Vec<String>,
    /// Labels, `key=value`.
    #[serde(default)]
    pub labels: Vec<String>,
    /// The agent its agent phases use (default: the workflow's).
    pub agent: Option<String>,
    /// Queue it for `baton worker`s (its own worktree, on branch
    /// `baton/<id>`) instead of running it here now.
    #[serde(default)]
    pub queue: bool,
    /// Tasks it waits for: it starts by itself once they are all
    /// COMPLETE (kept in the store until then).
    #[serde(default)]
    pub needs: Vec<String>,
}

/// A task handed to another agent (`baton handoff ID --to AGENT`).
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Handoff {
    /// An agent of `.baton/config.toml` (`GET /api/v1/agents`).
    pub to: String,
}

/// A person's comment on a line of a task's or an instance's diff.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CommentBody {
    /// The file, as the diff names it.
    pub path: String,
    /// The line of the file's new side (0: the file as a whole).
    #[serde(default)]
    pub line: u32,
    /// What the agent should change (at most 10,000 bytes).
    pub body: String,
    /// Who comments; default `api`.
    pub by: Option<String>,
}

/// An answer to an inbox item.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct InboxAnswer {
    /// One of the item's options; `approved` or `denied` for an approval;
    /// `acknowledged` for a notification.
    pub answer: String,
    /// Why (kept with a denial).
    pub reason: Option<String>,
    /// Who answers; default `api`.
    pub by: Option<String>,
}

#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct InboxFilter {
    /// Answered items too (default: the open ones only).
    pub all: Option<bool>,
}

/// A coding agent instance to start (`baton agent spawn`).
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewInstance {
    /// What the agent is to do (with `issue`: added to the issue's text).
    #[serde(default)]
    pub instructions: String,
    /// A GitHub issue of the repository to work on.
    pub issue: Option<u32>,
    /// The agent (`[agents.NAME]`; default: the project's).
    pub agent: Option<String>,
    /// The branch the work starts from (default: the checked-out one).
    pub base: Option<String>,
    /// Its id (default: made from the instructions).
    pub id: Option<String>,
    /// A review before its pull request (default: `[instances]`).
    pub require_review: Option<bool>,
    pub max_reviews: Option<u32>,
}

/// A review of a coding instance's work (`baton agent review`).
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ReviewRequest {
    /// The reviewing agent (default: the coding instance's).
    pub agent: Option<String>,
    /// What the reviewer is asked (default: `[instances.review]`).
    pub prompt: Option<String>,
}

/// A review's end: its branch merged into its parent's, the feedback on
/// its way to the coding agent (`baton agent merge-back`).
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MergeBack {
    pub feedback: String,
}

/// A coding instance's branch pushed and its pull request opened
/// (`baton agent push`).
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PushRequest {
    /// Default: the first line of the instructions.
    pub title: Option<String>,
    pub body: Option<String>,
    #[serde(default)]
    pub draft: bool,
}

/// A linked task cancelled before it starts.
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CancelLink {
    /// Who cancels it (kept with the link); default `api`.
    pub by: Option<String>,
}

/// An instance ended (`baton agent kill`).
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct KillRequest {
    /// Why (recorded); default `ended from the board`.
    pub reason: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_are_checked_and_errors_keep_the_shape() {
        let f: TaskFilter = parse_query("status=waiting&label=team=web").unwrap();
        let f = f.check().unwrap();
        assert_eq!(f.status, Some(DisplayStatus::Waiting));
        assert_eq!(f.label, Some(("team".into(), "web".into())));
        let e = parse_query::<TaskFilter>("status=BOGUS")
            .unwrap()
            .check()
            .unwrap_err();
        assert_eq!((e.status, e.code.as_str()), (400, "BAD_FILTER"));
        let e = parse_query::<Page>("limit=-1").unwrap_err();
        assert_eq!((e.status, e.code.as_str()), (400, "BAD_QUERY"));
        assert!(parse_query::<Page>("after=1&sort=x").is_err());
        let e = parse_json::<Answer>(b"{\"answer\": 3}").unwrap_err();
        assert_eq!(e.code, "BAD_BODY");
        assert!(parse_json::<Answer>(b"{\"answer\": \"yes\"}").is_ok());
        let t: NewTask = parse_json(br#"{"workflow": "fix", "flags": ["fast=true"]}"#).unwrap();
        assert_eq!(
            (t.workflow.as_str(), t.flags.len(), t.queue),
            ("fix", 1, false)
        );
        let e = parse_json::<NewTask>(br#"{"workflow": "fix", "needz": []}"#).unwrap_err();
        assert!(e.message.contains("needz"), "{}", e.message);
    }
}
