//! Who may use the API and `/mcp`. The person's token (`[server] token`,
//! `BATON_SERVER_TOKEN`, `.baton/server.token`): when one is set, every
//! `/api/v1` request must carry it as `Authorization: Bearer …` (the
//! scheme in any case), or, only for the event streams a browser opens
//! itself (changes, a task's output), `?access_token=…`; compared in constant time (of their digests,
//! so not even the length shows). On `/mcp` an agent shows the capability
//! baton handed it instead: the server asks the engine what it names
//! (a running phase attempt, a live instance) and hands the MCP tools a
//! [`baton_mcp::Caller`] made from that; `Baton-*` identity headers are
//! taken only as claims that must agree with it, and never name a path.
//! Webhooks are authenticated by their signature; the dashboard page
//! holds no data.

use crate::App;
use crate::views::ApiError;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use subtle::ConstantTimeEq;

/// The path on which `?access_token=` is taken (a browser's EventSource
/// cannot send headers).
const STREAM: &str = "/api/v1/stream";
/// The end of a task's output stream's path, where it is taken too.
const OUTPUT_STREAM: &str = "/output/stream";

/// The identity headers an agent may send along with its capability.
const IDENTITY_HEADERS: [&str; 5] = [
    "baton-instance",
    "baton-task",
    "baton-phase",
    "baton-team",
    "baton-teammate",
];

/// `Authorization: <scheme> <credentials>` with the scheme `Bearer` in any
/// case (RFC 9110: schemes are case-insensitive).
fn bearer(h: &HeaderMap) -> Option<String> {
    let v = h.get(header::AUTHORIZATION)?.to_str().ok()?.trim();
    let (scheme, rest) = v.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| rest.trim().to_string())
}

fn same(given: &str, want: &str) -> bool {
    let (g, w) = (
        baton_core::token::digest(given),
        baton_core::token::digest(want),
    );
    bool::from(g.as_bytes().ct_eq(w.as_bytes()))
}

fn unauthorized(given: bool) -> Response {
    ApiError::new(
        StatusCode::UNAUTHORIZED,
        "UNAUTHORIZED",
        if given {
            "that token is not the server's".into()
        } else {
            "the API needs the server's token".into()
        },
        "send Authorization: Bearer <token> (BATON_SERVER_TOKEN, or .baton/server.token); in the dashboard, open /#token=<token> once",
    )
    .into_response()
}

/// The person's token, where one is set: `None` when the request may go
/// on, else the refusal.
fn person(app: &App, req: &Request) -> Option<Response> {
    let want = app.token.as_deref()?;
    let path = req.uri().path();
    let stream =
        path == STREAM || (path.starts_with("/api/v1/tasks/") && path.ends_with(OUTPUT_STREAM));
    let query = stream
        .then(|| {
            req.uri().query().and_then(|q| {
                form_urlencoded::parse(q.as_bytes())
                    .find(|(k, _)| k == "access_token")
                    .map(|(_, v)| v.into_owned())
            })
        })
        .flatten();
    match bearer(req.headers()).or(query) {
        Some(given) if same(&given, want) => None,
        given => Some(unauthorized(given.is_some())),
    }
}

pub async fn require_token(State(app): State<App>, req: Request, next: Next) -> Response {
    match person(&app, &req) {
        Some(refused) => refused,
        None => next.run(req).await,
    }
}

/// `/mcp`: a capability makes the caller what it names; the person's
/// token (or, on loopback without one, nothing) makes an anonymous caller,
/// who may not claim an identity.
pub async fn identify_agent(State(app): State<App>, mut req: Request, next: Next) -> Response {
    if req.headers().contains_key("baton-summary-file") {
        return ApiError::new(
            StatusCode::BAD_REQUEST,
            "PATH_FROM_CALLER",
            "Baton-Summary-File is not taken: baton names where a phase's reports go".into(),
            "send the capability baton gave the agent (Authorization: Bearer batoncap_…); it says which phase the agent reports on",
        )
        .into_response();
    }
    let claims: Vec<(&str, String)> = IDENTITY_HEADERS
        .iter()
        .filter_map(|k| {
            req.headers()
                .get(*k)
                .and_then(|v| v.to_str().ok())
                .map(|v| (*k, v.trim().to_string()))
        })
        .collect();
    let capability =
        bearer(req.headers()).filter(|t| t.starts_with(baton_core::token::CAPABILITY_PREFIX));
    let Some(capability) = capability else {
        if let Some(refused) = person(&app, &req) {
            return refused;
        }
        if let Some((name, _)) = claims.first() {
            return ApiError::new(
                StatusCode::FORBIDDEN,
                "IDENTITY_NEEDS_CAPABILITY",
                format!("{name} is a claim, and no capability backs it"),
                "an agent shows the capability baton handed it (Authorization: Bearer batoncap_…); `baton mcp grant` makes one for an agent baton did not start",
            )
            .into_response();
        }
        return next.run(req).await;
    };
    let eng = app.eng.clone();
    let who = tokio::task::spawn_blocking(move || eng.identify(&capability)).await;
    let who = match who {
        Ok(Ok(Some(who))) => who,
        Ok(Ok(None)) => {
            return ApiError::new(
                StatusCode::UNAUTHORIZED,
                "CAPABILITY_VOID",
                "that capability is unknown, or the phase or instance it was made for has ended".into(),
                "a capability lasts as long as its phase attempt or agent instance; the agent's next run gets a new one",
            )
            .into_response();
        }
        Ok(Err(e)) => return ApiError::from(e).into_response(),
        Err(e) => {
            return ApiError::internal(format!("the capability check failed: {e}")).into_response();
        }
    };
    let caller = baton_mcp::Caller::from_identity(who);
    for (name, claimed) in &claims {
        let is = match *name {
            "baton-instance" => caller.instance.as_ref().map(|i| i.to_string()),
            "baton-task" => caller.task.clone(),
            "baton-phase" => caller.phase.clone(),
            "baton-team" => caller.team.clone(),
            _ => caller.teammate.clone(),
        };
        if is.as_deref() != Some(claimed.as_str()) {
            return ApiError::new(
                StatusCode::FORBIDDEN,
                "IDENTITY_MISMATCH",
                format!(
                    "{name}: {claimed:?} is not what this capability was made for ({})",
                    is.as_deref().unwrap_or("none")
                ),
                "leave the Baton-* headers out: the capability says who the agent is",
            )
            .into_response();
        }
    }
    req.extensions_mut().insert(caller);
    next.run(req).await
}
