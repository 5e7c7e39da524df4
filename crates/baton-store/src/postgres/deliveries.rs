//! [`DeliveryStore`] for PostgreSQL: a batch of new deliveries is one
//! `INSERT … SELECT FROM unnest(…) ON CONFLICT DO NOTHING RETURNING id`, so
//! one round trip and one commit for all of them; settlements likewise.
//! In the same statement each signed body claims its digest in
//! `delivery_bodies` (an upsert that replaces a row only once its window
//! passed, or when its delivery changed nothing (ignored or skipped), so of two servers
//! racing with one replayed body one wins); a delivery that changed nothing is
//! recorded anew when it comes again under its own id. A
//! retry after a lost connection cannot tell its own insert from an
//! earlier server's, so it counts the ids it finds with its own
//! `received_at` stamp as its own.

use super::PgStore;
use crate::Result;
use crate::deliveries::{
    DeliveryRow, DeliveryStore, NewDelivery, PENDING, Settlement, first_in_batch, tasks_json,
    tasks_of,
};
use baton_core::Timestamp;
use std::collections::HashSet;

const INSERT: &str = "WITH d AS (
        SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::text[], $6::text[], $7::bigint[], $8::text[], $9::text[], $10::text[], $11::text[])
            AS d(id, received_at, event, action, repository, payload, settled_at, decision, why, tasks, digest)
     ), b AS (
        INSERT INTO delivery_bodies (digest, delivery_id, received_at)
        SELECT d.digest, d.id, d.received_at FROM d
        WHERE d.digest IS NOT NULL AND NOT EXISTS (SELECT 1 FROM deliveries x WHERE x.id = d.id)
        ON CONFLICT (digest) DO UPDATE SET delivery_id = excluded.delivery_id, received_at = excluded.received_at
        WHERE delivery_bodies.received_at < excluded.received_at - $12
           OR EXISTS (SELECT 1 FROM deliveries x WHERE x.id = delivery_bodies.delivery_id AND x.decision IN ('ignored', 'skipped'))
        RETURNING delivery_id
     )
     INSERT INTO deliveries (id, received_at, event, action, repository, payload, settled_at, decision, why, tasks)
     SELECT d.id, d.received_at, d.event, d.action, d.repository, d.payload, d.settled_at, d.decision, d.why, d.tasks FROM d
     WHERE d.digest IS NULL OR d.id IN (SELECT delivery_id FROM b)
        OR EXISTS (SELECT 1 FROM deliveries x WHERE x.id = d.id AND x.decision IN ('ignored', 'skipped'))
     ON CONFLICT (id) DO UPDATE SET received_at = excluded.received_at, event = excluded.event,
        action = excluded.action, repository = excluded.repository, payload = excluded.payload,
        settled_at = excluded.settled_at, decision = excluded.decision, why = excluded.why, tasks = excluded.tasks
     WHERE deliveries.decision IN ('ignored', 'skipped')
     RETURNING id";
const MINE: &str = "SELECT id FROM deliveries WHERE id = ANY($1) AND received_at = ANY($2)";
const SETTLE: &str = "WITH s AS (
        SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::text[]) AS s(id, at, decision, why, tasks)
     )
     UPDATE deliveries d SET settled_at = s.at, decision = s.decision, why = s.why, tasks = s.tasks, payload = NULL
     FROM s WHERE d.id = s.id AND d.settled_at IS NULL RETURNING d.id";
const NEWEST: &str =
    "SELECT id, received_at, event, action, repository, settled_at, decision, why, tasks
     FROM deliveries ORDER BY received_at DESC, id DESC LIMIT $1";
const ONE: &str =
    "SELECT id, received_at, event, action, repository, settled_at, decision, why, tasks
     FROM deliveries WHERE id = $1";
const RESETTLE: &str =
    "UPDATE deliveries SET settled_at = $2, decision = $3, why = $4, tasks = $5, payload = NULL
     WHERE id = $1";
const UNSETTLED: &str = "SELECT id, received_at, event, action, repository, payload FROM deliveries
     WHERE settled_at IS NULL ORDER BY received_at, id";

impl DeliveryStore for PgStore {
    fn record_deliveries(&self, new: &[NewDelivery]) -> Result<Vec<bool>> {
        let first = first_in_batch(new);
        let batch: Vec<&NewDelivery> = new
            .iter()
            .zip(&first)
            .filter(|(_, f)| **f)
            .map(|(d, _)| d)
            .collect();
        let ids: Vec<&str> = batch.iter().map(|d| d.id.as_str()).collect();
        let at: Vec<i64> = batch.iter().map(|d| d.received_at.millis()).collect();
        let events: Vec<&str> = batch.iter().map(|d| d.event.as_str()).collect();
        let actions: Vec<Option<&str>> = batch.iter().map(|d| d.action.as_deref()).collect();
        let repos: Vec<Option<&str>> = batch.iter().map(|d| d.repository.as_deref()).collect();
        let payloads: Vec<Option<&str>> = batch
            .iter()
            .map(|d| d.settled.is_none().then_some(d.payload.as_str()))
            .collect();
        let settled_at: Vec<Option<i64>> = batch
            .iter()
            .map(|d| d.settled.as_ref().map(|s| s.at.millis()))
            .collect();
        let decisions: Vec<&str> = batch
            .iter()
            .map(|d| d.settled.as_ref().map_or(PENDING, |s| s.decision.as_str()))
            .collect();
        let whys: Vec<&str> = batch
            .iter()
            .map(|d| d.settled.as_ref().map_or("", |s| s.why.as_str()))
            .collect();
        let tasks: Vec<String> = batch
            .iter()
            .map(|d| {
                d.settled
                    .as_ref()
                    .map_or_else(|| "[]".to_string(), |s| tasks_json(&s.tasks))
            })
            .collect();
        let digests: Vec<Option<&str>> = batch
            .iter()
            .map(|d| d.body.as_ref().map(|b| b.digest.as_str()))
            .collect();
        let window: i64 = batch
            .iter()
            .filter_map(|d| d.body.as_ref().map(|b| b.window_ms))
            .max()
            .unwrap_or(0);
        let inserted: HashSet<String> = self.run(|conn, retrying| {
            let mut db = conn.db();
            let params: [&(dyn postgres::types::ToSql + Sync); 12] = [
                &ids,
                &at,
                &events,
                &actions,
                &repos,
                &payloads,
                &settled_at,
                &decisions,
                &whys,
                &tasks,
                &digests,
                &window,
            ];
            let rest: HashSet<String> = db
                .query(INSERT, &params)?
                .iter()
                .map(|r| r.get(0))
                .collect();
            if retrying {
                // The lost attempt may have committed: the rows with our
                // ids and our arrival times are ours.
                let mine: HashSet<String> = db
                    .query(MINE, &[&ids, &at])?
                    .iter()
                    .map(|r| r.get(0))
                    .collect();
                return Ok(mine.union(&rest).cloned().collect());
            }
            Ok(rest)
        })?;
        Ok(new
            .iter()
            .zip(first)
            .map(|(d, f)| f && inserted.contains(&d.id))
            .collect())
    }

    fn settle_deliveries(&self, settled: &[(String, Settlement)]) -> Result<Vec<bool>> {
        let ids: Vec<&str> = settled.iter().map(|(id, _)| id.as_str()).collect();
        let at: Vec<i64> = settled.iter().map(|(_, s)| s.at.millis()).collect();
        let decisions: Vec<&str> = settled.iter().map(|(_, s)| s.decision.as_str()).collect();
        let whys: Vec<&str> = settled.iter().map(|(_, s)| s.why.as_str()).collect();
        let tasks: Vec<String> = settled.iter().map(|(_, s)| tasks_json(&s.tasks)).collect();
        let done: HashSet<String> = self.run(|conn, _| {
            Ok(conn
                .db()
                .query(SETTLE, &[&ids, &at, &decisions, &whys, &tasks])?
                .iter()
                .map(|r| r.get(0))
                .collect())
        })?;
        Ok(ids.iter().map(|id| done.contains(*id)).collect())
    }

    fn delivery_counts(&self) -> Result<Vec<(String, i64)>> {
        let rows = self.run(|conn, _| {
            Ok(conn.db().query(
                "SELECT decision, COUNT(*) FROM deliveries GROUP BY decision",
                &[],
            )?)
        })?;
        Ok(rows
            .iter()
            .map(|r| (r.get::<_, String>(0), r.get::<_, i64>(1)))
            .collect())
    }

    fn deliveries(&self, limit: usize) -> Result<Vec<DeliveryRow>> {
        let rows = self.run(|conn, _| {
            Ok(conn
                .db()
                .query(NEWEST, &[&i64::try_from(limit).unwrap_or(i64::MAX)])?)
        })?;
        rows.iter().map(row).collect()
    }

    fn delivery(&self, id: &str) -> Result<Option<DeliveryRow>> {
        let rows = self.run(|conn, _| Ok(conn.db().query(ONE, &[&id])?))?;
        rows.first().map(row).transpose()
    }

    fn resettle_delivery(&self, id: &str, how: &Settlement) -> Result<bool> {
        let tasks = tasks_json(&how.tasks);
        let n = self.run(|conn, _| {
            Ok(conn.db().execute(
                RESETTLE,
                &[&id, &how.at.millis(), &how.decision, &how.why, &tasks],
            )?)
        })?;
        Ok(n == 1)
    }

    fn unsettled_deliveries(&self) -> Result<Vec<NewDelivery>> {
        let rows = self.run(|conn, _| Ok(conn.db().query(UNSETTLED, &[])?))?;
        Ok(rows
            .iter()
            .map(|r| NewDelivery {
                id: r.get(0),
                received_at: Timestamp(r.get(1)),
                event: r.get(2),
                action: r.get(3),
                repository: r.get(4),
                payload: r.get::<_, Option<String>>(5).unwrap_or_default(),
                essentials: None,
                settled: None,
                body: None,
            })
            .collect())
    }
}

/// A delivery row as the store holds it.
fn row(r: &postgres::Row) -> Result<DeliveryRow> {
    let id: String = r.get(0);
    let tasks = tasks_of(&id, r.get::<_, &str>(8))?;
    Ok(DeliveryRow {
        received_at: Timestamp(r.get(1)),
        event: r.get(2),
        action: r.get(3),
        repository: r.get(4),
        settled_at: r.get::<_, Option<i64>>(5).map(Timestamp),
        decision: r.get(6),
        why: r.get(7),
        tasks,
        id,
    })
}
