//! [`ProgressStore`] for SQLite: the `progress` table, written with
//! `synchronous=NORMAL` (in the WAL; synced by the next FULL commit).

use super::SqliteStore;
use crate::Result;
use crate::progress::{ProgressStore, json, progress_of};
use baton_core::progress::Progress;
use rusqlite::params;

impl ProgressStore for SqliteStore {
    fn put_progress(&self, p: &Progress) -> Result<()> {
        let conn = self.conn();
        let relax = self.sync == super::Synchronous::Full;
        if relax {
            conn.execute_batch("PRAGMA synchronous=NORMAL")?;
        }
        let written = conn
            .prepare_cached(
                "INSERT INTO progress (repository, updated_at, data) VALUES (?1, ?2, ?3)
                 ON CONFLICT (repository) DO UPDATE SET updated_at = excluded.updated_at, data = excluded.data",
            )
            .and_then(|mut s| s.execute(params![p.repository, p.last_updated.millis(), json(p)]));
        if relax {
            conn.execute_batch("PRAGMA synchronous=FULL")?;
        }
        written?;
        Ok(())
    }

    fn progress(&self, repository: Option<&str>) -> Result<Vec<Progress>> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached(
            "SELECT repository, data FROM progress WHERE ?1 IS NULL OR repository = ?1 ORDER BY repository",
        )?;
        let rows = stmt.query_map([repository], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
        })?;
        rows.map(|row| {
            let (repo, data) = row?;
            progress_of(&repo, &data)
        })
        .collect()
    }

    fn clear_progress(&self, repository: &str) -> Result<bool> {
        let conn = self.conn();
        Ok(conn
            .prepare_cached("DELETE FROM progress WHERE repository = ?1")?
            .execute([repository])?
            == 1)
    }
}
