//! The dashboard at `/` (one server-rendered page, `dashboard.html`, whose
//! script reads the API) and the live updates it listens to:
//! `/api/v1/stream`, server-sent events: a `changed` event each time the
//! store watcher (`watch.rs`) saw a task or a delivery change.

use crate::App;
use axum::extract::State;
use axum::response::Html;
use axum::response::sse::{Event, KeepAlive, Sse};
use std::convert::Infallible;

const PAGE: &str = include_str!("dashboard.html");

pub async fn page(State(app): State<App>) -> Html<String> {
    Html(PAGE.replace("{{project}}", &escape(&app.eng.project.name())))
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
