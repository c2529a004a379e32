//! The `mhdb` tool: [`run`] hands each subcommand to its command family.
//!
//! | module | holds |
//! | --- | --- |
//! | `args` | the command line: subcommands, flags, defaults, `--help` texts |
//! | `output` | failures and exit codes, stdout writing that a closed pipe ends quietly, messages, warnings and progress bars on stderr |
//! | `input` | JSON Lines, key lines, text files and directories read by the commands |
//! | `escape` | keys (arbitrary bytes) in line-oriented text and in JSON, and back |
//! | `shapes` | the JSON shape of each kind of result |
//! | `create` | `create`, `tune` |
//! | `add` | `add` |
//! | `query` | `query` |
//! | `databases` | the databases a reading command names: one, or shards answering as one index (glob patterns expanded) |
//! | `keys` | `get`, `keys`, `delete` |
//! | `dedup` | `dedup` |
//! | `maintain` | `compact`, `verify`, `stats`, `export`, `merge` |
//! | `demo` | `demo` |
//! | `serve` | `serve`: the HTTP/JSON server |
//! | `signals` | SIGINT and SIGTERM: what `serve` stops on and `add` reports its commits at |

mod add;
mod args;
mod create;
mod databases;
mod dedup;
mod dedup_files;
mod dedup_files_temp;
mod demo;
mod escape;
mod input;
mod keys;
mod maintain;
mod output;
mod query;
mod serve;
mod shapes;
mod signals;

use std::process::ExitCode;

pub use args::Cli;
use args::Command;
pub use output::{CliResult, exit};

/// Runs one command: its exit code, or the failure that ends it.
pub fn run(cli: Cli) -> CliResult<ExitCode> {
    match &cli.command {
        Command::Create(a) => create::create(a),
        Command::Tune(a) => create::tune(a),
        Command::Add(a) => add::add(a),
        Command::Query(a) => query::query(a),
        Command::Get(a) => keys::get(a),
        Command::Keys(a) => keys::keys(a),
        Command::Delete(a) => keys::delete(a),
        Command::Dedup(a) => dedup::dedup(a),
        Command::DedupFiles(a) => dedup_files::dedup_files(a),
        Command::Compact(a) => maintain::compact(a),
        Command::Verify(a) => maintain::verify(a),
        Command::Stats(a) => maintain::stats(a),
        Command::Export(a) => maintain::export(a),
        Command::Merge(a) => maintain::merge(a),
        Command::Upgrade(a) => maintain::upgrade(a),
        Command::Demo(a) => demo::demo(a),
        Command::Serve(a) => serve::serve(a),
    }
}
