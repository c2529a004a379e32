//! Golden vectors of token lists (`format/hashing.md` §15): tokens' hashing inputs, n-gram
//! shingles, shingle hashes and signatures (k = 16 slot by slot, k = 128 by digest) of both
//! schemes at widths 1, 2 and 3, unkeyed and under §12.4's test key; and signatures of
//! precomputed element hashes. The expected values in `tests/golden/tokens.json` were computed
//! by `tools/conformance/reference_sketch.py tokens`, an independent implementation written
//! from the spec.

use mhdb::sketch::tokens::for_each_token_shingle;
use mhdb::sketch::{MinHasher, SPEC_VERSION, Scheme, SecretKey, SketchParams, Token};
use serde_json::Value;
use xxhash_rust::xxh3::xxh3_64;

fn hex(v: u64) -> String {
    format!("{v:016x}")
}

fn hex_bytes(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn strings(v: &Value) -> Vec<&str> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap())
        .collect()
}

fn vectors() -> Value {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/golden/tokens.json"
    ))
    .unwrap();
    serde_json::from_str(&text).unwrap()
}

fn token(v: &Value) -> Token<'_> {
    match v {
        Value::String(s) => Token::Str(s),
        v => Token::Int(v.as_i64().unwrap()),
    }
}

fn tokens(v: &Value) -> Vec<Token<'_>> {
    v.as_array().unwrap().iter().map(token).collect()
}

fn shingles(tokens: &[Token<'_>], width: usize) -> Vec<String> {
    let mut out = Vec::new();
    for_each_token_shingle(tokens, width, |s| out.push(hex_bytes(s))).unwrap();
    out
}

#[test]
fn hashing_inputs_and_ngrams_match_the_reference() {
    let doc = vectors();
    assert_eq!(doc["spec_version"], SPEC_VERSION);
    let inputs = doc["inputs"].as_array().unwrap();
    assert_eq!(inputs.len(), 7);
    for case in inputs {
        let want = case["input"].as_str().unwrap();
        assert_eq!(shingles(&[token(&case["token"])], 1), [want], "{case}");
    }
    let ngrams = doc["ngrams"].as_array().unwrap();
    assert_eq!(ngrams.len(), 3);
    for case in ngrams {
        let width = case["width"].as_u64().unwrap() as usize;
        let got = shingles(&tokens(&case["tokens"]), width);
        assert_eq!(got, strings(&case["shingles"]), "{case}");
    }
}

#[test]
fn token_signatures_match_the_reference() {
    let doc = vectors();
    let key_hex = doc["test_key"].as_str().unwrap();
    let key_bytes: Vec<u8> = (0..32)
        .map(|i| u8::from_str_radix(&key_hex[2 * i..2 * i + 2], 16).unwrap())
        .collect();
    let key = SecretKey::from_bytes(key_bytes.try_into().unwrap());
    let cases = doc["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 90);
    for case in cases {
        let scheme: Scheme = case["scheme"].as_str().unwrap().parse().unwrap();
        let seed = case["seed"].as_u64().unwrap();
        let keyed = case["keyed"].as_bool().unwrap();
        let width = case["width"].as_u64().unwrap() as usize;
        let list = tokens(&case["tokens"]);
        let hasher = |num_perm| {
            let params = SketchParams {
                scheme,
                num_perm,
                seed,
                ..SketchParams::default()
            };
            MinHasher::with_key(params, keyed.then_some(&key)).unwrap()
        };
        let hashes = hasher(16).token_shingle_hashes(&list, width).unwrap();
        let hashes: Vec<String> = hashes.into_iter().map(hex).collect();
        assert_eq!(hashes, strings(&case["hashes"]), "{case}");
        let s16 = hasher(16).sketch_tokens(&list, width).unwrap();
        let s16: Vec<String> = s16.slots().iter().map(|&v| hex(v)).collect();
        assert_eq!(s16, strings(&case["slots16"]), "{case}");
        let s128 = hasher(128).sketch_tokens(&list, width).unwrap();
        let bytes: Vec<u8> = s128.slots().iter().flat_map(|v| v.to_le_bytes()).collect();
        assert_eq!(hex(xxh3_64(&bytes)), case["digest128"].as_str().unwrap());
    }
}

#[test]
fn given_element_hashes_match_the_reference() {
    let doc = vectors();
    let given = &doc["given_hashes"];
    let hashes: Vec<u64> = strings(&given["hashes"])
        .into_iter()
        .map(|h| u64::from_str_radix(h, 16).unwrap())
        .collect();
    for (scheme, field) in [
        (Scheme::Oph, "oph_seed7_slots16"),
        (Scheme::KPerm, "kperm_seed7_slots16"),
    ] {
        let hasher = MinHasher::new(SketchParams {
            scheme,
            num_perm: 16,
            seed: 7,
            ..SketchParams::default()
        })
        .unwrap();
        let slots: Vec<String> = hasher
            .sketch_hashes(&hashes)
            .slots()
            .iter()
            .map(|&v| hex(v))
            .collect();
        assert_eq!(slots, strings(&given[field]), "{scheme:?}");
    }
}
