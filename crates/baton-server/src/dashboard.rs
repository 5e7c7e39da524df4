//! The dashboard at `/` (one server-rendered page, `dashboard.html`, with
//! its style and script served beside it so that its Content Security
//! Policy allows no inline code; the script reads the API) and the live
//! updates it listens to: `/api/v1/stream`, server-sent events: a
//! `changed` event each time the store watcher (`watch.rs`) saw a task or
//! a delivery change.

use crate::App;
use axum::extract::State;
use axum::http::header;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{Html, IntoResponse};
use std::convert::Infallible;

const PAGE: &str = include_str!("dashboard.html");
const STYLE: &str = include_str!("dashboard.css");
const SCRIPT: &str = include_str!("dashboard.js");

/// What the page may load and who may frame it: its own style, script
/// and API only; nobody.
const PAGE_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

pub fn routes() -> axum::Router<App> {
    axum::Router::new()
        .route("/", axum::routing::get(page))
        .route(
            "/dashboard.css",
            axum::routing::get(|| async {
                ([(header::CONTENT_TYPE, "text/css; charset=utf-8")], STYLE)
            }),
        )
        .route(
            "/dashboard.js",
            axum::routing::get(|| async {
                (
                    [(header::CONTENT_TYPE, "text/javascript; charset=utf-8")],
                    SCRIPT,
                )
            }),
        )
}

async fn page(State(app): State<App>) -> impl IntoResponse {
    (
        [(header::CONTENT_SECURITY_POLICY, PAGE_POLICY)],
        Html(PAGE.replace("{{project}}", &escape(&app.eng.project.name()))),
    )
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// `GET /api/v1/stream`: a `changed` event whenever a task or a delivery
/// changed (and once at the start).
pub async fn stream(
    State(app): State<App>,
) -> Sse<impl futures_util::Stream<Item = Result<Event, Infallible>>> {
    let rx = app.watched.changes.clone();
    let events = futures_util::stream::unfold((rx, true), |(mut rx, first)| async move {
        if !first && rx.changed().await.is_err() {
            return None;
        }
        let version = *rx.borrow_and_update();
        let event = Event::default()
            .event("changed")
            .data(format!("{{\"version\":{version}}}"));
        Some((Ok(event), (rx, false)))
    });
    Sse::new(events).keep_alive(KeepAlive::default())
}
