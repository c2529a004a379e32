//! The golden-vector files of `tests/golden/*.json`, written by the reference implementation
//! (`tools/conformance/reference_sketch.py`), and the published test key they are keyed under
//! (`format/hashing.md` §12.4).

use mhdb::sketch::SecretKey;
use serde_json::Value;

/// The parsed `tests/golden/<name>`.
pub fn golden(name: &str) -> Value {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// The published test key (bytes 0, 1, …, 31), after checking that the file `doc` names it.
pub fn published_test_key(doc: &Value) -> SecretKey {
    assert_eq!(
        doc["test_key"].as_str().unwrap(),
        (0u8..32).map(|b| format!("{b:02x}")).collect::<String>(),
        "the published test key"
    );
    SecretKey::from_bytes(std::array::from_fn(|i| i as u8))
}
