//! Running a task in the background: `baton resume ID` started in its own
//! process group, with its output in the task folder, taking the lease over
//! from this process (`baton run --detach`, and each turn of an agent
//! instance).

use super::Engine;
use crate::error::{Error, Result};
use baton_core::TaskId;
use std::os::unix::process::CommandExt;
use std::time::{Duration, Instant};

impl Engine {
    /// Starts `baton resume ID --takeover-from <this pid>` in the
    /// background and returns its pid once it holds the task's lease. The
    /// task must have been created by this process (`RunOptions::create_only`).
    pub fn detach(&self, id: &TaskId) -> Result<u32> {
        // Not waited for: this process (`run --detach`, an agent turn)
        // returns at once, unless it keeps its background runs.
        let child = self.detach_child(id)?;
        let pid = child.id();
        if let Some(keep) = &self.background {
            keep(child);
        }
        Ok(pid)
    }

    /// [`Engine::detach`], with the background process's handle, for a
    /// caller that outlives it (`baton serve` reaps it, and stops it on
    /// shutdown).
    pub fn detach_child(&self, id: &TaskId) -> Result<std::process::Child> {
        let exe = std::env::current_exe()?;
        let dir = self.project.task_dir(id);
        fs_err::create_dir_all(&dir)?;
        let log_path = dir.join("detached.log");
        let log = fs_err::File::create(&log_path)?;
        let mut child = std::process::Command::new(exe)
            .arg("--project")
            .arg(&self.project.root)
            .arg("resume")
            .arg(id.as_str())
            .arg("--takeover-from")
            .arg(std::process::id().to_string())
            .stdin(std::process::Stdio::null())
            .stdout(log.try_clone()?.into_parts().0)
            .stderr(log.into_parts().0)
            .process_group(0)
            .spawn()?;
        let see = format!("see {}", log_path.display());
        let until = Instant::now() + Duration::from_secs(30);
        loop {
            let snap = self.load(id)?;
            if snap
                .lease
                .as_ref()
                .is_some_and(|l| l.owner.pid == child.id())
            {
                return Ok(child);
            }
            if let Some(status) = child.try_wait()? {
                return Err(Error::op(format!(
                    "the background run of {id} ended at once ({status})"
                ))
                .hint(see));
            }
            if Instant::now() > until {
                return Err(Error::op(format!(
                    "the background run of {id} did not start within 30s"
                ))
                .hint(see));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}
