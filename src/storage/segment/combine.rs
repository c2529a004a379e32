//! Combining several segments into one, the segment-level step of compaction: the live
//! documents of the inputs, with their stored band keys, re-encoded as one segment.
//!
//! Named "combine" because "merge" already means three other things in mhdb (`Db::merge_from`,
//! which imports another database; the CLI `merge` command; `PartialSketch::merge`).

#![deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used)]

use super::builder::{SegmentOptions, SegmentParts};
use super::columns::ColumnsBuilder;
use super::encode::{Draft, Encoded};
use super::reader::Segment;
use super::write::{Sink, Written, fill_records};
use crate::storage::identity::FileIdentity;
use crate::{Error, Result};

/// Combines segments with disjoint docno ranges, given oldest first, into one new segment
/// covering `[inputs[0].base, inputs[last].end)` (compaction's step; `format/segment.md` calls
/// it a merge). Documents for which `is_live(docno)` is false are dropped, with their
/// signatures (that is how compaction reclaims a deleted document's bytes); bucket caps of
/// `opts` are re-applied over the surviving documents. Every input's section checksums are
/// [checked](Segment::verify_checksums) first, so corruption is never copied into a fresh
/// checksum.
///
/// Documents an input dropped because of a cap stay dropped; their count is carried into the
/// hot record of the combined bucket (see `format/segment.md`).
///
/// When no input was capped, the result is byte for byte what
/// [`SegmentBuilder`](super::SegmentBuilder) writes for the surviving documents with the same
/// options.
///
/// The result is a version-2 segment, without an identity: see [`combine_segments_as`].
pub fn combine_segments<B: AsRef<[u8]> + Sync>(
    inputs: &[&Segment<B>],
    is_live: impl Fn(u64) -> bool + Sync,
    opts: &SegmentOptions,
) -> Result<Vec<u8>> {
    Ok(combine_segments_as(inputs, is_live, opts, None)?.into_vec())
}

/// [`combine_segments`] into the file `identity` names: with `Some`, a version-3 segment
/// carrying the database's identity and the file's number; with `None`, a version-2 one. The
/// result comes in parts, with its metadata checksum, as
/// [`SegmentBuilder::finish_parts_as`](super::SegmentBuilder::finish_parts_as) gives them.
pub fn combine_segments_as<B: AsRef<[u8]> + Sync>(
    inputs: &[&Segment<B>],
    is_live: impl Fn(u64) -> bool + Sync,
    opts: &SegmentOptions,
    identity: Option<FileIdentity>,
) -> Result<SegmentParts> {
    let (encoded, live) = encode_combined(inputs, &is_live, opts, identity)?;
    let record_bytes = encoded.record_bytes();
    let mut signatures = vec![0u8; live.docnos.len().saturating_mul(record_bytes)];
    let fill = |i: usize, out: &mut [u8]| live.signature_into(inputs, i, out);
    fill_records(&fill, record_bytes, 0, &mut signatures)?;
    encoded.into_parts(signatures)
}

/// [`combine_segments_as`] written to `sink` in file order instead, each live document's
/// signature copied from its input on the way (compaction's path: the signatures, most of the
/// file, are read from the inputs' mappings once and never held in memory).
pub(crate) fn combine_segments_write<B: AsRef<[u8]> + Sync>(
    inputs: &[&Segment<B>],
    is_live: impl Fn(u64) -> bool + Sync,
    opts: &SegmentOptions,
    identity: Option<FileIdentity>,
    sink: &mut Sink<'_>,
) -> Result<Written> {
    let (encoded, live) = encode_combined(inputs, &is_live, opts, identity)?;
    let fill = |i: usize, out: &mut [u8]| live.signature_into(inputs, i, out);
    encoded.write(&fill, sink)
}

/// The combined segment encoded up to its signatures, and the live documents it holds.
fn encode_combined<B: AsRef<[u8]> + Sync>(
    inputs: &[&Segment<B>],
    is_live: &(impl Fn(u64) -> bool + Sync),
    opts: &SegmentOptions,
    identity: Option<FileIdentity>,
) -> Result<(Encoded, Live)> {
    let cap = opts.cap_field()?;
    let (first, last) = check_inputs(inputs)?;
    let live = Live::gather(inputs, is_live)?;
    let sets = first
        .stores_sets()
        .then(|| super::encode::sets_section(&live.set_ends, &live.set_data));
    let columns = live.columns.sections();
    if live.docnos.len() > u32::MAX as usize {
        return Err(Error::invalid(
            "inputs",
            "more than 2^32 − 1 live documents",
        ));
    }
    let draft = Draft {
        num_bands: first.num_bands() as u32,
        base: first.base_docno(),
        span: last.end_docno() - first.base_docno(),
        cap,
        docnos: &live.docnos,
        key_blob: &live.key_blob,
        key_ends: &live.key_ends,
        record_bytes: first.record_bytes() as u32,
        sets: sets.as_deref(),
        columns: &columns,
        band_filters: opts.band_filters,
        sorted_runs: true,
        identity,
    };
    let prior_hot_by_band = prior_hot_by_band(inputs)?;
    let encoded = draft.encode(|band| {
        let postings = live_postings(inputs, band, is_live)?;
        let prior_hot = prior_hot_by_band.get(band).cloned().unwrap_or_default();
        Ok((postings, prior_hot))
    })?;
    Ok((encoded, live))
}

/// The first and last of `inputs`, once they are checked to agree in band count, signature
/// size and stored sets, to be given oldest first with disjoint docno ranges, and to match
/// their section checksums.
fn check_inputs<'s, B: AsRef<[u8]>>(
    inputs: &[&'s Segment<B>],
) -> Result<(&'s Segment<B>, &'s Segment<B>)> {
    let (first, last) = match (inputs.first(), inputs.last()) {
        (Some(f), Some(l)) => (*f, *l),
        _ => return Err(Error::invalid("inputs", "merge needs at least one segment")),
    };
    let mut prev_end = first.base_docno();
    for s in inputs {
        if s.num_bands() != first.num_bands()
            || s.record_bytes() != first.record_bytes()
            || s.stores_sets() != first.stores_sets()
            || s.columns() != first.columns()
        {
            return Err(Error::invalid(
                "inputs",
                "segments have different band counts, signature sizes, stored sets or columns",
            ));
        }
        if s.base_docno() < prev_end {
            return Err(Error::invalid(
                "inputs",
                "segments must be given oldest first with disjoint docno ranges",
            ));
        }
        prev_end = s.end_docno();
        // Checksums, so that damage is never laundered into a new segment with fresh ones.
        // (The structure was checked when the segment was written; what this decodes it
        // checks again as it goes. `mhdb verify` runs the full check.)
        s.verify_checksums()?;
    }
    Ok((first, last))
}

/// The live documents of the inputs, in docno order: what the combined segment stores per
/// document.
struct Live {
    docnos: Vec<u64>,
    key_blob: Vec<u8>,
    key_ends: Vec<u64>,
    /// Where the live rows' signatures are: runs of consecutive live rows of one input, in
    /// the order of `docnos`.
    signature_runs: Vec<SignatureRun>,
    /// Where each live row's coded set ends in `set_data` (when the inputs store sets).
    set_ends: Vec<u64>,
    set_data: Vec<u8>,
    /// The live rows' per-document column values (when the inputs have columns).
    columns: ColumnsBuilder,
}

impl Live {
    fn gather<B: AsRef<[u8]>>(
        inputs: &[&Segment<B>],
        is_live: &impl Fn(u64) -> bool,
    ) -> Result<Self> {
        let mut live = Live {
            docnos: Vec::new(),
            key_blob: Vec::new(),
            key_ends: Vec::new(),
            signature_runs: Vec::new(),
            set_ends: Vec::new(),
            set_data: Vec::new(),
            columns: ColumnsBuilder::new(inputs.first().map(|s| s.columns()).unwrap_or_default()),
        };
        // Sized for every input row, dead ones included (an upper bound).
        let docs: usize = inputs.iter().map(|s| s.doc_count() as usize).sum();
        live.docnos.reserve(docs);
        live.key_ends.reserve(docs);
        let mut scratch = Vec::new();
        for (input, s) in inputs.iter().enumerate() {
            for (row, doc) in s.docs().enumerate() {
                let row = row as u64;
                s.read_ahead_rows(row);
                let (docno, key) = doc?;
                if !is_live(docno) {
                    continue;
                }
                live.note_signature(input, row);
                live.docnos.push(docno);
                live.key_blob.extend_from_slice(key);
                live.key_ends.push(live.key_blob.len() as u64);
                if s.stores_sets() {
                    // Decoded as a check: a set that does not decode is refused, like a
                    // damaged signature, never copied on under fresh checksums.
                    live.set_data
                        .extend_from_slice(s.checked_set_at(row, &mut scratch)?);
                    live.set_ends.push(live.set_data.len() as u64);
                }
                if live.columns.set().any() {
                    live.columns.push(&s.columns_at(row)?);
                }
            }
        }
        Ok(live)
    }

    /// Notes that the next live document's signature is row `row` of input `input`.
    fn note_signature(&mut self, input: usize, row: u64) {
        let ordinal = self.docnos.len();
        if let Some(run) = self.signature_runs.last_mut()
            && run.input == input
            && run.first_row + (ordinal - run.first_ordinal) as u64 == row
        {
            return;
        }
        self.signature_runs.push(SignatureRun {
            first_ordinal: ordinal,
            input,
            first_row: row,
        });
    }

    /// Copies the signature of the `ordinal`-th live document from its input into `out`
    /// (checked as [`Segment::signature_at`] checks it).
    fn signature_into<B: AsRef<[u8]>>(
        &self,
        inputs: &[&Segment<B>],
        ordinal: usize,
        out: &mut [u8],
    ) -> Result<()> {
        let at = self
            .signature_runs
            .partition_point(|r| r.first_ordinal <= ordinal);
        let run = at
            .checked_sub(1)
            .and_then(|i| self.signature_runs.get(i))
            .filter(|_| ordinal < self.docnos.len())
            .ok_or_else(|| Error::invalid("ordinal", format!("no live document {ordinal}")))?;
        let input = inputs
            .get(run.input)
            .ok_or_else(|| Error::invalid("inputs", "a signature's input is gone"))?;
        let row = run.first_row + (ordinal - run.first_ordinal) as u64;
        input.read_ahead_rows(row);
        let signature = input.signature_at(row)?;
        if signature.len() != out.len() {
            return Err(Error::invalid(
                "signatures",
                format!("{} bytes for a record of {}", signature.len(), out.len()),
            ));
        }
        out.copy_from_slice(signature);
        Ok(())
    }
}

/// Consecutive live documents whose signatures are consecutive rows of one input.
struct SignatureRun {
    /// The first document's ordinal in the combined segment.
    first_ordinal: usize,
    /// Which input.
    input: usize,
    /// The first document's row in that input.
    first_row: u64,
}

/// Buckets already hot in the inputs, per band: (key32, documents dropped by earlier caps).
fn prior_hot_by_band<B: AsRef<[u8]>>(inputs: &[&Segment<B>]) -> Result<Vec<Vec<(u32, u64)>>> {
    let num_bands = inputs.first().map_or(0, |s| s.num_bands());
    let mut by_band: Vec<Vec<(u32, u64)>> = vec![Vec::new(); num_bands];
    for s in inputs {
        for h in s.hot_buckets() {
            let h = h?;
            let t = *s.band_table(h.band as usize)?;
            let (lo, hi) = s.lookup(&t, h.key32)?;
            if let Some(list) = by_band.get_mut(h.band as usize) {
                list.push((h.key32, h.original_size.saturating_sub(hi - lo)));
            }
        }
    }
    Ok(by_band)
}

/// The postings `(key32, docno)` of `band` of the inputs' live documents, one sorted run per
/// input.
fn live_postings<B: AsRef<[u8]>>(
    inputs: &[&Segment<B>],
    band: usize,
    is_live: &impl Fn(u64) -> bool,
) -> Result<Vec<(u32, u64)>> {
    let total: u64 = inputs.iter().filter_map(|s| s.band_postings(band)).sum();
    let mut postings = Vec::with_capacity(usize::try_from(total).unwrap_or(0));
    for s in inputs {
        let t = *s.band_table(band)?;
        s.for_each_entry(&t, |_, key, rel| {
            let docno = s.base_docno() + rel;
            if is_live(docno) {
                postings.push((key, docno));
            }
            Ok(())
        })?;
    }
    Ok(postings)
}
