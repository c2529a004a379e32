//! Commands on keys: `mhdb get`, `mhdb keys` and `mhdb delete`. Keys go in and out escaped
//! as `escape` describes, so that `mhdb keys` and `dedup --format drop` feed `delete -`.

use std::collections::HashSet;
use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use mhdb::db::{Db, Options, WriteBatch};
use serde_json::json;

use super::args::{DeleteArgs, GetArgs, JsonDbArgs};
use super::escape::{key_json, key_text, parse_key_text};
use super::input::Input;
use super::output::{CliError, CliResult, message, outln};
use super::shapes;

/// The keys named by arguments: each escaped as `mhdb keys` prints them, `-` standing for the
/// lines of standard input (read once, however often `-` is given).
fn key_args(args: &[String], keys: &mut Vec<Vec<u8>>) -> CliResult {
    let mut stdin_read = false;
    for (i, arg) in args.iter().enumerate() {
        if arg == "-" {
            if !stdin_read {
                Input::open(Path::new("-"))?.read_key_lines(keys)?;
                stdin_read = true;
            }
            continue;
        }
        let key = parse_key_text(arg.as_bytes()).map_err(|e| {
            CliError::usage(format!(
                "key argument {} ({arg:?}): {e}; keys are written as `mhdb keys` prints them",
                i + 1
            ))
        })?;
        keys.push(key);
    }
    Ok(())
}

/// `mhdb get`: exit code 1 when a key is absent (like grep finding nothing), in text and JSON
/// mode alike, with a message on stderr.
pub fn get(args: &GetArgs) -> CliResult<ExitCode> {
    let db = Db::open_read_only(&args.db)?;
    super::output::report_recovery(&db);
    let mut keys = Vec::new();
    key_args(&args.keys, &mut keys)?;
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let mut missing = 0usize;
    for key in &keys {
        let stored = db.get(key)?;
        missing += usize::from(stored.is_none());
        if args.json {
            let fingerprint = match &stored {
                Some(s) => db.params().stored_fingerprint(s)?,
                None => None,
            };
            let value = match (&stored, fingerprint) {
                // A SimHash index: the fingerprint, as 16 hex digits.
                (Some(_), Some(fp)) => json!({
                    "id": key_json(key), "present": true,
                    "fingerprint": format!("{:016x}", fp.bits()),
                }),
                (Some(s), None) => json!({
                    "id": key_json(key), "present": true, "bits": s.bits,
                    "signature": s.slots()?,
                }),
                (None, _) => json!({"id": key_json(key), "present": false}),
            };
            writeln!(out, "{value}")?;
        } else {
            let state = if stored.is_some() {
                "present"
            } else {
                "absent"
            };
            writeln!(out, "{}\t{state}", key_text(key))?;
        }
    }
    out.flush()?;
    if missing > 0 {
        message(format_args!("{missing} of {} keys absent", keys.len()));
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

/// `mhdb keys`: every live key, escaped, one per line (`--json`: one `{"id"}` per line).
pub fn keys(args: &JsonDbArgs) -> CliResult<ExitCode> {
    let db = Db::open_read_only(&args.db)?;
    super::output::report_recovery(&db);
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    for key in db.keys()? {
        if args.json {
            writeln!(out, "{}", shapes::key_item(&key))?;
        } else {
            writeln!(out, "{}", key_text(&key))?;
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// `mhdb delete`: the keys given, those read from standard input (`-`) and those named in
/// `--jsonl`, all read before anything is deleted, then deleted in one atomic write.
pub fn delete(args: &DeleteArgs) -> CliResult<ExitCode> {
    let reads_stdin = args.keys.iter().any(|k| k == "-");
    if reads_stdin && args.jsonl.as_deref().is_some_and(|p| p.as_os_str() == "-") {
        return Err(CliError::usage(
            "standard input can be read once: give '-' (escaped keys) or --jsonl - (JSON Lines), \
             not both",
        ));
    }
    if args.keys.is_empty() && args.jsonl.is_none() {
        return Err(CliError::usage(
            "give keys to delete, '-' to read them from standard input, or --jsonl FILE",
        ));
    }
    // Everything is read first: a bad line deletes nothing, and in `mhdb dedup --format drop
    // | mhdb delete idx -` the writer opens only once the reader has finished.
    let mut all = Vec::new();
    key_args(&args.keys, &mut all)?;
    if let Some(path) = &args.jsonl {
        Input::open(path)?.read_json_keys(&args.id_field, &mut all)?;
    }
    let db = Db::open(&args.db, Options::default())?;
    super::output::report_recovery(&db);
    let mut seen = HashSet::with_capacity(all.len());
    all.retain(|k| seen.insert(k.clone()));
    drop(seen);
    let mut batch = WriteBatch::new();
    let mut present = 0usize;
    for key in &all {
        present += usize::from(db.contains(key)?);
        batch.delete(key);
    }
    db.write(&batch)?;
    if args.json {
        outln!("{}", json!({"deleted": present, "requested": all.len()}));
    } else {
        message(format_args!("deleted {present} of {} keys", all.len()));
    }
    super::output::close_after_commit(db);
    Ok(ExitCode::SUCCESS)
}
