//! [`InboxStore`] for SQLite: the `inbox` table.

use super::SqliteStore;
use crate::Result;
use crate::inbox::{Answered, InboxStore, item_of, json, with_answer};
use baton_core::inbox::{Answer, InboxItem};
use rusqlite::{OptionalExtension, TransactionBehavior, params};

impl InboxStore for SqliteStore {
    fn raise_item(&self, item: &InboxItem) -> Result<InboxItem> {
        let mut conn = self.conn();
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        tx.execute(
            "INSERT INTO inbox (id, item_key, created_at, open, data) VALUES (?1, ?2, ?3, 1, ?4)
             ON CONFLICT (item_key) DO NOTHING",
            params![item.id, item.key, item.created_at.millis(), json(item)],
        )?;
        let (id, data): (String, String) = tx.query_row(
            "SELECT id, data FROM inbox WHERE item_key = ?1",
            [&item.key],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
        tx.commit()?;
        item_of(&id, &data)
    }

    fn inbox_item(&self, id: &str) -> Result<Option<InboxItem>> {
        let data: Option<String> = self
            .conn()
            .query_row("SELECT data FROM inbox WHERE id = ?1", [id], |r| r.get(0))
            .optional()?;
        data.map(|d| item_of(id, &d)).transpose()
    }

    fn inbox_items(&self, open_only: bool) -> Result<Vec<InboxItem>> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached(
            "SELECT id, data FROM inbox WHERE open = 1 OR ?1 = 0 ORDER BY created_at, id",
        )?;
        let rows = stmt.query_map([open_only as i64], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
        })?;
        rows.map(|row| {
            let (id, data) = row?;
            item_of(&id, &data)
        })
        .collect()
    }

    fn answer_item(&self, id: &str, answer: &Answer) -> Result<Answered> {
        let mut conn = self.conn();
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let row: Option<(i64, String)> = tx
            .query_row("SELECT open, data FROM inbox WHERE id = ?1", [id], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .optional()?;
        let Some((open, data)) = row else {
            return Ok(Answered::NotFound);
        };
        let item = item_of(id, &data)?;
        if open == 0 {
            return Ok(Answered::Already(item));
        }
        let item = with_answer(item, answer);
        tx.execute(
            "UPDATE inbox SET open = 0, data = ?2 WHERE id = ?1",
            params![id, json(&item)],
        )?;
        tx.commit()?;
        Ok(Answered::Now(item))
    }
}
