//! The dashboard at `/` (one server-rendered page, `dashboard.html`, whose
//! script reads the API) and the live updates it listens to:
//! `/api/v1/stream`, server-sent events. A watcher thread looks at the
//! store four times a second and, when a task or a delivery changed,
//! bumps a version every open stream then sends as a `changed` event.

use crate::App;
use axum::extract::State;
use axum::response::Html;
use axum::response::sse::{Event, KeepAlive, Sse};
use baton_engine::Engine;
use std::convert::Infallible;
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::sync::watch;

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
    let rx = app.changes.clone();
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

/// Watches the store; returns the receiver every stream clones. When
/// `stop` is set the watcher ends, and with it every open stream.
pub fn watch_store(eng: Arc<Engine>, stop: Arc<AtomicBool>) -> watch::Receiver<u64> {
    let (tx, rx) = watch::channel(0u64);
    std::thread::Builder::new()
        .name("baton-watch".into())
        .spawn(move || {
            let mut last = None;
            while !stop.load(Ordering::SeqCst) {
                if let Ok(now) = fingerprint(&eng)
                    && last != Some(now)
                {
                    last = Some(now);
                    tx.send_modify(|v| *v += 1);
                }
                std::thread::sleep(Duration::from_millis(250));
            }
        })
        .expect("a thread starts");
    rx
}

/// What the dashboard shows, hashed: each task's status, phase and last
/// change, and the newest deliveries with their decisions.
fn fingerprint(eng: &Engine) -> Result<u64, baton_engine::Error> {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    for (t, status) in eng.list()? {
        (
            t.id.as_str(),
            status.as_str(),
            &t.last_phase,
            t.updated_at.millis(),
        )
            .hash(&mut h);
    }
    for d in eng.store.deliveries(20)? {
        (d.id, d.decision, d.settled_at.map(|t| t.millis())).hash(&mut h);
    }
    Ok(h.finish())
}
