//! The pages: the board at `/` (`web/board.html`; `/board` leads there)
//! and the task list at `/tasks` (`web/dashboard.html`), each with its style and script served
//! beside it so that their Content Security Policy allows no inline code
//! (the scripts read the API) and the live
//! updates it listens to: `/api/v1/stream`, server-sent events: a
//! `changed` event each time the store watcher (`watch.rs`) saw a task or
//! a delivery change.

use crate::App;
use axum::extract::State;
use axum::http::header;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{Html, IntoResponse};
use std::convert::Infallible;

const PAGE: &str = include_str!("../web/dashboard.html");
const BOARD: &str = include_str!("../web/board.html");

/// The pages' style and scripts, and the diff renderer they use
/// (diff2html 3.4.56, MIT, `web/vendor/`), served from the binary.
const ASSETS: [(&str, &str, &str); 7] = [
    ("/common.js", JS, include_str!("../web/common.js")),
    ("/dashboard.css", CSS, include_str!("../web/dashboard.css")),
    ("/dashboard.js", JS, include_str!("../web/dashboard.js")),
    ("/board.css", CSS, include_str!("../web/board.css")),
    ("/board.js", JS, include_str!("../web/board.js")),
    (
        "/vendor/diff2html.min.css",
        CSS,
        include_str!("../web/vendor/diff2html.min.css"),
    ),
    (
        "/vendor/diff2html.min.js",
        JS,
        include_str!("../web/vendor/diff2html.min.js"),
    ),
];
const CSS: &str = "text/css; charset=utf-8";
const JS: &str = "text/javascript; charset=utf-8";

/// What the page may load and who may frame it: its own style, script
/// and API only; nobody.
const PAGE_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

pub fn routes() -> axum::Router<App> {
    let mut r = axum::Router::new()
        .route("/", axum::routing::get(|s| page(s, BOARD)))
        .route("/tasks", axum::routing::get(|s| page(s, PAGE)))
        .route(
            "/board",
            axum::routing::get(|| async { axum::response::Redirect::permanent("/") }),
        );
    for (path, kind, body) in ASSETS {
        r = r.route(
            path,
            axum::routing::get(move || async move { ([(header::CONTENT_TYPE, kind)], body) }),
        );
    }
    r
}

async fn page(State(app): State<App>, html: &'static str) -> impl IntoResponse {
    (
        [(header::CONTENT_SECURITY_POLICY, PAGE_POLICY)],
        Html(html.replace("{{project}}", &escape(&app.eng.project.name()))),
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
