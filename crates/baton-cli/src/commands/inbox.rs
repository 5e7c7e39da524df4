//! `baton inbox [answer|approve|deny]`: the open items across all
//! sessions, and answering them (a waiting task runs on here).

use super::{Result, driving_engine, run::report};
use crate::cli::{InboxArgs, InboxCommand};
use crate::printer::{Printer, cell};
use baton_core::Exit;
use baton_core::inbox::{InboxItem, ItemKind};
use baton_engine::Project;
use baton_engine::inbox::AnswerOutcome;
use std::sync::Arc;

pub fn run(project: &Project, args: InboxArgs, printer: &Arc<Printer>) -> Result<Exit> {
    let eng = driving_engine(project, printer)?;
    let inbox = eng.inbox();
    let by = |b: Option<String>| {
        b.or_else(|| std::env::var("USER").ok())
            .unwrap_or_else(|| "someone".into())
    };
    let (id, choice, reason, who) = match args.command {
        None => {
            let items = inbox.items(!args.all)?;
            if args.json {
                printer.json(&serde_json::to_string(&items).expect("json"));
            } else if items.is_empty() {
                printer.data("the inbox is empty");
            } else {
                for i in &items {
                    printer.data(&line(i));
                }
            }
            return Ok(Exit::Done);
        }
        Some(InboxCommand::Answer(a)) => (a.id, a.choice, None, by(a.by)),
        Some(InboxCommand::Approve(a)) => (a.id, "approved".to_string(), None, by(a.by)),
        Some(InboxCommand::Deny(a)) => (a.id, "denied".to_string(), a.reason, by(a.by)),
        Some(InboxCommand::Ack(a)) => (a.id, "acknowledged".to_string(), None, by(a.by)),
    };
    match inbox.answer(&id, &choice, reason, &who)? {
        AnswerOutcome::Item(item) => {
            if args.json {
                printer.json(&serde_json::to_string(&item).expect("json"));
            }
            let a = item.answer.as_ref().expect("answered");
            printer.info(&format!(
                "{} answered {}: {} (the agent that asked gets it)",
                cell(&a.by),
                cell(&item.id),
                cell(&a.choice)
            ));
            Ok(Exit::Done)
        }
        AnswerOutcome::Task(item, passed) => {
            if args.json {
                printer.json(&serde_json::to_string(&item).expect("json"));
            }
            let task = passed.id.clone();
            let outcome = eng.run_passed(*passed)?;
            Ok(report(&eng, &task, outcome, printer))
        }
    }
}

/// `d-1a2b3c4d  decision  task/phase  question [a/b]  (from who)`: one
/// line, whatever the agent wrote (escaped, and clipped when long).
fn line(i: &InboxItem) -> String {
    let what = match i.kind {
        ItemKind::Decision if !i.options.is_empty() => {
            let options: Vec<String> = i.options.iter().map(|o| cell(o)).collect();
            format!("{} [{}]", cell(&i.text), options.join("/"))
        }
        _ => cell(&i.text),
    };
    let answered = i
        .answer
        .as_ref()
        .map(|a| format!("  → {} by {}", cell(&a.choice), cell(&a.by)))
        .unwrap_or_default();
    format!(
        "{:<20} {:<8} {:<24} {what}  (from {}){answered}",
        cell(&i.id),
        i.kind.as_str(),
        cell(&format!(
            "{}{}",
            i.session.as_deref().unwrap_or("-"),
            i.phase
                .as_deref()
                .map(|p| format!("/{p}"))
                .unwrap_or_default()
        )),
        cell(&i.raised_by)
    )
}
