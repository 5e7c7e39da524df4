//! `baton session codify FILE --output .baton/workflows/NAME.toml`: the
//! draft of `baton_core::session_log::codify`, written only once it loads
//! as a workflow of this project.

use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::render;
use baton_core::session_log::SessionLog;
use baton_core::session_log::codify::{self, Draft};
use baton_core::workflow::Workflow;
use std::path::{Path, PathBuf};

/// Writes the workflow codified from `log` as `name` to `output` (default
/// `.baton/workflows/<name>.toml`, or `<name>-2.toml`, … when that file
/// says something else); returns where.
pub(super) fn write_codified(
    eng: &Engine,
    log: &SessionLog,
    name: &str,
    output: Option<&Path>,
) -> Result<PathBuf> {
    let draft = codify::draft(log, name);
    write_draft(eng, &draft, output)
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
