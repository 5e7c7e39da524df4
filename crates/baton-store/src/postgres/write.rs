//! The writes shared by several operations: the arrays the write statements
//! take, inserting a task, rewriting its projection, and locking its row.

use super::conn::{Attempt, Db, Session};
use super::sql::{INSERT_TASK, LOCK_TASK, TASK_IDENTITY, WRITE_NEW, WRITE_PROJECTION};
use crate::codec::{header_json, json, read_lease};
use crate::{PhaseWrites, last_phase};
use baton_core::lease::Lease;
use baton_core::state::TaskStatus;
use baton_core::{EventRecord, TaskId, TaskState};

/// The arrays the write statements take, from events and phase rows.
pub(super) struct WriteParams<'a> {
    pub(super) seq: Vec<i64>,
    pub(super) ts: Vec<i64>,
    pub(super) kind: Vec<&'static str>,
    pub(super) phase: Vec<Option<&'a str>>,
    pub(super) attempt: Vec<Option<i64>>,
    pub(super) payload: Vec<String>,
    pub(super) idx: Vec<i32>,
    pub(super) phase_id: Vec<&'a str>,
    pub(super) phase_status: Vec<&'static str>,
    pub(super) phase_data: Vec<String>,
    /// Phase rows from this index on are deleted.
    pub(super) keep_below: i32,
}

impl<'a> WriteParams<'a> {
    pub(super) fn new(
        state: &'a TaskState,
        writes: &PhaseWrites,
        events: &'a [EventRecord],
    ) -> Self {
        let mut indices: Vec<usize> = match writes {
            PhaseWrites::Changed(ix) => ix.clone(),
            PhaseWrites::All => (0..state.phases.len()).collect(),
        };
        // One row may not be upserted twice in one statement.
        indices.sort_unstable();
        indices.dedup();
        let phases = indices.iter().map(|&i| (i, &state.phases[i]));
        WriteParams {
            seq: events.iter().map(|r| r.seq as i64).collect(),
            ts: events.iter().map(|r| r.ts.millis()).collect(),
            kind: events.iter().map(|r| r.event.kind()).collect(),
            phase: events
                .iter()
                .map(|r| r.event.phase().map(|p| p.as_str()))
                .collect(),
            attempt: events
                .iter()
                .map(|r| r.event.attempt().map(i64::from))
                .collect(),
            payload: events.iter().map(|r| json(&r.event)).collect(),
            idx: phases.clone().map(|(i, _)| to_i32(i)).collect(),
            phase_id: phases.clone().map(|(_, p)| p.id.as_str()).collect(),
            phase_status: phases.clone().map(|(_, p)| p.status.as_str()).collect(),
            phase_data: phases.map(|(_, p)| json(p)).collect(),
            keep_below: match writes {
                PhaseWrites::Changed(_) => i32::MAX,
                PhaseWrites::All => to_i32(state.phases.len()),
            },
        }
    }
}

fn to_i32(i: usize) -> i32 {
    i32::try_from(i).expect("fewer than 2^31 phases")
}

/// Writes the phases and the task row of an existing task.
pub(super) fn write_projection<S: Session>(db: &mut Db<'_, S>, state: &TaskState) -> Attempt<u64> {
    let w = WriteParams::new(state, &PhaseWrites::All, &[]);
    let id = state.task_id.as_str();
    Ok(db.execute(
        WRITE_PROJECTION,
        &[
            &id,
            &w.seq,
            &w.ts,
            &w.kind,
            &w.phase,
            &w.attempt,
            &w.payload,
            &w.idx,
            &w.phase_id,
            &w.phase_status,
            &w.phase_data,
            &w.keep_below,
            &state.status.as_str(),
            &last_phase(state),
            &state.updated_at.millis(),
            &(state.last_seq as i64),
            &state.definition_hash,
            &header_json(state),
        ],
    )?)
}

/// Inserts a new task (row, events, phases); `Ok(false)` if the id exists.
pub(super) fn insert_task<S: Session>(
    db: &mut Db<'_, S>,
    state: &TaskState,
    events: &[EventRecord],
    lease: Option<&Lease>,
    queued: bool,
    cancel_requested: bool,
) -> Attempt<bool> {
    let inserted = db.execute(
        INSERT_TASK,
        &[
            &state.task_id.as_str(),
            &state.workflow,
            &state.description,
            &state.status.as_str(),
            &last_phase(state),
            &state.created_at.millis(),
            &state.updated_at.millis(),
            &(state.last_seq as i64),
            &state.definition_hash,
            &lease.map(json),
            &lease.map(|l| l.expires_at.millis()),
            &header_json(state),
            &queued,
            &cancel_requested,
        ],
    )?;
    if inserted == 0 {
        return Ok(false);
    }
    let w = WriteParams::new(state, &PhaseWrites::All, events);
    let notify = queued && state.status == TaskStatus::Running;
    db.execute(
        WRITE_NEW,
        &[
            &state.task_id.as_str(),
            &w.seq,
            &w.ts,
            &w.kind,
            &w.phase,
            &w.attempt,
            &w.payload,
            &w.idx,
            &w.phase_id,
            &w.phase_status,
            &w.phase_data,
            &w.keep_below,
            &notify,
        ],
    )?;
    Ok(true)
}

/// Whether the task is there with this journal length and creation time:
/// after a lost connection, that the lost attempt created it.
pub(super) fn same_task<S: Session>(db: &mut Db<'_, S>, state: &TaskState) -> Attempt<bool> {
    Ok(db
        .query_opt(TASK_IDENTITY, &[&state.task_id.as_str()])?
        .is_some_and(|r| {
            r.get::<_, i64>(0) as u64 == state.last_seq
                && r.get::<_, i64>(1) == state.created_at.millis()
        }))
}

/// The locked task row: lease, cancel flag, queued.
pub(super) struct Locked {
    pub(super) lease: Option<Lease>,
    pub(super) cancel_requested: bool,
    pub(super) queued: bool,
}

pub(super) fn lock_task<S: Session>(db: &mut Db<'_, S>, id: &TaskId) -> Attempt<Option<Locked>> {
    let Some(r) = db.query_opt(LOCK_TASK, &[&id.as_str()])? else {
        return Ok(None);
    };
    Ok(Some(Locked {
        lease: read_lease(r.get(0))?,
        cancel_requested: r.get(1),
        queued: r.get(2),
    }))
}
