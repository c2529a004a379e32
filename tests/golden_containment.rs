//! A containment index's size classes and class-seeded band keys (`format/containment.md`
//! §1–§2) agree with `tests/golden/containment.json`, computed by
//! `tools/conformance/reference_sketch.py containment`, an independent implementation written
//! from the spec. A shipped containment index depends on every one of these numbers.

use mhdb::sketch::containment::size_class;
use mhdb::sketch::{ClassBanding, LshParams, MinHasher, Scheme, ShingleConfig, SketchParams};
use serde_json::Value;

fn vectors() -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden/containment.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn size_classes_match_the_reference() {
    let v = vectors();
    let classes = v["classes"].as_array().unwrap();
    assert!(classes.len() > 20);
    for pair in classes {
        let (size, class) = (pair[0].as_u64().unwrap(), pair[1].as_u64().unwrap());
        assert_eq!(u64::from(size_class(size)), class, "set size {size}");
    }
}

#[test]
fn class_band_keys_match_the_reference() {
    let v = vectors();
    let bandings: Vec<LshParams> = v["bandings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| LshParams {
            bands: b[0].as_u64().unwrap() as usize,
            rows: b[1].as_u64().unwrap() as usize,
        })
        .collect();
    assert_eq!(bandings, mhdb::db::CONTAINMENT_BANDINGS);
    let docs = v["documents"].as_array().unwrap();
    assert!(docs.len() >= 12);
    for doc in docs {
        let scheme = match doc["scheme"].as_str().unwrap() {
            "oph" => Scheme::Oph,
            "kperm" => Scheme::KPerm,
            other => panic!("scheme {other}"),
        };
        let sketch = SketchParams {
            scheme,
            num_perm: 512,
            seed: doc["seed"].as_u64().unwrap(),
            shingle: ShingleConfig::default(),
        };
        let text = doc["text"].as_str().unwrap();
        let hasher = MinHasher::new(sketch).unwrap();
        let slots = hasher.sketch_text(text);
        let set_size = doc["set_size"].as_u64().unwrap();
        let own = u64::from(hasher.set_size_of_text(text).unwrap());
        // Each text is given with its own set size, then with 1000.
        assert!(
            own == set_size || set_size == 1000,
            "{text:?}: {own} against {set_size}"
        );
        assert_eq!(
            u64::from(size_class(set_size)),
            doc["class"].as_u64().unwrap()
        );
        let keys: Vec<String> = ClassBanding::new(&sketch, &bandings)
            .unwrap()
            .band_keys(slots.slots(), set_size)
            .unwrap()
            .iter()
            .map(|k| format!("{k:016x}"))
            .collect();
        let want: Vec<&str> = doc["band_keys"]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| k.as_str().unwrap())
            .collect();
        assert_eq!(
            keys, want,
            "{text:?} {scheme:?} seed {} size {set_size}",
            sketch.seed
        );
    }
}
