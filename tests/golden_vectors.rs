//! Golden vectors pin hash spec v1 (`format/hashing.md`): signatures (k = 16 slot by slot, k = 128
//! by digest), b-bit packings and band keys for both schemes, char and word shingles, NFKC,
//! non-ASCII, empty and tiny texts. The expected values in `tests/golden/vectors.json` were
//! computed by `tools/conformance/reference_sketch.py`, an independent implementation written from
//! the spec, so a passing test means the code and the spec agree; a signature computed today must
//! equal one computed next year.

mod common;

use mhdb::sketch::{
    Banding, LshParams, MinHasher, SPEC_VERSION, Scheme, ShingleConfig, ShingleKind, SketchParams,
    pack,
};
use xxhash_rust::xxh3::xxh3_64;

fn hex(v: u64) -> String {
    format!("{v:016x}")
}

#[test]
fn signatures_packings_and_band_keys_match_the_reference() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/golden/vectors.json"
    ))
    .unwrap();
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(doc["spec_version"], SPEC_VERSION);
    let cases = doc["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 50);
    for case in cases {
        let scheme: Scheme = case["scheme"].as_str().unwrap().parse().unwrap();
        let kind: ShingleKind = case["shingle"].as_str().unwrap().parse().unwrap();
        let nfkc = case["nfkc"].as_bool().unwrap();
        let seed = case["seed"].as_u64().unwrap();
        let input = case["text"].as_str().unwrap();
        let params = |k| SketchParams {
            shingle: ShingleConfig {
                kind,
                nfkc,
                ..ShingleConfig::default()
            },
            ..common::params::sketch(scheme, k, seed)
        };
        let what = format!("{scheme} {kind} nfkc={nfkc} seed={seed} {input:?}");
        let s16 = MinHasher::new(params(16)).unwrap().sketch_text(input);
        let got: Vec<String> = s16.slots().iter().map(|&v| hex(v)).collect();
        let want: Vec<&str> = case["slots16"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        assert_eq!(got, want, "{what}: k = 16 slots");
        let s128 = MinHasher::new(params(128)).unwrap().sketch_text(input);
        let bytes: Vec<u8> = s128.slots().iter().flat_map(|v| v.to_le_bytes()).collect();
        assert_eq!(
            hex(xxh3_64(&bytes)),
            case["digest128"].as_str().unwrap(),
            "{what}: k = 128"
        );
        for (bits, want) in case["packed16"].as_object().unwrap() {
            let bits: u32 = bits.parse().unwrap();
            let packed = pack(s16.slots(), bits).unwrap();
            let got: String = packed.iter().map(|b| format!("{b:02x}")).collect();
            assert_eq!(got, want.as_str().unwrap(), "{what}: packed at {bits} bits");
        }
        let banding = Banding::new(&params(16), LshParams::new(4, 4, 16).unwrap()).unwrap();
        let got: Vec<String> = banding
            .band_keys(s16.slots())
            .unwrap()
            .into_iter()
            .map(hex)
            .collect();
        let want: Vec<&str> = case["bands4x4"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        assert_eq!(got, want, "{what}: band keys");
    }
}
