//! Choosing an index's parameters: `mhdb create` and `mhdb tune`, and the S-curve both
//! `tune` and `demo` print.

use std::path::Path;
use std::process::ExitCode;

use mhdb::db::{
    Db, IndexOption, IndexOptions, IndexParams, KindChoice, Options, OptionsError, ParamsWarning,
    weak_banding,
};
use mhdb::sketch::{LshParams, SketchParams, TuneOptions, tune_all};
use serde_json::json;

use super::args::{CreateArgs, KindArg, MetricArg, TuneArgs};
use super::output::{CliError, CliResult, message, outln, warn};
use super::shapes;

/// The S-curve points `tune` and `demo` print: J = 0.05, 0.10, …, 0.95.
pub fn curve_points() -> Vec<f64> {
    (1..=19).map(|i| i as f64 * 0.05).collect()
}

/// Prints `warning` on stderr in the command line's words.
pub fn print_warning(warning: &ParamsWarning) {
    match *warning {
        ParamsWarning::WeakBanding {
            lsh,
            threshold,
            probability: p,
        } => warn(format_args!(
            "{} bands × {} rows make only {:.1}% of the pairs at J = {threshold} candidates \
             (P({threshold}) = {p:.4} < 0.5): most near-duplicates at the threshold will be \
             missed; `mhdb tune --threshold {threshold}` lists better choices",
            lsh.bands,
            lsh.rows,
            p * 100.0
        )),
        ParamsWarning::StoredSetsShortOfRecall {
            band_slots,
            threshold,
            probability: p,
        } => warn(format_args!(
            "with --store-sets the bands are meant to make ≥ {} of the pairs at the \
             threshold candidates; over {band_slots} band slots the best for J = {threshold} is \
             {p:.4} (more --band-slots, up to --perms, reach further)",
            mhdb::db::STORED_SETS_RECALL
        )),
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

/// The options `mhdb create`'s flags give (a flag left out is left to the library's default).
fn create_options(args: &CreateArgs) -> IndexOptions {
    let sketch = &args.sketch;
    IndexOptions {
        kind: Some(match args.kind {
            KindArg::Minhash => KindChoice::MinHash,
            KindArg::Simhash => KindChoice::SimHash,
        }),
        threshold: args.threshold,
        num_perm: sketch.perms,
        // `--scheme` shows its default in --help, so it is always set: only another scheme
        // counts as given (a simhash index accepts `--scheme oph`).
        scheme: Some(sketch.scheme).filter(|&s| s != SketchParams::default().scheme),
        seed: Some(sketch.seed),
        shingle: Some(sketch.shingle),
        nfkc: Some(sketch.nfkc),
        bits: args.bits,
        band_slots: args.band_slots,
        bands: args.bands,
        rows: args.rows,
        bucket_cap: Some(args.bucket_cap),
        store_sets: args.store_sets.then_some(true),
        max_hamming: args.max_hamming,
        weighting: args.weighting,
        containment: args.metric.map(|m| m == MetricArg::Containment),
        ..IndexOptions::default()
    }
}

/// The flag that sets `option`.
fn flag(option: IndexOption) -> String {
    match option {
        IndexOption::NumPerm => "--perms".into(),
        IndexOption::Bands | IndexOption::Rows => "--bands/--rows".into(),
        IndexOption::Containment => "--metric".into(),
        other => format!("--{}", other.name().replace('_', "-")),
    }
}

/// A refusal of the options in the command line's words.
fn options_error(e: OptionsError) -> CliError {
    match e {
        OptionsError::WrongKind {
            kind: KindChoice::MinHash,
            ..
        } => CliError::usage("--max-hamming and --weighting are for --kind simhash"),
        OptionsError::WrongKind { option, .. } => CliError::usage(format!(
            "{} is a MinHash flag; a simhash index is set by --max-hamming, --weighting, \
             --shingle, --seed and --nfkc",
            flag(option)
        )),
        OptionsError::BandsWithoutRows => {
            CliError::usage("give both --bands and --rows, or neither")
        }
        OptionsError::Invalid(e) => e.into(),
    }
}

/// The parameters `mhdb create`'s flags select; warns about a banding that will disappoint.
fn create_params(args: &CreateArgs) -> CliResult<IndexParams> {
    let params = create_options(args).build().map_err(options_error)?;
    for warning in params.warnings() {
        print_warning(&warning);
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
    super::databases::note_test_identity()?;
    let created = Db::create(
        &args.db,
        params,
        Options {
            key,
            exact_hash: !args.no_exact_hash,
            band_filters: !args.no_band_filters,
            set_size: !args.no_set_size,
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
    } else if p.candidate_probability(threshold).is_none() {
        // A containment index: a candidate's chance depends on the sizes of both sets.
        message(format_args!(
            "created {}: {}",
            args.db.display(),
            shapes::params_text(p),
        ));
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
    // The slots, the threshold and the banding named, defaulted and checked as `create`'s;
    // the bands are tuned over the slots they cover.
    let band_slots = args
        .band_slots
        .unwrap_or_else(|| mhdb::db::default_band_slots(perms));
    let built = IndexOptions {
        threshold: Some(threshold),
        num_perm: Some(perms),
        band_slots: Some(band_slots),
        bands: args.bands,
        rows: args.rows,
        ..IndexOptions::default()
    }
    .build()
    .map_err(options_error)?;
    let mut all = tune_all(threshold, band_slots, &TuneOptions::default())?;
    if args.bands.is_some() {
        // Every valid (bands, rows) is among the scored choices.
        all.retain(|t| t.params == built.lsh);
    } else {
        all.truncate(alternatives.max(1));
    }
    let Some(first) = all.first() else {
        return Err(CliError::usage(format!(
            "no (bands, rows) choice for {band_slots} band slots"
        )));
    };
    if let Some(warning) = weak_banding(first.params, threshold) {
        print_warning(&warning);
    }
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
                "band_slots": band_slots,
                "choices": choices,
                "s_curve": shapes::s_curve(&first.params, &curve_points()),
            })
        );
        return Ok(ExitCode::SUCCESS);
    }
    outln!("threshold {threshold}, bands over {band_slots} of {perms} slots");
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
