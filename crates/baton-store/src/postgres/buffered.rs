//! [`BufferStore`] for PostgreSQL: the `buffered_events` table.

use super::PgStore;
use crate::Result;
use crate::buffered::{BufferStore, Buffered};
use baton_core::{TaskId, Timestamp};

macro_rules! columns {
    () => {
        "task_id, phase, delivery_id, event, payload, branch_pattern, received_at, expires_at"
    };
}
const KEEP: &str = concat!(
    "INSERT INTO buffered_events (",
    columns!(),
    ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT DO NOTHING"
);
const FOR_TASK: &str = concat!(
    "SELECT ",
    columns!(),
    " FROM buffered_events WHERE task_id = $1 ORDER BY received_at, delivery_id"
);
const ALL: &str = concat!(
    "SELECT ",
    columns!(),
    " FROM buffered_events ORDER BY received_at, task_id, delivery_id"
);

fn rows(found: &[postgres::Row]) -> Vec<Buffered> {
    found
        .iter()
        .filter_map(|r| {
            Some(Buffered {
                task: TaskId::parse(r.get::<_, &str>(0)).ok()?,
                phase: r.get(1),
                delivery: r.get(2),
                event: r.get(3),
                payload: r.get(4),
                branch_pattern: r.get(5),
                received_at: Timestamp(r.get(6)),
                expires_at: Timestamp(r.get(7)),
            })
        })
        .collect()
}

impl BufferStore for PgStore {
    fn buffer_event(&self, b: &Buffered) -> Result<bool> {
        // A retry after a lost connection finds its own row: the same key,
        // and `false` then means nothing worse than "kept already".
        let n = self.run(|conn, _| {
            Ok(conn.db().execute(
                KEEP,
                &[
                    &b.task.as_str(),
                    &b.phase,
                    &b.delivery,
                    &b.event,
                    &b.payload,
                    &b.branch_pattern,
                    &b.received_at.millis(),
                    &b.expires_at.millis(),
                ],
            )?)
        })?;
        Ok(n == 1)
    }

    fn buffered_for(&self, task: &TaskId) -> Result<Vec<Buffered>> {
        let found = self.run(|conn, _| Ok(conn.db().query(FOR_TASK, &[&task.as_str()])?))?;
        Ok(rows(&found))
    }

    fn buffered_all(&self) -> Result<Vec<Buffered>> {
        let found = self.run(|conn, _| Ok(conn.db().query(ALL, &[])?))?;
        Ok(rows(&found))
    }

    fn drop_buffered(&self, task: &TaskId, phase: Option<&str>) -> Result<usize> {
        let n = self.run(|conn, _| {
            Ok(match phase {
                Some(p) => conn.db().execute(
                    "DELETE FROM buffered_events WHERE task_id = $1 AND phase = $2",
                    &[&task.as_str(), &p],
                )?,
                None => conn.db().execute(
                    "DELETE FROM buffered_events WHERE task_id = $1",
                    &[&task.as_str()],
                )?,
            })
        })?;
        Ok(n as usize)
    }

    fn drop_buffered_delivery(&self, task: &TaskId, delivery: &str) -> Result<usize> {
        let n = self.run(|conn, _| {
            Ok(conn.db().execute(
                "DELETE FROM buffered_events WHERE task_id = $1 AND delivery_id = $2",
                &[&task.as_str(), &delivery],
            )?)
        })?;
        Ok(n as usize)
    }

    fn expire_buffered(&self, now: Timestamp) -> Result<usize> {
        let n = self.run(|conn, _| {
            Ok(conn.db().execute(
                "DELETE FROM buffered_events WHERE expires_at <= $1",
                &[&now.millis()],
            )?)
        })?;
        Ok(n as usize)
    }
}
