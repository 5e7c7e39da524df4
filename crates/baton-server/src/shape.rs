//! Every error answer in the documented shape, `{code, message, hint}`,
//! including the ones the framework makes itself: an unknown path (404),
//! a method a route does not take (405), a request that took too long
//! (408), a declared body over the limit (413), and any other plain or
//! empty error body from below (axum, tower-http, rmcp). Answers that are
//! JSON already (baton's own errors, JSON-RPC errors) or a stream pass as
//! they are.

use crate::views::ApiError;
use axum::extract::Request;
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

pub async fn errors(req: Request, next: Next) -> Response {
    let method = req.method().clone();
    let path = req.uri().path().to_string();
    let resp = next.run(req).await;
    let status = resp.status();
    if !(status.is_client_error() || status.is_server_error()) || is_json(&resp) {
        return resp;
    }
    let allow = resp.headers().get(header::ALLOW).cloned();
    let text = |limit| async move {
        axum::body::to_bytes(resp.into_body(), limit)
            .await
            .ok()
            .map(|b| String::from_utf8_lossy(&b).trim().to_string())
            .filter(|t| !t.is_empty())
    };
    let mut out = match status {
        StatusCode::NOT_FOUND => ApiError::new(
            status,
            "NOT_FOUND",
            format!("there is nothing at {method} {path}"),
            "the API is under /api/v1 (its description at /api/v1/openapi.json), webhooks go to POST /webhooks/github, MCP to /mcp",
        ),
        StatusCode::METHOD_NOT_ALLOWED => ApiError::new(
            status,
            "METHOD_NOT_ALLOWED",
            format!("{path} does not take {method}"),
            &match allow.as_ref().and_then(|a| a.to_str().ok()) {
                Some(a) => format!("it takes {a}"),
                None => "see /api/v1/openapi.json".into(),
            },
        ),
        StatusCode::REQUEST_TIMEOUT => ApiError::new(
            status,
            "REQUEST_TIMEOUT",
            "the request took longer than this server waits".into(),
            "send it again; request_timeout under [server] sets how long it waits",
        ),
        StatusCode::PAYLOAD_TOO_LARGE => ApiError::new(
            status,
            "PAYLOAD_TOO_LARGE",
            "the body is larger than this server accepts".into(),
            "raise max_body under [server] in .baton/config.toml if such bodies are expected",
        ),
        _ => {
            let said = text(4096).await;
            let code = status
                .canonical_reason()
                .unwrap_or("ERROR")
                .to_ascii_uppercase()
                .replace([' ', '-'], "_");
            ApiError::new(
                status,
                &code,
                said.unwrap_or_else(|| format!("{method} {path} was refused")),
                "see docs/server.md for what this server takes",
            )
        }
    }
    .into_response();
    if let Some(a) = allow {
        out.headers_mut().insert(header::ALLOW, a);
    }
    out
}

fn is_json(resp: &Response) -> bool {
    resp.headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            let v = v.to_ascii_lowercase();
            v.starts_with("application/json") || v.starts_with("text/event-stream")
        })
}
