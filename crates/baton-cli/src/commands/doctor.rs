//! `baton doctor [--fix]`: prints what the engine's doctor found.

use super::Result;
use crate::cli::DoctorArgs;
use crate::printer::{Printer, text};
use baton_core::Exit;
use baton_engine::Project;
use std::sync::Arc;

pub fn run(project: &Project, args: DoctorArgs, printer: &Arc<Printer>) -> Result<Exit> {
    let findings = baton_engine::doctor::run(project, args.fix, printer.clone())?;
    if args.json {
        let rows: Vec<_> = findings
            .iter()
            .map(|f| serde_json::json!({"level": f.level, "message": f.message, "hint": f.hint}))
            .collect();
        printer.json(&serde_json::to_string(&rows).expect("json"));
    } else {
        for f in &findings {
            let word = match f.level {
                "ok" => printer.status_word("PASS").replace("PASS", "ok     "),
                "fixed" => printer
                    .status_word("COMPLETE")
                    .replace("COMPLETE", "fixed  "),
                "kept" => printer.status_word("WAITING").replace("WAITING", "kept   "),
                _ => printer.status_word("FAILED").replace("FAILED", "problem"),
            };
            // A finding may quote a folder's name or a stored text.
            printer.data(&format!("{word} {}", text(&f.message)));
            if let Some(h) = &f.hint {
                printer.data(&format!("        hint: {}", text(h)));
            }
        }
    }
    let open = findings.iter().filter(|f| f.level == "problem").count();
    let read_only = findings
        .iter()
        .any(|f| f.message.contains(baton_engine::doctor::READ_ONLY));
    if open > 0 && read_only {
        printer.info(&format!(
            "{open} problem(s); the project cannot be written here: run `baton doctor --fix` where it can"
        ));
    } else if open > 0 && !args.fix {
        printer.info(&format!(
            "{open} problem(s); `baton doctor --fix` repairs what can be repaired"
        ));
    }
    Ok(if open > 0 { Exit::Failed } else { Exit::Done })
}
