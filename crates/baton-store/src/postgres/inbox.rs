//! [`InboxStore`] for PostgreSQL: the `inbox` table.

use super::PgStore;
use super::conn::in_tx;
use crate::Result;
use crate::inbox::{Answered, InboxStore, item_of, json, with_answer};
use baton_core::inbox::{Answer, InboxItem};

const RAISE: &str =
    "INSERT INTO inbox (id, item_key, created_at, open, data) VALUES ($1, $2, $3, TRUE, $4)
     ON CONFLICT (item_key) DO NOTHING";
const BY_KEY: &str = "SELECT id, data FROM inbox WHERE item_key = $1";
const ONE: &str = "SELECT data FROM inbox WHERE id = $1";
const ALL: &str = "SELECT id, data FROM inbox WHERE open OR NOT $1 ORDER BY created_at, id";
const LOCK: &str = "SELECT open, data FROM inbox WHERE id = $1 FOR UPDATE";
const ANSWER: &str = "UPDATE inbox SET open = FALSE, data = $2 WHERE id = $1";

impl InboxStore for PgStore {
    fn raise_item(&self, item: &InboxItem) -> Result<InboxItem> {
        let row = self.run(|conn, _| {
            in_tx(conn, |db| {
                db.execute(
                    RAISE,
                    &[&item.id, &item.key, &item.created_at.millis(), &json(item)],
                )?;
                db.query_one(BY_KEY, &[&item.key])
            })
        })?;
        item_of(row.get::<_, &str>(0), row.get::<_, &str>(1))
    }

    fn inbox_item(&self, id: &str) -> Result<Option<InboxItem>> {
        let row = self.run(|conn, _| Ok(conn.db().query_opt(ONE, &[&id])?))?;
        row.map(|r| item_of(id, r.get::<_, &str>(0))).transpose()
    }

    fn inbox_items(&self, open_only: bool) -> Result<Vec<InboxItem>> {
        let rows = self.run(|conn, _| Ok(conn.db().query(ALL, &[&open_only])?))?;
        rows.iter()
            .map(|r| item_of(r.get::<_, &str>(0), r.get::<_, &str>(1)))
            .collect()
    }

    fn answer_item(&self, id: &str, answer: &Answer) -> Result<Answered> {
        let found = self.run(|conn, _| {
            in_tx(conn, |db| {
                let Some(row) = db.query_opt(LOCK, &[&id])? else {
                    return Ok(None);
                };
                let open: bool = row.get(0);
                let data: String = row.get(1);
                if open {
                    let item = with_answer(
                        serde_json::from_str(&data)
                            .map_err(|e| crate::Error::Corrupt(format!("inbox item {id}: {e}")))?,
                        answer,
                    );
                    db.execute(ANSWER, &[&id, &json(&item)])?;
                    Ok(Some((true, json(&item))))
                } else {
                    Ok(Some((false, data)))
                }
            })
        })?;
        Ok(match found {
            None => Answered::NotFound,
            Some((true, d)) => Answered::Now(item_of(id, &d)?),
            Some((false, d)) => Answered::Already(item_of(id, &d)?),
        })
    }
}
