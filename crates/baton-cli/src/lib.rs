//! The baton command line: argument parsing and output only; the work is
//! done by baton-engine.

pub mod cli;
pub mod commands;
pub mod printer;

use baton_core::Exit;
use clap::Parser;
use std::process::ExitCode;

/// Parses the command line, runs the command, returns its exit code.
pub fn run() -> ExitCode {
    let cli = match cli::Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(match e.kind() {
                clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion => 0,
                _ => Exit::BadInput.code(),
            });
        }
    };
    let printer = std::sync::Arc::new(printer::Printer::new(cli.quiet, cli.verbose));
    init_tracing(cli.verbose);
    let code = match commands::dispatch(cli, &printer) {
        Ok(exit) => exit,
        Err(e) => {
            printer.error(&e);
            Exit::from(e.kind)
        }
    };
    ExitCode::from(code.code())
}

fn init_tracing(verbose: bool) {
    let filter = std::env::var("BATON_LOG").unwrap_or_else(|_| {
        if verbose {
            "debug".into()
        } else {
            "warn".into()
        }
    });
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
        .with_writer(std::io::stderr)
        .with_ansi(printer::color_enabled())
        .without_time()
        .try_init();
}
