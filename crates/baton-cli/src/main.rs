//! The `baton` binary: parse arguments and hand over to the library.

fn main() -> std::process::ExitCode {
    baton_cli::run()
}
