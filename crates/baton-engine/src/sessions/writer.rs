//! Keeping a held task's session log current. The journal it renders
//! from is read from the store once, when the first commit after taking
//! the task lands, then grows with each commit; the log is written (in
//! the background, atomically, as `state.json` is) when a commit moves a
//! phase or the task, and otherwise at most every two seconds.

use super::SessionIndex;
use crate::render::Background;
use baton_core::session_log;
use baton_core::session_log::journal::SubagentMode;
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
}

impl LogWriter {
    pub(crate) fn new(mode: SubagentMode) -> LogWriter {
        LogWriter {
            mode,
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
