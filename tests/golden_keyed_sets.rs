//! Golden vectors of stored shingle sets (`format/hashing.md` §14) under the published test
//! key (§12.4): the set subkeys, and for each text of the keyed test configurations its sorted
//! stored values under the three derivations (unkeyed, keyed under the set key, and version
//! 2's keyed derivation). The expected values in `tests/golden/keyed_sets.json` were computed
//! by `tools/conformance/reference_sketch.py keyed-sets`, an independent implementation
//! written from the spec.

mod common;

use mhdb::sketch::{
    MinHasher, Scheme, SecretKey, SetDerivation, ShingleConfig, ShingleKind, SketchParams,
};
use serde_json::Value;
use siphasher::sip::SipHasher13;

fn vectors() -> Value {
    common::vectors::golden("keyed_sets.json")
}

fn test_key(doc: &Value) -> SecretKey {
    common::vectors::published_test_key(doc)
}

fn params(case: &Value) -> SketchParams {
    let kind: ShingleKind = case["shingle"].as_str().unwrap().parse().unwrap();
    SketchParams {
        scheme: case["scheme"].as_str().unwrap().parse::<Scheme>().unwrap(),
        num_perm: 16,
        seed: case["seed"].as_u64().unwrap(),
        shingle: ShingleConfig {
            kind,
            nfkc: case["nfkc"].as_bool().unwrap(),
            ..ShingleConfig::default()
        },
    }
}

fn hex_values(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_string())
        .collect()
}

#[test]
fn set_subkeys_match_the_reference() {
    let doc = vectors();
    let key = test_key(&doc);
    let subkeys = doc["set_subkeys"].as_object().unwrap();
    assert_eq!(subkeys.len(), 5);
    for (name_seed, words) in subkeys {
        let (name, seed) = name_seed.split_once('/').unwrap();
        let words = hex_values(words);
        let word = |i: usize| u64::from_str_radix(&words[i], 16).unwrap();
        let reference = SipHasher13::new_with_keys(word(0), word(1));
        let set_key = key.set_key(name, seed.parse().unwrap());
        for message in [&b""[..], b"abcde", b"a longer message of many words"] {
            assert_eq!(
                set_key.hash(message),
                reference.hash(message),
                "{name_seed} {message:?}"
            );
        }
    }
}

#[test]
fn stored_values_match_the_reference_under_each_derivation() {
    let doc = vectors();
    let key = test_key(&doc);
    let cases = doc["sets"].as_array().unwrap();
    assert_eq!(cases.len(), 30);
    for case in cases {
        let p = params(case);
        let text = case["text"].as_str().unwrap();
        let keyed = MinHasher::new_keyed(p, &key).unwrap();
        let hashers = [
            (
                "unkeyed",
                MinHasher::new(p).unwrap(),
                SetDerivation::Unkeyed,
            ),
            ("keyed", keyed.clone(), SetDerivation::Keyed),
            (
                "keyed_v2",
                keyed.with_version2_sets(),
                SetDerivation::KeyedV2Leaking,
            ),
        ];
        for (field, hasher, derivation) in hashers {
            assert_eq!(hasher.set_derivation(), derivation);
            let got: Vec<String> = hasher
                .shingle_set(text)
                .values()
                .iter()
                .map(|v| format!("{v:08x}"))
                .collect();
            assert_eq!(got, hex_values(&case[field]), "{field} {case}");
            // The set a signature carries is the same, and the signature does not depend on
            // the derivation.
            let sig = hasher.sketch_text_with_set(text);
            assert_eq!(sig.shingle_set(), Some(&hasher.shingle_set(text)));
            assert_eq!(sig.slots(), hasher.sketch_text(text).slots());
        }
    }
}
