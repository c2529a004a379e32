//! A document's shingle set, kept beside its signature when an index stores sets
//! (`store_sets`), so that a query can compute the exact Jaccard similarity of a candidate
//! instead of estimating it from the signature (issue 15: Milvus's "refine" over raw data).
//!
//! The set holds the top 32 bits of each shingle hash ([`crate::sketch::MinHasher`] and
//! `format/hashing.md` §14 "stored shingle sets"): 4 bytes instead of 8 before coding, and two
//! distinct shingles of one pair of documents share 32 bits with probability 2⁻³², so the
//! Jaccard of the stored sets differs from that of the shingle sets by less than
//! n / 2³² (n = shingles in the pair), far below the estimate's own spread.
//!
//! Stored coding (`format/segment.md`, SHINGLES): `count` as an unsigned LEB128 varint, then
//! the sorted distinct values as varint gaps: the first value itself, then each value minus
//! the previous one minus 1. A 5,000-shingle document codes in about 3 bytes per shingle.

#![deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used)]

/// The sorted, distinct 32-bit shingle values of one document.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct ShingleSet {
    values: Box<[u32]>,
}

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

/// The stored value of a 64-bit shingle hash.
#[inline]
pub fn stored_value(hash: u64) -> u32 {
    (hash >> 32) as u32
}

impl ShingleSet {
    /// The set of the given shingle hashes (any order, duplicates allowed).
    pub fn from_hashes(hashes: impl IntoIterator<Item = u64>) -> Self {
        let mut values: Vec<u32> = hashes.into_iter().map(stored_value).collect();
        values.sort_unstable();
        values.dedup();
        ShingleSet {
            values: values.into(),
        }
    }

    /// The sorted distinct values.
    pub fn values(&self) -> &[u32] {
        &self.values
    }

    /// Number of distinct values.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// True for the set of a text without shingles.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// Appends the stored coding of this set to `out`.
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        put_varint(out, self.values.len() as u64);
        let mut prev: Option<u32> = None;
        for &v in self.values.iter() {
            let gap = match prev {
                None => v,
                Some(p) => v - p - 1,
            };
            put_varint(out, u64::from(gap));
            prev = Some(v);
        }
    }

    /// The stored coding of this set.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.values.len() * 3 + 4);
        self.encode_into(&mut out);
        out
    }

    /// Decodes a stored set; `bytes` must be exactly one coded set.
    pub fn decode(bytes: &[u8]) -> Result<Self, SetDecodeError> {
        let mut values = Vec::new();
        decode_into(bytes, &mut values)?;
        Ok(ShingleSet {
            values: values.into(),
        })
    }

    /// Exact Jaccard similarity |A ∩ B| / |A ∪ B|; 0 when both sets are empty (a text without
    /// shingles is similar to nothing, as with signatures).
    pub fn jaccard(&self, other: &ShingleSet) -> f64 {
        jaccard_sorted(&self.values, &other.values)
    }

    /// Exact Jaccard similarity against a stored (coded) set, decoded into `scratch`.
    pub fn jaccard_coded(
        &self,
        coded: &[u8],
        scratch: &mut Vec<u32>,
    ) -> Result<f64, SetDecodeError> {
        decode_into(coded, scratch)?;
        Ok(jaccard_sorted(&self.values, scratch))
    }
}

/// Exact Jaccard of two sorted, distinct slices.
pub fn jaccard_sorted(a: &[u32], b: &[u32]) -> f64 {
    if a.is_empty() || b.is_empty() {
        return 0.0;
    }
    let (mut i, mut j, mut common) = (0usize, 0usize, 0usize);
    while let (Some(&x), Some(&y)) = (a.get(i), b.get(j)) {
        // Branch-light merge: advance whichever side is smaller (both when equal).
        common += usize::from(x == y);
        i += usize::from(x <= y);
        j += usize::from(y <= x);
    }
    common as f64 / (a.len() + b.len() - common) as f64
}

/// Decodes one coded set into `out` (cleared first).
pub fn decode_into(bytes: &[u8], out: &mut Vec<u32>) -> Result<(), SetDecodeError> {
    out.clear();
    let mut values = CodedValues::new(bytes)?;
    out.reserve(values.count as usize);
    let mut block = [0u32; DECODE_BLOCK];
    loop {
        let n = values.next_block(&mut block)?;
        if n == 0 {
            break;
        }
        out.extend_from_slice(block.get(..n).unwrap_or_default());
    }
    values.finish()
}

/// Values [`CodedValues::next_block`] decodes at a time.
pub(crate) const DECODE_BLOCK: usize = 64;

/// Reads one coded set value by value or block by block: the count first (checked against the
/// bytes that follow, each value taking at least one), then the values, then (with
/// [`CodedValues::finish`]) that nothing follows the last.
pub(crate) struct CodedValues<'a> {
    bytes: &'a [u8],
    pos: usize,
    /// The number of values the set holds.
    pub(crate) count: u64,
    /// Values read so far.
    pub(crate) read: u64,
    prev: Option<u64>,
}

impl<'a> CodedValues<'a> {
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

    /// Decodes the next values (up to [`DECODE_BLOCK`]) into `out`; how many (0 after the
    /// last).
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

    /// The next value, or `None` after the last.
    pub(crate) fn next_value(&mut self) -> Result<Option<u32>, SetDecodeError> {
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

    /// Checks that the bytes end with the last value.
    pub(crate) fn finish(&self) -> Result<(), SetDecodeError> {
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
    use crate::sketch::set_intersect::jaccard_coded_at_least;
    use proptest::prelude::*;

    #[test]
    fn codes_and_decodes_edge_values() {
        for values in [
            vec![],
            vec![0],
            vec![u32::MAX],
            vec![0, 1, 2, u32::MAX - 1, u32::MAX],
        ] {
            let set = ShingleSet {
                values: values.clone().into(),
            };
            let coded = set.encode();
            assert_eq!(ShingleSet::decode(&coded).unwrap().values(), &values[..]);
        }
    }

    #[test]
    fn damaged_codings_are_refused_not_misread() {
        let set = ShingleSet::from_hashes([1u64 << 40, 7u64 << 50, u64::MAX]);
        let coded = set.encode();
        // Cut short, an extra byte, a count larger than the bytes, an over-long number.
        assert!(ShingleSet::decode(&coded[..coded.len() - 1]).is_err());
        let mut longer = coded.clone();
        longer.push(0);
        assert!(ShingleSet::decode(&longer).is_err());
        assert!(ShingleSet::decode(&[0xff, 0xff, 0xff, 0xff, 0x0f]).is_err());
        assert!(ShingleSet::decode(&[1, 0x80, 0x80, 0x80, 0x80, 0x80]).is_err());
        // A gap that climbs past 32 bits.
        assert!(ShingleSet::decode(&[2, 0xff, 0xff, 0xff, 0xff, 0x0f, 0]).is_err());
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
            hashes in proptest::collection::vec(any::<u64>(), 0..600),
            at in any::<prop::sample::Index>(),
            byte in any::<u8>(),
            damage in any::<bool>(),
        ) {
            let mut coded = ShingleSet::from_hashes(hashes.iter().copied()).encode();
            if damage {
                let i = at.index(coded.len());
                coded[i] = byte;
            }
            let mut blocks = Vec::new();
            let got = decode_into(&coded, &mut blocks).map(|()| blocks);
            prop_assert_eq!(got, decode_one_by_one(&coded));
        }

        #[test]
        fn coding_round_trips(hashes in proptest::collection::vec(any::<u64>(), 0..300)) {
            let set = ShingleSet::from_hashes(hashes.iter().copied());
            prop_assert_eq!(ShingleSet::decode(&set.encode()).unwrap(), set);
        }

        #[test]
        fn jaccard_is_exact(a in proptest::collection::btree_set(0u32..500, 0..200),
                            b in proptest::collection::btree_set(0u32..500, 0..200)) {
            let sa = ShingleSet { values: a.iter().copied().collect() };
            let sb = ShingleSet { values: b.iter().copied().collect() };
            let inter = a.intersection(&b).count();
            let union = a.union(&b).count();
            let want = if a.is_empty() || b.is_empty() { 0.0 } else { inter as f64 / union as f64 };
            prop_assert_eq!(sa.jaccard(&sb), want);
            let mut scratch = Vec::new();
            prop_assert_eq!(sa.jaccard_coded(&sb.encode(), &mut scratch).unwrap(), want);
            for t in [0.0, 0.1, 0.3, 0.5, 0.8, 1.0] {
                let gated = jaccard_coded_at_least(sa.values(), &sb.encode(), t).unwrap();
                let expect = (want >= t).then_some(want);
                prop_assert_eq!(gated, expect, "t = {}", t);
            }
        }
    }
}
