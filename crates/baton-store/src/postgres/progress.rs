//! [`ProgressStore`] for PostgreSQL: the `progress` (per repository) and
//! `task_stages` (per task) tables.

use super::PgStore;
use super::conn::in_tx;
use crate::Result;
use crate::progress::{ProgressStore, json, key, progress_of, stage_of};
use baton_core::progress::Progress;

const PUT: &str = "INSERT INTO progress (repository, updated_at, data) VALUES ($1, $2, $3)
     ON CONFLICT (repository) DO UPDATE SET updated_at = excluded.updated_at, data = excluded.data";
const PUT_STAGE: &str =
    "INSERT INTO task_stages (repository, task_id, updated_at, data) VALUES ($1, $2, $3, $4)
     ON CONFLICT (repository, task_id) DO UPDATE SET updated_at = excluded.updated_at, data = excluded.data";
const GET: &str = "SELECT repository, data FROM progress
     WHERE $1::text IS NULL OR repository = $1 ORDER BY repository";
const STAGES: &str = "SELECT repository, task_id, data FROM task_stages
     WHERE $1::text IS NULL OR repository = $1 ORDER BY repository, task_id";
const STAGE: &str = "SELECT data FROM task_stages WHERE repository = $1 AND task_id = $2";
const CLEAR: &str = "DELETE FROM progress WHERE repository = $1";
const CLEAR_STAGES: &str = "DELETE FROM task_stages WHERE repository = $1";
const CLEAR_STAGE: &str = "DELETE FROM task_stages WHERE repository = $1 AND task_id = $2";

impl ProgressStore for PgStore {
    fn put_progress(&self, p: &Progress) -> Result<()> {
        let data = json(p);
        let at = p.last_updated.millis();
        let repository = key(&p.repository);
        // Upserts: a retry after a lost connection writes the same rows.
        self.run(|conn, _| {
            in_tx(conn, |db| {
                db.execute(PUT, &[&repository, &at, &data])?;
                db.execute(PUT_STAGE, &[&repository, &p.task_id, &at, &data])?;
                Ok(())
            })
        })
    }

    fn put_task_stage(&self, p: &Progress) -> Result<()> {
        let data = json(p);
        let at = p.last_updated.millis();
        let repository = key(&p.repository);
        self.run(|conn, _| {
            conn.db()
                .execute(PUT_STAGE, &[&repository, &p.task_id, &at, &data])?;
            Ok(())
        })
    }

    fn progress(&self, repository: Option<&str>) -> Result<Vec<Progress>> {
        let repository = repository.map(key);
        let rows = self.run(|conn, _| Ok(conn.db().query(GET, &[&repository])?))?;
        rows.iter()
            .map(|r| progress_of(r.get::<_, &str>(0), r.get::<_, &str>(1)))
            .collect()
    }

    fn task_stages(&self, repository: Option<&str>) -> Result<Vec<Progress>> {
        let repository = repository.map(key);
        let rows = self.run(|conn, _| Ok(conn.db().query(STAGES, &[&repository])?))?;
        rows.iter()
            .map(|r| {
                stage_of(
                    r.get::<_, &str>(0),
                    r.get::<_, &str>(1),
                    r.get::<_, &str>(2),
                )
            })
            .collect()
    }

    fn task_stage(&self, repository: &str, task: &str) -> Result<Option<Progress>> {
        let k = key(repository);
        let row = self.run(|conn, _| Ok(conn.db().query_opt(STAGE, &[&k, &task])?))?;
        row.map(|r| stage_of(repository, task, r.get::<_, &str>(0)))
            .transpose()
    }

    fn clear_progress(&self, repository: &str) -> Result<bool> {
        let repository = key(repository);
        let n =
            self.run(|conn, _| {
                in_tx(conn, |db| {
                    Ok(db.execute(CLEAR, &[&repository])?
                        + db.execute(CLEAR_STAGES, &[&repository])?)
                })
            })?;
        Ok(n > 0)
    }

    fn clear_task_stage(&self, repository: &str, task: &str) -> Result<bool> {
        let repository = key(repository);
        let n = self.run(|conn, _| Ok(conn.db().execute(CLEAR_STAGE, &[&repository, &task])?))?;
        Ok(n == 1)
    }
}
