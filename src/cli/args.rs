//! The command line: every subcommand, argument, default and `--help` text of `mhdb`.
//!
//! The commands themselves live in the command-family modules; this file only says what they
//! accept.

use std::path::PathBuf;

use mhdb::sketch::{Scheme, ShingleConfig, ShingleKind, SketchParams};

#[derive(clap::Parser)]
#[command(
    name = "mhdb",
    version,
    about = "An embedded, crash-safe MinHash-LSH index database",
    after_help = "Example:\n  mhdb create idx --threshold 0.8\n  mhdb add idx corpus.jsonl\n  mhdb query idx --text \"some text\"\n  mhdb stats idx"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(clap::Subcommand)]
pub enum Command {
    /// Create a new database.
    #[command(after_help = "Example:\n  mhdb create idx --perms 128 --threshold 0.8 --bits 32")]
    Create(CreateArgs),
    /// Add documents from JSON Lines (default) or plain files.
    #[command(
        after_help = "Examples:\n  mhdb add idx corpus.jsonl\n  cat corpus.jsonl | mhdb add idx - --json\n  mhdb add idx --files docs/"
    )]
    Add(AddArgs),
    /// Find documents similar to a text, a file, or each line of a JSONL file.
    #[command(
        after_help = "Examples:\n  mhdb query idx --text \"the quick brown fox\"\n  mhdb query idx --jsonl queries.jsonl --threshold 0.7"
    )]
    Query(QueryArgs),
    /// Show whether keys are present (and their stored signatures with --json).
    #[command(after_help = "Example:\n  mhdb get idx doc-17 doc-18 --json")]
    Get(GetArgs),
    /// Print every live key, one per line.
    #[command(after_help = "Example:\n  mhdb keys idx | wc -l")]
    Keys(DbArg),
    /// Delete keys given as arguments or as ids in a JSONL file.
    #[command(
        after_help = "Examples:\n  mhdb delete idx doc-17\n  mhdb delete idx --jsonl gone.jsonl"
    )]
    Delete(DeleteArgs),
    /// Every near-duplicate pair (or cluster, or the keys to drop) verified at a threshold.
    #[command(
        after_help = "Examples:\n  mhdb dedup idx --threshold 0.8 > pairs.jsonl\n  mhdb dedup idx --format drop > to-drop.txt\n\nFormats: pairs = one JSON line per unordered pair {\"a\", \"b\", \"jaccard\"};\nclusters = one JSON line per cluster {\"keep\", \"duplicates\"} (star clusters: every member\nis verified similar to the kept document, so unrelated documents never chain together);\ndrop = the keys to delete, keeping the oldest document of each cluster."
    )]
    Dedup(DedupArgs),
    /// Write a compacted, self-contained copy to ship (servers open it read-only).
    #[command(after_help = "Example:\n  mhdb export idx /srv/shipped-idx")]
    Export(ExportArgs),
    /// Merge databases built from disjoint shards into DEST (created if missing); on duplicate
    /// keys the later source wins.
    #[command(after_help = "Example:\n  mhdb merge all shard-0 shard-1 shard-2")]
    Merge(MergeArgs),
    /// Merge all segments into one, dropping deleted documents.
    #[command(after_help = "Example:\n  mhdb compact idx")]
    Compact(DbArg),
    /// Counts, sizes, bucket distributions and parameters.
    #[command(after_help = "Example:\n  mhdb stats idx --json")]
    Stats(StatsArgs),
    /// Check every checksum and invariant (exit code 3 on corruption).
    #[command(after_help = "Example:\n  mhdb verify idx && echo ok")]
    Verify(DbArg),
    /// Choose (bands, rows) for a threshold and print alternatives and the S-curve.
    #[command(after_help = "Example:\n  mhdb tune --threshold 0.8 --perms 128")]
    Tune(TuneArgs),
    /// Sketch every file of a directory and print the pairs at or above the threshold.
    #[command(after_help = "Example:\n  mhdb demo samples/texts --threshold 0.5")]
    Demo(DemoArgs),
}

// How documents are sketched (`create`, `demo`). No doc comment: clap would take it as help
// text.
#[derive(clap::Args, Clone)]
pub struct SketchArgs {
    /// Number of MinHash slots k.
    #[arg(long, default_value_t = 128)]
    pub perms: usize,
    /// Signature scheme: oph (one-permutation hashing, default) or kperm.
    #[arg(long, default_value = "oph")]
    pub scheme: Scheme,
    /// Seed from which every hash constant is derived.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Shingles: char:N or word:N.
    #[arg(long, default_value = "char:5")]
    pub shingle: ShingleKind,
    /// Apply Unicode NFKC normalization before lowercasing.
    #[arg(long)]
    pub nfkc: bool,
}

impl SketchArgs {
    /// The sketch parameters these flags select.
    pub fn params(&self) -> SketchParams {
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

// Like `SketchArgs`, the argument structs below carry no doc comments: a subcommand's `--help`
// summary is the doc comment of its `Command` variant.

#[derive(clap::Args)]
pub struct DbArg {
    pub db: PathBuf,
}

#[derive(clap::Args)]
pub struct CreateArgs {
    /// Database directory (must not exist or be empty).
    pub db: PathBuf,
    #[command(flatten)]
    pub sketch: SketchArgs,
    /// Bits per stored signature slot: 1, 2, 4, 8, 16, 32 or 64.
    #[arg(long, default_value_t = 32)]
    pub bits: u32,
    /// Similarity threshold the bands are tuned for (and the default query threshold).
    #[arg(long, default_value_t = 0.8)]
    pub threshold: f64,
    /// Explicit number of bands (with --rows) instead of tuning from the threshold.
    #[arg(long, requires = "rows")]
    pub bands: Option<usize>,
    /// Explicit rows per band (with --bands).
    #[arg(long, requires = "bands")]
    pub rows: Option<usize>,
    /// Largest bucket kept by compaction (0 = unlimited).
    #[arg(long, default_value_t = mhdb::db::DEFAULT_BUCKET_CAP)]
    pub bucket_cap: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum OnDuplicate {
    /// Keep the stored document, ignore the new one.
    Skip,
    /// Replace the stored document (upsert).
    Replace,
    /// Stop with an error naming the line.
    Error,
}

#[derive(clap::Args)]
pub struct AddArgs {
    /// Database directory.
    pub db: PathBuf,
    /// JSON Lines files ('-' or nothing: standard input); with --files, files and directories.
    pub inputs: Vec<PathBuf>,
    /// Treat inputs as plain text files (directories are walked); each file is one document
    /// keyed by its path.
    #[arg(long)]
    pub files: bool,
    /// JSON field holding the document id (a string or a number).
    #[arg(long, default_value = "id")]
    pub id_field: String,
    /// JSON field holding the text.
    #[arg(long, default_value = "text")]
    pub text_field: String,
    /// Commit (durably) every N documents, and at the end.
    #[arg(long, default_value_t = 10_000)]
    pub commit_every: usize,
    /// Print one JSON line per durable commit: {"committed": N, "last_id": ...}.
    #[arg(long)]
    pub json: bool,
    /// What to do with an id that is already stored.
    #[arg(long, value_enum, default_value = "replace")]
    pub on_duplicate: OnDuplicate,
    /// Skip (and count) malformed lines instead of stopping.
    #[arg(long)]
    pub skip_invalid: bool,
}

#[derive(clap::Args)]
#[command(group(clap::ArgGroup::new("input").required(true).args(["text", "file", "jsonl"])))]
pub struct QueryArgs {
    /// Database directory.
    pub db: PathBuf,
    /// Query text.
    #[arg(long)]
    pub text: Option<String>,
    /// File whose whole content is the query.
    #[arg(long)]
    pub file: Option<PathBuf>,
    /// JSON Lines file: one query per line ({"id": ..., "text": ...}).
    #[arg(long)]
    pub jsonl: Option<PathBuf>,
    /// Minimum estimated Jaccard (default: the database's threshold).
    #[arg(long)]
    pub threshold: Option<f64>,
    /// At most this many matches per query, best first.
    #[arg(long)]
    pub limit: Option<usize>,
    /// JSON output.
    #[arg(long)]
    pub json: bool,
    /// JSON field holding the id in --jsonl input.
    #[arg(long, default_value = "id")]
    pub id_field: String,
    /// JSON field holding the text in --jsonl input.
    #[arg(long, default_value = "text")]
    pub text_field: String,
}

#[derive(clap::Args)]
pub struct GetArgs {
    pub db: PathBuf,
    /// Keys to look up.
    #[arg(required = true)]
    pub keys: Vec<String>,
    /// JSON output with the stored signature slots.
    #[arg(long)]
    pub json: bool,
}

#[derive(clap::Args)]
pub struct DeleteArgs {
    pub db: PathBuf,
    /// Keys to delete.
    pub keys: Vec<String>,
    /// JSON Lines file whose id field names the keys to delete.
    #[arg(long)]
    pub jsonl: Option<PathBuf>,
    /// Field holding the id.
    #[arg(long, default_value = "id")]
    pub id_field: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum DedupFormat {
    Pairs,
    Clusters,
    Drop,
}

#[derive(clap::Args)]
pub struct DedupArgs {
    pub db: PathBuf,
    /// Minimum estimated Jaccard (default: the database's threshold).
    #[arg(long)]
    pub threshold: Option<f64>,
    /// pairs, clusters or drop.
    #[arg(long, value_enum, default_value = "pairs")]
    pub format: DedupFormat,
}

#[derive(clap::Args)]
pub struct ExportArgs {
    pub db: PathBuf,
    /// New directory for the copy.
    pub dest: PathBuf,
}

#[derive(clap::Args)]
pub struct MergeArgs {
    pub dest: PathBuf,
    /// Source databases (same parameters).
    #[arg(required = true)]
    pub srcs: Vec<PathBuf>,
}

#[derive(clap::Args)]
pub struct StatsArgs {
    pub db: PathBuf,
    /// JSON output.
    #[arg(long)]
    pub json: bool,
}

#[derive(clap::Args)]
pub struct TuneArgs {
    /// Similarity threshold in (0, 1).
    #[arg(long)]
    pub threshold: f64,
    /// Number of MinHash slots k.
    #[arg(long, default_value_t = 128)]
    pub perms: usize,
    /// How many alternatives to list.
    #[arg(long, default_value_t = 5)]
    pub alternatives: usize,
}

#[derive(clap::Args)]
pub struct DemoArgs {
    /// Directory of text files (one document per file).
    #[arg(default_value = "samples/texts")]
    pub dir: PathBuf,
    /// Similarity threshold.
    #[arg(long, default_value_t = 0.5)]
    pub threshold: f64,
    #[command(flatten)]
    pub sketch: SketchArgs,
}
