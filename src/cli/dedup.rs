//! `mhdb dedup`: every near-duplicate pair, star cluster, or key to drop, verified at a
//! threshold.

use std::io::Write;
use std::process::ExitCode;

use mhdb::db::Db;

use super::args::{DedupArgs, DedupFormat};
use super::escape::{key_json, key_text};
use super::output::{CliResult, message, progress};
use super::shapes;

/// `mhdb dedup`: the results on stdout, a summary line on stderr.
pub fn dedup(args: &DedupArgs) -> CliResult<ExitCode> {
    let db = Db::open_read_only(&args.db)?;
    super::output::report_recovery(&db);
    let t = args.threshold.unwrap_or(db.params().threshold);
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    match args.format {
        DedupFormat::Pairs => {
            let bar = progress(
                Some(db.params().lsh.bands as u64),
                "{bar:40} band {pos}/{len} {elapsed}",
            );
            let stats = db.dedup_pairs(
                t,
                |p| {
                    let line = shapes::pair(key_json(&p.a), key_json(&p.b), p.jaccard);
                    writeln!(out, "{line}").map_err(|e| mhdb::Error::Io {
                        path: None,
                        op: "write output",
                        source: e,
                    })
                },
                |band, _| {
                    if let Some(b) = &bar {
                        b.set_position(band as u64);
                    }
                },
            )?;
            if let Some(b) = &bar {
                b.finish_and_clear();
            }
            message(format_args!(
                "{} pairs at J ≥ {t} ({} candidate comparisons, {} capped buckets)",
                stats.pairs, stats.compared, stats.capped_buckets
            ));
        }
        DedupFormat::Clusters | DedupFormat::Drop => {
            let clusters = db.dedup_clusters(t)?;
            for c in &clusters {
                let (keep, dups) = c
                    .split_first()
                    .map_or((None, &[][..]), |(k, d)| (Some(k), d));
                if args.format == DedupFormat::Clusters {
                    let line = shapes::cluster(keep.map(Vec::as_slice), dups);
                    writeln!(out, "{line}")?;
                } else {
                    for d in dups {
                        if args.json {
                            writeln!(out, "{}", shapes::key_item(d))?;
                        } else {
                            writeln!(out, "{}", key_text(d))?;
                        }
                    }
                }
            }
            message(format_args!("{} clusters at J ≥ {t}", clusters.len()));
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
