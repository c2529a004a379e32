//! Bulk insert: many documents written straight to a new segment (signatures included),
//! bypassing the WAL, durable when the call returns (the commit point is the same manifest
//! switch as a flush: `format/commit.md`, "Bulk insert"). Merging another database in goes
//! through the same path.

use parking_lot::MutexGuard;
use rayon::prelude::*;

use super::Db;
use super::commit::{CodedSets, Columns, LiveDoc, NewDocs, Records};
use super::memtable::MemTable;
use super::write::check_key;
use crate::sketch::{Signature, bbit};
use crate::storage::segment::DocColumns;
use crate::{Error, Result};

impl Db {
    /// Inserts many documents at once, bypassing the WAL: they are written straight to a new
    /// segment (signatures included) and are durable when this returns (the commit point is the
    /// same manifest switch as a flush). Writers wait meanwhile; queries go on. Existing keys
    /// are replaced, and within `docs` the last copy of a key wins.
    pub fn bulk_insert<K: AsRef<[u8]> + Sync>(&self, docs: &[(K, Signature)]) -> Result<()> {
        self.check_writable()?;
        self.check_may_store_signatures()?;
        for (key, sig) in docs {
            check_key(key.as_ref())?;
            self.check_signature(sig)?;
        }
        // Band keys and packed signatures on every core, into flat buffers, before any lock.
        let n = docs.len();
        let bands = self.params.lsh.bands;
        let mut band_keys = vec![0u64; n * bands];
        band_keys
            .par_chunks_mut(bands.max(1))
            .zip(docs.par_iter())
            .try_for_each(|(bk, (_, sig))| self.sketcher.band_keys_to_slice(sig, bk))?;
        let keys: Vec<&[u8]> = docs.iter().map(|(k, _)| k.as_ref()).collect();
        // The signatures are packed as the segment is built, on every core (they were checked
        // above, so packing cannot fail).
        let bits = self.params.bits;
        let pack = |i: usize, out: &mut [u8]| -> Result<()> {
            let (_, sig) = docs
                .get(i)
                .ok_or_else(|| Error::invalid("bulk", "record index out of range"))?;
            bbit::pack_into(sig.slots(), bits, out)
        };
        // In an index that stores sets, each signature brings its set, coded here.
        let mut sets = CodedSets::default();
        if self.params.store_sets {
            let coded: Vec<Vec<u8>> = docs
                .par_iter()
                .map(|(_, sig)| self.coded_set(sig).map(Option::unwrap_or_default))
                .collect::<Result<_>>()?;
            for c in &coded {
                sets.push(c);
            }
        }
        // In an index with per-document columns, the values each signature carries.
        let values: Vec<DocColumns> = docs
            .iter()
            .map(|(_, sig)| self.columns_to_store(sig))
            .collect::<Result<_>>()?;
        let values = if self.columns.any() {
            values
        } else {
            Vec::new()
        };
        let columns = Columns {
            sets: &sets,
            values: &values,
        };
        self.bulk_insert_prepared(&keys, &band_keys, Records::Lazy(&pack), columns)
    }

    /// The locked part of a bulk insert, on documents already banded: `band_keys` holds
    /// `bands` keys per document, `records` one packed signature per document, `columns`
    /// their optional per-document values.
    pub(super) fn bulk_insert_prepared(
        &self,
        keys: &[&[u8]],
        band_keys: &[u64],
        records: Records<'_>,
        columns: Columns<'_>,
    ) -> Result<()> {
        let n = keys.len();
        let bands = self.params.lsh.bands;
        self.check_prepared(n, band_keys, &records, columns)?;
        let superseded = superseded_in_batch(keys);
        let (_maint, _order) = self.lock_with_empty_memtable()?;
        self.check_writable()?;
        let base = self.state.read().mem.next_docno();
        // Stored copies of the batch's keys are deleted.
        let deleted_older = self.stored_copies(keys, &superseded)?;
        // A superseded copy keeps its number but is left out of the live documents, so its
        // record is never read (a segment stores the records of its live documents only).
        let mut live = Vec::with_capacity(n);
        for (i, (key, bk)) in keys
            .iter()
            .zip(band_keys.chunks_exact(bands.max(1)))
            .enumerate()
        {
            if !superseded.get(i).copied().unwrap_or(false) {
                live.push(LiveDoc {
                    docno: base + i as u64,
                    key,
                    band_keys: bk,
                    set: columns.sets.get(i),
                    columns: columns.values.get(i).cloned().unwrap_or_default(),
                });
            }
        }
        let input = NewDocs {
            base,
            span: n as u64,
            records,
            live,
            deleted_older,
        };
        let sig_bytes = self.params.sig_bytes();
        let result = self.publish_new_docs(&input, None, |state| {
            state.mem = MemTable::new(base + n as u64, bands, sig_bytes);
        });
        if let Err(e) = result {
            return self.fail(e);
        }
        drop(_order);
        drop(_maint);
        // Committed: what follows is upkeep.
        self.after_commit(self.upkeep())
    }

    /// Errors unless the prepared parts describe `n` documents.
    fn check_prepared(
        &self,
        n: usize,
        band_keys: &[u64],
        records: &Records<'_>,
        columns: Columns<'_>,
    ) -> Result<()> {
        let packed_len_ok = match records {
            Records::Packed(bytes) => bytes.len() == n * self.params.sig_bytes(),
            Records::Lazy(_) => true,
        };
        let sets_ok = columns.sets.len() == if self.params.store_sets { n } else { 0 };
        let values_ok = columns.values.len() == if self.columns.any() { n } else { 0 };
        if band_keys.len() != n * self.params.lsh.bands || !packed_len_ok || !sets_ok || !values_ok
        {
            return Err(Error::invalid(
                "bulk",
                "band keys and records do not match the documents",
            ));
        }
        Ok(())
    }

    /// The maintenance and sequencer locks, taken once the in-memory table is empty (flushed),
    /// so that a bulk insert's documents take the next numbers.
    fn lock_with_empty_memtable(&self) -> Result<(MutexGuard<'_, ()>, MutexGuard<'_, ()>)> {
        loop {
            self.flush()?;
            let maint = self.maintenance.lock();
            let order = self.sequencer.lock();
            if self.state.read().mem.is_empty() {
                return Ok((maint, order));
            }
        }
    }

    /// The docnos of the stored copies of `keys` (those not `superseded` later in the batch).
    fn stored_copies(&self, keys: &[&[u8]], superseded: &[bool]) -> Result<Vec<u64>> {
        let state = self.state.read();
        if state.version.segments.is_empty() {
            return Ok(Vec::new());
        }
        let found: Result<Vec<Option<u64>>> = keys
            .par_iter()
            .zip(superseded.par_iter())
            .filter(|(_, s)| !**s)
            .map(|(key, _)| state.lookup_key(key))
            .collect();
        Ok(found?.into_iter().flatten().collect())
    }
}

/// Which of `keys` a later copy in the same batch supersedes (within a batch the last copy of
/// a key wins): earlier copies are found by sorting key hashes (ties broken by position).
fn superseded_in_batch(keys: &[&[u8]]) -> Vec<bool> {
    let mut by_hash: Vec<(u64, u32)> = keys
        .par_iter()
        .enumerate()
        .map(|(i, k)| (xxhash_rust::xxh3::xxh3_64(k), i as u32))
        .collect();
    by_hash.par_sort_unstable();
    let mut superseded = vec![false; keys.len()];
    for run in by_hash.chunk_by(|a, b| a.0 == b.0).filter(|r| r.len() > 1) {
        for (j, &(_, i)) in run.iter().enumerate() {
            let key = keys.get(i as usize);
            let later = run
                .get(j + 1..)
                .unwrap_or_default()
                .iter()
                .any(|&(_, l)| keys.get(l as usize) == key);
            if later && let Some(s) = superseded.get_mut(i as usize) {
                *s = true;
            }
        }
    }
    superseded
}
