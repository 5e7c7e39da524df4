//! `baton session query`: the sessions the index (`.baton/index.toon`,
//! `crate::render::SessionIndex`) lists, matching a query.

use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::render::SessionIndex;
use baton_core::session_log::index::{IndexRow, Query};

impl Engine {
    pub fn session_index(&self) -> SessionIndex {
        SessionIndex::of(&self.project.baton_dir())
    }

    /// The sessions matching `q`, from the index (rebuilt first when it
    /// cannot be read); running and crashed tasks' logs too, settled
    /// from the store first (`settle_session_logs`).
    pub fn query_sessions(&self, q: &Query) -> Result<Vec<IndexRow>> {
        let rows = self.index_rows()?;
        let said: std::collections::HashMap<&str, &str> = rows
            .iter()
            .map(|r| (r.id.as_str(), r.status.as_str()))
            .collect();
        let settled = self.settle_session_logs(|id| said.get(id).map(|s| s.to_string()))?;
        let rows = match settled.is_empty() {
            true => rows,
            false => self.index_rows()?,
        };
        Ok(rows.into_iter().filter(|r| q.matches(r)).collect())
    }

    /// The index's rows, rebuilt first when it cannot be read.
    fn index_rows(&self) -> Result<Vec<IndexRow>> {
        let idx = self.session_index();
        let rows = match idx.read() {
            Some(r) => r,
            None => {
                let n = idx.rebuild().map_err(|e| {
                    Error::op(format!("cannot rebuild {}: {e}", idx.path().display()))
                })?;
                self.observer().info(&format!(
                    "rebuilt {} from {n} session logs",
                    idx.path().display()
                ));
                idx.read().unwrap_or_default()
            }
        };
        Ok(rows)
    }
}
