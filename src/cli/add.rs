//! `mhdb add`: JSON Lines or plain files read into records for the library's ingest pipeline
//! (`mhdb::db::ingest`, which signs on every core and commits in steps, in input order), and
//! what it reports worded for the command line.

use std::collections::VecDeque;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use indicatif::ProgressBar;
use mhdb::db::ingest::{self, Content, Fault, Ingest, Mode, Record, Rejected, Stop};
use mhdb::db::{Db, Durability, Options};

use super::args::{AddArgs, OnDuplicate};
use super::escape::{key_json, key_text};
use super::input::{At, Input, JsonLine, Line, is_stdin, read_text, walk};
use super::output::{CliError, CliResult, message, progress};

/// Where a record came from.
#[derive(Clone, Debug)]
enum Place {
    /// A line of the input named `input` (its path, or `<stdin>`).
    Line { input: Arc<str>, line: usize },
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
    let db = Db::open(
        &args.db,
        Options {
            durability: Durability::None,
            ..Options::default()
        },
    )?;
    super::output::report_recovery(&db);
    super::output::warn_unused_key(&db);
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
    if args.json {
        ingest = ingest.acknowledge_with(&json_commit_line);
    }
    let mut sink = Report {
        progress: progress(None, "{spinner} {pos} documents  {per_sec}  {elapsed}"),
    };
    let loaded = if args.files {
        load_files(args, &mut ingest, &mut sink)
    } else {
        load_jsonl(args, &mut ingest, &mut sink)
    };
    if let Some(bar) = &sink.progress {
        bar.finish_and_clear();
    }
    let counts = ingest.counts();
    let e = match loaded {
        Ok(()) => {
            message(format_args!(
                "added {} documents ({} invalid skipped, {} duplicates skipped)",
                counts.committed, counts.skipped_invalid, counts.skipped_duplicates
            ));
            super::output::warn_write_failure(&db);
            return Ok(ExitCode::SUCCESS);
        }
        // A bad record's error names it and says that the records before it are in.
        Err(Stop::Rejected(rejected)) => return Err(CliError::other(rejection(&rejected))),
        Err(Stop::Caller(e)) => e,
        Err(Stop::Acknowledge(e)) => CliError::stdout(e),
        Err(Stop::Db(e)) => e.into(),
    };
    // Say how much of the input is committed (in input order, every document up to the last
    // committed id; --json has printed each commit).
    if !e.is_broken_pipe() {
        message(format_args!(
            "added {} documents before stopping ({} invalid skipped, {} duplicates skipped); \
             nothing after them was added",
            counts.committed, counts.skipped_invalid, counts.skipped_duplicates
        ));
    }
    Err(e)
}

/// A refused record's message, naming its line (or file) as every input error does.
fn rejection(rejected: &AddRejected) -> String {
    let key = rejected.key.as_deref().unwrap_or_default();
    let line = match &rejected.origin {
        Place::Line { input, line } => Some(At {
            name: input,
            line: *line,
        }),
        Place::File => None,
    };
    match (&rejected.fault, line) {
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
    progress: Option<ProgressBar>,
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

    fn skipped(&mut self, rejected: &AddRejected) {
        message(format_args!("skipped {}", rejection(rejected)));
    }

    fn taken(&mut self, taken: u64) {
        if let Some(bar) = &self.progress {
            bar.set_position(taken);
        }
    }
}

/// JSON Lines from the inputs in turn ('-' or none: standard input); a chunk holds lines of
/// one input.
struct JsonlSource {
    paths: VecDeque<PathBuf>,
    current: Option<(Input, Arc<str>)>,
}

impl ingest::Source for JsonlSource {
    type Item = (Arc<str>, Line);
    type Error = CliError;

    fn next_chunk(&mut self, max: usize) -> CliResult<Vec<(Arc<str>, Line)>> {
        loop {
            let (input, name) = match &mut self.current {
                Some(current) => current,
                None => {
                    let Some(path) = self.paths.pop_front() else {
                        return Ok(Vec::new());
                    };
                    let input = Input::open(&path)?;
                    let name = Arc::from(input.name());
                    self.current.insert((input, name))
                }
            };
            let (lines, done) = input.read_lines(max)?;
            let chunk: Vec<_> = lines.into_iter().map(|l| (name.clone(), l)).collect();
            if done {
                self.current = None;
            }
            if !chunk.is_empty() {
                return Ok(chunk);
            }
        }
    }
}

fn load_jsonl(
    args: &AddArgs,
    ingest: &mut Ingest<'_>,
    sink: &mut Report,
) -> Result<(), Stop<CliError, Place>> {
    let paths = if args.inputs.is_empty() {
        VecDeque::from([PathBuf::from("-")])
    } else {
        args.inputs.iter().cloned().collect()
    };
    let mut source = JsonlSource {
        paths,
        current: None,
    };
    let parse = |(input, Line { no, bytes }): (Arc<str>, Line)| -> Result<AddRecord, AddRejected> {
        let at = At {
            name: &input,
            line: no,
        };
        let read = JsonLine::parse(&bytes, at).and_then(|mut record| {
            let key = record.key(&args.id_field)?;
            Ok((key, record.take_text(&args.text_field)?))
        });
        let origin = Place::Line { input, line: no };
        match read {
            Ok((key, text)) => Ok(Record {
                key,
                content: Content::Text(text),
                origin,
            }),
            Err(message) => Err(Rejected {
                origin,
                key: None,
                fault: Fault::Malformed(message),
            }),
        }
    };
    ingest.run(&mut source, &parse, sink)
}

/// The files of `--files`, read in order; a file that is not UTF-8 is an item that the parser
/// refuses in its place.
struct FilesSource {
    paths: std::vec::IntoIter<PathBuf>,
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
            chunk.push(read_text(&path)?.map(|text| (key, text)));
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
    let mut source = FilesSource {
        paths: paths.into_iter(),
    };
    let parse = |item: Result<(Vec<u8>, String), String>| match item {
        Ok((key, text)) => Ok(Record {
            key,
            content: Content::Text(text),
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
