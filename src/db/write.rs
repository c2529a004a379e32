//! The write path: what a caller asks for ([`WriteBatch`]), resolved to document numbers under
//! the sequencer (so WAL order is document-number order), queued for group commit and applied
//! to the in-memory table atomically with respect to queries.

use std::borrow::Cow;
use std::collections::HashMap;

use super::Db;
use super::group_commit::Preparing;
use super::options::Durability;
use super::state::State;
use crate::sketch::{Signature, bbit};
use crate::storage::segment::DocColumns;
use crate::storage::shingle_codec;
use crate::storage::wal::MAX_RECORD_LEN;
use crate::storage::wal::batch::{LogOp, MAX_KEY_LEN, OpsVersion, encode_ops};
use crate::{Error, Result};

/// One requested change.
#[derive(Clone, Debug)]
pub(crate) enum BatchOp {
    Put { key: Vec<u8>, sig: Signature },
    PutText { key: Vec<u8>, text: String },
    Delete { key: Vec<u8> },
}

/// A group of inserts and deletes applied atomically by [`Db::write`](super::Db::write).
///
/// Inserting a key that already exists replaces it (upsert): the old document is deleted and
/// the new one gets a new internal number, in the same atomic step. Deleting an absent key is a
/// no-op. Within one batch, operations apply in order.
#[derive(Clone, Debug, Default)]
pub struct WriteBatch {
    pub(crate) ops: Vec<BatchOp>,
}

impl WriteBatch {
    /// An empty batch.
    pub fn new() -> Self {
        Self::default()
    }

    /// Inserts (or replaces) `key` with a precomputed full-precision signature.
    pub fn insert(&mut self, key: impl AsRef<[u8]>, sig: Signature) -> &mut Self {
        self.ops.push(BatchOp::Put {
            key: key.as_ref().to_vec(),
            sig,
        });
        self
    }

    /// Inserts (or replaces) `key` with the signature of `text`.
    pub fn insert_text(&mut self, key: impl AsRef<[u8]>, text: impl Into<String>) -> &mut Self {
        self.ops.push(BatchOp::PutText {
            key: key.as_ref().to_vec(),
            text: text.into(),
        });
        self
    }

    /// Deletes `key` if present.
    pub fn delete(&mut self, key: impl AsRef<[u8]>) -> &mut Self {
        self.ops.push(BatchOp::Delete {
            key: key.as_ref().to_vec(),
        });
        self
    }

    /// Number of operations.
    pub fn len(&self) -> usize {
        self.ops.len()
    }

    /// True when the batch holds no operation.
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }
}

/// A requested change made ready outside every lock: a document signed, banded and packed.
pub(super) enum Prepared<'a> {
    Put {
        key: &'a [u8],
        band_keys: Box<[u64]>,
        sig: Box<[u8]>,
        set: Option<Box<[u8]>>,
        /// The column values the signature carries, of the columns the index has.
        columns: DocColumns,
    },
    Delete {
        key: &'a [u8],
    },
}

impl Db {
    /// Applies a batch atomically. With [`Durability::Sync`] it is durable when this returns.
    pub fn write(&self, batch: &WriteBatch) -> Result<()> {
        self.check_writable()?;
        if batch.is_empty() {
            return Ok(());
        }
        let preparing = self.group_commit.preparing();
        let prepared = self.prepare(batch)?;
        let seq = {
            let _order = self.sequencer.lock();
            self.check_writable()?;
            match self.queue_and_apply(prepared, preparing)? {
                Some(seq) => seq,
                None => return Ok(()),
            }
        };
        self.settle(seq)
    }

    /// Under the sequencer: gives `prepared` its document numbers, queues its WAL record and
    /// applies it to the in-memory table, in that order; its queue number, or none when it
    /// changes nothing (deletes of absent keys).
    pub(super) fn queue_and_apply(
        &self,
        prepared: Vec<Prepared<'_>>,
        preparing: Preparing<'_>,
    ) -> Result<Option<u64>> {
        let ops = resolve_docnos(&self.state.read(), prepared)?;
        if ops.is_empty() {
            return Ok(None);
        }
        let payload = encode_batch(&ops)?;
        let seq = self.group_commit.queue(payload, preparing)?;
        apply_to_memtable(&mut self.state.write(), &ops);
        Ok(Some(seq))
    }

    /// After queueing `seq` (outside the sequencer): durable on return with
    /// [`Durability::Sync`], then the upkeep a commit may call for (a flush).
    pub(super) fn settle(&self, seq: u64) -> Result<()> {
        if self.opts.durability == Durability::Sync {
            self.sync_wal_through(seq)?;
        } else if let Err(e) = self.group_commit.write_if_large() {
            return self.fail_wal(e);
        }
        // Committed (with `Durability::Sync`; queued otherwise, and then a failed flush is
        // reported by the next commit): what follows is upkeep.
        self.after_commit(self.maybe_flush())
    }

    /// Signs, bands and packs the documents of `batch` (outside every lock).
    pub(super) fn prepare<'a>(&self, batch: &'a WriteBatch) -> Result<Vec<Prepared<'a>>> {
        let mut prepared = Vec::with_capacity(batch.ops.len());
        for op in &batch.ops {
            let (key, sig) = match op {
                BatchOp::Put { key, sig } => (key, Cow::Borrowed(sig)),
                BatchOp::PutText { key, text } => (key, Cow::Owned(self.sketch_text(text)?)),
                BatchOp::Delete { key } => {
                    check_key(key)?;
                    prepared.push(Prepared::Delete { key });
                    continue;
                }
            };
            prepared.push(self.prepare_put(key, &sig)?);
        }
        Ok(prepared)
    }

    /// Bands and packs one document (outside every lock); refuses a bad key or signature.
    pub(super) fn prepare_put<'a>(&self, key: &'a [u8], sig: &Signature) -> Result<Prepared<'a>> {
        check_key(key)?;
        self.check_signature(sig)?;
        self.check_may_store_signatures()?;
        Ok(Prepared::Put {
            key,
            band_keys: self.sketcher.band_keys(sig)?.into(),
            sig: bbit::pack(sig.slots(), self.params.bits)?.into(),
            set: self.coded_set(sig)?.map(Into::into),
            columns: self.columns_to_store(sig)?,
        })
    }

    /// Inserts (or replaces) one document by signature.
    pub fn insert(&self, key: impl AsRef<[u8]>, sig: &Signature) -> Result<()> {
        let mut b = WriteBatch::new();
        b.insert(key, sig.clone());
        self.write(&b)
    }

    /// Inserts (or replaces) one document by text.
    pub fn insert_text(&self, key: impl AsRef<[u8]>, text: &str) -> Result<()> {
        let mut b = WriteBatch::new();
        b.insert_text(key, text);
        self.write(&b)
    }

    /// Deletes `key`. Returns whether it was present.
    pub fn delete(&self, key: impl AsRef<[u8]>) -> Result<bool> {
        let present = self.contains(key.as_ref())?;
        let mut b = WriteBatch::new();
        b.delete(key);
        self.write(&b)?;
        Ok(present)
    }

    /// Makes every write before this call durable.
    pub fn commit(&self) -> Result<()> {
        self.check_writable()?;
        let seq = self.group_commit.last_queued()?;
        self.sync_wal_through(seq)
    }

    /// Waits until the batch queued as `seq` is durable (sharing the fsync with concurrent
    /// writers); a failure is latched: the handle then refuses writes.
    pub(super) fn sync_wal_through(&self, seq: u64) -> Result<()> {
        match self
            .group_commit
            .sync_through(seq, self.opts.durability, &self.failed)
        {
            Ok(()) => Ok(()),
            Err(e) => self.fail_wal(e),
        }
    }

    /// [`Db::fail`] for a failed WAL write or fsync: the in-memory table then holds batches
    /// the failure leaves uncommitted.
    fn fail_wal<T>(&self, e: Error) -> Result<T> {
        self.memory_ahead
            .store(true, std::sync::atomic::Ordering::SeqCst);
        self.fail(e)
    }

    /// The column values to store with `sig`: those it carries (attached when the index
    /// signed the document's text or tokens), of the columns the index has; none otherwise.
    /// A keep value must fit the index's KEEP column ([`KeepValue::into_type`]).
    pub(super) fn columns_to_store(&self, sig: &Signature) -> Result<DocColumns> {
        let keep = match (sig.keep_value(), self.columns.keep) {
            (None, _) => None,
            (Some(v), Some(ty)) => Some(
                v.clone()
                    .into_type(ty)
                    .map_err(|e| Error::invalid("keep value", e))?,
            ),
            (Some(_), None) => {
                return Err(Error::invalid(
                    "keep value",
                    "this index has no KEEP column (add --keep-field fixes one on an index \
                     without segments)",
                ));
            }
        };
        Ok(DocColumns {
            exact: sig.exact_hash(),
            keep,
            set_size: sig.set_size(),
        }
        .within(self.columns))
    }

    /// The coded shingle set to store with `sig`: `None` in an index that stores no sets; in
    /// one that does, the set attached to `sig` (an error if there is none: such an index
    /// takes documents as text).
    pub(super) fn coded_set(&self, sig: &Signature) -> Result<Option<Vec<u8>>> {
        if !self.params.store_sets {
            return Ok(None);
        }
        match sig.shingle_set() {
            Some(set) => Ok(Some(shingle_codec::encode(set.values()))),
            None => Err(Error::invalid(
                "signature",
                "this index stores shingle sets (created with --store-sets): insert documents \
                 as text, or a signature with its shingle set attached \
                 (MinHasher::sketch_text_with_set)",
            )),
        }
    }
}

/// The log operations of `prepared` (under the sequencer): new documents take the next
/// docnos, and a key already stored, or put earlier in the batch, has that copy deleted.
fn resolve_docnos(state: &State, prepared: Vec<Prepared<'_>>) -> Result<Vec<LogOp>> {
    let mut ops = Vec::with_capacity(prepared.len() + 1);
    let mut next = state.mem.next_docno();
    // Keys touched earlier in this batch shadow the stored state.
    let mut overlay: HashMap<&[u8], Option<u64>> = HashMap::new();
    for p in prepared {
        let key = match &p {
            Prepared::Put { key, .. } | Prepared::Delete { key } => *key,
        };
        let existing = match overlay.get(key) {
            Some(v) => *v,
            None => state.lookup_key(key)?,
        };
        if let Some(old) = existing {
            ops.push(LogOp::Delete { docno: old });
        }
        match p {
            Prepared::Put {
                key,
                band_keys,
                sig,
                set,
                columns,
            } => {
                ops.push(LogOp::Insert {
                    docno: next,
                    key: key.into(),
                    band_keys,
                    sig,
                    set,
                    columns,
                });
                overlay.insert(key, Some(next));
                next += 1;
            }
            Prepared::Delete { key } => {
                overlay.insert(key, None);
            }
        }
    }
    Ok(ops)
}

/// The WAL payload of `ops` (version 3's operations: only a database of version 3 is
/// written); refused, before anything is queued or applied (the batch then has
/// no effect), when one WAL record cannot hold it.
fn encode_batch(ops: &[LogOp]) -> Result<Vec<u8>> {
    let payload = encode_ops(ops, OpsVersion::V3);
    if payload.len() > MAX_RECORD_LEN {
        return Err(Error::invalid(
            "batch",
            format!(
                "encodes to {} bytes, more than one WAL record may hold ({}); split it or use bulk_insert",
                payload.len(),
                MAX_RECORD_LEN
            ),
        ));
    }
    Ok(payload)
}

/// Applies `ops` to the in-memory table (atomically for queries: under the state's write
/// lock).
fn apply_to_memtable(state: &mut State, ops: &[LogOp]) {
    for op in ops {
        match op {
            LogOp::Insert {
                docno,
                key,
                band_keys,
                sig,
                set,
                columns,
            } => {
                let columns = (set.as_deref(), columns.clone());
                state
                    .mem
                    .insert(*docno, key, band_keys.iter().copied(), sig, columns);
            }
            LogOp::Delete { docno } => state.mem.mark_deleted(*docno),
        }
    }
}

pub(super) fn check_key(key: &[u8]) -> Result<()> {
    if key.len() > MAX_KEY_LEN {
        return Err(Error::invalid(
            "key",
            format!("is {} bytes, at most {MAX_KEY_LEN} allowed", key.len()),
        ));
    }
    Ok(())
}
