//! The inbox: items agents raise through the MCP tools (kept in the
//! store), and the tasks waiting in a `wait = { human }` phase (read off
//! the tasks, id `<task>/<phase>`). `Engine::inbox()` gives [`Inbox`], the
//! one way to list, raise and answer them; every raise and answer also
//! renders the item's session log, where it is a callout.

use crate::engine::{Engine, Passed};
use crate::error::{Error, Result};
use baton_core::TaskId;
use baton_core::inbox::{self, Answer, InboxItem, ItemKind};
use baton_core::state::TaskStatus;
use baton_core::workflow::{PhaseKind, WaitSpec};
use baton_store::Answered;
use std::time::{Duration, Instant};

pub struct Inbox<'a> {
    eng: &'a Engine,
}

/// What answering an item did.
pub enum AnswerOutcome {
    /// A stored item: the agent waiting on it gets the answer.
    Item(InboxItem),
    /// A task's human wait: the phase passed; the task is held, to run on.
    Task(InboxItem, Box<Passed>),
}

/// What an agent raises.
#[derive(Debug, Clone)]
pub struct Raise {
    pub kind: ItemKind,
    pub session: Option<String>,
    pub phase: Option<String>,
    pub text: String,
    pub options: Vec<String>,
    pub task_complete: bool,
    pub raised_by: String,
}

impl Engine {
    pub fn inbox(&self) -> Inbox<'_> {
        Inbox { eng: self }
    }
}

impl Inbox<'_> {
    /// Open items (or all), oldest first: the stored ones and the tasks
    /// waiting for a person.
    pub fn items(&self, open_only: bool) -> Result<Vec<InboxItem>> {
        let mut items = self.eng.store.inbox_items(open_only)?;
        items.extend(self.human_waits()?);
        items.sort_by(|a, b| {
            a.created_at
                .cmp(&b.created_at)
                .then_with(|| a.id.cmp(&b.id))
        });
        Ok(items)
    }

    /// How many items are open.
    pub fn open_count(&self) -> Result<usize> {
        Ok(self.items(true)?.len())
    }

    /// Tasks waiting in a `wait = { human }` phase, as items.
    fn human_waits(&self) -> Result<Vec<InboxItem>> {
        let mut out = Vec::new();
        for t in self.eng.store.list()? {
            if t.status != TaskStatus::Waiting {
                continue;
            }
            let Some(snap) = self.eng.store.load(&t.id)? else {
                continue;
            };
            let Some(w) = snap.state.waiting_phase() else {
                continue;
            };
            let Ok(wf) = self.eng.pinned(&snap.state.definition_hash) else {
                continue;
            };
            if let Some(PhaseKind::Wait(WaitSpec::Human { question, options })) =
                wf.phase(w.id.as_str()).map(|p| &p.kind)
            {
                out.push(InboxItem {
                    id: format!("{}/{}", t.id, w.id),
                    key: inbox::key(
                        Some(t.id.as_str()),
                        Some(w.id.as_str()),
                        ItemKind::Decision,
                        question,
                    ),
                    kind: ItemKind::Decision,
                    session: Some(t.id.to_string()),
                    phase: Some(w.id.to_string()),
                    text: question.clone(),
                    options: options.clone(),
                    task_complete: false,
                    raised_by: format!("workflow {}", snap.state.workflow),
                    created_at: w.started_at.unwrap_or(t.updated_at),
                    answer: None,
                });
            }
        }
        Ok(out)
    }

    /// Raises an item (the same question raised again is the same item,
    /// answered or not).
    pub fn raise(&self, r: Raise) -> Result<InboxItem> {
        if r.text.trim().is_empty() {
            return Err(Error::bad_input(
                "an inbox item needs its text (the question, the action or the message)",
            ));
        }
        let prefix = match r.kind {
            ItemKind::Notify => "n",
            ItemKind::Decision => "d",
            ItemKind::Approval => "a",
        };
        let item = InboxItem {
            id: format!("{prefix}-{}", &crate::new_uuid()[..8]),
            key: inbox::key(r.session.as_deref(), r.phase.as_deref(), r.kind, &r.text),
            kind: r.kind,
            session: r.session,
            phase: r.phase,
            text: r.text.trim().to_string(),
            options: r.options,
            task_complete: r.task_complete,
            raised_by: r.raised_by,
            created_at: self.eng.now(),
            answer: None,
        };
        let item = self.eng.redacted(item);
        let stored = self.eng.store.raise_item(&item)?;
        self.render(&stored);
        Ok(stored)
    }

    /// Answers item `id` with `choice` (checked against what it asks).
    pub fn answer(
        &self,
        id: &str,
        choice: &str,
        reason: Option<String>,
        by: &str,
    ) -> Result<AnswerOutcome> {
        if let Some((task, phase)) = id.split_once('/') {
            let item = self
                .human_waits()?
                .into_iter()
                .find(|i| i.id == id)
                .ok_or_else(|| {
                    Error::bad_input(format!("no open inbox item {id}: task {task} is not waiting in {phase} for an answer"))
                        .hint("`baton inbox` lists the open items")
                })?;
            let choice = inbox::check_answer(&item, choice).map_err(not_accepted)?;
            let tid = TaskId::parse(task).map_err(|e| Error::bad_input(e.to_string()))?;
            let (_, passed) = self.eng.answer(&tid, &choice, by)?;
            self.eng.crash_point("inbox-answered", id);
            let mut item = item;
            item.answer = Some(Answer {
                choice,
                reason,
                by: by.into(),
                at: self.eng.now(),
            });
            return Ok(AnswerOutcome::Task(item, Box::new(passed)));
        }
        let Some(item) = self.eng.store.inbox_item(id)? else {
            return Err(Error::bad_input(format!("no inbox item {id}"))
                .hint("`baton inbox` lists the open items"));
        };
        let choice = inbox::check_answer(&item, choice).map_err(not_accepted)?;
        let answer = Answer {
            choice,
            reason,
            by: by.into(),
            at: self.eng.now(),
        };
        match self.eng.store.answer_item(id, &self.eng.redacted(answer))? {
            Answered::Now(item) => {
                self.eng.crash_point("inbox-answered", id);
                self.render(&item);
                Ok(AnswerOutcome::Item(item))
            }
            Answered::Already(item) => Err(not_accepted(format!(
                "item {id} was answered already: {} by {}",
                item.answer.as_ref().map_or("", |a| a.choice.as_str()),
                item.answer.as_ref().map_or("", |a| a.by.as_str())
            ))),
            Answered::NotFound => Err(Error::bad_input(format!("no inbox item {id}"))),
        }
    }

    /// Waits (polling the store) until item `id` is answered or `within`
    /// passes; the item as it then is.
    pub fn wait(&self, id: &str, within: Duration) -> Result<InboxItem> {
        let until = Instant::now() + within;
        loop {
            let item = self
                .eng
                .store
                .inbox_item(id)?
                .ok_or_else(|| Error::bad_input(format!("no inbox item {id}")))?;
            if !item.is_open() || Instant::now() >= until {
                return Ok(item);
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Renders the session log the item belongs to, so its callout shows
    /// at once (the task's runner renders it again at its next change).
    fn render(&self, item: &InboxItem) {
        if let Some(id) = item.session.as_deref().and_then(|s| TaskId::parse(s).ok())
            && let Ok(Some(_)) = self.eng.store.load(&id)
            && let Err(e) = self.eng.render_session(&id)
        {
            tracing::warn!(task = %id, error = %e, "session log not rendered");
        }
    }
}

/// An answer that does not fit (exit 2).
fn not_accepted(why: String) -> Error {
    Error::bad_input(why).hint("`baton inbox` lists the open items and what each accepts")
}
