//! Partial sketches merge like sets: merging is associative, commutative and idempotent, and
//! the merge of sketches of pieces equals a sketch of the whole, for both schemes, any k and
//! seed (OPH densifies only when finishing, so this holds for it too).

mod common;

use mhdb::sketch::{MinHasher, Scheme};
use proptest::prelude::*;

fn hasher(oph: bool, k: usize, seed: u64) -> MinHasher {
    let scheme = if oph { Scheme::Oph } else { Scheme::KPerm };
    common::params::hasher(scheme, k, seed)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, .. ProptestConfig::default() })]

    #[test]
    fn merge_is_a_set_union(
        scheme in any::<bool>(),
        k in 1usize..=300,
        seed in any::<u64>(),
        elems in prop::collection::vec(any::<u64>(), 0..300),
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..4),
    ) {
        let h = hasher(scheme, k, seed);
        let mut points: Vec<usize> = cuts.iter().map(|c| c.index(elems.len() + 1)).collect();
        points.push(0);
        points.push(elems.len());
        points.sort_unstable();
        let pieces: Vec<&[u64]> = points.windows(2).map(|w| &elems[w[0]..w[1]]).collect();
        let partials: Vec<_> = pieces
            .iter()
            .map(|p| {
                let mut s = h.empty_partial();
                h.add_hashes(&mut s, p);
                s
            })
            .collect();
        // Left fold equals a single build.
        let mut left = h.empty_partial();
        for p in &partials {
            left.merge(p).unwrap();
        }
        prop_assert_eq!(h.finish(&left), h.sketch_hashes(&elems));
        // Right fold (commutativity + associativity), and idempotence.
        let mut right = h.empty_partial();
        for p in partials.iter().rev() {
            right.merge(p).unwrap();
        }
        prop_assert_eq!(&left, &right);
        let mut twice = left.clone();
        twice.merge(&left).unwrap();
        prop_assert_eq!(&twice, &left);
        // Grouping: (a ∪ b) ∪ c == a ∪ (b ∪ c) for the first three pieces.
        if partials.len() >= 3 {
            let mut ab = partials[0].clone();
            ab.merge(&partials[1]).unwrap();
            ab.merge(&partials[2]).unwrap();
            let mut bc = partials[1].clone();
            bc.merge(&partials[2]).unwrap();
            let mut a_bc = partials[0].clone();
            a_bc.merge(&bc).unwrap();
            prop_assert_eq!(ab, a_bc);
        }
    }

    #[test]
    fn text_pieces_merge_like_their_shingles(
        scheme in any::<bool>(),
        k in 1usize..=200,
        words in prop::collection::vec("[a-z]{1,8}", 1..60),
        split in any::<prop::sample::Index>(),
    ) {
        let h = hasher(scheme, k, 5);
        let text = words.join(" ");
        let hashes = h.shingle_hashes(&text);
        let at = split.index(hashes.len() + 1);
        let (x, y) = hashes.split_at(at);
        let mut a = h.empty_partial();
        h.add_hashes(&mut a, x);
        let mut b = h.empty_partial();
        h.add_hashes(&mut b, y);
        a.merge(&b).unwrap();
        prop_assert_eq!(h.finish(&a), h.sketch_text(&text));
    }
}
