//! `baton serve`: an HTTP server (axum on tokio) that hears GitHub's
//! webhooks and resumes the tasks waiting for them, at the stage they wait
//! in and nowhere else.
//!
//! The rooms: `listen` (connections with the HTTP stack's limits),
//! `guard` (Host, Origin and what a state change needs, on every route;
//! the headers every answer carries), `shape` (every error answer in the
//! documented shape), `signature` (GitHub's HMAC), `webhook` (the
//! endpoint: signature, JSON, then the delivery recorded), `recorder`
//! (group commit of deliveries), `dispatch` (deliveries handed to the tasks
//! off the request path, and the tasks they passed run on), `supervisor`
//! (crashed tasks restarted, due timers woken), `runner` (the task runs it
//! starts as processes), `api` with `views` (the JSON API and its OpenAPI
//! document), `auth` (the API's token, and the agents' capabilities on
//! `/mcp`), `mcp` (the MCP endpoint: identified, screened, then the
//! SDK), `output` (what a running phase prints, after a cursor),
//! `dashboard` (the page at `/` and its live event stream) and
//! `watch` (what the store holds that those follow). docs/security.md
//! says what each defends against.

mod api;
mod auth;
mod dashboard;
mod dispatch;
mod guard;
pub mod input;
mod listen;
mod mcp;
mod output;
pub mod probe;
mod recorder;
mod runner;
mod shape;
pub mod signature;
mod supervisor;
pub mod views;
mod watch;
mod webhook;

use baton_engine::config::{ServerSettings, SupervisorSettings};
use baton_engine::{Engine, Error, Observer, Project};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// What the request handlers share.
#[derive(Clone)]
struct App {
    eng: Arc<Engine>,
    secrets: Arc<Vec<String>>,
    token: Option<Arc<str>>,
    recorder: recorder::Recorder,
    /// How long a signed body is remembered against replays.
    replay_window_ms: i64,
    dispatch: Arc<dispatch::Dispatch>,
    runs: Arc<runner::Runs>,
    /// What the store watcher keeps: changes, awaited event names.
    watched: watch::Watched,
    /// What `/metrics` says.
    metrics: Arc<baton_engine::metrics::Metrics>,
}

/// Serves, and supervises the tasks, until SIGTERM or SIGINT: then it stops accepting, finishes the
/// requests in flight, interrupts the task runs it started (journaled,
/// leases released) and returns.
pub fn serve(
    project: Project,
    settings: ServerSettings,
    supervision: SupervisorSettings,
    observer: Arc<dyn Observer>,
) -> Result<(), Error> {
    let stop = Arc::new(AtomicBool::new(false));
    let runs = Arc::new(runner::Runs::default());
    let keeper: baton_engine::engine::Keeper = {
        let runs = runs.clone();
        Arc::new(move |child| runs.adopt(child))
    };
    let metrics = Arc::new(baton_engine::metrics::Metrics::new());
    let observer: Arc<dyn Observer> = Arc::new(baton_engine::metrics::Metered::new(
        observer,
        metrics.clone(),
    ));
    let eng = Arc::new(
        Engine::open(project.clone(), observer.clone())?
            .with_interrupt(stop.clone())
            .with_background(keeper),
    );
    let writer = eng.delivery_writer()?;
    let listener = std::net::TcpListener::bind(settings.addr).map_err(|e| {
        Error::op(format!("cannot listen on {}: {e}", settings.addr))
            .hint("pass another address with --addr, or stop what listens there")
    })?;
    listener.set_nonblocking(true)?;
    let local = listener.local_addr()?;
    if settings.secrets.is_empty() {
        observer.info(
            "warning: no webhook secret is set (BATON_WEBHOOK_SECRET or [server] webhook_secrets): every delivery will be refused with 401",
        );
    }
    let dispatch = Arc::new(dispatch::Dispatch::start(
        eng.clone(),
        settings.branch_pattern.clone(),
        runs.clone(),
    ));
    let supervisor = supervisor::Supervisor::start(eng.clone(), supervision, stop.clone());
    let app = App {
        eng: eng.clone(),
        secrets: Arc::new(settings.secrets.clone()),
        token: settings.token.as_deref().map(Arc::from),
        recorder: recorder::Recorder::start(writer),
        replay_window_ms: settings.replay_window_ms,
        dispatch: dispatch.clone(),
        runs: runs.clone(),
        watched: watch::start(eng.clone(), stop.clone()),
        metrics,
    };
    let (api, doc) = api::routes();
    let doc = Arc::new(doc.to_pretty_json().expect("the OpenAPI document is JSON"));
    let api = api
        .route(
            "/api/v1/openapi.json",
            axum::routing::get(move || {
                let doc = doc.clone();
                async move { ([("content-type", "application/json")], doc.to_string()) }
            }),
        )
        .route("/api/v1/stream", axum::routing::get(dashboard::stream))
        .route("/metrics", axum::routing::get(probe::serve_metrics))
        .layer(axum::middleware::from_fn_with_state(
            app.clone(),
            auth::require_token,
        ));
    let mcp_stop = tokio_util::sync::CancellationToken::new();
    let mcp = mcp::routes(
        &app,
        baton_mcp::http_service(eng.clone(), settings.max_body, mcp_stop.clone()),
    );
    let hosts = guard::Hosts::new(settings.allowed_hosts.clone(), observer.clone());
    let mut router = axum::Router::new()
        .merge(dashboard::routes())
        .route("/healthz", axum::routing::get(|| async { "ok\n" }))
        .merge(webhook::routes())
        .merge(api)
        .merge(mcp)
        .with_state(app)
        // Innermost first: axum's own 2 MiB cap on extracted bodies off
        // (it answered 413 to any body over 2 MiB, whatever max_body
        // said), the body limit (413 on a declared length over it, before
        // any body is read; a longer body cut there), the request
        // timeout, the guard, the headers of every answer, and outermost
        // the error shape.
        .layer(axum::extract::DefaultBodyLimit::disable())
        .layer(tower_http::limit::RequestBodyLimitLayer::new(
            settings.max_body,
        ))
        .layer(tower_http::timeout::TimeoutLayer::with_status_code(
            axum::http::StatusCode::REQUEST_TIMEOUT,
            settings.request_timeout,
        ))
        .layer(axum::middleware::from_fn_with_state(hosts, guard::check));
    for (name, value) in guard::security_headers() {
        router = router
            .layer(tower_http::set_header::SetResponseHeaderLayer::if_not_present(name, value));
    }
    let router = router.layer(axum::middleware::from_fn(shape::errors));
    let ceiling = listen::connection_ceiling();
    if settings.max_connections > ceiling {
        observer.info(&format!(
            "warning: max_connections {} is more than this process can open next to its files; at most {ceiling} are served at once",
            settings.max_connections
        ));
    }
    let limits = listen::Limits {
        max_connections: settings.max_connections.min(ceiling),
        header_timeout: settings.header_timeout,
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    observer.info(&format!(
        "baton serve: listening on http://{local} (dashboard at /, API at /api/v1, webhooks at /webhooks/github, MCP at /mcp), store {}",
        eng.store_description()
    ));
    let stopping = {
        let (stop, observer) = (stop.clone(), observer.clone());
        async move {
            signalled().await;
            observer.info("baton serve: stopping: interrupting the task runs it started");
            // Ends the task runs, the dashboards' event streams and the MCP
            // sessions, so the requests in flight can finish.
            stop.store(true, Ordering::SeqCst);
            mcp_stop.cancel();
        }
    };
    let served = rt.block_on(async move {
        let listener = tokio::net::TcpListener::from_std(listener)?;
        listen::serve(
            listener,
            router,
            limits,
            stopping,
            std::time::Duration::from_secs(10),
        )
        .await;
        Ok::<(), std::io::Error>(())
    });
    stop.store(true, Ordering::SeqCst);
    dispatch.finish();
    supervisor.finish();
    runs.finish();
    rt.shutdown_timeout(std::time::Duration::from_secs(5));
    served?;
    observer.info("baton serve: stopped");
    Ok(())
}

async fn signalled() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
}
