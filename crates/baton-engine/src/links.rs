//! Linked tasks (`eng.links()`): a task that needs others, started by
//! itself once every one of them is COMPLETE, here or queued for the
//! workers. Until then it is a link in the store (`baton_core::link`), so
//! a restart of `baton serve` loses nothing; `baton serve`'s supervisor
//! starts the links that are due, and `baton worker`s those queued for
//! them. A link whose task can never start is ended, saying why, and a
//! person may cancel one before it starts. Its task's creation is what decides who
//! starts it: the link reserves the id, and a second process's creation
//! finds the task there.

use crate::engine::{Engine, Outcome, RunOptions, parse_pairs};
use crate::error::{Error, Result};
use baton_core::TaskId;
use baton_core::link::{self, Link, Started};
use baton_store::LinkStart;

pub struct Links<'a> {
    eng: &'a Engine,
}

/// A task to start once the tasks it needs are complete.
#[derive(Debug, Clone, Default)]
pub struct NewLink {
    pub workflow: String,
    pub description: String,
    pub id: Option<String>,
    pub flags: Vec<String>,
    pub labels: Vec<String>,
    pub agent: Option<String>,
    pub queue: bool,
    pub needs: Vec<String>,
}

impl Engine {
    pub fn links(&self) -> Links<'_> {
        Links { eng: self }
    }
}

impl Links<'_> {
    /// Keeps a task to start once `n.needs` are complete; what it would be
    /// refused for at its start (its workflow, its flags, its id) is
    /// checked now.
    pub fn add(&self, n: NewLink) -> Result<Link> {
        if n.needs.is_empty() {
            return Err(Error::bad_input("a linked task needs at least one task"));
        }
        for need in &n.needs {
            let id = TaskId::parse(need)
                .map_err(|e| Error::bad_input(format!("needs {need:?}: {e}")))?;
            if self.eng.find(&id)?.is_none() {
                return Err(
                    Error::bad_input(format!("needs {need:?}: there is no task {need}"))
                        .hint("link to tasks that exist (GET /api/v1/tasks lists them)"),
                );
            }
        }
        let wf = self.eng.load_workflow(&n.workflow)?;
        let flags = parse_pairs(&n.flags, "flags", "tests=false")?;
        parse_pairs(&n.labels, "labels", "issue=42")?;
        for k in flags.keys() {
            if !wf.flags.contains_key(k) {
                return Err(Error::bad_input(format!(
                    "workflow {:?} declares no flag {k:?}",
                    wf.name
                ))
                .hint(format!(
                    "its flags are: {}",
                    wf.flags.keys().cloned().collect::<Vec<_>>().join(", ")
                )));
            }
        }
        let taken = |id: &str| -> Result<bool> {
            let tid = TaskId::parse(id).map_err(|e| Error::bad_input(e.to_string()))?;
            Ok(self.eng.find(&tid)?.is_some()
                || self.eng.store.links(false)?.iter().any(|l| l.id == id))
        };
        let id = match &n.id {
            Some(id) if taken(id)? => {
                return Err(
                    Error::bad_input(format!("a task {id} exists (or is linked) already"))
                        .hint("pick another id"),
                );
            }
            Some(id) => id.clone(),
            None => {
                let base = self.eng.new_task_id(&n.description, n.queue)?.to_string();
                let mut id = base.clone();
                let mut k = 2;
                while taken(&id)? {
                    id = format!("{base}-{k}");
                    k += 1;
                }
                id
            }
        };
        let l = Link {
            id,
            workflow: n.workflow,
            description: n.description,
            flags: n.flags,
            labels: n.labels,
            agent: n.agent,
            queue: n.queue,
            needs: n.needs,
            created_at: self.eng.now(),
            started: None,
        };
        if !self.eng.store.add_link(&l)? {
            return Err(Error::bad_input(format!(
                "a task {} is linked already",
                l.id
            )));
        }
        Ok(l)
    }

    /// The links, oldest first (those not started yet when `pending_only`).
    pub fn list(&self, pending_only: bool) -> Result<Vec<Link>> {
        Ok(self.eng.store.links(pending_only)?)
    }

    /// The links whose tasks are all complete, to start now. Those that
    /// can never start (a task they need was cancelled or is gone) are
    /// ended here, saying why ([`link::dead_end`]).
    pub fn due(&self) -> Result<Vec<Link>> {
        let pending = self.list(true)?;
        if pending.is_empty() {
            return Ok(Vec::new());
        }
        let statuses: std::collections::HashMap<String, baton_core::state::TaskStatus> = self
            .eng
            .store
            .list()?
            .into_iter()
            .map(|t| (t.id.to_string(), t.status))
            .collect();
        let status = |id: &str| statuses.get(id).copied();
        let mut due = Vec::new();
        for l in pending {
            if link::due(&l, status) {
                due.push(l);
            } else if let Some(why) = link::dead_end(&l, status) {
                self.end(&l.id, why)?;
            }
        }
        Ok(due)
    }

    /// Cancels link `id` before its task starts: `false` when it has
    /// started (or ended) already.
    pub fn cancel(&self, id: &str, by: &str) -> Result<bool> {
        self.end(id, link::cancelled_by(by))
    }

    /// Ends a link without starting its task; the store's compare and set
    /// decides against a process that starts it at the same moment.
    fn end(&self, id: &str, why: String) -> Result<bool> {
        let started = Started {
            at: self.eng.now(),
            outcome: why,
        };
        Ok(matches!(
            self.eng.store.start_link(id, &started)?,
            LinkStart::Now(_)
        ))
    }

    /// Starts the links that are due and go to the workers (`queue`), as
    /// a worker does when it has nothing to claim: `baton serve` starts
    /// the others, in the project folder. The ids it queued.
    pub fn queue_due(&self) -> Result<Vec<TaskId>> {
        let mut queued = Vec::new();
        for l in self.due()?.into_iter().filter(|l| l.queue) {
            if let Some((id, _)) = self.start(&l)? {
                queued.push(id);
            }
        }
        Ok(queued)
    }

    /// Starts `l`'s task: created (held, for the caller to run in the
    /// background) or queued. `None`: another process started it.
    pub fn start(&self, l: &Link) -> Result<Option<(TaskId, Outcome)>> {
        let created = self.eng.run(RunOptions {
            workflow: l.workflow.clone(),
            description: l.description.clone(),
            id: Some(l.id.clone()),
            flags: l.flags.clone(),
            labels: l.labels.clone(),
            agent: l.agent.clone(),
            create_only: !l.queue,
            queue: l.queue,
            ..Default::default()
        });
        let outcome = match &created {
            Ok((_, Outcome::Queued)) => "QUEUED".to_string(),
            Ok(_) => "RUNNING".to_string(),
            Err(e) => format!("not started: {}", e.message),
        };
        let started = Started {
            at: self.eng.now(),
            outcome,
        };
        let mine = matches!(
            self.eng.store.start_link(&l.id, &started)?,
            LinkStart::Now(_)
        );
        match created {
            Ok(done) => Ok(Some(done)),
            // Another process created it first: it starts it.
            Err(_) if !mine => Ok(None),
            Err(e) => Err(e),
        }
    }
}
