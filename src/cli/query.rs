//! `mhdb query`: one text, one file, or one query per JSONL line (answered in parallel).

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;

use mhdb::db::{Db, QueryOptions, QueryResult};
use rayon::prelude::*;

use super::{CliError, CliResult};

#[derive(clap::Args)]
#[command(group(clap::ArgGroup::new("input").required(true).args(["text", "file", "jsonl"])))]
pub struct QueryArgs {
    /// Database directory.
    db: PathBuf,
    /// Query text.
    #[arg(long)]
    text: Option<String>,
    /// File whose whole content is the query.
    #[arg(long)]
    file: Option<PathBuf>,
    /// JSON Lines file: one query per line ({"id": ..., "text": ...}).
    #[arg(long)]
    jsonl: Option<PathBuf>,
    /// Minimum estimated Jaccard (default: the database's threshold).
    #[arg(long)]
    threshold: Option<f64>,
    /// At most this many matches per query, best first.
    #[arg(long)]
    limit: Option<usize>,
    /// JSON output.
    #[arg(long)]
    json: bool,
    /// JSON field holding the id in --jsonl input.
    #[arg(long, default_value = "id")]
    id_field: String,
    /// JSON field holding the text in --jsonl input.
    #[arg(long, default_value = "text")]
    text_field: String,
}

fn matches_json(r: &QueryResult) -> serde_json::Value {
    serde_json::Value::Array(
        r.matches
            .iter()
            .map(|m| {
                serde_json::json!({
                    "id": String::from_utf8_lossy(&m.key),
                    "jaccard": (m.jaccard * 1e6).round() / 1e6,
                })
            })
            .collect(),
    )
}

pub fn run(args: QueryArgs) -> CliResult {
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
        let file = std::fs::File::open(path)
            .map_err(|e| CliError::other(format!("cannot open {}: {e}", path.display())))?;
        let mut lines = Vec::new();
        for (i, line) in BufReader::new(file).split(b'\n').enumerate() {
            let line = line?;
            if !line.iter().all(u8::is_ascii_whitespace) {
                lines.push((i + 1, line));
            }
        }
        let results: Vec<CliResult<serde_json::Value>> = lines
            .par_iter()
            .map(|(no, line)| {
                let origin = format!("{}:{no}", path.display());
                let value: serde_json::Value = serde_json::from_slice(line)
                    .map_err(|e| CliError::other(format!("{origin}: invalid JSON: {e}")))?;
                let id = value
                    .get(&args.id_field)
                    .cloned()
                    .unwrap_or(serde_json::Value::Null);
                let text = value
                    .get(&args.text_field)
                    .and_then(|t| t.as_str())
                    .ok_or_else(|| {
                        CliError::other(format!(
                            "{origin}: missing string field {:?}",
                            args.text_field
                        ))
                    })?;
                let r = db.query_text(text, &opts)?;
                Ok(serde_json::json!({"id": id, "matches": matches_json(&r)}))
            })
            .collect();
        for r in results {
            writeln!(out, "{}", r?)?;
        }
        out.flush()?;
        return Ok(());
    }
    let text = match (&args.text, &args.file) {
        (Some(t), _) => t.clone(),
        (None, Some(f)) => {
            let bytes = std::fs::read(f)
                .map_err(|e| CliError::other(format!("cannot read {}: {e}", f.display())))?;
            String::from_utf8(bytes).map_err(|e| {
                CliError::other(format!(
                    "{} is not UTF-8 (byte offset {})",
                    f.display(),
                    e.utf8_error().valid_up_to()
                ))
            })?
        }
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
            writeln!(out, "{:.4}\t{}", m.jaccard, String::from_utf8_lossy(&m.key))?;
        }
    }
    out.flush()?;
    Ok(())
}
