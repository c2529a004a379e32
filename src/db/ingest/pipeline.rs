//! The ingest pipeline: while the caller's thread reads chunk n + 2 from the [`Source`], chunk
//! n + 1 is parsed and signed on every core and the batches taken from chunk n are committed.
//! Records are taken, batches committed and the [`Sink`] told, in input order, on the caller's
//! thread. Two commit [`Mode`]s: `mhdb add`'s stream, and Python's batch-atomic `insert_many`.

use std::collections::HashSet;

use super::sign::{Outcome, Prepared, Signer, Signing};
use super::{BULK_MIN, Fault, Record, Rejected, STREAM_CHUNK};
use crate::Error;
use crate::db::{Db, WriteBatch};
use crate::sketch::Signature;

/// Where records come from. The pipeline calls it on the caller's thread only.
pub trait Source {
    /// What a chunk holds before the parser makes it a record (a line, a file, a record).
    type Item: Send;
    /// A failure to read.
    type Error;

    /// Up to `max` more items; none at the end of the input.
    fn next_chunk(&mut self, max: usize) -> Result<Vec<Self::Item>, Self::Error>;

    /// Runs `job`, which blocks until work on other threads is done (signing, a commit). A
    /// binding to an interpreter lets other threads of the interpreter run meanwhile.
    fn wait<R: Send>(&mut self, job: impl FnOnce() -> R + Send) -> R {
        job()
    }
}

/// What the caller is told as the load goes, on its own thread.
pub trait Sink<O> {
    /// A failure of the caller (writing its output, a callback that raised).
    type Error;

    /// A batch is committed, durably: `total` documents so far, the last of them `last_key`.
    fn committed(&mut self, total: u64, last_key: &[u8]) -> Result<(), Self::Error>;

    /// A record was refused and passed over ([`Mode::Stream`] with `skip_invalid`).
    fn skipped(&mut self, _rejected: &Rejected<O>) {}

    /// Records up to `taken` are taken (committed or to be), after each chunk.
    fn taken(&mut self, _taken: u64) {}
}

/// What to do with a key already stored ([`Mode::Stream`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnDuplicate {
    /// Replace the stored document (the key's last record wins).
    Replace,
    /// Keep the stored document (or the key's first record in this load).
    Skip,
    /// Stop at the record ([`Fault::Duplicate`]), after committing the records before it.
    Error,
}

/// How records become commits.
#[derive(Clone, Copy, Debug)]
pub enum Mode {
    /// `mhdb add`: every `commit_every` records are a bulk insert. A refused record stops the
    /// load after the records before it are committed (or is skipped with `skip_invalid`); a
    /// failure to read stops it at once, with what was taken but not committed left out.
    Stream {
        /// Records per commit.
        commit_every: usize,
        /// Keys already stored.
        on_duplicate: OnDuplicate,
        /// Skip refused records instead of stopping.
        skip_invalid: bool,
    },
    /// Python's `insert_many`: each `commit_every` records are read as one batch, committed
    /// atomically (a bulk insert from [`BULK_MIN`] records, a write batch below) only after
    /// the [`Sink`] acknowledged the batch before. A refused record stops the load with
    /// nothing of its batch committed; a failure to read stops it after the batches read whole
    /// are committed.
    Atomic {
        /// Records per batch.
        commit_every: usize,
    },
}

/// Why a load stopped.
#[derive(Debug)]
pub enum Stop<E, O> {
    /// The source or the sink failed.
    Caller(E),
    /// A record was refused.
    Rejected(Rejected<O>),
    /// The database failed: signing, a lookup or a commit.
    Db(Error),
}

/// What a load has done so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Documents committed, durably.
    pub committed: u64,
    /// Documents taken (committed, or to be).
    pub taken: u64,
    /// Records refused and skipped.
    pub skipped_invalid: u64,
    /// Records skipped for a key already stored.
    pub skipped_duplicates: u64,
}

/// A batch of signed documents, committed as one write.
struct Batch {
    docs: Vec<(Vec<u8>, Signature)>,
}

/// What committing some batches did: the size and last key of each committed, in order, then
/// the error that stopped the rest.
struct CommitReport {
    committed: Vec<(u64, Vec<u8>)>,
    error: Option<Error>,
}

/// A load into one database.
pub struct Ingest<'db> {
    db: &'db Db,
    mode: Mode,
    counts: Counts,
    /// Records taken since the last batch was sealed ([`Mode::Stream`]).
    pending: Vec<(Vec<u8>, Signature)>,
    /// Keys of `pending`, checked for duplicates unless they are replaced.
    pending_keys: HashSet<Vec<u8>>,
    /// Full batches waiting for their commit, in order.
    sealed: Vec<Batch>,
}

impl<'db> Ingest<'db> {
    /// A load into `db`.
    pub fn new(db: &'db Db, mode: Mode) -> Self {
        Ingest {
            db,
            mode,
            counts: Counts::default(),
            pending: Vec::new(),
            pending_keys: HashSet::new(),
            sealed: Vec::new(),
        }
    }

    /// What the load has done (also after it stopped).
    pub fn counts(&self) -> Counts {
        self.counts
    }

    /// Loads everything `source` gives, each item made a record by `parse` (on any core), until
    /// the end of the input or the first error; everything taken is committed at the end.
    pub fn run<S, K, P, T, O>(
        &mut self,
        source: &mut S,
        parse: &P,
        sink: &mut K,
    ) -> Result<(), Stop<S::Error, O>>
    where
        S: Source,
        K: Sink<O, Error = S::Error>,
        P: Fn(S::Item) -> Result<Record<T, O>, Rejected<O>> + Sync,
        T: AsRef<str> + Send,
        O: Send,
    {
        let signer = Signer::of(self.db);
        let db = self.db;
        let chunk_size = self.chunk_size();
        std::thread::scope(|scope| {
            let mut chunk = source.next_chunk(chunk_size).map_err(Stop::Caller)?;
            while !chunk.is_empty() {
                let sealed = std::mem::take(&mut self.sealed);
                let bulk_min = self.bulk_min();
                let signer = &signer;
                let background = scope.spawn(move || {
                    rayon::join(
                        || commit(db, sealed, bulk_min),
                        || signer.prepare(chunk, parse),
                    )
                });
                let next = source.next_chunk(chunk_size);
                let (report, prepared) = source
                    .wait(move || background.join())
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
                self.report(report, sink)?;
                self.take_chunk(prepared, source, sink)?;
                chunk = match next {
                    Ok(chunk) => chunk,
                    Err(e) => return self.source_failed(e, source, sink),
                };
            }
            self.commit_now(source, sink)
        })
    }

    fn chunk_size(&self) -> usize {
        match self.mode {
            Mode::Stream { .. } => STREAM_CHUNK,
            Mode::Atomic { commit_every } => commit_every.max(1),
        }
    }

    /// The smallest batch committed as a bulk insert.
    fn bulk_min(&self) -> usize {
        match self.mode {
            // Bulk-load durability: every commit is a bulk insert, durable on return.
            Mode::Stream { .. } => 0,
            Mode::Atomic { .. } => BULK_MIN,
        }
    }

    /// Counts the committed batches and tells the sink, in order; then the commit error, if
    /// any.
    fn report<E, O, K>(&mut self, report: CommitReport, sink: &mut K) -> Result<(), Stop<E, O>>
    where
        K: Sink<O, Error = E>,
    {
        for (n, last_key) in report.committed {
            self.counts.committed += n;
            sink.committed(self.counts.committed, &last_key)
                .map_err(Stop::Caller)?;
        }
        report.error.map_or(Ok(()), |e| Err(Stop::Db(e)))
    }

    /// Seals what is pending and commits every sealed batch now (waiting through the source).
    fn commit_now<S, K, O>(&mut self, source: &mut S, sink: &mut K) -> Result<(), Stop<S::Error, O>>
    where
        S: Source,
        K: Sink<O, Error = S::Error>,
    {
        self.seal();
        let sealed = std::mem::take(&mut self.sealed);
        if sealed.is_empty() {
            return Ok(());
        }
        let (db, bulk_min) = (self.db, self.bulk_min());
        let report = source.wait(move || commit(db, sealed, bulk_min));
        self.report(report, sink)
    }

    /// The source failed to read: in the atomic mode the batches read whole are committed
    /// first.
    fn source_failed<S, K, O>(
        &mut self,
        e: S::Error,
        source: &mut S,
        sink: &mut K,
    ) -> Result<(), Stop<S::Error, O>>
    where
        S: Source,
        K: Sink<O, Error = S::Error>,
    {
        if let Mode::Atomic { .. } = self.mode {
            self.commit_now(source, sink)?;
        }
        Err(Stop::Caller(e))
    }

    /// Closes the pending records into a batch.
    fn seal(&mut self) {
        if !self.pending.is_empty() {
            let docs = std::mem::take(&mut self.pending);
            self.sealed.push(Batch { docs });
        }
        self.pending_keys.clear();
    }

    /// Takes a chunk's records, in order, as the mode says.
    fn take_chunk<S, K, T, O>(
        &mut self,
        prepared: Vec<Outcome<T, O>>,
        source: &mut S,
        sink: &mut K,
    ) -> Result<(), Stop<S::Error, O>>
    where
        S: Source,
        K: Sink<O, Error = S::Error>,
    {
        match self.mode {
            Mode::Atomic { .. } => {
                let docs = signed_or_first_refusal(prepared)?;
                self.counts.taken += docs.len() as u64;
                self.sealed.push(Batch { docs });
            }
            Mode::Stream { .. } => {
                for outcome in prepared {
                    self.take(outcome, source, sink)?;
                }
                sink.taken(self.counts.taken);
            }
        }
        Ok(())
    }

    /// Takes one record ([`Mode::Stream`]).
    fn take<S, K, T, O>(
        &mut self,
        outcome: Outcome<T, O>,
        source: &mut S,
        sink: &mut K,
    ) -> Result<(), Stop<S::Error, O>>
    where
        S: Source,
        K: Sink<O, Error = S::Error>,
    {
        let Mode::Stream {
            commit_every,
            on_duplicate,
            ..
        } = self.mode
        else {
            unreachable!("take is the stream mode's")
        };
        let (Record { key, origin, .. }, sig) = match outcome.map(split) {
            Ok(Ok(signed)) => signed,
            Ok(Err(Refusal::Failed(e))) => return Err(Stop::Db(e)),
            Ok(Err(Refusal::Rejected(rejected))) | Err(rejected) => {
                return self.refuse(rejected, source, sink);
            }
        };
        if on_duplicate != OnDuplicate::Replace {
            let stored = self.pending_keys.contains(&key)
                || self.db.contains(&key).map_err(Stop::Db)?;
            if stored && on_duplicate == OnDuplicate::Skip {
                self.counts.skipped_duplicates += 1;
                return Ok(());
            }
            if stored {
                self.commit_now(source, sink)?;
                return Err(Stop::Rejected(Rejected {
                    origin,
                    key: Some(key),
                    fault: Fault::Duplicate,
                }));
            }
            self.pending_keys.insert(key.clone());
        }
        self.pending.push((key, sig));
        self.counts.taken += 1;
        if self.pending.len() >= commit_every.max(1) {
            if on_duplicate == OnDuplicate::Replace {
                // Committed while the next chunk is signed.
                self.seal();
            } else {
                // Duplicate checks ask the database: commit before taking more.
                self.commit_now(source, sink)?;
            }
        }
        Ok(())
    }

    /// A refused record ([`Mode::Stream`]): skipped, or the load stops after everything
    /// before it is committed.
    fn refuse<S, K, O>(
        &mut self,
        rejected: Rejected<O>,
        source: &mut S,
        sink: &mut K,
    ) -> Result<(), Stop<S::Error, O>>
    where
        S: Source,
        K: Sink<O, Error = S::Error>,
    {
        if let Mode::Stream {
            skip_invalid: true,
            ..
        } = self.mode
        {
            self.counts.skipped_invalid += 1;
            sink.skipped(&rejected);
            return Ok(());
        }
        self.commit_now(source, sink)?;
        Err(Stop::Rejected(rejected))
    }
}

/// Why a prepared record has no signature to store.
enum Refusal<O> {
    Rejected(Rejected<O>),
    Failed(Error),
}

/// A prepared record's signature, or its refusal.
fn split<T, O>(prepared: Prepared<T, O>) -> Result<(Record<T, O>, Signature), Refusal<O>> {
    let Prepared { record, signing } = prepared;
    match signing {
        Signing::Signed(sig) => Ok((record, sig)),
        Signing::Refused(fault) => Err(Refusal::Rejected(Rejected {
            origin: record.origin,
            key: Some(record.key),
            fault,
        })),
        Signing::Failed(e) => Err(Refusal::Failed(e)),
    }
}

/// Every record's key and signature, or the first record refused, in order.
fn signed_or_first_refusal<E, T, O>(
    prepared: Vec<Outcome<T, O>>,
) -> Result<Vec<(Vec<u8>, Signature)>, Stop<E, O>> {
    let mut docs = Vec::with_capacity(prepared.len());
    for outcome in prepared {
        match outcome.map(split) {
            Ok(Ok((record, sig))) => docs.push((record.key, sig)),
            Ok(Err(Refusal::Failed(e))) => return Err(Stop::Db(e)),
            Ok(Err(Refusal::Rejected(rejected))) | Err(rejected) => {
                return Err(Stop::Rejected(rejected));
            }
        }
    }
    Ok(docs)
}

/// Commits `batches` in order, each atomically and durably (a bulk insert from `bulk_min`
/// documents, a write batch below); stops at the first failure.
fn commit(db: &Db, batches: Vec<Batch>, bulk_min: usize) -> CommitReport {
    let mut report = CommitReport {
        committed: Vec::with_capacity(batches.len()),
        error: None,
    };
    for Batch { docs } in batches {
        let Some(last_key) = docs.last().map(|(key, _)| key.clone()) else {
            continue;
        };
        let n = docs.len() as u64;
        if let Err(e) = write(db, docs, bulk_min) {
            report.error = Some(e);
            break;
        }
        report.committed.push((n, last_key));
    }
    report
}

/// Commits `docs` atomically and durably.
fn write(db: &Db, docs: Vec<(Vec<u8>, Signature)>, bulk_min: usize) -> crate::Result<()> {
    if docs.len() >= bulk_min {
        db.bulk_insert(&docs)
    } else {
        let mut batch = WriteBatch::new();
        for (key, sig) in docs {
            batch.insert(key, sig);
        }
        db.write(&batch)
    }
}

/// Signs `records` and commits them atomically and durably as one batch (a bulk insert from
/// [`BULK_MIN`] records, a write batch below), or refuses the first bad record and commits
/// nothing. The records stay the caller's.
pub fn commit_batch<E, T, O>(db: &Db, records: &[Record<T, O>]) -> Result<(), Stop<E, O>>
where
    T: AsRef<str> + Sync,
    O: Clone + Send + Sync,
{
    let signer = Signer::of(db);
    let prepared: Vec<Outcome<&str, O>> = signer.prepare(
        records.iter().collect(),
        &|r: &Record<T, O>| {
            Ok(Record {
                key: r.key.clone(),
                content: match &r.content {
                    super::Content::Text(t) => super::Content::Text(t.as_ref()),
                    super::Content::Signature(s) => super::Content::Signature(s.clone()),
                },
                origin: r.origin.clone(),
            })
        },
    );
    let docs = signed_or_first_refusal(prepared)?;
    write(db, docs, BULK_MIN).map_err(Stop::Db)
}
