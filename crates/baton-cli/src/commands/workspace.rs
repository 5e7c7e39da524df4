//! `baton workspace ls [--json]` and `baton workspace rm NAME [--force]`:
//! the workspaces of agents by role, which outlive the tasks that worked
//! in them.

use super::{Result, engine};
use crate::cli::WorkspaceCommand;
use crate::printer::Printer;
use baton_core::Exit;
use baton_engine::Project;
use std::sync::Arc;

pub fn run(project: &Project, cmd: WorkspaceCommand, printer: &Arc<Printer>) -> Result<Exit> {
    let eng = engine(project, printer)?;
    match cmd {
        WorkspaceCommand::Ls(args) => {
            let all = eng.workspaces()?;
            if args.json {
                // Times in RFC 3339, as docs/cli.md says JSON times are.
                let mut json = serde_json::to_value(&all).expect("workspaces are JSON");
                for w in json.as_array_mut().into_iter().flatten() {
                    for key in ["created_at", "updated_at"] {
                        if let Some(t) = w.get_mut(key)
                            && let Some(ms) = t.as_i64()
                        {
                            *t = baton_core::Timestamp(ms).rfc3339().into();
                        }
                    }
                }
                printer.json(&json.to_string());
                return Ok(Exit::Done);
            }
            if all.is_empty() {
                printer.data("no workspaces yet (agents with a role under [agents.NAME] get them)");
                return Ok(Exit::Done);
            }
            for w in &all {
                let r = &w.record;
                printer.data(&format!(
                    "{}  {}{}  branch {}  task {}{}  {}{}",
                    r.name,
                    r.role,
                    r.agent
                        .as_deref()
                        .map(|a| format!(" ({a})"))
                        .unwrap_or_default(),
                    r.branch,
                    r.task_id,
                    r.phase
                        .as_deref()
                        .map(|p| format!(" at {p}"))
                        .unwrap_or_default(),
                    if w.exists { &r.path } else { "(folder gone)" },
                    if w.removable {
                        String::new()
                    } else {
                        format!("  keeps work: {}", w.holds)
                    }
                ));
            }
            Ok(Exit::Done)
        }
        WorkspaceCommand::Rm(args) => {
            let w = eng.remove_workspace(&args.name, args.force)?;
            printer.info(&format!(
                "removed workspace {} ({}) and its branch {}",
                w.record.name, w.record.path, w.record.branch
            ));
            Ok(Exit::Done)
        }
    }
}
