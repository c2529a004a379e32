//! `mhdb create` tells an explicit `--threshold` from the default: a simhash index refuses any
//! threshold given, 0.8 (the MinHash default) included, as it refuses every MinHash flag; left
//! out, a MinHash index is tuned for 0.8.

mod common;

use common::cli::{ok, run, s};

#[test]
fn an_explicit_threshold_is_refused_by_a_simhash_index_even_at_the_default() {
    let dir = tempfile::tempdir().unwrap();
    for t in ["0.8", "0.5"] {
        let db = dir.path().join(format!("sim-{t}"));
        let out = run(&["create", s(&db), "--kind", "simhash", "--threshold", t]);
        assert_eq!(out.status.code(), Some(2), "{t}: {out:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("--threshold is a MinHash flag"), "{err}");
        assert!(!db.join("CURRENT").exists());
    }
    let sim = dir.path().join("sim");
    ok(&["create", s(&sim), "--kind", "simhash"]);
    let minhash = dir.path().join("min");
    ok(&["create", s(&minhash)]);
    let stats: serde_json::Value =
        serde_json::from_str(&ok(&["stats", s(&minhash), "--json"])).unwrap();
    assert_eq!(stats["params"]["threshold"], 0.8);
    let explicit = dir.path().join("explicit");
    ok(&["create", s(&explicit), "--threshold", "0.8"]);
    let stats: serde_json::Value =
        serde_json::from_str(&ok(&["stats", s(&explicit), "--json"])).unwrap();
    assert_eq!(stats["params"]["threshold"], 0.8);
}
