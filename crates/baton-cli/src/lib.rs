//! The baton command line: argument parsing and output only; the work is
//! done by baton-engine.

pub mod cli;
pub mod commands;
pub mod json_log;
pub mod printer;

use baton_core::Exit;
use clap::Parser;
use std::process::ExitCode;

/// Parses the command line, runs the command, returns its exit code.
pub fn run() -> ExitCode {
    let cli = match cli::Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            use clap::error::ErrorKind::{DisplayHelp, DisplayVersion};
            if !matches!(e.kind(), DisplayHelp | DisplayVersion) {
                let _ = e.print();
                return ExitCode::from(Exit::BadInput.code());
            }
            if std::io::IsTerminal::is_terminal(&std::io::stdout()) {
                // clap paints it for the terminal.
                let _ = e.print();
                return ExitCode::from(Exit::Done.code());
            }
            // Into a pipe or a file: through the printer, so a full disk is
            // an error and a closed pipe is not.
            let printer = printer::Printer::new(false, false);
            printer.bytes(e.render().to_string().as_bytes());
            return ExitCode::from(finish(&printer, Exit::Done).code());
        }
    };
    let json = cli.log_format == json_log::LogFormat::Json;
    let mut printer = printer::Printer::new(cli.quiet, cli.verbose);
    if json {
        printer = printer.with_json();
    }
    let printer = std::sync::Arc::new(printer);
    init_tracing(cli.verbose, json);
    let code = match commands::dispatch(cli, &printer) {
        Ok(exit) => exit,
        Err(e) => {
            printer.error(&e);
            Exit::from(e.kind)
        }
    };
    ExitCode::from(finish(&printer, code).code())
}

/// Flushes stdout: output that could not be written is an error (exit 1,
/// unless the command ended with another error already); a closed pipe is
/// not.
fn finish(printer: &printer::Printer, code: Exit) -> Exit {
    match printer.finish() {
        Some(e) => {
            printer.error(&e);
            if code == Exit::Done {
                Exit::from(e.kind)
            } else {
                code
            }
        }
        None => code,
    }
}

fn init_tracing(verbose: bool, json: bool) {
    let filter = std::env::var("BATON_LOG").unwrap_or_else(|_| {
        if verbose {
            "debug".into()
        } else {
            "warn".into()
        }
    });
    if json {
        return json_log::init(&filter);
    }
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
        .with_writer(std::io::stderr)
        .with_ansi(printer::color_enabled())
        .without_time()
        .try_init();
}
