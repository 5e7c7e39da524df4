//! Where the progress records of repositories are kept (one row per
//! repository, `baton_core::progress::Progress` as JSON). They are a
//! projection of the tasks, written as a task moves from stage to stage
//! without a sync of their own (they reach the disk with the next durable
//! commit), and they outlive the tasks.

use crate::Result;
use baton_core::progress::Progress;

/// The progress records' part of a store; both backends implement it.
pub trait ProgressStore: Send + Sync {
    /// Writes `p` as its repository's record.
    fn put_progress(&self, p: &Progress) -> Result<()>;
    /// The record of `repository`, or every record (by repository).
    fn progress(&self, repository: Option<&str>) -> Result<Vec<Progress>>;
    /// Deletes the record of `repository`; whether there was one.
    fn clear_progress(&self, repository: &str) -> Result<bool>;
}

pub(crate) fn progress_of(repository: &str, json: &str) -> Result<Progress> {
    serde_json::from_str(json)
        .map_err(|e| crate::Error::Corrupt(format!("the progress record of {repository}: {e}")))
}

pub(crate) fn json(p: &Progress) -> String {
    serde_json::to_string(p).expect("a progress record is JSON")
}
