//! [`DeliveryStore`] for PostgreSQL: a batch of new deliveries is one
//! `INSERT … SELECT FROM unnest(…) ON CONFLICT DO NOTHING RETURNING id`, so
//! one round trip and one commit for all of them. A retry after a lost
//! connection cannot tell its own insert from an earlier server's, so it
//! counts the ids it finds with its own `received_at` stamp as its own.

use super::PgStore;
use crate::Result;
use crate::deliveries::{
    DeliveryRow, DeliveryStore, NewDelivery, PENDING, Settlement, first_in_batch, tasks_json,
    tasks_of,
};
use baton_core::Timestamp;
use std::collections::HashSet;

const INSERT: &str = "INSERT INTO deliveries (id, received_at, event, action, repository, payload, decision, why, tasks)
     SELECT d.*, $7, '', '[]' FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::text[], $6::text[]) AS d
     ON CONFLICT (id) DO NOTHING RETURNING id";
const MINE: &str =
    "SELECT id FROM deliveries WHERE id = ANY($1) AND received_at = ANY($2) AND payload = ANY($3)";
const SETTLE: &str =
    "UPDATE deliveries SET settled_at = $2, decision = $3, why = $4, tasks = $5, payload = NULL
     WHERE id = $1 AND settled_at IS NULL";
const NEWEST: &str =
    "SELECT id, received_at, event, action, repository, settled_at, decision, why, tasks
     FROM deliveries ORDER BY received_at DESC, id DESC LIMIT $1";
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
        let payloads: Vec<&str> = batch.iter().map(|d| d.payload.as_str()).collect();
        let inserted: HashSet<String> = self.run(|conn, retrying| {
            let mut db = conn.db();
            if retrying {
                // The lost attempt may have committed: the rows that are
                // exactly ours are ours.
                let mine: HashSet<String> = db
                    .query(MINE, &[&ids, &at, &payloads])?
                    .iter()
                    .map(|r| r.get(0))
                    .collect();
                let rest: HashSet<String> = db
                    .query(
                        INSERT,
                        &[&ids, &at, &events, &actions, &repos, &payloads, &PENDING],
                    )?
                    .iter()
                    .map(|r| r.get(0))
                    .collect();
                return Ok(mine.union(&rest).cloned().collect());
            }
            Ok(db
                .query(
                    INSERT,
                    &[&ids, &at, &events, &actions, &repos, &payloads, &PENDING],
                )?
                .iter()
                .map(|r| r.get(0))
                .collect())
        })?;
        Ok(new
            .iter()
            .zip(first)
            .map(|(d, f)| f && inserted.contains(&d.id))
            .collect())
    }

    fn settle_delivery(&self, id: &str, how: &Settlement) -> Result<bool> {
        let tasks = tasks_json(&how.tasks);
        let n = self.run(|conn, _| {
            Ok(conn.db().execute(
                SETTLE,
                &[&id, &how.at.millis(), &how.decision, &how.why, &tasks],
            )?)
        })?;
        Ok(n == 1)
    }

    fn deliveries(&self, limit: usize) -> Result<Vec<DeliveryRow>> {
        let rows = self.run(|conn, _| {
            Ok(conn
                .db()
                .query(NEWEST, &[&i64::try_from(limit).unwrap_or(i64::MAX)])?)
        })?;
        rows.iter()
            .map(|r| {
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
            })
            .collect()
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
            })
            .collect())
    }
}
