//! Handing recorded deliveries to the tasks, off the request path: one
//! thread takes them in order (so two deliveries never pass one task at
//! once in this process), those waiting together as one batch settled in
//! one commit; every task a delivery passed
//! runs on in a thread of its own, under its lease, like `baton resume`.
//! At start, the deliveries a crash left unsettled are handed over first.

use crate::runner::Runs;
use baton_engine::Engine;
use baton_store::NewDelivery;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// The most deliveries handed over, and settled in one commit, together.
const BATCH: usize = 64;

pub struct Dispatch {
    tx: Mutex<Option<mpsc::Sender<NewDelivery>>>,
    dispatcher: Mutex<Option<JoinHandle<()>>>,
}

impl Dispatch {
    pub fn start(eng: Arc<Engine>, branch_pattern: String, runs: Arc<Runs>) -> Dispatch {
        let (tx, rx) = mpsc::channel::<NewDelivery>();
        let dispatcher = std::thread::Builder::new()
            .name("baton-handoff".into())
            .spawn(move || {
                match eng.unsettled_deliveries() {
                    Ok(left) => {
                        for batch in left.chunks(BATCH) {
                            hand_over(&eng, batch, &branch_pattern, &runs);
                        }
                    }
                    Err(e) => eng.observer().info(&format!(
                        "warning: cannot read the deliveries left unsettled: {e}"
                    )),
                }
                while let Ok(first) = rx.recv() {
                    let mut batch = vec![first];
                    while batch.len() < BATCH {
                        match rx.try_recv() {
                            Ok(d) => batch.push(d),
                            Err(_) => break,
                        }
                    }
                    hand_over(&eng, &batch, &branch_pattern, &runs);
                }
            })
            .expect("a thread starts");
        Dispatch {
            tx: Mutex::new(Some(tx)),
            dispatcher: Mutex::new(Some(dispatcher)),
        }
    }

    /// Queues a recorded delivery.
    pub fn send(&self, d: NewDelivery) {
        if let Some(tx) = &*self.tx.lock().unwrap_or_else(|p| p.into_inner()) {
            let _ = tx.send(d);
        }
    }

    /// Hands over what is queued (the runs it started are stopped with
    /// the others, `Runs::finish`).
    pub fn finish(&self) {
        drop(self.tx.lock().unwrap_or_else(|p| p.into_inner()).take());
        if let Some(d) = self
            .dispatcher
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
        {
            let _ = d.join();
        }
    }
}

fn hand_over(eng: &Arc<Engine>, batch: &[NewDelivery], branch_pattern: &str, runs: &Runs) {
    // Settled together, in one commit, before the passed tasks run on.
    let handed = match eng.hand_over_batch(batch, branch_pattern) {
        Ok(h) => h,
        Err(e) => {
            eng.observer().info(&format!(
                "warning: deliveries not settled (handed over again at the next start): {e}"
            ));
            return;
        }
    };
    let mut passed = Vec::new();
    for (d, h) in batch.iter().zip(handed) {
        match h {
            Ok(h) => {
                eng.observer().info(&format!(
                    "delivery {} ({}): {}: {}",
                    d.id, h.name, h.settlement.decision, h.settlement.why
                ));
                passed.extend(h.passed);
            }
            // Left unsettled: handed over again at the next start.
            Err(e) => eng
                .observer()
                .info(&format!("warning: delivery {} not handed over: {e}", d.id)),
        }
    }
    for p in passed {
        let id = eng.let_go(p);
        match eng.detach_child(&id) {
            Ok(child) => {
                eng.observer().info(&format!(
                    "task {id} runs on in process {} (.baton/tasks/{id}/detached.log)",
                    child.id()
                ));
                runs.adopt(child);
            }
            // Its lease expires, and the supervisor restarts it.
            Err(e) => eng.observer().info(&format!(
                "warning: task {id} could not run on: {}",
                e.message
            )),
        }
    }
}
