//! One attempt of a phase, from its start to its journaled end: started in
//! `phase/start.rs`, its process prepared by `phase/command.rs` (a `run`
//! command), `phase/prompt.rs` (an agent CLI) or `phase/instance.rs` (an
//! agent phase run as a coding agent instance), run and watched by
//! `phase/launch.rs` (held at the gate, journaled, an agent's stream read
//! as it is written), and its end judged and journaled in `phase/end.rs`.

use super::{Engine, Held, Outcome};
use crate::error::Result;
use baton_core::machine::{self, Failure, Input};
use baton_core::state::{PhaseState, PhaseStatus};
use baton_core::workflow::{self, PhaseKind};
use baton_core::{PhaseId, TaskId, TaskState};
use std::path::PathBuf;
use std::time::{Duration, Instant};

mod command;
mod end;
mod instance;
mod launch;
mod prompt;
pub use prompt::new_uuid;
mod start;
pub(crate) use start::{attempt_label, summary_file};

/// The largest argument (or environment value) baton passes to a phase
/// process. Linux refuses any single one over 128 KiB (E2BIG, "Argument
/// list too long"); failing below that with a clear message beats a spawn
/// error that repeats on every attempt.
pub(super) const MAX_ARG_BYTES: usize = 100_000;

/// An attempt of a phase, started: which one, where its files go and what
/// its process is given.
struct Attempt {
    id: TaskId,
    phase: PhaseId,
    /// The phase's place in the task.
    idx: usize,
    def: workflow::Phase,
    /// The phase as it was before this attempt started.
    ps: PhaseState,
    attempt: u32,
    /// Names the attempt's logs, prompts and git refs (`NN-phase.iI.aA`).
    label: String,
    /// The task's folder.
    dir: PathBuf,
    started: Instant,
    brief_text: String,
    /// A person's comments on the task's work that this attempt carries
    /// (in its brief and its agent's prompt): delivered once it passes.
    comments: Vec<baton_core::comment::Comment>,
    summary_file: PathBuf,
    stdout: PathBuf,
    stderr: PathBuf,
    /// The `BATON_*` variables each of its processes gets.
    env: Vec<(String, String)>,
    timeout: Option<Duration>,
}

/// Where `phase` is in the held task (its index in the state) and its
/// definition.
fn place_of(held: &Held, phase: &PhaseId) -> (usize, workflow::Phase) {
    let idx = held
        .state
        .phases
        .iter()
        .position(|p| &p.id == phase)
        .expect("phase of state");
    let def = held
        .wf
        .phase(phase.as_str())
        .expect("phase of workflow")
        .clone();
    (idx, def)
}

/// The value of template variable `v` in attempt `at`.
fn attempt_var(state: &TaskState, at: &Attempt, v: &str) -> Option<String> {
    match v {
        "brief" => Some(at.brief_text.clone()),
        _ => machine::value_of(state, &at.phase, v),
    }
}

impl Engine {
    /// Runs one attempt of a phase. `Some(outcome)` ends the drive.
    pub(super) fn run_phase(&self, held: &mut Held, phase: &PhaseId) -> Result<Option<Outcome>> {
        let at = self.start_attempt(held, phase)?;
        // The process: a command, or an agent CLI (whose run may be
        // followed by a second one, when its session could not be continued).
        let launched = match &at.def.kind {
            PhaseKind::Run { command } => self.launch_command(held, &at, command)?,
            PhaseKind::Prompt { template: t, .. } => match &at.def.instance {
                Some(spec) => self.launch_instance(held, &at, t, spec)?,
                None => self.launch_prompt(held, &at, t)?,
            },
            PhaseKind::Wait(_) => unreachable!("wait phases are not started"),
        };
        // What baton put in the working folder for the run (the brief in a
        // memory file, its server in droid's MCP file) leaves when the
        // phase ends, before its end is snapshotted or committed.
        baton_agents::run_files::undo(&held.ws.cwd)?;
        // Its agent's MCP capability ends with its run.
        if matches!(at.def.kind, PhaseKind::Prompt { .. }) && self.mcp_endpoint().is_some() {
            self.revoke_phase_capabilities(&at.id, at.phase.as_str());
        }
        match launched {
            Some((launched, l)) => self.end_attempt(held, &at, launched, &l),
            // It failed before its process could start (journaled).
            None => Ok(None),
        }
    }

    /// Finishes the accounting of `phase`'s attempt, whose process had
    /// exited when its runner stopped (its exit is journaled): its end is
    /// judged, as the runner would have, from the exit and the files the
    /// attempt left (its output, summary, an agent's stream), and its work
    /// published. The phase does not run again.
    pub(super) fn finish_exited(
        &self,
        held: &mut Held,
        phase: &PhaseId,
    ) -> Result<Option<Outcome>> {
        let (idx, def) = place_of(held, phase);
        let ps = held.state.phases[idx].clone();
        let exit = ps.exited.expect("an exited attempt");
        let label = start::attempt_label(idx, phase.as_str(), ps.iteration, ps.attempt);
        let dir = self.project.task_dir(&held.state.task_id);
        let stdout = dir.join("logs").join(format!("{label}.out"));
        let stderr = dir.join("logs").join(format!("{label}.err"));
        // A built-in CLI's run is judged from its stream, read again from
        // the file it was written to.
        let cli = match &def.kind {
            PhaseKind::Prompt { .. } => ps
                .agent_runs
                .last()
                .filter(|r| r.attempt == ps.attempt)
                .and_then(|r| baton_agents::by_name(&r.session.cli)),
            _ => None,
        };
        let events = cli.map_or_else(Vec::new, |c| {
            baton_agents::tail::Tail::new(c, &stdout, Vec::new()).finish()
        });
        let at = Attempt {
            id: held.state.task_id.clone(),
            phase: phase.clone(),
            idx,
            timeout: def.timeout_ms.map(Duration::from_millis),
            def,
            attempt: ps.attempt,
            ps,
            summary_file: start::summary_file(&dir, &label),
            label,
            dir,
            started: Instant::now(),
            brief_text: String::new(),
            // Comments it carried and that were not marked delivered go
            // with the next attempt (more than once, never lost).
            comments: Vec::new(),
            stdout: stdout.clone(),
            stderr: stderr.clone(),
            env: Vec::new(),
        };
        let l = launch::Launch {
            program: String::new(),
            args: Vec::new(),
            env: Vec::new(),
            stdout,
            stderr,
            cli,
            session: None,
            agent: String::new(),
            start: baton_core::state::SessionStart::New,
            forks: None,
        };
        let status = std::os::unix::process::ExitStatusExt::from_raw(exit.wait_status());
        let launched = launch::Launched {
            waited: Ok(baton_sys::process::Waited::Exited(status)),
            events,
        };
        self.observer.info(&format!(
            "phase {phase}: its process had ended before its runner stopped; judging its end from what it left"
        ));
        self.end_attempt(held, &at, launched, &l)
    }

    /// Fails the started attempt of `phase` before its process could be
    /// spawned (what it would be given is unusable).
    fn fail_unstarted<T>(
        &self,
        held: &mut Held,
        phase: &baton_core::PhaseId,
        started: std::time::Instant,
        message: String,
    ) -> Result<Option<T>> {
        let failure = Failure {
            message: message.clone(),
            exit_code: None,
            timed_out: false,
            stderr_tail: String::new(),
            files_changed: Vec::new(),
        };
        self.decide_commit(
            held,
            Input::Fail {
                phase: phase.clone(),
                failure,
            },
        )?;
        self.observer.phase_finished(
            &held.state.task_id,
            phase.as_str(),
            PhaseStatus::Failed,
            started.elapsed().as_millis() as i64,
            &message,
        );
        Ok(None)
    }
}
