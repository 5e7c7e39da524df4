//! What Kubernetes and Prometheus ask a process: `baton worker --listen
//! ADDR` answers `/healthz` (the process is alive), `/readyz` (it claims
//! work: the store answers, at the schema this baton knows, and the
//! worker is not draining) and `/metrics` ([`baton_engine::metrics`]);
//! `baton serve` answers `/metrics` too, behind its token. They only
//! read: nothing here changes state, and no request names a path.

use baton_engine::Project;
use baton_engine::engine::{Engine, Silent};
use baton_engine::metrics::{CONTENT_TYPE, Metrics};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// What a worker's endpoints read.
#[derive(Clone)]
pub struct Probe {
    pub project: Project,
    pub metrics: Arc<Metrics>,
    /// Set once the worker drains: it claims nothing more, so it is not
    /// ready.
    pub draining: Arc<AtomicBool>,
}

/// Listens on `addr` now (so a taken address fails before the worker
/// starts) and answers there on a thread of its own until the process
/// ends. Returns the address it listens on.
pub fn listen(addr: SocketAddr, probe: Probe) -> std::io::Result<SocketAddr> {
    let listener = std::net::TcpListener::bind(addr)?;
    listener.set_nonblocking(true)?;
    let local = listener.local_addr()?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    std::thread::spawn(move || {
        rt.block_on(async move {
            let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
                return;
            };
            let router = axum::Router::new()
                .route("/healthz", axum::routing::get(|| async { "ok\n" }))
                .route("/readyz", axum::routing::get(ready))
                .route("/metrics", axum::routing::get(worker_metrics))
                .with_state(probe)
                .layer(tower_http::timeout::TimeoutLayer::with_status_code(
                    axum::http::StatusCode::REQUEST_TIMEOUT,
                    std::time::Duration::from_secs(30),
                ));
            let _ = axum::serve(listener, router).await;
        });
    });
    Ok(local)
}

type Answer = (
    axum::http::StatusCode,
    [(&'static str, &'static str); 1],
    String,
);

fn answer(status: axum::http::StatusCode, kind: &'static str, body: String) -> Answer {
    (status, [("content-type", kind)], body)
}

const TEXT: &str = "text/plain; charset=utf-8";

/// Opens the store as every command does (connected, migrations checked)
/// and reads from it.
fn engine(project: &Project) -> Result<Engine, baton_engine::Error> {
    Engine::open(project.clone(), Arc::new(Silent))
}

async fn ready(axum::extract::State(p): axum::extract::State<Probe>) -> Answer {
    use axum::http::StatusCode;
    if p.draining.load(Ordering::SeqCst) {
        return answer(
            StatusCode::SERVICE_UNAVAILABLE,
            TEXT,
            "draining: claims nothing more\n".into(),
        );
    }
    let checked = tokio::task::spawn_blocking(move || {
        // Opening is the check: connected, and the schema checked (a
        // store written by a newer baton is refused).
        let eng = engine(&p.project)?;
        Ok::<String, baton_engine::Error>(eng.store_description())
    })
    .await;
    match checked {
        Ok(Ok(store)) => answer(StatusCode::OK, TEXT, format!("ready: store {store}\n")),
        Ok(Err(e)) => answer(
            StatusCode::SERVICE_UNAVAILABLE,
            TEXT,
            format!("not ready: {}\n", e.message),
        ),
        Err(e) => answer(
            StatusCode::SERVICE_UNAVAILABLE,
            TEXT,
            format!("not ready: {e}\n"),
        ),
    }
}

async fn worker_metrics(axum::extract::State(p): axum::extract::State<Probe>) -> Answer {
    let metrics = p.metrics.clone();
    render(move || Ok(Box::new(engine(&p.project)?)), metrics).await
}

/// `GET /metrics` of `baton serve` (behind its token, as `/api/v1`).
pub(crate) async fn serve_metrics(
    axum::extract::State(app): axum::extract::State<crate::App>,
) -> Answer {
    let eng = app.eng.clone();
    render(move || Ok(eng), app.metrics.clone()).await
}

async fn render<E: std::ops::Deref<Target = Engine> + Send + 'static>(
    eng: impl FnOnce() -> Result<E, baton_engine::Error> + Send + 'static,
    metrics: Arc<Metrics>,
) -> Answer {
    use axum::http::StatusCode;
    let text = tokio::task::spawn_blocking(move || metrics.render(&*eng()?)).await;
    match text {
        Ok(Ok(text)) => answer(StatusCode::OK, CONTENT_TYPE, text),
        Ok(Err(e)) => answer(
            StatusCode::SERVICE_UNAVAILABLE,
            TEXT,
            format!("the store did not answer: {}\n", e.message),
        ),
        Err(e) => answer(StatusCode::INTERNAL_SERVER_ERROR, TEXT, format!("{e}\n")),
    }
}
