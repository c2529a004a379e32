//! The command line: every subcommand, argument, default and `--help` text of `mhdb`, and the
//! validators that check the same parameter the same way in every command.
//!
//! The commands themselves live in the command-family modules; this file only says what they
//! accept.

use std::path::PathBuf;

use mhdb::decisions::Keep;

use mhdb::sketch::{Scheme, ShingleConfig, ShingleKind, SimWeighting, SketchParams};

/// `mhdb --help` after the command list: the conventions every command follows.
const CONVENTIONS: &str = "\
Example:
  mhdb create idx --threshold 0.8
  mhdb add idx corpus.jsonl
  mhdb query idx --text \"some text\"
  mhdb dedup idx --format drop | mhdb delete idx -
  mhdb stats idx

Conventions (every command):
  stdout carries the result; stderr carries messages: progress (on a terminal only),
  summaries of what a write did, warnings and errors.
  --json prints the result as JSON, one shape per kind of result (README: \"JSON shapes\").
  '-' reads standard input wherever a file or a list of keys is read.
  Keys are arbitrary bytes. Text output writes one key per line, escaped: \\\\ \\n \\r \\t \\0,
  and \\xHH for other control bytes and bytes that are not UTF-8 (other keys print as they
  are); key arguments and 'delete -' read that form back. In JSON a key is a string, or
  {\"hex\": \"...\"} when it is not UTF-8; JSON inputs accept both and refuse numbers.
  A text without shingles (empty or white space only) is similar to nothing: queries find
  nothing for it and 'add' refuses to store it.
  Thresholds are in (0, 1] everywhere.

Exit codes:
  0  success
  1  failure: I/O, a locked or missing database, an absent key ('get'), a bad input line
  2  usage: unknown flag, missing argument, parameter out of range or inconsistent
  3  corruption: stored bytes are damaged ('verify' and any command reading them)";

/// A similarity threshold: a number in (0, 1], the same for every command that takes one.
pub fn threshold(s: &str) -> Result<f64, String> {
    let t: f64 = s
        .parse()
        .map_err(|_| format!("must be a number in (0, 1], got {s:?}"))?;
    if t > 0.0 && t <= 1.0 {
        Ok(t)
    } else {
        Err(format!("must be in (0, 1], got {s}"))
    }
}

/// A count of matches to keep (`--limit`, `--top`): at least 1 (0 would answer nothing).
pub fn at_least_one(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(format!("must be a whole number of at least 1, got {s:?}")),
    }
}

#[derive(clap::Parser)]
#[command(
    name = "mhdb",
    version,
    about = "An embedded, crash-safe MinHash-LSH index database",
    after_help = CONVENTIONS
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(clap::Subcommand)]
pub enum Command {
    /// Create a new database in a missing or empty directory.
    #[command(
        after_help = "Examples:\n  mhdb create idx --perms 128 --threshold 0.8 --bits 32\n  mhdb create simidx --kind simhash --max-hamming 3 --shingle word:2\n\nA simhash index (same content, different words) keeps a 64-bit SimHash fingerprint per\ndocument and finds those within --max-hamming differing bits; --perms, --scheme, --bits,\n--bands, --rows and --threshold are MinHash flags it refuses.\nPrints what it created on stderr (--json: {\"created\", \"params\", \"probability_at_threshold\"}\non stdout). Warns when the banding makes fewer than half the pairs at the threshold\ncandidates (P(threshold) < 0.5).\nExit codes: 0 created; 1 I/O; 2 bad parameter, or the directory is not empty."
    )]
    Create(CreateArgs),
    /// Add documents from JSON Lines (plain, gzip or zstd), Parquet, Arrow, CSV/TSV, or plain
    /// files.
    #[command(
        after_help = "Examples:\n  mhdb add idx corpus.jsonl\n  cat corpus.jsonl | mhdb add idx - --json\n  mhdb add idx data/ --text-field body --id-field meta.url\n  mhdb add idx 'crawl/**/*.parquet' --id-from-path\n  mhdb add idx --files docs/\n\nFormats are recognized by their first bytes, then by extension: gzip and zstd (JSON Lines,\nor CSV/TSV when named .csv.gz, .tsv.zst...), Parquet, Arrow IPC files and streams, .csv and\n.tsv with a header; anything else is JSON Lines. Directories are walked in name order\n(names starting with '.' or '_' passed over); a quoted glob pattern is expanded sorted.\nFields may be paths into nested objects or struct columns (meta.url).\nIds are strings, or {\"hex\": \"...\"} for keys that are not UTF-8; numbers are refused in\nJSON. Parquet and Arrow id columns may be strings, binary or integers (17 is the key \"17\").\n--id-from-path: the id is the file's path below its input root, ':' and the line (JSON\nLines, CSV; from 1) or row (Parquet, Arrow; from 0): sub/part-0001.parquet:17.\nA text without shingles (empty or white space only) is refused like any invalid line.\n--tokens-field FIELD (an index created with --shingle tokens[:N]): each document is a token\nlist, a JSON array of strings and integers or a Parquet/Arrow list column; an empty list, a\nnull, a float or a nested array is refused like any invalid line.\n--json: one line {\"committed\", \"last_id\"} per durable commit.\nExit codes: 0 loaded; 1 a bad line or row (named; everything before it is committed), an\nunreadable file (named, with the row group or byte offset), I/O or locked; 2 usage."
    )]
    Add(AddArgs),
    /// Find documents similar to a text, a file, or each line of a JSONL file.
    #[command(
        after_help = "Examples:\n  mhdb query idx --text \"the quick brown fox\"\n  mhdb query tokens-idx --tokens-json '[\"ab\", \"cd\", 17]'\n  mhdb query idx --jsonl queries.jsonl --threshold 0.7\n  zcat queries.jsonl.gz | mhdb query idx --jsonl - > answers.jsonl\n\nText output: one line per match, \"JACCARD<TAB>KEY\" (key escaped; simhash index:\n\"DISTANCE<TAB>COSINE<TAB>KEY\"). --json, and always with\n--jsonl: one answer per query, {\"id\", \"matches\": [{\"id\", \"jaccard\"}] (simhash: [{\"id\", \"distance\",\n\"cosine\"}]), \"candidates\", \"verified\", \"hot_buckets\"}; \"id\" is the query's id as given (null for --text and --tokens-json, the path\nfor --file). --jsonl streams: answers come out in input order while later lines are read,\nin memory that does not grow with the input.\nExit codes: 0 answered (with or without matches); 1 a bad line (named; the lines before it\nare answered) or I/O; 2 usage."
    )]
    Query(QueryArgs),
    /// Show whether keys are present (and their stored signatures with --json).
    #[command(
        after_help = "Examples:\n  mhdb get idx doc-17 doc-18 --json\n  mhdb keys idx | head -n 5 | mhdb get idx -\n\nText output: \"KEY<TAB>present\" or \"KEY<TAB>absent\" per key (key escaped). --json: one\n{\"id\", \"present\", \"bits\", \"signature\"} per key (simhash index: {\"id\", \"present\",\n\"fingerprint\"}, 16 hex digits; {\"id\", \"present\": false} if absent).\nExit codes: 0 every key present; 1 some key absent (the same in text and --json mode, with\na message on stderr), or I/O; 2 usage or a badly escaped key."
    )]
    Get(GetArgs),
    /// Print every live key, one per line.
    #[command(
        after_help = "Examples:\n  mhdb keys idx | wc -l\n  mhdb keys idx | grep '^tmp-' | mhdb delete idx -\n\nText output: one escaped key per line. --json: one {\"id\"} per line, as `delete --jsonl` reads."
    )]
    Keys(JsonDbArgs),
    /// Delete keys given as arguments, read from standard input ('-'), or named in a JSONL file.
    #[command(
        after_help = "Examples:\n  mhdb delete idx doc-17 'two\\nlines'\n  mhdb dedup idx --format drop | mhdb delete idx -\n  mhdb delete idx --jsonl gone.jsonl\n\nKEY arguments and the lines read by '-' are keys escaped as `mhdb keys` prints them (one per\nline; an empty line is the empty key). Every key is deleted in one atomic write, after the\nwhole input is read. Prints \"deleted N of M keys\" on stderr (--json: {\"deleted\",\n\"requested\"} on stdout); M counts distinct keys, N those that were present.\nExit codes: 0 done (absent keys are not an error); 1 a bad line (named; nothing is\ndeleted), I/O or locked; 2 usage."
    )]
    Delete(DeleteArgs),
    /// Every near-duplicate pair (or cluster, or the keys to drop) verified at a threshold.
    #[command(
        after_help = "Examples:\n  mhdb dedup idx --threshold 0.8 > pairs.jsonl\n  mhdb dedup idx --format drop | mhdb delete idx -\n  mhdb dedup idx --apply data/ --out deduped/ [--annotate] [--keep last]\n\nFormats: pairs = one JSON line per unordered pair {\"a\", \"b\", \"jaccard\"} (simhash\nindex: {\"a\", \"b\", \"distance\", \"cosine\"}); every verified pair, so quadratic in the size\nof a near-duplicate cluster (up to cap*(cap-1)/2 per band bucket; see create --bucket-cap),\nexcept exact copies: each is paired once, at 1, with its group's representative (a star,\nnot every pair of copies), and in the band buckets a copy counts as its representative;\nclusters = one JSON line per cluster {\"keep\", \"duplicates\"} (star clusters: every member\nis verified similar to the kept document, so unrelated documents never chain together);\ndrop = the keys to delete, keeping the first document of each cluster in --keep order\n(the oldest by default): one escaped key per line, as `delete -` reads (--json: one\n{\"id\"} per line, as `delete --jsonl` reads). A summary goes to stderr.\n--apply writes each input file (as `add` read it, with the same --id-field, --id-from-path\nand --text-field) to --out at its path below its input root, in its own format and\ncompression, without the dropped rows (--annotate: every row, with cluster, keep, best_match\nand similarity added); see the README, \"Deduplicated files out\".\nExit codes: 0 done; 1 I/O or an id met twice in the inputs; 2 usage (--out in an input, a\ntaken column, an output file that exists without --overwrite); 3 an input or the index is\ndamaged."
    )]
    Dedup(DedupArgs),
    /// Deduplicate files in one command: index the inputs, decide, and write their copies
    /// without the near-duplicates (or annotated) to a directory.
    #[command(
        name = "dedup-files",
        after_help = "Examples:\n  mhdb dedup-files data/ --out deduped/\n  mhdb dedup-files 'crawl/*.parquet' --out deduped/ --threshold 0.7 --keep last\n  mhdb dedup-files corpus.jsonl.zst --out annotated/ --annotate --index corpus-idx\n\nThe same job as `mhdb create`, `mhdb add` and `mhdb dedup --apply` run one after the\nother, with their formats, rules and messages: the index is built in a temporary directory\nremoved at the end (--index DB: created at DB, which must not exist or be empty, and kept for\nqueries and for `dedup --apply` later), then every input file is written below --out at its\npath under its input root, in its own format and compression. An id met twice in the inputs\nis an error naming both places (--on-duplicate keep-first: the first row's decision holds and\nlater ones are dropped; keep-all: every row gets it). A summary goes to stderr (--json: one\nobject on stdout: documents, dropped, rows, kept, files, not_in_index, seconds per phase).\nExit codes: as `add` and `dedup --apply`: 0 done; 1 I/O or a bad input row (named); 2 usage;\n3 an input is damaged."
    )]
    DedupFiles(DedupFilesArgs),
    /// Write a compacted, self-contained copy to ship (servers open it read-only).
    #[command(
        after_help = "Example:\n  mhdb export idx /srv/shipped-idx\n\nPrints what it did on stderr (--json: {\"exported\"} on stdout)."
    )]
    Export(ExportArgs),
    /// Merge databases built from disjoint shards into DEST (created if missing); on duplicate
    /// keys the later source wins.
    #[command(
        after_help = "Example:\n  mhdb merge all shard-0 shard-1 shard-2\n\nPrints what it did on stderr (--json: {\"merged\", \"dest\", \"sources\": [{\"path\",\n\"documents\"}]} on stdout).\nExit codes: 0 merged; 1 I/O or locked; 2 the sources' parameters differ."
    )]
    Merge(MergeArgs),
    /// Merge all segments into one, dropping deleted documents.
    #[command(
        after_help = "Example:\n  mhdb compact idx\n\nPrints what it did on stderr (--json: {\"live_docs\", \"segments\"} on stdout)."
    )]
    Compact(JsonDbArgs),
    /// Convert a database written in format version 1 or 2 to the current format, in place.
    #[command(
        after_help = "Example:\n  mhdb upgrade idx\n\nA database of version 1 or 2 opens read-only; writing needs this conversion first. The\nold files are read (every checksum checked), the live documents written as a new\ndatabase (under a new identity) beside them, and the directories swapped; an interrupted\nupgrade leaves the old database as it was (run it again). A keyed index's stored sets of\nversion 2 are kept as they are (`stats` says they leak its keyed hashes); --drop-sets\nwrites the copy without sets (also on a database of the current version).\nPrints what it did on stderr (--json: {\"upgraded\", \"kept\"} on stdout).\nExit codes: 0 upgraded or already current; 1 I/O or locked; 3 corruption."
    )]
    Upgrade(UpgradeArgs),
    /// Counts, sizes, bucket distributions and parameters.
    #[command(
        after_help = "Example:\n  mhdb stats idx --json\n\nParameters are named as the `create` flags that set them (text: the flags themselves;\nJSON: \"params\" with the flag names, '-' written '_')."
    )]
    Stats(StatsArgs),
    /// Check every checksum and invariant (exit code 3 on corruption).
    #[command(
        after_help = "Example:\n  mhdb verify idx && echo ok\n\nPrints \"ok: N files checked\" on stdout, or each problem on stderr. --json: {\"ok\",\n\"files_checked\", \"problems\": [{\"corruption\", \"message\"}]} on stdout.\nExit codes: 0 ok; 1 a problem that is not corruption, or I/O; 3 corruption."
    )]
    Verify(VerifyArgs),
    /// Choose (bands, rows) for a threshold and print alternatives and the S-curve.
    #[command(
        after_help = "Examples:\n  mhdb tune --threshold 0.8 --perms 512 --band-slots 128\n  mhdb tune --threshold 0.8 --bands 4 --rows 32\n\nWarns on stderr when the best (or the given) banding has P(threshold) < 0.5.\n--json: {\"threshold\", \"perms\", \"band_slots\", \"choices\": [{\"bands\", \"rows\", \"probability_at_threshold\",\n\"false_positive\", \"false_negative\", \"meets_recall_floor\"}], \"s_curve\": [{\"jaccard\",\n\"probability\"}]}."
    )]
    Tune(TuneArgs),
    /// Sketch every file of a directory and print the pairs at or above the threshold.
    #[command(
        after_help = "Example:\n  mhdb demo samples/texts --threshold 0.5\n\n--json: {\"documents\", \"bands\", \"rows\", \"pairs\": [{\"a\", \"b\", \"jaccard\"}], \"s_curve\"};\npairs name files, best first. Files without shingles pair with nothing."
    )]
    Demo(DemoArgs),
    /// Serve a database over HTTP/JSON (queries; with --writer, inserts and deletes too), or
    /// read-only shards as one index.
    #[command(
        after_help = "Examples:\n  mhdb serve idx\n  mhdb serve idx --writer --listen 127.0.0.1:9000 --token-file token.txt\n  mhdb serve 'shards/shard-*'\n  curl -s localhost:8080/query -d '{\"text\": \"the quick brown fox\"}'\n\nEndpoints: POST /query ({\"text\"} or {\"signature\"}, with \"threshold\", \"max_distance\", \"limit\",\n\"top\", \"no_exact\"; answered as `query --json` answers), POST /query_batch (JSON Lines in, one\nanswer line per query out, in input order, streamed), GET /stats (as `stats --json`),\nGET /health, GET /metrics (Prometheus text). With --writer: POST /insert, /insert_if_novel\nand /delete ({\"id\", \"text\"} or a list of them), each answered once durable.\nA read-only server picks up what a writer in another process commits within --refresh-ms.\nErrors are JSON {\"error\", \"kind\"}: 4xx for the request's fault, 5xx for the server's (503\nwith Retry-After when --max-concurrent requests are running). Prints \"listening on\nADDRESS\" on stdout once it accepts connections; SIGTERM or SIGINT stops it after the requests\nunder way finish. TLS is left to a reverse proxy.\nExit codes: 0 stopped by a signal; 1 I/O (the address is taken) or locked; 2 usage (a keyed\nindex without its key, a bad token file, --writer with several databases)."
    )]
    Serve(ServeArgs),
}

// How documents are sketched (`create`, `demo`). No doc comment: clap would take it as help
// text.
#[derive(clap::Args, Clone)]
pub struct SketchArgs {
    /// Number of MinHash slots k (k_v, all compared by verification). Default: 512 with
    /// --scheme oph, 128 with kperm.
    #[arg(long)]
    pub perms: Option<usize>,
    /// Signature scheme: oph (one-permutation hashing, default) or kperm.
    #[arg(long, default_value = "oph")]
    pub scheme: Scheme,
    /// Seed from which every hash constant is derived.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Shingles: char:N (N characters), word:N (N words split at white space) or
    /// unicode-word:N (N Unicode words: UAX #29 boundaries, each CJK ideograph or Thai letter a
    /// word), the last with options +fold-punctuation (can't = cant) and +fold-digits (every
    /// decimal digit read as 0), e.g. unicode-word:2+fold-digits.
    #[arg(long, default_value = "char:5")]
    pub shingle: ShingleKind,
    /// Apply Unicode NFKC normalization before lowercasing.
    #[arg(long)]
    pub nfkc: bool,
}

impl SketchArgs {
    /// The slots: --perms, or the default for the scheme.
    pub fn num_perm(&self) -> usize {
        self.perms
            .unwrap_or_else(|| mhdb::db::default_slots(self.scheme))
    }

    /// The sketch parameters these flags select.
    pub fn params(&self) -> SketchParams {
        SketchParams {
            scheme: self.scheme,
            num_perm: self.num_perm(),
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
pub struct StatsArgs {
    /// Database directory; several (or a glob pattern) are shards: each one's statistics,
    /// then their totals.
    #[arg(required = true, value_name = "DB")]
    pub dbs: Vec<PathBuf>,
    /// JSON output.
    #[arg(long)]
    pub json: bool,
}

#[derive(clap::Args)]
pub struct VerifyArgs {
    /// Database directory; several (or a glob pattern) are shards, all verified.
    #[arg(required = true, value_name = "DB")]
    pub dbs: Vec<PathBuf>,
    /// JSON output.
    #[arg(long)]
    pub json: bool,
}

#[derive(clap::Args)]
pub struct JsonDbArgs {
    /// Database directory.
    pub db: PathBuf,
    /// JSON output.
    #[arg(long)]
    pub json: bool,
}

#[derive(clap::Args)]
pub struct UpgradeArgs {
    /// Database directory.
    pub db: PathBuf,
    /// Keep the old files in `.<name>.mhdb-v<N>` (N: their version) beside the database.
    #[arg(long)]
    pub keep_old: bool,
    /// Write the copy without stored shingle sets (exact re-rank off): for a keyed index whose
    /// sets, stored by format version 2, leak its keyed hashes (`stats` says so). On a
    /// database already of the current version, removes its stored sets.
    #[arg(long)]
    pub drop_sets: bool,
    /// JSON output.
    #[arg(long)]
    pub json: bool,
}

#[derive(clap::Args)]
pub struct CreateArgs {
    /// Database directory (must not exist or be empty).
    pub db: PathBuf,
    #[command(flatten)]
    pub sketch: SketchArgs,
    /// Bits per stored signature slot: 1, 2, 4, 8, 16, 32 or 64. Default: the width that
    /// makes a signature 256 bytes, 4 to 32 (512 slots: 4 bits; 128 slots: 16).
    #[arg(long)]
    pub bits: Option<u32>,
    /// Bands cover only the first KB slots (k_b ≤ --perms); verification compares all of them
    /// (a verification sketch wider than the bands). Default: 128, or every slot if fewer.
    #[arg(long, value_name = "KB")]
    pub band_slots: Option<usize>,
    /// Similarity threshold in (0, 1] the bands are tuned for (and the default query
    /// threshold). Default: 0.8. A simhash index takes none (it follows from --max-hamming).
    #[arg(long, value_parser = threshold, allow_negative_numbers = true)]
    pub threshold: Option<f64>,
    /// Explicit number of bands (with --rows) instead of tuning from the threshold.
    #[arg(long, requires = "rows")]
    pub bands: Option<usize>,
    /// Explicit rows per band (with --bands).
    #[arg(long, requires = "bands")]
    pub rows: Option<usize>,
    /// Largest band bucket: a bucket over it keeps the documents whose keys hash lowest, in
    /// segments, queries and dedup alike (0 = unlimited).
    #[arg(long, default_value_t = mhdb::db::DEFAULT_BUCKET_CAP)]
    pub bucket_cap: u32,
    /// Index kind: minhash (Jaccard of shingle sets, default) or simhash (64-bit SimHash
    /// fingerprints of term-frequency-weighted shingles, matched by Hamming distance).
    #[arg(long, value_enum, default_value = "minhash")]
    pub kind: KindArg,
    /// minhash: jaccard (default), or containment: the index also finds the documents that
    /// contain most of a query (a quoted paragraph, a license inside a file), |Q ∩ X| / |Q|
    /// ≥ --threshold, by LSH Ensemble over set-size classes; it answers Jaccard queries too.
    #[arg(long, value_enum)]
    pub metric: Option<MetricArg>,
    /// simhash: the largest Hamming distance of a match, 0 to 15 (the fingerprint is cut into
    /// this + 1 blocks, one exact-match index each). Default 3.
    #[arg(long)]
    pub max_hamming: Option<u32>,
    /// simhash: feature weights, tf (term frequency, default) or logtf (1 + log2 tf).
    #[arg(long)]
    pub weighting: Option<SimWeighting>,
    /// Keyed hashing: hash shingles under the secret key in FILE (32 raw bytes, or 64 hex
    /// digits as `openssl rand -hex 32` writes), so that nobody without it can predict which
    /// shingles decide a signature. The index stores the key's fingerprint, never the key; every
    /// later command that signs text needs the key, from the file named by MHDB_KEY_FILE.
    #[arg(long, value_name = "FILE")]
    pub key_file: Option<PathBuf>,
    /// Store each document's shingle set (about 3 bytes per distinct shingle) so that query
    /// and dedup report the exact Jaccard similarity: candidates whose estimate comes within a
    /// margin of the threshold are re-ranked exactly. Bands × rows are then tuned for recall
    /// (P(threshold) ≥ 0.99). Documents must be added as text.
    #[arg(long)]
    pub store_sets: bool,
    /// Create the index without the per-document exact hash (16 bytes a document), which
    /// `stats` counts and `add --exact-dedup` uses to skip exact copies. A MinHash index of
    /// texts or token lists has it by default.
    #[arg(long)]
    pub no_exact_hash: bool,
    /// Create the index without band filters: each segment then keeps no membership filter
    /// per band (about 10 bits per distinct band key), and a query that matches nothing
    /// searches every segment's band tables instead of skipping those that lack its keys.
    #[arg(long)]
    pub no_band_filters: bool,
    /// Create the index without the per-document set size (4 bytes a document: the number of
    /// distinct shingles), which `dedup --keep longest|shortest` ranks by. A MinHash index of
    /// texts or token lists has it by default.
    #[arg(long)]
    pub no_set_size: bool,
    /// JSON output.
    #[arg(long)]
    pub json: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum KindArg {
    /// MinHash-LSH.
    Minhash,
    /// SimHash-pigeonhole.
    Simhash,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum MetricArg {
    /// Jaccard similarity of shingle sets.
    Jaccard,
    /// Containment of the query's shingle set in a document's.
    Containment,
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
    /// Files, directories or glob patterns of JSON Lines, Parquet, Arrow or CSV/TSV ('-' or
    /// nothing: standard input, JSON Lines); with --files, files and directories.
    pub inputs: Vec<PathBuf>,
    /// Treat inputs as plain text files (directories are walked); each file is one document
    /// keyed by its path.
    #[arg(long)]
    pub files: bool,
    /// Field or column holding the document id (a path like meta.url reaches into nested
    /// objects and struct columns): in JSON a string, or {"hex": "..."} for any bytes.
    #[arg(long, default_value = "id")]
    pub id_field: String,
    /// The data has no ids: each document's id is its file's path below its input root, ':'
    /// and its line (JSON Lines, CSV/TSV; from 1) or row (Parquet, Arrow; from 0).
    #[arg(long, conflicts_with_all = ["id_field", "files"])]
    pub id_from_path: bool,
    /// Field or column holding the text (a path like doc.body reaches into nested objects).
    #[arg(long, default_value = "text")]
    pub text_field: String,
    /// Field or column holding each document's token list, for an index created with
    /// --shingle tokens[:N]: a JSON array of strings and integers, or a Parquet/Arrow list
    /// column of strings or int32/int64.
    #[arg(long, conflicts_with_all = ["text_field", "files"])]
    pub tokens_field: Option<String>,
    /// Capture this field or column of each document as its keep value, which
    /// `dedup --keep max:FIELD|min:FIELD` ranks by: a number or a string; null or missing is
    /// no value. The first add with it fixes the index's keep field and type, before the index
    /// has segments.
    #[arg(long, value_name = "FIELD", conflicts_with = "files")]
    pub keep_field: Option<String>,
    /// The type of the keep values when --keep-field fixes it: by default the first value's
    /// (numbers f64: integers past 2^53 need i64; a Parquet or Arrow column's own type).
    #[arg(long, value_enum, requires = "keep_field")]
    pub keep_type: Option<KeepTypeArg>,
    /// Commit (durably) every N documents, and at the end.
    #[arg(long, default_value_t = 10_000, value_parser = at_least_one)]
    pub commit_every: usize,
    /// Print one JSON line per durable commit: {"committed": N, "last_id": ...}.
    #[arg(long)]
    pub json: bool,
    /// What to do with an id that is already stored.
    #[arg(long, value_enum, default_value = "replace")]
    pub on_duplicate: OnDuplicate,
    /// Skip (and count) malformed lines and rows instead of stopping (a file that cannot be
    /// read, or a Parquet row group that cannot be decoded, still stops the load).
    #[arg(long)]
    pub skip_invalid: bool,
    /// Store a document only if nothing stored (nor an earlier document of the input) is
    /// similar to it at the threshold: check and insert as one step. Documents are then
    /// committed one by one through the write-ahead log rather than as bulk segments.
    #[arg(long)]
    pub novel_only: bool,
    /// Skip (and count) a document whose exact hash (its normalized text's, or its token
    /// list's) equals that of a stored, live document or of an earlier document of the input,
    /// before it reaches the band buckets. Needs an index with exact hashes (the default for a
    /// MinHash index of texts or token lists; not one created with --no-exact-hash).
    #[arg(long)]
    pub exact_dedup: bool,
    /// With --novel-only: the similarity that makes a duplicate (default: the index's
    /// threshold; for a simhash index, a minimum cosine).
    #[arg(long, requires = "novel_only", value_parser = threshold, allow_negative_numbers = true)]
    pub threshold: Option<f64>,
    /// With --novel-only: write each skipped document to this JSON Lines file, in input order:
    /// {"id", "best_match", "similarity", "matches"} ("distance" too in a simhash index).
    #[arg(long, requires = "novel_only")]
    pub report: Option<PathBuf>,
    #[command(flatten)]
    pub size: DocumentLimit,
    #[command(flatten)]
    pub key: KeyArg,
}

/// The key of a keyed index, for the commands that sign text (`add`, `query`).
#[derive(clap::Args)]
pub struct KeyArg {
    /// A keyed index's secret key, in FILE as create --key-file took it (its fingerprint must
    /// be the index's). Without it, the key file MHDB_KEY_FILE names; given both, this one.
    #[arg(long, value_name = "FILE")]
    pub key_file: Option<PathBuf>,
}

impl KeyArg {
    /// The key the flag names, read (`None` without the flag: the library then reads the file
    /// MHDB_KEY_FILE names, if any).
    pub fn key(&self) -> mhdb::Result<Option<mhdb::sketch::SecretKey>> {
        self.key_file
            .as_deref()
            .map(mhdb::sketch::SecretKey::from_file)
            .transpose()
    }
}

/// The per-document size limit (`add`, `query`).
#[derive(clap::Args)]
pub struct DocumentLimit {
    /// The most bytes one document may have: a JSON line, a row's text, a whole file with
    /// --files or query --file. A longer one is refused in its place (skipped with
    /// --skip-invalid, except a CSV/TSV record, after which the file cannot be read on)
    /// after reading no more than this. The default, 64 MiB, is far above any
    /// text worth indexing as one document, and refuses at once a file that is not one
    /// (/dev/zero, a disk image) instead of reading it whole. Files holding many documents
    /// (JSON Lines, Parquet, CSV) have no size limit.
    #[arg(long, value_name = "BYTES", default_value_t = mhdb::input::DEFAULT_MAX_DOCUMENT_BYTES)]
    pub max_document_bytes: u64,
}

#[derive(clap::Args)]
#[command(group(clap::ArgGroup::new("input").required(true).args(["text", "file", "tokens_json", "jsonl"])))]
pub struct QueryArgs {
    /// Database directory; several (or a glob pattern, expanded and sorted when the shell did
    /// not) are shards queried as one index: a key in two shards answers from the later one.
    #[arg(required = true, value_name = "DB")]
    pub dbs: Vec<PathBuf>,
    /// Query text.
    #[arg(long)]
    pub text: Option<String>,
    /// File whose whole content is the query ('-': standard input).
    #[arg(long)]
    pub file: Option<PathBuf>,
    /// Query token list, a JSON array of strings and integers ('["a", "b", 7]'), for an index
    /// created with --shingle tokens[:N].
    #[arg(long)]
    pub tokens_json: Option<String>,
    /// JSON Lines file, one query per line ({"id": ..., "text": ...}, or {"id": ..., "tokens":
    /// [...]} in an index of token lists; '-': standard input). Answers are streamed, in input
    /// order.
    #[arg(long)]
    pub jsonl: Option<PathBuf>,
    /// Minimum estimated Jaccard, in (0, 1] (default: the database's threshold); for a simhash
    /// index, the minimum cosine estimate cos(π·d/64).
    #[arg(long, value_parser = threshold, allow_negative_numbers = true)]
    pub threshold: Option<f64>,
    /// simhash index: the largest Hamming distance of a match (at most the index's
    /// --max-hamming, its default).
    #[arg(long, conflicts_with = "threshold")]
    pub max_distance: Option<u32>,
    /// containment index: the documents holding at least this fraction C of the query's
    /// shingles, |Q ∩ X| / |Q| ≥ C, in (0, 1] (default, for a containment index: its
    /// threshold); reported with their Jaccard. --threshold asks a Jaccard query instead.
    /// With --top K: the K documents containing most of the query, down to C (else 0.3).
    #[arg(long, value_name = "C", value_parser = threshold, conflicts_with_all = ["threshold", "max_distance"])]
    pub containment: Option<f64>,
    /// containment index, decided by estimate (no stored sets, or --no-exact): about the
    /// share of the documents holding exactly C of the query that are found, in (0, 1)
    /// (default 0.5: a document is kept when its estimate reaches C). 0.95 keeps nearly every
    /// true match and more false ones, reported with their estimates (some below C); 0.05
    /// keeps only documents whose estimate is surely above C.
    #[arg(long, value_name = "R", conflicts_with_all = ["threshold", "max_distance"])]
    pub recall: Option<f64>,
    /// At most this many matches per query, best first.
    #[arg(long, conflicts_with = "top", value_parser = at_least_one)]
    pub limit: Option<usize>,
    /// In an index with stored shingle sets, decide and report by the signature estimate
    /// alone (no exact re-rank).
    #[arg(long)]
    pub no_exact: bool,
    /// Top-k: the K most similar documents, best first, without a threshold (down to
    /// similarity 0.3, or to --threshold when given); probes beyond the bands when they
    /// cannot be trusted for K. In a SimHash index: the K nearest within --max-hamming (or
    /// --max-distance).
    #[arg(long, value_name = "K", value_parser = at_least_one)]
    pub top: Option<usize>,
    /// JSON output (always on with --jsonl).
    #[arg(long)]
    pub json: bool,
    /// JSON field holding the id in --jsonl input.
    #[arg(long, default_value = "id")]
    pub id_field: String,
    /// JSON field holding the text in --jsonl input.
    #[arg(long, default_value = "text")]
    pub text_field: String,
    /// JSON field holding the token list in --jsonl input (an index of token lists).
    #[arg(long, default_value = "tokens")]
    pub tokens_field: String,
    #[command(flatten)]
    pub size: DocumentLimit,
    #[command(flatten)]
    pub key: KeyArg,
}

#[derive(clap::Args)]
pub struct GetArgs {
    /// Database directory.
    pub db: PathBuf,
    /// Keys to look up, escaped as `mhdb keys` prints them; '-' reads more, one per line,
    /// from standard input.
    #[arg(required = true)]
    pub keys: Vec<String>,
    /// JSON output with the stored signature slots.
    #[arg(long)]
    pub json: bool,
}

#[derive(clap::Args)]
pub struct DeleteArgs {
    /// Database directory.
    pub db: PathBuf,
    /// Keys to delete, escaped as `mhdb keys` prints them; '-' reads more, one per line, from
    /// standard input.
    pub keys: Vec<String>,
    /// JSON Lines file whose id field names the keys to delete ('-': standard input).
    #[arg(long)]
    pub jsonl: Option<PathBuf>,
    /// Field holding the id.
    #[arg(long, default_value = "id")]
    pub id_field: String,
    /// JSON output.
    #[arg(long)]
    pub json: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum DedupFormat {
    Pairs,
    Clusters,
    Drop,
}

#[derive(clap::Args)]
pub struct DedupArgs {
    /// Database directory; several (or a glob pattern, expanded and sorted when the shell did
    /// not) are shards deduplicated as one index, without merging them: the older of a pair
    /// is the earlier shard's, and a key in two shards is the later shard's document.
    #[arg(required = true, value_name = "DB")]
    pub dbs: Vec<PathBuf>,
    /// Minimum estimated Jaccard, in (0, 1] (default: the database's threshold); for a simhash
    /// index, the minimum cosine estimate cos(π·d/64).
    #[arg(long, value_parser = threshold, allow_negative_numbers = true)]
    pub threshold: Option<f64>,
    /// simhash index: the largest Hamming distance of a pair (at most the index's
    /// --max-hamming, its default).
    #[arg(long, conflicts_with = "threshold")]
    pub max_distance: Option<u32>,
    /// A containment index (the default there): drop each document that another, ahead of it
    /// in the --keep order, holds at least C of (|X ∩ Y| / |X|; default the index's
    /// threshold). Its documents are read again from the --apply inputs (or --documents): the
    /// index keeps b-bit signatures, and a containment query needs the full ones.
    #[arg(long, value_name = "C", value_parser = threshold, conflicts_with_all = ["threshold", "max_distance"])]
    pub containment: Option<f64>,
    /// pairs, clusters or drop.
    #[arg(long, value_enum, default_value = "pairs")]
    pub format: DedupFormat,
    /// In an index with stored shingle sets, decide by the signature estimate alone (no
    /// exact re-rank).
    #[arg(long)]
    pub no_exact: bool,
    /// JSON output (pairs and clusters are always JSON Lines).
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub apply: DedupApplyArgs,
}

#[derive(clap::Args)]
pub struct DedupFilesArgs {
    /// Files, directories or glob patterns of JSON Lines (plain, gzip, zstd), Parquet, Arrow or
    /// CSV/TSV, as `add` reads them.
    #[arg(required = true, value_name = "INPUT")]
    pub inputs: Vec<PathBuf>,
    /// The output directory: each input file is written at its path below its input root.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Similarity threshold in (0, 1] the index is tuned for and documents are dropped at
    /// (with --metric containment: the fraction of a document another must hold).
    #[arg(long, value_parser = threshold, default_value_t = 0.8, allow_negative_numbers = true)]
    pub threshold: f64,
    /// jaccard (default): drop near-duplicates; containment: drop each document that
    /// another, ahead of it in the --keep order, holds at least --threshold of (|X ∩ Y| / |X|:
    /// a quoted passage, a page that is a section of a longer one; use --keep longest). The
    /// containment index stores shingle sets, so each drop is by exact containment.
    #[arg(long, value_enum, default_value = "jaccard")]
    pub metric: MetricArg,
    /// Shingling of the index, as `create --shingle` takes it.
    #[arg(long, default_value = "char:5")]
    pub shingle: ShingleKind,
    /// Keep the index: create it at DB (missing or empty) instead of a temporary directory.
    #[arg(long, value_name = "DB")]
    pub index: Option<PathBuf>,
    /// Which copy of a near-duplicate group stays: first (the oldest, insert order), last
    /// (the newest), longest or shortest (the most or fewest distinct shingles, by the
    /// index's set sizes: repeated boilerplate inside a document does not count), max:FIELD
    /// or min:FIELD (the highest or lowest value of FIELD, captured by add --keep-field;
    /// numbers by value, strings bytewise). Documents without a size or value last, ties to
    /// the earlier insert.
    #[arg(long, default_value = "first", value_parser = keep_order)]
    pub keep: Keep,
    /// With --keep max:FIELD or min:FIELD: the type of FIELD's values (by default the first
    /// value's; numbers f64, so integers past 2^53 need i64; a Parquet or Arrow column's own).
    #[arg(long, value_enum)]
    pub keep_type: Option<KeepTypeArg>,
    /// Keep every row and add the columns cluster, keep, best_match and similarity.
    #[arg(long)]
    pub annotate: bool,
    /// With --annotate: put P before the added columns' names.
    #[arg(long, value_name = "P", requires = "annotate")]
    pub annotate_prefix: Option<String>,
    /// An id met twice in the inputs: an error naming both places, or the first row keeps
    /// the id's decision (later ones dropped), or every row gets it.
    #[arg(long, value_enum, default_value = "error")]
    pub on_duplicate: OnRepeat,
    /// Replace output files that exist (otherwise they are refused before anything is
    /// written).
    #[arg(long)]
    pub overwrite: bool,
    /// Field or column holding the id.
    #[arg(long, default_value = "id")]
    pub id_field: String,
    /// The data has no ids: each row's id is its file's path below its input root and its
    /// line or row, as `add --id-from-path` makes it.
    #[arg(long, conflicts_with = "id_field")]
    pub id_from_path: bool,
    /// Field or column holding the text.
    #[arg(long, default_value = "text")]
    pub text_field: String,
    /// Skip (and count) malformed lines and rows while indexing instead of stopping; they are
    /// kept in the output.
    #[arg(long)]
    pub skip_invalid: bool,
    /// The summary as one JSON object on stdout.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub size: DocumentLimit,
}

// `dedup --apply`: the decision written to the files the index was loaded from. No doc
// comment: clap would take it as help text.
#[derive(clap::Args)]
pub struct DedupApplyArgs {
    /// Write each of these inputs (files, directories or glob patterns, as `add` read them)
    /// to --out, in its own format and compression, without its dropped rows.
    #[arg(long, num_args = 1.., value_name = "INPUT", requires = "out", conflicts_with_all = ["format", "json"])]
    pub apply: Vec<PathBuf>,
    /// The output directory: each input file is written at its path below its input root.
    #[arg(long, value_name = "DIR", requires = "apply")]
    pub out: Option<PathBuf>,
    /// A containment index, with --format clusters or drop: its documents (files,
    /// directories or glob patterns, as `add` read them), read again to be queried (the index
    /// keeps b-bit signatures, and a containment query needs the full ones).
    #[arg(long, num_args = 1.., value_name = "INPUT", conflicts_with = "apply")]
    pub documents: Vec<PathBuf>,
    /// Keep every row and add the columns cluster, keep, best_match and similarity.
    #[arg(long, requires = "apply")]
    pub annotate: bool,
    /// With --annotate: put P before the added columns' names.
    #[arg(long, value_name = "P", requires = "annotate")]
    pub annotate_prefix: Option<String>,
    /// Which copy of a near-duplicate group stays: first (the oldest, insert order), last
    /// (the newest), longest or shortest (the most or fewest distinct shingles, by the
    /// index's set sizes: repeated boilerplate inside a document does not count), max:FIELD
    /// or min:FIELD (the highest or lowest value of FIELD, captured by add --keep-field;
    /// numbers by value, strings bytewise). Documents without a size or value last, ties to
    /// the earlier insert.
    /// With --format drop or clusters, or --apply; pairs are the same whatever stays.
    #[arg(long, default_value = "first", value_parser = keep_order)]
    pub keep: Keep,
    /// An id met twice in the inputs: an error naming both places, or the first row keeps
    /// the id's decision (later ones dropped), or every row gets it.
    #[arg(long, value_enum, default_value = "error", requires = "apply")]
    pub on_duplicate: OnRepeat,
    /// Replace output files that exist (otherwise they are refused before anything is
    /// written).
    #[arg(long, requires = "apply")]
    pub overwrite: bool,
    /// Field or column holding the id, as `add` took it.
    #[arg(long, default_value = "id", requires = "apply")]
    pub id_field: String,
    /// The ids came from the rows' places, as `add --id-from-path` made them.
    #[arg(long, conflicts_with = "id_field", requires = "apply")]
    pub id_from_path: bool,
    /// Field or column holding the text, as `add` took it.
    #[arg(long, default_value = "text", requires = "apply")]
    pub text_field: String,
    #[command(flatten)]
    pub size: DocumentLimit,
}

/// A `--keep` order, parsed by its one owner ([`Keep::from_str`](std::str::FromStr)).
fn keep_order(name: &str) -> Result<Keep, String> {
    name.parse::<Keep>().map_err(|e| e.to_string())
}

/// The type of an index's keep values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum KeepTypeArg {
    /// 64-bit signed integers.
    I64,
    /// 64-bit floats.
    F64,
    /// Strings, compared bytewise.
    String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum OnRepeat {
    /// Stop, naming both places.
    Error,
    /// The first row keeps the id's decision; later rows with it are dropped.
    KeepFirst,
    /// Every row with the id gets its decision.
    KeepAll,
}

#[derive(clap::Args)]
pub struct ExportArgs {
    /// Database directory.
    pub db: PathBuf,
    /// New directory for the copy.
    pub dest: PathBuf,
    /// JSON output.
    #[arg(long)]
    pub json: bool,
    /// Export a database that reports a torn WAL tail (as verify does) all the same, leaving
    /// the tail out, and say what was left out; without it such a database is refused (exit
    /// 3), since the tail may have held acknowledged writes the copy would silently lack.
    #[arg(long)]
    pub allow_damaged: bool,
}

#[derive(clap::Args)]
pub struct MergeArgs {
    /// Destination database (created with the first source's parameters if missing).
    pub dest: PathBuf,
    /// Source databases (same parameters).
    #[arg(required = true)]
    pub srcs: Vec<PathBuf>,
    /// JSON output.
    #[arg(long)]
    pub json: bool,
}

#[derive(clap::Args)]
pub struct TuneArgs {
    /// Similarity threshold in (0, 1].
    #[arg(long, value_parser = threshold, allow_negative_numbers = true)]
    pub threshold: f64,
    /// Slots of the signature, as `create --perms` (a new index's default, 512).
    #[arg(long, default_value_t = mhdb::db::DEFAULT_OPH_SLOTS)]
    pub perms: usize,
    /// Slots the bands cover, as `create --band-slots` (default: as create chooses for
    /// --perms, at most 128). The choices are tuned over these.
    #[arg(long)]
    pub band_slots: Option<usize>,
    /// How many alternatives to list.
    #[arg(long, default_value_t = 5)]
    pub alternatives: usize,
    /// Show this number of bands (with --rows) instead of the best choices.
    #[arg(long, requires = "rows")]
    pub bands: Option<usize>,
    /// Rows per band (with --bands).
    #[arg(long, requires = "bands")]
    pub rows: Option<usize>,
    /// JSON output.
    #[arg(long)]
    pub json: bool,
}

#[derive(clap::Args)]
pub struct DemoArgs {
    /// Directory of text files (one document per file).
    #[arg(default_value = "samples/texts")]
    pub dir: PathBuf,
    /// Similarity threshold in (0, 1].
    #[arg(long, default_value_t = 0.5, value_parser = threshold, allow_negative_numbers = true)]
    pub threshold: f64,
    #[command(flatten)]
    pub sketch: SketchArgs,
    /// JSON output.
    #[arg(long)]
    pub json: bool,
}

#[derive(clap::Args)]
pub struct ServeArgs {
    /// Database directory; several (or a glob pattern) are shards served read-only as one
    /// index, each followed as a writer commits to it.
    #[arg(required = true, value_name = "DB")]
    pub dbs: Vec<PathBuf>,
    /// Address and port to listen on (port 0: any free port, printed on start). Another
    /// address than loopback without --token-file is warned about.
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub listen: std::net::SocketAddr,
    /// Open the database for writing (it takes the writer's lock) and serve /insert,
    /// /insert_if_novel and /delete (one database only: shards are read-only).
    #[arg(long)]
    pub writer: bool,
    /// File holding a bearer token every endpoint but /health requires
    /// (`Authorization: Bearer TOKEN`); white space around it is ignored.
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// Read-only server: how often to look for what a writer committed, in milliseconds.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..))]
    pub refresh_ms: u64,
    /// Largest request body, in bytes (413 beyond).
    #[arg(long, default_value_t = 16 << 20, value_parser = at_least_one)]
    pub max_body_bytes: usize,
    /// Most queries in one /query_batch request, and documents in one write request (413
    /// beyond).
    #[arg(long, default_value_t = 10_000, value_parser = at_least_one)]
    pub max_batch: usize,
    /// Most requests served at once (503 with Retry-After beyond; /health and /metrics
    /// are not counted).
    #[arg(long, default_value_t = 256, value_parser = at_least_one)]
    pub max_concurrent: usize,
    /// Longest a request may take, in milliseconds (504 beyond; a write may still commit).
    #[arg(long, default_value_t = 30_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub timeout_ms: u64,
}
