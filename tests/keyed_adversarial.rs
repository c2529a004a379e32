//! An attacker who knows the seed (public: it is a parameter of the index, 0 by default) can
//! craft a near-identical copy of a document that shares no band key with it, so an LSH index
//! never even proposes the pair. A keyed index takes that knowledge away: the same crafted copy
//! shares band keys with its target again (`format/hashing.md` §12).
//!
//! The construction (greedy, with the public hasher): sign target and copy; for every band whose
//! key they still share, take the band's first slot, find the shingle of the copy whose hash is
//! that slot's minimum, and replace one Latin letter of it by its Cyrillic look-alike (a → а,
//! e → е, o → о, ...), so the copy still reads the same to a person. That shingle and its
//! neighbours disappear, the bin's minimum moves to another shingle, and the band key changes.
//! Repeat until no band key is shared. Each round edits one letter per shared band, so a
//! 6 KB text needs a dozen or two letters: the copy keeps a Jaccard similarity of 0.9 or more.
//!
//! Checked on the sketches, and on real databases: an unkeyed index answers the copy's query
//! without its target and its dedup pass misses the pair; a keyed index finds both.

use std::collections::HashSet;

use mhdb::sketch::{
    Banding, MinHasher, Scheme, SecretKey, ShingleConfig, Signature, SketchParams, TuneOptions,
    tune,
};

/// The index the attacker targets: the defaults (OPH, k = 128, char 5-grams, seed 0) and the
/// banding mhdb chooses for a threshold of 0.8.
fn params() -> SketchParams {
    SketchParams {
        scheme: Scheme::Oph,
        num_perm: 128,
        seed: 0,
        shingle: ShingleConfig::chars(5),
    }
}

fn banding() -> Banding {
    let lsh = tune(0.8, 128, &TuneOptions::default()).unwrap().params;
    Banding::new(&params(), lsh).unwrap()
}

fn shared_bands(banding: &Banding, a: &Signature, b: &Signature) -> Vec<usize> {
    let (ka, kb) = (
        banding.band_keys(a.slots()).unwrap(),
        banding.band_keys(b.slots()).unwrap(),
    );
    (0..ka.len()).filter(|&j| ka[j] == kb[j]).collect()
}

/// Latin letters and the Cyrillic letters that look the same.
const LOOKALIKES: [(char, char); 11] = [
    ('a', 'а'),
    ('c', 'с'),
    ('e', 'е'),
    ('h', 'һ'),
    ('i', 'і'),
    ('j', 'ј'),
    ('o', 'о'),
    ('p', 'р'),
    ('s', 'ѕ'),
    ('x', 'х'),
    ('y', 'у'),
];

/// The attack: edits `target` (already lowercase, single-spaced ASCII, so that shingle i is
/// chars i..i+5) until it shares no band key with it under the public `hasher`.
fn craft_evasive_copy(hasher: &MinHasher, banding: &Banding, target: &str) -> (String, usize) {
    let target_sig = hasher.sketch_text(target);
    let mut copy: Vec<char> = target.chars().collect();
    let mut edits = 0;
    for _round in 0..50 {
        let text: String = copy.iter().collect();
        let sig = hasher.sketch_text(&text);
        let shared = shared_bands(banding, &target_sig, &sig);
        if shared.is_empty() {
            return (text, edits);
        }
        let hashes = hasher.shingle_hashes(&text);
        let rows = banding.params().rows;
        for band in shared {
            // The band's slots, those whose minimum occurs least often first (fewest letters
            // to swap); the first whose every occurrence has a letter with a look-alike.
            let mut slots: Vec<u64> = sig.slots()[band * rows..(band + 1) * rows].to_vec();
            slots.sort_by_key(|m| hashes.iter().filter(|&h| h == m).count());
            for minimum in slots {
                let starts: Vec<usize> = (0..hashes.len())
                    .filter(|&i| hashes[i] == minimum)
                    .collect();
                let swaps: Option<Vec<(usize, char)>> = starts
                    .iter()
                    .map(|&start| {
                        // A letter of this shingle that has a look-alike, nearest the middle.
                        [2, 1, 3, 0, 4].iter().find_map(|&offset| {
                            let at = start + offset;
                            LOOKALIKES
                                .iter()
                                .find(|(latin, _)| copy.get(at) == Some(latin))
                                .map(|&(_, lookalike)| (at, lookalike))
                        })
                    })
                    .collect();
                if let Some(swaps) = swaps {
                    for (at, lookalike) in swaps {
                        copy[at] = lookalike;
                        edits += 1;
                    }
                    break;
                }
            }
        }
    }
    panic!("no evasive copy after 50 rounds");
}

/// Exact Jaccard similarity of the char 5-gram sets.
fn jaccard(a: &str, b: &str) -> f64 {
    let set = |t: &str| -> HashSet<Vec<char>> {
        let chars: Vec<char> = t.chars().collect();
        chars.windows(5).map(<[char]>::to_vec).collect()
    };
    let (a, b) = (set(a), set(b));
    a.intersection(&b).count() as f64 / a.union(&b).count() as f64
}

/// Targets: five runs of ten consecutive sample documents each, about 6 KB.
fn targets() -> Vec<String> {
    let corpus =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/samples/corpus.jsonl"))
            .unwrap();
    let texts: Vec<String> = corpus
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            v["text"].as_str().unwrap().to_string()
        })
        .filter(|t| !t.is_empty())
        .collect();
    texts
        .chunks(10)
        .take(5)
        .map(|chunk| {
            let mut normalized = String::new();
            params()
                .shingle
                .normalize_into(&chunk.join(" "), &mut normalized);
            normalized
        })
        .collect()
}

#[test]
fn a_crafted_copy_evades_the_public_seed_but_not_a_key() {
    let public = MinHasher::new(params()).unwrap();
    let banding = banding();
    let key = SecretKey::from_bytes(*b"the defender's secret, 32 bytes!");
    let keyed = MinHasher::new_keyed(params(), &key).unwrap();
    for (i, target) in targets().iter().enumerate() {
        assert!(target.is_ascii() && target.len() > 2_500, "target {i}");
        let (copy, edits) = craft_evasive_copy(&public, &banding, target);
        let j = jaccard(target, &copy);
        assert!(j >= 0.9, "target {i}: {edits} edits left Jaccard {j:.3}");
        assert_ne!(copy, *target);
        // Unkeyed: the index would never see the pair.
        assert!(
            shared_bands(
                &banding,
                &public.sketch_text(target),
                &public.sketch_text(&copy)
            )
            .is_empty()
        );
        // Keyed: the copy is a candidate again, and its estimate passes the threshold.
        let (t, c) = (keyed.sketch_text(target), keyed.sketch_text(&copy));
        let shared = shared_bands(&banding, &t, &c);
        assert!(
            !shared.is_empty(),
            "target {i}: keyed copy at J = {j:.3} shares no band"
        );
        let estimate = t.jaccard(&c).unwrap();
        assert!(estimate >= 0.8, "target {i}: keyed estimate {estimate:.3}");
        eprintln!(
            "target {i}: {} chars, {edits} letters swapped, J = {j:.3}; keyed: {} of {} bands \
             shared, estimate {estimate:.3}",
            target.chars().count(),
            shared.len(),
            banding.params().bands
        );
    }
}

/// Whether an index (keyed with `key`, or on the public seed) holding `target` among other
/// documents answers a query by the crafted `copy` with the target, and finds the pair in a
/// dedup pass.
fn index_catches(key: Option<SecretKey>, target: &str, copy: &str, others: &[String]) -> bool {
    use mhdb::db::{Db, IndexParams, Options, QueryOptions};
    let dir = tempfile::tempdir().unwrap();
    let index = IndexParams::for_threshold(params(), 32, 0.8).unwrap();
    assert_eq!(index.banding().unwrap().params(), banding().params());
    let db = Db::create(
        dir.path().join("db"),
        index,
        Options {
            key,
            ..Options::default()
        },
    )
    .unwrap();
    for (i, other) in others.iter().enumerate() {
        db.insert_text(format!("other-{i}"), other).unwrap();
    }
    db.insert_text("target", target).unwrap();
    let found = db
        .query_text(copy, &QueryOptions::default())
        .unwrap()
        .matches
        .iter()
        .any(|m| m.key == b"target");
    // The pair as dedup sees it, from a segment this time.
    db.insert_text("copy", copy).unwrap();
    db.flush().unwrap();
    let mut paired = false;
    db.dedup_pairs(
        0.8,
        |p| {
            paired |= [p.a.as_slice(), p.b.as_slice()] == [b"target".as_slice(), b"copy"];
            Ok(())
        },
        |_, _| {},
    )
    .unwrap();
    assert_eq!(found, paired, "query and dedup disagree");
    found
}

/// The attack against a real database: the copy crafted with the public seed is missed by an
/// unkeyed index (query and dedup alike) and caught by a keyed one.
#[test]
fn a_keyed_database_catches_the_crafted_copy_an_unkeyed_one_misses() {
    let public = MinHasher::new(params()).unwrap();
    let banding = banding();
    let key = SecretKey::from_bytes(*b"the defender's secret, 32 bytes!");
    let targets = targets();
    for (i, target) in targets.iter().enumerate() {
        let (copy, _) = craft_evasive_copy(&public, &banding, target);
        assert!(jaccard(target, &copy) >= 0.9);
        let others: Vec<String> = targets
            .iter()
            .enumerate()
            .filter(|&(j, _)| j != i)
            .map(|(_, t)| t.clone())
            .collect();
        assert!(
            !index_catches(None, target, &copy, &others),
            "target {i}: the unkeyed index found the crafted copy"
        );
        assert!(
            index_catches(Some(key.clone()), target, &copy, &others),
            "target {i}: the keyed index missed the crafted copy"
        );
    }
}
