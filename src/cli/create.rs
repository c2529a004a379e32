//! Choosing an index's parameters: `mhdb create` and `mhdb tune`, and the S-curve both
//! `tune` and `demo` print.

use std::path::Path;
use std::process::ExitCode;

use mhdb::db::{Db, IndexParams, Options};
use mhdb::sketch::{LshParams, TuneOptions, tune_all};
use serde_json::json;

use super::args::{CreateArgs, TuneArgs};
use super::output::{CliError, CliResult, message, outln, warn};
use super::shapes;

/// The S-curve points `tune` and `demo` print: J = 0.05, 0.10, …, 0.95.
pub fn curve_points() -> Vec<f64> {
    (1..=19).map(|i| i as f64 * 0.05).collect()
}

/// Warns (on stderr) when fewer than half the pairs at `threshold` would become candidates.
pub fn warn_weak_banding(lsh: &LshParams, threshold: f64) {
    let p = lsh.probability(threshold);
    if p < 0.5 {
        warn(format_args!(
            "{} bands × {} rows make only {:.1}% of the pairs at J = {threshold} candidates \
             (P({threshold}) = {p:.4} < 0.5): most near-duplicates at the threshold will be \
             missed; `mhdb tune --threshold {threshold}` lists better choices",
            lsh.bands,
            lsh.rows,
            p * 100.0
        ));
    }
}

/// Refuses a path that exists and is not a directory. What a directory may hold (nothing, or
/// the leftovers of an interrupted create, which it replaces) is `Db::create`'s call.
fn refuse_non_directory(dir: &Path) -> CliResult {
    match std::fs::metadata(dir) {
        Ok(meta) if !meta.is_dir() => Err(CliError::usage(format!(
            "{} exists and is not a directory",
            dir.display()
        ))),
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(CliError::other(format!(
            "cannot read {}: {e}",
            dir.display()
        ))),
    }
}

/// `mhdb create`.
pub fn create(args: &CreateArgs) -> CliResult<ExitCode> {
    refuse_non_directory(&args.db)?;
    let threshold = args.threshold;
    let sketch = args.sketch.params();
    let band_slots = args.band_slots.unwrap_or(sketch.num_perm);
    let mut params = IndexParams::with_band_slots(sketch, args.bits, band_slots, threshold)?;
    if let (Some(b), Some(r)) = (args.bands, args.rows) {
        params.lsh = LshParams::new(b, r, band_slots)?;
    }
    params.bucket_cap = (args.bucket_cap != 0).then_some(args.bucket_cap);
    params.validate()?;
    warn_weak_banding(&params.lsh, threshold);
    let key = match &args.key_file {
        Some(path) => Some(mhdb::sketch::SecretKey::from_file(path)?),
        None => None,
    };
    let created = Db::create(
        &args.db,
        params,
        Options {
            key,
            ..Options::default()
        },
    )?;
    let p = created.params();
    let probability = p.lsh.probability(threshold);
    if args.json {
        outln!(
            "{}",
            json!({
                "created": args.db.to_string_lossy(),
                "params": shapes::params(p),
                "probability_at_threshold": shapes::round6(probability),
            })
        );
    } else {
        message(format_args!(
            "created {}: {} (P({threshold}) = {probability:.4})",
            args.db.display(),
            shapes::params_text(p),
        ));
    }
    Ok(ExitCode::SUCCESS)
}

/// `mhdb tune`: the best (bands, rows) choices for a threshold (or the one given), and the
/// first one's S-curve.
pub fn tune(args: &TuneArgs) -> CliResult<ExitCode> {
    let &TuneArgs {
        threshold,
        perms,
        alternatives,
        ..
    } = args;
    let mut all = tune_all(threshold, perms, &TuneOptions::default())?;
    if let (Some(b), Some(r)) = (args.bands, args.rows) {
        let given = LshParams::new(b, r, perms)?;
        // Every valid (bands, rows) is among the scored choices.
        all.retain(|t| t.params == given);
    } else {
        all.truncate(alternatives.max(1));
    }
    let Some(first) = all.first() else {
        return Err(CliError::usage(format!(
            "no (bands, rows) choice for {perms} slots"
        )));
    };
    warn_weak_banding(&first.params, threshold);
    if args.json {
        let choices: Vec<_> = all
            .iter()
            .map(|t| {
                json!({
                    "bands": t.params.bands,
                    "rows": t.params.rows,
                    "probability_at_threshold": shapes::round6(t.recall_at_threshold),
                    "false_positive": shapes::round6(t.false_positive),
                    "false_negative": shapes::round6(t.false_negative),
                    "meets_recall_floor": t.meets_recall_floor,
                })
            })
            .collect();
        outln!(
            "{}",
            json!({
                "threshold": threshold,
                "perms": perms,
                "choices": choices,
                "s_curve": shapes::s_curve(&first.params, &curve_points()),
            })
        );
        return Ok(ExitCode::SUCCESS);
    }
    outln!("threshold {threshold}, {perms} slots");
    outln!("  bands  rows  P(t)      false-pos  false-neg");
    for t in &all {
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
    print_curve(&first.params)?;
    Ok(ExitCode::SUCCESS)
}

/// Prints the probability of becoming a candidate at J = 0.05, 0.10, …, 0.95, with bars.
pub fn print_curve(params: &LshParams) -> CliResult {
    outln!(
        "S-curve of {} bands × {} rows (probability of becoming a candidate):",
        params.bands,
        params.rows
    );
    for (s, p) in params.curve(&curve_points()) {
        let bar = "#".repeat((p * 40.0).round() as usize);
        outln!("  J={s:.2}  {p:.4}  {bar}");
    }
    Ok(())
}
