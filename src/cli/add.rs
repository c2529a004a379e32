//! `mhdb add`: the inputs read by the library (`mhdb::input`: JSON Lines, Parquet, Arrow,
//! CSV/TSV) or plain files read into records for the library's ingest pipeline
//! (`mhdb::db::ingest`, which signs on every core and commits in steps, in input order), and
//! what it reports worded for the command line.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use mhdb::db::ingest::{self, Content, Counts, Fault, Ingest, Mode, Record, Rejected, Stop};
use mhdb::db::{Db, Durability, Match, NoveltyOptions, Options};
use mhdb::input::{Fields, Id, Item, Origin, Progress, Reader};
use mhdb::storage::segment::{KeepColumn, KeepType, KeepValue};

use super::args::{AddArgs, KeepTypeArg, OnDuplicate};
use super::escape::{key_json, key_text};
use super::input::{is_stdin, read_text, walk};
use super::output::{CliError, CliResult, InputProgress, message, outln, warn, warn_not_a_file};

/// Where a record came from.
#[derive(Clone, Debug)]
enum Place {
    /// A line or row of an input.
    Input(Origin),
    /// A file of `--files`, which its key (its path) names.
    File,
}

/// A record as `add` reads it.
type AddRecord = Record<String, Place>;

/// A refused record as `add` reads it.
type AddRejected = Rejected<Place>;

/// `mhdb add`.
pub fn add(args: &AddArgs) -> CliResult<ExitCode> {
    // Bulk-load durability: the pipeline's commits are bulk inserts, durable on return.
    let mut db = Db::open(
        &args.db,
        Options {
            durability: Durability::None,
            key: args.key.key()?,
            ..Options::default()
        },
    )?;
    super::output::report_recovery(&db);
    super::output::warn_unused_key(&db);
    if args.exact_dedup && !db.has_exact_hashes() {
        return Err(CliError::usage(format!(
            "--exact-dedup: {} has no exact hashes (created with --no-exact-hash, a simhash \
             index, or one of signatures made elsewhere)",
            args.db.display()
        )));
    }
    fix_keep_field(args, &mut db)?;
    let mut ingest = Ingest::new(
        &db,
        Mode::Stream {
            commit_every: args.commit_every,
            on_duplicate: match args.on_duplicate {
                OnDuplicate::Replace => ingest::OnDuplicate::Replace,
                OnDuplicate::Skip => ingest::OnDuplicate::Skip,
                OnDuplicate::Error => ingest::OnDuplicate::Error,
            },
            skip_invalid: args.skip_invalid,
        },
    );
    let committed = Arc::new(Mutex::new(Committed::default()));
    say_committed_at_a_signal(committed.clone());
    let acknowledge = |total: u64, last_key: &[u8]| -> std::io::Result<()> {
        // Held while the commit line is printed: the words at a signal come after it.
        let mut so_far = committed.lock().unwrap_or_else(|p| p.into_inner());
        *so_far = Committed {
            total,
            last_key: last_key.to_vec(),
        };
        if args.json {
            json_commit_line(total, last_key)?;
        }
        Ok(())
    };
    ingest = ingest.acknowledge_with(&acknowledge);
    if args.exact_dedup {
        ingest = ingest.skip_exact_copies();
    }
    if args.novel_only {
        ingest = ingest.novel_only(NoveltyOptions {
            threshold: args.threshold,
            ..NoveltyOptions::default()
        });
    }
    let mut sink = Report {
        progress: None,
        near_duplicates: match &args.report {
            Some(path) => Some(NearDuplicateReport::create(path)?),
            None => None,
        },
    };
    let loaded = if args.files {
        load_files(args, &mut ingest, &mut sink)
    } else {
        load_inputs(args, &mut ingest, &mut sink)
    };
    if let Some(bar) = &sink.progress {
        bar.finish();
    }
    let counts = ingest.counts();
    drop(ingest);
    let loaded = loaded.and_then(|()| sink.finish().map_err(Stop::Caller));
    let near = skipped_by_choice(args, &counts);
    let e = match loaded {
        Ok(()) => {
            if args.json && args.exact_dedup {
                print_exact_copies_json(&counts)?;
            }
            message(format_args!(
                "added {} ({} invalid skipped, {} duplicates skipped{near})",
                documents(counts.committed),
                counts.skipped_invalid,
                counts.skipped_duplicates
            ));
            super::output::close_after_commit(db);
            return Ok(ExitCode::SUCCESS);
        }
        // A bad record's error names it; the note below says the records before it are in.
        Err(Stop::Rejected(rejected)) => CliError::other(rejection(&rejected)),
        Err(Stop::Caller(e)) => e,
        Err(Stop::Acknowledge(e)) => CliError::stdout(e),
        Err(Stop::Db(e)) => e.into(),
    };
    // Say how much of the input is committed (in input order, every document up to the last
    // committed id; --json has printed each commit), after the cause.
    Err(e.then_note(format_args!(
        "added {} before stopping ({} invalid skipped, {} duplicates skipped{near}); nothing \
         after them was added",
        documents(counts.committed),
        counts.skipped_invalid,
        counts.skipped_duplicates
    )))
}

/// The summary's note on what the run chose to leave out: near-duplicates (`--novel-only`)
/// and exact copies (`--exact-dedup`), each when asked for.
fn skipped_by_choice(args: &AddArgs, counts: &Counts) -> String {
    let mut note = String::new();
    if args.novel_only {
        note.push_str(&format!(
            ", {} near-duplicates skipped",
            counts.skipped_near_duplicates
        ));
    }
    if args.exact_dedup {
        note.push_str(&format!(
            ", {} exact copies skipped",
            counts.skipped_exact_copies
        ));
    }
    note
}

/// `--json --exact-dedup`'s last line: the commit lines say what is durable; this one says
/// what was left out.
fn print_exact_copies_json(counts: &Counts) -> CliResult<()> {
    let line = serde_json::json!({
        "added": counts.committed,
        "exact_copies_skipped": counts.skipped_exact_copies,
    });
    outln!("{line}");
    Ok(())
}

/// What is durable so far: the documents committed and the last one's id.
#[derive(Default)]
struct Committed {
    total: u64,
    last_key: Vec<u8>,
}

/// At SIGINT or SIGTERM, says how much of the input is committed before the process ends:
/// every document up to the last committed id, in input order (and maybe the batch being
/// committed at the signal, which is atomic: all of it or none).
fn say_committed_at_a_signal(committed: Arc<Mutex<Committed>>) {
    super::signals::on_stop(move |stop| {
        let so_far = committed.lock().unwrap_or_else(|p| p.into_inner());
        let through = match so_far.total {
            0 => String::new(),
            _ => format!(" (through id {})", key_text(&so_far.last_key)),
        };
        message(format_args!(
            "stopped by {}: added {}{through}; a batch being committed at the signal may be \
             added too, whole; nothing after it was added",
            stop.name(),
            documents(so_far.total)
        ));
    });
}

/// `1 document`, `2 documents`.
fn documents(n: u64) -> String {
    if n == 1 {
        "1 document".to_string()
    } else {
        format!("{n} documents")
    }
}

/// A refused record's message, naming its line or row (or file) as every input error does.
fn rejection(rejected: &AddRejected) -> String {
    let key = rejected.key.as_deref().unwrap_or_default();
    let place = match &rejected.origin {
        Place::Input(origin) => Some(origin),
        Place::File => None,
    };
    match (&rejected.fault, place) {
        (Fault::Malformed(message), _) => message.clone(),
        (Fault::Duplicate, at) => format!(
            "{}: id {} is already stored (--on-duplicate error)",
            at.map_or_else(|| key_text(key).into_owned(), |at| at.to_string()),
            key_text(key)
        ),
        (fault, Some(at)) => format!("{at}: {fault}"),
        (fault, None) => format!("{}: {fault}", String::from_utf8_lossy(key)),
    }
}

/// What `add` prints as the load goes (`--json`'s commit lines are [`json_commit_line`]).
struct Report {
    /// Set once the inputs are known.
    progress: Option<InputProgress>,
    /// `--report`: the near-duplicates `--novel-only` skipped.
    near_duplicates: Option<NearDuplicateReport>,
}

impl Report {
    /// Flushes the report file, if any.
    fn finish(&mut self) -> CliResult {
        match &mut self.near_duplicates {
            Some(report) => report.flush(),
            None => Ok(()),
        }
    }
}

/// `--report FILE`: a JSON line per document `--novel-only` skipped, in input order, written
/// as each batch is committed.
struct NearDuplicateReport {
    path: PathBuf,
    out: std::io::BufWriter<std::fs::File>,
}

/// A failed write of the report: the documents are committed all the same.
fn report_write_failed(path: &std::path::Path, e: std::io::Error) -> CliError {
    CliError::other(format!(
        "cannot write the report {}: {e} (the report failed, not the database: what was \
         committed stays committed)",
        path.display()
    ))
}

impl NearDuplicateReport {
    fn create(path: &std::path::Path) -> CliResult<Self> {
        let file = std::fs::File::create(path).map_err(|e| {
            CliError::other(format!("cannot create the report {}: {e}", path.display()))
        })?;
        Ok(NearDuplicateReport {
            path: path.to_path_buf(),
            out: std::io::BufWriter::new(file),
        })
    }

    fn write(&mut self, key: &[u8], matches: &[Match]) -> CliResult {
        let mut line = serde_json::json!({
            "id": key_json(key),
            "matches": matches.len(),
        });
        if let Some(best) = matches.first() {
            line["best_match"] = key_json(&best.key);
            line["similarity"] = serde_json::json!(super::shapes::round6(best.similarity));
            if let Some(d) = best.distance {
                line["distance"] = serde_json::json!(d);
            }
        }
        writeln!(self.out, "{line}").map_err(|e| report_write_failed(&self.path, e))
    }

    fn flush(&mut self) -> CliResult {
        self.out
            .flush()
            .map_err(|e| report_write_failed(&self.path, e))
    }
}

/// With `--json`, one line per durable commit, printed by the committing thread as soon as
/// the commit is durable: what the lines say is committed is what a kill leaves (but for the
/// one batch being committed).
fn json_commit_line(total: u64, last_key: &[u8]) -> std::io::Result<()> {
    let line = serde_json::json!({"committed": total, "last_id": key_json(last_key)});
    let mut out = std::io::stdout().lock();
    writeln!(out, "{line}")?;
    out.flush()
}

impl ingest::Sink<Place> for Report {
    type Error = CliError;

    fn committed(&mut self, _total: u64, _last_key: &[u8]) -> CliResult {
        Ok(())
    }

    fn near_duplicate(&mut self, key: &[u8], matches: &[Match]) -> CliResult {
        match &mut self.near_duplicates {
            Some(report) => report.write(key, matches),
            None => Ok(()),
        }
    }

    fn skipped(&mut self, rejected: &AddRejected) {
        message(format_args!("skipped {}", rejection(rejected)));
    }

    fn taken(&mut self, taken: u64) {
        if let Some(bar) = &self.progress {
            bar.show(taken);
        }
    }
}

/// The library's reader of the inputs, with the command line's errors.
struct Inputs(Reader);

impl ingest::Source for Inputs {
    type Item = Item;
    type Error = CliError;

    fn next_chunk(&mut self, max: usize) -> CliResult<Vec<Item>> {
        self.0
            .next_chunk(max)
            .map_err(|e| CliError::other(e.to_string()))
    }
}

/// With `--keep-field`: the index's keep field fixed as it (or checked to be it). Without:
/// a warning when the index keeps a field, which these documents will lack.
fn fix_keep_field(args: &AddArgs, db: &mut Db) -> CliResult<()> {
    let Some(field) = &args.keep_field else {
        if let Some(column) = db.keep_column() {
            warn(format_args!(
                "{} keeps the field {:?}: these documents get no keep value (add --keep-field \
                 {} captures it)",
                args.db.display(),
                column.field,
                column.field
            ));
        }
        return Ok(());
    };
    let keep_type = keep_type(args, db, field)?;
    let column = KeepColumn {
        keep_type,
        field: field.clone(),
    };
    db.fix_keep_column(&column)
        .map_err(|e| CliError::usage(format!("--keep-field: {e}")))
}

/// The type the keep values of `field` take: the index's when it has a keep field; else
/// `--keep-type`; else that of the first value in the first chunk of the inputs (a column's
/// own type in Parquet and Arrow), numbers as f64; f64 when none has one there, or the input
/// is standard input (read once, so not looked at ahead).
fn keep_type(args: &AddArgs, db: &Db, field: &str) -> CliResult<KeepType> {
    if let Some(column) = db.keep_column() {
        return Ok(column.keep_type);
    }
    match args.keep_type {
        Some(KeepTypeArg::I64) => return Ok(KeepType::I64),
        Some(KeepTypeArg::F64) => return Ok(KeepType::F64),
        Some(KeepTypeArg::String) => return Ok(KeepType::Str),
        None => {}
    }
    if args.inputs.is_empty() || args.inputs.iter().any(|p| is_stdin(p)) {
        return Ok(KeepType::F64);
    }
    let fields = Fields {
        keep: Some(field.to_string()),
        ..input_fields(args)
    };
    let mut reader = Reader::new(&args.inputs, fields.clone())
        .map_err(|e| CliError::other(e.to_string()))?
        .max_document_bytes(args.size.max_document_bytes, true);
    let read = |reader: &mut Reader, n| {
        ingest::Source::next_chunk(reader, n).map_err(|e| CliError::other(e.to_string()))
    };
    let mut items = read(&mut reader, 1)?;
    // The first file is open: a Parquet or Arrow column says its type.
    if let Some(keep_type) = reader.keep_column_type() {
        return Ok(keep_type);
    }
    items.extend(read(&mut reader, ingest::STREAM_CHUNK)?);
    let first = items
        .into_iter()
        .find_map(|item| fields.parse(item).ok().and_then(|r| r.keep));
    Ok(match first {
        Some(KeepValue::Str(_)) => KeepType::Str,
        _ => KeepType::F64,
    })
}

/// The fields `add`'s flags name.
fn input_fields(args: &AddArgs) -> Fields {
    Fields {
        id: if args.id_from_path {
            Id::FromPath
        } else {
            Id::Field(args.id_field.clone())
        },
        text: args
            .tokens_field
            .clone()
            .unwrap_or_else(|| args.text_field.clone()),
        tokens: args.tokens_field.is_some(),
        keep: args.keep_field.clone(),
    }
}

/// Loads the inputs as the library reads them (`mhdb::input`: every format, directories and
/// globs; none or '-': standard input).
fn load_inputs(
    args: &AddArgs,
    ingest: &mut Ingest<'_>,
    sink: &mut Report,
) -> Result<(), Stop<CliError, Place>> {
    let fields = input_fields(args);
    let reader = Reader::new(&args.inputs, fields.clone())
        .map_err(|e| Stop::Caller(CliError::other(e.to_string())))?
        .max_document_bytes(args.size.max_document_bytes, args.skip_invalid)
        .limit_set_by("--max-document-bytes");
    for path in reader.skipped() {
        warn_not_a_file(path);
    }
    sink.progress = InputProgress::new(reader.progress(), "documents");
    let parse = |item: Item| -> Result<AddRecord, AddRejected> {
        match fields.parse(item) {
            Ok(Record {
                key,
                content,
                keep,
                origin,
            }) => Ok(Record {
                key,
                content,
                keep,
                origin: Place::Input(origin),
            }),
            Err(Rejected { origin, key, fault }) => Err(Rejected {
                origin: Place::Input(origin),
                key,
                fault,
            }),
        }
    };
    ingest.run(&mut Inputs(reader), &parse, sink)
}

/// The files of `--files`, read in order; a file that is not UTF-8 is an item that the parser
/// refuses in its place.
struct FilesSource {
    paths: std::vec::IntoIter<PathBuf>,
    /// The most bytes a file may have.
    limit: u64,
    /// Through the bytes [`read_size`] counts.
    progress: Progress,
}

impl FilesSource {
    fn new(paths: Vec<PathBuf>, limit: u64) -> FilesSource {
        let total = paths.iter().map(|path| read_size(path, limit)).sum();
        FilesSource {
            paths: paths.into_iter(),
            limit,
            progress: Progress::new(total),
        }
    }
}

/// The bytes reading the file at `path` as one document takes, for progress: its size, but no
/// more than `limit`, past which it is refused unread (a sparse 20 GB file counts for no more
/// than a file at the limit); none for a file without a size (a FIFO).
fn read_size(path: &std::path::Path, limit: u64) -> Option<u64> {
    let meta = std::fs::metadata(path).ok()?;
    meta.is_file().then(|| meta.len().min(limit))
}

impl ingest::Source for FilesSource {
    /// (key, text), or why the file is not a text.
    type Item = Result<(Vec<u8>, String), String>;
    type Error = CliError;

    fn next_chunk(&mut self, max: usize) -> CliResult<Vec<Self::Item>> {
        let mut chunk = Vec::new();
        for path in self.paths.by_ref().take(max) {
            // A file is keyed by its path.
            let key = path.display().to_string().into_bytes();
            chunk.push(read_text(&path, self.limit)?.map(|text| (key, text)));
            self.progress
                .advance(read_size(&path, self.limit).unwrap_or_default());
        }
        Ok(chunk)
    }
}

fn load_files(
    args: &AddArgs,
    ingest: &mut Ingest<'_>,
    sink: &mut Report,
) -> Result<(), Stop<CliError, Place>> {
    if args.inputs.is_empty() {
        return Err(Stop::Caller(CliError::usage(
            "--files needs at least one file or directory",
        )));
    }
    if args.inputs.iter().any(|p| is_stdin(p)) {
        return Err(Stop::Caller(CliError::usage(
            "--files reads files and directories, not standard input ('-'); standard input is \
             read as JSON Lines: mhdb add DB -",
        )));
    }
    let mut paths = Vec::new();
    for input in &args.inputs {
        walk(input, &mut paths).map_err(Stop::Caller)?;
    }
    let mut source = FilesSource::new(paths, args.size.max_document_bytes);
    sink.progress = InputProgress::new(source.progress.clone(), "documents");
    let parse = |item: Result<(Vec<u8>, String), String>| match item {
        Ok((key, text)) => Ok(Record {
            key,
            content: Content::Text(text),
            keep: None,
            origin: Place::File,
        }),
        Err(message) => Err(Rejected {
            origin: Place::File,
            key: None,
            fault: Fault::Malformed(message),
        }),
    };
    ingest.run(&mut source, &parse, sink)
}

#[cfg(test)]
mod tests {
    use super::*;
    use mhdb::db::ingest::Source;

    #[test]
    fn files_progress_totals_the_bytes_read_up_to_the_limit() {
        let dir = tempfile::tempdir().unwrap();
        let small = dir.path().join("a.txt");
        std::fs::write(&small, "12345").unwrap();
        let sparse = dir.path().join("b.img");
        std::fs::File::create(&sparse)
            .unwrap()
            .set_len(20 << 30)
            .unwrap();
        let mut source = FilesSource::new(vec![small.clone(), sparse], 1000);
        assert_eq!(source.progress.total(), Some(1005));
        assert_eq!(source.next_chunk(1).unwrap().len(), 1);
        assert_eq!(source.progress.position(), 5);
        assert_eq!(source.next_chunk(1).unwrap().len(), 1);
        assert_eq!(source.progress.position(), 1005);
        // A file without a size leaves the total unknown.
        let named_fifo = FilesSource::new(vec![small, PathBuf::from("/dev/null")], 1000);
        assert_eq!(named_fifo.progress.total(), None);
    }
}
