//! `mhdb query`: one text, one file, or one query per JSONL line (answered in parallel).

use std::io::Write;
use std::process::ExitCode;

use mhdb::db::{Db, QueryOptions, QueryResult};
use rayon::prelude::*;

use super::args::QueryArgs;
use super::input::{At, Dash, Input, JsonLine, read_text};
use super::output::{CliError, CliResult, jaccard_json, key_text};

fn matches_json(r: &QueryResult) -> serde_json::Value {
    serde_json::Value::Array(
        r.matches
            .iter()
            .map(|m| {
                serde_json::json!({
                    "id": key_text(&m.key),
                    "jaccard": jaccard_json(m.jaccard),
                })
            })
            .collect(),
    )
}

/// `mhdb query`.
pub fn query(args: &QueryArgs) -> CliResult<ExitCode> {
    if let Some(t) = args.threshold
        && !(0.0..=1.0).contains(&t)
    {
        return Err(CliError::usage(format!(
            "--threshold must be in [0, 1], got {t}"
        )));
    }
    let db = Db::open_read_only(&args.db)?;
    let opts = QueryOptions {
        threshold: args.threshold,
        limit: args.limit,
    };
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    if let Some(path) = &args.jsonl {
        // The whole file is read first, then every line is answered on every core; the
        // answers are printed in order up to the first bad line, which ends the command.
        let mut input = Input::open(path, Dash::File)?;
        let lines = input.read_all()?;
        let name = input.name();
        let results: Vec<CliResult<serde_json::Value>> = lines
            .par_iter()
            .map(|line| {
                let at = At {
                    name,
                    line: line.no,
                };
                let mut record = JsonLine::parse(&line.bytes, at).map_err(CliError::other)?;
                let id = record.id_as_given(&args.id_field);
                let text = record
                    .take_text(&args.text_field)
                    .map_err(CliError::other)?;
                let r = db.query_text(&text, &opts)?;
                Ok(serde_json::json!({"id": id, "matches": matches_json(&r)}))
            })
            .collect();
        for r in results {
            writeln!(out, "{}", r?)?;
        }
        out.flush()?;
        return Ok(ExitCode::SUCCESS);
    }
    let text = match (&args.text, &args.file) {
        (Some(t), _) => t.clone(),
        (None, Some(f)) => read_text(f)?.map_err(CliError::other)?,
        (None, None) => return Err(CliError::usage("give --text, --file or --jsonl")),
    };
    let r = db.query_text(&text, &opts)?;
    if args.json {
        let value = serde_json::json!({
            "matches": matches_json(&r),
            "candidates": r.stats.candidates,
            "verified": r.stats.verified,
            "hot_buckets": r.stats.hot_buckets,
        });
        writeln!(out, "{value}")?;
    } else {
        for m in &r.matches {
            writeln!(out, "{:.4}\t{}", m.jaccard, key_text(&m.key))?;
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
