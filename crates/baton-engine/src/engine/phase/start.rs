//! Where a phase is started: the attempt's git checkpoint, its `Start` in
//! the journal, its brief and files, and the environment its processes
//! get.

use super::Attempt;
use crate::engine::{Engine, Held};
use crate::error::Result;
use baton_core::machine::Input;
use baton_core::{PhaseId, brief, document};
use std::path::Path;
use std::time::Duration;

/// Names an attempt's logs, prompts, reports and git refs:
/// `NN-phase.iI.aA`.
pub(crate) fn attempt_label(idx: usize, phase: &str, iteration: u32, attempt: u32) -> String {
    let stem = document::output_file_name(idx, phase);
    format!("{}.i{iteration}.a{attempt}", stem.trim_end_matches(".md"))
}

/// Where an attempt's agent reports its summary (and, beside it, its
/// blocker and checkpoints): inside the task's folder, named by baton.
pub(crate) fn summary_file(task_dir: &Path, label: &str) -> std::path::PathBuf {
    task_dir.join("run").join(format!("{label}.summary"))
}

impl Engine {
    /// Starts the next attempt of `phase`: checkpoints the work tree,
    /// journals the start and prepares the attempt's files.
    pub(super) fn start_attempt(&self, held: &mut Held, phase: &PhaseId) -> Result<Attempt> {
        let id = held.state.task_id.clone();
        let (idx, def) = super::place_of(held, phase);
        let ps = held.state.phases[idx].clone();
        let attempt = ps.attempt + 1;
        let label = attempt_label(idx, phase.as_str(), ps.iteration, attempt);
        // What a crashed run left in the working folder (a brief, baton's
        // MCP server) never enters the snapshot (nor, later, a commit).
        let removed = baton_agents::run_files::undo(&held.ws.cwd)?;
        let just_snapshotted = std::mem::take(&mut held.just_snapshotted) && removed.is_empty();
        let checkpoint = held.ws.git.as_ref().and_then(|g| {
            match g.checkpoint(
                &format!("refs/baton/{id}/{label}/start"),
                &format!("baton: {id} {phase} attempt {attempt} start"),
                just_snapshotted,
            ) {
                Ok(cp) => Some(cp),
                Err(e) => {
                    self.observer
                        .info(&format!("warning: no git checkpoint for {phase}: {e}"));
                    None
                }
            }
        });
        self.crash_point("snapshot-taken", phase.as_str());
        self.decide_commit(
            held,
            Input::Start {
                phase: phase.clone(),
                checkpoint,
            },
        )?;
        // The files rendered for the phases before it are on disk before a
        // phase runs (a crash from here on finds them).
        held.rendered.finish_outputs(&self.project.task_dir(&id))?;
        self.observer
            .phase_started(&id, phase.as_str(), attempt, def.kind_name());
        let started = std::time::Instant::now();
        self.crash_point("before-spawn", phase.as_str());

        let dir = self.project.task_dir(&id);
        for sub in ["logs", "prompts", "run"] {
            fs_err::create_dir_all(dir.join(sub))?;
        }
        // What a person said of the work since an attempt last passed
        // goes with this one (an attempt that fails or crashes leaves it
        // for the next).
        let comments: Vec<_> = self
            .store
            .comments(&baton_core::comment::task_target(id.as_str()))?
            .into_iter()
            .filter(|c| c.delivered.is_none())
            .collect();
        let mut brief_text = brief::render(&held.state, phase.as_str());
        if !comments.is_empty() {
            brief_text.push('\n');
            brief_text.push_str(&baton_core::comment::section(&comments));
        }
        let brief_file = dir.join("brief.md");
        fs_err::write(&brief_file, &brief_text)?;
        let summary_file = summary_file(&dir, &label);
        let _ = std::fs::remove_file(&summary_file);
        let stdout = dir.join("logs").join(format!("{label}.out"));
        let stderr = dir.join("logs").join(format!("{label}.err"));
        let timeout = def.timeout_ms.map(Duration::from_millis);
        let mut at = Attempt {
            id,
            phase: phase.clone(),
            idx,
            def,
            ps,
            attempt,
            label,
            dir,
            started,
            brief_text,
            comments,
            summary_file,
            stdout,
            stderr,
            env: Vec::new(),
            timeout,
        };
        at.env = self.environment(held, &at, &brief_file);
        Ok(at)
    }

    /// The `BATON_*` variables of an attempt's processes.
    fn environment(&self, held: &Held, at: &Attempt, brief_file: &Path) -> Vec<(String, String)> {
        let Attempt {
            id,
            phase,
            ps,
            attempt,
            dir,
            summary_file,
            ..
        } = at;
        let mut env = vec![
            ("BATON_TASK_ID".into(), id.to_string()),
            ("BATON_PHASE".into(), phase.to_string()),
            ("BATON_ATTEMPT".into(), attempt.to_string()),
            ("BATON_ITERATION".into(), ps.iteration.to_string()),
            (
                "BATON_PROJECT".into(),
                self.project.root.display().to_string(),
            ),
            ("BATON_WORKTREE".into(), held.ws.cwd.display().to_string()),
            ("BATON_STATE_DIR".into(), dir.display().to_string()),
            (
                "BATON_SUMMARY_FILE".into(),
                summary_file.display().to_string(),
            ),
            ("BATON_BRIEF_FILE".into(), brief_file.display().to_string()),
        ];
        if let Some(i) = held.state.labels.get(crate::builtin::INSTANCE_LABEL) {
            env.push(("BATON_INSTANCE".into(), i.clone()));
            // A teammate baton started: its team's MCP identity.
            if let Some((team, name)) = self.team_member_of_instance(i) {
                env.push(("BATON_TEAM".into(), team));
                env.push(("BATON_TEAMMATE".into(), name));
            }
        }
        env
    }
}
