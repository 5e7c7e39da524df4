//! [`CapabilityStore`] for PostgreSQL: the `capabilities` table.

use super::PgStore;
use crate::Result;
use crate::capabilities::{CapabilityStore, Revoke, json, scope_of};
use baton_core::Timestamp;
use baton_core::token::Scope;

const GRANT: &str =
    "INSERT INTO capabilities (digest, task_id, phase, instance_id, created_at, scope)
     VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (digest) DO NOTHING";
const FIND: &str = "SELECT scope FROM capabilities WHERE digest = $1";
const REVOKE_PHASE: &str = "DELETE FROM capabilities WHERE task_id = $1 AND phase = $2";
const REVOKE_TASK: &str = "DELETE FROM capabilities WHERE task_id = $1";
const REVOKE_INSTANCE: &str = "DELETE FROM capabilities WHERE instance_id = $1";

impl CapabilityStore for PgStore {
    fn grant_capability(&self, digest: &str, scope: &Scope, at: Timestamp) -> Result<()> {
        let task = scope.task.as_ref().map(|t| t.as_str().to_string());
        let instance = scope.instance.as_ref().map(|i| i.as_str().to_string());
        let data = json(scope);
        // A retry after a lost connection finds its own row: same digest.
        self.run(|conn, _| {
            conn.db().execute(
                GRANT,
                &[&digest, &task, &scope.phase, &instance, &at.millis(), &data],
            )?;
            Ok(())
        })
    }

    fn capability(&self, digest: &str) -> Result<Option<Scope>> {
        let rows = self.run(|conn, _| Ok(conn.db().query(FIND, &[&digest])?))?;
        rows.first()
            .map(|r| scope_of(digest, r.get::<_, &str>(0)))
            .transpose()
    }

    fn revoke_capabilities(&self, which: Revoke<'_>) -> Result<usize> {
        let n = self.run(|conn, _| {
            Ok(match which {
                Revoke::Phase(task, phase) => {
                    conn.db().execute(REVOKE_PHASE, &[&task.as_str(), &phase])?
                }
                Revoke::Task(task) => conn.db().execute(REVOKE_TASK, &[&task.as_str()])?,
                Revoke::Instance(id) => conn.db().execute(REVOKE_INSTANCE, &[&id.as_str()])?,
            })
        })?;
        Ok(n as usize)
    }
}
