//! `mhdb dedup`: every near-duplicate pair, star cluster, or key to drop, verified at a
//! threshold, in one database or across shards as one index.

use std::io::Write;
use std::process::ExitCode;

use mhdb::db::DedupOptions;

use super::args::{DedupArgs, DedupFormat};
use super::databases::Databases;
use super::escape::key_text;
use super::output::{CliResult, message, progress};
use super::shapes;

/// `mhdb dedup`: the results on stdout, a summary line on stderr.
pub fn dedup(args: &DedupArgs) -> CliResult<ExitCode> {
    let source = Databases::open(&args.dbs)?;
    let db = source.first();
    let t = super::query::threshold_arg(db, args.threshold, args.max_distance)?;
    super::query::warn_below_tuning(db, t);
    let t = t.unwrap_or(db.params().threshold);
    // What the threshold means, for the summary lines.
    let at = db.params().describe_threshold(t);
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let opts = DedupOptions {
        estimate_only: args.no_exact,
    };
    let exact = db.params().store_sets && !args.no_exact;
    match args.format {
        DedupFormat::Pairs => {
            let bar = progress(
                Some(db.params().lsh.bands as u64),
                "{bar:40} band {pos}/{len} {elapsed}",
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
                "{} pairs at {at} ({} candidate comparisons, {} capped buckets)",
                stats.pairs, stats.compared, stats.capped_buckets
            ));
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
            message(format_args!("{clusters} clusters at {at}"));
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
