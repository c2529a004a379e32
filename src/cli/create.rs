//! Choosing an index's parameters: `mhdb create` and `mhdb tune`, and the S-curve both
//! `tune` and `demo` print.

use std::process::ExitCode;

use mhdb::db::{Db, IndexParams, Options};
use mhdb::sketch::{LshParams, TuneOptions, tune_all};

use super::args::{CreateArgs, TuneArgs};
use super::output::{CliResult, outln};

/// `mhdb create`.
pub fn create(args: &CreateArgs) -> CliResult<ExitCode> {
    let threshold = args.threshold;
    let mut params = IndexParams::for_threshold(args.sketch.params(), args.bits, threshold)?;
    if let (Some(b), Some(r)) = (args.bands, args.rows) {
        params.lsh = LshParams::new(b, r, args.sketch.perms)?;
    }
    params.bucket_cap = (args.bucket_cap != 0).then_some(args.bucket_cap);
    params.validate()?;
    let created = Db::create(&args.db, params, Options::default())?;
    let p = created.params();
    outln!(
        "created {}: {} {} slots, {}, {} bits, {} bands × {} rows (P({threshold}) = {:.4}), bucket cap {}",
        args.db.display(),
        p.sketch.num_perm,
        p.sketch.scheme,
        p.sketch.shingle.kind,
        p.bits,
        p.lsh.bands,
        p.lsh.rows,
        p.lsh.probability(threshold),
        p.bucket_cap.map_or("none".to_string(), |c| c.to_string())
    );
    Ok(ExitCode::SUCCESS)
}

/// `mhdb tune`: the best (bands, rows) choices for a threshold, and the best one's S-curve.
pub fn tune(args: &TuneArgs) -> CliResult<ExitCode> {
    let &TuneArgs {
        threshold,
        perms,
        alternatives,
    } = args;
    let all = tune_all(threshold, perms, &TuneOptions::default())?;
    outln!("threshold {threshold}, {perms} slots");
    outln!("  bands  rows  P(t)      false-pos  false-neg");
    for t in all.iter().take(alternatives.max(1)) {
        outln!(
            "  {:5}  {:4}  {:.5}   {:.5}    {:.5}{}",
            t.params.bands,
            t.params.rows,
            t.recall_at_threshold,
            t.false_positive,
            t.false_negative,
            if t.meets_recall_floor {
                ""
            } else {
                "  (below the 0.95 recall floor)"
            }
        );
    }
    if let Some(best) = all.first() {
        print_curve(&best.params)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Prints the probability of becoming a candidate at J = 0.05, 0.10, …, 0.95, with bars.
pub fn print_curve(params: &LshParams) -> CliResult {
    outln!(
        "S-curve of {} bands × {} rows (probability of becoming a candidate):",
        params.bands,
        params.rows
    );
    let points: Vec<f64> = (1..=19).map(|i| i as f64 * 0.05).collect();
    for (s, p) in params.curve(&points) {
        let bar = "#".repeat((p * 40.0).round() as usize);
        outln!("  J={s:.2}  {p:.4}  {bar}");
    }
    Ok(())
}
