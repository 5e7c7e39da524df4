//! `baton completions` and `baton man`.

use super::Result;
use crate::cli::{Cli, CompletionsArgs};
use baton_core::Exit;
use clap::CommandFactory;

pub fn completions(args: CompletionsArgs) -> Result<Exit> {
    let mut cmd = Cli::command();
    clap_complete::generate(args.shell, &mut cmd, "baton", &mut std::io::stdout());
    Ok(Exit::Done)
}

pub fn man() -> Result<Exit> {
    let cmd = Cli::command();
    let mut out = Vec::new();
    clap_mangen::Man::new(cmd).render(&mut out)?;
    use std::io::Write;
    std::io::stdout().write_all(&out)?;
    Ok(Exit::Done)
}
