//! Keeping a held task's session log current. The journal it renders
//! from is read from the store once, when the first commit after taking
//! the task lands, then grows with each commit; the log (and its row of
//! the index) is written in the background, atomically but without
//! waiting for the disk (it is derived: the journal is what is durable):
//! at once when the task stops (it waits, fails, completes, is let go)
//! and when its first phase starts after the task was taken (so a log
//! exists, on disk before that phase's process runs, from then on),
//! within a quarter second of a phase starting or ending, and at most
//! every two seconds while an agent streams. What a commit left due is
//! written by [`LogWriter::tick`] while a phase's process runs, so the log
//! never lags behind a phase that runs long.

use super::SessionIndex;
use crate::render::{self, Background};
use baton_core::session_log;
use baton_core::session_log::journal::{ChildSession, SubagentMode};
use baton_core::workflow::{PhaseKind, WaitSpec, Workflow};
use baton_core::{Event, EventRecord, TaskState};
use baton_store::Store;
use std::path::Path;
use std::time::{Duration, Instant};

/// How often a streaming agent's log is written at most.
const EVERY: Duration = Duration::from_secs(2);
/// How often phase transitions are written at most.
const TRANSITIONS: Duration = Duration::from_millis(250);

#[derive(Debug, Default)]
pub(crate) struct LogWriter {
    /// The task's journal; `None` until first needed.
    records: Option<Vec<EventRecord>>,
    written: Option<Instant>,
    /// Something was committed that the file does not show yet.
    dirty: bool,
    /// How soon after the last write the file should show it.
    due: Duration,
    /// This runner has written the log (since taking the task).
    wrote: bool,
    /// The task's row as last put in the index.
    indexed: Option<session_log::index::IndexRow>,
    /// How its CLIs' subagents show (`[sessions] subagents`).
    mode: SubagentMode,
    /// The model each configured agent asks for (`[agents.NAME] model`).
    models: Vec<(String, String)>,
    /// The status the log says instead of the runner's own view: a queued
    /// task let go between phases is QUEUED, not active, once released.
    shown: Option<session_log::LogStatus>,
}

impl LogWriter {
    pub(crate) fn new(mode: SubagentMode, models: Vec<(String, String)>) -> LogWriter {
        LogWriter {
            mode,
            models,
            // Counted from taking the task: a short run is written once, at
            // its end (or when it is let go).
            written: Some(Instant::now()),
            ..LogWriter::default()
        }
    }

    /// Records `new` (just committed) and writes the log when it is due.
    /// `journal` reads the whole journal the first time.
    pub(crate) fn committed(
        &mut self,
        new: &[EventRecord],
        store: &dyn Store,
        state: &TaskState,
        wf: &Workflow,
        dir: &Path,
        out: &mut Background,
    ) -> std::io::Result<()> {
        match &mut self.records {
            Some(r) => r.extend(new.iter().cloned()),
            None => match store.events(&state.task_id, 0, usize::MAX) {
                Ok(all) => self.records = Some(all),
                Err(_) => return Ok(()),
            },
        }
        let was_dirty = std::mem::replace(&mut self.dirty, true);
        // A phase that starts or ends shows within a quarter second (many
        // short phases in a row are written together; the task's end, a
        // wait and letting the task go are written at once); an agent's
        // stream at most every two seconds.
        let at_once = new.iter().any(|r| stops_here(&r.event))
            || (!self.wrote
                && new
                    .iter()
                    .any(|r| matches!(r.event, Event::PhaseStarted { .. })));
        let every = if new.iter().any(|r| moves_the_log(&r.event)) {
            TRANSITIONS
        } else {
            EVERY
        };
        self.due = if was_dirty {
            self.due.min(every)
        } else {
            every
        };
        if at_once || self.written.is_none_or(|t| t.elapsed() >= self.due) {
            self.write(store, state, wf, dir, out)?;
        }
        Ok(())
    }

    /// Writes what is due and not written yet (called while a phase's
    /// process runs, when no commit may come for a long time).
    pub(crate) fn tick(
        &mut self,
        store: &dyn Store,
        state: &TaskState,
        wf: &Workflow,
        dir: &Path,
        out: &mut Background,
    ) -> std::io::Result<()> {
        if self.dirty && self.written.is_none_or(|t| t.elapsed() >= self.due) {
            self.write(store, state, wf, dir, out)?;
        }
        Ok(())
    }

    /// The log says `status` from now on (the next write is due at once).
    pub(crate) fn show_as(&mut self, status: session_log::LogStatus) {
        self.shown = Some(status);
        self.dirty = true;
    }

    /// Writes what the file does not show yet (before the task is let go).
    pub(crate) fn flush(
        &mut self,
        store: &dyn Store,
        state: &TaskState,
        wf: &Workflow,
        dir: &Path,
        out: &mut Background,
    ) -> std::io::Result<()> {
        if self.dirty {
            self.write(store, state, wf, dir, out)?;
        }
        Ok(())
    }

    fn write(
        &mut self,
        store: &dyn Store,
        state: &TaskState,
        wf: &Workflow,
        dir: &Path,
        out: &mut Background,
    ) -> std::io::Result<()> {
        let Some(records) = &self.records else {
            return Ok(());
        };
        // The items its agents raised are callouts in it too.
        let items = store.inbox_items(false).unwrap_or_default();
        let comments = comments_of(store, state).unwrap_or_default();
        let log =
            session_log::journal::of_task(state, records, Some(wf), &items, &comments, self.mode);
        let mut log = session_log::journal::with_children(
            log,
            &children_of(store, state, self.mode),
            self.mode,
        );
        log.front.model = model_of(&log, &self.models);
        if let Some(status) = self.shown {
            log.front.status = status;
        }
        let open = items
            .iter()
            .filter(|i| i.is_open() && i.session.as_deref() == Some(state.task_id.as_str()))
            .count()
            + usize::from(waits_on_a_person(state, wf));
        let row = session_log::index::row_of(&log, open as u64);
        let new_row = (self.indexed.as_ref() != Some(&row)).then(|| row.clone());
        self.indexed = Some(row);
        // The subagents' own logs, which the callouts link to or embed, and
        // their tokens (see `subagents_counted`).
        let mut children = subagents_counted(&mut log, state, records);
        if self.mode == SubagentMode::Inline {
            children.clear();
        }
        let path = dir.join(format!("{}.md", state.task_id));
        let index = dir.parent().map(SessionIndex::of);
        let task = state.task_id.clone();
        // Rendered and written off the phase loop: derived files, so
        // without waiting for the disk (the journal is what is durable).
        out.job(path.clone(), move || {
            render::derived_write(&path, session_log::render(&log).as_bytes())?;
            let mut rows: Vec<_> = new_row.into_iter().collect();
            for child in children {
                let p = path.with_file_name(format!("{}.md", child.front.session_id));
                render::derived_write(&p, session_log::render(&child).as_bytes())?;
                rows.push(session_log::index::row_of(&child, 0));
            }
            if let Some(i) = index
                && !rows.is_empty()
                && let Err(e) = i.upsert_all(rows)
            {
                tracing::warn!(task = %task, error = %e, "session index not updated");
            }
            Ok(())
        })?;
        self.written = Some(Instant::now());
        self.dirty = false;
        self.wrote = true;
        Ok(())
    }
}

/// The own logs of `log`'s subagents, with their tokens, also put in
/// `log`'s frontmatter: what their CLI reported for them (Codex), else
/// (Claude Code reports usage for the whole session only) what their
/// sections hold, counted by the tokenizer.
pub(crate) fn subagents_counted(
    log: &mut session_log::SessionLog,
    state: &TaskState,
    records: &[EventRecord],
) -> Vec<session_log::SessionLog> {
    if log.front.subagents.is_empty() {
        return Vec::new();
    }
    let mut children = session_log::journal::subagent_logs(state, records);
    for child in &mut children {
        if child.front.tokens_used == 0 {
            let text: String = child
                .sections
                .iter()
                .map(session_log::render_section)
                .collect();
            child.front.tokens_used = super::tokens::count(&text);
        }
        if let Some(s) = log
            .front
            .subagents
            .iter_mut()
            .find(|s| s.session == child.front.session_id)
        {
            s.tokens = child.front.tokens_used;
        }
    }
    children
}

/// The model the log's last agent asks for, as configured.
pub(crate) fn model_of(
    log: &session_log::SessionLog,
    models: &[(String, String)],
) -> Option<String> {
    let agent = log.sections.iter().rev().find_map(|s| s.agent.as_deref())?;
    models
        .iter()
        .find(|(a, _)| a == agent)
        .map(|(_, m)| m.clone())
}

/// baton's child sessions of a task that is a coding agent's turn: the
/// turns of the reviews asked for while it ran (their own tasks, so their
/// own logs).
pub(crate) fn children_of(
    store: &dyn Store,
    state: &TaskState,
    mode: SubagentMode,
) -> Vec<ChildSession> {
    let Some(me) = state.labels.get(crate::builtin::INSTANCE_LABEL) else {
        return Vec::new();
    };
    let Ok(all) = store.instances() else {
        return Vec::new();
    };
    let Some(parent) = all.by_id.values().find(|i| i.id.as_str() == me) else {
        return Vec::new();
    };
    // This turn's time: from its start until the instance's next turn.
    let mine = parent.turns.iter().position(|t| t == &state.task_id);
    let next_turn_start = mine
        .and_then(|i| parent.turns.get(i + 1))
        .and_then(|t| store.load(t).ok().flatten())
        .map(|s| s.state.created_at);
    let mut out = Vec::new();
    for r in all.reviews_of(&parent.id) {
        let in_turn = r.started_at >= state.created_at
            && next_turn_start.is_none_or(|next| r.started_at < next);
        if !in_turn {
            continue;
        }
        let n = r.review().map_or(0, |x| x.iteration);
        for t in &r.turns {
            let usage = store.load(t).ok().flatten().map(|s| s.state.usage());
            out.push(ChildSession {
                session: t.to_string(),
                agent: "review".into(),
                title: format!("review {n} of {}", parent.id),
                tokens: usage.map_or(0, |u| u.input_tokens + u.output_tokens),
                blocks: child_blocks(store, t, mode),
            });
        }
    }
    out
}

/// What child session `task`'s log says, for `inline` mode (nothing in
/// the others): its sections' blocks, from its journal.
pub(crate) fn child_blocks(
    store: &dyn Store,
    task: &baton_core::TaskId,
    mode: SubagentMode,
) -> Vec<session_log::Block> {
    if mode != SubagentMode::Inline {
        return Vec::new();
    }
    let (Ok(Some(snap)), Ok(records)) = (store.load(task), store.events(task, 0, usize::MAX))
    else {
        return Vec::new();
    };
    session_log::journal::of_task(&snap.state, &records, None, &[], &[], mode)
        .sections
        .into_iter()
        .flat_map(|s| s.blocks)
        .collect()
}

/// The task waits in a `wait = { human }` phase (an inbox item).
/// A person's comments that belong in the task's log: those on the task's
/// own diff, and, for an agent instance's turn, those on the instance's
/// diff that this turn brought to the agent.
pub(crate) fn comments_of(
    store: &dyn Store,
    state: &TaskState,
) -> baton_store::Result<Vec<baton_core::comment::Comment>> {
    use baton_core::comment::{instance_target, task_target};
    let mut all = store.comments(&task_target(state.task_id.as_str()))?;
    if let Some(instance) = state.labels.get(crate::builtin::INSTANCE_LABEL) {
        let mine = store
            .comments(&instance_target(instance))?
            .into_iter()
            .filter(|c| {
                c.delivered
                    .as_ref()
                    .is_some_and(|d| d.to == state.task_id.as_str())
            });
        all.extend(mine);
    }
    Ok(all)
}

fn waits_on_a_person(state: &TaskState, wf: &Workflow) -> bool {
    state.waiting_phase().is_some_and(|w| {
        matches!(
            wf.phase(w.id.as_str()).map(|p| &p.kind),
            Some(PhaseKind::Wait(WaitSpec::Human { .. }))
        )
    })
}

/// Events after which the task stops for a while: written at once.
fn stops_here(e: &Event) -> bool {
    matches!(
        e,
        Event::PhaseWaiting { .. }
            | Event::PhaseFailed { .. }
            | Event::PhaseInterrupted { .. }
            | Event::TaskCompleted
            | Event::TaskFailed { .. }
            | Event::TaskCancelled { .. }
            | Event::RestartsExhausted { .. }
    )
}

/// Events a reader should see soon: everything but an agent's
/// streaming and the bookkeeping.
fn moves_the_log(e: &Event) -> bool {
    !matches!(
        e,
        Event::AgentActivity { .. }
            | Event::AgentSession { .. }
            | Event::PhaseProcess { .. }
            | Event::Claimed { .. }
            | Event::Note { .. }
    )
}
