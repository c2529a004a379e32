//! `mhdb add`: load JSON Lines or plain files, signing on every core, committing in steps.

use std::collections::HashSet;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use indicatif::{ProgressBar, ProgressStyle};
use mhdb::db::Db;
use mhdb::sketch::Signature;
use rayon::prelude::*;

use super::{CliError, CliResult, open_for_bulk, progress_enabled};

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
    db: PathBuf,
    /// JSON Lines files ('-' or nothing: standard input); with --files, files and directories.
    inputs: Vec<PathBuf>,
    /// Treat inputs as plain text files (directories are walked); each file is one document
    /// keyed by its path.
    #[arg(long)]
    files: bool,
    /// JSON field holding the document id (a string or a number).
    #[arg(long, default_value = "id")]
    id_field: String,
    /// JSON field holding the text.
    #[arg(long, default_value = "text")]
    text_field: String,
    /// Commit (durably) every N documents, and at the end.
    #[arg(long, default_value_t = 10_000)]
    commit_every: usize,
    /// Print one JSON line per durable commit: {"committed": N, "last_id": ...}.
    #[arg(long)]
    json: bool,
    /// What to do with an id that is already stored.
    #[arg(long, value_enum, default_value = "replace")]
    on_duplicate: OnDuplicate,
    /// Skip (and count) malformed lines instead of stopping.
    #[arg(long)]
    skip_invalid: bool,
}

/// One input record before signing.
struct Record {
    origin: String,
    id: String,
    text: String,
}

/// A full batch of (id, signature) and the id of its last document.
type SealedBatch = (Vec<(String, Signature)>, Option<String>);

/// One parsed, signed record (or why it is invalid).
type Parsed = Result<(String, String, Signature), String>;

struct Loader<'a> {
    db: &'a Db,
    args: &'a AddArgs,
    committed: u64,
    uncommitted: u64,
    /// Documents since the last commit; a commit inserts them in bulk (durable on return).
    pending: Vec<(String, Signature)>,
    /// Full batches waiting to be committed (with the id of their last document), in order.
    /// With `--on-duplicate replace` they are committed while the next chunk is signed.
    sealed: Vec<SealedBatch>,
    batch_keys: HashSet<String>,
    last_id: Option<String>,
    skipped_invalid: u64,
    skipped_duplicates: u64,
    progress: Option<ProgressBar>,
}

impl Loader<'_> {
    /// Commits everything taken so far, durably.
    fn commit(&mut self) -> CliResult {
        self.seal();
        self.commit_sealed()
    }

    /// Closes the pending batch; the next [`Loader::commit_sealed`] commits it.
    fn seal(&mut self) {
        if !self.pending.is_empty() {
            let batch = std::mem::take(&mut self.pending);
            self.sealed.push((batch, self.last_id.clone()));
        }
        self.batch_keys.clear();
    }

    /// Commits the sealed batches in order, one bulk insert each (band keys and packing on
    /// every core, written straight to a segment and the signature log, durable on return),
    /// each followed by its JSON line.
    fn commit_sealed(&mut self) -> CliResult {
        for (batch, last_id) in std::mem::take(&mut self.sealed) {
            self.db.bulk_insert(&batch)?;
            let n = batch.len() as u64;
            self.committed += n;
            self.uncommitted -= n;
            if self.args.json {
                let line = serde_json::json!({"committed": self.committed, "last_id": last_id});
                let mut out = std::io::stdout().lock();
                writeln!(out, "{line}")?;
                out.flush()?;
            }
        }
        Ok(())
    }

    fn take(&mut self, parsed: Parsed) -> CliResult {
        let (origin, id, sig) = match parsed {
            Ok(v) => v,
            Err(msg) => {
                if self.args.skip_invalid {
                    self.skipped_invalid += 1;
                    eprintln!("mhdb: skipped {msg}");
                    return Ok(());
                }
                // Everything before the bad record is committed before stopping.
                self.commit()?;
                return Err(CliError::other(msg));
            }
        };
        if self.args.on_duplicate != OnDuplicate::Replace
            && (self.batch_keys.contains(&id) || self.db.contains(&id)?)
        {
            if self.args.on_duplicate == OnDuplicate::Error {
                self.commit()?;
                return Err(CliError::other(format!(
                    "{origin}: id {id:?} is already stored (--on-duplicate error)"
                )));
            }
            self.skipped_duplicates += 1;
            return Ok(());
        }
        if self.args.on_duplicate != OnDuplicate::Replace {
            self.batch_keys.insert(id.clone());
        }
        self.pending.push((id.clone(), sig));
        self.last_id = Some(id);
        self.uncommitted += 1;
        if self.pending.len() >= self.args.commit_every.max(1) {
            if self.args.on_duplicate == OnDuplicate::Replace {
                // Committed while the next chunk is read and signed (see load_jsonl).
                self.seal();
            } else {
                // Duplicate checks ask the database, so commit before taking more.
                self.commit()?;
            }
        }
        Ok(())
    }
}

/// Reads the ids of a JSONL file (for `mhdb delete --jsonl`).
pub fn read_ids(path: &Path, field: &str) -> CliResult<Vec<String>> {
    let file = std::fs::File::open(path)
        .map_err(|e| CliError::other(format!("cannot open {}: {e}", path.display())))?;
    let mut ids = Vec::new();
    for (i, line) in BufReader::new(file).split(b'\n').enumerate() {
        let line = line?;
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let origin = format!("{}:{}", path.display(), i + 1);
        let value: serde_json::Value = serde_json::from_slice(&line)
            .map_err(|e| CliError::other(format!("{origin}: invalid JSON: {e}")))?;
        ids.push(id_of(&value, field).map_err(|m| CliError::other(format!("{origin}: {m}")))?);
    }
    Ok(ids)
}

fn id_of(value: &serde_json::Value, field: &str) -> Result<String, String> {
    match value.get(field) {
        Some(serde_json::Value::String(s)) => Ok(s.clone()),
        Some(serde_json::Value::Number(n)) => Ok(n.to_string()),
        Some(other) => Err(format!(
            "field {field:?} must be a string or a number, got {other}"
        )),
        None => Err(format!("missing field {field:?}")),
    }
}

fn parse_line(line: &[u8], origin: &str, args: &AddArgs) -> Result<(String, String), String> {
    let text = std::str::from_utf8(line)
        .map_err(|e| format!("{origin}: not UTF-8 (byte {} of the line)", e.valid_up_to()))?;
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| format!("{origin}: invalid JSON: {e}"))?;
    let id = id_of(&value, &args.id_field).map_err(|m| format!("{origin}: {m}"))?;
    match value.get(&args.text_field) {
        Some(serde_json::Value::String(s)) => Ok((id, s.clone())),
        Some(_) => Err(format!(
            "{origin}: field {:?} must be a string",
            args.text_field
        )),
        None => Err(format!("{origin}: missing field {:?}", args.text_field)),
    }
}

const CHUNK: usize = 4096;

pub fn run(args: AddArgs) -> CliResult<ExitCode> {
    let db = open_for_bulk(&args.db)?;
    let progress = progress_enabled().then(|| {
        let bar = ProgressBar::new_spinner();
        bar.set_style(
            ProgressStyle::with_template("{spinner} {pos} documents  {per_sec}  {elapsed}")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        );
        bar
    });
    let mut loader = Loader {
        db: &db,
        args: &args,
        committed: 0,
        uncommitted: 0,
        pending: Vec::new(),
        sealed: Vec::new(),
        batch_keys: HashSet::new(),
        last_id: None,
        skipped_invalid: 0,
        skipped_duplicates: 0,
        progress,
    };
    let result = if args.files {
        load_files(&mut loader)
    } else {
        load_jsonl(&mut loader)
    };
    result?;
    loader.commit()?;
    if let Some(bar) = &loader.progress {
        bar.finish_and_clear();
    }
    eprintln!(
        "mhdb: added {} documents ({} invalid skipped, {} duplicates skipped)",
        loader.committed, loader.skipped_invalid, loader.skipped_duplicates
    );
    Ok(ExitCode::SUCCESS)
}

fn sign_chunk(db: &Db, records: Vec<Record>) -> Vec<Parsed> {
    let hasher = db.hasher();
    records
        .into_par_iter()
        .map(|r| {
            let sig = hasher.sketch_text(&r.text);
            Ok((r.origin, r.id, sig))
        })
        .collect()
}

/// Lines of one chunk: (line number, bytes), blank lines skipped.
type Lines = Vec<(usize, Vec<u8>)>;

/// Reads up to [`CHUNK`] non-blank lines; `true` once the input is exhausted.
fn read_chunk(
    reader: &mut impl BufRead,
    line_no: &mut usize,
    name: &str,
) -> CliResult<(Lines, bool)> {
    let mut lines = Vec::with_capacity(CHUNK);
    while lines.len() < CHUNK {
        let mut buf = Vec::new();
        let n = reader
            .read_until(b'\n', &mut buf)
            .map_err(|e| CliError::other(format!("{name}: read error: {e}")))?;
        if n == 0 {
            return Ok((lines, true));
        }
        *line_no += 1;
        if !buf.iter().all(u8::is_ascii_whitespace) {
            lines.push((*line_no, buf));
        }
    }
    Ok((lines, false))
}

fn load_jsonl(loader: &mut Loader<'_>) -> CliResult {
    let inputs: Vec<PathBuf> = if loader.args.inputs.is_empty() {
        vec![PathBuf::from("-")]
    } else {
        loader.args.inputs.clone()
    };
    for input in inputs {
        let name = if input.as_os_str() == "-" {
            "<stdin>".to_string()
        } else {
            input.display().to_string()
        };
        let reader: Box<dyn Read + Send> = if input.as_os_str() == "-" {
            Box::new(std::io::stdin())
        } else {
            Box::new(
                std::fs::File::open(&input)
                    .map_err(|e| CliError::other(format!("cannot open {name}: {e}")))?,
            )
        };
        let mut reader = BufReader::with_capacity(1 << 20, reader);
        let mut line_no = 0usize;
        let mut next = read_chunk(&mut reader, &mut line_no, &name)?;
        loop {
            let (lines, done) = next;
            if lines.is_empty() && done {
                break;
            }
            let args = loader.args;
            let hasher = loader.db.hasher();
            // Three things at once: the batches completed by the previous chunk are committed
            // (mostly writes and fsyncs, which leave the cores idle), this chunk is parsed and
            // signed on every core, and the next chunk is read. A failed commit stops the
            // load before anything later is taken.
            let ((committed, parsed), read) = rayon::join(
                || {
                    rayon::join(
                        || loader.commit_sealed(),
                        || -> Vec<Parsed> {
                            lines
                                .into_par_iter()
                                .map(|(no, line)| {
                                    let origin = format!("{name}:{no}");
                                    let (id, text) = parse_line(&line, &origin, args)?;
                                    Ok((origin, id, hasher.sketch_text(&text)))
                                })
                                .collect()
                        },
                    )
                },
                || {
                    if done {
                        Ok((Vec::new(), true))
                    } else {
                        read_chunk(&mut reader, &mut line_no, &name)
                    }
                },
            );
            committed?;
            for p in parsed {
                loader.take(p)?;
            }
            if let Some(bar) = &loader.progress {
                bar.set_position(loader.committed + loader.uncommitted);
            }
            next = read?;
        }
    }
    Ok(())
}

fn walk(path: &Path, out: &mut Vec<PathBuf>) -> CliResult {
    let meta = std::fs::metadata(path)
        .map_err(|e| CliError::other(format!("cannot read {}: {e}", path.display())))?;
    if meta.is_dir() {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(path)
            .map_err(|e| CliError::other(format!("cannot read {}: {e}", path.display())))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .collect();
        entries.sort();
        for e in entries {
            walk(&e, out)?;
        }
    } else {
        out.push(path.to_path_buf());
    }
    Ok(())
}

fn load_files(loader: &mut Loader<'_>) -> CliResult {
    if loader.args.inputs.is_empty() {
        return Err(CliError::usage(
            "--files needs at least one file or directory",
        ));
    }
    let mut paths = Vec::new();
    for input in &loader.args.inputs {
        walk(input, &mut paths)?;
    }
    for chunk in paths.chunks(CHUNK) {
        let mut records = Vec::with_capacity(chunk.len());
        let mut parsed_errors = Vec::new();
        for path in chunk {
            let origin = path.display().to_string();
            match std::fs::read(path) {
                Ok(bytes) => match String::from_utf8(bytes) {
                    Ok(text) => records.push(Record {
                        id: origin.clone(),
                        origin,
                        text,
                    }),
                    Err(e) => parsed_errors.push(Err(format!(
                        "{origin}: not UTF-8 (byte offset {})",
                        e.utf8_error().valid_up_to()
                    ))),
                },
                Err(e) => return Err(CliError::other(format!("cannot read {origin}: {e}"))),
            }
        }
        for p in parsed_errors {
            loader.take(p)?;
        }
        let db = loader.db;
        let (committed, signed) =
            rayon::join(|| loader.commit_sealed(), || sign_chunk(db, records));
        committed?;
        for p in signed {
            loader.take(p)?;
        }
    }
    Ok(())
}
