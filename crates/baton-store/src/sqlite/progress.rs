//! [`ProgressStore`] for SQLite: the `progress` (per repository) and
//! `task_stages` (per task) tables, written with `synchronous=NORMAL` (in
//! the WAL; synced by the next FULL commit).

use super::SqliteStore;
use crate::Result;
use crate::progress::{ProgressStore, json, key, progress_of, stage_of};
use baton_core::progress::Progress;
use rusqlite::{Connection, OptionalExtension, params};

const PUT_REPOSITORY: &str =
    "INSERT INTO progress (repository, updated_at, data) VALUES (?1, ?2, ?3)
     ON CONFLICT (repository) DO UPDATE SET updated_at = excluded.updated_at, data = excluded.data";
const PUT_STAGE: &str =
    "INSERT INTO task_stages (repository, task_id, updated_at, data) VALUES (?1, ?2, ?3, ?4)
     ON CONFLICT (repository, task_id) DO UPDATE SET updated_at = excluded.updated_at, data = excluded.data";

impl SqliteStore {
    /// Runs `write` in one transaction with `synchronous=NORMAL`: a
    /// projection, synced by the next FULL commit.
    fn relaxed(&self, write: impl FnOnce(&Connection) -> Result<()>) -> Result<()> {
        let conn = self.conn();
        let relax = self.sync == super::Synchronous::Full;
        if relax {
            conn.execute_batch("PRAGMA synchronous=NORMAL")?;
        }
        let written = (|| {
            let tx = conn.unchecked_transaction()?;
            write(&tx)?;
            tx.commit()?;
            Ok(())
        })();
        if relax {
            conn.execute_batch("PRAGMA synchronous=FULL")?;
        }
        written
    }
}

fn put_stage(conn: &Connection, p: &Progress, data: &str) -> Result<()> {
    conn.prepare_cached(PUT_STAGE)?.execute(params![
        key(&p.repository),
        p.task_id,
        p.last_updated.millis(),
        data
    ])?;
    Ok(())
}

impl ProgressStore for SqliteStore {
    fn put_progress(&self, p: &Progress) -> Result<()> {
        let data = json(p);
        self.relaxed(|conn| {
            conn.prepare_cached(PUT_REPOSITORY)?.execute(params![
                key(&p.repository),
                p.last_updated.millis(),
                data
            ])?;
            put_stage(conn, p, &data)
        })
    }

    fn put_task_stage(&self, p: &Progress) -> Result<()> {
        let data = json(p);
        self.relaxed(|conn| put_stage(conn, p, &data))
    }

    fn progress(&self, repository: Option<&str>) -> Result<Vec<Progress>> {
        let repository = repository.map(key);
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

    fn task_stages(&self, repository: Option<&str>) -> Result<Vec<Progress>> {
        let repository = repository.map(key);
        let conn = self.conn();
        let mut stmt = conn.prepare_cached(
            "SELECT repository, task_id, data FROM task_stages WHERE ?1 IS NULL OR repository = ?1
             ORDER BY repository, task_id",
        )?;
        let rows = stmt.query_map([repository], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
            ))
        })?;
        rows.map(|row| {
            let (repo, task, data) = row?;
            stage_of(&repo, &task, &data)
        })
        .collect()
    }

    fn task_stage(&self, repository: &str, task: &str) -> Result<Option<Progress>> {
        let conn = self.conn();
        let data: Option<String> = conn
            .prepare_cached("SELECT data FROM task_stages WHERE repository = ?1 AND task_id = ?2")?
            .query_row([key(repository).as_str(), task], |r| r.get(0))
            .optional()?;
        data.map(|d| stage_of(repository, task, &d)).transpose()
    }

    fn clear_progress(&self, repository: &str) -> Result<bool> {
        let repository = key(repository);
        let conn = self.conn();
        let tx = conn.unchecked_transaction()?;
        let n = tx
            .prepare_cached("DELETE FROM progress WHERE repository = ?1")?
            .execute([&repository])?
            + tx.prepare_cached("DELETE FROM task_stages WHERE repository = ?1")?
                .execute([&repository])?;
        tx.commit()?;
        Ok(n > 0)
    }

    fn clear_task_stage(&self, repository: &str, task: &str) -> Result<bool> {
        let conn = self.conn();
        Ok(conn
            .prepare_cached("DELETE FROM task_stages WHERE repository = ?1 AND task_id = ?2")?
            .execute([key(repository).as_str(), task])?
            == 1)
    }
}

#[cfg(test)]
mod tests {
    use super::super::{MIGRATIONS, Synchronous};
    use super::*;

    /// A store from before tasks had stage records: each repository's
    /// record becomes its task's, so a task deleted before the upgrade
    /// still continues when it is created again after it.
    #[test]
    fn an_upgraded_store_gives_each_repositorys_task_its_stage_record() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("old.db");
        let conn = Connection::open(&path).unwrap();
        for m in &MIGRATIONS[..9] {
            conn.execute_batch(m).unwrap();
        }
        conn.execute_batch(
            r#"PRAGMA user_version = 9;
             INSERT INTO progress VALUES ('acme/app', 2, '{"repository":"acme/app","branch":null,"task_id":"t1","workflow":"build","status":"failed","stage":"implement","started_at":1,"last_updated":2,"phases":[]}');"#,
        )
        .unwrap();
        drop(conn);
        let s = SqliteStore::open(&path, Synchronous::Full).unwrap();
        let p = s
            .task_stage("acme/app", "t1")
            .unwrap()
            .expect("carried over");
        assert_eq!(p.stage.as_deref(), Some("implement"));
        assert!(p.labels.is_empty());
        assert_eq!(s.task_stages(None).unwrap().len(), 1);
    }
}
