//! Reading tasks and workflows: status as users see it (CRASHED, QUEUED
//! included), the task list, a task's document and rendered files, the
//! pinned and current workflow definitions. Nothing here writes the journal.

use super::Engine;
use crate::error::{Error, Result};
use crate::render;
use baton_core::lease::{self, DisplayStatus, Lease, Liveness};
use baton_core::workflow::Workflow;
use baton_core::{EventRecord, TaskId, TaskState, document};
use baton_store::{TaskSnapshot, TaskSummary};
use baton_sys::host;

impl Engine {
    pub fn liveness(&self, lease: Option<&Lease>) -> Liveness {
        lease::classify(lease, self.now(), &self.local, host::process_start_time)
    }

    /// A task's status as users see it (QUEUED, CRASHED, … included).
    pub fn status_of(&self, snap: &TaskSnapshot) -> DisplayStatus {
        DisplayStatus::of_task(
            snap.state.status,
            &self.liveness(snap.lease.as_ref()),
            snap.queued,
        )
    }

    pub fn list(&self) -> Result<Vec<(TaskSummary, DisplayStatus)>> {
        Ok(self
            .store
            .list()?
            .into_iter()
            .map(|t| {
                let d =
                    DisplayStatus::of_task(t.status, &self.liveness(t.lease.as_ref()), t.queued);
                (t, d)
            })
            .collect())
    }

    /// Task `id`, if the store has it.
    pub fn find(&self, id: &TaskId) -> Result<Option<TaskSnapshot>> {
        Ok(self.store.load(id)?)
    }

    /// Where the store is, for people (a PostgreSQL URL without its
    /// password).
    pub fn store_description(&self) -> String {
        self.store.describe()
    }

    pub fn load(&self, id: &TaskId) -> Result<TaskSnapshot> {
        self.store.load(id)?.ok_or_else(|| {
            Error::bad_input(format!("no task {id}")).hint("run `baton ls --all` to see the tasks")
        })
    }

    /// The definition a task was started with.
    pub fn pinned(&self, hash: &str) -> Result<Workflow> {
        let def = self
            .store
            .definition(hash)?
            .ok_or_else(|| Error::op(format!("the store lacks workflow definition {hash}")))?;
        serde_json::from_str(&def.json)
            .map_err(|e| Error::op(format!("workflow definition {hash} is damaged: {e}")))
    }

    /// The state document of a task (what `show --json` prints).
    pub fn document(&self, snap: &TaskSnapshot) -> Result<serde_json::Value> {
        let wf = self.pinned(&snap.state.definition_hash)?;
        let status = self.status_of(snap);
        let doc = document::render(&snap.state, &wf, status, snap.lease.as_ref());
        let mut v = serde_json::to_value(doc).expect("the state document is JSON");
        // Deliveries that came before their stage, kept for it (none
        // for a task that has ended).
        let now = self.now();
        let ended = matches!(
            snap.state.status,
            baton_core::TaskStatus::Complete | baton_core::TaskStatus::Cancelled
        );
        let kept: Vec<serde_json::Value> = self
            .store
            .buffered_for(&snap.state.task_id)?
            .iter()
            .filter(|b| b.expires_at > now && !ended)
            .map(|b| {
                serde_json::json!({
                    "phase": b.phase,
                    "delivery": b.delivery,
                    "event": baton_core::webhook::Delivery {
                        event: &b.event,
                        payload: &serde_json::from_str(&b.payload).unwrap_or_default(),
                    }
                    .name(),
                    "received_at": b.received_at.rfc3339(),
                    "expires_at": b.expires_at.rfc3339(),
                })
            })
            .collect();
        if !kept.is_empty() {
            v["buffered_events"] = serde_json::Value::Array(kept);
        }
        Ok(v)
    }

    /// Re-renders `state.json` if it is missing or damaged; says so.
    pub fn repair_rendered(&self, snap: &TaskSnapshot) -> Result<bool> {
        let dir = self.project.task_dir(&snap.state.task_id);
        let ok = self.rendered_is_current(snap);
        if !ok {
            render::state_json(&dir, &self.document(snap)?)?;
        }
        let wrote = render::phase_outputs(&dir, &snap.state)?;
        Ok(!ok || wrote > 0)
    }

    /// Whether the task's `state.json` is the store's state: it renders
    /// the latest event, or a live runner holds the task (it renders on
    /// its commits, and the commit of a phase's process, which the
    /// document does not show, is not rendered; another process writing
    /// it too would race it).
    pub fn rendered_is_current(&self, snap: &TaskSnapshot) -> bool {
        if self.liveness(snap.lease.as_ref()) == Liveness::Live {
            return true;
        }
        let path = self
            .project
            .task_dir(&snap.state.task_id)
            .join("state.json");
        std::fs::read(&path)
            .ok()
            .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
            .is_some_and(|v| {
                v.get("last_seq").and_then(|s| s.as_u64()) == Some(snap.state.last_seq)
            })
    }

    pub fn events(&self, id: &TaskId, after: u64, limit: usize) -> Result<Vec<EventRecord>> {
        Ok(self.store.events(id, after, limit)?)
    }

    /// The workflows in `.baton/workflows/`, by name.
    pub fn workflow_names(&self) -> Vec<String> {
        let mut known: Vec<String> = std::fs::read_dir(self.project.workflows_dir())
            .map(|d| {
                d.filter_map(|e| e.ok())
                    .filter_map(|e| {
                        e.file_name()
                            .to_str()?
                            .strip_suffix(".toml")
                            .map(str::to_string)
                    })
                    .collect()
            })
            .unwrap_or_default();
        known.sort();
        known
    }

    /// Loads `.baton/workflows/NAME.toml`.
    pub fn load_workflow(&self, name: &str) -> Result<Workflow> {
        let valid = !name.is_empty()
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        let path = self.project.workflows_dir().join(format!("{name}.toml"));
        let builtin = crate::builtin::workflow(name);
        if let Some(text) = builtin
            && !path.is_file()
        {
            return Workflow::parse(
                text,
                &format!("baton's built-in {name} workflow"),
                name,
                &|p| Err(format!("no file {p}")),
            )
            .map_err(|e| Error::op(e.to_string()));
        }
        if !valid || !path.is_file() {
            let known = self.workflow_names();
            return Err(
                Error::bad_input(format!("no workflow {name:?} in .baton/workflows/")).hint(
                    if known.is_empty() {
                        "create .baton/workflows/NAME.toml (see `baton init`)".to_string()
                    } else {
                        format!("the workflows here are: {}", known.join(", "))
                    },
                ),
            );
        }
        let src = fs_err::read_to_string(&path)?;
        let baton = self.project.baton_dir();
        let rel = format!(".baton/workflows/{name}.toml");
        Workflow::parse(&src, &rel, name, &|p| {
            std::fs::read_to_string(baton.join(p)).map_err(|e| e.to_string())
        })
        .map_err(|e| {
            Error::bad_input(e.to_string()).hint(format!("fix {rel} and run the command again"))
        })
    }

    /// The description of a wait that is not over yet, if so.
    pub(super) fn wait_not_due(&self, state: &TaskState) -> Option<String> {
        let p = state.waiting_phase()?;
        let w = p.waiting.as_ref()?;
        match w.due_at {
            Some(due) if due <= self.now() => None,
            Some(due) => Some(format!(
                "phase {} waits for {}, due at {due}",
                p.id, w.description
            )),
            None => Some(format!("phase {} waits for {}", p.id, w.description)),
        }
    }
}
