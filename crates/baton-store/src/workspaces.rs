//! Where the records of workspaces by agent role are kept (one row per
//! workspace, `baton_core::workspace::WorkspaceRecord` as JSON). A record
//! outlives the tasks that worked in the workspace; it goes only with
//! `baton workspace rm`.

use crate::Result;
use baton_core::workspace::WorkspaceRecord;

/// The workspace records' part of a store; both backends implement it.
pub trait WorkspaceStore: Send + Sync {
    /// Writes `w` as its workspace's record (the first `created_at` kept).
    fn put_workspace(&self, w: &WorkspaceRecord) -> Result<()>;
    /// Every record, by name.
    fn workspaces(&self) -> Result<Vec<WorkspaceRecord>>;
    /// Deletes the record of `name`; whether there was one.
    fn delete_workspace(&self, name: &str) -> Result<bool>;
}

pub(crate) fn workspace_of(name: &str, json: &str) -> Result<WorkspaceRecord> {
    serde_json::from_str(json)
        .map_err(|e| crate::Error::Corrupt(format!("the record of workspace {name}: {e}")))
}

pub(crate) fn json(w: &WorkspaceRecord) -> String {
    serde_json::to_string(w).expect("a workspace record is JSON")
}

/// `new`, keeping the creation time of the record it replaces.
pub(crate) fn keeping_created(new: &WorkspaceRecord, old: Option<&str>) -> WorkspaceRecord {
    let mut w = new.clone();
    if let Some(old) = old.and_then(|o| serde_json::from_str::<WorkspaceRecord>(o).ok()) {
        w.created_at = old.created_at;
    }
    w
}
