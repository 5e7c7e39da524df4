//! `baton mcp`: the MCP server over stdio, and `baton mcp grant`, a
//! capability for an agent baton did not start to reach `baton serve`'s
//! `/mcp` as a running phase attempt or an agent instance.

use super::Result;
use crate::cli::{GrantArgs, McpArgs, McpCommand};
use crate::printer::Printer;
use baton_core::token::Scope;
use baton_core::{Exit, PhaseStatus, TaskId};
use baton_engine::{Error, Project};
use std::sync::Arc;

pub fn run(project: Project, args: McpArgs, printer: &Arc<Printer>) -> Result<Exit> {
    match args.command {
        None => baton_mcp::serve_stdio(project).map(|()| Exit::Done),
        Some(McpCommand::Grant(g)) => grant(&project, g, printer),
    }
}

fn grant(project: &Project, g: GrantArgs, printer: &Arc<Printer>) -> Result<Exit> {
    let eng = super::engine(project, printer)?;
    let scope = match (g.task, g.phase, g.instance) {
        (Some(task), Some(phase), None) => {
            let id = super::task_id(project, Some(&task))?;
            let snap = eng.load(&id)?;
            let running = snap
                .state
                .phases
                .iter()
                .find(|p| p.id.as_str() == phase && p.status == PhaseStatus::InProgress);
            let Some(p) = running else {
                return Err(Error::bad_input(format!(
                    "phase {phase:?} of task {id} is not running now"
                ))
                .hint("a capability is for the attempt that runs; grant it once the phase has started"));
            };
            Scope::attempt(TaskId::clone(&id), &phase, p.iteration, p.attempt)
        }
        (None, None, Some(instance)) => {
            let id = TaskId::parse(&instance).map_err(|e| {
                Error::bad_input(e.to_string()).hint("`baton agent ls` lists the instances")
            })?;
            let agents = eng.agents()?;
            let v = agents.show(&id)?;
            if v.instance.status.ended() {
                return Err(Error::bad_input(format!("instance {id} has ended"))
                    .hint("a capability is for a live instance"));
            }
            Scope::instance(id)
        }
        _ => {
            return Err(Error::bad_input("say what the capability is for")
                .hint("pass --task ID --phase PHASE (a running phase) or --instance ID"));
        }
    };
    let token = eng.grant(&scope)?;
    printer.data(&token);
    printer.info("give it to the agent as `Authorization: Bearer <token>` for /mcp; it ends with the phase attempt or instance");
    Ok(Exit::Done)
}
