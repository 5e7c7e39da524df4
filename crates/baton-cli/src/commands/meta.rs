//! `baton completions` and `baton man`: rendered into memory first, then
//! written through the printer (so a closed pipe ends them quietly and a
//! full disk is an error, never a panic).

use super::Result;
use crate::cli::{Cli, CompletionsArgs};
use crate::printer::Printer;
use baton_core::Exit;
use clap::CommandFactory;

pub fn completions(args: CompletionsArgs, printer: &Printer) -> Result<Exit> {
    let mut cmd = Cli::command();
    let mut out = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, "baton", &mut out);
    printer.bytes(&out);
    Ok(Exit::Done)
}

pub fn man(printer: &Printer) -> Result<Exit> {
    let cmd = Cli::command();
    let mut out = Vec::new();
    clap_mangen::Man::new(cmd).render(&mut out)?;
    printer.bytes(&out);
    Ok(Exit::Done)
}
