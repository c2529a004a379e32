//! Golden vectors of the exact hash (`format/hashing.md` §17) under the published test key
//! (§12.4): SipHash-1-3 with 128-bit output, the exact subkeys, and the exact hashes of texts
//! (normalized bytes included) and token lists, unkeyed and keyed. The expected values in
//! `tests/golden/exact_hash.json` were computed by `tools/conformance/reference_sketch.py
//! exact`, an independent implementation written from the spec.

mod common;

use mhdb::sketch::{ExactHasher, OwnedToken, SecretKey, ShingleConfig};
use serde_json::Value;

fn vectors() -> Value {
    common::vectors::golden("exact_hash.json")
}

fn test_key(doc: &Value) -> SecretKey {
    common::vectors::published_test_key(doc)
}

fn hex32(h: u128) -> String {
    format!("{h:032x}")
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The 128-bit SipHash-1-3 under k0 = 0x0706…00, k1 = 0x0f0e…08 (§12.4's words) of the
/// messages `00 01 … n−1`, n < 16: one- and two-word messages, and every tail length.
#[test]
fn siphash13_128_matches_the_reference() {
    let doc = vectors();
    let expected = doc["siphash13_128"].as_array().unwrap();
    assert_eq!(expected.len(), 16);
    let h = ExactHasher::Keyed(0x0706_0504_0302_0100, 0x0f0e_0d0c_0b0a_0908);
    for (n, want) in expected.iter().enumerate() {
        let msg: Vec<u8> = (0..n as u8).collect();
        // `hash_bytes` stores 0 as 1; no vector is 0.
        assert_eq!(hex32(h.hash_bytes(&msg)), want.as_str().unwrap(), "n = {n}");
    }
}

/// The keyed exact hash's key words, through the hasher: hashing the empty message under
/// the derived key equals hashing it under the reference's words.
#[test]
fn exact_subkeys_match_the_reference() {
    let doc = vectors();
    let key = test_key(&doc);
    let subkeys = doc["exact_subkeys"].as_object().unwrap();
    assert_eq!(subkeys.len(), 3);
    for (name_seed, words) in subkeys {
        let (name, seed) = name_seed.split_once('/').unwrap();
        let word = |i: usize| u64::from_str_radix(words[i].as_str().unwrap(), 16).unwrap();
        let derived = ExactHasher::new(name, seed.parse().unwrap(), Some(&key));
        assert_eq!(derived, ExactHasher::Keyed(word(0), word(1)), "{name_seed}");
    }
}

#[test]
fn text_exact_hashes_match_the_reference() {
    let doc = vectors();
    let key = test_key(&doc);
    let cases = doc["texts"].as_array().unwrap();
    assert!(cases.len() >= 30);
    for case in cases {
        let (scheme, seed) = (
            case["scheme"].as_str().unwrap(),
            case["seed"].as_u64().unwrap(),
        );
        let cfg = ShingleConfig {
            nfkc: case["nfkc"].as_bool().unwrap(),
            ..ShingleConfig::default()
        };
        let text = case["text"].as_str().unwrap();
        let mut normalized = String::new();
        cfg.normalize_into(text, &mut normalized);
        assert_eq!(hex(normalized.as_bytes()), case["normalized"], "{text:?}");
        let unkeyed = ExactHasher::new(scheme, seed, None);
        let keyed = ExactHasher::new(scheme, seed, Some(&key));
        assert_eq!(
            hex32(unkeyed.hash_text(&cfg, text)),
            case["unkeyed"],
            "{case}"
        );
        assert_eq!(hex32(keyed.hash_text(&cfg, text)), case["keyed"], "{case}");
    }
}

#[test]
fn token_list_exact_hashes_match_the_reference() {
    let doc = vectors();
    let key = test_key(&doc);
    let cases = doc["token_lists"].as_array().unwrap();
    assert!(cases.len() >= 30);
    for case in cases {
        let (scheme, seed) = (
            case["scheme"].as_str().unwrap(),
            case["seed"].as_u64().unwrap(),
        );
        let tokens: Vec<OwnedToken> = case["tokens"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| match t {
                Value::String(s) => OwnedToken::Str(s.clone()),
                n => OwnedToken::Int(n.as_i64().unwrap()),
            })
            .collect();
        let tokens = OwnedToken::borrow_all(&tokens);
        let bytes = mhdb::sketch::exact::token_list_bytes(&tokens).unwrap();
        assert_eq!(hex(&bytes), case["bytes"], "{case}");
        let unkeyed = ExactHasher::new(scheme, seed, None);
        let keyed = ExactHasher::new(scheme, seed, Some(&key));
        assert_eq!(
            hex32(unkeyed.hash_tokens(&tokens).unwrap()),
            case["unkeyed"]
        );
        assert_eq!(hex32(keyed.hash_tokens(&tokens).unwrap()), case["keyed"]);
    }
}
