//! Whole-database maintenance and inspection: `mhdb compact`, `verify`, `stats`, `export` and
//! `merge`.

use std::process::ExitCode;

use mhdb::db::{Db, Options, Stats};

use super::args::{DbArg, ExportArgs, MergeArgs, StatsArgs};
use super::output::{CliResult, outln};

/// `mhdb compact`.
pub fn compact(args: &DbArg) -> CliResult<ExitCode> {
    let db = Db::open(&args.db, Options::default())?;
    db.compact_full()?;
    let s = db.stats()?;
    outln!(
        "compacted: {} live documents in {} segment(s)",
        s.live_docs,
        s.segments
    );
    Ok(ExitCode::SUCCESS)
}

/// `mhdb verify`: problems on stderr; exit code 3 when one is corruption, else 1.
pub fn verify(args: &DbArg) -> CliResult<ExitCode> {
    let db = Db::open_read_only(&args.db)?;
    let report = db.verify()?;
    if report.is_ok() {
        outln!("ok: {} files checked", report.files_checked);
        return Ok(ExitCode::SUCCESS);
    }
    for p in &report.problems {
        eprintln!("{p}");
    }
    let corrupt = report.problems.iter().any(|p| p.is_corruption());
    Ok(ExitCode::from(if corrupt { 3 } else { 1 }))
}

/// `mhdb export`.
pub fn export(args: &ExportArgs) -> CliResult<ExitCode> {
    // A snapshot is all an export reads: it runs beside a writer, and on a read-only copy.
    let db = Db::open_read_only(&args.db)?;
    db.export(&args.dest)?;
    outln!("exported to {}", args.dest.display());
    Ok(ExitCode::SUCCESS)
}

/// `mhdb merge`: DEST takes the first source's parameters when it is created.
pub fn merge(args: &MergeArgs) -> CliResult<ExitCode> {
    let mut total = 0u64;
    let first = Db::open_read_only(&args.srcs[0])?;
    let target = Db::open_or_create(&args.dest, *first.params(), Options::default())?;
    drop(first);
    for src in &args.srcs {
        let s = Db::open_read_only(src)?;
        let n = target.merge_from(&s)?;
        eprintln!("mhdb: merged {n} documents from {}", src.display());
        total += n;
    }
    outln!("merged {total} documents into {}", args.dest.display());
    Ok(ExitCode::SUCCESS)
}

/// `mhdb stats`.
pub fn stats(args: &StatsArgs) -> CliResult<ExitCode> {
    let db = Db::open_read_only(&args.db)?;
    let s = db.stats()?;
    if args.json {
        print_stats_json(&s)?;
    } else {
        print_stats_text(&s)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The S-curve points `stats` shows.
const CURVE: [f64; 7] = [0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95];

fn print_stats_json(s: &Stats) -> CliResult {
    let p = &s.params;
    let curve = p.lsh.curve(&CURVE);
    let value = serde_json::json!({
        "live_docs": s.live_docs,
        "deleted_docs": s.deleted_docs,
        "memtable_docs": s.memtable_docs,
        "segments": s.segments,
        "bytes": s.bytes,
        "hot_buckets": s.hot_buckets,
        "bands": s.bands.iter().map(|b| serde_json::json!({
            "buckets": b.buckets, "p50": b.p50, "p99": b.p99, "max": b.max, "hot": b.hot,
        })).collect::<Vec<_>>(),
        "params": {
            "scheme": p.sketch.scheme.name(),
            "num_perm": p.sketch.num_perm,
            "seed": p.sketch.seed,
            "shingle": p.sketch.shingle.kind.to_string(),
            "nfkc": p.sketch.shingle.nfkc,
            "bits": p.bits,
            "bands": p.lsh.bands,
            "rows": p.lsh.rows,
            "threshold": p.threshold,
            "bucket_cap": p.bucket_cap,
            "spec_version": mhdb::sketch::SPEC_VERSION,
        },
        "expected_recall_at_threshold": s.expected_recall_at_threshold,
        "s_curve": curve.iter().map(|(s, p)| serde_json::json!({"jaccard": s, "probability": p})).collect::<Vec<_>>(),
    });
    outln!("{value}");
    Ok(())
}

fn print_stats_text(s: &Stats) -> CliResult {
    let p = &s.params;
    outln!(
        "documents     {} live, {} deleted, {} in memory",
        s.live_docs,
        s.deleted_docs,
        s.memtable_docs
    );
    outln!("segments      {}", s.segments);
    for (kind, bytes) in &s.bytes {
        outln!("  {kind:<11} {bytes} bytes");
    }
    outln!(
        "parameters    {} {} slots, {}, seed {}, {} bits, {} bands × {} rows, threshold {}, bucket cap {}",
        p.sketch.num_perm,
        p.sketch.scheme,
        p.sketch.shingle.kind,
        p.sketch.seed,
        p.bits,
        p.lsh.bands,
        p.lsh.rows,
        p.threshold,
        p.bucket_cap.map_or("none".into(), |c| c.to_string())
    );
    outln!(
        "recall       P(candidate | J = {}) = {:.4}",
        p.threshold,
        s.expected_recall_at_threshold
    );
    let max = s.bands.iter().map(|b| b.max).max().unwrap_or(0);
    let p99 = s.bands.iter().map(|b| b.p99).max().unwrap_or(0);
    outln!(
        "buckets       p99 {p99}, max {max}, hot (capped) {}",
        s.hot_buckets
    );
    outln!(
        "S-curve       {}",
        p.lsh
            .curve(&CURVE)
            .iter()
            .map(|(s, p)| format!("J={s:.2}:{p:.3}"))
            .collect::<Vec<_>>()
            .join("  ")
    );
    Ok(())
}
