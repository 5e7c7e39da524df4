//! `baton worker`: claims queued tasks and runs them, N at a time.
//!
//! Each slot is a thread with its own engine and store connection. It claims
//! a task (a lease taken in one transaction; on PostgreSQL with
//! `FOR UPDATE SKIP LOCKED`), drives it like `resume` would, releases it, and
//! claims the next. With nothing to claim it sleeps until the store says
//! work arrived (PostgreSQL `LISTEN`), or half a lease TTL passed, so a task
//! whose worker died is picked up soon after its lease expires, and a
//! durable timer that fell due goes on. Linked tasks queued for the
//! workers (`POST /api/v1/tasks` with `needs` and `queue`) are queued by
//! the first worker to see the tasks they need complete.

use crate::engine::{Engine, Observer, Outcome};
use crate::error::Result;
use crate::project::Project;
use baton_core::TaskId;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
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

/// What the slots of one worker share.
struct Shared {
    observer: Arc<dyn Observer>,
    stop: Arc<AtomicBool>,
    until_idle: bool,
    idle_wait: Duration,
    finished: AtomicUsize,
    completed: AtomicUsize,
    /// Tasks the slots run now. The slots share one lease owner (this
    /// process), so the store alone cannot keep two of them from taking one
    /// task: each claims under this lock with these left out.
    running: Mutex<HashSet<TaskId>>,
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
    let groups = Arc::new(baton_sys::process::PhaseGroups::start()?);
    let mut engines = Vec::new();
    for _ in 0..opts.concurrency.max(1) {
        engines.push(
            Engine::open(project.clone(), observer.clone())?
                .with_interrupt(stop.clone())
                .with_phase_groups(groups.clone()),
        );
    }
    let shared = Arc::new(Shared {
        observer,
        stop,
        until_idle: opts.until_idle,
        idle_wait: Duration::from_millis(
            (project.config.lease_ttl_ms()? / 2).clamp(100, 5000) as u64
        ),
        finished: AtomicUsize::new(0),
        completed: AtomicUsize::new(0),
        running: Mutex::new(HashSet::new()),
    });
    let handles: Vec<_> = engines
        .into_iter()
        .map(|eng| {
            let shared = shared.clone();
            std::thread::spawn(move || slot(&eng, &shared))
        })
        .collect();
    for h in handles {
        let _ = h.join();
    }
    Ok(WorkerReport {
        finished: shared.finished.load(Ordering::SeqCst),
        completed: shared.completed.load(Ordering::SeqCst),
    })
}

fn slot(eng: &Engine, sh: &Shared) {
    let mut backoff = Duration::from_millis(100);
    // Tasks that could not start here (their branch is gone, the remote is
    // unreachable from this machine, …): left out of claims for a while, so
    // one of them never blocks the rest of the queue.
    let mut resting: HashMap<TaskId, (Instant, Duration)> = HashMap::new();
    while !sh.stop.load(Ordering::SeqCst) {
        let now = Instant::now();
        let skip: Vec<TaskId> = resting
            .iter()
            .filter(|(_, (until, _))| *until > now)
            .map(|(id, _)| id.clone())
            .collect();
        let claimed = {
            let mut here = sh.running.lock().unwrap_or_else(|p| p.into_inner());
            let mut left_out = skip.clone();
            left_out.extend(here.iter().cloned());
            let claimed = eng.claim(&left_out);
            if let Ok(Some(c)) = &claimed {
                here.insert(c.id.clone());
            }
            claimed
        };
        match claimed {
            Ok(Some(c)) => {
                backoff = Duration::from_millis(100);
                let id = c.id.clone();
                let outcome = eng.run_claimed(c);
                sh.running
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .remove(&id);
                match outcome {
                    Ok(outcome) => {
                        resting.remove(&id);
                        match outcome {
                            Outcome::Interrupted(_) => sh
                                .observer
                                .info(&format!("task {id} released for another worker")),
                            // Released until its timer is due (or its answer
                            // comes): not finished.
                            Outcome::Waiting(_) | Outcome::Queued => {}
                            Outcome::Complete => {
                                sh.completed.fetch_add(1, Ordering::SeqCst);
                                sh.finished.fetch_add(1, Ordering::SeqCst);
                                // Tasks linked to it may be due now.
                                queue_linked(eng, sh);
                            }
                            _ => {
                                sh.finished.fetch_add(1, Ordering::SeqCst);
                            }
                        }
                    }
                    Err(e) => {
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
                        sh.observer.info(&text);
                        resting.insert(id, (Instant::now() + pause, pause));
                    }
                }
            }
            Ok(None) => {
                backoff = Duration::from_millis(100);
                if queue_linked(eng, sh) {
                    continue;
                }
                if sh.until_idle && !eng.queue_pending(&skip).unwrap_or(true) {
                    if !skip.is_empty() {
                        let ids: Vec<&str> = skip.iter().map(|t| t.as_str()).collect();
                        sh.observer.info(&format!(
                            "warning: left queued, since they could not run here: {}",
                            ids.join(", ")
                        ));
                    }
                    return;
                }
                if let Err(e) = eng.store.wait_for_work(sh.idle_wait) {
                    sh.observer.info(&format!("warning: waiting for work: {e}"));
                    std::thread::sleep(sh.idle_wait);
                }
            }
            Err(e) => {
                // The store may be restarting: say so, wait a little longer
                // each time, and go on.
                sh.observer.info(&format!("warning: {}", e.message));
                std::thread::sleep(backoff);
                backoff = (backoff * 2).min(Duration::from_secs(5));
            }
        }
    }
}

/// Queues the linked tasks for the workers whose tasks are all complete
/// (the next claim takes them): whether it queued any.
fn queue_linked(eng: &Engine, sh: &Shared) -> bool {
    match eng.links().queue_due() {
        Ok(ids) => {
            for id in &ids {
                sh.observer.info(&format!(
                    "task {id} queued: the tasks it needs are complete"
                ));
            }
            !ids.is_empty()
        }
        Err(e) => {
            sh.observer
                .info(&format!("warning: linked tasks: {}", e.message));
            false
        }
    }
}
