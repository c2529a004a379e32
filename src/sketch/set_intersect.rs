//! Exact Jaccard of two shingle sets decided at a threshold (the exact re-rank's inner loop,
//! `db/rerank.rs`): a query's sorted values against a set read block by block (a stored set
//! as its decoder hands it over), or two sorted slices.
//!
//! The intersection is counted by a block merge (the scalar form of Schlegel, Willhalm and
//! Lehner, "Fast Sorted-Set Intersection using SIMD Instructions", 2011): eight values of each
//! side are compared all against all (64 comparisons the compiler turns into a few vector
//! instructions), then the side whose eighth value is smaller moves on by eight, both when
//! equal. Every common value is counted once: it lies in one block of each side, and those
//! two blocks meet, since a block is passed only when the other side's current block ends at
//! or beyond its last value. Shingle values are hashes, spread evenly, so neither side runs
//! far ahead and one merge step costs the same whatever the data; the plain merge's branch on
//! which side is smaller goes the wrong way about half the time.
//!
//! Both functions stop as soon as the threshold is out of reach: first by the sizes alone
//! (J ≤ min/max), then at every block whenever the values left could no longer make enough of
//! the intersection. They never stop early to accept: a match reports its exact Jaccard.

#![deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used)]

/// Values a block source hands to [`jaccard_blocks_at_least`] at a time, at most.
pub const SET_BLOCK: usize = 64;

/// Values per side compared at once.
const LANES: usize = 8;

/// The intersection needed for J ≥ `threshold` with sets of `na` and `nb` values:
/// J ≥ t ⟺ common ≥ t·(na + nb) / (1 + t), less a hair, so that rounding never rejects a pair
/// exactly at the threshold (the last comparison, on J itself, decides).
fn needed(na: u64, nb: u64, threshold: f64) -> f64 {
    threshold * (na + nb) as f64 / (1.0 + threshold) - 1e-9
}

/// J of sets of `na` and `nb` values sharing `common`, if at least `threshold`.
fn decide(na: u64, nb: u64, common: u64, threshold: f64) -> Option<f64> {
    let j = common as f64 / (na + nb - common) as f64;
    (j >= threshold).then_some(j)
}

/// Merges `a[*i..]` with `b` block by block while both have a full block left; advances `*i`
/// and returns (values of `b` passed, common values found).
#[inline]
fn merge_blocks(a: &[u32], i: &mut usize, b: &[u32]) -> (usize, u64) {
    let (mut ia, mut jb, mut common) = (*i, 0usize, 0u64);
    while let (Some(xs), Some(ys)) = (a.get(ia..ia + LANES), b.get(jb..jb + LANES)) {
        let (Ok(xs), Ok(ys)) = (<&[u32; LANES]>::try_from(xs), <&[u32; LANES]>::try_from(ys))
        else {
            break;
        };
        let mut equal = 0u32;
        for x in xs {
            for y in ys {
                equal += u32::from(x == y);
            }
        }
        common += u64::from(equal);
        let (x_last, y_last) = (xs[LANES - 1], ys[LANES - 1]);
        ia += LANES * usize::from(x_last <= y_last);
        jb += LANES * usize::from(y_last <= x_last);
    }
    *i = ia;
    (jb, common)
}

/// Merges what is left of `a[*i..]` and `b` one value at a time; returns the common values.
fn merge_tail(a: &[u32], i: &mut usize, b: &[u32]) -> u64 {
    let (mut ia, mut jb, mut common) = (*i, 0usize, 0u64);
    while let (Some(&x), Some(&y)) = (a.get(ia), b.get(jb)) {
        common += u64::from(x == y);
        ia += usize::from(x <= y);
        jb += usize::from(y <= x);
    }
    *i = ia;
    common
}

/// The exact Jaccard of sorted distinct `query` values and a sorted distinct set of `count`
/// values, if it is at least `threshold` (`None` otherwise). `next_block` hands over the
/// set's next values (up to [`SET_BLOCK`]) and says how many, 0 after the last; it is called
/// only while the answer is open, so a set rejected early is not read to its end. An error of
/// `next_block` (a stored set that does not decode) is returned as it is.
pub fn jaccard_blocks_at_least<E>(
    query: &[u32],
    count: u64,
    threshold: f64,
    mut next_block: impl FnMut(&mut [u32; SET_BLOCK]) -> Result<usize, E>,
) -> Result<Option<f64>, E> {
    let (na, nb) = (query.len() as u64, count);
    if na == 0 || nb == 0 {
        return Ok((threshold <= 0.0).then_some(0.0));
    }
    let need = needed(na, nb, threshold);
    if (na.min(nb) as f64) < need {
        return Ok(None);
    }
    // Decoded values not merged yet are `pending[..held]` (fewer than a block's worth of
    // lanes are carried from one decoded block to the next).
    let mut pending = [0u32; SET_BLOCK + LANES];
    let mut block = [0u32; SET_BLOCK];
    let (mut i, mut held, mut passed, mut common) = (0usize, 0usize, 0u64, 0u64);
    loop {
        let left = (na - i as u64).min(nb.saturating_sub(passed));
        if ((common + left) as f64) < need {
            return Ok(None);
        }
        let n = next_block(&mut block)?;
        if n == 0 {
            break;
        }
        let (Some(dst), Some(src)) = (pending.get_mut(held..held + n), block.get(..n)) else {
            break;
        };
        dst.copy_from_slice(src);
        held += n;
        let (used, found) = merge_blocks(query, &mut i, pending.get(..held).unwrap_or_default());
        common += found;
        passed += used as u64;
        pending.copy_within(used..held, 0);
        held -= used;
        if query.len() - i < LANES {
            // The query has less than a block left: merge the rest value by value (values
            // of the set the merge does not reach are beyond the query's last).
            common += merge_tail(query, &mut i, pending.get(..held).unwrap_or_default());
            passed += held as u64;
            held = 0;
        }
    }
    common += merge_tail(query, &mut i, pending.get(..held).unwrap_or_default());
    Ok(decide(na, nb, common, threshold))
}

/// The number of values two sorted, distinct slices share.
pub fn common_count(a: &[u32], b: &[u32]) -> u64 {
    let mut i = 0;
    let (passed, common) = merge_blocks(a, &mut i, b);
    common
        + b.get(passed..)
            .map_or(0, |rest| merge_tail(a, &mut i, rest))
}

/// Values of the second set merged between two checks of the bound in
/// [`jaccard_sorted_at_least`].
const CHECK_EVERY: usize = 256;

/// The exact Jaccard of two sorted, distinct slices, if it is at least `threshold`; rejects
/// as soon as the threshold is out of reach.
pub fn jaccard_sorted_at_least(a: &[u32], b: &[u32], threshold: f64) -> Option<f64> {
    let (na, nb) = (a.len() as u64, b.len() as u64);
    if na == 0 || nb == 0 {
        return (threshold <= 0.0).then_some(0.0);
    }
    let need = needed(na, nb, threshold);
    if (na.min(nb) as f64) < need {
        return None;
    }
    let (mut i, mut j, mut common) = (0usize, 0usize, 0u64);
    while j < b.len() {
        let left = (na - i as u64).min(nb - j as u64);
        if ((common + left) as f64) < need {
            return None;
        }
        let stop = (j + CHECK_EVERY).min(b.len());
        let (used, found) = merge_blocks(a, &mut i, b.get(j..stop).unwrap_or_default());
        common += found;
        j += used;
        if used == 0 {
            // Fewer than a block left on one side.
            break;
        }
    }
    common += merge_tail(a, &mut i, b.get(j..).unwrap_or_default());
    decide(na, nb, common, threshold)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    fn naive(a: &BTreeSet<u32>, b: &BTreeSet<u32>, t: f64) -> Option<f64> {
        if a.is_empty() || b.is_empty() {
            return (t <= 0.0).then_some(0.0);
        }
        let j = a.intersection(b).count() as f64 / a.union(b).count() as f64;
        (j >= t).then_some(j)
    }

    /// `values` handed over `step` at a time (at most [`SET_BLOCK`]), as a decoder would.
    fn blocks_at_least(
        query: &[u32],
        values: &[u32],
        step: usize,
        t: f64,
    ) -> Result<Option<f64>, std::convert::Infallible> {
        let mut chunks = values.chunks(step);
        jaccard_blocks_at_least(query, values.len() as u64, t, |out| {
            let chunk = chunks.next().unwrap_or_default();
            out[..chunk.len()].copy_from_slice(chunk);
            Ok(chunk.len())
        })
    }

    fn check(a: &BTreeSet<u32>, b: &BTreeSet<u32>) -> Result<(), TestCaseError> {
        let va: Vec<u32> = a.iter().copied().collect();
        let vb: Vec<u32> = b.iter().copied().collect();
        let exact = naive(a, b, 0.0).unwrap();
        // Thresholds around the exact value too: the decision there is the delicate one.
        for t in [
            0.0,
            0.1,
            0.3,
            0.5,
            0.8,
            1.0,
            exact,
            exact - 1e-12,
            exact + 1e-12,
        ] {
            let t = t.clamp(0.0, 1.0);
            let want = naive(a, b, t);
            for step in [SET_BLOCK, 7, 1] {
                prop_assert_eq!(
                    blocks_at_least(&va, &vb, step, t).unwrap(),
                    want,
                    "t = {}, step {}",
                    t,
                    step
                );
            }
            prop_assert_eq!(jaccard_sorted_at_least(&va, &vb, t), want, "t = {}", t);
            prop_assert_eq!(jaccard_sorted_at_least(&vb, &va, t), want, "t = {}", t);
        }
        Ok(())
    }

    proptest! {
        /// Small, dense value ranges: many common values, blocks that end on equal values.
        #[test]
        fn small_sets_decide_as_a_naive_intersection(
            a in proptest::collection::btree_set(0u32..300, 0..200),
            b in proptest::collection::btree_set(0u32..300, 0..200),
        ) {
            check(&a, &b)?;
        }

        /// Sets the size of real pages (thousands of values, several decoded blocks), sharing
        /// a chosen part, with values over the whole 32 bits (gaps of 1-5 bytes).
        #[test]
        fn page_sized_sets_decide_as_a_naive_intersection(
            shared in proptest::collection::btree_set(any::<u32>(), 0..3000),
            only_a in proptest::collection::btree_set(any::<u32>(), 0..1500),
            only_b in proptest::collection::btree_set(any::<u32>(), 0..1500),
        ) {
            let a: BTreeSet<u32> = shared.union(&only_a).copied().collect();
            let b: BTreeSet<u32> = shared.union(&only_b).copied().collect();
            check(&a, &b)?;
        }
    }

    /// An error of the block source is returned, even when the merge would have accepted
    /// the values read before it.
    #[test]
    fn source_errors_are_returned_not_merged() {
        let values: Vec<u32> = (0..500u32).map(|v| v * 7_000_000).collect();
        assert_eq!(
            blocks_at_least(&values, &values, SET_BLOCK, 0.5).unwrap(),
            Some(1.0)
        );
        let mut chunks = values.chunks(SET_BLOCK);
        let failing = jaccard_blocks_at_least(&values, 500, 0.5, |out| match chunks.next() {
            Some(chunk) if chunk.len() == SET_BLOCK => {
                out.copy_from_slice(chunk);
                Ok(SET_BLOCK)
            }
            _ => Err("damaged"),
        });
        assert_eq!(failing, Err("damaged"));
    }
}
