//! Command definitions and dispatch of the `mhdb` tool.

mod add;
mod query;

use std::fmt;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use mhdb::db::{Db, Durability, IndexParams, Options};
use mhdb::sketch::{
    LshParams, MinHasher, Scheme, ShingleConfig, ShingleKind, SketchParams, TuneOptions, tune_all,
};

/// A failure with the exit code it maps to.
#[derive(Debug)]
pub struct CliError {
    msg: String,
    code: u8,
    /// The reader of our output went away (`mhdb keys idx | head`): not worth a message.
    broken_pipe: bool,
}

impl CliError {
    pub fn usage(msg: impl Into<String>) -> Self {
        CliError {
            msg: msg.into(),
            code: 2,
            broken_pipe: false,
        }
    }
    pub fn other(msg: impl Into<String>) -> Self {
        CliError {
            msg: msg.into(),
            code: 1,
            broken_pipe: false,
        }
    }
    pub fn exit_code(&self) -> u8 {
        self.code
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.msg)
    }
}

impl From<mhdb::Error> for CliError {
    fn from(e: mhdb::Error) -> Self {
        let code = match &e {
            mhdb::Error::Corruption { .. } => 3,
            mhdb::Error::InvalidParameter { .. } | mhdb::Error::ParameterMismatch { .. } => 2,
            _ => 1,
        };
        let broken_pipe = matches!(&e, mhdb::Error::Io { source, .. }
            if source.kind() == std::io::ErrorKind::BrokenPipe);
        CliError {
            msg: e.to_string(),
            code,
            broken_pipe,
        }
    }
}

impl From<std::io::Error> for CliError {
    fn from(e: std::io::Error) -> Self {
        let broken_pipe = e.kind() == std::io::ErrorKind::BrokenPipe;
        CliError {
            broken_pipe,
            ..CliError::other(e.to_string())
        }
    }
}

impl CliError {
    /// True when stdout's reader closed it early, which ends the command quietly.
    pub fn is_broken_pipe(&self) -> bool {
        self.broken_pipe
    }
}

/// `println!` that returns an error (instead of panicking) when stdout is closed early.
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        writeln!(std::io::stdout().lock(), $($arg)*)?
    }};
}

pub type CliResult<T = ()> = Result<T, CliError>;

#[derive(Parser)]
#[command(
    name = "mhdb",
    version,
    about = "An embedded, crash-safe MinHash-LSH index database",
    after_help = "Example:\n  mhdb create idx --threshold 0.8\n  mhdb add idx corpus.jsonl\n  mhdb query idx --text \"some text\"\n  mhdb stats idx"
)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Args, Clone)]
pub struct SketchArgs {
    /// Number of MinHash slots k.
    #[arg(long, default_value_t = 128)]
    perms: usize,
    /// Signature scheme: oph (one-permutation hashing, default) or kperm.
    #[arg(long, default_value = "oph")]
    scheme: Scheme,
    /// Seed from which every hash constant is derived.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Shingles: char:N or word:N.
    #[arg(long, default_value = "char:5")]
    shingle: ShingleKind,
    /// Apply Unicode NFKC normalization before lowercasing.
    #[arg(long)]
    nfkc: bool,
}

impl SketchArgs {
    fn params(&self) -> SketchParams {
        SketchParams {
            scheme: self.scheme,
            num_perm: self.perms,
            seed: self.seed,
            shingle: ShingleConfig {
                kind: self.shingle,
                nfkc: self.nfkc,
                ..ShingleConfig::default()
            },
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum DedupFormat {
    Pairs,
    Clusters,
    Drop,
}

#[derive(Subcommand)]
enum Command {
    /// Create a new database.
    #[command(after_help = "Example:\n  mhdb create idx --perms 128 --threshold 0.8 --bits 32")]
    Create {
        /// Database directory (must not exist or be empty).
        db: PathBuf,
        #[command(flatten)]
        sketch: SketchArgs,
        /// Bits per stored signature slot: 1, 2, 4, 8, 16, 32 or 64.
        #[arg(long, default_value_t = 32)]
        bits: u32,
        /// Similarity threshold the bands are tuned for (and the default query threshold).
        #[arg(long, default_value_t = 0.8)]
        threshold: f64,
        /// Explicit number of bands (with --rows) instead of tuning from the threshold.
        #[arg(long, requires = "rows")]
        bands: Option<usize>,
        /// Explicit rows per band (with --bands).
        #[arg(long, requires = "bands")]
        rows: Option<usize>,
        /// Largest bucket kept by compaction (0 = unlimited).
        #[arg(long, default_value_t = mhdb::db::DEFAULT_BUCKET_CAP)]
        bucket_cap: u32,
    },
    /// Add documents from JSON Lines (default) or plain files.
    #[command(
        after_help = "Examples:\n  mhdb add idx corpus.jsonl\n  cat corpus.jsonl | mhdb add idx - --json\n  mhdb add idx --files docs/"
    )]
    Add(add::AddArgs),
    /// Find documents similar to a text, a file, or each line of a JSONL file.
    #[command(
        after_help = "Examples:\n  mhdb query idx --text \"the quick brown fox\"\n  mhdb query idx --jsonl queries.jsonl --threshold 0.7"
    )]
    Query(query::QueryArgs),
    /// Show whether keys are present (and their stored signatures with --json).
    #[command(after_help = "Example:\n  mhdb get idx doc-17 doc-18 --json")]
    Get {
        db: PathBuf,
        /// Keys to look up.
        #[arg(required = true)]
        keys: Vec<String>,
        /// JSON output with the stored signature slots.
        #[arg(long)]
        json: bool,
    },
    /// Print every live key, one per line.
    #[command(after_help = "Example:\n  mhdb keys idx | wc -l")]
    Keys { db: PathBuf },
    /// Delete keys given as arguments or as ids in a JSONL file.
    #[command(
        after_help = "Examples:\n  mhdb delete idx doc-17\n  mhdb delete idx --jsonl gone.jsonl"
    )]
    Delete {
        db: PathBuf,
        /// Keys to delete.
        keys: Vec<String>,
        /// JSON Lines file whose id field names the keys to delete.
        #[arg(long)]
        jsonl: Option<PathBuf>,
        /// Field holding the id.
        #[arg(long, default_value = "id")]
        id_field: String,
    },
    /// Every near-duplicate pair (or cluster, or the keys to drop) verified at a threshold.
    #[command(
        after_help = "Examples:\n  mhdb dedup idx --threshold 0.8 > pairs.jsonl\n  mhdb dedup idx --format drop > to-drop.txt\n\nFormats: pairs = one JSON line per unordered pair {\"a\", \"b\", \"jaccard\"};\nclusters = one JSON line per cluster {\"keep\", \"duplicates\"} (star clusters: every member\nis verified similar to the kept document, so unrelated documents never chain together);\ndrop = the keys to delete, keeping the oldest document of each cluster."
    )]
    Dedup {
        db: PathBuf,
        /// Minimum estimated Jaccard (default: the database's threshold).
        #[arg(long)]
        threshold: Option<f64>,
        /// pairs, clusters or drop.
        #[arg(long, value_enum, default_value = "pairs")]
        format: DedupFormat,
    },
    /// Write a compacted, self-contained copy to ship (servers open it read-only).
    #[command(after_help = "Example:\n  mhdb export idx /srv/shipped-idx")]
    Export {
        db: PathBuf,
        /// New directory for the copy.
        dest: PathBuf,
    },
    /// Merge databases built from disjoint shards into DEST (created if missing); on duplicate
    /// keys the later source wins.
    #[command(after_help = "Example:\n  mhdb merge all shard-0 shard-1 shard-2")]
    Merge {
        dest: PathBuf,
        /// Source databases (same parameters).
        #[arg(required = true)]
        srcs: Vec<PathBuf>,
    },
    /// Merge all segments into one, dropping deleted documents.
    #[command(after_help = "Example:\n  mhdb compact idx")]
    Compact { db: PathBuf },
    /// Counts, sizes, bucket distributions and parameters.
    #[command(after_help = "Example:\n  mhdb stats idx --json")]
    Stats {
        db: PathBuf,
        /// JSON output.
        #[arg(long)]
        json: bool,
    },
    /// Check every checksum and invariant (exit code 3 on corruption).
    #[command(after_help = "Example:\n  mhdb verify idx && echo ok")]
    Verify { db: PathBuf },
    /// Choose (bands, rows) for a threshold and print alternatives and the S-curve.
    #[command(after_help = "Example:\n  mhdb tune --threshold 0.8 --perms 128")]
    Tune {
        /// Similarity threshold in (0, 1).
        #[arg(long)]
        threshold: f64,
        /// Number of MinHash slots k.
        #[arg(long, default_value_t = 128)]
        perms: usize,
        /// How many alternatives to list.
        #[arg(long, default_value_t = 5)]
        alternatives: usize,
    },
    /// Sketch every file of a directory and print the pairs at or above the threshold.
    #[command(after_help = "Example:\n  mhdb demo samples/texts --threshold 0.5")]
    Demo {
        /// Directory of text files (one document per file).
        #[arg(default_value = "samples/texts")]
        dir: PathBuf,
        /// Similarity threshold.
        #[arg(long, default_value_t = 0.5)]
        threshold: f64,
        #[command(flatten)]
        sketch: SketchArgs,
    },
}

pub fn run(cli: Cli) -> CliResult<ExitCode> {
    match cli.command {
        Command::Create {
            db,
            sketch,
            bits,
            threshold,
            bands,
            rows,
            bucket_cap,
        } => {
            let mut params = IndexParams::for_threshold(sketch.params(), bits, threshold)?;
            if let (Some(b), Some(r)) = (bands, rows) {
                params.lsh = LshParams::new(b, r, sketch.perms)?;
            }
            params.bucket_cap = (bucket_cap != 0).then_some(bucket_cap);
            params.validate()?;
            let created = Db::create(&db, params, Options::default())?;
            let p = created.params();
            outln!(
                "created {}: {} {} slots, {}, {} bits, {} bands × {} rows (P({threshold}) = {:.4}), bucket cap {}",
                db.display(),
                p.sketch.num_perm,
                p.sketch.scheme,
                p.sketch.shingle.kind,
                p.bits,
                p.lsh.bands,
                p.lsh.rows,
                p.lsh.probability(threshold),
                p.bucket_cap.map_or("none".to_string(), |c| c.to_string())
            );
        }
        Command::Add(args) => return add::run(args),
        Command::Query(args) => query::run(args)?,
        Command::Get { db, keys, json } => {
            let db = Db::open_read_only(&db)?;
            let mut out = std::io::stdout().lock();
            let mut missing = false;
            for key in keys {
                let stored = db.get(&key)?;
                missing |= stored.is_none();
                if json {
                    let value = match &stored {
                        Some(s) => serde_json::json!({
                            "id": key, "present": true, "bits": s.bits,
                            "signature": s.slots()?,
                        }),
                        None => serde_json::json!({"id": key, "present": false}),
                    };
                    writeln!(out, "{value}")?;
                } else {
                    let state = if stored.is_some() {
                        "present"
                    } else {
                        "absent"
                    };
                    writeln!(out, "{key}\t{state}")?;
                }
            }
            if missing {
                return Ok(ExitCode::from(1));
            }
        }
        Command::Keys { db } => {
            let db = Db::open_read_only(&db)?;
            let mut out = std::io::BufWriter::new(std::io::stdout().lock());
            for key in db.keys()? {
                out.write_all(&key)?;
                out.write_all(b"\n")?;
            }
            out.flush()?;
        }
        Command::Delete {
            db,
            keys,
            jsonl,
            id_field,
        } => {
            let db = Db::open(&db, Options::default())?;
            let mut all = keys;
            if let Some(path) = jsonl {
                all.extend(add::read_ids(&path, &id_field)?);
            }
            if all.is_empty() {
                return Err(CliError::usage("give keys to delete or --jsonl FILE"));
            }
            let mut batch = mhdb::db::WriteBatch::new();
            let mut present = 0usize;
            for key in &all {
                if db.contains(key)? {
                    present += 1;
                }
                batch.delete(key);
            }
            db.write(&batch)?;
            outln!("deleted {present} of {} keys", all.len());
        }
        Command::Dedup {
            db,
            threshold,
            format,
        } => {
            let db = Db::open_read_only(&db)?;
            let t = threshold.unwrap_or(db.params().threshold);
            let mut out = std::io::BufWriter::new(std::io::stdout().lock());
            let bar = progress_enabled().then(|| {
                let bar = indicatif::ProgressBar::new(db.params().lsh.bands as u64);
                bar.set_style(
                    indicatif::ProgressStyle::with_template("{bar:40} band {pos}/{len} {elapsed}")
                        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
                );
                bar
            });
            let key = |k: &[u8]| String::from_utf8_lossy(k).into_owned();
            match format {
                DedupFormat::Pairs => {
                    let stats = db.dedup_pairs(
                        t,
                        |p| {
                            let line = serde_json::json!({
                                "a": key(&p.a), "b": key(&p.b),
                                "jaccard": (p.jaccard * 1e6).round() / 1e6,
                            });
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
                    eprintln!(
                        "mhdb: {} pairs at J ≥ {t} ({} candidate comparisons, {} capped buckets)",
                        stats.pairs, stats.compared, stats.capped_buckets
                    );
                }
                DedupFormat::Clusters | DedupFormat::Drop => {
                    let clusters = db.dedup_clusters(t)?;
                    for c in &clusters {
                        let (keep, dups) = c
                            .split_first()
                            .map_or((None, &[][..]), |(k, d)| (Some(k), d));
                        if format == DedupFormat::Clusters {
                            let line = serde_json::json!({
                                "keep": keep.map(|k| key(k)),
                                "duplicates": dups.iter().map(|k| key(k)).collect::<Vec<_>>(),
                            });
                            writeln!(out, "{line}")?;
                        } else {
                            for d in dups {
                                out.write_all(d)?;
                                out.write_all(b"\n")?;
                            }
                        }
                    }
                    eprintln!("mhdb: {} clusters at J ≥ {t}", clusters.len());
                }
            }
            out.flush()?;
        }
        Command::Export { db, dest } => {
            let db = Db::open(&db, Options::default())?;
            db.export(&dest)?;
            outln!("exported to {}", dest.display());
        }
        Command::Merge { dest, srcs } => {
            let mut total = 0u64;
            let first = Db::open_read_only(&srcs[0])?;
            let target = Db::open_or_create(&dest, *first.params(), Options::default())?;
            drop(first);
            for src in &srcs {
                let s = Db::open_read_only(src)?;
                let n = target.merge_from(&s)?;
                eprintln!("mhdb: merged {n} documents from {}", src.display());
                total += n;
            }
            outln!("merged {total} documents into {}", dest.display());
        }
        Command::Compact { db } => {
            let db = Db::open(&db, Options::default())?;
            db.compact_full()?;
            let s = db.stats()?;
            outln!(
                "compacted: {} live documents in {} segment(s)",
                s.live_docs,
                s.segments
            );
        }
        Command::Stats { db, json } => {
            let db = Db::open_read_only(&db)?;
            print_stats(&db.stats()?, json)?;
        }
        Command::Verify { db } => {
            let db = Db::open_read_only(&db)?;
            let report = db.verify()?;
            if report.is_ok() {
                outln!("ok: {} files checked", report.files_checked);
            } else {
                for p in &report.problems {
                    eprintln!("{p}");
                }
                let corrupt = report.problems.iter().any(|p| p.is_corruption());
                return Ok(ExitCode::from(if corrupt { 3 } else { 1 }));
            }
        }
        Command::Tune {
            threshold,
            perms,
            alternatives,
        } => tune(threshold, perms, alternatives)?,
        Command::Demo {
            dir,
            threshold,
            sketch,
        } => demo(&dir, threshold, &sketch)?,
    }
    Ok(ExitCode::SUCCESS)
}

/// Opens for writing with bulk-load durability (commits are explicit).
pub fn open_for_bulk(path: &std::path::Path) -> CliResult<Db> {
    Ok(Db::open(
        path,
        Options {
            durability: Durability::None,
            ..Options::default()
        },
    )?)
}

pub fn progress_enabled() -> bool {
    std::io::stderr().is_terminal()
}

fn print_stats(s: &mhdb::db::Stats, json: bool) -> CliResult {
    let p = &s.params;
    let curve: Vec<(f64, f64)> = p.lsh.curve(&[0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95]);
    if json {
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
        return Ok(());
    }
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
        curve
            .iter()
            .map(|(s, p)| format!("J={s:.2}:{p:.3}"))
            .collect::<Vec<_>>()
            .join("  ")
    );
    Ok(())
}

fn tune(threshold: f64, perms: usize, alternatives: usize) -> CliResult {
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
    Ok(())
}

fn print_curve(params: &LshParams) -> CliResult {
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

fn demo(dir: &PathBuf, threshold: f64, args: &SketchArgs) -> CliResult {
    let hasher = MinHasher::new(args.params())?;
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| CliError::other(format!("cannot read directory {}: {e}", dir.display())))?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|p| p.is_file())
        .collect();
    paths.sort();
    let mut texts = Vec::with_capacity(paths.len());
    for p in &paths {
        let bytes = std::fs::read(p)
            .map_err(|e| CliError::other(format!("cannot read {}: {e}", p.display())))?;
        let text = String::from_utf8(bytes).map_err(|e| {
            CliError::other(format!(
                "{} is not UTF-8 (byte offset {})",
                p.display(),
                e.utf8_error().valid_up_to()
            ))
        })?;
        texts.push(text);
    }
    let signatures = hasher.sketch_batch(&texts);
    let tuning = mhdb::sketch::tune(threshold, args.perms, &TuneOptions::default())?;
    outln!(
        "{} documents, {} {} slots, {}; LSH {} bands × {} rows for threshold {threshold}",
        paths.len(),
        args.perms,
        args.scheme,
        args.shingle,
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
    Ok(())
}
