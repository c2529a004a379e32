//! Golden vectors of Unicode word shingles (`format/hashing.md` §16): the tokens, shingles,
//! shingle hashes and signatures (k = 16 slot by slot, k = 128 by digest) of texts in many
//! scripts (Latin with punctuation and numbers, Chinese, Japanese kana and kanji, Korean, Thai,
//! Lao, Khmer, Myanmar, Arabic, emoji, combining marks, digits of several scripts) under every
//! fold. The expected values in `tests/golden/unicode_words.json` were computed by
//! `tools/conformance/reference_sketch.py unicode-words`, an independent implementation on
//! other UAX #29 and Unicode tables (uniseg, unicodedata2) at the same Unicode version.

use mhdb::sketch::unicode_words::{UNICODE_VERSION, UnicodeWordTokens};
use mhdb::sketch::{MinHasher, SPEC_VERSION, Scheme, ShingleConfig, ShingleKind, SketchParams};
use serde_json::Value;
use xxhash_rust::xxh3::xxh3_64;

fn hex(v: u64) -> String {
    format!("{v:016x}")
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_string())
        .collect()
}

fn vectors() -> Value {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/golden/unicode_words.json"
    ))
    .unwrap();
    serde_json::from_str(&text).unwrap()
}

/// One golden case: its hasher at `k` slots and its normalized text.
struct Case<'a> {
    json: &'a Value,
    shingle: ShingleConfig,
    scheme: Scheme,
    seed: u64,
}

impl<'a> Case<'a> {
    fn new(json: &'a Value) -> Self {
        let kind: ShingleKind = json["shingle"].as_str().unwrap().parse().unwrap();
        Case {
            json,
            shingle: ShingleConfig {
                kind,
                nfkc: json["nfkc"].as_bool().unwrap(),
                ..ShingleConfig::default()
            },
            scheme: json["scheme"].as_str().unwrap().parse().unwrap(),
            seed: json["seed"].as_u64().unwrap(),
        }
    }

    fn hasher(&self, k: usize) -> MinHasher {
        MinHasher::new(SketchParams {
            scheme: self.scheme,
            num_perm: k,
            seed: self.seed,
            shingle: self.shingle,
        })
        .unwrap()
    }

    fn text(&self) -> &'a str {
        self.json["text"].as_str().unwrap()
    }

    fn normalized(&self) -> String {
        let mut out = String::new();
        self.shingle.normalize_into(self.text(), &mut out);
        out
    }

    fn what(&self) -> String {
        format!(
            "{} {} nfkc={} seed={} {:?}",
            self.scheme,
            self.shingle.kind,
            self.shingle.nfkc,
            self.seed,
            self.text()
        )
    }
}

#[test]
fn the_vectors_are_of_this_spec_and_unicode_version() {
    let doc = vectors();
    assert_eq!(doc["spec_version"], SPEC_VERSION);
    let (major, minor, update) = UNICODE_VERSION;
    assert_eq!(doc["unicode_version"], format!("{major}.{minor}.{update}"));
    assert_eq!(doc["cases"].as_array().unwrap().len(), 102);
}

#[test]
fn tokens_and_shingles_match_the_reference() {
    let doc = vectors();
    for json in doc["cases"].as_array().unwrap() {
        let case = Case::new(json);
        let ShingleKind::UnicodeWord(_, folding) = case.shingle.kind else {
            panic!("{}: not a Unicode word kind", case.what());
        };
        let normalized = case.normalized();
        let tokens: Vec<String> = UnicodeWordTokens::new(&normalized, folding)
            .iter()
            .map(str::to_string)
            .collect();
        assert_eq!(tokens, strings(&json["tokens"]), "{}: tokens", case.what());
        let mut shingles = Vec::new();
        case.shingle.for_each_shingle(&normalized, |s| {
            shingles.push(String::from_utf8(s.to_vec()).unwrap())
        });
        assert_eq!(
            shingles,
            strings(&json["shingles"]),
            "{}: shingles",
            case.what()
        );
    }
}

#[test]
fn shingle_hashes_and_signatures_match_the_reference() {
    let doc = vectors();
    for json in doc["cases"].as_array().unwrap() {
        let case = Case::new(json);
        let h16 = case.hasher(16);
        let hashes: Vec<String> = h16
            .shingle_hashes(case.text())
            .into_iter()
            .map(hex)
            .collect();
        assert_eq!(hashes, strings(&json["hashes"]), "{}: hashes", case.what());
        let slots: Vec<String> = h16
            .sketch_text(case.text())
            .slots()
            .iter()
            .map(|&v| hex(v))
            .collect();
        assert_eq!(slots, strings(&json["slots16"]), "{}: k = 16", case.what());
        let s128 = case.hasher(128).sketch_text(case.text());
        let bytes: Vec<u8> = s128.slots().iter().flat_map(|v| v.to_le_bytes()).collect();
        assert_eq!(
            hex(xxh3_64(&bytes)),
            json["digest128"].as_str().unwrap(),
            "{}: k = 128",
            case.what()
        );
    }
}
