//! `baton store migrate` and `baton store copy --to URL`.

use super::Result;
use crate::cli::{StoreCommand, StoreCopyArgs};
use crate::printer::Printer;
use baton_core::Exit;
use baton_core::lease::DisplayStatus;
use baton_engine::store::Location;
use baton_engine::{Error, Project};
use std::sync::Arc;

pub fn run(project: &Project, cmd: StoreCommand, printer: &Arc<Printer>) -> Result<Exit> {
    match cmd {
        StoreCommand::Migrate => {
            let at = Location::of(project)?;
            // Opening applies every migration this baton knows (or refuses
            // a store from a newer baton).
            let store = at.open()?;
            printer.info(&format!("store {} is up to date", store.describe()));
            Ok(Exit::Done)
        }
        StoreCommand::Copy(args) => copy_cmd(project, args, printer),
    }
}

fn copy_cmd(project: &Project, args: StoreCopyArgs, printer: &Arc<Printer>) -> Result<Exit> {
    let from = Location::of(project)?;
    if args.to.trim().is_empty() {
        return Err(Error::bad_input("--to is empty")
            .hint("name the target: a postgres:// URL or the path of an SQLite file"));
    }
    let to = Location::parse(&args.to, project)?;
    if from.same_as(&to) {
        return Err(Error::bad_input(format!(
            "--to {} is the store this project already uses",
            to.describe()
        ))
        .hint("name another store: a postgres:// URL or the path of an SQLite file"));
    }
    // A task running now would be copied half-way through its phase; the
    // copy is for moving a project, between runs.
    let eng = baton_engine::Engine::open(project.clone(), printer.clone())?;
    let running: Vec<String> = eng
        .list()?
        .into_iter()
        .filter(|(_, d)| *d == DisplayStatus::Running)
        .map(|(t, _)| {
            let who = t.lease.map(|l| l.owner.describe()).unwrap_or_default();
            format!("{} ({who})", t.id)
        })
        .collect();
    if !running.is_empty() {
        return Err(Error::busy(format!(
            "task(s) running now: {}; nothing was copied",
            running.join(", ")
        ))
        .hint(
            "wait for them, or stop them (`baton cancel ID`, or Ctrl-C the workers), then copy",
        ));
    }
    let report = eng.copy_into(&*to.open()?)?;
    if args.json {
        printer.json(&serde_json::to_string_pretty(&report).expect("serializes"));
    } else {
        printer.info(&format!(
            "copied {} task(s), {} journal event(s), {} definition(s), {} agent instance(s) ({} journal record(s)), {} inbox item(s), {} comment(s) and {} linked task(s) from {} to {}; checked: every journal and projection is identical",
            report.tasks,
            report.events,
            report.definitions,
            report.instances,
            report.instance_events,
            report.inbox_items,
            report.comments,
            report.links,
            from.describe(),
            to.describe()
        ));
        printer.hint(&if to.is_postgres() {
            format!(
                "to use it, set url = \"{}\" under [store] in .baton/config.toml, or export BATON_DATABASE_URL (with the password, if it has one)",
                to.describe()
            )
        } else {
            "baton uses .baton/baton.db when no store URL is set; copy to that file to switch back"
                .to_string()
        });
    }
    Ok(Exit::Done)
}
