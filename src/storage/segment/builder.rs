//! Building a new segment from documents given in docno order: [`SegmentBuilder`] collects
//! them and hands the per-band postings to the shared encoder ([`super::encode`]).

#![deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used)]

use super::columns::{ColumnSet, ColumnsBuilder, DocColumns};
use super::encode::{Draft, Encoded};
use super::format::band_key32;
use super::write::{FillRecord, Sink, Written};
use crate::storage::identity::FileIdentity;
use crate::{Error, Result};

/// Options shared by [`SegmentBuilder::finish`] and [`combine_segments`](super::combine_segments).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SegmentOptions {
    /// Keep at most this many documents per bucket (those whose keys hash lowest,
    /// [`cap_rank`](super::cap_rank)); `None` keeps all.
    pub bucket_cap: Option<u32>,
    /// Write a membership filter per band (BAND_FILTER sections), so that a lookup of a key
    /// the band lacks reads one cache line of the filter instead of the band's table. Only
    /// in a version-3 segment (one given an identity).
    pub band_filters: bool,
}

impl SegmentOptions {
    /// The header's `bucket_cap` field: 0 for no cap.
    pub(super) fn cap_field(&self) -> Result<u32> {
        match self.bucket_cap {
            None => Ok(0),
            Some(0) => Err(Error::invalid("bucket_cap", "must be at least 1 when set")),
            Some(c) => Ok(c),
        }
    }
}

/// Collects documents in docno order and encodes a segment.
///
/// ```
/// use mhdb::storage::segment::{Segment, SegmentBuilder, SegmentOptions};
///
/// let mut b = SegmentBuilder::new(2, 100)?;
/// b.add(100, b"https://a.example/", &[0xAAAA_0000_0000_0001, 7 << 32])?;
/// b.add(102, b"https://b.example/", &[0xBBBB_0000_0000_0000, 7 << 32])?;
/// let bytes = b.finish(&SegmentOptions::default())?;
///
/// let seg = Segment::open(bytes, "seg-1.bands")?;
/// seg.verify()?;
/// assert_eq!(seg.find_key(b"https://b.example/")?, Some(102));
/// let docs = seg.postings(1, 7 << 32)?.collect::<Result<Vec<u64>, _>>()?;
/// assert_eq!(docs, [100, 102]);
/// # Ok::<(), mhdb::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct SegmentBuilder {
    num_bands: usize,
    base: u64,
    end: Option<u64>,
    docnos: Vec<u64>,
    key_blob: Vec<u8>,
    key_ends: Vec<u64>,
    /// Doc-major: `key32s[doc * num_bands + band]`.
    key32s: Vec<u32>,
    record_bytes: u32,
    /// Packed signatures, `record_bytes` each, in docno order.
    signatures: Vec<u8>,
    /// The documents' coded shingle sets, when the segment stores them.
    sets: Option<SetsBuffer>,
    /// The documents' per-document column values, when the segment has such columns.
    columns: ColumnsBuilder,
}

/// A SHINGLES section being built: where each coded set ends, and the sets back to back.
#[derive(Clone, Debug, Default)]
struct SetsBuffer {
    ends: Vec<u64>,
    data: Vec<u8>,
}

impl SegmentBuilder {
    /// A builder for a segment of `num_bands` bands whose docno range starts at `base_docno`.
    pub fn new(num_bands: usize, base_docno: u64) -> Result<Self> {
        if num_bands == 0 || num_bands > u32::MAX as usize - 4 {
            return Err(Error::invalid(
                "num_bands",
                format!("must be in 1..2^32 − 4, got {num_bands}"),
            ));
        }
        Ok(SegmentBuilder {
            num_bands,
            base: base_docno,
            end: None,
            docnos: Vec::new(),
            key_blob: Vec::new(),
            key_ends: Vec::new(),
            key32s: Vec::new(),
            record_bytes: 0,
            signatures: Vec::new(),
            sets: None,
            columns: ColumnsBuilder::default(),
        })
    }

    /// This builder with the per-document `columns` (a version-3 segment only): every
    /// document added must then get its values, or none, in order, with
    /// [`SegmentBuilder::add_columns`].
    pub fn with_columns(mut self, columns: ColumnSet) -> Self {
        self.columns = ColumnsBuilder::new(columns);
        self
    }

    /// [`SegmentBuilder::with_columns`] with the EXACT_HASH column alone.
    pub fn with_exact_hashes(self) -> Self {
        self.with_columns(ColumnSet {
            exact: true,
            ..ColumnSet::default()
        })
    }

    /// Gives the column values (each present or not) of the next document that has none
    /// given yet, in the order documents were added.
    pub fn add_columns(&mut self, values: DocColumns) -> Result<()> {
        let docs = self.docnos.len();
        if !self.columns.set().any() {
            return Err(Error::invalid(
                "columns",
                "this segment builder has no per-document columns (see with_columns)",
            ));
        }
        if self.columns.rows() >= docs {
            return Err(Error::invalid(
                "columns",
                format!("column values for each of the {docs} documents are given already"),
            ));
        }
        self.columns.push(&values);
        Ok(())
    }

    /// [`SegmentBuilder::add_columns`] with an exact hash alone.
    pub fn add_exact_hash(&mut self, hash: Option<u128>) -> Result<()> {
        self.add_columns(DocColumns {
            exact: hash,
            ..DocColumns::default()
        })
    }

    /// This builder storing each document's coded shingle set too (a SHINGLES section):
    /// every document added must then get its set, in order, with
    /// [`SegmentBuilder::add_set`].
    pub fn with_sets(mut self) -> Self {
        self.sets = Some(SetsBuffer::default());
        self
    }

    /// Gives the coded shingle set ([`crate::storage::shingle_codec::encode`]) of the next
    /// document that has none yet, in the order documents were added.
    pub fn add_set(&mut self, coded: &[u8]) -> Result<()> {
        let docs = self.docnos.len();
        let Some(sets) = &mut self.sets else {
            return Err(Error::invalid(
                "set",
                "this segment builder stores no shingle sets (see with_sets)",
            ));
        };
        if sets.ends.len() >= docs {
            return Err(Error::invalid(
                "set",
                format!("a shingle set for each of the {docs} documents is given already"),
            ));
        }
        sets.data.extend_from_slice(coded);
        sets.ends.push(sets.data.len() as u64);
        Ok(())
    }

    /// A builder whose documents each carry a packed signature of `record_bytes` bytes
    /// ([`SegmentBuilder::add_signed`]), stored in the segment's SIGNATURES section.
    pub fn with_signatures(num_bands: usize, base_docno: u64, record_bytes: usize) -> Result<Self> {
        let record_bytes = u32::try_from(record_bytes)
            .ok()
            .filter(|&r| r > 0 && r <= 1 << 20)
            .ok_or_else(|| Error::invalid("record_bytes", "must be in 1..=1 MiB"))?;
        Ok(SegmentBuilder {
            record_bytes,
            ..Self::new(num_bands, base_docno)?
        })
    }

    /// Declares the end (exclusive) of the docno range, when it extends past the last document
    /// added (e.g. the last documents were deleted before the flush). By default the range ends
    /// right after the last document.
    pub fn set_end_docno(&mut self, end_docno: u64) -> Result<()> {
        if end_docno < self.base || self.docnos.last().is_some_and(|&d| d >= end_docno) {
            return Err(Error::invalid(
                "end_docno",
                format!(
                    "{end_docno} does not cover the documents added from {}",
                    self.base
                ),
            ));
        }
        self.end = Some(end_docno);
        Ok(())
    }

    /// Makes room for `docs` more documents whose keys total `key_bytes`, so that adding
    /// them does not grow (and copy) the buffers step by step.
    pub fn reserve(&mut self, docs: usize, key_bytes: usize) {
        self.docnos.reserve(docs);
        self.key_ends.reserve(docs);
        self.key_blob.reserve(key_bytes);
        self.key32s.reserve(docs.saturating_mul(self.num_bands));
        self.signatures
            .reserve(docs.saturating_mul(self.record_bytes as usize));
    }

    /// Number of documents added so far.
    pub fn doc_count(&self) -> usize {
        self.docnos.len()
    }

    /// Adds a document: to a builder made by [`SegmentBuilder::new`] (no signatures), or one
    /// whose signatures come all at once ([`SegmentBuilder::set_signatures`]). Docnos
    /// must be strictly increasing and at least the base; `band_keys` holds one full band key
    /// per band (only their top 32 bits are stored).
    pub fn add(&mut self, docno: u64, key: &[u8], band_keys: &[u64]) -> Result<()> {
        self.add_document(docno, key, band_keys)
    }

    /// Adds a document with its packed signature (`record_bytes` bytes, as given to
    /// [`SegmentBuilder::with_signatures`]; empty for a builder without signatures).
    pub fn add_signed(
        &mut self,
        docno: u64,
        key: &[u8],
        band_keys: &[u64],
        signature: &[u8],
    ) -> Result<()> {
        if signature.len() != self.record_bytes as usize {
            return Err(Error::invalid(
                "signature",
                format!(
                    "{} bytes, the segment stores {}",
                    signature.len(),
                    self.record_bytes
                ),
            ));
        }
        self.add_document(docno, key, band_keys)?;
        self.signatures.extend_from_slice(signature);
        Ok(())
    }

    fn add_document(&mut self, docno: u64, key: &[u8], band_keys: &[u64]) -> Result<()> {
        if docno < self.base || self.docnos.last().is_some_and(|&d| d >= docno) {
            return Err(Error::invalid(
                "docno",
                format!("{docno} is below the base or not above the previous document"),
            ));
        }
        if self.end.is_some_and(|e| docno >= e) {
            return Err(Error::invalid(
                "docno",
                format!("{docno} is past the end docno"),
            ));
        }
        if docno == u64::MAX {
            return Err(Error::invalid("docno", "u64::MAX is not a valid docno"));
        }
        if band_keys.len() != self.num_bands {
            return Err(Error::invalid(
                "band_keys",
                format!("got {} keys for {} bands", band_keys.len(), self.num_bands),
            ));
        }
        if self.docnos.len() >= u32::MAX as usize {
            return Err(Error::invalid("segment", "more than 2^32 − 1 documents"));
        }
        self.docnos.push(docno);
        self.key_blob.extend_from_slice(key);
        self.key_ends.push(self.key_blob.len() as u64);
        self.key32s.extend(band_keys.iter().map(|&k| band_key32(k)));
        Ok(())
    }

    /// Gives every document's packed signature at once, in the order the documents were
    /// added with [`SegmentBuilder::add`] (`record_bytes` each, as given to
    /// [`SegmentBuilder::with_signatures`]): spares a copy when the caller has them in one
    /// buffer already.
    pub fn set_signatures(&mut self, packed: Vec<u8>) -> Result<()> {
        if packed.len() != self.docnos.len() * self.record_bytes as usize {
            return Err(Error::invalid(
                "signatures",
                format!(
                    "{} bytes for {} documents of {} bytes",
                    packed.len(),
                    self.docnos.len(),
                    self.record_bytes
                ),
            ));
        }
        self.signatures = packed;
        Ok(())
    }

    /// Encodes the segment.
    pub fn finish(self, opts: &SegmentOptions) -> Result<Vec<u8>> {
        Ok(self.finish_parts(opts)?.into_vec())
    }

    /// Encodes the segment as three parts to write one after another, without copying the
    /// signatures into the file's bytes (most of a segment, when its signatures are wide).
    /// A version-2 segment, without an identity: see [`SegmentBuilder::finish_parts_as`].
    pub fn finish_parts(self, opts: &SegmentOptions) -> Result<SegmentParts> {
        self.finish_parts_as(opts, None)
    }

    /// [`SegmentBuilder::finish_parts`] for the file `identity` names: with `Some`, a
    /// version-3 segment carrying the database's identity and the file's number (the `<id>`
    /// of the name it will be written under); with `None`, exactly the version-2 bytes.
    pub fn finish_parts_as(
        mut self,
        opts: &SegmentOptions,
        identity: Option<FileIdentity>,
    ) -> Result<SegmentParts> {
        let signatures = std::mem::take(&mut self.signatures);
        self.encode_as(opts, identity)?.into_parts(signatures)
    }

    /// [`SegmentBuilder::finish_parts_as`] written to `sink` in file order instead, each
    /// document's signature made by `fill` on the way ([`Encoded::write`]): for a builder
    /// given none.
    pub(crate) fn write_as(
        self,
        opts: &SegmentOptions,
        identity: Option<FileIdentity>,
        fill: &FillRecord<'_>,
        sink: &mut Sink<'_>,
    ) -> Result<Written> {
        if !self.signatures.is_empty() {
            return Err(Error::invalid(
                "signatures",
                "the builder holds signatures and was given a way to make them",
            ));
        }
        self.encode_as(opts, identity)?.write(fill, sink)
    }

    /// The segment encoded up to its signatures.
    fn encode_as(&self, opts: &SegmentOptions, identity: Option<FileIdentity>) -> Result<Encoded> {
        let cap = opts.cap_field()?;
        let end = match (self.end, self.docnos.last()) {
            (Some(e), _) => e,
            (None, Some(&last)) => last + 1,
            (None, None) => self.base,
        };
        let sets = match &self.sets {
            Some(sets) if sets.ends.len() != self.docnos.len() => {
                return Err(Error::invalid(
                    "sets",
                    format!(
                        "{} shingle sets for {} documents",
                        sets.ends.len(),
                        self.docnos.len()
                    ),
                ));
            }
            Some(sets) => Some(super::encode::sets_section(&sets.ends, &sets.data)),
            None => None,
        };
        if self.columns.set().any() && self.columns.rows() != self.docnos.len() {
            return Err(Error::invalid(
                "columns",
                format!(
                    "column values for {} of {} documents",
                    self.columns.rows(),
                    self.docnos.len()
                ),
            ));
        }
        let columns = self.columns.sections();
        let nb = self.num_bands;
        let docnos = &self.docnos;
        let key32s = &self.key32s;
        let draft = Draft {
            num_bands: nb as u32,
            base: self.base,
            span: end - self.base,
            cap,
            docnos,
            key_blob: &self.key_blob,
            key_ends: &self.key_ends,
            record_bytes: self.record_bytes,
            sets: sets.as_deref(),
            columns: &columns,
            band_filters: opts.band_filters,
            sorted_runs: false,
            identity,
        };
        draft.encode(|band| {
            let postings = docnos
                .iter()
                .enumerate()
                .map(|(i, &d)| {
                    let k = key32s.get(i * nb + band).copied().unwrap_or_default();
                    (k, d)
                })
                .collect();
            Ok((postings, Vec::new()))
        })
    }
}

/// An encoded segment as the three parts of its file, in order: the bytes before the
/// SIGNATURES section, the signatures, and the rest.
#[derive(Clone, Debug)]
pub struct SegmentParts {
    /// File bytes from offset 0 up to the SIGNATURES section.
    pub head: Vec<u8>,
    /// The SIGNATURES section.
    pub signatures: Vec<u8>,
    /// CHECKSUMS, the section table and the footer.
    pub tail: Vec<u8>,
    /// The footer's metadata checksum ([`Segment::meta_crc`](super::Segment::meta_crc)), which
    /// a version-3 manifest records.
    pub meta_crc: u32,
    /// The documents the segment holds.
    pub doc_count: u64,
}

impl SegmentParts {
    /// The file's length.
    pub fn len(&self) -> usize {
        self.head.len() + self.signatures.len() + self.tail.len()
    }

    /// Never true: a segment has at least a header and a footer.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The parts in file order.
    pub fn parts(&self) -> [&[u8]; 3] {
        [&self.head, &self.signatures, &self.tail]
    }

    /// The file's bytes in one buffer.
    pub fn into_vec(self) -> Vec<u8> {
        let mut out = self.head;
        out.reserve(self.signatures.len() + self.tail.len());
        out.extend_from_slice(&self.signatures);
        out.extend_from_slice(&self.tail);
        out
    }
}
