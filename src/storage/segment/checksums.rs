//! The checksums a segment writer computes: a section's CRC-32 and the CRC of every 4 KiB
//! block (`format/segment.md`), from bytes in memory or fed a piece at a time as they are
//! written.

#![deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used)]

use rayon::prelude::*;

use super::format::BLOCK_LEN;

/// Sections longer than this have their CRC computed in pieces of this size on every core
/// (the SIGNATURES section is most of a segment).
const CRC_PIECE: usize = 8 << 20;

/// The CRC-32 of a section's bytes, a large section's pieces on every core, combined.
pub(super) fn section_crc(bytes: &[u8]) -> u32 {
    if bytes.len() <= CRC_PIECE {
        return crc32fast::hash(bytes);
    }
    let pieces: Vec<crc32fast::Hasher> = bytes
        .par_chunks(CRC_PIECE)
        .map(|piece| {
            let mut h = crc32fast::Hasher::new();
            h.update(piece);
            h
        })
        .collect();
    let mut whole = crc32fast::Hasher::new();
    for piece in &pieces {
        whole.combine(piece);
    }
    whole.finalize()
}

/// The CRC of each 4 KiB block of a file from the end of its header, given the file's bytes
/// in order, in pieces of any length. Blocks are aligned with the file's pages: block j is
/// bytes `max(header_len, 4096·j) .. min(4096·(j + 1), end)` (`format/segment.md`).
pub(super) struct BlockCrcs {
    crcs: Vec<u8>,
    /// The CRC of the block in progress, so far.
    block: crc32fast::Hasher,
    /// The file offset of the next byte.
    at: usize,
}

impl BlockCrcs {
    /// Block checksums of a file whose header is `header_len` bytes (64, or 96 in version 3).
    pub(super) fn new(header_len: usize) -> Self {
        BlockCrcs {
            crcs: Vec::new(),
            block: crc32fast::Hasher::new(),
            at: header_len,
        }
    }

    /// Takes the file's next bytes (whole blocks on every core).
    pub(super) fn update(&mut self, bytes: &[u8]) {
        let to_boundary = (BLOCK_LEN - self.at % BLOCK_LEN) % BLOCK_LEN;
        let (first, rest) = bytes.split_at(to_boundary.min(bytes.len()));
        if !first.is_empty() {
            self.block.update(first);
            self.at += first.len();
            if self.at.is_multiple_of(BLOCK_LEN) {
                self.end_block();
            }
        }
        let (whole, rest) = rest.split_at(rest.len() / BLOCK_LEN * BLOCK_LEN);
        self.crcs.par_extend(
            whole
                .par_chunks(BLOCK_LEN)
                .flat_map_iter(|b| crc32fast::hash(b).to_le_bytes()),
        );
        self.at += whole.len();
        self.block.update(rest);
        self.at += rest.len();
    }

    /// The CHECKSUMS section's bytes, once the file's bytes up to it were given.
    pub(super) fn finish(mut self) -> Vec<u8> {
        if !self.at.is_multiple_of(BLOCK_LEN) {
            self.end_block();
        }
        self.crcs
    }

    fn end_block(&mut self) {
        let done = std::mem::replace(&mut self.block, crc32fast::Hasher::new());
        self.crcs.extend_from_slice(&done.finalize().to_le_bytes());
    }
}

#[cfg(test)]
#[allow(clippy::indexing_slicing)]
mod tests {
    use super::super::test_rng::next;
    use super::*;

    /// Block checksums fed the file in pieces of any length are the blocks' CRCs as
    /// `format/segment.md` defines them: block j is bytes `max(H, 4096·j) .. min(4096·(j + 1),
    /// end)`, one per started 4 KiB of the file.
    #[test]
    fn block_checksums_in_pieces_follow_the_definition() {
        let mut rng = 5u64;
        for (header_len, end) in [
            (64usize, 64usize),
            (96, 97),
            (96, 4096),
            (64, 4097),
            (96, 40_000),
        ] {
            let file: Vec<u8> = (0..end).map(|_| next(&mut rng) as u8).collect();
            let want: Vec<u8> = (0..end.div_ceil(BLOCK_LEN))
                .flat_map(|j| {
                    let from = (j * BLOCK_LEN).max(header_len);
                    let to = ((j + 1) * BLOCK_LEN).min(end);
                    crc32fast::hash(&file[from..to]).to_le_bytes()
                })
                .collect();
            for _ in 0..20 {
                let mut blocks = BlockCrcs::new(header_len);
                let mut at = header_len;
                while at < end {
                    let len = match next(&mut rng) % 3 {
                        0 => (next(&mut rng) % 10) as usize,
                        1 => (next(&mut rng) % 5_000) as usize,
                        _ => (next(&mut rng) % 20_000) as usize,
                    };
                    let to = (at + len).min(end);
                    blocks.update(&file[at..to]);
                    at = to;
                }
                assert_eq!(blocks.finish(), want, "header {header_len}, end {end}");
            }
        }
    }

    /// A section's CRC computed in pieces equals the CRC of the whole, at every length around
    /// the piece size.
    #[test]
    #[allow(clippy::indexing_slicing)]
    fn section_crc_in_pieces_equals_whole_crc() {
        let mut rng = 3u64;
        let bytes: Vec<u8> = (0..3 * CRC_PIECE + 17)
            .map(|_| next(&mut rng) as u8)
            .collect();
        for len in [
            0,
            1,
            CRC_PIECE - 1,
            CRC_PIECE,
            CRC_PIECE + 1,
            2 * CRC_PIECE,
            bytes.len(),
        ] {
            let part = &bytes[..len];
            assert_eq!(section_crc(part), crc32fast::hash(part), "{len} bytes");
        }
    }
}
