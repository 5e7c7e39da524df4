//! [`InstanceStore`] for SQLite: `instances` and `instance_events`,
//! written in one IMMEDIATE transaction that first checks the journal's end.

use super::SqliteStore;
use crate::instances::{InstanceStore, Row, instance_of, payload, record_of};
use crate::{Error, Result};
use baton_core::instance::{Instance, Instances, Record};
use rusqlite::{TransactionBehavior, params};

impl InstanceStore for SqliteStore {
    fn instances(&self) -> Result<Instances> {
        let conn = self.conn();
        let mut all = Instances {
            last_seq: conn.query_row(
                "SELECT COALESCE(MAX(seq), 0) FROM instance_events",
                [],
                |r| r.get::<_, i64>(0),
            )? as u64,
            ..Instances::default()
        };
        let mut stmt = conn.prepare_cached("SELECT data FROM instances ORDER BY id")?;
        let rows = stmt.query_map([], |r| r.get::<_, String>(0))?;
        for data in rows {
            let i = instance_of(&data?)?;
            all.by_id.insert(i.id.clone(), i);
        }
        Ok(all)
    }

    fn commit_instances(
        &self,
        expected: u64,
        records: &[Record],
        changed: &[&Instance],
    ) -> Result<()> {
        let mut conn = self.conn();
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let found = tx.query_row(
            "SELECT COALESCE(MAX(seq), 0) FROM instance_events",
            [],
            |r| r.get::<_, i64>(0),
        )? as u64;
        if found != expected || records.first().is_some_and(|r| r.seq != expected + 1) {
            return Err(Error::InstancesChanged { expected, found });
        }
        {
            let mut ins = tx.prepare_cached(
                "INSERT INTO instance_events (seq, ts, kind, instance_id, payload)
                 VALUES (?1, ?2, ?3, ?4, ?5)",
            )?;
            for r in records {
                ins.execute(params![
                    r.seq as i64,
                    r.ts.millis(),
                    r.event.kind(),
                    r.event.instance().as_str(),
                    payload(r)
                ])?;
            }
            let mut up = tx.prepare_cached(
                "INSERT INTO instances (id, kind, status, parent, updated_at, data)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)
                 ON CONFLICT (id) DO UPDATE SET status = excluded.status,
                   updated_at = excluded.updated_at, data = excluded.data",
            )?;
            for i in changed {
                let row = Row::of(i);
                up.execute(params![
                    row.id,
                    row.kind,
                    row.status,
                    row.parent,
                    row.updated_at,
                    row.data
                ])?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    fn instance_events(&self, after: u64, limit: usize) -> Result<Vec<Record>> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached(
            "SELECT seq, ts, payload FROM instance_events WHERE seq > ?1 ORDER BY seq LIMIT ?2",
        )?;
        let rows = stmt.query_map(
            params![after as i64, i64::try_from(limit).unwrap_or(i64::MAX)],
            |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, String>(2)?,
                ))
            },
        )?;
        rows.map(|row| {
            let (seq, ts, payload) = row?;
            record_of(seq, ts, &payload)
        })
        .collect()
    }
}
