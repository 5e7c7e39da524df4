//! A project: a folder with `.baton/`, found by walking up like git does.

use crate::config::Config;
use crate::error::{Error, Result};
use baton_core::TaskId;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone)]
pub struct Project {
    pub root: PathBuf,
    pub config: Config,
}

impl Project {
    /// Finds the project containing `start` (or `start` itself).
    pub fn discover(start: &Path) -> Result<Project> {
        let start = std::path::absolute(start)?;
        let mut dir = Some(start.as_path());
        while let Some(d) = dir {
            if d.join(".baton").is_dir() {
                return Project::open(d);
            }
            dir = d.parent();
        }
        Err(Error::bad_input(format!(
            "no baton project in {} or any parent folder",
            start.display()
        ))
        .hint("run `baton init` in the repository first, or pass --project DIR"))
    }

    pub fn open(root: &Path) -> Result<Project> {
        let root = std::path::absolute(root)?;
        let cfg_path = root.join(".baton/config.toml");
        let config = match fs_err::read_to_string(&cfg_path) {
            Ok(src) => Config::parse(&src, ".baton/config.toml")?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Config::default(),
            Err(e) => return Err(Error::op(e.to_string())),
        };
        Ok(Project { root, config })
    }

    pub fn name(&self) -> String {
        self.root
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "project".into())
    }
    pub fn baton_dir(&self) -> PathBuf {
        self.root.join(".baton")
    }
    pub fn db_path(&self) -> PathBuf {
        self.baton_dir().join("baton.db")
    }
    pub fn workflows_dir(&self) -> PathBuf {
        self.baton_dir().join("workflows")
    }
    pub fn tasks_dir(&self) -> PathBuf {
        self.baton_dir().join("tasks")
    }
    pub fn task_dir(&self, id: &TaskId) -> PathBuf {
        self.tasks_dir().join(id.as_str())
    }
    /// Where the session logs are rendered (`<id>.md`).
    pub fn sessions_dir(&self) -> PathBuf {
        self.baton_dir().join("sessions")
    }
    pub fn current_file(&self) -> PathBuf {
        self.tasks_dir().join("current")
    }

    /// The task `.baton/tasks/current` points to.
    pub fn current_task(&self) -> Option<TaskId> {
        let s = fs_err::read_to_string(self.current_file()).ok()?;
        TaskId::parse(s.trim()).ok()
    }

    /// The task `.baton/tasks/current` points to, `None` when there is no
    /// pointer; a pointer that is not a valid task id (edited by hand, or
    /// damaged) is an error naming what it holds, never a path.
    pub fn current_task_checked(&self) -> Result<Option<TaskId>> {
        let bytes = match std::fs::read(self.current_file()) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::op(format!(".baton/tasks/current: {e}"))),
        };
        let text = String::from_utf8_lossy(&bytes);
        TaskId::parse(text.trim()).map(Some).map_err(|e| {
            Error::bad_input(format!(
                "the current-task pointer .baton/tasks/current: {e}"
            ))
            .hint("name a task id (`baton ls --all` lists them), or delete .baton/tasks/current")
        })
    }
}
