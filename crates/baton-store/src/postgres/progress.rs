//! [`ProgressStore`] for PostgreSQL: the `progress` table.

use super::PgStore;
use crate::Result;
use crate::progress::{ProgressStore, json, progress_of};
use baton_core::progress::Progress;

const PUT: &str = "INSERT INTO progress (repository, updated_at, data) VALUES ($1, $2, $3)
     ON CONFLICT (repository) DO UPDATE SET updated_at = excluded.updated_at, data = excluded.data";
const GET: &str = "SELECT repository, data FROM progress
     WHERE $1::text IS NULL OR repository = $1 ORDER BY repository";
const CLEAR: &str = "DELETE FROM progress WHERE repository = $1";

impl ProgressStore for PgStore {
    fn put_progress(&self, p: &Progress) -> Result<()> {
        let data = json(p);
        self.run(|conn, _| {
            conn.db()
                .execute(PUT, &[&p.repository, &p.last_updated.millis(), &data])?;
            Ok(())
        })
    }

    fn progress(&self, repository: Option<&str>) -> Result<Vec<Progress>> {
        let rows = self.run(|conn, _| Ok(conn.db().query(GET, &[&repository])?))?;
        rows.iter()
            .map(|r| progress_of(r.get::<_, &str>(0), r.get::<_, &str>(1)))
            .collect()
    }

    fn clear_progress(&self, repository: &str) -> Result<bool> {
        let n = self.run(|conn, _| Ok(conn.db().execute(CLEAR, &[&repository])?))?;
        Ok(n == 1)
    }
}
