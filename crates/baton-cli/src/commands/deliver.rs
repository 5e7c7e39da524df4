//! `baton deliver EVENT PAYLOAD`: a GitHub webhook payload handed to the
//! tasks waiting for it, by hand (a replay, a test). It is recorded like a
//! delivery `baton serve` received, so it shows in `baton deliveries`, and
//! a delivery id already recorded changes nothing.

use super::Result;
use crate::cli::{DeliverArgs, DeliveriesArgs};
use crate::printer::{Printer, cell};
use baton_core::Exit;
use baton_engine::{Decision, Delivered, Error, Project};
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
    // As a server takes them: 1 to 200 characters (GitHub's are UUIDs).
    if let Some(d) = &args.delivery
        && (d.trim().is_empty() || d.len() > 200)
    {
        return Err(Error::bad_input(format!(
            "--delivery must be 1 to 200 characters, not {}",
            d.len()
        ))
        .hint("give GitHub's X-GitHub-Delivery, or leave --delivery out for a new id"));
    }
    let eng = super::engine(project, printer)?;
    let id = args
        .delivery
        .unwrap_or_else(|| format!("manual-{}", baton_engine::new_uuid()));
    let now = eng.now();
    let d =
        baton_engine::new_delivery(id.clone(), args.event, &payload, &eng.awaited()?.paths, now);
    let handed = match eng.deliver(d, &args.branch_pattern)? {
        Delivered::Handed(h) => h,
        Delivered::Redelivery(before) => {
            let said = before.map_or(String::new(), |r| {
                format!(" ({}: {})", cell(&r.decision), cell(&r.why))
            });
            if args.json {
                printer.json(
                    &serde_json::json!({"delivery": id, "redelivery": true, "tasks": []})
                        .to_string(),
                );
            } else {
                printer.data(&format!(
                    "delivery {} was handled already{said}: nothing changed",
                    cell(&id)
                ));
            }
            return Ok(Exit::Done);
        }
    };
    let mut exit = Exit::Done;
    let mut outcomes = std::collections::BTreeMap::new();
    for p in handed.passed {
        let task = p.id.clone();
        let outcome = eng.run_passed(p)?;
        exit = outcome.exit();
        outcomes.insert(task, outcome);
    }
    let mut rows = Vec::new();
    for (task, d) in &handed.decisions {
        let (decision, said) = match d {
            Decision::Resumed { phase } => ("resumed", format!("resumed at {phase}")),
            Decision::Buffered { why, .. } => ("buffered", why.clone()),
            Decision::Skipped(why) => ("skipped", why.clone()),
        };
        rows.push(serde_json::json!({"task": task.as_str(), "decision": decision, "why": said}));
        if !args.json {
            printer.data(&format!("{task}: {}", cell(&said)));
        }
    }
    if args.json {
        printer.json(
            &serde_json::json!({"delivery": id, "event": handed.name, "decision": handed.settlement.decision, "why": handed.settlement.why, "tasks": rows}).to_string(),
        );
    } else if handed.decisions.is_empty() {
        // Nothing for a task; it may still have moved agent instances.
        printer.data(&match handed.settlement.decision.as_str() {
            "applied" => format!("{}: {}", cell(&handed.name), cell(&handed.settlement.why)),
            _ => format!("no task waits for {}: nothing changed", cell(&handed.name)),
        });
    }
    Ok(exit)
}

/// `baton deliveries`: the deliveries received, newest first, with what
/// each did.
pub fn list(project: &Project, args: DeliveriesArgs, printer: &Arc<Printer>) -> Result<Exit> {
    let rows = super::engine(project, printer)?.deliveries(args.limit)?;
    if args.json {
        let all: Vec<_> = rows
            .iter()
            .map(baton_server::views::DeliveryView::of)
            .collect();
        printer.json(&serde_json::to_string(&all).expect("deliveries are JSON"));
        return Ok(Exit::Done);
    }
    if rows.is_empty() {
        printer.data("no deliveries yet");
        return Ok(Exit::Done);
    }
    for r in &rows {
        let event = match &r.action {
            Some(a) => format!("{}.{a}", r.event),
            None => r.event.clone(),
        };
        printer.data(&format!(
            "{}  {}  {}  {}  {}: {}",
            r.received_at.rfc3339(),
            cell(&r.id),
            cell(&event),
            cell(r.repository.as_deref().unwrap_or("-")),
            cell(&r.decision),
            cell(&r.why)
        ));
    }
    Ok(Exit::Done)
}
