//! The progress records, as `baton progress` reads and clears them: each
//! repository's (the task that moved last there) and each task's stage
//! record (the one a task deleted and created again continues from,
//! `create.rs`). The engine writes both as tasks move (`Engine::commit`).

use super::Engine;
use crate::error::Result;
use baton_core::progress::Progress;

impl Engine {
    /// The record of `repository`, or every repository's.
    pub fn repository_progress(&self, repository: Option<&str>) -> Result<Vec<Progress>> {
        Ok(self.store.progress(repository)?)
    }

    /// The stage records of `repository`'s tasks, or of every
    /// repository's (by repository, then task).
    pub fn task_stages(&self, repository: Option<&str>) -> Result<Vec<Progress>> {
        Ok(self.store.task_stages(repository)?)
    }

    /// Task `task`'s stage record in `repository`.
    pub fn task_stage(&self, repository: &str, task: &str) -> Result<Option<Progress>> {
        Ok(self.store.task_stage(repository, task)?)
    }

    /// Deletes the records of `repository` and its tasks; whether there
    /// was any.
    pub fn clear_progress(&self, repository: &str) -> Result<bool> {
        Ok(self.store.clear_progress(repository)?)
    }

    /// Deletes task `task`'s stage record in `repository`; whether there
    /// was one.
    pub fn clear_task_stage(&self, repository: &str, task: &str) -> Result<bool> {
        Ok(self.store.clear_task_stage(repository, task)?)
    }
}
