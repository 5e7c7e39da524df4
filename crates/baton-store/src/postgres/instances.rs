//! [`InstanceStore`] for PostgreSQL: `instances` and `instance_events`.
//! Commits serialise on a transaction-level advisory lock, check the
//! journal's end, and are safe to retry after a lost connection (a retry
//! that finds its own first record already there has landed).

use super::PgStore;
use super::conn::{Fail, in_tx};
use crate::instances::{InstanceStore, Row, instance_of, payload, record_of};
use crate::{Error, Result};
use baton_core::instance::{Instance, Instances, Record};

/// The advisory lock instance commits take ("baton" in ASCII, then 2).
const INSTANCE_LOCK: i64 = 0x6261_746f_6e00_0002;
const LOCK: &str = "SELECT pg_advisory_xact_lock($1)";
const LAST_SEQ: &str = "SELECT COALESCE(MAX(seq), 0) FROM instance_events";
const ALL: &str = "SELECT data FROM instances ORDER BY id";
const PAYLOAD: &str = "SELECT payload FROM instance_events WHERE seq = $1";
const INSERT_EVENT: &str = "INSERT INTO instance_events (seq, ts, kind, instance_id, payload)
     VALUES ($1, $2, $3, $4, $5)";
const UPSERT: &str = "INSERT INTO instances (id, kind, status, parent, updated_at, data)
     VALUES ($1, $2, $3, $4, $5, $6)
     ON CONFLICT (id) DO UPDATE SET status = excluded.status,
       updated_at = excluded.updated_at, data = excluded.data";
const EVENTS: &str =
    "SELECT seq, ts, payload FROM instance_events WHERE seq > $1 ORDER BY seq LIMIT $2";

impl InstanceStore for PgStore {
    fn instances(&self) -> Result<Instances> {
        let (last, rows) = self.run(|conn, _| {
            let mut db = conn.db();
            Ok((
                db.query_one(LAST_SEQ, &[])?.get::<_, i64>(0),
                db.query(ALL, &[])?,
            ))
        })?;
        let mut all = Instances {
            last_seq: last as u64,
            ..Instances::default()
        };
        for r in rows {
            let i = instance_of(r.get::<_, &str>(0))?;
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
        let rows: Vec<Row> = changed.iter().map(|i| Row::of(i)).collect();
        let payloads: Vec<String> = records.iter().map(payload).collect();
        self.run(|conn, retrying| {
            in_tx(conn, |db| {
                db.execute(LOCK, &[&INSTANCE_LOCK])?;
                let found = db.query_one(LAST_SEQ, &[])?.get::<_, i64>(0) as u64;
                if retrying
                    && let Some(first) = records.first()
                    && found >= first.seq
                {
                    let there = db.query_opt(PAYLOAD, &[&(first.seq as i64)])?;
                    if there.is_some_and(|r| r.get::<_, &str>(0) == payloads[0]) {
                        return Ok(());
                    }
                }
                if found != expected || records.first().is_some_and(|r| r.seq != expected + 1) {
                    return Err(Fail::Store(Error::InstancesChanged { expected, found }));
                }
                for (r, p) in records.iter().zip(&payloads) {
                    db.execute(
                        INSERT_EVENT,
                        &[
                            &(r.seq as i64),
                            &r.ts.millis(),
                            &r.event.kind(),
                            &r.event.instance().as_str(),
                            p,
                        ],
                    )?;
                }
                for row in &rows {
                    db.execute(
                        UPSERT,
                        &[
                            &row.id,
                            &row.kind,
                            &row.status,
                            &row.parent,
                            &row.updated_at,
                            &row.data,
                        ],
                    )?;
                }
                Ok(())
            })
        })
    }

    fn instance_events(&self, after: u64, limit: usize) -> Result<Vec<Record>> {
        let rows = self.run(|conn, _| {
            Ok(conn.db().query(
                EVENTS,
                &[&(after as i64), &i64::try_from(limit).unwrap_or(i64::MAX)],
            )?)
        })?;
        rows.iter()
            .map(|r| record_of(r.get(0), r.get(1), r.get::<_, &str>(2)))
            .collect()
    }
}
