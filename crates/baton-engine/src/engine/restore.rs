//! Where a worktree is restored: going back to a phase's start checkpoint,
//! by a rewind (`baton resume --from`) or a fork into a new task (`baton
//! fork`), checked before anything changes and journaled before the files
//! move (what was there is saved under `refs/baton-saved/`, when the
//! restore would lose it otherwise).

use super::{Engine, Held, Outcome};
use crate::error::{Error, Result};
use crate::workdir::Workdir;
use baton_core::machine::{self, Input};
use baton_core::state::{Checkpoint, TaskStatus};
use baton_core::workflow::Workflow;
use baton_core::{Event, TaskId, TaskState};
use baton_store::TaskSnapshot;

impl Engine {
    /// Refuses a rewind of task `snap` to phase `from` of `wf_now` before
    /// the lease is taken and anything changes: no such phase, a phase it
    /// needs has not passed, or its checkpoint cannot be restored onto the
    /// work tree as it stands.
    pub(super) fn check_rewind(
        &self,
        snap: &TaskSnapshot,
        wf_now: &Workflow,
        from: &str,
    ) -> Result<()> {
        let id = &snap.state.task_id;
        let Some(def) = wf_now.phase(from) else {
            let ids: Vec<&str> = wf_now.phases.iter().map(|p| p.id.as_str()).collect();
            return Err(Error::bad_input(format!("task {id} has no phase {from:?}"))
                .hint(format!("its phases are: {}", ids.join(", "))));
        };
        // Every refusal comes before the lease is taken and anything
        // (journal or files) changes.
        if let Some(n) = unmet_need(&snap.state, def) {
            return Err(Error::bad_input(format!(
                "cannot rewind to {from}: it needs {n}, which has not passed yet"
            ))
            .hint("nothing was changed"));
        }
        let cp = snap.state.phase(from).and_then(|p| p.checkpoint.clone());
        // A queued task's worktree and the workspaces of agents by role
        // are baton's own: nothing of the user's is in them, and what they
        // hold is saved before a restore.
        if !snap.queued && !self.uses_roles(&snap.state, wf_now, false) {
            self.check_restorable(cp.as_ref(), &def.id, id)?;
        }
        Ok(())
    }

    /// Rewinds a held task to the start of phase `from`: the rewind checked,
    /// the work tree restored to that phase's checkpoint, then journaled.
    pub(super) fn rewind(&self, held: &mut Held, from: &str) -> Result<()> {
        let to = baton_core::PhaseId::parse(from).map_err(|e| Error::bad_input(e.to_string()))?;
        // Check the rewind before touching any file.
        machine::decide(
            &held.state,
            &held.wf,
            Input::Rewind { to: to.clone() },
            self.now(),
        )?;
        let cp = held
            .state
            .phase(to.as_str())
            .and_then(|p| p.checkpoint.clone());
        self.restore_worktree(held, cp, &to)?;
        self.decide_commit(held, Input::Rewind { to: to.clone() })?;
        Ok(())
    }

    /// Refuses early, before anything changes, when a checkpoint cannot be
    /// restored onto the work tree as it stands, or when another task's
    /// phase is running in that work tree (`task` is the one restoring).
    pub(super) fn check_restorable(
        &self,
        cp: Option<&Checkpoint>,
        to: &baton_core::PhaseId,
        task: &TaskId,
    ) -> Result<()> {
        let (Some(git), Some(cp)) = (&self.git, cp) else {
            return Ok(());
        };
        if let Some(why) = git.restore_blocker(cp) {
            return Err(Error::bad_input(format!(
                "cannot restore the work tree to the start of {to}: {why}"
            ))
            .hint("nothing was changed"));
        }
        for (t, _) in self.list()? {
            if &t.id == task {
                continue;
            }
            if let Some(l) = &t.lease
                && l.owner != self.owner
                && self.liveness(Some(l)).is_live()
            {
                return Err(Error::busy(format!(
                    "task {} is running in this work tree ({}); restoring files now would change them under it",
                    t.id,
                    l.owner.describe()
                ))
                .hint(format!("wait for it, or stop it with `baton cancel {}`; nothing was changed", t.id)));
            }
        }
        Ok(())
    }

    /// Puts the work tree back to checkpoint `cp` (of phase `to`), first
    /// journaling on `held` where the current work tree is being saved, so
    /// a crash in between still says where the files went.
    pub(super) fn restore_worktree(
        &self,
        held: &mut Held,
        cp: Option<Checkpoint>,
        to: &baton_core::PhaseId,
    ) -> Result<()> {
        let Some(git) = held.ws.git.clone() else {
            return Ok(());
        };
        let Some(mut cp) = cp else {
            self.observer.info(&format!(
                "note: no checkpoint was recorded for {to} (it never started), so the work tree was left as it is"
            ));
            return Ok(());
        };
        // baton's own worktree works on the task's branch: a checkpoint
        // taken in an agent's own workspace (on `baton/<id>-<agent>`, at
        // the commit of the task's branch then) goes back onto it.
        if let Some(b) = &held.ws.branch {
            cp.branch = Some(b.name.clone());
        }
        if held.ws.branch.is_none() {
            self.check_restorable(Some(&cp), to, &held.state.task_id)?;
        }
        let short = |h: Option<&str>| {
            h.map(|h| h[..h.len().min(12)].to_string())
                .unwrap_or_else(|| "no commit".into())
        };
        // Saved work lives outside refs/baton/<task>/, so `rm` and `doctor`
        // never delete it; the name is unique per restore.
        let safety = format!(
            "refs/baton-saved/{}/{}-{}",
            held.state.task_id,
            self.now().millis(),
            std::process::id()
        );
        // Saved first (and kept only when the restore would lose something
        // without it), then said in the journal, then restored: a crash
        // at any point leaves the files where the journal says.
        let saved = git.save_if_replaced(&cp, &safety).map_err(|e| {
            Error::op(format!(
                "cannot restore the work tree to the start of {to}: {e}"
            ))
            .hint("nothing was changed")
        })?;
        let kept = match &saved {
            Some(_) => format!("what is there now is saved at {safety}"),
            None => "nothing there needs saving (it holds the checkpoint's files, or what the branch keeps)".into(),
        };
        self.decide_commit(
            held,
            Input::Note {
                phase: Some(to.clone()),
                text: format!(
                    "restoring the work tree to the start of {to} (snapshot {}); {kept}",
                    short(cp.snapshot.as_deref())
                ),
            },
        )?;
        match git.lay_down(&cp) {
            Ok(()) => {
                self.decide_commit(
                    held,
                    Input::Note {
                        phase: Some(to.clone()),
                        text: format!("restored the work tree to the start of {to}"),
                    },
                )?;
                self.observer.info(&match &saved {
                    Some(saved) => format!(
                        "restored the work tree to the start of {to} (HEAD {}); what was there is saved at {safety} ({})",
                        short(cp.head.as_deref()),
                        short(Some(saved)),
                    ),
                    None => format!(
                        "restored the work tree to the start of {to} (HEAD {}); nothing there needed saving",
                        short(cp.head.as_deref()),
                    ),
                });
                Ok(())
            }
            Err(e) => Err(Error::op(format!(
                "cannot restore the work tree to the start of {to}: {e}"
            ))
            .hint(match &saved {
                Some(_) => format!("what was there is saved at {safety} (`git show --stat {safety}`)"),
                None => "the branch and the index were put back; the work tree held nothing that needed saving".into(),
            })),
        }
    }

    /// `baton fork`: a new task from a checkpoint of another.
    pub fn fork(&self, src: &TaskId, from: &str, new_id: &str) -> Result<(TaskId, Outcome)> {
        let snap = self.load(src)?;
        let wf = self.pinned(&snap.state.definition_hash)?;
        let to = wf.phase(from).map(|p| p.id.clone()).ok_or_else(|| {
            let ids: Vec<&str> = wf.phases.iter().map(|p| p.id.as_str()).collect();
            Error::bad_input(format!("task {src} has no phase {from:?}"))
                .hint(format!("its phases are: {}", ids.join(", ")))
        })?;
        let new_id = TaskId::parse(new_id).map_err(|e| Error::bad_input(e.to_string()))?;
        let def = wf.phase(from).expect("checked");
        if let Some(n) = unmet_need(&snap.state, def) {
            return Err(Error::bad_input(format!(
                "cannot fork {src} at {from}: it needs {n}, which has not passed"
            ))
            .hint("fork at an earlier phase, or resume the task until it passes"));
        }
        let reset = wf.descendants(&to);
        let inherited: Vec<_> = snap
            .state
            .phases
            .iter()
            .filter(|p| !reset.contains(&p.id))
            .cloned()
            .map(|mut p| {
                p.process = None;
                p
            })
            .collect();
        let mut labels = snap.state.labels.clone();
        labels.insert("task-id".into(), new_id.to_string());
        labels.insert("forked-from".into(), src.to_string());
        let created = Event::TaskCreated {
            workflow: wf.name.clone(),
            definition_hash: wf.hash(),
            description: snap.state.description.clone(),
            project_name: snap.state.project_name.clone(),
            flags: snap.state.flags.clone(),
            labels,
            tech_stack: snap.state.tech_stack.clone(),
            phases: wf.phases.iter().map(|p| p.id.clone()).collect(),
        };
        let adopted = Event::Adopted {
            source: format!("fork of {src} at {from}"),
            phases: inherited,
            iteration_counts: snap
                .state
                .iteration_counts
                .iter()
                .filter(|(k, _)| !reset.iter().any(|r| r.as_str() == k.as_str()))
                .map(|(k, v)| (k.clone(), *v))
                .collect(),
            status: TaskStatus::Running,
            blockers: Vec::new(),
            failure: None,
        };
        let cp = snap
            .state
            .phase(to.as_str())
            .and_then(|p| p.checkpoint.clone());
        // A task that ran queued worked on its own branch, in a worktree:
        // its fork is queued too, on a branch of its own made where the
        // checkpoint stood (every phase's work is committed there), for a
        // worker, or `baton resume NEW` here.
        if snap.queued {
            Workdir::fetch_published(&self.project, src)?;
            let start = cp.as_ref().and_then(|c| c.head.clone()).ok_or_else(|| {
                Error::bad_input(format!(
                    "task {src} recorded no checkpoint at {from}: there is nothing to fork from"
                ))
                .hint("fork at a phase that has started")
            })?;
            if self
                .git
                .as_ref()
                .and_then(|g| g.resolve(&format!("{start}^{{commit}}")))
                .is_none()
            {
                return Err(Error::op(format!(
                    "the checkpoint of {src} at {from} (commit {start}) is not in this repository"
                ))
                .hint("fetch it from where the task ran (its refs refs/baton/<id>/*), then fork again"));
            }
            self.enqueue(&new_id, &wf, vec![created, adopted], Some(&start))?;
            return Ok((new_id, Outcome::Queued));
        }
        if !self.uses_roles(&snap.state, &wf, false) {
            self.check_restorable(cp.as_ref(), &to, &new_id)?;
        }
        if self.store.load(&new_id)?.is_some() {
            return Err(Error::bad_input(format!("a task {new_id} already exists"))
                .hint("pick another --id"));
        }
        let mut held = self.create(&new_id, wf, vec![created, adopted])?;
        if let Err(e) = self.restore_worktree(&mut held, cp, &to) {
            // Nothing ran: a fork that cannot start from its checkpoint is
            // not left behind to run on the wrong files.
            self.release(held);
            let _ = self.store.delete_task(&new_id);
            let _ = fs_err::remove_dir_all(self.project.task_dir(&new_id));
            return Err(e);
        }
        let outcome = self.drive(&mut held);
        Ok((new_id, self.release_driven(held, outcome)?))
    }
}

/// The first phase `def` needs that has not passed (or been skipped).
pub(super) fn unmet_need<'a>(
    state: &TaskState,
    def: &'a baton_core::workflow::Phase,
) -> Option<&'a baton_core::PhaseId> {
    def.needs
        .iter()
        .find(|n| !state.phase(n.as_str()).is_some_and(|p| p.status.is_done()))
}
