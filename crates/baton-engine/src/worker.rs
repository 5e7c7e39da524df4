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
use crate::metrics::{Metered, Metrics};
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
    /// Claim one task, drive it until it completes, fails or waits, and
    /// return (at once when there is none): one task per process, as a
    /// Kubernetes Job runs it.
    pub once: bool,
    /// Once draining: how long the running phases may go on before they
    /// are interrupted and their tasks released.
    pub drain_timeout: Duration,
    /// Where it counts what it does (`/metrics`).
    pub metrics: Arc<Metrics>,
}

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct WorkerReport {
    /// Tasks this worker drove to an end (complete, failed, waiting, cancelled).
    pub finished: usize,
    pub completed: usize,
    /// With `once`: how the task it ran ended (`None`: there was none to
    /// claim).
    pub outcome: Option<Outcome>,
}

/// How a worker is told to stop.
#[derive(Debug, Clone, Default)]
pub struct Stop {
    /// Stop claiming; the running phases go on (for up to the drain
    /// timeout) and their tasks are released before their next phase.
    pub drain: Arc<AtomicBool>,
    /// Interrupt the running phases now, journaled, and release their
    /// tasks.
    pub now: Arc<AtomicBool>,
}

impl Stop {
    fn any(&self) -> bool {
        self.drain.load(Ordering::SeqCst) || self.now.load(Ordering::SeqCst)
    }
}

/// What the slots of one worker share.
struct Shared {
    observer: Arc<dyn Observer>,
    stop: Stop,
    until_idle: bool,
    once: bool,
    outcome: Mutex<Option<Outcome>>,
    metrics: Arc<Metrics>,
    idle_wait: Duration,
    finished: AtomicUsize,
    completed: AtomicUsize,
    /// Tasks the slots run now. The slots share one lease owner (this
    /// process), so the store alone cannot keep two of them from taking one
    /// task: each claims under this lock with these left out.
    running: Mutex<HashSet<TaskId>>,
}

/// Runs the worker until `stop` says so (or, with `until_idle`, the queue
/// is empty; with `once`, its one task stopped). `stop.now`: the phases
/// running are interrupted and journaled, and their tasks released for
/// another worker. `stop.drain`: no more claims, the running phases go on
/// for up to `drain_timeout` (then as `stop.now`), and their tasks are
/// released before their next phase.
pub fn run(
    project: &Project,
    opts: &WorkerOptions,
    observer: Arc<dyn Observer>,
    stop: Stop,
) -> Result<WorkerReport> {
    let groups = Arc::new(baton_sys::process::PhaseGroups::start()?);
    let observer: Arc<dyn Observer> = Arc::new(Metered::new(observer, opts.metrics.clone()));
    let mut engines = Vec::new();
    let slots = if opts.once {
        1
    } else {
        opts.concurrency.max(1)
    };
    for _ in 0..slots {
        engines.push(
            Engine::open(project.clone(), observer.clone())?
                .with_interrupt(stop.now.clone())
                .with_drain(stop.drain.clone())
                .with_phase_groups(groups.clone()),
        );
    }
    let shared = Arc::new(Shared {
        observer,
        stop: stop.clone(),
        until_idle: opts.until_idle,
        once: opts.once,
        outcome: Mutex::new(None),
        metrics: opts.metrics.clone(),
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
    let done = Arc::new(AtomicBool::new(false));
    let timer = {
        let (stop, done, observer) = (stop.clone(), done.clone(), shared.observer.clone());
        let limit = opts.drain_timeout;
        std::thread::spawn(move || drain_timer(&stop, &done, limit, &*observer))
    };
    for h in handles {
        let _ = h.join();
    }
    done.store(true, Ordering::SeqCst);
    let _ = timer.join();
    Ok(WorkerReport {
        finished: shared.finished.load(Ordering::SeqCst),
        completed: shared.completed.load(Ordering::SeqCst),
        outcome: shared
            .outcome
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take(),
    })
}

/// Once the worker drains, interrupts what still runs after `limit`.
fn drain_timer(stop: &Stop, done: &AtomicBool, limit: Duration, observer: &dyn Observer) {
    let mut since: Option<Instant> = None;
    while !done.load(Ordering::SeqCst) && !stop.now.load(Ordering::SeqCst) {
        if since.is_none() && stop.drain.load(Ordering::SeqCst) {
            observer.info(&format!(
                "worker draining: no more claims; the running phases have {}s to finish",
                limit.as_secs()
            ));
            since = Some(Instant::now());
        }
        if since.is_some_and(|t| t.elapsed() >= limit) {
            observer.info("worker drain timeout: interrupting the phases still running");
            stop.now.store(true, Ordering::SeqCst);
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn slot(eng: &Engine, sh: &Shared) {
    let mut backoff = Duration::from_millis(100);
    // Tasks that could not start here (their branch is gone, the remote is
    // unreachable from this machine, …): left out of claims for a while, so
    // one of them never blocks the rest of the queue.
    let mut resting: HashMap<TaskId, (Instant, Duration)> = HashMap::new();
    while !sh.stop.any() {
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
            let began = Instant::now();
            let claimed = eng.claim(&left_out);
            if let Ok(found) = &claimed {
                sh.metrics.claimed(began.elapsed(), found.is_some());
            }
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
                if sh.once {
                    match &outcome {
                        Ok(o) => {
                            *sh.outcome.lock().unwrap_or_else(|p| p.into_inner()) = Some(o.clone())
                        }
                        Err(e) => {
                            *sh.outcome.lock().unwrap_or_else(|p| p.into_inner()) =
                                Some(Outcome::Failed(e.message.clone()))
                        }
                    }
                }
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
                if sh.once {
                    return;
                }
            }
            Ok(None) => {
                backoff = Duration::from_millis(100);
                if queue_linked(eng, sh) {
                    continue;
                }
                if sh.once {
                    return;
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
