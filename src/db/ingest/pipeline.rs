//! The ingest pipeline: while the caller's thread reads chunk n + 2 from the [`Source`], chunk
//! n + 1 is parsed and signed on every core and the batches taken from chunk n are committed.
//! Records are taken, batches committed and the [`Sink`] told, in input order, on the caller's
//! thread. Two commit [`Mode`]s: `mhdb add`'s stream, and Python's batch-atomic `insert_many`.

use std::collections::HashSet;
use std::marker::PhantomData;

use super::sign::{Outcome, Prepared, Signer, Signing};
use super::{BULK_MIN, Fault, Record, Rejected, STREAM_CHUNK};
use crate::Error;
use crate::db::{Db, Match, Novelty, NoveltyOptions, WriteBatch};
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
    fn skipped(&mut self, _rejected: &Rejected<O>) {
        // A front end without a word for skipped records says nothing.
    }

    /// A record was not stored because stored documents are similar to it
    /// ([`Ingest::novel_only`]): its key, and the matches, best first. Called in input order,
    /// after the batch holding it is committed.
    fn near_duplicate(&mut self, _key: &[u8], _matches: &[Match]) -> Result<(), Self::Error> {
        // A front end that does not report skips only counts them.
        Ok(())
    }

    /// Records up to `taken` are taken (committed or to be), after each chunk.
    fn taken(&mut self, _taken: u64) {
        // A front end without progress to show ignores it.
    }
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

/// Called on the committing thread right after each batch is durable, before the next batch
/// is committed, with the documents committed so far and the batch's last key. What it
/// acknowledges is exactly what is durable (`mhdb add --json` prints its commit lines here:
/// a kill can then find at most the one batch being committed durable and unacknowledged).
pub type Acknowledge<'a> = dyn Fn(u64, &[u8]) -> std::io::Result<()> + Sync + 'a;

/// Why a load stopped.
#[derive(Debug)]
pub enum Stop<E, O> {
    /// The source or the sink failed.
    Caller(E),
    /// The [`Acknowledge`] hook failed (its batch is committed; nothing after it is).
    Acknowledge(std::io::Error),
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
    /// Records not stored because stored documents are similar ([`Ingest::novel_only`]).
    pub skipped_near_duplicates: u64,
    /// Records not stored as exact copies ([`Ingest::skip_exact_copies`]).
    pub skipped_exact_copies: u64,
}

/// Keys with their signatures, in input order.
type Docs = Vec<(Vec<u8>, Signature)>;

/// A batch of signed documents, committed as one write.
struct Batch {
    docs: Docs,
}

/// What committing some batches did: each batch committed, in order, then the error that
/// stopped the rest.
struct CommitReport {
    committed: Vec<Committed>,
    error: Option<CommitError>,
}

/// One batch committed.
struct Committed {
    /// Documents stored.
    stored: u64,
    /// The batch's last key.
    last_key: Vec<u8>,
    /// The batch's records found similar to stored documents, and their matches, in order
    /// ([`Ingest::novel_only`]).
    near_duplicates: Vec<(Vec<u8>, Vec<Match>)>,
    /// The batch's records left out as exact copies ([`Ingest::skip_exact_copies`]).
    exact_copies: u64,
}

/// What stopped a run of commits.
enum CommitError {
    Db(Error),
    Acknowledge(std::io::Error),
}

/// A load into one database.
pub struct Ingest<'db> {
    db: &'db Db,
    mode: Mode,
    acknowledge: Option<&'db Acknowledge<'db>>,
    /// Store only the records no stored document is similar to.
    novelty: Option<NoveltyOptions>,
    /// Leave out the records that are exact copies ([`Db::drop_exact_copies`]).
    exact_dedup: bool,
    counts: Counts,
    /// Records taken since the last batch was sealed ([`Mode::Stream`]).
    pending: Docs,
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
            acknowledge: None,
            novelty: None,
            exact_dedup: false,
            counts: Counts::default(),
            pending: Vec::new(),
            pending_keys: HashSet::new(),
            sealed: Vec::new(),
        }
    }

    /// Has `hook` acknowledge each batch as soon as it is durable, on the committing thread.
    pub fn acknowledge_with(mut self, hook: &'db Acknowledge<'db>) -> Self {
        self.acknowledge = Some(hook);
        self
    }

    /// Stores only the records no stored document (nor an earlier record of the load) is
    /// similar to, as [`Db::insert_many_if_novel`] checks: each record is checked and stored
    /// in turn, so a batch is durable when committed but a crash may keep a prefix of it.
    /// The others are counted and told to the sink ([`Sink::near_duplicate`]).
    pub fn novel_only(mut self, opts: NoveltyOptions) -> Self {
        self.novelty = Some(opts);
        self
    }

    /// Leaves out the records whose exact hash equals that of a live stored document or of an
    /// earlier record of the load ([`Db::drop_exact_copies`]), before they reach the band
    /// buckets; they are counted. Refused (at the first commit) by an index without the
    /// EXACT_HASH column.
    pub fn skip_exact_copies(mut self) -> Self {
        self.exact_dedup = true;
        self
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
        Run {
            ingest: self,
            source,
            sink,
            origin: PhantomData,
        }
        .all(parse)
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

    /// Closes the pending records into a batch.
    fn seal(&mut self) {
        if !self.pending.is_empty() {
            let docs = std::mem::take(&mut self.pending);
            self.sealed.push(Batch { docs });
        }
        self.pending_keys.clear();
    }
}

/// One [`Ingest::run`]: the load with its source and sink.
struct Run<'r, 'db, S, K, O> {
    ingest: &'r mut Ingest<'db>,
    source: &'r mut S,
    sink: &'r mut K,
    origin: PhantomData<fn() -> O>,
}

/// The error a run stops with.
type StopOf<S, O> = Stop<<S as Source>::Error, O>;

impl<S, K, O> Run<'_, '_, S, K, O>
where
    S: Source,
    K: Sink<O, Error = S::Error>,
{
    /// Reads chunk after chunk; while the caller's thread reads one, the chunk before is
    /// signed and the batches before it are committed on other threads.
    fn all<P, T>(mut self, parse: &P) -> Result<(), StopOf<S, O>>
    where
        P: Fn(S::Item) -> Result<Record<T, O>, Rejected<O>> + Sync,
        T: AsRef<str> + Send,
        O: Send,
    {
        let db = self.ingest.db;
        let signer = Signer::of(db);
        let chunk_size = self.ingest.chunk_size();
        std::thread::scope(|scope| {
            let mut chunk = self.source.next_chunk(chunk_size).map_err(Stop::Caller)?;
            while !chunk.is_empty() {
                let commits = self.ingest.commits();
                let signer = &signer;
                let background = scope.spawn(move || {
                    rayon::join(|| commits.run(db), || signer.prepare(chunk, parse))
                });
                let next = self.source.next_chunk(chunk_size);
                let (report, prepared) = self
                    .source
                    .wait(move || background.join())
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
                self.report(report)?;
                self.take_chunk(prepared)?;
                chunk = match next {
                    Ok(chunk) => chunk,
                    Err(e) => return self.source_failed(e),
                };
            }
            self.commit_now()
        })
    }

    /// Counts the committed batches and tells the sink, in order; then the commit error, if
    /// any.
    fn report(&mut self, report: CommitReport) -> Result<(), StopOf<S, O>> {
        let counts = &mut self.ingest.counts;
        for batch in report.committed {
            counts.committed += batch.stored;
            counts.skipped_near_duplicates += batch.near_duplicates.len() as u64;
            counts.skipped_exact_copies += batch.exact_copies;
            for (key, matches) in &batch.near_duplicates {
                self.sink
                    .near_duplicate(key, matches)
                    .map_err(Stop::Caller)?;
            }
            self.sink
                .committed(counts.committed, &batch.last_key)
                .map_err(Stop::Caller)?;
        }
        match report.error {
            None => Ok(()),
            Some(CommitError::Db(e)) => Err(Stop::Db(e)),
            Some(CommitError::Acknowledge(e)) => Err(Stop::Acknowledge(e)),
        }
    }

    /// Seals what is pending and commits every sealed batch now (waiting through the source).
    fn commit_now(&mut self) -> Result<(), StopOf<S, O>> {
        self.ingest.seal();
        if self.ingest.sealed.is_empty() {
            return Ok(());
        }
        let (db, commits) = (self.ingest.db, self.ingest.commits());
        let report = self.source.wait(move || commits.run(db));
        self.report(report)
    }

    /// The source failed to read: in the atomic mode the batches read whole are committed
    /// first.
    fn source_failed(&mut self, e: S::Error) -> Result<(), StopOf<S, O>> {
        if let Mode::Atomic { .. } = self.ingest.mode {
            self.commit_now()?;
        }
        Err(Stop::Caller(e))
    }

    /// Takes a chunk's records, in order, as the mode says.
    fn take_chunk<T>(&mut self, prepared: Vec<Outcome<T, O>>) -> Result<(), StopOf<S, O>> {
        match self.ingest.mode {
            Mode::Atomic { .. } => {
                let docs = signed_or_first_refusal(prepared)?;
                self.ingest.counts.taken += docs.len() as u64;
                self.ingest.sealed.push(Batch { docs });
            }
            Mode::Stream {
                commit_every,
                on_duplicate,
                ..
            } => {
                for outcome in prepared {
                    self.take(outcome, commit_every.max(1), on_duplicate)?;
                }
                self.sink.taken(self.ingest.counts.taken);
            }
        }
        Ok(())
    }

    /// Takes one record ([`Mode::Stream`]).
    fn take<T>(
        &mut self,
        outcome: Outcome<T, O>,
        commit_every: usize,
        on_duplicate: OnDuplicate,
    ) -> Result<(), StopOf<S, O>> {
        let (Record { key, origin, .. }, sig) = match outcome.map(split) {
            Ok(Ok(signed)) => signed,
            Ok(Err(Refusal::Failed(e))) => return Err(Stop::Db(e)),
            Ok(Err(Refusal::Rejected(rejected))) | Err(rejected) => {
                return self.refuse(rejected);
            }
        };
        let ingest = &mut *self.ingest;
        if on_duplicate != OnDuplicate::Replace {
            let stored =
                ingest.pending_keys.contains(&key) || ingest.db.contains(&key).map_err(Stop::Db)?;
            if stored && on_duplicate == OnDuplicate::Skip {
                ingest.counts.skipped_duplicates += 1;
                return Ok(());
            }
            if stored {
                self.commit_now()?;
                return Err(Stop::Rejected(Rejected {
                    origin,
                    key: Some(key),
                    fault: Fault::Duplicate,
                }));
            }
            ingest.pending_keys.insert(key.clone());
        }
        ingest.pending.push((key, sig));
        ingest.counts.taken += 1;
        if ingest.pending.len() < commit_every {
            return Ok(());
        }
        if on_duplicate == OnDuplicate::Replace {
            // Committed while the next chunk is signed.
            ingest.seal();
            Ok(())
        } else {
            // Duplicate checks ask the database: commit before taking more.
            self.commit_now()
        }
    }

    /// A refused record ([`Mode::Stream`]): skipped, or the load stops after everything
    /// before it is committed.
    fn refuse(&mut self, rejected: Rejected<O>) -> Result<(), StopOf<S, O>> {
        if let Mode::Stream {
            skip_invalid: true, ..
        } = self.ingest.mode
        {
            self.ingest.counts.skipped_invalid += 1;
            self.sink.skipped(&rejected);
            return Ok(());
        }
        self.commit_now()?;
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
fn signed_or_first_refusal<E, T, O>(prepared: Vec<Outcome<T, O>>) -> Result<Docs, Stop<E, O>> {
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

/// The sealed batches handed to a committing thread, with what it needs to commit and
/// acknowledge them.
struct Commits<'a> {
    batches: Vec<Batch>,
    /// The smallest batch committed as a bulk insert.
    bulk_min: usize,
    /// Documents committed before these batches.
    committed_before: u64,
    acknowledge: Option<&'a Acknowledge<'a>>,
    novelty: Option<NoveltyOptions>,
    exact_dedup: bool,
}

impl<'db> Ingest<'db> {
    /// Takes the sealed batches for a committing thread.
    fn commits(&mut self) -> Commits<'db> {
        Commits {
            batches: std::mem::take(&mut self.sealed),
            bulk_min: self.bulk_min(),
            committed_before: self.counts.committed,
            acknowledge: self.acknowledge,
            novelty: self.novelty,
            exact_dedup: self.exact_dedup,
        }
    }
}

impl Commits<'_> {
    /// Commits the batches in order, each atomically and durably (a bulk insert from
    /// `bulk_min` documents, a write batch below) and then acknowledged; stops at the first
    /// failure.
    fn run(self, db: &Db) -> CommitReport {
        let mut report = CommitReport {
            committed: Vec::with_capacity(self.batches.len()),
            error: None,
        };
        let mut total = self.committed_before;
        for Batch { docs } in self.batches {
            let Some(last_key) = docs.last().map(|(key, _)| key.clone()) else {
                continue;
            };
            let written =
                without_exact_copies(db, docs, self.exact_dedup).and_then(|(docs, copies)| {
                    let (stored, near) = match self.novelty {
                        None => write(db, docs, self.bulk_min)?,
                        Some(opts) => write_novel(db, docs, &opts)?,
                    };
                    Ok((stored, near, copies))
                });
            let (stored, near_duplicates, exact_copies) = match written {
                Ok(done) => done,
                Err(e) => {
                    report.error = Some(CommitError::Db(e));
                    break;
                }
            };
            total += stored;
            let acknowledged = self
                .acknowledge
                .map_or(Ok(()), |hook| hook(total, &last_key));
            report.committed.push(Committed {
                stored,
                last_key,
                near_duplicates,
                exact_copies,
            });
            if let Err(e) = acknowledged {
                report.error = Some(CommitError::Acknowledge(e));
                break;
            }
        }
        report
    }
}

/// `docs` without their exact copies when the load leaves them out (`exact_dedup`), and how
/// many.
fn without_exact_copies(db: &Db, docs: Docs, exact_dedup: bool) -> crate::Result<(Docs, u64)> {
    if exact_dedup {
        db.drop_exact_copies(docs)
    } else {
        Ok((docs, 0))
    }
}

/// What a commit stored: the number of documents, and the records not stored as near
/// duplicates with their matches.
type Written = (u64, Vec<(Vec<u8>, Vec<Match>)>);

/// Commits `docs` atomically and durably.
fn write(db: &Db, docs: Docs, bulk_min: usize) -> crate::Result<Written> {
    let n = docs.len() as u64;
    if docs.len() >= bulk_min {
        db.bulk_insert(&docs)?;
    } else {
        db.write(&write_batch(docs))?;
    }
    Ok((n, Vec::new()))
}

fn write_batch(docs: Docs) -> WriteBatch {
    let mut batch = WriteBatch::new();
    for (key, sig) in docs {
        batch.insert(key, sig);
    }
    batch
}

/// Commits those of `docs` no stored document is similar to, durably (whatever the handle's
/// durability: a commit is acknowledged as durable).
fn write_novel(db: &Db, docs: Docs, opts: &NoveltyOptions) -> crate::Result<Written> {
    let keys: Vec<Vec<u8>> = docs.iter().map(|(key, _)| key.clone()).collect();
    let outcomes = db.insert_many_if_novel(&write_batch(docs), opts)?;
    db.commit()?;
    let mut stored = 0;
    let mut near_duplicates = Vec::new();
    for (key, outcome) in keys.into_iter().zip(outcomes) {
        match outcome {
            Novelty::Inserted => stored += 1,
            Novelty::Duplicate(matches) => near_duplicates.push((key, matches)),
        }
    }
    Ok((stored, near_duplicates))
}

/// Signs `records` and commits them atomically and durably as one batch (a bulk insert from
/// [`BULK_MIN`] records, a write batch below), or refuses the first bad record and commits
/// nothing. The records stay the caller's.
pub fn commit_batch<E, T, O>(db: &Db, records: &[Record<T, O>]) -> Result<(), Stop<E, O>>
where
    T: AsRef<str> + Sync,
    O: Clone + Send + Sync,
{
    let docs = sign_batch(db, records)?;
    write(db, docs, BULK_MIN).map(drop).map_err(Stop::Db)
}

/// Signs `records` (refusing the first bad record, with nothing stored) and stores each that
/// no stored document, nor an earlier record, is similar to ([`Db::insert_many_if_novel`]),
/// durably; the outcomes are in the records' order.
pub fn commit_batch_if_novel<E, T, O>(
    db: &Db,
    records: &[Record<T, O>],
    opts: &NoveltyOptions,
) -> Result<Vec<Novelty>, Stop<E, O>>
where
    T: AsRef<str> + Sync,
    O: Clone + Send + Sync,
{
    let docs = sign_batch(db, records)?;
    let outcomes = db
        .insert_many_if_novel(&write_batch(docs), opts)
        .map_err(Stop::Db)?;
    db.commit().map_err(Stop::Db)?;
    Ok(outcomes)
}

/// Every record's key and signature, signed on every core, or the first record refused.
fn sign_batch<E, T, O>(db: &Db, records: &[Record<T, O>]) -> Result<Docs, Stop<E, O>>
where
    T: AsRef<str> + Sync,
    O: Clone + Send + Sync,
{
    let signer = Signer::of(db);
    let prepared: Vec<Outcome<&str, O>> =
        signer.prepare(records.iter().collect(), &|r: &Record<T, O>| {
            Ok(Record {
                key: r.key.clone(),
                content: r.content.borrowed(),
                keep: r.keep.clone(),
                origin: r.origin.clone(),
            })
        });
    signed_or_first_refusal(prepared)
}
