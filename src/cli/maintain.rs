//! Whole-database maintenance and inspection: `mhdb compact`, `verify`, `stats`, `export`,
//! `merge` and `upgrade`.

use std::process::ExitCode;

use indicatif::HumanBytes;
use mhdb::db::{
    CONTAINMENT_BANDINGS, Db, IndexKind, IndexStats, Options, ShardsStats, Stats, UpgradeOptions,
    UpgradePlan, Upgraded,
};
use mhdb::sketch::SetDerivation;
use serde_json::json;

use super::args::{ExportArgs, JsonDbArgs, MergeArgs, StatsArgs, UpgradeArgs, VerifyArgs};
use super::databases::Databases;
use super::output::{CliError, CliResult, message, outln, warn};
use super::shapes;

/// `mhdb upgrade`: converts a database of version 1 or 2 in place (`--drop-sets`: without its
/// stored sets, also one of the current version); what it did on stderr (`--json`: on stdout).
pub fn upgrade(args: &UpgradeArgs) -> CliResult<ExitCode> {
    super::databases::note_test_identity()?;
    let opts = UpgradeOptions {
        keep_old: args.keep_old,
        drop_sets: args.drop_sets,
    };
    // The plan reads the database as it is; an upgrade cut short between its two renames has
    // none to read, and finishes without one.
    let plan = Db::upgrade_plan(&args.db, opts).ok().flatten();
    if let (Some(plan), false) = (plan, args.json) {
        message(format_args!("{}", upgrade_needs(&args.db, &plan)));
    }
    let done = Db::upgrade_with(&args.db, opts)?;
    let (upgraded, kept) = match &done {
        Upgraded::Converted { kept } => (true, kept.clone()),
        _ => (false, None),
    };
    if args.json {
        let kept = kept.map(|k| k.display().to_string());
        let mut out = json!({"upgraded": upgraded, "kept": kept});
        if let (Some(p), true) = (plan, upgraded) {
            out["from_version"] = json!(p.from_version);
            out["documents"] = json!(p.documents);
            out["documents_without_columns"] = json!(p.documents);
            out["space_needed"] = json!(p.bytes_needed);
            out["space_available"] = json!(p.bytes_available);
        }
        outln!("{out}");
    } else if upgraded {
        let without = if args.drop_sets {
            " without stored sets"
        } else {
            ""
        };
        match kept {
            Some(k) => message(format_args!(
                "upgraded {} to format version {}{without}; the old files are in {}",
                args.db.display(),
                mhdb::db::MANIFEST_VERSION,
                k.display()
            )),
            None => message(format_args!(
                "upgraded {} to format version {}{without}",
                args.db.display(),
                mhdb::db::MANIFEST_VERSION
            )),
        }
        if let Some(p) = plan.filter(|p| p.documents > 0) {
            message(format_args!(
                "its {} documents have no exact hash, keep value or set size (format {}'s \
                 per-document columns are computed from a document's text, which the index does \
                 not store: add a document's text again to give it them)",
                p.documents,
                mhdb::db::MANIFEST_VERSION
            ));
        }
    } else {
        message(format_args!(
            "{} is already in format version {}",
            args.db.display(),
            mhdb::db::MANIFEST_VERSION
        ));
    }
    Ok(ExitCode::SUCCESS)
}

/// `mhdb compact`: what it did on stderr (`--json`: on stdout).
pub fn compact(args: &JsonDbArgs) -> CliResult<ExitCode> {
    let db = Db::open(&args.db, Options::default())?;
    super::output::report_recovery(&db);
    db.compact_full()?;
    let s = db.stats()?;
    if args.json {
        outln!(
            "{}",
            json!({"live_docs": s.live_docs, "segments": s.segments})
        );
    } else {
        message(format_args!(
            "compacted: {} live documents in {} segment(s)",
            s.live_docs, s.segments
        ));
    }
    Ok(ExitCode::SUCCESS)
}

/// `mhdb verify`: the verdict on stdout, problems on stderr (`--json`: the whole report on
/// stdout); exit code 3 when a problem is corruption, else 1.
pub fn verify(args: &VerifyArgs) -> CliResult<ExitCode> {
    // Shards are verified one after the other; the report is one, each problem naming its
    // file.
    let dbs = Databases::open_quietly(&args.dbs)?;
    // Not damage (the exit code stays 0), but what a shipped copy gives away.
    for db in dbs.dbs() {
        if let Some(warning) = db.sets_derivation().and_then(|d| d.warning()) {
            super::output::warn(format_args!("{}: {warning}", db.path().display()));
        }
    }
    let report = dbs.verify()?;
    let corrupt = report.problems.iter().any(|p| p.is_corruption());
    if args.json {
        let problems: Vec<_> = report
            .problems
            .iter()
            .map(|p| json!({"corruption": p.is_corruption(), "message": p.to_string()}))
            .collect();
        outln!(
            "{}",
            json!({
                "ok": report.is_ok(),
                "files_checked": report.files_checked,
                "problems": problems,
            })
        );
    } else if report.is_ok() {
        outln!("ok: {} files checked", report.files_checked);
    } else {
        for p in &report.problems {
            super::output::to_stderr(p);
        }
    }
    Ok(ExitCode::from(match (report.is_ok(), corrupt) {
        (true, _) => 0,
        (false, true) => 3,
        (false, false) => 1,
    }))
}

/// `mhdb export`: what it did on stderr (`--json`: on stdout).
pub fn export(args: &ExportArgs) -> CliResult<ExitCode> {
    // A snapshot is all an export reads: it runs beside a writer, and on a read-only copy.
    let db = Db::open_read_only(&args.db)?;
    super::output::report_recovery(&db);
    super::databases::note_test_identity()?;
    if args.allow_damaged {
        for skipped in db.export_past_damage(&args.dest)? {
            super::output::warn(format_args!(
                "exported without what this damage held (--allow-damaged): {skipped}"
            ));
        }
    } else {
        db.export(&args.dest).map_err(|e| match e {
            mhdb::Error::Corruption { .. } => CliError::from(e).then_note(
                "export refuses a damaged database (verify lists the damage); --allow-damaged \
                 exports what the rest holds",
            ),
            e => e.into(),
        })?;
    }
    if args.json {
        outln!("{}", json!({"exported": args.dest.to_string_lossy()}));
    } else {
        message(format_args!("exported to {}", args.dest.display()));
    }
    Ok(ExitCode::SUCCESS)
}

/// What an upgrade is about to do and the space it needs, said before it starts.
fn upgrade_needs(db: &std::path::Path, plan: &UpgradePlan) -> String {
    let free = plan
        .bytes_available
        .map_or(String::new(), |b| format!(", {} free", HumanBytes(b)));
    format!(
        "upgrading {} from format version {}: {} documents; the new copy is written beside the \
         old files before they trade places, so it needs about {} free meanwhile (the \
         database's size{free})",
        db.display(),
        plan.from_version,
        plan.documents,
        HumanBytes(plan.bytes_needed),
    )
}

/// `mhdb merge`: DEST takes the first source's parameters when it is created. What it did on
/// stderr (`--json`: on stdout). Every source is checked against DEST's parameters before
/// anything is written: a source that cannot be merged is refused with nothing merged (and
/// DEST not created); each source's merge is then atomic on its own.
pub fn merge(args: &MergeArgs) -> CliResult<ExitCode> {
    mhdb::db::check_merge_sources(&args.dest, &args.srcs)?;
    let mut total = 0u64;
    let existing = match Db::open(&args.dest, Options::default()) {
        Ok(db) => Some(db),
        Err(mhdb::Error::NotFound { .. }) => None,
        Err(e) => return Err(e.into()),
    };
    let params = match &existing {
        Some(db) => *db.params(),
        None => *Db::open_read_only(&args.srcs[0])?.params(),
    };
    for src in &args.srcs {
        let s = Db::open_read_only(src)?;
        if let Err(e) = params.check_mergeable(s.params()) {
            let mhdb::Error::ParameterMismatch {
                name,
                stored,
                requested,
            } = &e
            else {
                return Err(e.into());
            };
            let dest_has = if existing.is_some() {
                "has"
            } else {
                "would take the first source's"
            };
            return Err(CliError::usage(format!(
                "cannot merge {} into {}: its parameter `{name}` is {requested}, and {} {dest_has} \
                 {stored}; nothing was merged",
                src.display(),
                args.dest.display(),
                args.dest.display(),
            )));
        }
        check_sets_mergeable(existing.as_ref(), &s, src, &args.dest)?;
    }
    let target = match existing {
        Some(db) => db,
        None => {
            super::databases::note_test_identity()?;
            let mut db = Db::open_or_create(&args.dest, params, Options::default())?;
            // A new destination keeps the first source's keep field, as an export would.
            if let Some(column) = Db::open_read_only(&args.srcs[0])?.keep_column() {
                db.fix_keep_column(&column)?;
            }
            db
        }
    };
    super::output::report_recovery(&target);
    let mut sources = Vec::new();
    for src in &args.srcs {
        let s = Db::open_read_only(src)?;
        if let Some(column) = s
            .keep_column()
            .filter(|c| Some(c) != target.keep_column().as_ref())
        {
            let keeps = target
                .keep_column()
                .map_or("no keep field".to_string(), |k| {
                    format!("the keep field {:?}", k.field)
                });
            warn(format_args!(
                "{}'s keep values (field {:?}) are not merged: {} has {keeps}",
                src.display(),
                column.field,
                args.dest.display()
            ));
        }
        let n = target.merge_from(&s)?;
        message(format_args!("merged {n} documents from {}", src.display()));
        sources.push(json!({"path": src.to_string_lossy(), "documents": n}));
        total += n;
    }
    if args.json {
        outln!(
            "{}",
            json!({"merged": total, "dest": args.dest.to_string_lossy(), "sources": sources})
        );
    } else {
        message(format_args!(
            "merged {total} documents into {}",
            args.dest.display()
        ));
    }
    super::output::close_after_commit(target);
    Ok(ExitCode::SUCCESS)
}

/// Errors unless `src`'s stored sets can go into DEST: derived as an existing DEST's are (the
/// library's check), and for a DEST yet to be created, not by version 2's leaking rule, which a
/// new database never takes (the parameter check has already matched keys and `store_sets`).
fn check_sets_mergeable(
    existing: Option<&Db>,
    src: &Db,
    src_path: &std::path::Path,
    dest: &std::path::Path,
) -> CliResult<()> {
    match existing {
        Some(dest) => Ok(dest.check_same_set_derivation(src)?),
        None if src.sets_derivation() == Some(SetDerivation::KeyedV2Leaking) => {
            Err(CliError::usage(format!(
                "cannot merge {} into the new database {}: its stored sets use version 2's keyed \
                 derivation, which leaks keyed hashes, and a new database stores sets under its \
                 set key; run `mhdb upgrade --drop-sets` on a copy of it first, or merge into a \
                 database that has its derivation; nothing was merged",
                src_path.display(),
                dest.display(),
            )))
        }
        None => Ok(()),
    }
}

/// `mhdb stats`.
pub fn stats(args: &StatsArgs) -> CliResult<ExitCode> {
    let stats = Databases::open(&args.dbs)?.stats()?;
    match &stats {
        _ if args.json => outln!("{}", shapes::index_stats(&stats)),
        IndexStats::One(s) => print_stats_text(s)?,
        IndexStats::Shards(all) => print_shards_stats(all)?,
    }
    Ok(ExitCode::SUCCESS)
}

/// Shards' statistics: each shard's, as one database's are shown, then their totals.
fn print_shards_stats(all: &ShardsStats) -> CliResult {
    for (path, s) in &all.shards {
        outln!("shard         {}", path.display());
        print_stats_text(s)?;
        outln!("");
    }
    outln!(
        "total         {} shards: {} live (a key in two shards counts twice), {} deleted, {} in \
         memory; {} segments",
        all.shards.len(),
        all.live_docs,
        all.deleted_docs,
        all.memtable_docs,
        all.segments
    );
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
    if let Some(c) = s.exact_hashes {
        outln!(
            "exact hashes  {} documents with one, {} without",
            c.with,
            c.without
        );
    }
    if let Some(c) = s.set_sizes {
        outln!(
            "set sizes     {} documents with one, {} without",
            c.with,
            c.without
        );
    }
    if let (Some(k), Some(c)) = (&s.keep_column, s.keep_values) {
        outln!(
            "keep field    {:?} ({}): {} documents with a value, {} without",
            k.field,
            k.keep_type.name(),
            c.with,
            c.without
        );
    }
    if s.format_version < mhdb::db::MANIFEST_VERSION {
        outln!(
            "format        version {} (read-only; `mhdb upgrade` converts it to version {})",
            s.format_version,
            mhdb::db::MANIFEST_VERSION
        );
    } else {
        outln!("format        version {}", s.format_version);
    }
    if let Some(id) = s.identity {
        outln!("identity      {id}");
    }
    if s.copied_past_damage {
        outln!(
            "copied past damage: exported with --allow-damaged from a damaged database (or from \
             such a copy); documents the damage held may be missing"
        );
    }
    if let Some(warning) = s.sets_derivation.and_then(|d| d.warning()) {
        outln!("{warning}");
    }
    if !p.key_fingerprint.is_unkeyed() {
        outln!(
            "hashing       keyed (key fingerprint {}; text needs the key: MHDB_KEY_FILE)",
            p.key_fingerprint.short()
        );
    }
    if s.torn_tails > 0 {
        outln!(
            "torn tails    {} kept beside their WAL files (`mhdb verify` names them)",
            s.torn_tails
        );
    }
    for (kind, bytes) in &s.bytes {
        outln!("  {kind:<11} {bytes} bytes");
    }
    outln!("parameters    {}", shapes::params_text(p));
    if let Some(sim) = p.sim_params() {
        outln!(
            "kind          simhash: 64-bit fingerprints, {} blocks, matches within Hamming distance {} (cosine ≥ {:.4}); every such document is a candidate unless its block's bucket was capped",
            sim.block_count(),
            sim.max_hamming,
            p.threshold
        );
        print_buckets(s)?;
        return Ok(());
    }
    if p.kind == IndexKind::Containment {
        let bandings: Vec<String> = CONTAINMENT_BANDINGS
            .iter()
            .map(|b| format!("{}×{}", b.bands, b.rows))
            .collect();
        outln!(
            "kind          minhash, containment: bandings {} keyed by half-octave set-size classes (LSH Ensemble); a query probes the classes that could hold its threshold's share of it",
            bandings.join(", ")
        );
        print_buckets(s)?;
        return Ok(());
    }
    outln!("kind          minhash");
    outln!(
        "recall        P(candidate | J = {}) = {:.4}",
        p.threshold,
        s.expected_recall_at_threshold
    );
    print_buckets(s)?;
    outln!(
        "S-curve       {}",
        p.lsh
            .curve(&shapes::STATS_CURVE)
            .iter()
            .map(|(s, p)| format!("J={s:.2}:{p:.3}"))
            .collect::<Vec<_>>()
            .join("  ")
    );
    Ok(())
}

/// The `buckets` line of `stats`: the largest band buckets over every band.
fn print_buckets(s: &Stats) -> CliResult {
    let max = s.bands.iter().map(|b| b.max).max().unwrap_or(0);
    let p99 = s.bands.iter().map(|b| b.p99).max().unwrap_or(0);
    outln!(
        "buckets       p99 {p99}, max {max}, capped in segments {}",
        s.hot_buckets
    );
    Ok(())
}
