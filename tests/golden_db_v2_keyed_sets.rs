//! A keyed index with stored shingle sets, format version 2, is pinned by a committed
//! database: `tests/golden/db-v2-keyed-sets/` was written by the last build that writes
//! version 2, under the published test key (`format/hashing.md` §12.4, the 32 bytes
//! `00 01 … 1f`). Its stored sets use version 2's derivation (the top 32 bits of each
//! shingle's keyed hash), which format version 3 keeps only behind the SETS_KEYED_V2 feature
//! (`format/v3-design.md`, "Keyed stored sets"): the fixture is what `mhdb upgrade` of such an
//! index is proven on. It holds a compacted segment, a flushed one, a deletion list and a
//! sealed WAL file whose inserts carry their sets (op tag 3).
//!
//! These tests open the committed bytes read-only in place (no byte changes) and a copy
//! upgraded to version 3 (a writer's open of version 2 is refused), and check them against
//! `tests/golden/db-v2-keyed-sets.expected.json`: every live key's signature, the deleted keys
//! absent, `verify` clean, query answers re-ranked by exact Jaccard, and every live document
//! found by its own text at exact Jaccard 1 (its stored set is its text's under the key). This
//! build's writer, which writes version 3, must give the same answers:
//! `todays_writer_answers_as_the_fixture`. The generator is `regenerate_fixture` (ignored):
//! `MHDB_REGENERATE_DB_FIXTURE=1 cargo test --release --test golden_db_v2_keyed_sets -- --ignored`
//! (it refuses to write over a fixture of another version).

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use mhdb::db::{Db, Durability, IndexParams, Options, QueryOptions, UpgradeOptions, WriteBatch};
use mhdb::sketch::{SecretKey, SetDerivation};
use mhdb::storage::vfs::StdFs;
use serde_json::{Value, json};

use common::cli::{ok, run, s};
use common::golden::*;

/// What `stats` and `verify` say of sets that leak.
const LEAK_WARNING: &str =
    "sets: keyed, version-2 derivation (leaks keyed hashes; mhdb upgrade --drop-sets removes them)";

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden/db-v2-keyed-sets");
const EXPECTED: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/golden/db-v2-keyed-sets.expected.json"
);

/// The fingerprint of the published test key (`format/hashing.md` §12.4).
const TEST_KEY_FINGERPRINT: &str =
    "94948766ffd05599c05f1e0e6a385288a9a25ff42974c0cb9a9acb5c4c16821e";

fn test_key() -> SecretKey {
    SecretKey::from_bytes(std::array::from_fn(|i| i as u8))
}

fn expected() -> Value {
    serde_json::from_str(&std::fs::read_to_string(EXPECTED).unwrap()).unwrap()
}

/// The fixture's parameters: those of the other fixtures, with stored sets, keyed.
fn keyed_sets_params() -> IndexParams {
    IndexParams {
        key_fingerprint: test_key().fingerprint(),
        ..params().with_stored_sets().unwrap()
    }
}

fn keyed(opts: Options) -> Options {
    Options {
        key: Some(test_key()),
        ..opts
    }
}

fn open_read_only(dir: &Path) -> Db {
    Db::open_with_vfs(Arc::new(StdFs), dir, keyed(Options::default()), true).unwrap()
}

/// Everything `check_answers` checks (signatures, deletions, query answers, `verify`), and the
/// stored sets: each query is re-ranked by exact Jaccard with the recorded estimates, and each
/// live document's own text finds it at exact Jaccard 1.
fn check_keyed_sets(db: &Db, expected: &Value, what: &str) {
    assert_eq!(db.params(), &keyed_sets_params(), "{what}: parameters");
    check_answers(db, expected, what);
    for query in expected["queries"].as_array().unwrap() {
        let text = query["text"].as_str().unwrap();
        let result = db.query_text(text, &QueryOptions::default()).unwrap();
        assert!(result.stats.exact, "{what}: query {text:?} not re-ranked");
        let want = query["matches"].as_array().unwrap();
        for (m, want) in result.matches.iter().zip(want) {
            let estimate = want["estimate"].as_f64().unwrap();
            assert!((m.estimate - estimate).abs() < 1e-9, "{what}: {text:?}");
        }
    }
    for e in expected["live"].as_array().unwrap() {
        let (key, text) = (e["key"].as_str().unwrap(), e["text"].as_str().unwrap());
        let result = db.query_text(text, &QueryOptions::default()).unwrap();
        let hit = result.matches.iter().find(|m| m.key == key.as_bytes());
        assert_eq!(
            hit.map(|m| m.similarity),
            Some(1.0),
            "{what}: {key:?} is not found by its own text at exact Jaccard 1"
        );
    }
}

#[test]
fn committed_fixture_holds_every_file_kind() {
    let files = snapshot(Path::new(FIXTURE));
    let count = |prefix: &str, suffix: &str| {
        files
            .keys()
            .filter(|n| n.starts_with(prefix) && n.ends_with(suffix))
            .count()
    };
    assert_eq!(count("MANIFEST-", ""), 1);
    assert_eq!(count("seg-", ".seg"), 2, "{:?}", files.keys());
    assert_eq!(count("del-", ".del"), 1);
    assert_eq!(count("wal-", ".log"), 1);
    assert_eq!(current_version(Path::new(FIXTURE)), Some(2));
    let manifest = files
        .iter()
        .find(|(n, _)| n.starts_with("MANIFEST-"))
        .unwrap()
        .1;
    // The parameters start at 20 (`format/manifest.md`): store_sets 46 bytes in, then the key
    // fingerprint.
    assert_eq!(manifest[66], 1, "store_sets");
    assert_eq!(hex(&manifest[67..99]), TEST_KEY_FINGERPRINT);
    let (_, wal) = files.iter().find(|(n, _)| n.starts_with("wal-")).unwrap();
    assert_eq!(wal[24 + 8], 1, "the first record is a batch");
    assert_eq!(wal[24 + 17 + 4], 3, "its first operation is a tag-3 insert");
}

#[test]
fn committed_fixture_reads_back_read_only_in_place() {
    let dir = Path::new(FIXTURE);
    let before = snapshot(dir);
    {
        let db = open_read_only(dir);
        check_keyed_sets(&db, &expected(), "read-only");
        let stats = db.stats().unwrap();
        assert_eq!(stats.segments, 2);
        assert!(stats.memtable_docs > 0, "the WAL replays into the table");
    }
    assert!(before == snapshot(dir), "opening the fixture changed it");
}

/// Version 2 is read, never written: a writer's open is refused; the upgrade keeps the
/// stored sets as they are (their derivation with them), and a writer then works on it.
#[test]
fn committed_fixture_is_refused_to_writers_and_upgrades_with_its_sets() {
    let expected = expected();
    let tmp = tempfile::tempdir().unwrap();
    let copy = tmp.path().join("db");
    restore(&copy, &snapshot(Path::new(FIXTURE)));
    let opts = keyed(Options {
        auto_compact: false,
        ..Options::default()
    });
    let err = Db::open(&copy, opts.clone()).unwrap_err();
    assert!(
        matches!(err, mhdb::Error::NeedsUpgrade { found: 2, .. }),
        "{err}"
    );
    Db::upgrade(&copy, false).unwrap();
    assert_eq!(current_version(&copy), Some(3));
    {
        let db = Db::open(&copy, opts).unwrap();
        check_keyed_sets(&db, &expected, "upgraded");
        db.compact_full().unwrap();
        check_keyed_sets(&db, &expected, "upgraded, after compact_full");
    }
    let db = open_read_only(&copy);
    check_keyed_sets(&db, &expected, "upgraded, reopened");
    assert_eq!(db.stats().unwrap().segments, 1);
}

/// This build's writer, running the generator, writes version 3 (under an identity of its
/// own: other bytes) with the same files and the answers the fixture records.
#[test]
fn todays_writer_answers_as_the_fixture() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let answers = generate(&dir);
    assert_eq!(current_version(&dir), Some(3));
    let fixture = snapshot(Path::new(FIXTURE));
    assert_eq!(
        fixture.keys().collect::<Vec<_>>(),
        snapshot(&dir).keys().collect::<Vec<_>>()
    );
    assert_eq!(differing_paths(&expected(), &answers), Vec::<String>::new());
}

/// The fixture copied to `tmp`/db and upgraded as `opts` says.
fn upgraded_copy(tmp: &Path, opts: UpgradeOptions) -> PathBuf {
    let copy = tmp.join("db");
    restore(&copy, &snapshot(Path::new(FIXTURE)));
    Db::upgrade_with(&copy, opts).unwrap();
    assert_eq!(current_version(&copy), Some(3));
    copy
}

/// Bit 1 of the version-3 manifest's features (at offset 36): SETS_KEYED_V2.
fn manifest_flags_leaking_sets(dir: &Path) -> bool {
    let files = snapshot(dir);
    let (_, manifest) = files
        .iter()
        .find(|(n, _)| n.starts_with("MANIFEST-"))
        .unwrap();
    manifest[36] & 0b10 != 0
}

/// `stats` (text and JSON) and `verify` of `dir` as the command-line tool prints them.
fn cli_reports(dir: &Path) -> (String, Value, std::process::Output) {
    let text = ok(&["stats", s(dir)]);
    let json: Value = serde_json::from_str(&ok(&["stats", s(dir), "--json"])).unwrap();
    (text, json, run(&["verify", s(dir)]))
}

/// The upgrade keeps version 2's sets and flags them: in the manifest, `stats`, `verify`
/// (a warning, exit 0); a writer goes on adding with their derivation (its new documents are
/// found by their own texts at exact Jaccard 1, and re-rank against the old ones), an export
/// passes the flag on, and a merge with sets of the other derivation is refused.
#[test]
fn upgrade_keeps_the_leaking_sets_flagged_and_writers_follow_them() {
    let expected = expected();
    let tmp = tempfile::tempdir().unwrap();
    let copy = upgraded_copy(tmp.path(), UpgradeOptions::default());
    assert!(manifest_flags_leaking_sets(&copy));
    let (text, json, verify) = cli_reports(&copy);
    assert!(text.contains(LEAK_WARNING), "{text}");
    assert_eq!(json["sets_derivation"], "keyed-v2-leaking");
    assert_eq!(verify.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&verify.stderr);
    assert!(stderr.contains(LEAK_WARNING), "{stderr}");
    assert!(String::from_utf8_lossy(&verify.stdout).starts_with("ok: "));

    let opts = keyed(Options::default());
    {
        let db = Db::open(&copy, opts.clone()).unwrap();
        assert_eq!(db.sets_derivation(), Some(SetDerivation::KeyedV2Leaking));
        let live = expected["live"].as_array().unwrap();
        let old = live[0]["text"].as_str().unwrap();
        let edited = format!("{old} One more sentence at the end.");
        db.insert_text("new/edited", &edited).unwrap();
        db.insert_text("new/fresh", FRESH).unwrap();
        db.flush().unwrap();
        finds_new_documents_exactly(&db, &edited, "upgraded, written to");
        // The edited copy and its original, one set stored by version 2 and one by this
        // writer, compare exactly: as their shingle sets do, not as unrelated values would.
        let result = db.query_text(old, &QueryOptions::default()).unwrap();
        assert!(result.stats.exact);
        let pair = result.matches.iter().find(|m| m.key == b"new/edited");
        let j = pair.map(|m| m.similarity).unwrap_or(0.0);
        assert!(j > 0.8 && j < 1.0, "{pair:?}");
        db.export(tmp.path().join("export")).unwrap();
        let fresh = Db::create(
            tmp.path().join("fresh"),
            keyed_sets_params(),
            keyed(Options::default()),
        )
        .unwrap();
        assert_eq!(fresh.sets_derivation(), Some(SetDerivation::Keyed));
        let err = fresh.merge_from(&db).unwrap_err();
        assert!(err.to_string().contains("sets_derivation"), "{err}");
    }
    let export = tmp.path().join("export");
    assert!(manifest_flags_leaking_sets(&export));
    let db = open_read_only(&export);
    assert_eq!(db.sets_derivation(), Some(SetDerivation::KeyedV2Leaking));
    let old = expected["live"][0]["text"].as_str().unwrap();
    let edited = format!("{old} One more sentence at the end.");
    finds_new_documents_exactly(&db, &edited, "export of the upgraded copy");
}

/// `mhdb merge` checks every source's set derivation before it writes anything: leaking sets
/// are refused for a new destination (which is never created) and for an existing one of the
/// other derivation (left as it was), with exit 2 naming the reason.
#[test]
fn merge_of_leaking_sets_is_refused_before_anything_is_written() {
    let tmp = tempfile::tempdir().unwrap();
    let copy = upgraded_copy(tmp.path(), UpgradeOptions::default());
    let key_file = tmp.path().join("key");
    std::fs::write(&key_file, (0u8..32).collect::<Vec<u8>>()).unwrap();
    let merge = |dest: &Path| {
        common::cli::mhdb(&["merge", s(dest), s(&copy)])
            .env("MHDB_KEY_FILE", &key_file)
            .output()
            .unwrap()
    };
    let new_dest = tmp.path().join("new");
    let out = merge(&new_dest);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("leaks keyed hashes") && stderr.contains("--drop-sets"),
        "{stderr}"
    );
    assert!(
        !new_dest.exists(),
        "the refused merge created its destination"
    );

    let fresh = tmp.path().join("fresh");
    drop(Db::create(&fresh, keyed_sets_params(), keyed(Options::default())).unwrap());
    // A writer's open starts a new WAL file; what is committed is CURRENT and the manifest.
    let committed = |dir: &Path| {
        let mut files = snapshot(dir);
        files.retain(|name, _| !name.starts_with("wal-") && name != "LOCK");
        files
    };
    let before = committed(&fresh);
    let out = merge(&fresh);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("sets_derivation"), "{stderr}");
    assert_eq!(
        committed(&fresh),
        before,
        "the refused merge changed its destination"
    );
}

/// A text unlike every stored one.
const FRESH: &str = "A text none of the stored documents resembles.";

/// The documents the upgraded copy's writer added are found by their own texts at exact
/// Jaccard 1: their sets were stored with the derivation queries use.
fn finds_new_documents_exactly(db: &Db, edited: &str, what: &str) {
    for (key, text) in [("new/edited", edited), ("new/fresh", FRESH)] {
        let result = db.query_text(text, &QueryOptions::default()).unwrap();
        assert!(result.stats.exact, "{what}: {key}");
        let hit = result.matches.iter().find(|m| m.key == key.as_bytes());
        assert_eq!(hit.map(|m| m.similarity), Some(1.0), "{what}: {key}");
    }
}

/// Every live key's signature as the fixture records it, and the deleted keys absent.
fn check_signatures(db: &Db, expected: &Value, what: &str) {
    let got = common::stored(db);
    let live = expected["live"].as_array().unwrap();
    assert_eq!(got.len(), live.len(), "{what}");
    for e in live {
        let key = e["key"].as_str().unwrap();
        assert_eq!(
            got.get(key).map(|s| hex(s)).as_deref(),
            e["signature"].as_str(),
            "{what}: {key}"
        );
    }
    for key in expected["deleted"].as_array().unwrap() {
        assert!(
            !db.contains(key.as_str().unwrap()).unwrap(),
            "{what}: {key}"
        );
    }
}

/// `upgrade --drop-sets` writes the copy without the sets and without the flag: of the
/// version-2 fixture (library) and of a version-3 database already upgraded with them (CLI).
#[test]
fn drop_sets_removes_the_sets_and_the_flag() {
    let expected = expected();
    let tmp = tempfile::tempdir().unwrap();
    let opts = UpgradeOptions {
        drop_sets: true,
        ..UpgradeOptions::default()
    };
    let dropped = upgraded_copy(&tmp.path().join("a"), opts);
    let tmp_b = tmp.path().join("b");
    let flagged = upgraded_copy(&tmp_b, UpgradeOptions::default());
    let out = ok(&["upgrade", s(&flagged), "--drop-sets", "--json"]);
    assert_eq!(
        serde_json::from_str::<Value>(&out).unwrap()["upgraded"],
        true
    );
    // Nothing left to drop: already current.
    let out = ok(&["upgrade", s(&flagged), "--drop-sets", "--json"]);
    assert_eq!(
        serde_json::from_str::<Value>(&out).unwrap()["upgraded"],
        false
    );
    for dir in [&dropped, &flagged] {
        assert!(!manifest_flags_leaking_sets(dir));
        let (text, json, verify) = cli_reports(dir);
        assert!(!text.contains("sets:"), "{text}");
        assert_eq!(json["sets_derivation"], Value::Null);
        assert_eq!(json["params"]["store_sets"], false);
        assert_eq!(verify.status.code(), Some(0));
        assert!(
            verify.stderr.is_empty(),
            "{}",
            String::from_utf8_lossy(&verify.stderr)
        );
        let db = open_read_only(dir);
        assert_eq!(db.sets_derivation(), None);
        check_signatures(&db, &expected, "without sets");
        let query = expected["queries"][0]["text"].as_str().unwrap();
        let result = db.query_text(query, &QueryOptions::default()).unwrap();
        assert!(!result.stats.exact, "re-ranked without sets");
        assert!(!result.matches.is_empty());
    }
}

// ---------------------------------------------------------------------------------------------
// The generator.

/// Builds the fixture in `dir` and returns what it should answer.
fn generate(dir: &Path) -> Value {
    let opts = keyed(Options {
        durability: Durability::Sync,
        auto_compact: false,
        memtable_bytes: usize::MAX,
        ..Options::default()
    });
    let db = Db::create(dir, keyed_sets_params(), opts).unwrap();
    let mut w = Writer {
        db: &db,
        rng: Rng(0x6b65_7965),
        model: Model::default(),
        batch: WriteBatch::new(),
        ops: Vec::new(),
        commits: 0,
    };
    let mut queries: Vec<(&str, String)> = Vec::new();

    // Generation 1: articles and edited mirror copies of some (near duplicates on both sides
    // of the threshold), then edits and deletes, compacted into one segment.
    let news = w.articles(0..30, 10);
    for (i, key) in news.iter().take(6).enumerate() {
        let text = w.text(key);
        let text = match i % 3 {
            0 => text + " (Syndicated.)",
            1 => text.replace(" on ", " last "),
            _ => text.replacen(" in ", " near ", 1) + " More to follow.",
        };
        w.put(&format!("https://mirror.example.net/{i:03}"), &text);
    }
    w.commit();
    db.flush().unwrap();
    queries.push(("an original with its mirror copies", w.text(&news[0])));
    w.amend(
        news.iter().skip(10).step_by(5).take(3),
        " Correction: an earlier version gave the wrong date.",
    );
    w.delete_all(news.iter().skip(11).step_by(6).take(3));
    queries.push((
        "the text of a deleted key",
        w.model.deleted[&news[11]].clone(),
    ));
    db.flush().unwrap();
    db.compact_full().unwrap();

    // Generation 2: a flushed segment, and a deletion list for the compacted one.
    w.articles(30..40, 5);
    let older = w.keys();
    w.delete_all(older.iter().skip(4).step_by(9).take(3));
    db.flush().unwrap();

    // The WAL: inserts (tag 3) and an upsert that only it holds, sealed by a clean close.
    let tail = w.articles(40..46, 3);
    let mirrored = w.text(&tail[0]) + " (Syndicated.)";
    w.put("https://mirror.example.net/tail", &mirrored);
    w.commit();
    queries.push(("a document only in the WAL", w.text(&tail[0])));
    queries.push((
        "unrelated text",
        "Quarterly revenue rose on strong demand for cloud storage.".into(),
    ));
    let model = std::mem::take(&mut w.model);
    drop(w);
    drop(db);
    describe(dir, &model, &queries)
}

/// What the generated database answers, read back through the library (read-only).
fn describe(dir: &Path, model: &Model, queries: &[(&str, String)]) -> Value {
    let db = open_read_only(dir);
    let stored = common::stored(&db);
    assert_eq!(
        stored.keys().collect::<Vec<_>>(),
        model.live.keys().collect::<Vec<_>>()
    );
    let live: Vec<Value> = stored
        .iter()
        .map(|(key, sig)| {
            let (docno, text) = &model.live[key];
            json!({"key": key, "docno": docno, "signature": hex(sig), "text": text})
        })
        .collect();
    let queries: Vec<Value> = queries
        .iter()
        .map(|(why, text)| {
            let result = db.query_text(text, &QueryOptions::default()).unwrap();
            let matches: Vec<Value> = result
                .matches
                .iter()
                .map(|m| {
                    let key = String::from_utf8(m.key.clone()).unwrap();
                    json!({"key": key, "jaccard": m.similarity, "estimate": m.estimate})
                })
                .collect();
            json!({"why": why, "text": text, "matches": matches})
        })
        .collect();
    let p = db.params();
    json!({
        "format_version": 2,
        "generator": "tests/golden_db_v2_keyed_sets.rs (regenerate_fixture)",
        "key_fingerprint": hex(&p.key_fingerprint.0),
        "params": {
            "num_perm": p.sketch.num_perm,
            "seed": p.sketch.seed,
            "bits": p.bits,
            "bands": p.lsh.bands,
            "rows": p.lsh.rows,
            "bucket_cap": p.bucket_cap.unwrap_or(0),
            "store_sets": true,
        },
        "live": live,
        "deleted": model.deleted.keys().collect::<Vec<_>>(),
        "queries": queries,
    })
}

#[test]
#[ignore = "writes tests/golden/db-v2-keyed-sets anew; only for a deliberate regeneration"]
fn regenerate_fixture() {
    assert_eq!(
        std::env::var("MHDB_REGENERATE_DB_FIXTURE").as_deref(),
        Ok("1"),
        "set MHDB_REGENERATE_DB_FIXTURE=1 to overwrite the pinned fixture"
    );
    let tmp = tempfile::tempdir().unwrap();
    let runs: Vec<(PathBuf, Value)> = (0..2)
        .map(|i| {
            let dir = tmp.path().join(format!("run{i}"));
            let answers = generate(&dir);
            (dir, answers)
        })
        .collect();
    assert!(
        snapshot(&runs[0].0) == snapshot(&runs[1].0),
        "generator is not deterministic"
    );
    assert_eq!(runs[0].1, runs[1].1);
    replace_fixture(
        Path::new(FIXTURE),
        Path::new(EXPECTED),
        &runs[0].0,
        &runs[0].1,
        2,
    );
}
