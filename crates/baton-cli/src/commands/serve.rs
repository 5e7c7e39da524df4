//! `baton serve`: GitHub webhooks that resume the tasks waiting for them.

use super::Result;
use crate::cli::ServeArgs;
use crate::printer::Printer;
use baton_core::Exit;
use baton_engine::Project;
use std::sync::Arc;

pub fn run(project: &Project, args: ServeArgs, printer: &Arc<Printer>) -> Result<Exit> {
    let settings = project
        .config
        .server
        .settings(args.addr.as_deref(), |k| std::env::var(k).ok())?;
    let supervision = project.config.supervisor.settings()?;
    printer.many_tasks();
    baton_server::serve(project.clone(), settings, supervision, printer.clone())?;
    Ok(Exit::Done)
}
