//! Golden vectors of keyed hashing (`format/hashing.md` §12) and SimHash (§13): the test key's
//! fingerprint, SipHash-1-3, the derived subkeys, keyed MinHash signatures and band keys, SimHash
//! fingerprints (tf weights unkeyed and keyed, log-tf weights) and their block keys at h = 3 and h
//! = 4. The expected values in `tests/golden/keyed_simhash.json` were computed by
//! `tools/conformance/reference_sketch.py keyed-simhash`, an independent implementation written
//! from the spec (its SipHash-1-3 and SimHash are its own; SHA-256 is Python's).

mod common;

use mhdb::sketch::{
    Banding, LshParams, MinHasher, SPEC_VERSION, Scheme, SecretKey, ShingleConfig, ShingleHash,
    ShingleKind, SimHash, SimHasher, SimParams, SimWeighting, SketchParams,
};
use serde_json::Value;
use siphasher::sip::SipHasher13;

fn hex(v: u64) -> String {
    format!("{v:016x}")
}

fn strings(v: &Value) -> Vec<&str> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap())
        .collect()
}

fn vectors() -> Value {
    common::vectors::golden("keyed_simhash.json")
}

fn test_key(doc: &Value) -> SecretKey {
    common::vectors::published_test_key(doc)
}

fn shingle(case: &Value) -> ShingleConfig {
    let kind: ShingleKind = case["shingle"].as_str().unwrap().parse().unwrap();
    ShingleConfig {
        kind,
        nfkc: case["nfkc"].as_bool().unwrap(),
        ..ShingleConfig::default()
    }
}

#[test]
fn key_fingerprint_siphash_and_subkeys_match_the_reference() {
    let doc = vectors();
    assert_eq!(doc["spec_version"], SPEC_VERSION);
    let key = test_key(&doc);
    assert_eq!(
        key.fingerprint().to_string(),
        doc["fingerprint"].as_str().unwrap()
    );
    // The reference's own SipHash-1-3 against the crate mhdb uses.
    let sip = SipHasher13::new_with_keys(0x0706_0504_0302_0100, 0x0F0E_0D0C_0B0A_0908);
    let want = strings(&doc["siphash13"]);
    assert_eq!(want.len(), 16);
    for (n, want) in want.into_iter().enumerate() {
        let message: Vec<u8> = (0..n as u8).collect();
        assert_eq!(hex(sip.hash(&message)), want, "{n}-byte message");
    }
    // Subkeys: mhdb's keyed shingle hash equals SipHash-1-3 under the reference's subkey.
    for (label, words) in doc["subkeys"].as_object().unwrap() {
        let (name, seed) = label.split_once('/').unwrap();
        let words = strings(words);
        let word = |i: usize| u64::from_str_radix(words[i], 16).unwrap();
        let reference = SipHasher13::new_with_keys(word(0), word(1));
        let ShingleHash::Keyed(ours) = key.shingle_hash(name, seed.parse().unwrap()) else {
            panic!("{label}: not keyed");
        };
        for message in [&b""[..], b"abcde", b"the quick brown fox jumps"] {
            assert_eq!(ours.hash(message), reference.hash(message), "{label}");
        }
    }
}

#[test]
fn keyed_minhash_signatures_match_the_reference() {
    let doc = vectors();
    let key = test_key(&doc);
    let cases = doc["keyed_minhash"].as_array().unwrap();
    assert_eq!(cases.len(), 30);
    for case in cases {
        let scheme: Scheme = case["scheme"].as_str().unwrap().parse().unwrap();
        let params = SketchParams {
            scheme,
            num_perm: 16,
            seed: case["seed"].as_u64().unwrap(),
            shingle: shingle(case),
        };
        let input = case["text"].as_str().unwrap();
        let what = format!("{scheme} {} {input:?}", params.shingle.kind);
        let sig = MinHasher::new_keyed(params, &key)
            .unwrap()
            .sketch_text(input);
        let got: Vec<String> = sig.slots().iter().map(|&v| hex(v)).collect();
        assert_eq!(got, strings(&case["slots16"]), "{what}: slots");
        let banding = Banding::new(&params, LshParams::new(4, 4, 16).unwrap()).unwrap();
        let got: Vec<String> = banding
            .band_keys(sig.slots())
            .unwrap()
            .into_iter()
            .map(hex)
            .collect();
        assert_eq!(got, strings(&case["bands4x4"]), "{what}: band keys");
    }
}

#[test]
fn simhash_fingerprints_and_block_keys_match_the_reference() {
    let doc = vectors();
    let key = test_key(&doc);
    let cases = doc["simhash"].as_array().unwrap();
    assert_eq!(cases.len(), 108);
    for case in cases {
        let keyed = case["keyed"].as_bool().unwrap();
        let input = case["text"].as_str().unwrap();
        let weighting: SimWeighting = case["weighting"].as_str().unwrap().parse().unwrap();
        let params = |h| SimParams {
            seed: case["seed"].as_u64().unwrap(),
            shingle: shingle(case),
            weighting,
            max_hamming: h,
        };
        let what = format!(
            "{} {weighting} keyed={keyed} {input:?}",
            params(3).shingle.kind
        );
        for (h, field) in [(3, "blocks_h3"), (4, "blocks_h4")] {
            let hasher = SimHasher::with_key(params(h), keyed.then_some(&key)).unwrap();
            let fp = hasher.sketch_text(input);
            assert_eq!(
                hex(fp.bits()),
                case["fingerprint"].as_str().unwrap(),
                "{what}"
            );
            let got: Vec<String> = hasher.block_keys(fp).into_iter().map(hex).collect();
            assert_eq!(got, strings(&case[field]), "{what}: {field}");
        }
    }
    let distance = &doc["distance"];
    let parse = |f: &str| SimHash(u64::from_str_radix(distance[f].as_str().unwrap(), 16).unwrap());
    let (a, b) = (parse("a"), parse("b"));
    assert_eq!(
        u64::from(a.hamming(b)),
        distance["hamming"].as_u64().unwrap()
    );
    let want = distance["cosine_estimate"].as_f64().unwrap();
    assert!((a.cosine_estimate(b) - want).abs() < 1e-15, "{want}");
}
