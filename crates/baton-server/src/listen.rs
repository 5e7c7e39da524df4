//! Serving connections with the HTTP stack's own limits, which
//! `axum::serve` cannot set: hyper's header read timeout (with a timer,
//! without which it is silently off; in hyper 1.x its clock starts as soon
//! as a request head is awaited, so it also closes a connection that
//! sends nothing, and one idle between requests), a cap on open
//! connections (a permit per connection: past the cap, new ones wait in
//! the kernel's queue rather than take descriptors the store needs), and
//! a graceful shutdown (hyper-util) that finishes the requests in flight.
//! The per-request limits (timeout, body size) are tower-http layers, set
//! where the router is built.

use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

pub struct Limits {
    pub max_connections: usize,
    pub header_timeout: Duration,
}

/// The most connections this process can hold next to the files and the
/// store it needs: the descriptor limit, raised to its hard maximum first,
/// minus a reserve.
pub fn connection_ceiling() -> usize {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE) else {
        return 1024;
    };
    let soft = if soft < hard && setrlimit(Resource::RLIMIT_NOFILE, hard, hard).is_ok() {
        hard
    } else {
        soft
    };
    usize::try_from(soft.saturating_sub(256))
        .unwrap_or(usize::MAX)
        .max(16)
}

/// Accepts and serves until `shutdown` resolves, then stops accepting and
/// waits (at most `drain`) for the connections to finish their requests.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: Limits,
    shutdown: impl std::future::Future<Output = ()>,
    drain: Duration,
) {
    let permits = Arc::new(Semaphore::new(limits.max_connections));
    let graceful = GracefulShutdown::new();
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .keep_alive(true);
    tokio::pin!(shutdown);
    loop {
        let permit = tokio::select! {
            p = permits.clone().acquire_owned() => p.expect("the semaphore is never closed"),
            () = &mut shutdown => break,
        };
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    // Out of descriptors or memory for a moment: wait, as
                    // hyper's and axum's own loops do, instead of spinning.
                    if !matches!(
                        e.kind(),
                        std::io::ErrorKind::ConnectionAborted
                            | std::io::ErrorKind::ConnectionReset
                            | std::io::ErrorKind::Interrupted
                    ) {
                        tracing::warn!("baton serve: accepting a connection failed: {e}");
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let _ = stream.set_nodelay(true);
        let service = TowerToHyperService::new(router.clone());
        let conn = graceful.watch(http.serve_connection(TokioIo::new(stream), service));
        tokio::spawn(async move {
            let _ = conn.await;
            drop(permit);
        });
    }
    drop(listener);
    let _ = tokio::time::timeout(drain, graceful.shutdown()).await;
}
