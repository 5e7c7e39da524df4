//! Where a crash is detected: a task whose runner is dead (its pid gone or
//! reused, another boot) or whose lease expired is taken over, what that
//! runner left running on this host is killed, and the attempt it ran is
//! journaled as interrupted so that it runs again.

use super::{Engine, Held};
use crate::error::{Error, Result};
use baton_core::lease::{Lease, Liveness};
use baton_core::machine::Input;
use baton_core::state::TaskStatus;
use baton_core::{Event, TaskId};
use baton_store::{Acquire, TaskSnapshot};
use baton_sys::process;

impl Engine {
    pub(super) fn may_take_over(&self, lease: &Lease, takeover_from: Option<u32>) -> bool {
        takeover_from == Some(lease.owner.pid) && self.local.can_probe_owner(&lease.owner)
    }

    pub(super) fn busy(&self, id: &TaskId, lease: &Lease) -> Error {
        Error::busy(format!(
            "task {id} is being run by {}{} (lease taken at {}, renewed until {})",
            lease.owner.describe(),
            self.elsewhere(&lease.owner),
            lease.acquired_at,
            lease.expires_at
        ))
        .hint(format!(
            "wait for it to finish, or stop it with `baton cancel {id}`"
        ))
    }

    /// Where `owner` runs when its pid means nothing here: ` in another
    /// container of this host (PID namespace …)`; empty otherwise.
    pub(super) fn elsewhere(&self, owner: &baton_core::lease::LeaseOwner) -> String {
        if owner.host == self.local.host
            && owner.boot_id == self.local.boot_id
            && !self.local.can_probe_owner(owner)
        {
            format!(" in another container of this host ({})", owner.pid_ns)
        } else {
            String::new()
        }
    }

    /// Takes the lease of an existing task, replacing a dead owner.
    pub(super) fn take(
        &self,
        id: &TaskId,
        snap: &TaskSnapshot,
        takeover_from: Option<u32>,
    ) -> Result<Held> {
        self.take_with(id, snap, takeover_from, &self.command)
    }

    /// [`Engine::take`] for `command` (what the journal says claimed it).
    pub(super) fn take_as(&self, id: &TaskId, snap: &TaskSnapshot, command: &str) -> Result<Held> {
        self.take_with(id, snap, None, command)
    }

    fn take_with(
        &self,
        id: &TaskId,
        snap: &TaskSnapshot,
        takeover_from: Option<u32>,
        command: &str,
    ) -> Result<Held> {
        let live = self.liveness(snap.lease.as_ref());
        let replace = match (&live, &snap.lease) {
            (Liveness::Live, Some(l)) if self.may_take_over(l, takeover_from) => {
                Some(l.owner.clone())
            }
            (Liveness::Live, Some(l)) if l.owner != self.owner => return Err(self.busy(id, l)),
            (Liveness::Dead(_) | Liveness::Expired, Some(l)) => Some(l.owner.clone()),
            _ => None,
        };
        let lease = self.new_lease();
        match self.store.acquire(id, &lease, replace.as_ref())? {
            Acquire::Acquired => {
                tracing::debug!(
                    task = %id,
                    previous = %replace.as_ref().map_or("nobody".into(), |o| o.describe()),
                    previous_was = ?live,
                    takeover_from,
                    expires_at = %lease.expires_at,
                    "lease taken"
                );
            }
            Acquire::Held(l) => {
                tracing::debug!(
                    task = %id,
                    replacing = %replace.as_ref().map_or("nobody".into(), |o| o.describe()),
                    holder = %l.owner.describe(),
                    "lease takeover lost: another process holds it"
                );
                return Err(self.busy(id, &l));
            }
        }
        // Read again under the lease: another process may have moved it on.
        let fresh = match self.store.load(id) {
            Ok(Some(s)) => s,
            Ok(None) => return Err(Error::bad_input(format!("no task {id}"))),
            Err(e) => {
                let _ = self.store.release(id, &self.owner);
                return Err(e.into());
            }
        };
        let wf = self.pinned(&fresh.state.definition_hash)?;
        let held = self.hold_as(fresh.state, wf, lease, self.project_workspace(), command)?;
        if let Liveness::Dead(why) = live {
            self.observer
                .info(&format!("the previous runner is gone: {why}"));
        }
        Ok(held)
    }

    /// Whether the task crashed: it was RUNNING when its runner stopped
    /// (for a worker's claim, `claimed`: with a phase under way). The
    /// attempt under way is journaled as interrupted, what it left running
    /// on this host killed first (a claim has done that already), so it
    /// runs again from its start; unless its process had exited (its exit
    /// journaled) and `account`: then it stays in progress for the drive
    /// to judge its end.
    pub(super) fn detect_crash(
        &self,
        held: &mut Held,
        seen: &TaskSnapshot,
        claimed: bool,
        account: bool,
    ) -> Result<bool> {
        // A crashed attempt: kill what it left running, then re-run it.
        // A worker's claim finds a crash only when a phase was under way; a
        // task handed back (`resume --queue`) or released between phases
        // is simply continued.
        let crashed = held.state.status == TaskStatus::Running
            && (!claimed || held.state.in_progress().is_some());
        if let Some(p) = held.state.in_progress().cloned() {
            // A pid means nothing on another machine or in another
            // container: only a runner whose pids are ours can have left
            // the process here.
            // (A worker's claim has already killed what this host left.)
            let here = !claimed && self.ran_here(seen);
            if let Some(proc_ref) = &p.process
                && here
                && process::kill_orphan(proc_ref)
            {
                self.observer.info(&format!(
                    "killed the orphaned process group {} of phase {}",
                    proc_ref.pid, p.id
                ));
            }
            // Its runner was on another host or in another container: what
            // it started there cannot be checked or stopped from here.
            if let (Some(proc_ref), false, false, Some(l)) =
                (&p.process, here, claimed, seen.lease.as_ref())
                && p.exited.is_none()
            {
                self.observer.info(&format!(
                    "warning: phase {} ran as pid {} on {}{}; if its process still runs there (its runner died, not its machine or container), stop it there: baton cannot check or stop it from here",
                    p.id,
                    proc_ref.pid,
                    l.owner.host,
                    self.elsewhere(&l.owner)
                ));
            }
            // Its process had exited: the drive judges its end from what
            // it left (`account`: nothing asked to rewind or upgrade it).
            if account && p.exited.is_some() {
                return Ok(crashed);
            }
            let reason = match self.liveness(seen.lease.as_ref()) {
                _ if claimed => "its runner stopped (lease expired or released)".into(),
                Liveness::Dead(why) => why,
                Liveness::Expired => "its runner's lease expired".into(),
                _ => "its runner is gone".into(),
            };
            self.decide_commit(held, Input::Interrupt { reason })?;
        }
        Ok(crashed)
    }

    /// Kills every phase process an earlier run of this task left running
    /// on this host (any attempt, as the journal records them, each with
    /// the host of the runner that started it).
    pub(super) fn kill_local_orphans(&self, id: &TaskId) {
        let mut host: Option<String> = None;
        let mut after = 0;
        loop {
            let Ok(page) = self.store.events(id, after, 1000) else {
                return;
            };
            let Some(last) = page.last() else {
                return;
            };
            after = last.seq;
            for r in &page {
                match &r.event {
                    Event::Claimed { owner, .. } => {
                        host = owner.rsplit_once(" on ").map(|(_, h)| h.to_string());
                    }
                    Event::PhaseProcess { phase, process, .. }
                        if host.as_deref() == Some(self.local.host.as_str())
                            && process::kill_if_leader_lives(process) =>
                    {
                        self.observer.info(&format!(
                            "killed the orphaned process group {} of phase {phase}",
                            process.pid
                        ));
                    }
                    _ => {}
                }
            }
        }
    }

    /// Whether the task's last runner ran where this process can probe its
    /// pids (this host, this boot, this PID namespace): a recorded pid
    /// means nothing on another machine or in another container.
    pub(crate) fn ran_here(&self, snap: &TaskSnapshot) -> bool {
        snap.lease
            .as_ref()
            .is_none_or(|l| self.local.can_probe_owner(&l.owner))
    }
}
