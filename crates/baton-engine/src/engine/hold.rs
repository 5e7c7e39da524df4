//! Holding a task's lease: taking it into a `Held` (journaling who took
//! it), the heartbeat thread that renews it and watches for cancel
//! requests, the check before a queued task's work is published, and
//! letting it go.

use super::{Engine, Held};
use crate::error::{Error, Result};
use crate::render;
use crate::workdir::Workdir;
use baton_core::lease::{Lease, LeaseOwner};
use baton_core::workflow::Workflow;
use baton_core::{Clock, Event, TaskId, TaskState};
use baton_store::{RenewOutcome, Store};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

impl Engine {
    /// Starts the heartbeat of a lease just taken, makes the task current
    /// and journals who took it.
    pub(super) fn hold(
        &self,
        state: TaskState,
        wf: Workflow,
        lease: Lease,
        ws: Workdir,
    ) -> Result<Held> {
        self.hold_as(state, wf, lease, ws, &self.command)
    }

    /// [`Engine::hold`], journaling `command` as what claimed the task.
    pub(super) fn hold_as(
        &self,
        state: TaskState,
        wf: Workflow,
        lease: Lease,
        ws: Workdir,
        command: &str,
    ) -> Result<Held> {
        let id = state.task_id.clone();
        let hb = Heartbeat::start(
            self.store.clone(),
            id.clone(),
            self.owner.clone(),
            self.clock.clone(),
            self.ttl_ms,
            self.observer.clone(),
        );
        let mut held = Held {
            state,
            wf,
            lease,
            hb,
            ws,
            just_snapshotted: false,
            rendered: Default::default(),
            log: crate::render::LogWriter::new(
                self.subagent_mode(),
                self.project.config.agent_models(),
            ),
        };
        self.set_current(&id);
        // What a runner killed mid-write left of this task's files goes
        // now (its writes start over from the store).
        for f in render::stale_temporaries(&self.project.task_dir(&id), "")
            .into_iter()
            .chain(render::stale_temporaries(
                &self.project.sessions_dir(),
                &format!("{id}."),
            ))
        {
            let _ = std::fs::remove_file(f);
        }
        self.commit(
            &mut held,
            vec![Event::Claimed {
                owner: self.owner.describe(),
                command: command.to_string(),
            }],
        )?;
        Ok(held)
    }

    pub(super) fn new_lease(&self) -> Lease {
        let now = self.now();
        Lease {
            owner: self.owner.clone(),
            acquired_at: now,
            expires_at: now.plus_millis(self.ttl_ms),
        }
    }

    fn set_current(&self, id: &TaskId) {
        let _ = render::atomic_write(&self.project.current_file(), format!("{id}\n").as_bytes());
    }

    /// Before a queued task's phase is published: this process must still
    /// hold the lease (a runner that was paused past its lease must not
    /// publish over its successor).
    pub(super) fn still_holding(&self, held: &Held) -> Result<()> {
        let lost = held.hb.lost.load(Ordering::SeqCst)
            || matches!(
                self.store.renew(
                    &held.state.task_id,
                    &self.owner,
                    self.now().plus_millis(self.ttl_ms)
                )?,
                RenewOutcome::Lost
            );
        if lost {
            return Err(Error::busy(format!(
                "lost the lease of task {} to another process; its work was not published",
                held.state.task_id
            )));
        }
        Ok(())
    }

    pub(super) fn release(&self, mut held: Held) {
        let id = held.state.task_id.clone();
        // A queued task let go with phases left is QUEUED for the next
        // worker: its log says so, not the runner's `active`.
        if held.state.status == baton_core::state::TaskStatus::Running
            && self
                .store
                .load(&id)
                .ok()
                .flatten()
                .is_some_and(|s| s.queued)
        {
            held.log.show_as(baton_core::session_log::LogStatus::Queued);
        }
        let _ = held.log.flush(
            self.store.as_ref(),
            &held.state,
            &held.wf,
            &self.project.sessions_dir(),
            &mut held.rendered,
        );
        let _ = held.rendered.finish();
        drop(held.hb);
        let _ = self.store.release(&id, &self.owner);
        // Render once more without our lease in the document.
        if let Ok(Some(snap)) = self.store.load(&id)
            && let Ok(doc) = self.document(&snap)
        {
            let _ = render::state_json(&self.project.task_dir(&id), &doc);
        }
    }
}

/// Renews a lease in the background and watches for cancel requests.
pub(super) struct Heartbeat {
    stop: Arc<AtomicBool>,
    /// Set once a cancel of the task was asked.
    pub(super) cancel: Arc<AtomicBool>,
    /// Set once another process took the lease.
    pub(super) lost: Arc<AtomicBool>,
    handle: Option<std::thread::JoinHandle<()>>,
}

impl Heartbeat {
    fn start(
        store: Arc<dyn Store>,
        id: TaskId,
        owner: LeaseOwner,
        clock: Arc<dyn Clock>,
        ttl_ms: i64,
        observer: Arc<dyn super::Observer>,
    ) -> Heartbeat {
        let stop = Arc::new(AtomicBool::new(false));
        let cancel = Arc::new(AtomicBool::new(false));
        let lost = Arc::new(AtomicBool::new(false));
        let (s, c, l) = (stop.clone(), cancel.clone(), lost.clone());
        let tick = Duration::from_millis((ttl_ms / 3).clamp(100, 1000) as u64);
        let handle = std::thread::spawn(move || {
            let mut last = std::time::Instant::now();
            let mut renewed = last;
            let mut failures = 0u32;
            while !s.load(Ordering::SeqCst) {
                // Until the next renewal; the drop unparks it at once.
                std::thread::park_timeout(tick.saturating_sub(last.elapsed()));
                if s.load(Ordering::SeqCst) {
                    break;
                }
                if last.elapsed() < tick {
                    continue;
                }
                last = std::time::Instant::now();
                match store.renew(&id, &owner, clock.now().plus_millis(ttl_ms)) {
                    Ok(RenewOutcome::Renewed { cancel_requested }) => {
                        if failures > 0 {
                            tracing::debug!(
                                task = %id,
                                failures,
                                "heartbeat renewed the lease again"
                            );
                        }
                        failures = 0;
                        renewed = last;
                        if cancel_requested && !c.load(Ordering::SeqCst) {
                            tracing::debug!(task = %id, "heartbeat saw a cancel request");
                        }
                        if cancel_requested {
                            c.store(true, Ordering::SeqCst);
                        }
                    }
                    Ok(RenewOutcome::Lost) => {
                        tracing::debug!(
                            task = %id,
                            ours = %owner.describe(),
                            "heartbeat: the lease was taken by another process"
                        );
                        l.store(true, Ordering::SeqCst);
                        break;
                    }
                    Err(e) => {
                        failures += 1;
                        observer.lease_renewal_failed(&id);
                        tracing::debug!(
                            task = %id,
                            failures,
                            since_renewed_ms = renewed.elapsed().as_millis() as u64,
                            ttl_ms,
                            error = %e,
                            "heartbeat renew failed"
                        );
                        tracing::warn!("heartbeat of {id} failed: {e}");
                    }
                }
            }
        });
        Heartbeat {
            stop,
            cancel,
            lost,
            handle: Some(handle),
        }
    }
}

impl Drop for Heartbeat {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(h) = self.handle.take() {
            h.thread().unpark();
            let _ = h.join();
        }
    }
}
