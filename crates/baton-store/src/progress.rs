//! Where progress records are kept (`baton_core::progress::Progress` as
//! JSON): one per task, keyed by its repository and id (`task_stages`),
//! which a task deleted and created again continues from; and one per
//! repository (`progress`), the play's record of the task that moved last
//! there. They are a projection of the tasks, written as a task moves
//! from stage to stage without a sync of their own (they reach the disk
//! with the next durable commit), and they outlive the tasks.

use crate::Result;
use baton_core::progress::Progress;

/// The progress records' part of a store; both backends implement it.
pub trait ProgressStore: Send + Sync {
    /// Writes `p` as its task's stage record and as its repository's
    /// record, in one transaction.
    fn put_progress(&self, p: &Progress) -> Result<()>;
    /// Writes `p` as its task's stage record only (a copy between stores).
    fn put_task_stage(&self, p: &Progress) -> Result<()>;
    /// The record of `repository`, or every repository's (by repository).
    fn progress(&self, repository: Option<&str>) -> Result<Vec<Progress>>;
    /// The stage records of `repository`'s tasks, or of every
    /// repository's (by repository, then task).
    fn task_stages(&self, repository: Option<&str>) -> Result<Vec<Progress>>;
    /// The stage record of task `task` in `repository`.
    fn task_stage(&self, repository: &str, task: &str) -> Result<Option<Progress>>;
    /// Deletes the record of `repository` and its tasks' stage records;
    /// whether there was any.
    fn clear_progress(&self, repository: &str) -> Result<bool>;
    /// Deletes the stage record of task `task` in `repository`; whether
    /// there was one.
    fn clear_task_stage(&self, repository: &str, task: &str) -> Result<bool>;
}

/// A repository's key in the store: GitHub's repository names have no
/// case (`Acme/App` is `acme/app`), so records written under one spelling
/// are found under any.
pub(crate) fn key(repository: &str) -> String {
    repository.to_ascii_lowercase()
}

pub(crate) fn progress_of(repository: &str, json: &str) -> Result<Progress> {
    serde_json::from_str(json)
        .map_err(|e| crate::Error::Corrupt(format!("the progress record of {repository}: {e}")))
}

pub(crate) fn stage_of(repository: &str, task: &str, json: &str) -> Result<Progress> {
    serde_json::from_str(json).map_err(|e| {
        crate::Error::Corrupt(format!(
            "the stage record of task {task} in {repository}: {e}"
        ))
    })
}

pub(crate) fn json(p: &Progress) -> String {
    serde_json::to_string(p).expect("a progress record is JSON")
}
