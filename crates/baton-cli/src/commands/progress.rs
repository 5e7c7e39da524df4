//! `baton progress [REPO] [--json] [--clear]`: each repository's progress
//! record (its task, workflow, stage and status, the phases passed), which
//! outlives `baton rm` of the task.

use super::Result;
use crate::cli::ProgressArgs;
use crate::printer::Printer;
use baton_core::Exit;
use baton_engine::{Error, Project};
use std::sync::Arc;

pub fn run(project: &Project, args: ProgressArgs, printer: &Arc<Printer>) -> Result<Exit> {
    let store = baton_engine::store::Location::of(project)?.open()?;
    if args.clear {
        let repo = args.repository.as_deref().expect("clap requires it");
        if !store.clear_progress(repo)? {
            return Err(Error::bad_input(format!("no progress record of {repo}"))
                .hint("list the records with `baton progress`"));
        }
        printer.info(&format!(
            "cleared the progress record of {repo}: a task created again starts over"
        ));
        return Ok(Exit::Done);
    }
    let records = store.progress(args.repository.as_deref())?;
    if args.json {
        let all: Vec<serde_json::Value> = records
            .iter()
            .map(|p| {
                serde_json::json!({
                    "repository": p.repository,
                    "branch": p.branch,
                    "task_id": p.task_id,
                    "workflow": p.workflow,
                    "status": p.status,
                    "stage": p.stage,
                    "started_at": p.started_at.rfc3339(),
                    "last_updated": p.last_updated.rfc3339(),
                    "completed_phases": p.phases.iter().map(|ph| serde_json::json!({
                        "id": ph.id.as_str(),
                        "summary": ph.summary,
                        "completed_at": ph.completed_at.map(|t| t.rfc3339()),
                    })).collect::<Vec<_>>(),
                })
            })
            .collect();
        printer.json(&serde_json::Value::Array(all).to_string());
        return Ok(Exit::Done);
    }
    if records.is_empty() {
        return match &args.repository {
            Some(r) => Err(Error::bad_input(format!("no progress record of {r}"))
                .hint("a record is written once a task with that repository label runs; `baton progress` lists them all")),
            None => {
                printer.data("no progress records yet");
                Ok(Exit::Done)
            }
        };
    }
    for p in &records {
        printer.data(&format!(
            "{}  task {} ({})  {} at {}  updated {}{}",
            p.repository,
            p.task_id,
            p.workflow,
            p.status,
            p.stage.as_deref().unwrap_or("-"),
            p.last_updated.rfc3339(),
            p.branch
                .as_deref()
                .map(|b| format!("  branch {b}"))
                .unwrap_or_default()
        ));
    }
    Ok(Exit::Done)
}
