//! Workspaces by agent role, for the engine: which workspace a task and
//! each of its phases work in, the record the store keeps of each (which
//! task worked there last, in which phase), the refusal to share one with
//! a task another live process runs, and `baton workspace ls|rm`. A
//! workspace is never deleted with a task; `rm` refuses one holding work
//! that is not committed, or commits on no other branch or remote, unless
//! forced. The folders and git side are `crate::role_workspaces`'.

use super::{Engine, Held};
use crate::error::{Error, Result};
use crate::role_workspaces as roles;
use crate::workdir::Workdir;
use baton_core::PhaseId;
use baton_core::lease::Liveness;
use baton_core::workflow::Workflow;
use baton_core::workspace::{self as names, SHARED_ROLE, WorkspaceRecord};
use baton_core::{TaskId, TaskState};
use baton_sys::git::Held as Kept;

/// One workspace as `baton workspace ls` shows it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct WorkspaceView {
    #[serde(flatten)]
    pub record: WorkspaceRecord,
    /// Whether its folder is still there.
    pub exists: bool,
    /// What removing it would lose (`nothing would be lost` when nothing).
    pub holds: String,
    /// Whether `rm` takes it without `--force`.
    pub removable: bool,
}

impl Engine {
    /// Whether task `state` of `wf` works in workspaces by role: run in the
    /// foreground (a queued task has its own worktree, an instance's turn
    /// its instance's), with agents that have a role.
    pub(super) fn uses_roles(&self, state: &TaskState, wf: &Workflow, queued: bool) -> bool {
        !queued
            && !state.labels.contains_key(crate::builtin::INSTANCE_LABEL)
            && roles::uses_roles(&self.project.config, state, wf)
    }

    /// The service's shared workspace, checked out for task `state`.
    pub(super) fn shared_workspace(&self, state: &TaskState) -> Result<Workdir> {
        let git = roles::repository(&self.project)?;
        let service = roles::service(&self.project, &git);
        let name = names::shared(&service);
        let path = roles::base(&self.project).join(&name);
        self.claim_workspace(WorkspaceRecord {
            name: name.clone(),
            path: path.display().to_string(),
            service,
            role: SHARED_ROLE.into(),
            agent: None,
            branch: crate::workdir::branch_name(&state.task_id),
            task_id: state.task_id.to_string(),
            phase: state.current_phase().map(|p| p.id.to_string()),
            created_at: self.now(),
            updated_at: self.now(),
        })?;
        let ws = roles::shared(&git, &path, state, self.now().millis())?;
        self.observer.info(&format!(
            "task {} works in workspace {name} ({}) on branch {}",
            state.task_id,
            path.display(),
            crate::workdir::branch_name(&state.task_id)
        ));
        Ok(ws)
    }

    /// The workspace of its own that phase `phase` of `held` runs in, when
    /// its agent has a role other than implementation: checked out at the
    /// commit of the workspace the task works in.
    pub(super) fn own_workspace(&self, held: &Held, phase: &PhaseId) -> Result<Option<Workdir>> {
        if !self.uses_roles(&held.state, &held.wf, false) || held.ws.branch.is_none() {
            return Ok(None);
        }
        let Some(def) = held.wf.phase(phase.as_str()) else {
            return Ok(None);
        };
        let git = roles::repository(&self.project)?;
        let service = roles::service(&self.project, &git);
        let Some((place, agent, role)) =
            roles::own_place(&self.project.config, &service, &held.state, def)
        else {
            return Ok(None);
        };
        let seed = held.ws.git.as_ref().and_then(|g| g.head()).ok_or_else(|| {
            Error::op(format!(
                "workspace of task {} has no commit to seed {} from",
                held.state.task_id,
                place.name()
            ))
        })?;
        let path = roles::base(&self.project).join(place.name());
        self.claim_workspace(WorkspaceRecord {
            name: place.name().to_string(),
            path: path.display().to_string(),
            service,
            role,
            agent: Some(agent.clone()),
            branch: names::own_branch(held.state.task_id.as_str(), &agent),
            task_id: held.state.task_id.to_string(),
            phase: Some(phase.to_string()),
            created_at: self.now(),
            updated_at: self.now(),
        })?;
        roles::own(&git, &path, &held.state, &agent, &seed, self.now().millis()).map(Some)
    }

    /// Records that `rec.task_id` works in workspace `rec.name`; refused
    /// while the task that worked there last is held by another live
    /// process (two tasks never change one folder at once).
    fn claim_workspace(&self, rec: WorkspaceRecord) -> Result<()> {
        let last = self
            .store
            .workspaces()?
            .into_iter()
            .find(|w| w.name == rec.name);
        if let Some(last) = last
            && last.task_id != rec.task_id
            && let Ok(id) = TaskId::parse(&last.task_id)
            && let Some(snap) = self.store.load(&id)?
            && let Some(l) = &snap.lease
            && l.owner != self.owner
            && matches!(self.liveness(Some(l)), Liveness::Live)
        {
            return Err(Error::busy(format!(
                "workspace {} is in use by task {id} ({})",
                rec.name,
                l.owner.describe()
            ))
            .hint(format!(
                "wait for it, or stop it with `baton cancel {id}`; then `baton resume {}` goes on from here",
                rec.task_id
            )));
        }
        self.store.put_workspace(&rec)?;
        Ok(())
    }

    /// `baton workspace ls`: every workspace baton made, with what removing
    /// it would lose.
    pub fn workspaces(&self) -> Result<Vec<WorkspaceView>> {
        let git = self.git.clone();
        self.store
            .workspaces()?
            .into_iter()
            .map(|record| {
                let path = std::path::PathBuf::from(&record.path);
                let held = match &git {
                    Some(g) => g
                        .held_by(&path, &record.branch, &self.base_branch(g))
                        .map_err(|e| {
                            Error::op(format!("cannot read workspace {}: {e}", record.name))
                        })?,
                    None => Kept::Nothing,
                };
                Ok(WorkspaceView {
                    exists: path.is_dir(),
                    removable: held == Kept::Nothing,
                    holds: held.reason(),
                    record,
                })
            })
            .collect()
    }

    /// `baton workspace rm NAME [--force]`: removes the workspace's folder,
    /// its branch and its record; refused, with nothing removed, when that
    /// would lose work, unless `force` (what it held is then saved under
    /// `refs/baton-saved/`, as a restore does).
    pub fn remove_workspace(&self, name: &str, force: bool) -> Result<WorkspaceView> {
        let all = self.workspaces()?;
        let Some(view) = all.iter().find(|w| w.record.name == name).cloned() else {
            let names: Vec<&str> = all.iter().map(|w| w.record.name.as_str()).collect();
            return Err(Error::bad_input(format!("no workspace {name:?}")).hint(
                if names.is_empty() {
                    "baton has made no workspace in this project (`baton workspace ls`)".into()
                } else {
                    format!("the workspaces are: {}", names.join(", "))
                },
            ));
        };
        let rec = &view.record;
        if let Ok(id) = TaskId::parse(&rec.task_id)
            && let Some(snap) = self.store.load(&id)?
            && let Some(l) = &snap.lease
            && matches!(self.liveness(Some(l)), Liveness::Live)
        {
            return Err(Error::busy(format!(
                "workspace {name} is in use by task {id} ({})",
                l.owner.describe()
            ))
            .hint(format!(
                "wait for it, or stop it with `baton cancel {id}`; nothing was removed"
            )));
        }
        if !view.removable && !force {
            return Err(Error::bad_input(format!(
                "workspace {name} was not removed: {}",
                view.holds
            ))
            .hint(format!(
                "commit and push that work first, or remove it anyway with `baton workspace rm {name} --force` (what it holds is saved under refs/baton-saved/{name}/)"
            )));
        }
        let path = std::path::PathBuf::from(&rec.path);
        if let Some(git) = &self.git {
            let op = |e: baton_sys::git::GitError| {
                Error::op(format!("cannot remove workspace {name}: {e}"))
            };
            if path.join(".git").exists() {
                if !view.removable
                    && let Some(wg) = crate::repo::open(&path)
                {
                    let saved = format!("refs/baton-saved/{name}/{}", self.now().millis());
                    wg.snapshot(&saved, &format!("baton: what workspace {name} held"))
                        .map_err(op)?;
                    self.observer
                        .info(&format!("what workspace {name} held is saved at {saved}"));
                }
                git.run(
                    &["worktree", "remove", "--force", &path.display().to_string()],
                    &[],
                )
                .map_err(op)?;
            }
            let _ = git.run(&["worktree", "prune"], &[]);
            if git.resolve(&format!("refs/heads/{}", rec.branch)).is_some()
                && git.branch().as_deref() != Some(rec.branch.as_str())
            {
                git.run(&["branch", "-D", &rec.branch], &[]).map_err(op)?;
            }
        } else if path.is_dir() {
            fs_err::remove_dir_all(&path)?;
        }
        self.store.delete_workspace(name)?;
        Ok(view)
    }

    /// The branch work goes into: the project's checked-out branch.
    fn base_branch(&self, git: &baton_sys::git::Git) -> String {
        git.branch().unwrap_or_else(|| "HEAD".into())
    }
}
