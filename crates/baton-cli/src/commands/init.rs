//! `baton init`: creates `.baton/` with a config, an example workflow and
//! the ready APEX workflow.

use super::Result;
use crate::cli::InitArgs;
use crate::printer::Printer;
use baton_core::Exit;
use baton_engine::Error;
use std::path::PathBuf;

pub const EXAMPLE_WORKFLOW: &str = include_str!("../../assets/example.toml");
pub const APEX_WORKFLOW: &str = include_str!("../../assets/apex.toml");
const GITIGNORE: &str = "# baton's store and rendered files are local to this machine.\nbaton.db\nbaton.db-*\ntasks/\nsessions/\nindex.toon\nworktrees/\nserver.token\n";

pub fn run(project: Option<PathBuf>, args: InitArgs, printer: &Printer) -> Result<Exit> {
    let root = match project {
        Some(p) => p,
        None => std::env::current_dir()?,
    };
    if !root.is_dir() {
        return Err(
            Error::bad_input(format!("{} is not a folder", root.display())).hint(format!(
                "create it first (`mkdir -p {}`), or pass an existing folder with --project",
                root.display()
            )),
        );
    }
    let baton = root.join(".baton");
    // Inside an existing project every command already finds that project
    // (by walking up); a second `.baton/` here would silently split it.
    if !baton.is_dir()
        && !args.force
        && let Some(parent) = std::path::absolute(&root)?
            .parent()
            .map(super::project_root_above)
            .transpose()?
            .flatten()
    {
        return Err(Error::bad_input(format!(
            "{} is inside the baton project {}",
            root.display(),
            parent.display()
        ))
        .hint(format!(
            "run baton from there (it works from any folder inside it), or pass --force to create a separate project in {}",
            root.display()
        )));
    }
    fs_err::create_dir_all(baton.join("workflows"))?;
    let files = [
        (baton.join("config.toml"), baton_engine::config::INIT_CONFIG),
        (baton.join(".gitignore"), GITIGNORE),
        (baton.join("workflows/example.toml"), EXAMPLE_WORKFLOW),
        (baton.join("workflows/apex.toml"), APEX_WORKFLOW),
    ];
    let mut wrote = 0;
    for (path, text) in files {
        if path.exists() && !args.force {
            printer.info(&format!("kept     {}", path.display()));
            continue;
        }
        baton_engine::render::atomic_write(&path, text.as_bytes())?;
        printer.info(&format!("wrote    {}", path.display()));
        wrote += 1;
    }
    if wrote == 0 {
        printer.info("nothing to do: .baton/ is already set up (--force rewrites it)");
    } else {
        printer
            .info("next: `baton run example \"try baton\"`, or `baton run apex \"what to build\"`");
    }
    Ok(Exit::Done)
}
