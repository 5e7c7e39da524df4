//! `baton progress [REPO] [--task ID] [--json] [--clear]`: each
//! repository's progress record (the task that moved last there, its
//! workflow, stage and status, the phases passed) and each of its tasks'
//! stage records, which outlive `baton rm` of the task: a task deleted and
//! created again continues from its own.

use super::Result;
use crate::cli::ProgressArgs;
use crate::printer::Printer;
use baton_core::Exit;
use baton_core::progress::Progress;
use baton_engine::{Error, Project};
use std::sync::Arc;

pub fn run(project: &Project, args: ProgressArgs, printer: &Arc<Printer>) -> Result<Exit> {
    let eng = super::engine(project, printer)?;
    if let Some(task) = &args.task {
        let repo = args.repository.as_deref().expect("clap requires it");
        if args.clear {
            if !eng.clear_task_stage(repo, task)? {
                return Err(no_task_record(repo, task));
            }
            printer.info(&format!(
                "cleared the stage record of task {task} in {repo}: the task created again starts over"
            ));
            return Ok(Exit::Done);
        }
        let p = eng
            .task_stage(repo, task)?
            .ok_or_else(|| no_task_record(repo, task))?;
        if args.json {
            printer.json(&serde_json::Value::Array(vec![json(&p)]).to_string());
        } else {
            printer.data(&line(&p, true));
        }
        return Ok(Exit::Done);
    }
    if args.clear {
        let repo = args.repository.as_deref().expect("clap requires it");
        if !eng.clear_progress(repo)? {
            return Err(Error::bad_input(format!("no progress record of {repo}"))
                .hint("list the records with `baton progress`"));
        }
        printer.info(&format!(
            "cleared the progress records of {repo} and its tasks: a task created again starts over"
        ));
        return Ok(Exit::Done);
    }
    let repos = eng.repository_progress(args.repository.as_deref())?;
    let stages = eng.task_stages(args.repository.as_deref())?;
    // Each repository with its tasks; one whose own record is gone (a
    // partial copy or salvage) is shown from its newest task's.
    let mut records: Vec<(Progress, Vec<Progress>)> = repos
        .into_iter()
        .map(|r| {
            let tasks = of_repo(&stages, &r.repository);
            (r, tasks)
        })
        .collect();
    for s in &stages {
        if !records.iter().any(|(r, _)| r.repository == s.repository) {
            let tasks = of_repo(&stages, &s.repository);
            let newest = tasks
                .iter()
                .max_by_key(|t| t.last_updated)
                .cloned()
                .expect("it has this one");
            records.push((newest, tasks));
        }
    }
    records.sort_by(|a, b| a.0.repository.cmp(&b.0.repository));
    if args.json {
        let all: Vec<serde_json::Value> = records
            .iter()
            .map(|(r, tasks)| {
                let mut v = json(r);
                v["tasks"] = tasks.iter().map(json).collect();
                v
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
    for (r, tasks) in &records {
        printer.data(&line(r, true));
        for t in tasks.iter().filter(|t| t.task_id != r.task_id) {
            printer.data(&format!("  {}", line(t, false)));
        }
    }
    Ok(Exit::Done)
}

fn of_repo(stages: &[Progress], repository: &str) -> Vec<Progress> {
    stages
        .iter()
        .filter(|s| s.repository == repository)
        .cloned()
        .collect()
}

fn no_task_record(repo: &str, task: &str) -> Error {
    Error::bad_input(format!("no stage record of task {task} in {repo}")).hint(format!(
        "`baton progress {repo}` lists the tasks it has records of"
    ))
}

/// `acme/app  task t1 (build)  failed at implement  updated …  branch main`
/// (without the repository for a task under its repository's line).
fn line(p: &Progress, with_repository: bool) -> String {
    format!(
        "{}task {} ({})  {} at {}  updated {}{}",
        if with_repository {
            format!("{}  ", p.repository)
        } else {
            String::new()
        },
        p.task_id,
        p.workflow,
        p.status,
        p.stage.as_deref().unwrap_or("-"),
        p.last_updated.rfc3339(),
        p.branch
            .as_deref()
            .map(|b| format!("  branch {b}"))
            .unwrap_or_default()
    )
}

fn json(p: &Progress) -> serde_json::Value {
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
        "labels": p.labels,
    })
}
