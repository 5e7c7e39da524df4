//! [`LinkStore`] for PostgreSQL: the `task_links` table.

use super::PgStore;
use super::conn::in_tx;
use crate::Result;
use crate::links::{LinkStart, LinkStore, json, link_of};
use baton_core::link::{Link, Started};

const ADD: &str =
    "INSERT INTO task_links (id, created_at, started, data) VALUES ($1, $2, FALSE, $3)
     ON CONFLICT (id) DO NOTHING";
const ALL: &str =
    "SELECT id, data FROM task_links WHERE NOT started OR NOT $1 ORDER BY created_at, id";
const LOCK: &str = "SELECT data FROM task_links WHERE id = $1 AND NOT started FOR UPDATE";
const START: &str = "UPDATE task_links SET started = TRUE, data = $2 WHERE id = $1";

impl LinkStore for PgStore {
    fn add_link(&self, link: &Link) -> Result<bool> {
        let n = self.run(|conn, _| {
            Ok(conn
                .db()
                .execute(ADD, &[&link.id, &link.created_at.millis(), &json(link)])?)
        })?;
        Ok(n == 1)
    }

    fn links(&self, pending_only: bool) -> Result<Vec<Link>> {
        let rows = self.run(|conn, _| Ok(conn.db().query(ALL, &[&pending_only])?))?;
        rows.iter()
            .map(|r| link_of(r.get::<_, &str>(0), r.get::<_, &str>(1)))
            .collect()
    }

    fn start_link(&self, id: &str, started: &Started) -> Result<LinkStart> {
        let data = self.run(|conn, _| {
            in_tx(conn, |db| {
                let Some(row) = db.query_opt(LOCK, &[&id])? else {
                    return Ok(None);
                };
                let data: String = row.get(0);
                let mut link: Link = serde_json::from_str(&data)
                    .map_err(|e| crate::Error::Corrupt(format!("link {id}: {e}")))?;
                link.started = Some(started.clone());
                let text = json(&link);
                db.execute(START, &[&id, &text])?;
                Ok(Some(text))
            })
        })?;
        match data {
            Some(text) => Ok(LinkStart::Now(Box::new(link_of(id, &text)?))),
            None => Ok(LinkStart::Already),
        }
    }
}
