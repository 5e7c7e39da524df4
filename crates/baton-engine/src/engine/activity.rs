//! What a running task is doing now, for the board's cards: the last
//! thing its running phase said or did, which agent runs it, and the
//! tokens it has used. A command phase, or an agent run through
//! `command = [...]`, says it in the last line it printed; a built-in
//! agent CLI prints JSON, and what it said and did is journaled as it
//! goes (`agent_activity`), so the journal's tail says it. The text is
//! the task's own, untrusted: whoever shows it escapes it.

use super::Engine;
use super::output::LastLine;
use crate::error::Result;
use baton_core::Event;
use baton_core::state::PhaseStatus;
use baton_store::TaskSnapshot;

/// At most this many of the journal's last records are read to find
/// what the agent did last (it is journaled in batches of many events).
const JOURNAL_TAIL: u64 = 16;

/// What a task is doing now.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Activity {
    /// The phase in progress, if one is.
    pub phase: Option<String>,
    /// The agent its latest agent run is on.
    pub agent: Option<String>,
    /// What the running phase said or did last.
    pub line: Option<String>,
    /// Input and output tokens over all its agent runs.
    pub tokens: u64,
}

impl Engine {
    /// What `snap`'s task is doing now (its line only while a phase runs).
    pub fn activity(&self, snap: &TaskSnapshot) -> Result<Activity> {
        let state = &snap.state;
        let usage = state.usage();
        let mut out = Activity {
            agent: state
                .phases
                .iter()
                .flat_map(|p| p.agent_runs.iter())
                .max_by_key(|r| r.started_at)
                .map(|r| r.session.agent.clone()),
            tokens: usage.input_tokens + usage.output_tokens,
            ..Activity::default()
        };
        let Some((idx, running)) = state
            .phases
            .iter()
            .enumerate()
            .find(|(_, p)| p.status == PhaseStatus::InProgress)
        else {
            return Ok(out);
        };
        out.phase = Some(running.id.to_string());
        let wf = self.pinned(&state.definition_hash)?;
        out.line = if self.streamed(state, &wf, running.id.as_str()) {
            let label =
                super::attempt_label(idx, running.id.as_str(), running.iteration, running.attempt);
            let logs = self.project.task_dir(&state.task_id).join("logs");
            let mut last = LastLine::new(
                &logs.join(format!("{label}.out")),
                &logs.join(format!("{label}.err")),
            );
            last.poll();
            Some(last.line().to_string()).filter(|l| !l.is_empty())
        } else {
            let from = state.last_seq.saturating_sub(JOURNAL_TAIL);
            let tail = self
                .store
                .events(&state.task_id, from, JOURNAL_TAIL as usize)?;
            tail.iter()
                .rev()
                .find_map(|r| match &r.event {
                    Event::AgentActivity { phase, events, .. } if *phase == running.id => {
                        events.iter().rev().find(|e| e.is_step())
                    }
                    _ => None,
                })
                .map(|e| e.describe().trim().to_string())
        };
        Ok(out)
    }
}
