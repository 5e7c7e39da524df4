//! One module per command; `dispatch` routes a parsed command line.

mod agent;
mod deliver;
mod demo;
mod doctor;
mod inbox;
mod init;
mod manage;
mod mcp;
mod meta;
mod play;
mod progress;
mod query;
mod run;
mod serve;
mod session;
mod status;
mod store;
mod team;
mod worker;
mod workspace;

use crate::cli::{Cli, Command};
use crate::printer::Printer;
use baton_core::{Exit, TaskId};
use baton_engine::{Engine, Error, Project};
use std::sync::Arc;

pub type Result<T, E = Error> = std::result::Result<T, E>;

pub fn dispatch(cli: Cli, printer: &Arc<Printer>) -> Result<Exit> {
    let project = cli.project.clone();
    match cli.command {
        Command::Init(a) => init::run(project, a, printer),
        Command::Run(a) => run::run(&project_of(project)?, a, printer),
        Command::Resume(a) => run::resume(&project_of(project)?, a, printer),
        Command::Handoff(a) => run::handoff(&project_of(project)?, a, printer),
        Command::Import(a) => run::import(&project_of(project)?, a, printer),
        Command::Fork(a) => run::fork(&project_of(project)?, a, printer),
        Command::Ls(a) => query::ls(&project_of(project)?, a, printer),
        Command::Show(a) => query::show(&project_of(project)?, a, printer),
        Command::Log(a) => query::log(&project_of(project)?, a, printer),
        Command::Cancel(a) => manage::cancel(&project_of(project)?, a, printer),
        Command::Rm(a) => manage::rm(&project_of(project)?, a, printer),
        Command::Clean(a) => manage::clean(&project_of(project)?, a, printer),
        Command::Doctor(a) => doctor::run(&project_of(project)?, a, printer),
        Command::Agent(c) => agent::run(&project_of(project)?, c, printer),
        Command::Mcp(a) => mcp::run(project_of(project)?, a, printer),
        Command::Worker(a) => worker::run(&project_of(project)?, a, printer),
        Command::Deliver(a) => deliver::run(&project_of(project)?, a, printer),
        Command::Deliveries(a) => deliver::list(&project_of(project)?, a, printer),
        Command::Progress(a) => progress::run(&project_of(project)?, a, printer),
        Command::Play(a) => play::run(&project_of(project)?, a, printer),
        Command::Serve(a) => serve::run(&project_of(project)?, a, printer),
        Command::Team(c) => team::run(&project_of(project)?, c, printer),
        Command::Status(a) => status::run(&project_of(project)?, a, printer),
        Command::Inbox(a) => inbox::run(&project_of(project)?, a, printer),
        Command::Session(c) => session::run(&project_of(project)?, c, printer),
        Command::Workspace(c) => workspace::run(&project_of(project)?, c, printer),
        Command::Store(c) => store::run(&project_of(project)?, c, printer),
        Command::Demo(a) => demo::run(a, printer),
        Command::Completions(a) => meta::completions(a, printer),
        Command::Man => meta::man(printer),
    }
}

/// The project: `--project DIR` (or `BATON_PROJECT`) and the current folder
/// alike are searched upwards for `.baton/`, so a subfolder of a project
/// names that project.
fn project_of(dir: Option<std::path::PathBuf>) -> Result<Project> {
    match dir {
        Some(d) => {
            if !d.is_dir() {
                return Err(
                    Error::bad_input(format!("--project {}: no such folder", d.display())).hint(
                        "pass the project's folder (the one holding .baton/) or a folder inside it",
                    ),
                );
            }
            match project_root_above(&d)? {
                Some(root) => Project::open(&root),
                None => Err(Error::bad_input(format!(
                    "{} is not inside a baton project (no .baton/ in it or any parent folder)",
                    d.display()
                ))
                .hint(format!("run `baton init` in {} first", d.display()))),
            }
        }
        None => Project::discover(&std::env::current_dir()?),
    }
}

/// The nearest folder at or above `start` that holds `.baton/`.
fn project_root_above(start: &std::path::Path) -> Result<Option<std::path::PathBuf>> {
    let start = std::path::absolute(start)?;
    Ok(start
        .ancestors()
        .find(|d| d.join(".baton").is_dir())
        .map(|d| d.to_path_buf()))
}

/// Opens the engine with the printer as its observer.
fn engine(project: &Project, printer: &Arc<Printer>) -> Result<Engine> {
    Engine::open(project.clone(), printer.clone())
}

/// The engine for commands that drive a task (run, resume, fork): SIGINT,
/// SIGTERM and SIGHUP set a flag it watches, so it kills the running phase's
/// process group, records the interruption and returns. Other commands keep
/// the default behaviour (Ctrl-C ends them at once).
fn driving_engine(project: &Project, printer: &Arc<Printer>) -> Result<Engine> {
    let flag = Arc::new(std::sync::atomic::AtomicBool::new(false));
    for sig in [
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
    ] {
        signal_hook::flag::register(sig, flag.clone())?;
    }
    Ok(engine(project, printer)?.with_interrupt(flag))
}

/// A task id from the argument, or the current task.
fn task_id(project: &Project, id: Option<&str>) -> Result<TaskId> {
    match id {
        Some(id) => TaskId::parse(id).map_err(|e| {
            Error::bad_input(e.to_string()).hint("run `baton ls --all` to see the task ids")
        }),
        None => project.current_task_checked()?.ok_or_else(|| {
            Error::bad_input("no current task").hint("name a task id; `baton ls --all` lists them")
        }),
    }
}
