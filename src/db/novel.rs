//! Insert if novel: "have I seen something like this before? If not, remember it", as one
//! step. The check and the insert run under the sequencer, the lock that orders every write
//! of a handle (and a database has one writing handle: the writer's lock), so no write lands
//! between them: two callers can never both insert near-duplicates of each other, and an
//! item of a batch is checked against the items stored before it.

use std::borrow::Cow;

use super::Db;
use super::metric::Metric;
use super::options::Durability;
use super::query::Banded;
use super::query::{Match, QueryOptions};
use super::write::{BatchOp, Prepared, WriteBatch};
use crate::sketch::Signature;
use crate::{Error, Result};

/// What an insert-if-novel did with one document.
#[derive(Clone, Debug, PartialEq)]
pub enum Novelty {
    /// Nothing stored was similar at the threshold: the document is stored.
    Inserted,
    /// Stored documents at or above the threshold, best first (as [`Db::query`] reports
    /// them; the document's own key among them when it was stored before). Nothing was
    /// stored.
    Duplicate(Vec<Match>),
}

impl Novelty {
    /// Whether the document was stored.
    pub fn is_inserted(&self) -> bool {
        matches!(self, Novelty::Inserted)
    }
}

/// How an insert-if-novel checks.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoveltyOptions {
    /// The similarity at or above which a stored document makes a duplicate, in the index's
    /// metric; `None` uses the index's threshold.
    pub threshold: Option<f64>,
    /// At most this many matches reported with a duplicate, best first; `None` reports all.
    pub limit: Option<usize>,
    /// In an index that stores shingle sets, decide by the signature estimate alone.
    pub estimate_only: bool,
}

impl NoveltyOptions {
    /// The query deciding novelty in an index of `metric`: a containment index's threshold
    /// is a containment.
    fn query(&self, metric: Metric) -> QueryOptions {
        let containment = metric == Metric::Containment;
        QueryOptions {
            threshold: self.threshold.filter(|_| !containment),
            limit: self.limit,
            estimate_only: self.estimate_only,
            top: None,
            deadline: None,
            containment: self.threshold.filter(|_| containment),
            // Novelty is decided as a query by the estimate decides it.
            containment_recall: None,
        }
    }
}

impl Db {
    /// Stores `sig` under `key` unless a stored document is similar at the threshold: the
    /// check and the insert are one step for every other writer of this database. With
    /// [`Durability::Sync`], on return the document is durable when
    /// inserted, and so are the matches a duplicate names.
    pub fn insert_if_novel(
        &self,
        key: impl AsRef<[u8]>,
        sig: &Signature,
        opts: &NoveltyOptions,
    ) -> Result<Novelty> {
        only(self.check_and_store(&[(key.as_ref(), sig)], opts)?)
    }

    /// [`Db::insert_if_novel`] for the signature of `text`.
    pub fn insert_text_if_novel(
        &self,
        key: impl AsRef<[u8]>,
        text: &str,
        opts: &NoveltyOptions,
    ) -> Result<Novelty> {
        let sig = self.sketch_text(text)?;
        only(self.check_and_store(&[(key.as_ref(), &sig)], opts)?)
    }

    /// [`Db::insert_if_novel`] for each insert of `batch`, in order: each document is checked
    /// against the index as it stands after the ones before it, so a batch of near-duplicates
    /// stores its first. The outcomes are in the batch's order. A batch holds inserts only.
    /// Every document is signed and checked for shape before any is stored; an error after
    /// that (I/O) may leave the documents before the failing one stored.
    pub fn insert_many_if_novel(
        &self,
        batch: &WriteBatch,
        opts: &NoveltyOptions,
    ) -> Result<Vec<Novelty>> {
        let signed = self.sign_inserts(batch)?;
        let docs: Vec<(&[u8], &Signature)> = signed
            .iter()
            .map(|(key, sig)| (*key, sig.as_ref()))
            .collect();
        self.check_and_store(&docs, opts)
    }

    /// Checks and stores each of `docs` in turn (the work of the `insert*_if_novel` calls).
    fn check_and_store(
        &self,
        docs: &[(&[u8], &Signature)],
        opts: &NoveltyOptions,
    ) -> Result<Vec<Novelty>> {
        self.check_writable()?;
        let prepared = docs
            .iter()
            .map(|(key, sig)| self.prepare_put(key, sig))
            .collect::<Result<Vec<_>>>()?;
        let query = opts.query(self.params.metric());
        let mut outcomes = Vec::with_capacity(docs.len());
        let (last, failure) = {
            let _order = self.sequencer.lock();
            self.check_writable()?;
            let mut failure = None;
            for ((_, sig), put) in docs.iter().zip(prepared) {
                match self.check_then_insert(sig, put, &query) {
                    Ok(outcome) => outcomes.push(outcome),
                    Err(e) => {
                        failure = Some(e);
                        break;
                    }
                }
            }
            // What a duplicate names may be queued by another writer and not yet durable:
            // everything queued so far is waited for, not only this batch.
            (self.group_commit.last_queued()?, failure)
        };
        // Nothing stored: no upkeep to do, only the matches' durability to wait for.
        let settled = if outcomes.iter().any(Novelty::is_inserted) {
            self.settle(last)
        } else if self.opts.durability == Durability::Sync {
            self.sync_wal_through(last)
        } else {
            Ok(())
        };
        match failure {
            Some(e) => Err(e),
            None => settled.map(|()| outcomes),
        }
    }

    /// Under the sequencer: the matches of `sig`, or, when there are none, `put` stored.
    fn check_then_insert(
        &self,
        sig: &Signature,
        put: Prepared<'_>,
        query: &QueryOptions,
    ) -> Result<Novelty> {
        let banded = match &put {
            Prepared::Put { band_keys, sig, .. } => Some(Banded {
                band_keys,
                packed: sig,
            }),
            Prepared::Delete { .. } => None,
        };
        let found = self.query_in(&self.state.read(), sig, banded, query)?;
        if !found.matches.is_empty() {
            return Ok(Novelty::Duplicate(found.matches));
        }
        self.queue_and_apply(vec![put], self.group_commit.preparing())?;
        Ok(Novelty::Inserted)
    }

    /// The key and signature of each insert of `batch` (texts signed here); a delete is
    /// refused.
    fn sign_inserts<'a>(
        &self,
        batch: &'a WriteBatch,
    ) -> Result<Vec<(&'a [u8], Cow<'a, Signature>)>> {
        batch
            .ops
            .iter()
            .enumerate()
            .map(|(i, op)| match op {
                BatchOp::Put { key, sig } => Ok((key.as_slice(), Cow::Borrowed(sig))),
                BatchOp::PutText { key, text } => {
                    Ok((key.as_slice(), Cow::Owned(self.sketch_text(text)?)))
                }
                BatchOp::Delete { .. } => Err(Error::invalid(
                    "batch",
                    format!(
                        "operation {i} is a delete; an insert-if-novel batch holds inserts only"
                    ),
                )),
            })
            .collect()
    }
}

/// The outcome of a batch of one.
fn only(outcomes: Vec<Novelty>) -> Result<Novelty> {
    outcomes
        .into_iter()
        .next()
        .ok_or_else(|| Error::invalid("batch", "one document gave no outcome"))
}
