//! `mhdb demo`: sketch every file of a directory and print the near-duplicate pairs, without a
//! database.

use std::path::PathBuf;
use std::process::ExitCode;

use mhdb::sketch::{MinHasher, TuneOptions};
use serde_json::{Value, json};

use super::args::DemoArgs;
use super::create::{curve_points, print_curve};
use super::input::{files_in, read_text};
use super::output::{CliError, CliResult, outln};
use super::shapes;

/// `mhdb demo`.
pub fn demo(args: &DemoArgs) -> CliResult<ExitCode> {
    let threshold = args.threshold;
    let sketch = &args.sketch;
    let hasher = MinHasher::new(sketch.params())?;
    let paths = files_in(&args.dir)?;
    let mut texts = Vec::with_capacity(paths.len());
    for p in &paths {
        texts
            .push(read_text(p, mhdb::input::DEFAULT_MAX_DOCUMENT_BYTES)?.map_err(CliError::other)?);
    }
    let signatures = hasher.sketch_batch(&texts);
    // The banding an index of these slots would get (over its first k_b slots); the pairs
    // below compare every slot.
    let band_slots = mhdb::db::default_band_slots(sketch.num_perm());
    let tuning = mhdb::sketch::tune(threshold, band_slots, &TuneOptions::default())?;
    let name = |p: &PathBuf| {
        p.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    let mut pairs = Vec::new();
    for i in 0..signatures.len() {
        // A text without shingles is similar to nothing (two empty files are no pair).
        if signatures[i].is_empty_set() {
            continue;
        }
        for j in i + 1..signatures.len() {
            let est = signatures[i].jaccard(&signatures[j])?;
            if est >= threshold && !signatures[j].is_empty_set() {
                pairs.push((est, name(&paths[i]), name(&paths[j])));
            }
        }
    }
    pairs.sort_by(|a, b| b.0.total_cmp(&a.0));
    if args.json {
        let pairs: Vec<Value> = pairs
            .into_iter()
            .map(|(est, a, b)| shapes::pair(a.into(), b.into(), est, None))
            .collect();
        outln!(
            "{}",
            json!({
                "documents": paths.len(),
                "bands": tuning.params.bands,
                "rows": tuning.params.rows,
                "pairs": pairs,
                "s_curve": shapes::s_curve(&tuning.params, &curve_points()),
            })
        );
        return Ok(ExitCode::SUCCESS);
    }
    outln!(
        "{} documents, {} {} slots, {}; LSH {} bands × {} rows for threshold {threshold}",
        paths.len(),
        sketch.num_perm(),
        sketch.scheme,
        sketch.shingle,
        tuning.params.bands,
        tuning.params.rows
    );
    outln!("near-duplicate pairs (estimated Jaccard ≥ {threshold}):");
    for (est, a, b) in &pairs {
        outln!("  {est:.3}  {a}  ~  {b}");
    }
    if pairs.is_empty() {
        outln!("  (none)");
    }
    print_curve(&tuning.params)?;
    Ok(ExitCode::SUCCESS)
}
