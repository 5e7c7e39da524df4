//! `baton session codify FILE --output .baton/workflows/NAME.toml`: the
//! draft of `baton_core::session_log::codify`, written only once it loads
//! as a workflow of this project; `--refine AGENT` has an agent clean the
//! draft up first (a task of the built-in `codify-refine` workflow, so it
//! is journaled and leaves its own log), keeping the draft when what the
//! agent gives back does not load.

use crate::engine::{Engine, Outcome, RunOptions};
use crate::error::{Error, Result};
use crate::render;
use baton_core::TaskId;
use baton_core::session_log::codify::{self, Draft};
use baton_core::workflow::Workflow;
use std::path::{Path, PathBuf};

/// The workflow `draft` is, as it would load, without writing it.
pub(super) fn draft_workflow(eng: &Engine, draft: &Draft) -> Result<Workflow> {
    let agents: Vec<String> = eng.project.config.agents.keys().cloned().collect();
    let text = codify::to_toml(draft, &agents);
    let path = eng
        .project
        .workflows_dir()
        .join(format!("{}.toml", draft.name));
    check(eng, &text, &path, &draft.name)
}

/// What `--refine` gave.
pub enum Refined {
    /// The agent's workflow, which loads.
    Workflow(String),
    /// The draft is kept: why the agent's did not do.
    Kept(String),
}

impl Engine {
    /// Has `agent` clean up the workflow `draft` (TOML, workflow `name`).
    pub fn refine_workflow(
        &self,
        draft: &str,
        name: &str,
        agent: &str,
    ) -> Result<(TaskId, Refined)> {
        let (id, outcome) = self.run(RunOptions {
            workflow: crate::builtin::CODIFY_REFINE.into(),
            description: format!("```toml\n{draft}```"),
            agent: Some(agent.to_string()),
            labels: vec!["baton-codify=refine".into()],
            ..Default::default()
        })?;
        if outcome != Outcome::Complete {
            return Ok((
                id.clone(),
                Refined::Kept(format!("the agent's task {id} ended {outcome:?}")),
            ));
        }
        let snap = self.load(&id)?;
        let said = snap
            .state
            .phase("refine")
            .and_then(|p| p.summary.clone())
            .unwrap_or_default();
        let Some(toml) = fenced_toml(&said) else {
            return Ok((
                id,
                Refined::Kept("the agent's answer holds no ```toml block".into()),
            ));
        };
        let baton = self.project.baton_dir();
        let parsed = Workflow::parse(&toml, "the refined workflow", name, &|f| {
            std::fs::read_to_string(baton.join(f)).map_err(|e| e.to_string())
        });
        Ok(match parsed {
            Ok(_) => (id, Refined::Workflow(toml)),
            Err(e) => (
                id,
                Refined::Kept(format!("the agent's workflow does not load: {e}")),
            ),
        })
    }
}

/// The text of the first ```toml block in `s` (or of the first block).
fn fenced_toml(s: &str) -> Option<String> {
    let start = s.find("```toml").or_else(|| s.find("```"))?;
    let rest = &s[start..];
    let body = &rest[rest.find('\n')? + 1..];
    let end = body.find("\n```").map_or(body.len(), |e| e + 1);
    let t = body[..end].to_string();
    (!t.trim().is_empty()).then_some(t)
}

/// Writes the workflow `text` (which must load as workflow `name`) to
/// `output`, never over a file that says something else.
pub fn write_workflow(eng: &Engine, name: &str, text: &str, output: &Path) -> Result<PathBuf> {
    check(eng, text, output, name)?;
    match std::fs::read_to_string(output) {
        Ok(existing) if existing == text => Ok(output.to_path_buf()),
        Ok(_) => Err(Error::bad_input(format!(
            "{} exists already and says something else",
            output.display()
        ))
        .hint("pick another --output, or remove that file first")),
        Err(_) => {
            render::atomic_write(output, text.as_bytes())?;
            Ok(output.to_path_buf())
        }
    }
}

/// Checks that `draft` loads as a workflow, then writes it; an output that
/// exists with other content is never overwritten.
pub fn write_draft(eng: &Engine, draft: &Draft, output: Option<&Path>) -> Result<PathBuf> {
    let agents: Vec<String> = eng.project.config.agents.keys().cloned().collect();
    let dir = eng.project.workflows_dir();
    let candidates: Vec<(String, PathBuf)> = match output {
        Some(p) => {
            let stem = p
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            vec![(stem, p.to_path_buf())]
        }
        None => (1..100)
            .map(|n| {
                let name = if n == 1 {
                    draft.name.clone()
                } else {
                    format!("{}-{n}", draft.name)
                };
                let path = dir.join(format!("{name}.toml"));
                (name, path)
            })
            .collect(),
    };
    for (name, path) in candidates {
        let d = Draft {
            name: name.clone(),
            ..draft.clone()
        };
        let text = codify::to_toml(&d, &agents);
        check(eng, &text, &path, &name)?;
        match std::fs::read_to_string(&path) {
            Ok(existing) if existing == text => return Ok(path),
            Ok(_) if output.is_some() => {
                return Err(Error::bad_input(format!(
                    "{} exists already and says something else",
                    path.display()
                ))
                .hint("pick another --output, or remove that file first"));
            }
            Ok(_) => continue,
            Err(_) => {
                render::atomic_write(&path, text.as_bytes())?;
                return Ok(path);
            }
        }
    }
    Err(Error::op("no free workflow file name for the codified log")
        .hint("remove some .baton/workflows/session-*.toml files"))
}

/// The text loads as workflow `name` (whose file stem it must be).
fn check(eng: &Engine, text: &str, path: &Path, name: &str) -> Result<Workflow> {
    let baton = eng.project.baton_dir();
    Workflow::parse(text, &path.display().to_string(), name, &|f| {
        std::fs::read_to_string(baton.join(f)).map_err(|e| e.to_string())
    })
    .map_err(|e| {
        Error::bad_input(format!("the codified workflow does not load: {e}")).hint(
            "the workflow name comes from the --output file name: use letters, digits and '-'",
        )
    })
}
