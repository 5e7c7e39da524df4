//! [`WorkspaceStore`] for SQLite: the `workspaces` table.

use super::SqliteStore;
use crate::Result;
use crate::workspaces::{WorkspaceStore, json, keeping_created, workspace_of};
use baton_core::workspace::WorkspaceRecord;
use rusqlite::{OptionalExtension, TransactionBehavior, params};

impl WorkspaceStore for SqliteStore {
    fn put_workspace(&self, w: &WorkspaceRecord) -> Result<()> {
        let mut conn = self.conn();
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let old: Option<String> = tx
            .query_row(
                "SELECT data FROM workspaces WHERE name = ?1",
                [&w.name],
                |r| r.get(0),
            )
            .optional()?;
        let w = keeping_created(w, old.as_deref());
        tx.execute(
            "INSERT INTO workspaces (name, updated_at, data) VALUES (?1, ?2, ?3)
             ON CONFLICT (name) DO UPDATE SET updated_at = excluded.updated_at, data = excluded.data",
            params![w.name, w.updated_at.millis(), json(&w)],
        )?;
        tx.commit()?;
        Ok(())
    }

    fn workspaces(&self) -> Result<Vec<WorkspaceRecord>> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached("SELECT name, data FROM workspaces ORDER BY name")?;
        let rows = stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))?;
        rows.map(|row| {
            let (name, data) = row?;
            workspace_of(&name, &data)
        })
        .collect()
    }

    fn delete_workspace(&self, name: &str) -> Result<bool> {
        Ok(self
            .conn()
            .prepare_cached("DELETE FROM workspaces WHERE name = ?1")?
            .execute([name])?
            == 1)
    }
}
