//! [`CommentStore`] for SQLite: the `comments` table.

use super::SqliteStore;
use crate::Result;
use crate::comments::{CommentStore, comment_of, json};
use baton_core::comment::{Comment, Delivered};
use rusqlite::{TransactionBehavior, params};

impl CommentStore for SqliteStore {
    fn add_comment(&self, c: &Comment) -> Result<()> {
        self.conn().execute(
            "INSERT INTO comments (id, target, created_at, delivered, data) VALUES (?1, ?2, ?3, 0, ?4)",
            params![c.id, c.target, c.created_at.millis(), json(c)],
        )?;
        Ok(())
    }

    fn comments(&self, target: &str) -> Result<Vec<Comment>> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached(
            "SELECT id, data FROM comments WHERE target = ?1 ORDER BY created_at, id",
        )?;
        let rows = stmt.query_map([target], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
        })?;
        rows.map(|row| {
            let (id, data) = row?;
            comment_of(&id, &data)
        })
        .collect()
    }

    fn deliver_comments(&self, target: &str, ids: &[String], d: &Delivered) -> Result<usize> {
        let mut conn = self.conn();
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let mut marked = 0;
        for id in ids {
            let data: Option<String> = tx
                .query_row(
                    "SELECT data FROM comments WHERE id = ?1 AND target = ?2 AND delivered = 0",
                    params![id, target],
                    |r| r.get(0),
                )
                .ok();
            let Some(data) = data else { continue };
            let mut c = comment_of(id, &data)?;
            c.delivered = Some(d.clone());
            marked += tx.execute(
                "UPDATE comments SET delivered = 1, data = ?2 WHERE id = ?1",
                params![id, json(&c)],
            )?;
        }
        tx.commit()?;
        Ok(marked)
    }
}
