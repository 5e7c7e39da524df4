//! `baton worker`: runs queued tasks until stopped.

use super::Result;
use crate::cli::WorkerArgs;
use crate::printer::Printer;
use baton_core::Exit;
use baton_engine::Project;
use baton_engine::worker::{self, WorkerOptions};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

pub fn run(project: &Project, args: WorkerArgs, printer: &Arc<Printer>) -> Result<Exit> {
    // SIGINT/SIGTERM/SIGHUP: the running phases are interrupted and
    // journaled, and their tasks released for another worker.
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
    ] {
        signal_hook::flag::register(sig, stop.clone())?;
    }
    printer.many_tasks();
    let store = baton_engine::store::Location::of(project)?;
    // Connect once first: a wrong URL fails before the banner.
    drop(store.open()?);
    printer.info(&format!(
        "worker {} on {}: {} slot(s), store {}",
        std::process::id(),
        baton_sys::host::local_host().host,
        args.concurrency,
        store.describe()
    ));
    let report = worker::run(
        project,
        &WorkerOptions {
            concurrency: args.concurrency as usize,
            until_idle: args.until_idle,
        },
        printer.clone(),
        stop,
    )?;
    printer.info(&format!(
        "worker stopped: {} task(s) finished here, {} complete",
        report.finished, report.completed
    ));
    Ok(Exit::Done)
}
