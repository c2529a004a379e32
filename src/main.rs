//! The `mhdb` command-line tool.
//!
//! Exit codes: 0 success, 1 I/O and other failures, 2 usage errors, 3 corruption.

mod cli;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let args = cli::Cli::parse();
    match cli::run(args) {
        Ok(code) => code,
        // Whoever read our output stopped early (`mhdb keys idx | head`): that is their
        // choice, not an error to report.
        Err(e) if e.is_broken_pipe() => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mhdb: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}
