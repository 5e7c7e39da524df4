//! `baton cancel`, `baton rm`, `baton clean`.

use super::{Result, engine, task_id};
use crate::cli::{CleanArgs, IdArg};
use crate::printer::Printer;
use baton_core::Exit;
use baton_engine::Project;
use std::io::{BufRead, IsTerminal, Write};
use std::sync::Arc;

pub fn cancel(project: &Project, args: IdArg, printer: &Arc<Printer>) -> Result<Exit> {
    let eng = engine(project, printer)?;
    let id = task_id(project, Some(&args.id))?;
    eng.cancel(&id)?;
    baton_engine::instances::task_stopped(&eng, &id);
    printer.info(&format!(
        "task {id} is {}",
        printer.status_word_err("CANCELLED")
    ));
    Ok(Exit::Done)
}

pub fn rm(project: &Project, args: IdArg, printer: &Arc<Printer>) -> Result<Exit> {
    let eng = engine(project, printer)?;
    let id = task_id(project, Some(&args.id))?;
    eng.remove(&id)?;
    baton_engine::instances::task_stopped(&eng, &id);
    printer.info(&format!("removed task {id}"));
    Ok(Exit::Done)
}

pub fn clean(project: &Project, args: CleanArgs, printer: &Arc<Printer>) -> Result<Exit> {
    let eng = engine(project, printer)?;
    let ids = eng.clean_candidates()?;
    let list = |ids: &[baton_core::TaskId]| {
        serde_json::to_string(&ids.iter().map(|i| i.as_str()).collect::<Vec<_>>()).expect("json")
    };
    if ids.is_empty() {
        if args.json {
            printer.data("[]");
        }
        printer.info("no completed tasks to clean");
        return Ok(Exit::Done);
    }
    let mut go = args.yes;
    if !go && std::io::stdin().is_terminal() {
        eprint!(
            "Delete the records of {} completed task(s) (their outputs in .baton/tasks/ stay)? (y/N) ",
            ids.len()
        );
        let _ = std::io::stderr().flush();
        let mut answer = String::new();
        let _ = std::io::stdin().lock().read_line(&mut answer);
        go = matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes");
    }
    if !go {
        if args.json {
            printer.data(&list(&ids));
        } else {
            for id in &ids {
                printer.data(id.as_str());
            }
        }
        printer.info(&format!(
            "{} completed task(s) would be cleaned; nothing was deleted (pass --yes)",
            ids.len()
        ));
        return Ok(Exit::Done);
    }
    let n = eng.clean(&ids)?;
    if args.json {
        printer.data(&list(&ids));
    }
    printer.info(&format!(
        "deleted the records of {n} completed task(s); their outputs stay in .baton/tasks/"
    ));
    Ok(Exit::Done)
}
