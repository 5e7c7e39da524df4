//! Serving connections with the HTTP stack's own limits, which
//! `axum::serve` cannot set: hyper's header read timeout (with a timer,
//! without which it is silently off; in hyper 1.x its clock starts as soon
//! as a request head is awaited, so it also closes a connection that
//! sends nothing, and one idle between requests), a cap on open
//! connections (a permit per connection), and a graceful shutdown
//! (hyper-util) that finishes the requests in flight. The per-request
//! limits (timeout, body size) are tower-http layers, set where the router
//! is built.
//!
//! At the cap, a new connection takes the place of the oldest one that
//! has not yet sent a whole request head: connections that hold a slot
//! without asking anything (a slow-headers flood) make room for those
//! that do, instead of leaving them in the kernel's queue until the
//! header timeout. A connection that sent a request is never closed for
//! another; when all of them have, new ones wait for a slot.

use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::{Semaphore, oneshot};

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

/// The connections that have not sent a whole request head yet, oldest
/// first, each with the signal that closes it.
#[derive(Default)]
struct Silent(Mutex<BTreeMap<u64, oneshot::Sender<()>>>);

impl Silent {
    fn add(&self, id: u64) -> oneshot::Receiver<()> {
        let (tx, rx) = oneshot::channel();
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id, tx);
        rx
    }

    fn spoke(&self, id: u64) {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).remove(&id);
    }

    /// Closes the oldest; whether there was one.
    fn close_oldest(&self) -> bool {
        let oldest = self.0.lock().unwrap_or_else(|p| p.into_inner()).pop_first();
        oldest.is_some_and(|(_, close)| close.send(()).is_ok())
    }
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
    let silent = Arc::new(Silent::default());
    let graceful = GracefulShutdown::new();
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .keep_alive(true);
    tokio::pin!(shutdown);
    let mut next_id = 0u64;
    loop {
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
        let permit = match permits.clone().try_acquire_owned() {
            Ok(p) => p,
            Err(_) => {
                while !silent.close_oldest() && silent.0.lock().is_ok_and(|m| !m.is_empty()) {}
                tokio::select! {
                    p = permits.clone().acquire_owned() => p.expect("the semaphore is never closed"),
                    () = &mut shutdown => break,
                }
            }
        };
        let _ = stream.set_nodelay(true);
        let id = next_id;
        next_id += 1;
        let closed = silent.add(id);
        let spoke = Arc::new(AtomicBool::new(false));
        let service = {
            let (silent, spoke, router) = (silent.clone(), spoke.clone(), router.clone());
            tower::ServiceBuilder::new()
                .map_request(move |req: axum::extract::Request<hyper::body::Incoming>| {
                    if !spoke.swap(true, Ordering::Relaxed) {
                        silent.spoke(id);
                    }
                    req
                })
                .service(router)
        };
        let conn = graceful
            .watch(http.serve_connection(TokioIo::new(stream), TowerToHyperService::new(service)));
        let silent = silent.clone();
        // Closed for a newcomer only when told so (the signal dropped,
        // because the connection spoke, closes nothing).
        let evicted = async move {
            if closed.await.is_err() {
                std::future::pending::<()>().await;
            }
        };
        tokio::spawn(async move {
            tokio::select! {
                _ = conn => {}
                () = evicted => {}
            }
            silent.spoke(id);
            drop(permit);
        });
    }
    drop(listener);
    let _ = tokio::time::timeout(drain, graceful.shutdown()).await;
}
