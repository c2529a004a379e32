//! Commands on keys: `mhdb get`, `mhdb keys` and `mhdb delete`.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use mhdb::db::{Db, Options, WriteBatch};

use super::args::{DbArg, DeleteArgs, GetArgs};
use super::input::{At, Dash, Input, JsonLine};
use super::output::{CliError, CliResult, outln};

/// `mhdb get`: exit code 1 when a key is absent (like grep finding nothing).
pub fn get(args: &GetArgs) -> CliResult<ExitCode> {
    let db = Db::open_read_only(&args.db)?;
    let mut out = std::io::stdout().lock();
    let mut missing = false;
    for key in &args.keys {
        let stored = db.get(key)?;
        missing |= stored.is_none();
        if args.json {
            let value = match &stored {
                Some(s) => serde_json::json!({
                    "id": key, "present": true, "bits": s.bits,
                    "signature": s.slots()?,
                }),
                None => serde_json::json!({"id": key, "present": false}),
            };
            writeln!(out, "{value}")?;
        } else {
            let state = if stored.is_some() {
                "present"
            } else {
                "absent"
            };
            writeln!(out, "{key}\t{state}")?;
        }
    }
    Ok(if missing {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// `mhdb keys`.
pub fn keys(args: &DbArg) -> CliResult<ExitCode> {
    let db = Db::open_read_only(&args.db)?;
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    for key in db.keys()? {
        out.write_all(&key)?;
        out.write_all(b"\n")?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// `mhdb delete`: the keys given and those named in `--jsonl`, in one write.
pub fn delete(args: &DeleteArgs) -> CliResult<ExitCode> {
    let db = Db::open(&args.db, Options::default())?;
    let mut all = args.keys.clone();
    if let Some(path) = &args.jsonl {
        read_ids(path, &args.id_field, &mut all)?;
    }
    if all.is_empty() {
        return Err(CliError::usage("give keys to delete or --jsonl FILE"));
    }
    let mut batch = WriteBatch::new();
    let mut present = 0usize;
    for key in &all {
        if db.contains(key)? {
            present += 1;
        }
        batch.delete(key);
    }
    db.write(&batch)?;
    outln!("deleted {present} of {} keys", all.len());
    Ok(ExitCode::SUCCESS)
}

/// Appends the ids of a JSONL file to `ids`, stopping at the first bad line.
fn read_ids(path: &Path, field: &str, ids: &mut Vec<String>) -> CliResult {
    let mut input = Input::open(path, Dash::File)?;
    while let Some(line) = input.next_line()? {
        let at = At {
            name: input.name(),
            line: line.no,
        };
        let id = JsonLine::parse(&line.bytes, at).and_then(|record| record.key(field));
        ids.push(id.map_err(CliError::other)?);
    }
    Ok(())
}
