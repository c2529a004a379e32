//! Choosing an index's parameters: `mhdb create` and `mhdb tune`, and the S-curve both
//! `tune` and `demo` print.

use std::path::Path;
use std::process::ExitCode;

use mhdb::db::{Db, IndexParams, Options};
use mhdb::sketch::{LshParams, SimParams, SketchParams, TuneOptions, tune_all};
use serde_json::json;

use super::args::{CreateArgs, KindArg, TuneArgs};
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

/// The parameters `mhdb create`'s flags select.
fn create_params(args: &CreateArgs) -> CliResult<IndexParams> {
    let mut params = match args.kind {
        KindArg::Minhash => {
            if args.max_hamming.is_some() || args.weighting.is_some() {
                return Err(CliError::usage(
                    "--max-hamming and --weighting are for --kind simhash".to_string(),
                ));
            }
            let sketch = args.sketch.params();
            let mut params =
                IndexParams::with_shape(sketch, args.bits, args.band_slots, args.threshold)?;
            if args.store_sets {
                params = params.with_stored_sets()?;
            }
            if let (Some(b), Some(r)) = (args.bands, args.rows) {
                params.lsh = LshParams::new(b, r, params.band_slots)?;
            }
            params
        }
        KindArg::Simhash => {
            // Flags left at their defaults cannot be told from absent ones; any other value
            // is a MinHash setting a simhash index would silently ignore.
            let defaults = SketchParams::default();
            let minhash_flags = [
                ("--perms", args.sketch.perms.is_some()),
                ("--scheme", args.sketch.scheme != defaults.scheme),
                ("--bits", args.bits.is_some()),
                ("--bands/--rows", args.bands.is_some()),
                ("--threshold", args.threshold != 0.8),
                ("--store-sets", args.store_sets),
                ("--band-slots", args.band_slots.is_some()),
            ];
            if let Some((flag, _)) = minhash_flags.iter().find(|(_, given)| *given) {
                return Err(CliError::usage(format!(
                    "{flag} is a MinHash flag; a simhash index is set by --max-hamming, \
                     --weighting, --shingle, --seed and --nfkc"
                )));
            }
            let sketch = args.sketch.params();
            IndexParams::simhash(SimParams {
                seed: sketch.seed,
                shingle: sketch.shingle,
                weighting: args.weighting.unwrap_or_default(),
                max_hamming: args.max_hamming.unwrap_or(3),
            })?
        }
    };
    params.bucket_cap = (args.bucket_cap != 0).then_some(args.bucket_cap);
    params.validate()?;
    if params.sim_params().is_none() {
        warn_weak_banding(&params.lsh, args.threshold);
        let p = params.lsh.probability(args.threshold);
        let floor = mhdb::db::STORED_SETS_RECALL;
        if params.store_sets && (0.5..floor).contains(&p) {
            warn(format_args!(
                "with --store-sets the bands are meant to make ≥ {floor} of the pairs at the \
                 threshold candidates; over {} band slots the best for J = {} is {p:.4} \
                 (more --band-slots, up to --perms, reach further)",
                params.band_slots, args.threshold
            ));
        }
    }
    Ok(params)
}

/// `mhdb create`.
pub fn create(args: &CreateArgs) -> CliResult<ExitCode> {
    refuse_non_directory(&args.db)?;
    let params = create_params(args)?;
    let threshold = params.threshold;
    let key = match &args.key_file {
        Some(path) => Some(mhdb::sketch::SecretKey::from_file(path)?),
        None => None,
    };
    if key.is_none() && std::env::var_os(mhdb::sketch::keyed::KEY_FILE_ENV).is_some() {
        warn(format_args!(
            "{} is set, but create takes a key only from --key-file: {} is not keyed",
            mhdb::sketch::keyed::KEY_FILE_ENV,
            args.db.display()
        ));
    }
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
    if let Some(sim) = p.sim_params() {
        let blocks = sim.block_count();
        if args.json {
            outln!(
                "{}",
                json!({"created": args.db.to_string_lossy(), "params": shapes::params(p)})
            );
        } else {
            let (short, long) = (64 / blocks, 64_usize.div_ceil(blocks));
            let widths = if short == long {
                format!("{short}")
            } else {
                format!("{short}–{long}")
            };
            message(format_args!(
                "created {}: {} ({blocks} blocks of {widths} bits; every document within {} bits is found)",
                args.db.display(),
                shapes::params_text(p),
                sim.max_hamming,
            ));
        }
        return Ok(ExitCode::SUCCESS);
    }
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
    // The slots a signature can have, checked as `create` checks them.
    SketchParams {
        num_perm: perms,
        ..SketchParams::default()
    }
    .validate()?;
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
