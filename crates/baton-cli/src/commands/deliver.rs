//! `baton deliver EVENT PAYLOAD`: a GitHub webhook payload handed to the
//! tasks waiting for it, by hand (a replay, a test); `baton serve` does the
//! same for each signed delivery.

use super::Result;
use crate::cli::DeliverArgs;
use crate::printer::Printer;
use baton_core::Exit;
use baton_engine::{Decision, Error, Project};
use std::sync::Arc;

pub fn run(project: &Project, args: DeliverArgs, printer: &Arc<Printer>) -> Result<Exit> {
    let text = if args.payload.as_os_str() == "-" {
        std::io::read_to_string(std::io::stdin())?
    } else {
        fs_err::read_to_string(&args.payload).map_err(|e| {
            Error::bad_input(format!("cannot read the payload: {e}"))
                .hint("pass the JSON body GitHub posts, as a file or `-` for standard input")
        })?
    };
    let payload: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
        Error::bad_input(format!("{} is not JSON: {e}", args.payload.display()))
            .hint("pass the JSON body GitHub posts, unchanged")
    })?;
    if !args.branch_pattern.contains("{task-id}") {
        return Err(Error::bad_input(format!(
            "--branch-pattern {:?} has no {{task-id}}",
            args.branch_pattern
        ))
        .hint("say where the task id is in a head branch, e.g. baton/{task-id}"));
    }
    let eng = super::engine(project, printer)?;
    let done = eng.deliver(&args.delivery, &args.event, &payload, &args.branch_pattern)?;
    let name = baton_core::webhook::Delivery {
        event: &args.event,
        payload: &payload,
    }
    .name();
    let mut exit = Exit::Done;
    let mut rows = Vec::new();
    for (task, d) in &done {
        let (decision, said) = match d {
            Decision::Resumed { phase, outcome } => {
                exit = outcome.exit();
                ("resumed", format!("resumed at {phase}"))
            }
            Decision::Skipped(why) => ("skipped", why.clone()),
        };
        rows.push(serde_json::json!({"task": task.as_str(), "decision": decision, "why": said}));
        if !args.json {
            printer.data(&format!("{task}: {said}"));
        }
    }
    if args.json {
        printer.data(&serde_json::json!({"event": name, "tasks": rows}).to_string());
    } else if done.is_empty() {
        printer.data(&format!("no task waits for {name}: nothing changed"));
    }
    Ok(exit)
}
