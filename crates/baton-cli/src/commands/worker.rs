//! `baton worker`: runs queued tasks until stopped.

use super::Result;
use crate::cli::WorkerArgs;
use crate::printer::Printer;
use baton_core::Exit;
use baton_engine::Project;
use baton_engine::worker::{self, Stop, WorkerOptions};
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use std::sync::Arc;
use std::sync::atomic::Ordering;

pub fn run(project: &Project, args: WorkerArgs, printer: &Arc<Printer>) -> Result<Exit> {
    // SIGTERM (Kubernetes' eviction, `kill`): drain, then a second one
    // stops at once. SIGINT (Ctrl-C) and SIGHUP: the running phases are
    // interrupted and journaled at once, and their tasks released for
    // another worker.
    let stop = Stop::default();
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP])?;
    {
        let stop = stop.clone();
        std::thread::spawn(move || {
            for sig in signals.forever() {
                if sig == SIGTERM && !stop.drain.swap(true, Ordering::SeqCst) {
                    continue;
                }
                stop.now.store(true, Ordering::SeqCst);
            }
        });
    }
    printer.many_tasks();
    let store = baton_engine::store::Location::of(project)?;
    // Connect once first: a wrong URL fails before the banner.
    drop(store.open()?);
    let metrics = Arc::new(baton_engine::metrics::Metrics::new());
    if let Some(addr) = args.listen {
        let at = baton_server::probe::listen(
            addr,
            baton_server::probe::Probe {
                project: project.clone(),
                metrics: metrics.clone(),
                draining: stop.drain.clone(),
            },
        )
        .map_err(|e| {
            baton_engine::Error::op(format!("cannot listen on {addr}: {e}"))
                .hint("pass another address with --listen, or stop what listens there")
        })?;
        printer.info(&format!(
            "worker endpoints on http://{at}: /healthz, /readyz, /metrics"
        ));
    }
    printer.info(&format!(
        "worker {} on {}: {}, store {}",
        std::process::id(),
        baton_sys::host::local_host().host,
        if args.once {
            "one task".to_string()
        } else {
            format!("{} slot(s)", args.concurrency)
        },
        store.describe()
    ));
    let report = worker::run(
        project,
        &WorkerOptions {
            concurrency: args.concurrency as usize,
            until_idle: args.until_idle,
            once: args.once,
            drain_timeout: args.drain_timeout,
            metrics,
        },
        printer.clone(),
        stop,
    )?;
    if args.once {
        return Ok(match report.outcome {
            None => {
                printer.info("worker: no queued task to claim");
                Exit::Done
            }
            Some(o) => {
                printer.info(&format!("worker: its task ended {}", describe(&o)));
                // A Job's success is its task in a durable state: done,
                // or parked until its event comes (another worker goes
                // on then).
                match o {
                    baton_engine::Outcome::Waiting(_) => Exit::Done,
                    o => o.exit(),
                }
            }
        });
    }
    printer.info(&format!(
        "worker stopped: {} task(s) finished here, {} complete",
        report.finished, report.completed
    ));
    Ok(Exit::Done)
}

fn describe(o: &baton_engine::Outcome) -> String {
    use baton_engine::Outcome as O;
    match o {
        O::Complete => "COMPLETE".into(),
        O::Failed(why) => format!("FAILED: {why}"),
        O::Waiting(on) => format!("WAITING for {on}"),
        O::Cancelled => "CANCELLED".into(),
        O::Interrupted(why) => format!("interrupted: {why}"),
        O::Queued => "QUEUED".into(),
    }
}
