//! `/mcp`: baton's MCP tools over Streamable HTTP (rmcp). Before the SDK
//! sees a message, the agent is identified by its capability (`auth.rs`)
//! and the message is screened like a stdio line
//! (`baton_mcp::jsonrpc`): a body that is not JSON is -32700 (HTTP 400),
//! JSON that is no JSON-RPC message -32600 (HTTP 400), a `tools/call`
//! whose params or arguments are not objects -32602, answered to its id.

use crate::App;
use axum::body::Body;
use axum::extract::Request;
use axum::http::{Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use baton_mcp::jsonrpc::{Screened, screen};

pub fn routes(app: &App, service: baton_mcp::HttpService) -> axum::Router<App> {
    axum::Router::new()
        .route_service("/mcp", service)
        .layer(axum::middleware::from_fn(screened))
        .layer(axum::middleware::from_fn_with_state(
            app.clone(),
            crate::auth::identify_agent,
        ))
}

async fn screened(req: Request, next: Next) -> Response {
    if req.method() != Method::POST {
        return next.run(req).await;
    }
    let (parts, body) = req.into_parts();
    // The server's body limit already bounds what is read here.
    let bytes = match axum::body::to_bytes(body, usize::MAX).await {
        Ok(b) => b,
        Err(e) => {
            return crate::views::ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "PAYLOAD_TOO_LARGE",
                format!("the message could not be read: {e}"),
                "send it again, no larger than max_body under [server]",
            )
            .into_response();
        }
    };
    match screen(&bytes) {
        Screened::Forward => {
            next.run(Request::from_parts(parts, Body::from(bytes)))
                .await
        }
        Screened::Drop => StatusCode::ACCEPTED.into_response(),
        Screened::Reply(v) => {
            let status = if v["id"].is_null() {
                StatusCode::BAD_REQUEST
            } else {
                StatusCode::OK
            };
            (
                status,
                [(header::CONTENT_TYPE, "application/json")],
                v.to_string(),
            )
                .into_response()
        }
    }
}
