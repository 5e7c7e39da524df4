//! `baton serve`: GitHub webhooks that resume the tasks waiting for them.

use super::Result;
use crate::cli::ServeArgs;
use crate::printer::Printer;
use baton_core::Exit;
use baton_engine::{Project, secrets};
use std::sync::Arc;

pub fn run(project: &Project, args: ServeArgs, printer: &Arc<Printer>) -> Result<Exit> {
    let saved = if args.new_token {
        if std::env::var_os("BATON_SERVER_TOKEN").is_some() || project.config.server.token.is_some()
        {
            return Err(baton_engine::Error::bad_input(
                "--new-token would be ignored: BATON_SERVER_TOKEN or [server] token is set, and wins",
            )
            .hint("unset BATON_SERVER_TOKEN and remove token from [server], or drop --new-token"));
        }
        let (token, path) = secrets::write_new_token(project)?;
        printer.always(&format!(
            "baton serve: a new API token is in {} (readable by you only); the dashboard takes it once as /#token={token}",
            path.display()
        ));
        Some(token)
    } else {
        secrets::saved_token(project)?
    };
    let settings =
        project
            .config
            .server
            .settings(args.addr.as_deref(), |k| std::env::var(k).ok(), saved)?;
    let supervision = project.config.supervisor.settings()?;
    printer.many_tasks();
    baton_server::serve(project.clone(), settings, supervision, printer.clone())?;
    Ok(Exit::Done)
}
