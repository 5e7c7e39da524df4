//! [`CapabilityStore`] for SQLite: the `capabilities` table.

use super::SqliteStore;
use crate::Result;
use crate::capabilities::{CapabilityStore, Revoke, json, scope_of};
use baton_core::Timestamp;
use baton_core::token::Scope;
use rusqlite::{OptionalExtension, params};

impl CapabilityStore for SqliteStore {
    fn grant_capability(&self, digest: &str, scope: &Scope, at: Timestamp) -> Result<()> {
        self.conn()
            .prepare_cached(
                "INSERT INTO capabilities (digest, task_id, phase, instance_id, created_at, scope)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )?
            .execute(params![
                digest,
                scope.task.as_ref().map(|t| t.as_str()),
                scope.phase,
                scope.instance.as_ref().map(|i| i.as_str()),
                at.millis(),
                json(scope)
            ])?;
        Ok(())
    }

    fn capability(&self, digest: &str) -> Result<Option<Scope>> {
        let found: Option<String> = self
            .conn()
            .prepare_cached("SELECT scope FROM capabilities WHERE digest = ?1")?
            .query_row([digest], |r| r.get(0))
            .optional()?;
        found.map(|j| scope_of(digest, &j)).transpose()
    }

    fn revoke_capabilities(&self, which: Revoke<'_>) -> Result<usize> {
        let conn = self.conn();
        let n = match which {
            Revoke::Phase(task, phase) => conn
                .prepare_cached("DELETE FROM capabilities WHERE task_id = ?1 AND phase = ?2")?
                .execute(params![task.as_str(), phase])?,
            Revoke::Task(task) => conn
                .prepare_cached("DELETE FROM capabilities WHERE task_id = ?1")?
                .execute([task.as_str()])?,
            Revoke::Instance(id) => conn
                .prepare_cached("DELETE FROM capabilities WHERE instance_id = ?1")?
                .execute([id.as_str()])?,
        };
        Ok(n)
    }
}
