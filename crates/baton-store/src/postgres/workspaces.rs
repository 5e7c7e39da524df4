//! [`WorkspaceStore`] for PostgreSQL: the `workspaces` table.

use super::PgStore;
use super::conn::in_tx;
use crate::Result;
use crate::workspaces::{WorkspaceStore, json, keeping_created, workspace_of};
use baton_core::workspace::WorkspaceRecord;

const OLD: &str = "SELECT data FROM workspaces WHERE name = $1 FOR UPDATE";
const PUT: &str = "INSERT INTO workspaces (name, updated_at, data) VALUES ($1, $2, $3)
     ON CONFLICT (name) DO UPDATE SET updated_at = excluded.updated_at, data = excluded.data";
const ALL: &str = "SELECT name, data FROM workspaces ORDER BY name";
const DELETE: &str = "DELETE FROM workspaces WHERE name = $1";

impl WorkspaceStore for PgStore {
    fn put_workspace(&self, w: &WorkspaceRecord) -> Result<()> {
        self.run(|conn, _| {
            in_tx(conn, |db| {
                let old = db.query_opt(OLD, &[&w.name])?;
                let w = keeping_created(w, old.as_ref().map(|r| r.get::<_, &str>(0)));
                db.execute(PUT, &[&w.name, &w.updated_at.millis(), &json(&w)])?;
                Ok(())
            })
        })
    }

    fn workspaces(&self) -> Result<Vec<WorkspaceRecord>> {
        let rows = self.run(|conn, _| Ok(conn.db().query(ALL, &[])?))?;
        rows.iter()
            .map(|r| workspace_of(r.get::<_, &str>(0), r.get::<_, &str>(1)))
            .collect()
    }

    fn delete_workspace(&self, name: &str) -> Result<bool> {
        let n = self.run(|conn, _| Ok(conn.db().execute(DELETE, &[&name])?))?;
        Ok(n == 1)
    }
}
