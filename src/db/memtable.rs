//! The in-memory table of documents written since the last flush. The WAL makes it durable;
//! a flush turns it into a segment plus signature-log records.

use std::collections::{BTreeSet, HashMap};

use super::batch::LogOp;

/// One document held in memory.
#[derive(Debug)]
pub(crate) struct MemDoc {
    pub(crate) key: Box<[u8]>,
    pub(crate) band_keys: Box<[u64]>,
    pub(crate) sig: Box<[u8]>,
    pub(crate) live: bool,
}

#[derive(Debug)]
pub(crate) struct MemTable {
    /// Document number of `docs[0]`.
    pub(crate) base: u64,
    pub(crate) docs: Vec<MemDoc>,
    /// Live documents by key.
    by_key: HashMap<Box<[u8]>, u64>,
    /// Per band: band key → document numbers (including ones deleted since).
    buckets: Vec<HashMap<u64, Vec<u64>>>,
    /// Deletions of documents numbered below `base` (in segments or a frozen table).
    pub(crate) deleted_older: BTreeSet<u64>,
    /// Rough heap bytes, for the automatic flush trigger.
    pub(crate) approx_bytes: usize,
}

impl MemTable {
    pub(crate) fn new(base: u64, bands: usize) -> Self {
        MemTable {
            base,
            docs: Vec::new(),
            by_key: HashMap::new(),
            buckets: (0..bands).map(|_| HashMap::new()).collect(),
            deleted_older: BTreeSet::new(),
            approx_bytes: 0,
        }
    }

    /// The next document number this table would assign.
    pub(crate) fn next_docno(&self) -> u64 {
        self.base + self.docs.len() as u64
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.docs.is_empty() && self.deleted_older.is_empty()
    }

    pub(crate) fn live_count(&self) -> usize {
        self.by_key.len()
    }

    /// Applies one logged operation. Returns `false` if it does not fit (an insert whose docno
    /// is not the next one): the caller treats that as corruption during replay.
    pub(crate) fn apply(&mut self, op: LogOp) -> bool {
        match op {
            LogOp::Insert {
                docno,
                key,
                band_keys,
                sig,
            } => {
                if docno != self.next_docno() || band_keys.len() != self.buckets.len() {
                    return false;
                }
                for (bucket, &bk) in self.buckets.iter_mut().zip(band_keys.iter()) {
                    bucket.entry(bk).or_default().push(docno);
                }
                self.approx_bytes += key.len() * 2 + band_keys.len() * 40 + sig.len() + 96;
                if let Some(old) = self.by_key.insert(key.clone(), docno) {
                    // An upsert logs the delete first; a replayed log without it would leave
                    // two live copies, so retire the old one here too.
                    self.retire(old);
                }
                self.docs.push(MemDoc {
                    key,
                    band_keys,
                    sig,
                    live: true,
                });
                true
            }
            LogOp::Delete { docno } => {
                self.retire(docno);
                true
            }
        }
    }

    fn retire(&mut self, docno: u64) {
        if docno < self.base {
            self.approx_bytes += 48;
            self.deleted_older.insert(docno);
        } else if let Some(doc) = self.docs.get_mut((docno - self.base) as usize)
            && doc.live
        {
            doc.live = false;
            if self.by_key.get(&doc.key) == Some(&docno) {
                self.by_key.remove(&doc.key);
            }
        }
    }

    pub(crate) fn lookup_key(&self, key: &[u8]) -> Option<u64> {
        self.by_key.get(key).copied()
    }

    pub(crate) fn doc(&self, docno: u64) -> Option<&MemDoc> {
        docno
            .checked_sub(self.base)
            .and_then(|i| self.docs.get(i as usize))
    }

    pub(crate) fn bucket(&self, band: usize, band_key: u64) -> &[u64] {
        self.buckets
            .get(band)
            .and_then(|b| b.get(&band_key))
            .map_or(&[], |v| v.as_slice())
    }

    /// Live documents in docno order.
    pub(crate) fn live_docs(&self) -> impl Iterator<Item = (u64, &MemDoc)> {
        self.docs
            .iter()
            .enumerate()
            .filter(|(_, d)| d.live)
            .map(|(i, d)| (self.base + i as u64, d))
    }
}
