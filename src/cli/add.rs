//! `mhdb add`: load JSON Lines or plain files, signing on every core, committing in steps.

use std::collections::HashSet;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use indicatif::ProgressBar;
use mhdb::db::{Db, Durability, IndexParams, Options};
use mhdb::sketch::{MinHasher, Signature, SimHasher};
use rayon::prelude::*;

use super::args::{AddArgs, OnDuplicate};
use super::escape::{key_json, key_text};
use super::input::{At, Input, JsonLine, Line, is_stdin, no_shingles, read_text, walk};
use super::output::{CliError, CliResult, message, progress};

/// Lines (or files) read, parsed and signed at a time.
const CHUNK: usize = 4096;

/// A key as read (any bytes).
type Key = Vec<u8>;

/// A full batch of (id, signature) and the id of its last document.
type SealedBatch = (Vec<(Key, Signature)>, Option<Key>);

/// One parsed, signed document.
struct Signed {
    /// Its line in the input being read; `None` for a file (`--files`), which its id names.
    line: Option<usize>,
    id: Key,
    sig: Signature,
}

/// One parsed, signed record, or the message saying why it is invalid.
type Parsed = Result<Signed, String>;

struct Loader<'a> {
    db: &'a Db,
    args: &'a AddArgs,
    committed: u64,
    uncommitted: u64,
    /// Documents since the last commit; a commit inserts them in bulk (durable on return).
    pending: Vec<(Key, Signature)>,
    /// Full batches waiting to be committed (with the id of their last document), in order.
    /// With `--on-duplicate replace` they are committed while the next chunk is signed.
    sealed: Vec<SealedBatch>,
    batch_keys: HashSet<Key>,
    last_id: Option<Key>,
    skipped_invalid: u64,
    skipped_duplicates: u64,
    /// The load stopped at a bad input line, whose error names it (and says that the lines
    /// before it are committed).
    stopped_at_line: bool,
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
                let line = serde_json::json!({
                    "committed": self.committed,
                    "last_id": last_id.as_deref().map(key_json),
                });
                let mut out = std::io::stdout().lock();
                writeln!(out, "{line}").map_err(CliError::stdout)?;
                out.flush().map_err(CliError::stdout)?;
            }
        }
        Ok(())
    }

    /// Takes one record of the input named `input`, in input order.
    fn take(&mut self, parsed: Parsed, input: &str) -> CliResult {
        let Signed { line, id, sig } = match parsed {
            Ok(v) => v,
            Err(msg) => {
                if self.args.skip_invalid {
                    self.skipped_invalid += 1;
                    message(format_args!("skipped {msg}"));
                    return Ok(());
                }
                // Everything before the bad record is committed before stopping.
                self.commit()?;
                self.stopped_at_line = true;
                return Err(CliError::other(msg));
            }
        };
        if self.args.on_duplicate != OnDuplicate::Replace
            && (self.batch_keys.contains(&id) || self.db.contains(&id)?)
        {
            if self.args.on_duplicate == OnDuplicate::Error {
                self.commit()?;
                self.stopped_at_line = true;
                let origin = match line {
                    Some(line) => At { name: input, line }.to_string(),
                    None => key_text(&id).into_owned(),
                };
                return Err(CliError::other(format!(
                    "{origin}: id {} is already stored (--on-duplicate error)",
                    key_text(&id)
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

    fn show_progress(&self) {
        if let Some(bar) = &self.progress {
            bar.set_position(self.committed + self.uncommitted);
        }
    }
}

/// `mhdb add`.
pub fn add(args: &AddArgs) -> CliResult<ExitCode> {
    // Bulk-load durability: the loader's commits are explicit (durable on return).
    let db = Db::open(
        &args.db,
        Options {
            durability: Durability::None,
            ..Options::default()
        },
    )?;
    super::output::report_recovery(&db);
    super::output::warn_unused_key(&db);
    let mut loader = Loader {
        db: &db,
        args,
        committed: 0,
        uncommitted: 0,
        pending: Vec::new(),
        sealed: Vec::new(),
        batch_keys: HashSet::new(),
        last_id: None,
        skipped_invalid: 0,
        skipped_duplicates: 0,
        stopped_at_line: false,
        progress: progress(None, "{spinner} {pos} documents  {per_sec}  {elapsed}"),
    };
    let loaded = if args.files {
        load_files(&mut loader)
    } else {
        load_jsonl(&mut loader)
    }
    .and_then(|()| loader.commit());
    if let Some(bar) = &loader.progress {
        bar.finish_and_clear();
    }
    if let Err(e) = loaded {
        // A failure that is not a bad line's (whose error says the lines before it are in):
        // say how much of the input is committed (in input order, every document up to the
        // last committed id; --json has printed each commit).
        if !e.is_broken_pipe() && !loader.stopped_at_line {
            message(format_args!(
                "added {} documents before stopping ({} invalid skipped, {} duplicates \
                 skipped); nothing after them was added",
                loader.committed, loader.skipped_invalid, loader.skipped_duplicates
            ));
        }
        return Err(e);
    }
    message(format_args!(
        "added {} documents ({} invalid skipped, {} duplicates skipped)",
        loader.committed, loader.skipped_invalid, loader.skipped_duplicates
    ));
    super::output::warn_write_failure(&db);
    Ok(ExitCode::SUCCESS)
}

fn load_jsonl(loader: &mut Loader<'_>) -> CliResult {
    let args = loader.args;
    let stdin = [PathBuf::from("-")];
    let paths = if args.inputs.is_empty() {
        &stdin[..]
    } else {
        &args.inputs[..]
    };
    for path in paths {
        let mut input = Input::open(path)?;
        let name = input.name().to_string();
        let mut next = input.read_lines(CHUNK)?;
        loop {
            let (lines, done) = next;
            if lines.is_empty() && done {
                break;
            }
            let hasher = Signer::of(loader.db)?;
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
                                .map(|Line { no, bytes }| {
                                    let at = At {
                                        name: &name,
                                        line: no,
                                    };
                                    let mut record = JsonLine::parse(&bytes, at)?;
                                    let id = record.key(&args.id_field)?;
                                    let text = record.take_text(&args.text_field)?;
                                    let Some(sig) = hasher.sign(&text) else {
                                        return Err(no_shingles(at));
                                    };
                                    Ok(Signed {
                                        line: Some(no),
                                        id,
                                        sig,
                                    })
                                })
                                .collect()
                        },
                    )
                },
                || {
                    if done {
                        Ok((Vec::new(), true))
                    } else {
                        input.read_lines(CHUNK)
                    }
                },
            );
            committed?;
            for p in parsed {
                loader.take(p, &name)?;
            }
            loader.show_progress();
            next = read?;
        }
    }
    Ok(())
}

/// Signs texts for the index being loaded: MinHash signatures, or SimHash fingerprints (as
/// their one-bit signatures).
struct Signer<'a> {
    /// The database's parameters: what makes a signature that of a text without shingles.
    params: &'a IndexParams,
    hasher: Hasher<'a>,
}

enum Hasher<'a> {
    MinHash(&'a MinHasher),
    /// An index that stores sets: signatures carry their shingle sets.
    MinHashWithSets(&'a MinHasher),
    SimHash(&'a SimHasher),
}

impl<'a> Signer<'a> {
    fn of(db: &'a Db) -> CliResult<Self> {
        let hasher = match db.params().sim_params() {
            Some(_) => Hasher::SimHash(db.simhasher()?),
            None if db.params().store_sets => Hasher::MinHashWithSets(db.hasher()?),
            None => Hasher::MinHash(db.hasher()?),
        };
        Ok(Signer {
            params: db.params(),
            hasher,
        })
    }

    /// The signature of `text`; `None` for a text without shingles
    /// ([`IndexParams::has_no_shingles`], the rule the Python binding refuses texts by too).
    fn sign(&self, text: &str) -> Option<Signature> {
        let sig = match self.hasher {
            Hasher::MinHash(h) => h.sketch_text(text),
            Hasher::MinHashWithSets(h) => h.sketch_text_with_set(text),
            Hasher::SimHash(h) => h.sketch_text(text).to_signature(),
        };
        Some(sig).filter(|s| !self.params.has_no_shingles(s))
    }
}

fn load_files(loader: &mut Loader<'_>) -> CliResult {
    if loader.args.inputs.is_empty() {
        return Err(CliError::usage(
            "--files needs at least one file or directory",
        ));
    }
    if loader.args.inputs.iter().any(|p| is_stdin(p)) {
        return Err(CliError::usage(
            "--files reads files and directories, not standard input ('-'); standard input is \
             read as JSON Lines: mhdb add DB -",
        ));
    }
    let mut paths = Vec::new();
    for input in &loader.args.inputs {
        walk(input, &mut paths)?;
    }
    for chunk in paths.chunks(CHUNK) {
        // (id, text): a file is keyed by its path.
        let mut docs = Vec::with_capacity(chunk.len());
        let mut not_utf8 = Vec::new();
        for path in chunk {
            match read_text(path)? {
                Ok(text) => docs.push((path.display().to_string().into_bytes(), text)),
                Err(msg) => not_utf8.push(msg),
            }
        }
        for msg in not_utf8 {
            loader.take(Err(msg), "")?;
        }
        let hasher = Signer::of(loader.db)?;
        let (committed, signed) = rayon::join(
            || loader.commit_sealed(),
            || -> Vec<Parsed> {
                docs.into_par_iter()
                    .map(|(id, text)| {
                        let Some(sig) = hasher.sign(&text) else {
                            return Err(no_shingles(String::from_utf8_lossy(&id)));
                        };
                        Ok(Signed {
                            line: None,
                            id,
                            sig,
                        })
                    })
                    .collect()
            },
        );
        committed?;
        for p in signed {
            loader.take(p, "")?;
        }
    }
    Ok(())
}
