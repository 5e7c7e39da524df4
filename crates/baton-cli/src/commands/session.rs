//! `baton session …`: list and show session logs, continue one as a task,
//! codify one into a workflow.

use super::{Result, driving_engine, engine, run::report};
use crate::cli::SessionCommand;
use crate::printer::Printer;
use baton_core::Exit;
use baton_core::session_log::{self, codify};
use baton_engine::Project;
use baton_engine::sessions::{SessionResume, write_draft};
use std::sync::Arc;

pub fn run(project: &Project, cmd: SessionCommand, printer: &Arc<Printer>) -> Result<Exit> {
    match cmd {
        SessionCommand::Ls(a) => {
            let eng = engine(project, printer)?;
            let rows = eng.sessions()?;
            if a.json {
                printer.data(&serde_json::to_string(&rows).expect("json"));
                return Ok(Exit::Done);
            }
            if rows.is_empty() {
                printer.data("no session logs yet (every task writes one to .baton/sessions/)");
                return Ok(Exit::Done);
            }
            for r in &rows {
                printer.data(&format!(
                    "{:<28} {:<9} {:<20} {:>8} tok  {}  {}",
                    r.session_id,
                    r.status,
                    r.started.as_deref().map_or("-", |s| &s[..s.len().min(19)]),
                    r.tokens_used,
                    if r.participants.is_empty() {
                        "-".to_string()
                    } else {
                        r.participants.join(",")
                    },
                    r.phases.join(" → ")
                ));
            }
            Ok(Exit::Done)
        }
        SessionCommand::Show(a) => {
            let eng = engine(project, printer)?;
            let (log, path) = eng.session_log(&a.session)?;
            if a.json {
                let v = serde_json::json!({
                    "path": path,
                    "front": log.front,
                    "title": log.title,
                    "phases": session_log::phases(&log),
                    "sections": log.sections,
                });
                printer.data(&v.to_string());
            } else {
                printer.data(session_log::render(&log).trim_end());
            }
            Ok(Exit::Done)
        }
        SessionCommand::Resume(a) => {
            let eng = driving_engine(project, printer)?;
            let (id, outcome) = eng.resume_session(
                &a.session,
                SessionResume {
                    workflow: a.workflow,
                    id: a.id,
                    agent: a.agent,
                },
            )?;
            Ok(report(&eng, &id, outcome, printer))
        }
        SessionCommand::Codify(a) => {
            let eng = engine(project, printer)?;
            let (log, _) = eng.session_log(&a.session)?;
            let name = a
                .output
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            let draft = codify::draft(&log, &name);
            let path = write_draft(&eng, &draft, Some(&a.output))?;
            printer.info(&format!(
                "wrote {} with {} phases: {}",
                path.display(),
                draft.phases.len(),
                draft
                    .phases
                    .iter()
                    .map(|p| p.id.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
            printer.hint(&format!("run it with `baton run {name} \"…\"`"));
            Ok(Exit::Done)
        }
    }
}
