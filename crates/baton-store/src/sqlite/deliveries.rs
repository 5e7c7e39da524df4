//! [`DeliveryStore`] for SQLite: the `deliveries` table, a batch of new
//! deliveries inserted in one IMMEDIATE transaction (one fsync for all);
//! a body seen within its window (`delivery_bodies`, one row per digest,
//! replaced only once the window passed) makes a delivery not new, unless
//! the delivery that brought it changed nothing (ignored or skipped).

use super::SqliteStore;
use crate::Result;
use crate::deliveries::{
    DeliveryRow, DeliveryStore, NewDelivery, PENDING, Settlement, first_in_batch, tasks_json,
    tasks_of,
};
use baton_core::Timestamp;
use rusqlite::{TransactionBehavior, params};

/// A body's key in `delivery_bodies`: the first 16 bytes of its digest
/// (128 bits tell bodies apart; a short key keeps the table small).
fn key(digest: &str) -> Vec<u8> {
    (0..digest.len().min(32) / 2)
        .filter_map(|i| u8::from_str_radix(&digest[2 * i..2 * i + 2], 16).ok())
        .collect()
}

impl DeliveryStore for SqliteStore {
    fn record_deliveries(&self, new: &[NewDelivery]) -> Result<Vec<bool>> {
        let mut fresh = first_in_batch(new);
        let mut conn = self.conn();
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        {
            // A delivery ignored or skipped changed nothing: its
            // redelivery is new again, by its id or by its body.
            let mut ins = tx.prepare_cached(
                "INSERT INTO deliveries (id, received_at, event, action, repository, payload, settled_at, decision, why, tasks)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)
                 ON CONFLICT (id) DO UPDATE SET received_at = excluded.received_at, event = excluded.event,
                    action = excluded.action, repository = excluded.repository, payload = excluded.payload,
                    settled_at = excluded.settled_at, decision = excluded.decision, why = excluded.why,
                    tasks = excluded.tasks
                 WHERE deliveries.decision IN ('ignored', 'skipped')",
            )?;
            let mut body = tx.prepare_cached(
                "INSERT INTO delivery_bodies (digest, received_at, delivery_id) VALUES (?1, ?2, ?4)
                 ON CONFLICT (digest) DO UPDATE SET received_at = excluded.received_at, delivery_id = excluded.delivery_id
                 WHERE delivery_bodies.received_at < excluded.received_at - ?3
                    OR EXISTS (SELECT 1 FROM deliveries x WHERE x.id = delivery_bodies.delivery_id AND x.decision IN ('ignored', 'skipped'))",
            )?;
            let mut known = tx.prepare_cached("SELECT 1 FROM deliveries WHERE id = ?1")?;
            for (d, fresh) in new.iter().zip(fresh.iter_mut()) {
                if *fresh
                    && let Some(b) = &d.body
                    && !known.exists([&d.id])?
                {
                    *fresh = body.execute(params![
                        key(&b.digest),
                        d.received_at.millis(),
                        b.window_ms,
                        d.id
                    ])? == 1;
                }
                if *fresh {
                    let s = d.settled.as_ref();
                    *fresh = ins.execute(params![
                        d.id,
                        d.received_at.millis(),
                        d.event,
                        d.action,
                        d.repository,
                        s.is_none().then_some(&d.payload),
                        s.map(|s| s.at.millis()),
                        s.map_or(PENDING, |s| s.decision.as_str()),
                        s.map_or("", |s| s.why.as_str()),
                        s.map_or_else(|| "[]".to_string(), |s| tasks_json(&s.tasks)),
                    ])? == 1;
                }
            }
        }
        tx.commit()?;
        Ok(fresh)
    }

    fn settle_deliveries(&self, settled: &[(String, Settlement)]) -> Result<Vec<bool>> {
        let mut conn = self.conn();
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let mut out = Vec::with_capacity(settled.len());
        {
            let mut up = tx.prepare_cached(
                "UPDATE deliveries SET settled_at = ?2, decision = ?3, why = ?4, tasks = ?5, payload = NULL
                 WHERE id = ?1 AND settled_at IS NULL",
            )?;
            for (id, how) in settled {
                out.push(
                    up.execute(params![
                        id,
                        how.at.millis(),
                        how.decision,
                        how.why,
                        tasks_json(&how.tasks)
                    ])? == 1,
                );
            }
        }
        tx.commit()?;
        Ok(out)
    }

    fn delivery(&self, id: &str) -> Result<Option<DeliveryRow>> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached(
            "SELECT id, received_at, event, action, repository, settled_at, decision, why, tasks
             FROM deliveries WHERE id = ?1",
        )?;
        let rows = stmt.query_map([id], row)?;
        let mut out = None;
        for r in rows {
            let (mut d, tasks) = r?;
            d.tasks = tasks_of(&d.id, &tasks)?;
            out = Some(d);
        }
        Ok(out)
    }

    fn resettle_delivery(&self, id: &str, how: &Settlement) -> Result<bool> {
        Ok(self
            .conn()
            .prepare_cached(
                "UPDATE deliveries SET settled_at = ?2, decision = ?3, why = ?4, tasks = ?5, payload = NULL
                 WHERE id = ?1",
            )?
            .execute(params![
                id,
                how.at.millis(),
                how.decision,
                how.why,
                tasks_json(&how.tasks)
            ])?
            == 1)
    }

    fn delivery_counts(&self) -> Result<Vec<(String, i64)>> {
        let conn = self.conn();
        let mut stmt =
            conn.prepare_cached("SELECT decision, COUNT(*) FROM deliveries GROUP BY decision")?;
        let rows = stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    fn deliveries(&self, limit: usize) -> Result<Vec<DeliveryRow>> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached(
            "SELECT id, received_at, event, action, repository, settled_at, decision, why, tasks
             FROM deliveries ORDER BY received_at DESC, rowid DESC LIMIT ?1",
        )?;
        let rows = stmt.query_map([i64::try_from(limit).unwrap_or(i64::MAX)], row)?;
        rows.map(|row| {
            let (mut d, tasks) = row?;
            d.tasks = tasks_of(&d.id, &tasks)?;
            Ok(d)
        })
        .collect()
    }

    fn unsettled_deliveries(&self) -> Result<Vec<NewDelivery>> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached(
            "SELECT id, received_at, event, action, repository, payload FROM deliveries
             WHERE settled_at IS NULL ORDER BY received_at, rowid",
        )?;
        let rows = stmt.query_map([], |r| {
            Ok(NewDelivery {
                id: r.get(0)?,
                received_at: Timestamp(r.get(1)?),
                event: r.get(2)?,
                action: r.get(3)?,
                repository: r.get(4)?,
                payload: r.get::<_, Option<String>>(5)?.unwrap_or_default(),
                essentials: None,
                settled: None,
                body: None,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }
}

/// A delivery row, and its decisions as JSON.
fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<(DeliveryRow, String)> {
    Ok((
        DeliveryRow {
            id: r.get(0)?,
            received_at: Timestamp(r.get(1)?),
            event: r.get(2)?,
            action: r.get(3)?,
            repository: r.get(4)?,
            settled_at: r.get::<_, Option<i64>>(5)?.map(Timestamp),
            decision: r.get(6)?,
            why: r.get(7)?,
            tasks: Vec::new(),
        },
        r.get::<_, String>(8)?,
    ))
}
