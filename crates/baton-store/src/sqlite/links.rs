//! [`LinkStore`] for SQLite: the `task_links` table.

use super::SqliteStore;
use crate::Result;
use crate::links::{LinkStart, LinkStore, json, link_of};
use baton_core::link::{Link, Started};
use rusqlite::{OptionalExtension, TransactionBehavior, params};

impl LinkStore for SqliteStore {
    fn add_link(&self, link: &Link) -> Result<bool> {
        let n = self.conn().execute(
            "INSERT INTO task_links (id, created_at, started, data) VALUES (?1, ?2, 0, ?3)
             ON CONFLICT (id) DO NOTHING",
            params![link.id, link.created_at.millis(), json(link)],
        )?;
        Ok(n == 1)
    }

    fn links(&self, pending_only: bool) -> Result<Vec<Link>> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached(
            "SELECT id, data FROM task_links WHERE started = 0 OR ?1 = 0 ORDER BY created_at, id",
        )?;
        let rows = stmt.query_map([pending_only as i64], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
        })?;
        rows.map(|row| {
            let (id, data) = row?;
            link_of(&id, &data)
        })
        .collect()
    }

    fn start_link(&self, id: &str, started: &Started) -> Result<LinkStart> {
        let mut conn = self.conn();
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let data: Option<String> = tx
            .query_row(
                "SELECT data FROM task_links WHERE id = ?1 AND started = 0",
                [id],
                |r| r.get(0),
            )
            .optional()?;
        let Some(data) = data else {
            return Ok(LinkStart::Already);
        };
        let mut link = link_of(id, &data)?;
        link.started = Some(started.clone());
        tx.execute(
            "UPDATE task_links SET started = 1, data = ?2 WHERE id = ?1",
            params![id, json(&link)],
        )?;
        tx.commit()?;
        Ok(LinkStart::Now(Box::new(link)))
    }
}
