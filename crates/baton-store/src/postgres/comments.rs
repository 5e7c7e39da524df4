//! [`CommentStore`] for PostgreSQL: the `comments` table.

use super::PgStore;
use super::conn::in_tx;
use crate::Result;
use crate::comments::{CommentStore, comment_of, json};
use baton_core::comment::{Comment, Delivered};

const ADD: &str =
    "INSERT INTO comments (id, target, created_at, delivered, data) VALUES ($1, $2, $3, FALSE, $4)";
const OF: &str = "SELECT id, data FROM comments WHERE target = $1 ORDER BY created_at, id";
const LOCK: &str =
    "SELECT data FROM comments WHERE id = $1 AND target = $2 AND NOT delivered FOR UPDATE";
const MARK: &str = "UPDATE comments SET delivered = TRUE, data = $2 WHERE id = $1";

impl CommentStore for PgStore {
    fn add_comment(&self, c: &Comment) -> Result<()> {
        self.run(|conn, _| {
            conn.db()
                .execute(ADD, &[&c.id, &c.target, &c.created_at.millis(), &json(c)])?;
            Ok(())
        })
    }

    fn comments(&self, target: &str) -> Result<Vec<Comment>> {
        let rows = self.run(|conn, _| Ok(conn.db().query(OF, &[&target])?))?;
        rows.iter()
            .map(|r| comment_of(r.get::<_, &str>(0), r.get::<_, &str>(1)))
            .collect()
    }

    fn deliver_comments(&self, target: &str, ids: &[String], d: &Delivered) -> Result<usize> {
        self.run(|conn, _| {
            in_tx(conn, |db| {
                let mut marked = 0;
                for id in ids {
                    let Some(row) = db.query_opt(LOCK, &[id, &target])? else {
                        continue;
                    };
                    let data: String = row.get(0);
                    let mut c: Comment = serde_json::from_str(&data)
                        .map_err(|e| crate::Error::Corrupt(format!("comment {id}: {e}")))?;
                    c.delivered = Some(d.clone());
                    marked += db.execute(MARK, &[id, &json(&c)])? as usize;
                }
                Ok(marked)
            })
        })
    }
}
