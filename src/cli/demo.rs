//! `mhdb demo`: sketch every file of a directory and print the near-duplicate pairs, without a
//! database.

use std::path::PathBuf;
use std::process::ExitCode;

use mhdb::sketch::{MinHasher, TuneOptions};

use super::args::DemoArgs;
use super::create::print_curve;
use super::input::{files_in, read_text};
use super::output::{CliError, CliResult, outln};

/// `mhdb demo`.
pub fn demo(args: &DemoArgs) -> CliResult<ExitCode> {
    let threshold = args.threshold;
    let sketch = &args.sketch;
    let hasher = MinHasher::new(sketch.params())?;
    let paths = files_in(&args.dir)?;
    let mut texts = Vec::with_capacity(paths.len());
    for p in &paths {
        texts.push(read_text(p)?.map_err(CliError::other)?);
    }
    let signatures = hasher.sketch_batch(&texts);
    let tuning = mhdb::sketch::tune(threshold, sketch.perms, &TuneOptions::default())?;
    outln!(
        "{} documents, {} {} slots, {}; LSH {} bands × {} rows for threshold {threshold}",
        paths.len(),
        sketch.perms,
        sketch.scheme,
        sketch.shingle,
        tuning.params.bands,
        tuning.params.rows
    );
    let name = |p: &PathBuf| {
        p.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    let mut pairs = Vec::new();
    for i in 0..signatures.len() {
        for j in i + 1..signatures.len() {
            let est = signatures[i].jaccard(&signatures[j])?;
            if est >= threshold {
                pairs.push((est, name(&paths[i]), name(&paths[j])));
            }
        }
    }
    pairs.sort_by(|a, b| b.0.total_cmp(&a.0));
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
