//! Keeping a held task's session log current. The journal it renders
//! from is read from the store once, when the first commit after taking
//! the task lands, then grows with each commit; the log is written (in
//! the background, atomically, as `state.json` is) when a commit moves a
//! phase or the task, and otherwise at most every two seconds.

use super::SessionIndex;
use crate::render::Background;
use baton_core::session_log;
use baton_core::session_log::journal::{ChildSession, SubagentMode};
use baton_core::workflow::{PhaseKind, WaitSpec, Workflow};
use baton_core::{Event, EventRecord, TaskState};
use baton_store::Store;
use std::path::Path;
use std::time::{Duration, Instant};

/// How often a streaming agent's log is written at most.
const EVERY: Duration = Duration::from_secs(2);

#[derive(Debug, Default)]
pub(crate) struct LogWriter {
    /// The task's journal; `None` until first needed.
    records: Option<Vec<EventRecord>>,
    written: Option<Instant>,
    /// Something was committed that the file does not show yet.
    dirty: bool,
    /// The task's row as last put in the index.
    indexed: Option<session_log::index::IndexRow>,
    /// How its CLIs' subagents show (`[sessions] subagents`).
    mode: SubagentMode,
    /// The model each configured agent asks for (`[agents.NAME] model`).
    models: Vec<(String, String)>,
}

impl LogWriter {
    pub(crate) fn new(mode: SubagentMode, models: Vec<(String, String)>) -> LogWriter {
        LogWriter {
            mode,
            models,
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
        self.dirty = true;
        let moves = new.iter().any(|r| moves_the_log(&r.event));
        if moves || self.written.is_none_or(|t| t.elapsed() >= EVERY) {
            self.write(store, state, wf, dir, out)?;
        }
        Ok(())
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
        let log = session_log::journal::of_task(state, records, Some(wf), &items, self.mode);
        let mut log =
            session_log::journal::with_children(log, &children_of(store, state), self.mode);
        log.front.model = model_of(&log, &self.models);
        let path = dir.join(format!("{}.md", state.task_id));
        out.file(path, session_log::render(&log).into_bytes())?;
        let index = dir.parent().map(SessionIndex::of);
        // The subagents' own logs, which the callouts link to or embed.
        if self.mode != SubagentMode::Inline && !log.front.subagents.is_empty() {
            for child in session_log::journal::subagent_logs(state, records) {
                let path = dir.join(format!("{}.md", child.front.session_id));
                out.file(path, session_log::render(&child).into_bytes())?;
                if let Some(i) = &index {
                    let _ = i.upsert(session_log::index::row_of(&child, 0));
                }
            }
        }
        let open = items
            .iter()
            .filter(|i| i.is_open() && i.session.as_deref() == Some(state.task_id.as_str()))
            .count()
            + usize::from(waits_on_a_person(state, wf));
        let row = session_log::index::row_of(&log, open as u64);
        if self.indexed.as_ref() != Some(&row) {
            if let Some(i) = index
                && let Err(e) = i.upsert(row.clone())
            {
                tracing::warn!(task = %state.task_id, error = %e, "session index not updated");
            }
            self.indexed = Some(row);
        }
        self.written = Some(Instant::now());
        self.dirty = false;
        Ok(())
    }
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
pub(crate) fn children_of(store: &dyn Store, state: &TaskState) -> Vec<ChildSession> {
    let Some(me) = state.labels.get(crate::instances::INSTANCE_LABEL) else {
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
            out.push(ChildSession {
                session: t.to_string(),
                agent: "review".into(),
                title: format!("review {n} of {}", parent.id),
            });
        }
    }
    out
}

/// The task waits in a `wait = { human }` phase (an inbox item).
fn waits_on_a_person(state: &TaskState, wf: &Workflow) -> bool {
    state.waiting_phase().is_some_and(|w| {
        matches!(
            wf.phase(w.id.as_str()).map(|p| &p.kind),
            Some(PhaseKind::Wait(WaitSpec::Human { .. }))
        )
    })
}

/// Events a reader should see at once: everything but an agent's
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
