//! The stored coding of a shingle set (`format/segment.md`, SHINGLES; a WAL insert of an
//! index that stores sets carries the same bytes, `format/wal.md`): the sorted distinct 32-bit
//! values as `count` in an unsigned LEB128 varint, then varint gaps: the first value itself,
//! then each value minus the previous one minus 1. A 5,000-value set codes in about 3 bytes
//! per value. This module is the only encoder and decoder of those bytes; what the values
//! mean (the top 32 bits of shingle hashes) is the sketch layer's business.
//!
//! Decoding never panics: damage is a [`SetDecodeError`] naming the byte.

#![deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used)]

/// Why stored set bytes do not decode: the byte offset within them and what is wrong.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SetDecodeError {
    /// Offset of the offending byte within the coded set.
    pub offset: usize,
    /// What is wrong there.
    pub detail: &'static str,
}

impl std::fmt::Display for SetDecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "stored shingle set: {} at byte {}",
            self.detail, self.offset
        )
    }
}

/// Appends the stored coding of `values` (sorted and distinct) to `out`.
pub fn encode_into(values: &[u32], out: &mut Vec<u8>) {
    debug_assert!(
        values.windows(2).all(|w| matches!(w, [a, b] if a < b)),
        "shingle set values must be sorted and distinct"
    );
    put_varint(out, values.len() as u64);
    let mut prev: Option<u32> = None;
    for &v in values {
        let gap = match prev {
            None => v,
            Some(p) => v - p - 1,
        };
        put_varint(out, u64::from(gap));
        prev = Some(v);
    }
}

/// The stored coding of `values` (sorted and distinct).
pub fn encode(values: &[u32]) -> Vec<u8> {
    let mut out = Vec::with_capacity(values.len() * 3 + 4);
    encode_into(values, &mut out);
    out
}

/// Decodes one coded set (`bytes` exactly) into `out` (cleared first).
pub fn decode_into(bytes: &[u8], out: &mut Vec<u32>) -> Result<(), SetDecodeError> {
    out.clear();
    let mut values = CodedValues::new(bytes)?;
    out.reserve(values.count() as usize);
    let mut block = [0u32; DECODE_BLOCK];
    loop {
        let n = values.next_block(&mut block)?;
        if n == 0 {
            return Ok(());
        }
        out.extend_from_slice(block.get(..n).unwrap_or_default());
    }
}

/// Values [`CodedValues::next_block`] decodes at a time.
pub(crate) const DECODE_BLOCK: usize = 64;

/// Reads one coded set value by value or block by block: the count first (checked against the
/// bytes that follow, each value taking at least one), then the values, then that nothing
/// follows the last.
pub(crate) struct CodedValues<'a> {
    bytes: &'a [u8],
    pos: usize,
    /// The number of values the set holds.
    count: u64,
    /// Values read so far.
    read: u64,
    prev: Option<u64>,
}

impl<'a> CodedValues<'a> {
    /// Starts reading `bytes`, one coded set exactly; reads its count.
    pub(crate) fn new(bytes: &'a [u8]) -> Result<Self, SetDecodeError> {
        let mut pos = 0usize;
        let count = get_varint(bytes, &mut pos)?;
        // A count beyond the bytes left is damage (refused before anything is reserved).
        if count > (bytes.len() - pos) as u64 {
            return Err(SetDecodeError {
                offset: 0,
                detail: "count exceeds the bytes that follow",
            });
        }
        Ok(CodedValues {
            bytes,
            pos,
            count,
            read: 0,
            prev: None,
        })
    }

    /// The number of values the set holds.
    pub(crate) fn count(&self) -> u64 {
        self.count
    }

    /// Decodes the next values (up to [`DECODE_BLOCK`]) into `out` and says how many; 0 once
    /// every value has been read, and only if nothing follows the last (an error otherwise).
    ///
    /// Most of a set decodes two numbers per 8-byte read without a branch on their lengths:
    /// the continuation bits give both lengths at once, and a shift-and-mask gathers each
    /// number's 7-bit groups (a set's gaps are mostly 3-4 bytes, mixed at random, so branching
    /// on the length would mispredict often). Anything unusual (the last bytes, a number of
    /// more than 5 bytes, a value past 32 bits) is left to [`CodedValues::next_value`], which
    /// also reports where damage is.
    pub(crate) fn next_block(
        &mut self,
        out: &mut [u32; DECODE_BLOCK],
    ) -> Result<usize, SetDecodeError> {
        let want = (self.count - self.read).min(DECODE_BLOCK as u64) as usize;
        if want == 0 {
            self.finish()?;
            return Ok(0);
        }
        let mut n = self.next_pairs(out, want);
        while n < want {
            let Some(v) = self.next_value()? else {
                break;
            };
            if let Some(slot) = out.get_mut(n) {
                *slot = v;
            }
            n += 1;
        }
        Ok(n)
    }

    /// The fast path of [`CodedValues::next_block`]: decodes values two at a time into `out`
    /// while fewer than `want` are decoded and the next two are ordinary; how many it decoded.
    fn next_pairs(&mut self, out: &mut [u32; DECODE_BLOCK], want: usize) -> usize {
        let mut n = 0usize;
        // The previous value, wrapping so that the first value is its own gap.
        let mut prev = self.prev.unwrap_or(u64::MAX);
        let mut pos = self.pos;
        while n + 2 <= want {
            let Some(word) = self.bytes.get(pos..pos + 8) else {
                break;
            };
            let Ok(word) = <[u8; 8]>::try_from(word) else {
                break;
            };
            let x = u64::from_le_bytes(word);
            // A byte without its continuation bit ends a number.
            let mut ends = !x & 0x8080_8080_8080_8080;
            let first = ends.trailing_zeros() / 8;
            ends &= ends.wrapping_sub(1);
            let second = ends.trailing_zeros() / 8;
            if second >= 8 || first >= 5 || second - first > 5 {
                break;
            }
            let g0 = gather7(x) & ((1u64 << (7 * (first + 1))) - 1);
            let g1 = gather7(x >> (8 * (first + 1))) & ((1u64 << (7 * (second - first))) - 1);
            let v0 = prev.wrapping_add(1 + g0);
            let v1 = v0 + 1 + g1;
            // Values only grow: checking the second checks both.
            if v1 > u64::from(u32::MAX) {
                break;
            }
            let Some([a, b]) = out.get_mut(n..n + 2) else {
                break;
            };
            (*a, *b) = (v0 as u32, v1 as u32);
            prev = v1;
            pos += second as usize + 1;
            n += 2;
        }
        if n > 0 {
            self.prev = Some(prev);
            self.pos = pos;
            self.read += n as u64;
        }
        n
    }

    /// The next value, or `None` after the last (not checking what follows: see
    /// [`CodedValues::finish`]).
    fn next_value(&mut self) -> Result<Option<u32>, SetDecodeError> {
        if self.read == self.count {
            return Ok(None);
        }
        let at = self.pos;
        let gap = get_varint(self.bytes, &mut self.pos)?;
        let v = match self.prev {
            None => gap,
            Some(p) => p + 1 + gap,
        };
        if v > u64::from(u32::MAX) {
            return Err(SetDecodeError {
                offset: at,
                detail: "value beyond 32 bits",
            });
        }
        self.prev = Some(v);
        self.read += 1;
        Ok(Some(v as u32))
    }

    /// Checks that the bytes end with the last value read.
    fn finish(&self) -> Result<(), SetDecodeError> {
        if self.pos != self.bytes.len() {
            return Err(SetDecodeError {
                offset: self.pos,
                detail: "bytes after the last value",
            });
        }
        Ok(())
    }
}

/// The 7-bit groups of the first five bytes of `x`, gathered into one 35-bit number (the
/// continuation bits dropped).
#[inline(always)]
fn gather7(x: u64) -> u64 {
    (x & 0x7f)
        | ((x >> 1) & 0x3f80)
        | ((x >> 2) & 0x1f_c000)
        | ((x >> 3) & 0xfe0_0000)
        | ((x >> 4) & 0x7_f000_0000)
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Reads an unsigned LEB128 varint of at most 5 bytes (every coded number fits 33 bits).
fn get_varint(bytes: &[u8], pos: &mut usize) -> Result<u64, SetDecodeError> {
    let start = *pos;
    let mut v = 0u64;
    for shift in 0..5u32 {
        let Some(&b) = bytes.get(*pos) else {
            return Err(SetDecodeError {
                offset: *pos,
                detail: "cut short inside a number",
            });
        };
        *pos += 1;
        v |= u64::from(b & 0x7f) << (7 * shift);
        if b & 0x80 == 0 {
            return Ok(v);
        }
    }
    Err(SetDecodeError {
        offset: start,
        detail: "number longer than 5 bytes",
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn decode(bytes: &[u8]) -> Result<Vec<u32>, SetDecodeError> {
        let mut out = Vec::new();
        decode_into(bytes, &mut out).map(|()| out)
    }

    #[test]
    fn codes_and_decodes_edge_values() {
        for values in [
            vec![],
            vec![0],
            vec![u32::MAX],
            vec![0, 1, 2, u32::MAX - 1, u32::MAX],
        ] {
            assert_eq!(decode(&encode(&values)).unwrap(), values);
        }
    }

    /// The bytes of a small set, as `format/segment.md` (SHINGLES) describes them: count 3, the
    /// first value, then the gaps 0 and 195 (two varint bytes).
    #[test]
    fn codes_count_then_gaps() {
        assert_eq!(encode(&[3, 4, 200]), [3, 3, 0, 0xc3, 0x01]);
    }

    #[test]
    fn damaged_codings_are_refused_not_misread() {
        let coded = encode(&[1 << 8, 7 << 18, u32::MAX]);
        // Cut short, an extra byte, a count larger than the bytes, an over-long number.
        assert!(decode(&coded[..coded.len() - 1]).is_err());
        let mut longer = coded.clone();
        longer.push(0);
        assert_eq!(
            decode(&longer),
            Err(SetDecodeError {
                offset: coded.len(),
                detail: "bytes after the last value"
            })
        );
        assert!(decode(&[0xff, 0xff, 0xff, 0xff, 0x0f]).is_err());
        assert!(decode(&[1, 0x80, 0x80, 0x80, 0x80, 0x80]).is_err());
        // A gap that climbs past 32 bits.
        assert!(decode(&[2, 0xff, 0xff, 0xff, 0xff, 0x0f, 0]).is_err());
    }

    /// Decodes value by value only (the reference for the block decoder).
    fn decode_one_by_one(bytes: &[u8]) -> Result<Vec<u32>, SetDecodeError> {
        let mut values = CodedValues::new(bytes)?;
        let mut out = Vec::new();
        while let Some(v) = values.next_value()? {
            out.push(v);
        }
        values.finish()?;
        Ok(out)
    }

    proptest! {
        /// The block decoder reads exactly what the value-by-value reader reads, and refuses
        /// damage with the same error at the same offset, wherever a byte is changed.
        #[test]
        fn block_decoding_equals_value_by_value(
            values in proptest::collection::btree_set(any::<u32>(), 0..600),
            at in any::<prop::sample::Index>(),
            byte in any::<u8>(),
            damage in any::<bool>(),
        ) {
            let values: Vec<u32> = values.into_iter().collect();
            let mut coded = encode(&values);
            if damage {
                let i = at.index(coded.len());
                coded[i] = byte;
            }
            prop_assert_eq!(decode(&coded), decode_one_by_one(&coded));
        }

        #[test]
        fn coding_round_trips(values in proptest::collection::btree_set(any::<u32>(), 0..300)) {
            let values: Vec<u32> = values.into_iter().collect();
            prop_assert_eq!(decode(&encode(&values)).unwrap(), values);
        }
    }
}
