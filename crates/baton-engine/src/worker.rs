//! `baton worker`: claims queued tasks and runs them, N at a time.
//!
//! Each slot is a thread with its own engine and store connection. It claims
//! a task (a lease taken in one transaction; on PostgreSQL with
//! `FOR UPDATE SKIP LOCKED`), drives it like `resume` would, releases it, and
//! claims the next. With nothing to claim it sleeps until the store says
//! work arrived (PostgreSQL `LISTEN`), or half a lease TTL passed, so a task
//! whose worker died is picked up soon after its lease expires.

use crate::engine::{Engine, Observer, Outcome};
use crate::error::Result;
use crate::project::Project;
use baton_core::TaskId;
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

#[derive(Debug, Clone)]
pub struct WorkerOptions {
    pub concurrency: usize,
    /// Return once no queued task is left to run (held or not).
    pub until_idle: bool,
}

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct WorkerReport {
    /// Tasks this worker drove to an end (complete, failed, waiting, cancelled).
    pub finished: usize,
    pub completed: usize,
}

/// Runs the worker until `stop` is set (or, with `until_idle`, the queue is
/// empty). A signal sets `stop`: the phases running are interrupted and
/// journaled, and their tasks released for another worker.
pub fn run(
    project: &Project,
    opts: &WorkerOptions,
    observer: Arc<dyn Observer>,
    stop: Arc<AtomicBool>,
) -> Result<WorkerReport> {
    // Open one engine first, so a bad store URL fails before any thread.
    let first = Engine::open(project.clone(), observer.clone())?.with_interrupt(stop.clone());
    let idle_wait =
        Duration::from_millis((project.config.lease_ttl_ms()? / 2).clamp(100, 5000) as u64);
    let finished = Arc::new(AtomicUsize::new(0));
    let completed = Arc::new(AtomicUsize::new(0));
    let mut engines = vec![first];
    for _ in 1..opts.concurrency.max(1) {
        engines.push(Engine::open(project.clone(), observer.clone())?.with_interrupt(stop.clone()));
    }
    let handles: Vec<_> = engines
        .into_iter()
        .map(|eng| {
            let (stop, finished, completed) = (stop.clone(), finished.clone(), completed.clone());
            let observer = observer.clone();
            let until_idle = opts.until_idle;
            std::thread::spawn(move || {
                slot(
                    &eng, &*observer, &stop, until_idle, idle_wait, &finished, &completed,
                )
            })
        })
        .collect();
    for h in handles {
        let _ = h.join();
    }
    Ok(WorkerReport {
        finished: finished.load(Ordering::SeqCst),
        completed: completed.load(Ordering::SeqCst),
    })
}

fn slot(
    eng: &Engine,
    observer: &dyn Observer,
    stop: &AtomicBool,
    until_idle: bool,
    idle_wait: Duration,
    finished: &AtomicUsize,
    completed: &AtomicUsize,
) {
    let mut backoff = Duration::from_millis(100);
    // Tasks that could not start here (their branch is gone, the remote is
    // unreachable from this machine, …): left out of claims for a while, so
    // one of them never blocks the rest of the queue.
    let mut resting: HashMap<TaskId, (Instant, Duration)> = HashMap::new();
    while !stop.load(Ordering::SeqCst) {
        let now = Instant::now();
        let skip: Vec<TaskId> = resting
            .iter()
            .filter(|(_, (until, _))| *until > now)
            .map(|(id, _)| id.clone())
            .collect();
        match eng.claim_and_run(&skip) {
            Ok(Some((id, Ok(outcome)))) => {
                backoff = Duration::from_millis(100);
                resting.remove(&id);
                match &outcome {
                    Outcome::Interrupted(_) => {
                        observer.info(&format!("task {id} released for another worker"));
                    }
                    Outcome::Complete => {
                        completed.fetch_add(1, Ordering::SeqCst);
                        finished.fetch_add(1, Ordering::SeqCst);
                    }
                    _ => {
                        finished.fetch_add(1, Ordering::SeqCst);
                    }
                }
            }
            Ok(Some((id, Err(e)))) => {
                let pause = resting.get(&id).map_or(Duration::from_secs(30), |(_, p)| {
                    (*p * 2).min(Duration::from_secs(600))
                });
                let mut text = format!(
                    "warning: task {id} cannot run here: {}; trying other tasks, and it again in {}s",
                    e.message,
                    pause.as_secs()
                );
                for h in &e.hints {
                    text.push_str(&format!("\n  hint: {h}"));
                }
                observer.info(&text);
                resting.insert(id, (Instant::now() + pause, pause));
            }
            Ok(None) => {
                backoff = Duration::from_millis(100);
                if until_idle && !eng.queue_pending(&skip).unwrap_or(true) {
                    if !skip.is_empty() {
                        let ids: Vec<&str> = skip.iter().map(|t| t.as_str()).collect();
                        observer.info(&format!(
                            "warning: left queued, since they could not run here: {}",
                            ids.join(", ")
                        ));
                    }
                    return;
                }
                if let Err(e) = eng.store.wait_for_work(idle_wait) {
                    observer.info(&format!("warning: waiting for work: {e}"));
                    std::thread::sleep(idle_wait);
                }
            }
            Err(e) => {
                // The store may be restarting: say so, wait a little longer
                // each time, and go on.
                observer.info(&format!("warning: {}", e.message));
                std::thread::sleep(backoff);
                backoff = (backoff * 2).min(Duration::from_secs(5));
            }
        }
    }
}
