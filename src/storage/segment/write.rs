//! Writing an encoded segment to its file in file order, the signatures produced on the way a
//! piece at a time. A bulk insert's signatures are most of its segment: packing them into a
//! buffer of their own first would cost that buffer's memory, its page faults and one more
//! pass over it; a piece is packed while the one before it is checksummed and written.

#![deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used)]

use rayon::prelude::*;

use super::checksums::BlockCrcs;
use super::encode::Encoded;
use crate::Result;

/// Where a segment's bytes go: `sink(bytes, offset)`, called with increasing offsets that
/// leave no gap (a file, or memory).
pub(crate) type Sink<'a> = dyn FnMut(&[u8], u64) -> Result<()> + Send + 'a;

/// `fill(ordinal, record)` writes the packed signature of the segment's `ordinal`-th document
/// (in docno order) into `record`, `record_bytes` long.
pub(crate) type FillRecord<'a> = dyn Fn(usize, &mut [u8]) -> Result<()> + Sync + 'a;

/// Signature bytes made and handed to the sink at a time (at least one record): large enough
/// that a call costs nothing, small enough that a piece is still in the cache when it is
/// checksummed and copied to the file.
const PIECE: usize = 4 << 20;

/// Records packed by one task.
const RECORDS_PER_TASK: usize = 256;

/// A segment written by [`Encoded::write`].
#[derive(Clone, Copy, Debug)]
pub(crate) struct Written {
    /// The file's length.
    pub(crate) len: u64,
    /// The footer's metadata checksum.
    pub(crate) meta_crc: u32,
    /// The documents the segment holds.
    pub(crate) doc_count: u64,
}

impl Encoded {
    /// Writes the file to `sink`: the head, the signatures as `fill` makes them (checksummed on
    /// the way), then CHECKSUMS, the table and footer. The bytes are those of
    /// [`Encoded::into_parts`] given the same signatures.
    pub(super) fn write(self, fill: &FillRecord<'_>, sink: &mut Sink<'_>) -> Result<Written> {
        let record_bytes = self.record_bytes();
        let count = usize::try_from(self.doc_count()).unwrap_or(usize::MAX);
        let mut blocks = BlockCrcs::new(self.header_len());
        let head = self.head();
        let ((), written) = rayon::join(
            || blocks.update(head.get(self.header_len()..).unwrap_or_default()),
            || sink(head, 0),
        );
        written?;
        let mut crc = crc32fast::Hasher::new();
        let signatures = Signatures {
            fill,
            record_bytes,
            count,
        };
        let at = signatures.stream(head.len() as u64, &mut crc, &mut blocks, sink)?;
        let doc_count = self.doc_count();
        let (_, tail, meta_crc) = self.finish(record_bytes * count, crc.finalize(), blocks);
        sink(&tail, at)?;
        Ok(Written {
            len: at + tail.len() as u64,
            meta_crc,
            doc_count,
        })
    }
}

/// Fills `out` with the records of ordinals `first..` as `fill` makes them (`record_bytes`
/// each), on every core.
pub(super) fn fill_records(
    fill: &FillRecord<'_>,
    record_bytes: usize,
    first: usize,
    out: &mut [u8],
) -> Result<()> {
    out.par_chunks_mut(record_bytes.max(1) * RECORDS_PER_TASK)
        .enumerate()
        .try_for_each(|(task, records)| {
            let from = first + task * RECORDS_PER_TASK;
            records
                .chunks_exact_mut(record_bytes.max(1))
                .enumerate()
                .try_for_each(|(j, record)| fill(from + j, record))
        })
}

/// The signatures of a segment being written.
struct Signatures<'f, 'a> {
    fill: &'f FillRecord<'a>,
    record_bytes: usize,
    count: usize,
}

impl Signatures<'_, '_> {
    /// Makes, checksums (into `crc` and `blocks`) and writes every record from offset `at`,
    /// a piece at a time, the next piece made while this one is written; returns the offset
    /// after them.
    fn stream(
        &self,
        mut at: u64,
        crc: &mut crc32fast::Hasher,
        blocks: &mut BlockCrcs,
        sink: &mut Sink<'_>,
    ) -> Result<u64> {
        if self.record_bytes == 0 || self.count == 0 {
            return Ok(at);
        }
        let per_piece = (PIECE / self.record_bytes).max(1);
        let piece_bytes = per_piece.min(self.count) * self.record_bytes;
        let (mut this, mut next) = (vec![0u8; piece_bytes], vec![0u8; piece_bytes]);
        let mut first = 0;
        let mut n = per_piece.min(self.count);
        self.make(first, prefix_mut(&mut this, n * self.record_bytes))?;
        while n > 0 {
            let after = first + n;
            let m = per_piece.min(self.count - after);
            let piece = this.get(..n * self.record_bytes).unwrap_or_default();
            let next_piece = prefix_mut(&mut next, m * self.record_bytes);
            let (written, made) = rayon::join(
                || {
                    crc.update(piece);
                    blocks.update(piece);
                    sink(piece, at)
                },
                || self.make(after, next_piece),
            );
            written?;
            made?;
            at += piece.len() as u64;
            std::mem::swap(&mut this, &mut next);
            (first, n) = (after, m);
        }
        Ok(at)
    }

    /// Fills `out` with the records of ordinals `first..`, on every core.
    fn make(&self, first: usize, out: &mut [u8]) -> Result<()> {
        fill_records(self.fill, self.record_bytes, first, out)
    }
}

/// The first `len` bytes of `buffer` (all of it if shorter).
fn prefix_mut(buffer: &mut [u8], len: usize) -> &mut [u8] {
    let len = len.min(buffer.len());
    buffer.split_at_mut(len).0
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::super::builder::{SegmentBuilder, SegmentOptions};
    use super::super::test_rng::next;
    use super::super::v3_tests::ID;
    use super::*;
    use crate::storage::shingle_codec as codec;

    /// A builder of `n` documents with `record_bytes`-byte signatures (not given to it), and
    /// those signatures.
    fn builder(n: u64, record_bytes: usize, sets: bool) -> (SegmentBuilder, Vec<u8>) {
        builder_at(1_000, n, record_bytes, sets)
    }

    /// [`builder`] of documents numbered from `base`.
    fn builder_at(base: u64, n: u64, record_bytes: usize, sets: bool) -> (SegmentBuilder, Vec<u8>) {
        let mut rng = n + record_bytes as u64;
        let mut b = SegmentBuilder::with_signatures(4, base, record_bytes).unwrap();
        if sets {
            b = b.with_sets();
        }
        let mut signatures = Vec::new();
        for docno in (base..base + n).filter(|d| d % 7 != 3) {
            let key = format!("doc-{docno}");
            let keys: Vec<u64> = (0..4).map(|_| (next(&mut rng) % 64) << 32).collect();
            b.add(docno, key.as_bytes(), &keys).unwrap();
            if sets {
                let set: Vec<u32> = (0..docno % 5).map(|i| i as u32 * 3 + 1).collect();
                b.add_set(&codec::encode(&set)).unwrap();
            }
            signatures.extend((0..record_bytes).map(|_| next(&mut rng) as u8));
        }
        b.set_end_docno(base + n).unwrap();
        (b, signatures)
    }

    fn write_to_memory(
        b: SegmentBuilder,
        opts: &SegmentOptions,
        fill: &FillRecord<'_>,
    ) -> Result<(Vec<u8>, Written)> {
        let mut file = Vec::new();
        let written = b.write_as(opts, Some(ID), fill, &mut |bytes: &[u8], at: u64| {
            assert_eq!(
                at,
                file.len() as u64,
                "pieces come in file order, without gaps"
            );
            file.extend_from_slice(bytes);
            Ok(())
        })?;
        Ok((file, written))
    }

    /// Written a piece at a time, signatures made on the way, a segment is the file built in
    /// memory from the same signatures, byte for byte: at sizes of no piece, one piece, and
    /// several pieces whose ends fall inside records and inside 4 KiB blocks.
    #[test]
    fn streamed_file_equals_file_built_in_memory() {
        let cases = [(0, 64), (1, 64), (300, 8), (9_000, 512), (19_001, 300)];
        for (n, record_bytes) in cases {
            for (sets, band_filters) in [(false, false), (true, true)] {
                let opts = SegmentOptions {
                    bucket_cap: Some(3),
                    band_filters,
                };
                let (mut in_memory, signatures) = builder(n, record_bytes, sets);
                in_memory.set_signatures(signatures.clone()).unwrap();
                let parts = in_memory.finish_parts_as(&opts, Some(ID)).unwrap();
                let (meta_crc, doc_count) = (parts.meta_crc, parts.doc_count);
                let want = parts.into_vec();
                let (streamed, _) = builder(n, record_bytes, sets);
                let fill = |i: usize, out: &mut [u8]| -> Result<()> {
                    out.copy_from_slice(&signatures[i * record_bytes..][..record_bytes]);
                    Ok(())
                };
                let (got, written) = write_to_memory(streamed, &opts, &fill).unwrap();
                assert!(
                    got == want,
                    "{n} documents of {record_bytes} bytes, sets {sets}"
                );
                assert_eq!(written.len, want.len() as u64);
                assert_eq!(written.meta_crc, meta_crc);
                assert_eq!(written.doc_count, doc_count);
            }
        }
    }

    /// Combining segments written a piece at a time, each signature copied from its input on
    /// the way, gives the bytes of the combine built in memory: inputs of several pieces,
    /// deletions scattered through them (runs of live rows cut anywhere), an all-dead input.
    #[test]
    fn streamed_combine_equals_combine_in_memory() {
        let opts = SegmentOptions {
            bucket_cap: Some(3),
            band_filters: true,
        };
        let mut segments = Vec::new();
        for (i, n) in [9_000u64, 40, 12_000].into_iter().enumerate() {
            let (mut b, signatures) = builder_at(1_000 + 20_000 * i as u64, n, 512, true);
            b.set_signatures(signatures).unwrap();
            let bytes = b.finish_parts_as(&opts, Some(ID)).unwrap().into_vec();
            segments.push(super::super::v3_tests::open_as(bytes, Some(ID)).unwrap());
        }
        let inputs: Vec<_> = segments.iter().collect();
        let is_live = |d: u64| !(21_000..22_000).contains(&d) && d % 11 != 4 && d % 97 > 2;
        let want =
            super::super::combine::combine_segments_as(&inputs, is_live, &opts, Some(ID)).unwrap();
        let (meta_crc, doc_count) = (want.meta_crc, want.doc_count);
        let want = want.into_vec();
        let mut got = Vec::new();
        let written = super::super::combine::combine_segments_write(
            &inputs,
            is_live,
            &opts,
            Some(ID),
            &mut |bytes: &[u8], at: u64| {
                assert_eq!(at, got.len() as u64);
                got.extend_from_slice(bytes);
                Ok(())
            },
        )
        .unwrap();
        assert!(got == want);
        assert_eq!(
            (written.len, written.meta_crc),
            (want.len() as u64, meta_crc)
        );
        assert_eq!(written.doc_count, doc_count);
    }

    /// A signature that cannot be made, or a write that fails, is the write's error; and a
    /// builder already holding signatures is refused rather than written twice over.
    #[test]
    fn a_failed_record_or_write_is_the_error() {
        let opts = SegmentOptions::default();
        let (b, _) = builder(20_000, 512, false);
        let fill = |i: usize, out: &mut [u8]| -> Result<()> {
            if i == 15_000 {
                return Err(crate::Error::invalid("records", "record 15000 unreadable"));
            }
            out.fill(1);
            Ok(())
        };
        let err = write_to_memory(b, &opts, &fill).unwrap_err();
        assert!(err.to_string().contains("record 15000 unreadable"), "{err}");
        let (b, _) = builder(20_000, 512, false);
        let mut calls = 0;
        let mut failing = |_: &[u8], _: u64| -> Result<()> {
            calls += 1;
            if calls == 3 {
                return Err(crate::Error::invalid("sink", "disk gone"));
            }
            Ok(())
        };
        let ok = |_: usize, out: &mut [u8]| -> Result<()> {
            out.fill(2);
            Ok(())
        };
        let err = b.write_as(&opts, Some(ID), &ok, &mut failing).unwrap_err();
        assert!(err.to_string().contains("disk gone"), "{err}");
        let (mut b, signatures) = builder(10, 16, false);
        b.set_signatures(signatures).unwrap();
        assert!(write_to_memory(b, &opts, &ok).is_err());
    }
}
