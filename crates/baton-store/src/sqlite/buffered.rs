//! [`BufferStore`] for SQLite: the `buffered_events` table.

use super::SqliteStore;
use crate::Result;
use crate::buffered::{BufferStore, Buffered};
use baton_core::{TaskId, Timestamp};
use rusqlite::params;

const COLUMNS: &str =
    "task_id, phase, delivery_id, event, payload, branch_pattern, received_at, expires_at";

/// A row as a [`Buffered`]; `None` for a task id that is no longer valid.
fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Option<Buffered>> {
    let task: String = r.get(0)?;
    let Ok(task) = TaskId::parse(&task) else {
        return Ok(None);
    };
    Ok(Some(Buffered {
        task,
        phase: r.get(1)?,
        delivery: r.get(2)?,
        event: r.get(3)?,
        payload: r.get(4)?,
        branch_pattern: r.get(5)?,
        received_at: Timestamp(r.get(6)?),
        expires_at: Timestamp(r.get(7)?),
    }))
}

fn rows(
    stmt: &mut rusqlite::CachedStatement<'_>,
    p: impl rusqlite::Params,
) -> Result<Vec<Buffered>> {
    let found = stmt.query_map(p, row)?;
    let mut out = Vec::new();
    for r in found {
        out.extend(r?);
    }
    Ok(out)
}

impl BufferStore for SqliteStore {
    fn buffer_event(&self, b: &Buffered) -> Result<bool> {
        let n = self
            .conn()
            .prepare_cached(&format!(
                "INSERT INTO buffered_events ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
                 ON CONFLICT DO NOTHING"
            ))?
            .execute(params![
                b.task.as_str(),
                b.phase,
                b.delivery,
                b.event,
                b.payload,
                b.branch_pattern,
                b.received_at.millis(),
                b.expires_at.millis()
            ])?;
        Ok(n == 1)
    }

    fn buffered_for(&self, task: &TaskId) -> Result<Vec<Buffered>> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached(&format!(
            "SELECT {COLUMNS} FROM buffered_events WHERE task_id = ?1 ORDER BY received_at, delivery_id"
        ))?;
        rows(&mut stmt, [task.as_str()])
    }

    fn buffered_all(&self) -> Result<Vec<Buffered>> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached(&format!(
            "SELECT {COLUMNS} FROM buffered_events ORDER BY received_at, task_id, delivery_id"
        ))?;
        rows(&mut stmt, [])
    }

    fn drop_buffered(&self, task: &TaskId, phase: Option<&str>) -> Result<usize> {
        let conn = self.conn();
        Ok(match phase {
            Some(p) => conn
                .prepare_cached("DELETE FROM buffered_events WHERE task_id = ?1 AND phase = ?2")?
                .execute(params![task.as_str(), p])?,
            None => conn
                .prepare_cached("DELETE FROM buffered_events WHERE task_id = ?1")?
                .execute([task.as_str()])?,
        })
    }

    fn drop_buffered_delivery(&self, task: &TaskId, delivery: &str) -> Result<usize> {
        Ok(self
            .conn()
            .prepare_cached("DELETE FROM buffered_events WHERE task_id = ?1 AND delivery_id = ?2")?
            .execute(params![task.as_str(), delivery])?)
    }

    fn expire_buffered(&self, now: Timestamp) -> Result<usize> {
        Ok(self
            .conn()
            .prepare_cached("DELETE FROM buffered_events WHERE expires_at <= ?1")?
            .execute([now.millis()])?)
    }
}
