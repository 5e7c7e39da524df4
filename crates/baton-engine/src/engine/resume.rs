//! `baton resume`: the checks made before anything changes, then a held
//! task continued: a crash recovered, an edited workflow adopted (`--upgrade`),
//! a rewind (`--from`), an agent switch or handoff, and the phase loop.

use super::{Engine, Held, Outcome, ResumeOptions};
use crate::error::{Error, Result};
use crate::workdir::Workdir;
use baton_core::lease::DisplayStatus;
use baton_core::machine::Input;
use baton_core::state::{PhaseStatus, TaskStatus};
use baton_core::workflow::Workflow;
use baton_core::{TaskId, TaskState};
use baton_store::{StoredDefinition, TaskSnapshot};

impl Engine {
    /// `baton resume`: continues a crashed, failed or waiting task.
    pub fn resume(&self, id: &TaskId, opts: ResumeOptions) -> Result<Outcome> {
        let snap = self.load(id)?;
        if self.repair_rendered(&snap)? {
            self.observer.info(&format!(
                "re-rendered the files of task {id} from the store"
            ));
        }
        let pinned = self.pinned(&snap.state.definition_hash)?;
        let upgrade_to = self.check_definition(&snap.state, &pinned, opts.upgrade)?;
        let wf_now = upgrade_to.as_ref().unwrap_or(&pinned);
        if let Some(from) = &opts.from {
            self.check_rewind(&snap, wf_now, from)?;
        } else {
            match self.status_of(&snap) {
                DisplayStatus::Complete if upgrade_to.is_none() => {
                    self.observer.info(&format!("task {id} is already COMPLETE; nothing to resume (use --from PHASE to run phases again)"));
                    return Ok(Outcome::Complete);
                }
                DisplayStatus::Cancelled => {
                    return Err(Error::bad_input(format!("task {id} was cancelled"))
                        .hint(format!("run phases again with `baton resume {id} --from PHASE`, or start a new task from it with `baton fork {id} --from PHASE --id NEW`")));
                }
                DisplayStatus::Running => {
                    let l = snap.lease.as_ref().expect("running has a lease");
                    if l.owner != self.owner && !self.may_take_over(l, opts.takeover_from) {
                        return Err(self.busy(id, l));
                    }
                }
                // An upgrade goes ahead even if the wait is not over: it may
                // remove the phase waited in, or change what comes after.
                // A new agent is journaled even if the wait is not over.
                DisplayStatus::Waiting if upgrade_to.is_none() && opts.agent.is_none() => {
                    if let Some(w) = self.wait_not_due(&snap.state) {
                        return Ok(Outcome::Waiting(w));
                    }
                }
                _ => {}
            }
        }
        let flags = snap.state.flags.clone();
        let mut rerun = snap.state.clone();
        if let Some(from) = &opts.from {
            for p in wf_now.descendants(
                &baton_core::PhaseId::parse(from).map_err(|e| Error::bad_input(e.to_string()))?,
            ) {
                if let Some(ps) = rerun.phase_mut(p.as_str()) {
                    ps.status = PhaseStatus::Pending;
                }
            }
        }
        let agent = opts.agent.as_deref().or(snap.state.agent.as_deref());
        self.check_agents(wf_now, &flags, Some(&rerun), agent)?;
        let mut held = self.take(id, &snap, opts.takeover_from)?;
        if snap.queued {
            // A queued task resumed by hand runs in its worktree too; what
            // earlier runs of this host left running goes first, so nothing
            // writes into the worktree once it is set up.
            self.kill_local_orphans(&snap.state.task_id);
        }
        let own_folder = snap.queued
            || snap
                .state
                .labels
                .contains_key(crate::builtin::INSTANCE_LABEL)
            || self.uses_roles(&snap.state, &held.wf, false);
        if own_folder {
            match self.workspace_for(&snap, &held.wf) {
                Ok(ws) => held.ws = ws,
                Err(e) => {
                    self.release(held);
                    return Err(e);
                }
            }
        }
        // Taken over from a live process of this host between phases (a
        // background run, or a task `serve` passed): nothing crashed.
        let handed = opts.takeover_from.is_some();
        let result = self.resume_held(&mut held, &snap, opts, upgrade_to, handed);
        // A queued task finished by hand leaves no worktree behind, as a
        // worker's does not.
        self.remove_done_worktree(&held, &result);
        self.release_driven(held, result)
    }

    /// Continues a task this process holds (`resume`, or a worker's claim
    /// when `claimed`): a crash recovered, a failed task resumed, then the
    /// upgrade, rewind and agent switch asked for, then the phase loop.
    pub(super) fn resume_held(
        &self,
        held: &mut Held,
        seen: &TaskSnapshot,
        opts: ResumeOptions,
        upgrade_to: Option<Workflow>,
        claimed: bool,
    ) -> Result<Outcome> {
        if let Some(auto) = &opts.auto_restart {
            // Judged again under the lease: two supervisors never both
            // restart it, and never past the limit.
            match baton_core::supervisor::judge(&held.state.auto_restarts, self.now(), &auto.policy)
            {
                baton_core::supervisor::Verdict::Now { n } => self.decide_commit(
                    held,
                    Input::AutoRestart {
                        reason: super::supervise::restart_note(n, auto),
                    },
                )?,
                _ => {
                    return Err(Error::busy(format!(
                        "task {} was restarted by another supervisor just now",
                        held.state.task_id
                    )));
                }
            }
        }
        // A phase whose process exited is judged from what it left, where
        // it left it: not for a queued task, whose worktree is set up
        // again from what was published (its unpublished work is gone,
        // and the phase runs again), nor when asked to rewind or upgrade.
        let account = opts.from.is_none() && upgrade_to.is_none() && !seen.queued;
        let crashed = self.detect_crash(held, seen, claimed, account)?;
        if opts.from.is_none() {
            match held.state.status {
                // A task whose runner stopped before any phase started (e.g.
                // `run --detach`) has nothing to recover.
                TaskStatus::Running
                    if crashed && held.state.phases.iter().any(|p| p.attempt > 0) =>
                {
                    self.decide_commit(held, Input::Resume { crashed: true })?
                }
                TaskStatus::Failed => self.decide_commit(held, Input::Resume { crashed: false })?,
                TaskStatus::Complete if upgrade_to.is_none() => return Ok(Outcome::Complete),
                _ => {}
            }
        }
        if let Some(new) = upgrade_to {
            self.adopt_upgrade(held, new)?;
        }
        if let Some(from) = &opts.from {
            self.rewind(held, from)?;
        }
        if let Some(to) = opts.agent {
            let reason = if opts.handoff {
                "baton handoff --to"
            } else {
                "baton resume --agent"
            };
            self.decide_commit(
                held,
                Input::SwitchAgent {
                    to,
                    reason: reason.into(),
                },
            )?;
        }
        self.drive(held)
    }

    /// `--upgrade`: the held task adopts the edited workflow `new` (stored
    /// first), says what was added and removed, and goes back to the first
    /// phase not done if it was COMPLETE.
    pub(super) fn adopt_upgrade(&self, held: &mut Held, new: Workflow) -> Result<()> {
        let before: Vec<String> = held.state.phases.iter().map(|p| p.id.to_string()).collect();
        // The definition first: the task row refers to it.
        self.store.put_definition(&StoredDefinition {
            hash: new.hash(),
            name: new.name.clone(),
            json: serde_json::to_string(&new).expect("workflow serializes"),
        })?;
        self.decide_commit(
            held,
            Input::Upgrade {
                to: Box::new(new.clone()),
            },
        )?;
        let removed: Vec<String> = before
            .iter()
            .filter(|p| new.phase(p).is_none())
            .cloned()
            .collect();
        let added: Vec<String> = new
            .phases
            .iter()
            .map(|p| p.id.to_string())
            .filter(|p| !before.contains(p))
            .collect();
        held.wf = new;
        self.observer.info(&format!(
            "adopted the edited workflow: added {}; removed {}",
            if added.is_empty() {
                "nothing".to_string()
            } else {
                added.join(", ")
            },
            if removed.is_empty() {
                "nothing".to_string()
            } else {
                removed.join(", ")
            },
        ));
        if held.state.status == TaskStatus::Complete
            && held.state.phases.iter().any(|p| !p.status.is_done())
        {
            self.decide_commit(
                held,
                Input::Rewind {
                    to: held
                        .state
                        .phases
                        .iter()
                        .find(|p| !p.status.is_done())
                        .expect("checked")
                        .id
                        .clone(),
                },
            )?;
        }
        Ok(())
    }

    /// Where a task's phases run: its own worktree if it is queued.
    pub(super) fn workspace_for(&self, snap: &TaskSnapshot, wf: &Workflow) -> Result<Workdir> {
        self.workspace_of(&snap.state, wf, snap.queued)
    }

    /// A queued task's own worktree, an agent instance's turn's worktree
    /// (its instance's), the service's shared workspace (a task with
    /// agents by role), or the project folder.
    pub(super) fn workspace_of(
        &self,
        state: &TaskState,
        wf: &Workflow,
        queued: bool,
    ) -> Result<Workdir> {
        if queued {
            return Workdir::prepare(&self.project, state, self.now().millis());
        }
        if let Some(id) = state.labels.get(crate::builtin::INSTANCE_LABEL) {
            return self.instance_workspace(id);
        }
        if self.uses_roles(state, wf, false) {
            return self.shared_workspace(state);
        }
        Ok(self.project_workspace())
    }

    /// Compares the pinned definition with the file; returns the new one if
    /// `upgrade` is asked and it differs.
    pub(super) fn check_definition(
        &self,
        state: &TaskState,
        pinned: &Workflow,
        upgrade: bool,
    ) -> Result<Option<Workflow>> {
        let path = self
            .project
            .workflows_dir()
            .join(format!("{}.toml", state.workflow));
        if !path.is_file() {
            if upgrade {
                return Err(Error::bad_input(format!(
                    "--upgrade: .baton/workflows/{}.toml no longer exists",
                    state.workflow
                )));
            }
            return Ok(None);
        }
        let current = match self.load_workflow(&state.workflow) {
            Ok(wf) => wf,
            Err(e) if upgrade => return Err(e),
            Err(_) => {
                self.observer.info(&format!(
                    "note: .baton/workflows/{}.toml is now invalid; task {} keeps the definition it started with",
                    state.workflow, state.task_id
                ));
                return Ok(None);
            }
        };
        if current.hash() == pinned.hash() {
            return Ok(None);
        }
        if upgrade {
            return Ok(Some(current));
        }
        self.observer.info(&format!(
            "note: .baton/workflows/{}.toml changed since task {} started; it keeps the definition it started with (pass --upgrade to adopt the edited one)",
            state.workflow, state.task_id
        ));
        Ok(None)
    }
}
