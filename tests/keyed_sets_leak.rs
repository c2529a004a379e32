//! The known-plaintext experiment on a keyed index's stored sets (`format/v3-design.md`, "Keyed
//! stored sets"; `format/hashing.md` §14).
//!
//! An attacker holds a shipped copy of a keyed `--store-sets` index (OPH, k = 128) and the
//! texts of its 2,000 documents, and so learns which stored value each of their shingles has.
//! Here the attacker is given that mapping whole, which is all that matching stored sets to
//! texts can ever give. For each shingle of 200 new documents whose value it knows, it then
//! predicts the OPH bin the shingle's keyed hash falls in (spec §5: the bin is the top half of
//! the hash times k, shifted down 32 bits), which is what the stored value told under format
//! version 2's derivation (the top half of that very hash). Predicting bins predicts which
//! shingles become a signature's minima: what keying is meant to hide.
//!
//! Under version 3's derivation (a set key of its own) the hit rate must be that of a guess,
//! 1/k, within five standard deviations; under version 2's it must be above 0.95, so that the
//! test can fail.

mod common;

use std::collections::{HashMap, HashSet};

use mhdb::db::{Db, Durability, IndexParams, Options, WriteBatch};
use mhdb::sketch::{MinHasher, Scheme, SecretKey, SetDerivation, ShingleConfig, SketchParams};

use common::rng::SplitMix64;

const NUM_PERM: usize = 128;
const KNOWN_DOCS: usize = 2_000;
const NEW_DOCS: usize = 200;
const SENTENCES_PER_DOC: u64 = 4;

fn key() -> SecretKey {
    SecretKey::from_bytes(std::array::from_fn(|i| (i as u8).wrapping_mul(37) ^ 0x5a))
}

fn sketch_params() -> SketchParams {
    SketchParams {
        scheme: Scheme::Oph,
        num_perm: NUM_PERM,
        seed: 0,
        shingle: ShingleConfig::default(),
    }
}

/// The sentences of the sample corpus: what the generator writes documents from, so that new
/// documents share shingles with stored ones.
fn sentences() -> Vec<String> {
    let corpus = include_str!("../samples/corpus.jsonl");
    let mut out = Vec::new();
    for line in corpus.lines().filter(|l| !l.trim().is_empty()) {
        let doc: serde_json::Value = serde_json::from_str(line).unwrap();
        let text = doc["text"].as_str().unwrap();
        out.extend(
            text.split(". ")
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(|s| format!("{}.", s.trim_end_matches('.'))),
        );
    }
    out.sort();
    out.dedup();
    out
}

/// `n` documents of a few sentences each, drawn with `rng`.
fn documents(sentences: &[String], rng: &mut SplitMix64, n: usize) -> Vec<String> {
    (0..n)
        .map(|_| {
            (0..SENTENCES_PER_DOC)
                .map(|_| sentences[rng.below(sentences.len() as u64) as usize].as_str())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

/// The distinct shingles (their bytes) of `text`.
fn shingles(text: &str) -> HashSet<Vec<u8>> {
    let config = sketch_params().shingle;
    let mut normalized = String::new();
    config.normalize_into(text, &mut normalized);
    let mut out = HashSet::new();
    config.for_each_shingle(&normalized, |s| {
        out.insert(s.to_vec());
    });
    out
}

/// The stored value `hasher` gives one shingle: the one value of the set of a document that
/// is that shingle alone.
fn stored_value(hasher: &MinHasher, shingle: &[u8]) -> u32 {
    let sig = hasher.sketch_shingles_with_set(|f| f(shingle));
    let values = sig.shingle_set().unwrap().values();
    assert_eq!(values.len(), 1);
    values[0]
}

/// What the attacker achieves against `hasher`'s stored values: (hits, predictions, shingles
/// of the new documents in all).
fn attack(hasher: &MinHasher, known: &[String], new: &[String]) -> (u64, u64, u64) {
    // Learned from the copy and the known texts: shingle → stored value.
    let mut learned: HashMap<Vec<u8>, u32> = HashMap::new();
    for text in known {
        for shingle in shingles(text) {
            if let std::collections::hash_map::Entry::Vacant(slot) = learned.entry(shingle) {
                let value = stored_value(hasher, slot.key());
                slot.insert(value);
            }
        }
    }
    let shingle_hash = hasher.shingle_hash();
    let bin_of_top_half = |top: u64| ((top * NUM_PERM as u64) >> 32) as usize;
    // Each distinct shingle counts once: documents drawn from one pool of sentences repeat
    // shingles, and repeated predictions are not independent draws.
    let mut seen = HashSet::new();
    let (mut hits, mut predictions, mut all) = (0u64, 0u64, 0u64);
    for text in new {
        for shingle in shingles(text) {
            if !seen.insert(shingle.clone()) {
                continue;
            }
            all += 1;
            let Some(&value) = learned.get(&shingle) else {
                continue;
            };
            predictions += 1;
            // The bin the signature puts this shingle in (only the key's holder knows it).
            let actual = bin_of_top_half(shingle_hash.hash_bytes(&shingle) >> 32);
            hits += u64::from(bin_of_top_half(u64::from(value)) == actual);
        }
    }
    (hits, predictions, all)
}

#[test]
fn stored_sets_predict_no_signature_bin() {
    let sentences = sentences();
    assert!(sentences.len() > 500, "{} sentences", sentences.len());
    let mut rng = SplitMix64(0x6b6e_6f77_6e00);
    let known = documents(&sentences, &mut rng, KNOWN_DOCS);
    let new = documents(&sentences, &mut rng, NEW_DOCS);

    // The index of format version 3, and the hasher its writers sign with.
    let tmp = tempfile::tempdir().unwrap();
    let params = IndexParams::for_threshold(sketch_params(), IndexParams::default().bits, 0.8)
        .unwrap()
        .with_stored_sets()
        .unwrap();
    let opts = Options {
        key: Some(key()),
        durability: Durability::None,
        ..Options::default()
    };
    let db = Db::create(tmp.path().join("db"), params, opts).unwrap();
    let mut batch = WriteBatch::new();
    for (i, text) in known.iter().enumerate() {
        batch.insert_text(format!("doc-{i}"), text.as_str());
    }
    db.write(&batch).unwrap();
    assert_eq!(db.sets_derivation(), Some(SetDerivation::Keyed));
    let v3 = db.hasher().unwrap();
    assert_eq!(v3.set_derivation(), SetDerivation::Keyed);

    let (hits, predictions, all) = attack(v3, &known, &new);
    // The attack has material: most shingles of a new document were seen in known ones.
    assert!(
        predictions * 2 > all,
        "{predictions} of {all} shingles known"
    );
    let p = 1.0 / NUM_PERM as f64;
    let sigma = (p * (1.0 - p) / predictions as f64).sqrt();
    let rate = hits as f64 / predictions as f64;
    assert!(
        rate <= p + 5.0 * sigma,
        "version 3: {hits} of {predictions} bins predicted ({rate:.4}; chance {p:.4}, σ {sigma:.4})"
    );

    // The same experiment against version 2's derivation, which an upgraded index may keep.
    let v2 = MinHasher::new_keyed(sketch_params(), &key())
        .unwrap()
        .with_version2_sets();
    assert_eq!(v2.set_derivation(), SetDerivation::KeyedV2Leaking);
    let (hits, predictions, _) = attack(&v2, &known, &new);
    let rate = hits as f64 / predictions as f64;
    assert!(
        rate > 0.95,
        "version 2: only {hits} of {predictions} bins predicted"
    );
}
