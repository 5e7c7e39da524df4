//! [`PlayStore`] for SQLite: the `plays` table.

use super::SqliteStore;
use crate::Result;
use crate::plays::{PlayStore, json, play_of};
use baton_core::play::Play;
use rusqlite::params;

impl PlayStore for SqliteStore {
    fn put_play(&self, p: &Play) -> Result<()> {
        self.conn()
            .prepare_cached(
                "INSERT INTO plays (name, updated_at, data) VALUES (?1, ?2, ?3)
                 ON CONFLICT (name) DO UPDATE SET updated_at = excluded.updated_at, data = excluded.data",
            )?
            .execute(params![p.name, p.updated_at.millis(), json(p)])?;
        Ok(())
    }

    fn plays(&self) -> Result<Vec<Play>> {
        let conn = self.conn();
        let mut stmt =
            conn.prepare_cached("SELECT name, data FROM plays ORDER BY updated_at DESC, name")?;
        let rows = stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))?;
        rows.map(|row| {
            let (name, data) = row?;
            play_of(&name, &data)
        })
        .collect()
    }
}
