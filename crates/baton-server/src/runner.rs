//! Task runs `baton serve` starts as processes of their own (`baton resume
//! ID …`), so a task that crashes its runner never takes the server down:
//! the supervisor's restarts, the API's resumes, and the tasks a delivery
//! passed (their lease taken over from the server). On shutdown each gets
//! SIGTERM, which interrupts it at its phase, journaled, its lease
//! released.

use baton_core::TaskId;
use baton_engine::Engine;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;

/// `baton resume ID ARGS…` in its own process group.
pub fn spawn_resume(eng: &Engine, id: &TaskId, args: &[&str]) -> std::io::Result<Child> {
    let mut argv = vec!["resume", id.as_str()];
    argv.extend_from_slice(args);
    spawn_baton(eng, id, &argv)
}

/// `baton ARGV…` for task `id`, in its own process group, its output
/// appended to the task's `serve.log`.
pub fn spawn_baton(eng: &Engine, id: &TaskId, argv: &[&str]) -> std::io::Result<Child> {
    let dir = eng.project.task_dir(id);
    std::fs::create_dir_all(&dir)?;
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join("serve.log"))?;
    Command::new(std::env::current_exe()?)
        .arg("--project")
        .arg(&eng.project.root)
        .args(argv)
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .process_group(0)
        .spawn()
}

/// SIGTERM, so the run stops at its phase and releases its lease.
pub fn terminate(child: &Child) {
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    );
}

/// The runs the API started.
#[derive(Default)]
pub struct Runs {
    children: Mutex<Vec<Child>>,
}

impl Runs {
    /// Starts `baton resume ID ARGS…`; returns its pid.
    pub fn start(
        &self,
        eng: &Engine,
        id: &TaskId,
        args: &[&str],
    ) -> Result<u32, crate::views::ApiError> {
        let mut argv = vec!["resume", id.as_str()];
        argv.extend_from_slice(args);
        self.start_baton(eng, id, &argv)
    }

    /// Starts `baton ARGV…` for task `id`; returns its pid.
    pub fn start_baton(
        &self,
        eng: &Engine,
        id: &TaskId,
        argv: &[&str],
    ) -> Result<u32, crate::views::ApiError> {
        let child = spawn_baton(eng, id, argv).map_err(|e| {
            crate::views::ApiError::internal(format!("cannot start baton {}: {e}", argv.join(" ")))
        })?;
        let pid = child.id();
        let mut all = self.children.lock().unwrap_or_else(|p| p.into_inner());
        all.retain_mut(|c| !matches!(c.try_wait(), Ok(Some(_))));
        all.push(child);
        Ok(pid)
    }

    /// Keeps a run started elsewhere (`Engine::detach_child`).
    pub fn adopt(&self, child: Child) {
        let mut all = self.children.lock().unwrap_or_else(|p| p.into_inner());
        all.retain_mut(|c| !matches!(c.try_wait(), Ok(Some(_))));
        all.push(child);
    }

    /// Stops them all (SIGTERM) and waits.
    pub fn finish(&self) {
        let mut all = std::mem::take(&mut *self.children.lock().unwrap_or_else(|p| p.into_inner()));
        for c in &all {
            terminate(c);
        }
        for c in &mut all {
            let _ = c.wait();
        }
    }
}
