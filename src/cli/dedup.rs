//! `mhdb dedup`: every near-duplicate pair, star cluster, or key to drop, verified at a
//! threshold, in one database or across shards as one index.

use std::io::Write;
use std::process::ExitCode;

use indicatif::ProgressBar;
use mhdb::apply::{Annotate, ApplyError, ApplyOptions, Decisions, Event, Keep, OnRepeat, Summary};
use mhdb::db::{DedupOptions, Metric};
use mhdb::input::{Fields, Id};

use super::args::{DedupApplyArgs, DedupArgs, DedupFormat, OnRepeat as OnRepeatArg};
use super::databases::Databases;
use super::escape::key_text;
use super::output::{CliError, CliResult, message, progress};
use super::shapes;

/// `mhdb dedup`: the results on stdout, a summary line on stderr.
pub fn dedup(args: &DedupArgs) -> CliResult<ExitCode> {
    let source = Databases::open(&args.dbs)?;
    let db = source.first();
    if db.params().metric() == Metric::Containment {
        return dedup_contained(&source, args);
    }
    if !args.apply.documents.is_empty() {
        return Err(CliError::usage(format!(
            "--documents is for a containment index, whose documents are read again; {} is a \
             {} index: its dedup needs only the index",
            db.path().display(),
            db.params().metric()
        )));
    }
    if args.containment.is_some() {
        return Err(CliError::usage(format!(
            "--containment is for a containment index; {} is a {} index (use --threshold)",
            db.path().display(),
            db.params().metric()
        )));
    }
    let t = super::query::threshold_arg(db, args.threshold, args.max_distance)?;
    super::query::warn_below_tuning(db, t);
    let t = t.unwrap_or(db.params().threshold);
    // What the threshold means, for the summary lines.
    let at = db.params().describe_threshold(t);
    let opts = DedupOptions {
        estimate_only: args.no_exact,
        ..DedupOptions::default()
    };
    if !args.apply.apply.is_empty() {
        apply(&source, t, opts, &args.apply)?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let exact = db.params().store_sets && !args.no_exact;
    match args.format {
        DedupFormat::Pairs => {
            let bar = progress(
                Some(db.params().lsh.bands as u64),
                "{bar:40} band {pos}/{len} {percent}% {elapsed} eta {eta}",
            );
            let stats = source.dedup_pairs_with_options(
                t,
                opts,
                &mut |p| {
                    let line = shapes::dedup_pair(&p, exact);
                    writeln!(out, "{line}").map_err(|e| mhdb::Error::Io {
                        path: None,
                        op: "write output",
                        source: e,
                    })
                },
                &mut |band, _| {
                    if let Some(b) = &bar {
                        b.set_position(band as u64);
                    }
                },
            )?;
            if let Some(b) = &bar {
                b.finish_and_clear();
            }
            message(format_args!(
                "{} pairs at {at} ({}{} candidate comparisons, {} capped buckets)",
                stats.pairs,
                match stats.exact_copies {
                    0 => String::new(),
                    n => format!("{n} of them exact copies, "),
                },
                stats.compared,
                stats.capped_buckets
            ));
        }
        DedupFormat::Clusters | DedupFormat::Drop if args.apply.keep != Keep::First => {
            let clusters = ranked_clusters(&source, t, opts, args, &mut out)?;
            message(format_args!("{clusters} clusters at {at}"));
        }
        DedupFormat::Clusters | DedupFormat::Drop => {
            let mut clusters = 0u64;
            let stats = source.for_each_dedup_cluster_with_options(t, opts, &mut |c| {
                clusters += 1;
                let (keep, dups) = c
                    .split_first()
                    .map_or((None, &[][..]), |(k, d)| (Some(k), d));
                let io = |e: std::io::Error| mhdb::Error::Io {
                    path: None,
                    op: "write output",
                    source: e,
                };
                if args.format == DedupFormat::Clusters {
                    let line = shapes::cluster(keep.map(Vec::as_slice), dups);
                    writeln!(out, "{line}").map_err(io)?;
                } else {
                    for d in dups {
                        if args.json {
                            writeln!(out, "{}", shapes::key_item(d)).map_err(io)?;
                        } else {
                            writeln!(out, "{}", key_text(d)).map_err(io)?;
                        }
                    }
                }
                Ok(())
            })?;
            if stats.capped_buckets > 0 {
                message(format_args!(
                    "{} buckets over the bucket cap were cut to it",
                    stats.capped_buckets
                ));
            }
            match stats.exact_copies {
                0 => message(format_args!("{clusters} clusters at {at}")),
                n => message(format_args!(
                    "{clusters} clusters at {at} ({n} exact copies among their members)"
                )),
            }
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// `mhdb dedup` of a containment index: each document that another, ahead of it in the keep
/// order, holds at least C of is dropped from the `--apply` inputs, which are read twice.
fn dedup_contained(source: &Databases, args: &DedupArgs) -> CliResult<ExitCode> {
    let db = source.first();
    if args.threshold.is_some() || args.max_distance.is_some() {
        return Err(CliError::usage(format!(
            "{} is a containment index: it is deduplicated by containment (--containment C), \
             not by --threshold or --max-distance",
            db.path().display()
        )));
    }
    if args.apply.apply.is_empty() && args.apply.documents.is_empty() {
        return Err(CliError::usage(format!(
            "dedup of a containment index reads its documents again (the index keeps b-bit \
             signatures, and a containment query needs the full ones): give them as add read \
             them, with --apply INPUT --out DIR, or --documents INPUT with --format clusters \
             or drop ({})",
            db.path().display()
        )));
    }
    if args.apply.apply.is_empty() && args.format == DedupFormat::Pairs {
        return Err(CliError::usage(
            "a containment index is deduplicated into clusters or a list of the dropped keys \
             (--format clusters or drop): containment is not symmetric, and the document that \
             holds a dropped one is its cluster's kept document",
        ));
    }
    if !db.params().store_sets || args.no_exact {
        super::output::warn(format_args!(
            "{} is decided by containment estimated from b-bit signatures, whose error grows \
             with the container's size over the document's (±0.13 at 8×, format/containment.md \
             §4): a drop may be wrong; an index created with --store-sets decides exactly",
            db.path().display()
        ));
    }
    let t = args.containment.unwrap_or(db.params().threshold);
    let opts = DedupOptions {
        estimate_only: args.no_exact,
        ..DedupOptions::default()
    };
    if args.apply.apply.is_empty() {
        let options = apply_options(t, opts, &args.apply);
        let mut bar: Option<ProgressBar> = None;
        let decided = mhdb::apply::containment_decisions(
            &**source,
            &args.apply.documents,
            &options,
            &mut |event| {
                if let Event::Queried(done) = event {
                    queried_bar(&mut bar).set_position(done);
                }
            },
        );
        if let Some(b) = bar.take() {
            b.finish_and_clear();
        }
        let mut out = std::io::BufWriter::new(std::io::stdout().lock());
        let clusters = write_clusters(&decided.map_err(apply_error)?, args, &mut out)?;
        out.flush()?;
        message(format_args!("{clusters} clusters at containment {t}"));
        return Ok(ExitCode::SUCCESS);
    }
    apply(source, t, opts, &args.apply)?;
    Ok(ExitCode::SUCCESS)
}

/// The progress bar of a containment decision's queries, made when first needed.
fn queried_bar(bar: &mut Option<ProgressBar>) -> &ProgressBar {
    bar.get_or_insert_with(|| {
        progress(
            None,
            "{spinner} containment: {pos} documents queried {per_sec}",
        )
        .unwrap_or_else(ProgressBar::hidden)
    })
}

/// `--format clusters|drop` with a keep order other than `first`: the decision pass's
/// clusters (each kept document with the documents it dropped), or the dropped keys. Returns
/// the number of clusters.
fn ranked_clusters(
    source: &Databases,
    t: f64,
    opts: DedupOptions,
    args: &DedupArgs,
    out: &mut impl Write,
) -> CliResult<u64> {
    let decisions = Decisions::compute(&**source, t, opts, &args.apply.keep, &mut |_, _| {})?;
    write_clusters(&decisions, args, out)
}

/// `decisions` as `--format clusters` (each kept document with the documents it dropped) or
/// `drop` (the dropped keys). Returns the number of clusters.
fn write_clusters(decisions: &Decisions, args: &DedupArgs, out: &mut impl Write) -> CliResult<u64> {
    let clusters = decisions.clusters();
    for (center, members) in &clusters {
        let dups: Vec<Vec<u8>> = members.iter().map(|&m| decisions.key(m).to_vec()).collect();
        if args.format == DedupFormat::Clusters {
            let line = shapes::cluster(Some(decisions.key(*center)), &dups);
            writeln!(out, "{line}")?;
        } else {
            for d in &dups {
                match args.json {
                    true => writeln!(out, "{}", shapes::key_item(d))?,
                    false => writeln!(out, "{}", key_text(d))?,
                }
            }
        }
    }
    Ok(clusters.len() as u64)
}

/// `mhdb dedup --apply`: the decision written to the inputs' copies under `--out`; progress
/// per file and the summary on stderr.
pub(super) fn apply(
    source: &Databases,
    t: f64,
    opts: DedupOptions,
    args: &DedupApplyArgs,
) -> CliResult<Summary> {
    let options = apply_options(t, opts, args);
    let out = args.out.clone().unwrap_or_default();
    let mut bar: Option<ProgressBar> = None;
    let mut events = |event: Event<'_>| match event {
        Event::Band { done, bands } => {
            let b = bar.get_or_insert_with(|| {
                progress(
                    Some(bands as u64),
                    "dedup {bar:40} band {pos}/{len} {percent}% {elapsed} eta {eta}",
                )
                .unwrap_or_else(ProgressBar::hidden)
            });
            b.set_position(done as u64);
        }
        Event::File {
            name,
            number,
            files,
            ..
        } => {
            if let Some(b) = bar.take() {
                b.finish_and_clear();
            }
            let template =
                format!("{{spinner}} file {number}/{files} {{pos}} rows {{per_sec}} {name}");
            bar = progress(None, &template);
        }
        Event::Queried(done) => queried_bar(&mut bar).set_position(done),
        Event::Rows(rows) => {
            if let Some(b) = &bar {
                b.set_position(rows);
            }
        }
        Event::NotAFile(path) => super::output::warn_not_a_file(path),
    };
    let applied = mhdb::apply::apply(&**source, &args.apply, &out, &options, &mut events);
    if let Some(b) = bar.take() {
        b.finish_and_clear();
    }
    let summary = applied.map_err(apply_error)?;
    let repeated = match summary.repeated {
        0 => String::new(),
        n => format!(", {n} with an id met before"),
    };
    message(format_args!(
        "{} files, {} rows in: {} kept, {} dropped, {} not in the index{repeated} (written to {})",
        summary.files,
        summary.rows,
        summary.kept,
        summary.dropped,
        summary.not_in_index,
        out.display()
    ));
    Ok(summary)
}

/// The options `--apply` (and `--documents`) read the inputs and decide with.
fn apply_options(t: f64, opts: DedupOptions, args: &DedupApplyArgs) -> ApplyOptions {
    ApplyOptions {
        threshold: t,
        dedup: opts,
        keep: args.keep.clone(),
        fields: Fields {
            id: if args.id_from_path {
                Id::FromPath
            } else {
                Id::Field(args.id_field.clone())
            },
            text: args.text_field.clone(),
            tokens: false,
            keep: None,
        },
        annotate: args.annotate.then(|| Annotate {
            prefix: args.annotate_prefix.clone().unwrap_or_default(),
        }),
        on_repeat: match args.on_duplicate {
            OnRepeatArg::Error => OnRepeat::Error,
            OnRepeatArg::KeepFirst => OnRepeat::KeepFirst,
            OnRepeatArg::KeepAll => OnRepeat::KeepAll,
        },
        overwrite: args.overwrite,
        max_document_bytes: args.size.max_document_bytes,
    }
}

/// What a failure to apply exits with: usage 2, a damaged input 3, the rest 1.
pub(super) fn apply_error(e: ApplyError) -> CliError {
    match e {
        ApplyError::Usage(m) => CliError::usage(m),
        ApplyError::Corrupt(m) => CliError::corrupt(m),
        ApplyError::Other(m) => CliError::other(m),
        ApplyError::Index(e) => e.into(),
    }
}
