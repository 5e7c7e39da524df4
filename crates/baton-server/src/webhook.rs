//! `POST /webhooks/github`. In this order: a body over the limit is 413
//! before it is read whole (the server's body limit, `max_body`); a
//! missing or wrong signature is 401 and
//! nothing is stored; a body that is not JSON, or a missing event or
//! delivery header, is 400; `ping` is 200. Any other delivery is stored
//! (durably, in a group commit) and answered 202, then handed to the tasks
//! off the request path (one whose event no stored workflow waits for is
//! stored as ignored at once, without its body); a delivery id stored
//! before is a redelivery: 200, and nothing changes.

use super::App;
use crate::signature;
use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

pub fn routes() -> axum::Router<App> {
    axum::Router::new().route("/webhooks/github", axum::routing::post(github))
}

/// An error answer: a stable code, what was wrong and what to do.
fn refuse(status: StatusCode, code: &str, message: String, hint: &str) -> Response {
    (
        status,
        Json(json!({"code": code, "message": message, "hint": hint})),
    )
        .into_response()
}

fn header<'a>(h: &'a HeaderMap, name: &str) -> Option<&'a str> {
    h.get(name).and_then(|v| v.to_str().ok())
}

async fn github(
    State(app): State<App>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let arrived = std::time::Instant::now();
    let body = match body {
        Ok(b) => b,
        Err(e) if e.status() == StatusCode::PAYLOAD_TOO_LARGE => {
            return refuse(
                StatusCode::PAYLOAD_TOO_LARGE,
                "PAYLOAD_TOO_LARGE",
                "the delivery is larger than this server accepts".into(),
                "raise max_body under [server] in .baton/config.toml if such deliveries are expected",
            );
        }
        Err(e) => {
            return refuse(
                StatusCode::BAD_REQUEST,
                "BAD_BODY",
                format!("the body could not be read: {e}"),
                "send the delivery again",
            );
        }
    };
    if !signature::verify(&app.secrets, header(&headers, "x-hub-signature-256"), &body) {
        let message = if header(&headers, "x-hub-signature-256").is_none() {
            "the delivery has no X-Hub-Signature-256 header"
        } else {
            "the delivery's X-Hub-Signature-256 does not match its body under any configured secret"
        };
        return refuse(
            StatusCode::UNAUTHORIZED,
            "BAD_SIGNATURE",
            message.into(),
            "set the same secret in GitHub's webhook settings and in BATON_WEBHOOK_SECRET (or [server] webhook_secrets)",
        );
    }
    let Some(event) = header(&headers, "x-github-event")
        .filter(|e| !e.is_empty())
        .map(str::to_string)
    else {
        return refuse(
            StatusCode::BAD_REQUEST,
            "MISSING_EVENT",
            "the delivery has no X-GitHub-Event header".into(),
            "this endpoint takes GitHub webhook deliveries",
        );
    };
    // Checked whole, built only where it is judged (`judged::parse`).
    let payload: Value = match baton_core::webhook::judged::parse(&body, &app.watched.paths()) {
        Ok(v @ Value::Object(_)) => v,
        Ok(_) => {
            return refuse(
                StatusCode::BAD_REQUEST,
                "BAD_JSON",
                "the body is JSON but not an object".into(),
                "this endpoint takes GitHub webhook deliveries",
            );
        }
        Err(e) => {
            let hint = if body.starts_with(b"payload=") {
                "set Content type to application/json in GitHub's webhook settings"
            } else {
                "send the JSON body GitHub posts, unchanged"
            };
            return refuse(
                StatusCode::BAD_REQUEST,
                "BAD_JSON",
                format!("the body is not JSON: {e}"),
                hint,
            );
        }
    };
    if event == "ping" {
        return (
            StatusCode::OK,
            Json(json!({"ok": true, "zen": payload.get("zen")})),
        )
            .into_response();
    }
    let Some(id) = header(&headers, "x-github-delivery")
        .filter(|s| !s.is_empty() && s.len() <= 200)
        .map(str::to_string)
    else {
        return refuse(
            StatusCode::BAD_REQUEST,
            "MISSING_DELIVERY",
            "the delivery has no X-GitHub-Delivery header".into(),
            "this endpoint takes GitHub webhook deliveries; each carries its delivery id",
        );
    };
    let now = app.eng.now();
    let mut d = baton_engine::new_delivery(id.clone(), event, &payload, &app.watched.paths(), now);
    // The body's digest is its verified signature: HMAC-SHA256 of the
    // body, which a replay carries unchanged and nobody without the
    // secret can make for another body (and it costs no second hash).
    d.body = header(&headers, "x-hub-signature-256")
        .and_then(|h| h.trim().strip_prefix("sha256="))
        .map(|hex| baton_store::BodyDigest {
            digest: hex.to_ascii_lowercase(),
            window_ms: app.replay_window_ms,
        });
    let name = baton_core::webhook::Delivery {
        event: &d.event,
        payload: &payload,
    }
    .name();
    if !app.watched.awaited(&name) && !baton_engine::moves_instances(&d.event, d.action.as_deref())
    {
        // The workflows may have changed since the watcher last looked (a
        // task of a new workflow created a moment ago): look again.
        let watched = app.watched.clone();
        let looked = name.clone();
        let awaited = tokio::task::spawn_blocking(move || watched.awaited_since(&looked, arrived))
            .await
            .unwrap_or(true);
        if awaited {
            // Kept with the paths the new workflows' conditions read too.
            if let Ok(v) = baton_core::webhook::judged::parse(&body, &app.watched.paths()) {
                let body = d.body.take();
                d = baton_engine::new_delivery(
                    id.clone(),
                    d.event.clone(),
                    &v,
                    &app.watched.paths(),
                    now,
                );
                d.body = body;
            }
        } else {
            // For no task: recorded as ignored as it arrives, no hand-over.
            d.settled = Some(baton_engine::ignored(&name, now));
        }
    }
    match app.recorder.record(d.clone()).await {
        Ok(true) => {
            if d.settled.is_none() {
                app.dispatch.send(d);
            }
            (
                StatusCode::ACCEPTED,
                Json(json!({"delivery": id, "accepted": true})),
            )
                .into_response()
        }
        Ok(false) => (
            StatusCode::OK,
            Json(json!({"delivery": id, "redelivery": true})),
        )
            .into_response(),
        Err(e) => refuse(
            StatusCode::SERVICE_UNAVAILABLE,
            "STORE_UNAVAILABLE",
            format!("the delivery could not be stored: {e}"),
            "GitHub can redeliver it from the webhook's Recent Deliveries once the store is back",
        ),
    }
}
