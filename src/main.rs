//! The `mhdb` command-line tool.
//!
//! Exit codes: 0 success, 1 I/O and other failures, 2 usage errors, 3 corruption.

mod cli;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    cli::exit(cli::run(cli::Cli::parse()))
}
