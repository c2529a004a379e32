//! The in-memory table of documents written since the last flush. The WAL makes it durable;
//! a flush turns it into a segment.
//!
//! Documents live in a few flat arrays (keys, band keys, signatures), so inserting one costs
//! no allocation of its own; buckets are chains threaded through those arrays.

use std::collections::{BTreeSet, HashMap};
use std::hash::{BuildHasherDefault, Hasher};

use rayon::prelude::*;
use xxhash_rust::xxh3::xxh3_64;

use crate::storage::segment::{DocColumns, KeepValue};

/// Band keys and key hashes are already uniformly distributed: hash them by identity.
#[derive(Default)]
pub(super) struct IdentityHasher(u64);

impl Hasher for IdentityHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8) | u64::from(b);
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = v;
    }
}

type IdMap<V> = HashMap<u64, V, BuildHasherDefault<IdentityHasher>>;

const NONE: u32 = u32::MAX;
/// A document without a set size (every stored size fits in a u32).
const NO_SET_SIZE: u64 = u64::MAX;

/// A borrowed view of one document.
#[derive(Clone, Debug)]
pub(super) struct DocRef<'a> {
    pub(super) key: &'a [u8],
    pub(super) band_keys: &'a [u64],
    pub(super) sig: &'a [u8],
    /// The coded shingle set (empty in an index that stores none).
    pub(super) set: &'a [u8],
    /// Its values of the index's per-document columns (each absent when it has none).
    pub(super) columns: DocColumns,
    pub(super) live: bool,
}

#[derive(Clone, Debug)]
pub(super) struct MemTable {
    /// Document number of the first document.
    pub(super) base: u64,
    bands: usize,
    sig_bytes: usize,
    key_bytes: Vec<u8>,
    key_ends: Vec<usize>,
    band_keys: Vec<u64>,
    sigs: Vec<u8>,
    /// Coded shingle sets, back to back (indexes that store sets), and where each ends.
    set_bytes: Vec<u8>,
    set_ends: Vec<usize>,
    /// Exact hashes, one per document: 0 for none (a stored hash is never 0).
    exact: Vec<u128>,
    /// Set sizes, one per document: [`NO_SET_SIZE`] for none.
    set_sizes: Vec<u64>,
    /// The size classes of the documents with a set size, as bits
    /// ([`class_bit`](crate::sketch::containment::class_bit)).
    pub(super) size_classes: u128,
    /// Keep values by document index, ascending (most indexes have none).
    keeps: Vec<(u32, KeepValue)>,
    live: Vec<bool>,
    /// Per band: band key → newest document index in the bucket.
    heads: Vec<IdMap<u32>>,
    /// Per (document, band): the next older document index in the same bucket.
    next_in_bucket: Vec<u32>,
    /// Key hash → newest document index with that hash; chains through `next_same_hash`.
    by_hash: IdMap<u32>,
    next_same_hash: Vec<u32>,
    live_count: usize,
    /// Deletions of documents numbered below `base` (in segments or a frozen table).
    pub(super) deleted_older: BTreeSet<u64>,
    /// Documents `indexed..` are not yet in the band buckets (see [`MemTable::defer_buckets`]).
    indexed: usize,
    deferred: bool,
}

impl MemTable {
    pub(super) fn new(base: u64, bands: usize, sig_bytes: usize) -> Self {
        MemTable {
            base,
            bands,
            sig_bytes,
            key_bytes: Vec::new(),
            key_ends: Vec::new(),
            band_keys: Vec::new(),
            sigs: Vec::new(),
            set_bytes: Vec::new(),
            set_ends: Vec::new(),
            exact: Vec::new(),
            set_sizes: Vec::new(),
            size_classes: 0,
            keeps: Vec::new(),
            live: Vec::new(),
            heads: (0..bands).map(|_| IdMap::default()).collect(),
            next_in_bucket: Vec::new(),
            by_hash: IdMap::default(),
            next_same_hash: Vec::new(),
            live_count: 0,
            deleted_older: BTreeSet::new(),
            indexed: 0,
            deferred: false,
        }
    }

    /// Makes room for `docs` more documents.
    pub(super) fn reserve(&mut self, docs: usize) {
        self.key_ends.reserve(docs);
        self.band_keys.reserve(docs * self.bands);
        self.sigs.reserve(docs * self.sig_bytes);
        self.set_ends.reserve(docs);
        self.exact.reserve(docs);
        self.set_sizes.reserve(docs);
        self.live.reserve(docs);
        self.next_same_hash.reserve(docs);
        self.by_hash.reserve(docs);
    }

    /// Until [`MemTable::build_deferred_buckets`], inserted documents are not threaded into
    /// the band buckets (keys, signatures and key lookups work as usual). Recovery uses this:
    /// it builds each band's buckets once at the end, all bands in parallel, with the hash
    /// tables sized in advance, instead of growing 14 tables one insert at a time.
    pub(super) fn defer_buckets(&mut self) {
        self.deferred = true;
    }

    /// Threads the documents inserted since [`MemTable::defer_buckets`] into the band
    /// buckets, as the inserts would have done one by one.
    pub(super) fn build_deferred_buckets(&mut self) {
        if !self.deferred {
            return;
        }
        self.deferred = false;
        let (from, to, bands) = (self.indexed, self.live.len(), self.bands);
        self.indexed = to;
        if from == to {
            return;
        }
        let band_keys = &self.band_keys;
        let mut heads = std::mem::take(&mut self.heads);
        // Per band, in document order: the bucket's previous head becomes the document's
        // successor, exactly as `insert` links them.
        let nexts: Vec<Vec<u32>> = heads
            .par_iter_mut()
            .enumerate()
            .map(|(band, head)| {
                head.reserve(to - from);
                band_keys
                    .iter()
                    .skip(from * bands + band)
                    .step_by(bands)
                    .take(to - from)
                    .zip(from as u32..)
                    .map(|(&bk, idx)| head.insert(bk, idx).unwrap_or(NONE))
                    .collect()
            })
            .collect();
        self.heads = heads;
        let mut columns: Vec<std::vec::IntoIter<u32>> =
            nexts.into_iter().map(Vec::into_iter).collect();
        self.next_in_bucket.reserve((to - from) * bands);
        for _ in from..to {
            for column in &mut columns {
                self.next_in_bucket.push(column.next().unwrap_or(NONE));
            }
        }
    }

    /// Documents (live or not) in the table.
    pub(super) fn len(&self) -> usize {
        self.live.len()
    }

    /// The next document number this table would assign.
    pub(super) fn next_docno(&self) -> u64 {
        self.base + self.live.len() as u64
    }

    pub(super) fn is_empty(&self) -> bool {
        self.live.is_empty() && self.deleted_older.is_empty()
    }

    pub(super) fn live_count(&self) -> usize {
        self.live_count
    }

    /// Approximate heap bytes, for the automatic flush trigger.
    pub(super) fn approx_bytes(&self) -> usize {
        self.key_bytes.len()
            + self.live.len() * (8 + 1 + 4 + 16 + 16)
            + self.band_keys.len() * (8 + 4 + 12)
            + self.sigs.len()
            + self.set_bytes.len()
            + self.set_ends.len() * 8
            + self.deleted_older.len() * 48
            + self.keeps.len() * 32
    }

    /// Appends a document (with its coded shingle set in an index that stores sets, and its
    /// column values). Returns `false` (and changes nothing) if `docno` is not the
    /// next number or the sizes do not match: during replay that means a corrupt WAL.
    pub(super) fn insert(
        &mut self,
        docno: u64,
        key: &[u8],
        band_keys: impl ExactSizeIterator<Item = u64>,
        sig: &[u8],
        (set, columns): (Option<&[u8]>, DocColumns),
    ) -> bool {
        if docno != self.next_docno()
            || band_keys.len() != self.bands
            || sig.len() != self.sig_bytes
        {
            return false;
        }
        // Inserting a key deletes an older copy (an upsert logs the delete first; this also
        // covers a log written without it).
        if let Some(old) = self.lookup_key(key) {
            self.mark_deleted(old);
        }
        let idx = self.live.len() as u32;
        if self.deferred {
            self.band_keys.extend(band_keys);
        } else {
            for (band, bk) in band_keys.enumerate() {
                self.band_keys.push(bk);
                let head = self.heads.get_mut(band).and_then(|h| h.insert(bk, idx));
                self.next_in_bucket.push(head.unwrap_or(NONE));
            }
            self.indexed = self.live.len() + 1;
        }
        let h = xxh3_64(key);
        let prev = self.by_hash.insert(h, idx);
        self.next_same_hash.push(prev.unwrap_or(NONE));
        self.key_bytes.extend_from_slice(key);
        self.key_ends.push(self.key_bytes.len());
        self.sigs.extend_from_slice(sig);
        self.set_bytes.extend_from_slice(set.unwrap_or_default());
        self.set_ends.push(self.set_bytes.len());
        self.exact.push(columns.exact.unwrap_or(0));
        self.set_sizes
            .push(columns.set_size.map_or(NO_SET_SIZE, u64::from));
        if let Some(size) = columns.set_size {
            self.size_classes |= crate::sketch::containment::class_bit(u64::from(size));
        }
        if let Some(v) = columns.keep {
            self.keeps.push((idx, v));
        }
        self.live.push(true);
        self.live_count += 1;
        true
    }

    /// Deletes document `docno` (here, or an older one by recording it).
    pub(super) fn mark_deleted(&mut self, docno: u64) {
        if docno < self.base {
            self.deleted_older.insert(docno);
        } else if let Some(live) = self.live.get_mut((docno - self.base) as usize)
            && *live
        {
            *live = false;
            self.live_count -= 1;
        }
    }

    /// The live document number of `key` in this table.
    pub(super) fn lookup_key(&self, key: &[u8]) -> Option<u64> {
        let mut idx = *self.by_hash.get(&xxh3_64(key))?;
        while idx != NONE {
            let i = idx as usize;
            if self.key(i) == key {
                // The newest document with this key decides.
                return self
                    .live
                    .get(i)
                    .copied()
                    .unwrap_or(false)
                    .then_some(self.base + i as u64);
            }
            idx = self.next_same_hash.get(i).copied().unwrap_or(NONE);
        }
        None
    }

    fn key(&self, i: usize) -> &[u8] {
        let start = if i == 0 {
            0
        } else {
            self.key_ends.get(i - 1).copied().unwrap_or(0)
        };
        let end = self.key_ends.get(i).copied().unwrap_or(start);
        self.key_bytes.get(start..end).unwrap_or_default()
    }

    pub(super) fn doc(&self, docno: u64) -> Option<DocRef<'_>> {
        let i = usize::try_from(docno.checked_sub(self.base)?).ok()?;
        let live = *self.live.get(i)?;
        Some(DocRef {
            key: self.key(i),
            band_keys: self
                .band_keys
                .get(i * self.bands..(i + 1) * self.bands)
                .unwrap_or_default(),
            sig: self
                .sigs
                .get(i * self.sig_bytes..(i + 1) * self.sig_bytes)
                .unwrap_or_default(),
            set: self.set(i),
            columns: DocColumns {
                exact: self.exact.get(i).copied().filter(|&h| h != 0),
                set_size: self.set_sizes.get(i).and_then(|&n| u32::try_from(n).ok()),
                keep: self.keep_at(i),
            },
            live,
        })
    }

    fn keep_at(&self, i: usize) -> Option<KeepValue> {
        let i = u32::try_from(i).ok()?;
        let at = self.keeps.binary_search_by_key(&i, |(n, _)| *n).ok()?;
        self.keeps.get(at).map(|(_, v)| v.clone())
    }

    fn set(&self, i: usize) -> &[u8] {
        let start = if i == 0 {
            0
        } else {
            self.set_ends.get(i - 1).copied().unwrap_or(0)
        };
        let end = self.set_ends.get(i).copied().unwrap_or(start);
        self.set_bytes.get(start..end).unwrap_or_default()
    }

    /// The coded shingle set of document `docno`, if this table holds it.
    pub(super) fn set_of(&self, docno: u64) -> Option<&[u8]> {
        let i = usize::try_from(docno.checked_sub(self.base)?).ok()?;
        (i < self.live.len()).then(|| self.set(i))
    }

    /// Appends the document numbers of one bucket to `out`.
    pub(super) fn bucket_into(&self, band: usize, band_key: u64, out: &mut Vec<u64>) {
        let Some(mut idx) = self.heads.get(band).and_then(|h| h.get(&band_key)).copied() else {
            return;
        };
        while idx != NONE {
            out.push(self.base + u64::from(idx));
            idx = self
                .next_in_bucket
                .get(idx as usize * self.bands + band)
                .copied()
                .unwrap_or(NONE);
        }
    }

    /// Every document in docno order.
    pub(super) fn docs(&self) -> impl Iterator<Item = (u64, DocRef<'_>)> {
        (0..self.live.len() as u64).filter_map(move |i| {
            let d = self.base + i;
            self.doc(d).map(|r| (d, r))
        })
    }

    /// Live documents in docno order.
    pub(super) fn live_docs(&self) -> impl Iterator<Item = (u64, DocRef<'_>)> {
        self.docs().filter(|(_, d)| d.live)
    }

    /// The packed signatures of every document, in docno order (dead ones included).
    pub(super) fn all_signatures(&self) -> &[u8] {
        &self.sigs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insert_lookup_delete_and_buckets() {
        let mut m = MemTable::new(10, 2, 4);
        assert!(m.insert(
            10,
            b"a",
            [1u64, 2].into_iter(),
            &[0; 4],
            (None, DocColumns::default())
        ));
        assert!(m.insert(
            11,
            b"b",
            [1u64, 3].into_iter(),
            &[1; 4],
            (None, DocColumns::default())
        ));
        assert!(
            !m.insert(
                13,
                b"c",
                [1u64, 3].into_iter(),
                &[1; 4],
                (None, DocColumns::default())
            ),
            "gap in numbering"
        );
        assert!(
            !m.insert(
                12,
                b"c",
                [1u64].into_iter(),
                &[1; 4],
                (None, DocColumns::default())
            ),
            "wrong band count"
        );
        let mut out = Vec::new();
        m.bucket_into(0, 1, &mut out);
        assert_eq!(out, vec![11, 10]);
        assert_eq!(m.lookup_key(b"b"), Some(11));
        // Re-inserting a key deletes the old copy.
        assert!(m.insert(
            12,
            b"a",
            [9u64, 9].into_iter(),
            &[2; 4],
            (None, DocColumns::default())
        ));
        assert_eq!(m.lookup_key(b"a"), Some(12));
        assert!(!m.doc(10).unwrap().live);
        assert_eq!(m.live_count(), 2);
        m.mark_deleted(5);
        assert!(m.deleted_older.contains(&5));
        m.mark_deleted(11);
        assert_eq!(m.lookup_key(b"b"), None);
        assert_eq!(m.live_docs().map(|(d, _)| d).collect::<Vec<_>>(), vec![12]);
    }

    /// Buckets built in one pass after deferred inserts (recovery) equal those built insert
    /// by insert, including keys re-inserted (upserts), inserts after the build, and bucket
    /// chains of every length.
    #[test]
    fn deferred_buckets_equal_incremental_ones() {
        let bands = 3;
        let docs: Vec<(Vec<u8>, Vec<u64>)> = (0..500u64)
            .map(|i| {
                let key = format!("k{}", (i * 7919) % 350).into_bytes(); // some keys repeat
                let bks = (0..bands as u64)
                    .map(|b| (i * 31 + b * 17) % 23 + b * 100)
                    .collect();
                (key, bks)
            })
            .collect();
        let mut plain = MemTable::new(7, bands, 2);
        let mut deferred = MemTable::new(7, bands, 2);
        deferred.reserve(100);
        deferred.defer_buckets();
        for (i, (key, bks)) in docs.iter().enumerate() {
            let docno = 7 + i as u64;
            let sig = [i as u8, 1];
            assert!(plain.insert(
                docno,
                key,
                bks.iter().copied(),
                &sig,
                (None, DocColumns::default())
            ));
            assert!(deferred.insert(
                docno,
                key,
                bks.iter().copied(),
                &sig,
                (None, DocColumns::default())
            ));
            if i == 399 {
                deferred.build_deferred_buckets();
            }
        }
        deferred.build_deferred_buckets(); // nothing deferred since: a no-op
        for band in 0..bands {
            for bk in 0..400u64 {
                let (mut a, mut b) = (Vec::new(), Vec::new());
                plain.bucket_into(band, bk, &mut a);
                deferred.bucket_into(band, bk, &mut b);
                assert_eq!(a, b, "band {band} key {bk}");
            }
        }
        for (key, _) in &docs {
            assert_eq!(plain.lookup_key(key), deferred.lookup_key(key));
        }
        assert_eq!(plain.live_count(), deferred.live_count());
        assert_eq!(plain.next_in_bucket, deferred.next_in_bucket);
    }
}
