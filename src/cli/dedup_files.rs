//! `mhdb dedup-files`: the whole job in one command. It runs `create`, `add` and
//! `dedup --apply` one after the other, each parsed from the command line it would have had, so
//! that their formats, rules, progress and messages are theirs and live in one place. The index
//! is built in a temporary directory removed at the end (also after an error), or kept at
//! `--index`.

use std::ffi::{OsStr, OsString};
use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

use clap::{Parser, ValueEnum};
use mhdb::db::{Db, DedupOptions};
use serde_json::json;

use super::args::{Cli, Command, DedupFilesArgs, MetricArg, OnRepeat};
use super::databases::Databases;
use super::dedup_files_temp::TempIndex;
use super::output::{CliError, CliResult, message, outln};

/// `mhdb dedup-files`: create, add, decide and write; a summary on stderr (`--json`: stdout).
pub fn dedup_files(args: &DedupFilesArgs) -> CliResult<ExitCode> {
    // The temporary directory is removed when dropped, whatever returns; those that runs
    // killed by SIGKILL left are removed first.
    let (db, _temporary) = match &args.index {
        Some(db) => (db.clone(), None),
        None => {
            let dir = TempIndex::create_in(&std::env::temp_dir())?;
            (dir.index(), Some(dir))
        }
    };
    // Refused before the index is built, as `dedup --apply` would refuse it after.
    mhdb::apply::check_output(&args.inputs, &args.out, args.overwrite)
        .map_err(super::dedup::apply_error)?;
    let start = Instant::now();
    let code = run(create_line(args, &db))?;
    if code != ExitCode::SUCCESS {
        return Ok(code);
    }
    let code = run(add_line(args, &db))?;
    if code != ExitCode::SUCCESS {
        return Ok(code);
    }
    let documents = Db::open_read_only(&db)?.stats()?.live_docs;
    let indexed = start.elapsed().as_secs_f64();
    let Command::Dedup(dedup) = parse(apply_line(args, &db))?.command else {
        unreachable!("apply_line is a dedup command line")
    };
    let source = Databases::open_quietly(&dedup.dbs)?;
    let summary = super::dedup::apply(
        &source,
        args.threshold,
        DedupOptions::default(),
        &dedup.apply,
    )?;
    let written = start.elapsed().as_secs_f64() - indexed;
    let dropped = if args.annotate { 0 } else { summary.dropped };
    if args.json {
        outln!(
            "{}",
            json!({
                "documents": documents,
                "near_duplicates": summary.dropped,
                "rows": summary.rows,
                "kept": summary.kept,
                "dropped": dropped,
                "not_in_index": summary.not_in_index,
                "files": summary.files,
                "out": args.out.to_string_lossy(),
                "index": args.index.as_ref().map(|p| p.to_string_lossy()),
                "seconds": {"index": indexed, "write": written},
            })
        );
    } else {
        message(format_args!(
            "dedup-files: {documents} documents indexed, {} {} ({} rows in, {} out in {} files \
             under {}); {indexed:.1} s to index, {written:.1} s to decide and write",
            summary.dropped,
            match args.metric {
                MetricArg::Jaccard => "near-duplicates",
                MetricArg::Containment => "contained in another",
            },
            summary.rows,
            summary.rows - dropped,
            summary.files,
            args.out.display()
        ));
    }
    Ok(ExitCode::SUCCESS)
}

/// Parses a command line of another command (the arguments come from this one's, checked
/// already; an error is still a usage error).
fn parse(line: Vec<OsString>) -> CliResult<Cli> {
    Cli::try_parse_from(line).map_err(|e| CliError::usage(e.to_string()))
}

/// Runs the command `line` says, as `mhdb` would.
fn run(line: Vec<OsString>) -> CliResult<ExitCode> {
    super::run(parse(line)?)
}

/// `mhdb` and `parts`, as a command line.
fn line(parts: &[&OsStr]) -> Vec<OsString> {
    std::iter::once(OsStr::new("mhdb"))
        .chain(parts.iter().copied())
        .map(OsStr::to_owned)
        .collect()
}

fn create_line(args: &DedupFilesArgs, db: &Path) -> Vec<OsString> {
    let t = args.threshold.to_string();
    let shingle = args.shingle.to_string();
    let mut out = line(&[
        "create".as_ref(),
        db.as_os_str(),
        "--threshold".as_ref(),
        t.as_ref(),
        "--shingle".as_ref(),
        shingle.as_ref(),
    ]);
    if args.metric == MetricArg::Containment {
        // A drop decided by an estimate of containment errs more the larger the container is
        // than the document; with the sets stored, every drop is by exact containment.
        out.extend(["--metric", "containment", "--store-sets"].map(OsString::from));
    }
    out
}

/// The fields `add` and `dedup --apply` both read the rows by.
fn field_flags(args: &DedupFilesArgs) -> Vec<OsString> {
    let mut flags: Vec<OsString> = vec!["--text-field".into(), args.text_field.clone().into()];
    if args.id_from_path {
        flags.push("--id-from-path".into());
    } else {
        flags.extend(["--id-field".into(), args.id_field.clone().into()]);
    }
    let limit = args.size.max_document_bytes.to_string();
    flags.extend(["--max-document-bytes".into(), limit.into()]);
    flags
}

fn add_line(args: &DedupFilesArgs, db: &Path) -> Vec<OsString> {
    let mut out = line(&["add".as_ref(), db.as_os_str()]);
    out.extend(args.inputs.iter().map(|p| p.as_os_str().to_owned()));
    out.extend(field_flags(args));
    // An id met twice: stop at once, or let the first row's document stand.
    let on_duplicate = match args.on_duplicate {
        OnRepeat::Error => "error",
        OnRepeat::KeepFirst | OnRepeat::KeepAll => "skip",
    };
    out.extend(["--on-duplicate".into(), on_duplicate.into()]);
    if let Some(field) = args.keep.keep_field() {
        out.extend(["--keep-field".into(), field.into()]);
        if let Some(name) = args.keep_type.and_then(|t| t.to_possible_value()) {
            out.extend(["--keep-type".into(), name.get_name().into()]);
        }
    }
    if args.skip_invalid {
        out.push("--skip-invalid".into());
    }
    out
}

fn apply_line(args: &DedupFilesArgs, db: &Path) -> Vec<OsString> {
    let mut out = line(&["dedup".as_ref(), db.as_os_str(), "--apply".as_ref()]);
    out.extend(args.inputs.iter().map(|p| p.as_os_str().to_owned()));
    out.extend(["--out".into(), args.out.as_os_str().to_owned()]);
    out.extend(field_flags(args));
    let keep = args.keep.name();
    let on_duplicate = match args.on_duplicate {
        OnRepeat::Error => "error",
        OnRepeat::KeepFirst => "keep-first",
        OnRepeat::KeepAll => "keep-all",
    };
    out.extend(["--keep".into(), keep.into()]);
    out.extend(["--on-duplicate".into(), on_duplicate.into()]);
    if args.annotate {
        out.push("--annotate".into());
    }
    if let Some(prefix) = &args.annotate_prefix {
        out.extend(["--annotate-prefix".into(), prefix.into()]);
    }
    if args.overwrite {
        out.push("--overwrite".into());
    }
    out
}
