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

/// The exact Jaccard of sorted distinct `query` values and a coded set, if it is at least
/// `threshold` (`None` otherwise). Decodes and merges in one pass, and stops as soon as the
/// threshold is out of reach: first by the sizes alone (J ≤ min/max), then whenever the
/// values left could no longer make enough of the intersection. A coded set that is cut short
/// before the answer is known is an error; one rejected early is not decoded to its end.
pub fn jaccard_coded_at_least(
    query: &[u32],
    coded: &[u8],
    threshold: f64,
) -> Result<Option<f64>, SetDecodeError> {
    let mut values = CodedValues::new(coded)?;
    let (na, nb) = (query.len() as u64, values.count);
    if na == 0 || nb == 0 {
        return Ok((threshold <= 0.0).then_some(0.0));
    }
    // J ≥ t ⟺ common ≥ t·(|A| + |B|) / (1 + t).
    // (Less a hair, so that rounding never rejects a pair exactly at the threshold: the last
    // comparison, on J itself, decides.)
    let need = threshold * (na + nb) as f64 / (1.0 + threshold) - 1e-9;
    if (na.min(nb) as f64) < need {
        return Ok(None);
    }
    let (mut i, mut common) = (0usize, 0u64);
    loop {
        if values.read % 64 == 0 {
            let left = (na - i as u64).min(nb - values.read);
            if ((common + left) as f64) < need {
                return Ok(None);
            }
        }
        let Some(v) = values.next_value()? else {
            break;
        };
        while query.get(i).is_some_and(|&q| q < v) {
            i += 1;
        }
        if query.get(i).is_some_and(|&q| q == v) {
            common += 1;
            i += 1;
        }
    }
    values.finish()?;
    let j = common as f64 / (na + nb - common) as f64;
    Ok((j >= threshold).then_some(j))
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
    while let Some(v) = values.next_value()? {
        out.push(v);
    }
    values.finish()
}

/// Reads one coded set value by value: the count first (checked against the bytes that
/// follow, each value taking at least one), then each value, then (with
/// [`CodedValues::finish`]) that nothing follows the last.
struct CodedValues<'a> {
    bytes: &'a [u8],
    pos: usize,
    count: u64,
    read: u64,
    prev: Option<u64>,
}

impl<'a> CodedValues<'a> {
    fn new(bytes: &'a [u8]) -> Result<Self, SetDecodeError> {
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

    /// The next value, or `None` after the last.
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

    /// Checks that the bytes end with the last value.
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

    proptest! {
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
