//! The on-disk format, version 1, is pinned by a committed database: `tests/golden/db-v1/` holds
//! every file kind (CURRENT, a manifest, the signature log with the zero records of documents
//! deleted before their flush and the garbage records of compacted ones, a merged segment with hot
//! buckets and a flushed one, a deletion list, and a WAL whose tail of writes after the last flush
//! exists nowhere else). A database written by mhdb today must open, answer and verify the same way
//! in every later version: these tests open the committed bytes (read-only in place, and as a
//! writer on a copy, which replays the WAL tail) and check every live key and stored signature, the
//! absent deleted keys and a set of query answers against `tests/golden/db-v1.expected.json`, and
//! that opening changed no byte of the fixture. `tools/conformance/reference_reader.py`, an
//! independent reader written from `format/*.md`, checks the same fixture against the same file in
//! CI, so the code and the spec agree on every byte of it.
//!
//! The fixture is never regenerated. A later format version adds a fixture of its own and
//! keeps this one as a compatibility test. `regenerate_fixture` (ignored) is the generator that
//! wrote it, kept to document how it was made; today's writer writes version 3, so it refuses
//! to write its output over this version-1 fixture (`common::golden::replace_fixture`, checked
//! by `the_generator_refuses_to_replace_the_v1_fixture`).

mod common;

use std::path::{Path, PathBuf};

use mhdb::db::{Db, Durability, Options, QueryOptions, Upgraded, WriteBatch};
use serde_json::{Value, json};

use common::golden::*;

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden/db-v1");
const EXPECTED: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/golden/db-v1.expected.json"
);

fn expected() -> Value {
    serde_json::from_str(&std::fs::read_to_string(EXPECTED).unwrap()).unwrap()
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
    assert!(files.contains_key("CURRENT"));
    assert!(files.contains_key("signatures.log"));
    assert_eq!(count("MANIFEST-", ""), 1);
    assert!(count("seg-", ".seg") >= 2, "{:?}", files.keys());
    assert_eq!(count("del-", ".del"), 1);
    assert_eq!(count("wal-", ".log"), 1);
    // The lock file a read-only open would otherwise create in place: committed empty, so
    // opening the fixture adds no file.
    assert_eq!(files.get("LOCK").map(Vec::len), Some(0));
    let total: usize = files.values().map(Vec::len).sum();
    assert!(total < 256 << 10, "fixture is {total} bytes");
}

#[test]
fn committed_fixture_reads_back_read_only_in_place() {
    let dir = Path::new(FIXTURE);
    let before = snapshot(dir);
    let expected = expected();
    {
        let db = Db::open_read_only(dir).unwrap();
        let p = db.params();
        let want = &expected["params"];
        assert_eq!(p.sketch.num_perm as u64, want["num_perm"].as_u64().unwrap());
        assert_eq!(u64::from(p.bits), want["bits"].as_u64().unwrap());
        assert_eq!(p.lsh.bands as u64, want["bands"].as_u64().unwrap());
        assert_eq!(p.lsh.rows as u64, want["rows"].as_u64().unwrap());
        check_answers(&db, &expected, "read-only");
        let stats = db.stats().unwrap();
        assert!(stats.segments >= 2);
        assert!(
            stats.memtable_docs > 0,
            "the WAL tail replays into the table"
        );
        assert!(stats.hot_buckets > 0);
    }
    assert!(before == snapshot(dir), "opening the fixture changed it");
}

#[test]
fn committed_fixture_is_refused_to_writers_and_upgrades_with_the_same_answers() {
    let expected = expected();
    let tmp = tempfile::tempdir().unwrap();
    let copy = tmp.path().join("db");
    restore(&copy, &snapshot(Path::new(FIXTURE)));
    let opts = Options {
        auto_compact: false,
        ..Options::default()
    };
    // Version 1 is read, never written: a writer is told what to do.
    let err = Db::open(&copy, opts.clone()).unwrap_err();
    assert!(
        matches!(err, mhdb::Error::NeedsUpgrade { found: 1, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("mhdb upgrade"), "{err}");
    assert!(
        snapshot(&copy) == snapshot(Path::new(FIXTURE)),
        "a refused open changed files"
    );

    // The upgrade keeps every answer (the WAL tail included) and leaves no signature log.
    assert_eq!(
        Db::upgrade(&copy, true).unwrap(),
        Upgraded::Converted {
            kept: Some(tmp.path().join(".db.mhdb-v1"))
        }
    );
    assert!(snapshot(&tmp.path().join(".db.mhdb-v1")) == snapshot(Path::new(FIXTURE)));
    assert!(!copy.join("signatures.log").exists());
    assert_eq!(Db::upgrade(&copy, false).unwrap(), Upgraded::AlreadyCurrent);
    {
        let db = Db::open(&copy, opts.clone()).unwrap();
        check_answers(&db, &expected, "upgraded");
        assert!(db.verify().unwrap().is_ok());
        db.flush().unwrap();
        db.compact_full().unwrap();
        check_answers(&db, &expected, "upgraded, after compact_full");
    }
    let db = Db::open_read_only(&copy).unwrap();
    check_answers(&db, &expected, "upgraded, reopened");
}

// ---------------------------------------------------------------------------------------------
// The generator. It ran once, when mhdb wrote version 1; the tests above check its output
// forever. Run today, it writes version 3.

/// Builds the fixture in `dir` and returns what it should answer.
fn generate(dir: &Path) -> Value {
    let opts = Options {
        durability: Durability::Sync,
        auto_compact: false,
        memtable_bytes: usize::MAX,
        ..Options::default()
    };
    let db = Db::create(dir, params(), opts).unwrap();
    let mut w = Writer {
        db: &db,
        rng: Rng(2026),
        model: Model::default(),
        batch: WriteBatch::new(),
        ops: Vec::new(),
        commits: 0,
    };
    // (why, text) of the queries expected.json records.
    let mut queries: Vec<(&str, String)> = Vec::new();

    // Generation 1: 100 articles in batches of 10, a boilerplate cluster larger than the
    // bucket cap (hot buckets), an empty text, and keys of every XXH3 length class.
    w.articles(0..100, 10);
    for i in 0..6 {
        w.put(
            &format!("https://shop.example.com/p/{i}/cookies"),
            COOKIE_NOTICE,
        );
    }
    w.put("x", "");
    w.put(
        "doc-7",
        "Minutes of the allotment society, taken by the secretary.",
    );
    w.put(
        "isbn:0140449132",
        "A translation of an old epic, with notes on the voyages and a map of the islands.",
    );
    w.put(
        "https://de.example.org/straße/über-uns",
        "Über uns: eine kleine Bäckerei an der Straße zum Hafen, seit 1952 in Familienbesitz.",
    );
    w.put(
        "",
        "A note filed under the empty key, which is a key like any other.",
    );
    let long = format!("https://archive.example.org/{}", "long-path/".repeat(30));
    w.put(
        &long,
        "A page filed under a long path, so that its key takes the long hash path.",
    );
    let mid = format!("https://archive.example.org/{}", "mid/".repeat(40));
    w.put(
        &mid,
        "A page filed under a path of a middling length, between 129 and 240 bytes.",
    );
    w.commit();
    db.flush().unwrap();

    // Generation 2: more articles, edited mirror copies (near duplicates), corrections
    // (upserts), deletions, and documents deleted before their flush (zero records).
    let first: Vec<String> = w.keys();
    w.articles(100..180, 20);
    let news: Vec<&String> = first.iter().filter(|k| k.contains("/news.")).collect();
    for (i, key) in news.iter().take(20).enumerate() {
        let text = w.text(key).replace(" on ", " last ") + " (Syndicated.)";
        w.put(&format!("https://mirror.example.net/{i:03}"), &text);
    }
    w.commit();
    let original = w.text(news[0]);
    queries.push(("an original with its mirror copy", original.clone()));
    let edited = original.replacen(" in ", " near ", 1) + " More to follow.";
    queries.push(("an edited copy of that original", edited));
    let note = " Correction: an earlier version gave the wrong date.";
    w.amend(news.iter().skip(20).step_by(7).take(10).copied(), note);
    w.delete_all(news.iter().skip(21).step_by(9).take(8).copied());
    queries.push((
        "the text of a deleted key",
        w.model.deleted[news[21]].clone(),
    ));
    let drafts: Vec<String> = (0..5)
        .map(|i| format!("https://drafts.example.org/{i}"))
        .collect();
    for key in &drafts {
        let (_, text) = article(&mut w.rng, 900);
        w.put(key, &text);
    }
    w.commit();
    w.delete_all(drafts.iter().step_by(2));
    db.flush().unwrap();
    // One merged segment: deleted and replaced documents are dropped, their signature-log
    // records stay behind.
    db.compact_full().unwrap();

    // Generation 3: a second segment, and a deletion list for the merged one.
    w.articles(180..240, 15);
    let older: Vec<String> = w.keys();
    let note = " This item was updated in the evening.";
    w.amend(older.iter().skip(3).step_by(13).take(6), note);
    w.delete_all(older.iter().skip(5).step_by(17).take(6));
    db.flush().unwrap();

    // The WAL tail: writes after the last flush, which only the WAL holds.
    let mut tail = w.articles(240..270, 10);
    let all: Vec<String> = w.keys();
    let note = " Photographs from the day are on the website.";
    w.amend(all.iter().skip(2).step_by(31).take(4), note);
    w.delete_all(all.iter().skip(11).step_by(29).take(4));
    // A tail document deleted, another replaced, and a deleted key inserted again.
    tail.retain(|k| w.model.live.contains_key(k));
    w.delete(&tail[tail.len() - 1]);
    w.put(
        &tail[tail.len() - 2],
        "A reader wrote in: the parade now starts an hour later than announced.",
    );
    w.commit();
    let gone = w.model.deleted.keys().next().unwrap().clone();
    w.put(
        &gone,
        "Restored after a reader pointed out that the item was removed in error.",
    );
    w.commit();
    let (replaced, (_, old)) = w
        .model
        .replaced
        .iter()
        .find(|(k, _)| k.contains("/news."))
        .unwrap();
    queries.push(("the text a replaced key had before", old.clone()));
    queries.push(("the text that replaced it", w.text(replaced)));
    queries.push(("a document only in the WAL tail", w.text(&tail[0])));
    queries.push((
        "boilerplate in more documents than the bucket cap",
        COOKIE_NOTICE.into(),
    ));
    queries.push((
        "the empty text: similar to nothing, not even the stored empty text",
        String::new(),
    ));
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
    let db = Db::open_read_only(dir).unwrap();
    let stored = common::stored(&db);
    assert_eq!(
        stored.keys().collect::<Vec<_>>(),
        model.live.keys().collect::<Vec<_>>()
    );
    let live: Vec<Value> = stored
        .iter()
        .map(|(key, sig)| json!({"key": key, "docno": model.live[key].0, "signature": hex(sig)}))
        .collect();
    let replaced: Vec<Value> = model
        .replaced
        .iter()
        .filter(|(k, _)| model.live.contains_key(*k))
        .map(|(key, (docno, _))| json!({"key": key, "old_docno": docno}))
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
                    json!({"key": key, "jaccard": m.similarity})
                })
                .collect();
            json!({"why": why, "text": text, "matches": matches})
        })
        .collect();

    let p = db.params();
    json!({
        "format_version": current_version(dir),
        "generator": "tests/golden_db_v1.rs (regenerate_fixture)",
        "params": {
            "num_perm": p.sketch.num_perm,
            "seed": p.sketch.seed,
            "bits": p.bits,
            "bands": p.lsh.bands,
            "rows": p.lsh.rows,
            "bucket_cap": p.bucket_cap.unwrap_or(0),
        },
        "live": live,
        "deleted": model.deleted.keys().collect::<Vec<_>>(),
        "replaced": replaced,
        "queries": queries,
    })
}

/// The generator's output (version 3, today) is refused as the version-1 fixture, and a
/// version-3 output is refused over the committed version-1 fixture, before anything is
/// written. Run on copies of the fixture and its answers.
#[test]
fn the_generator_refuses_to_replace_the_v1_fixture() {
    let tmp = tempfile::tempdir().unwrap();
    let generated = tmp.path().join("generated");
    let answers = generate(&generated);
    assert_eq!(answers["format_version"], 3);
    let fixture = tmp.path().join("db-v1");
    let expected_copy = tmp.path().join("db-v1.expected.json");
    std::fs::create_dir(&fixture).unwrap();
    for (name, bytes) in snapshot(Path::new(FIXTURE)) {
        std::fs::write(fixture.join(name), bytes).unwrap();
    }
    std::fs::copy(EXPECTED, &expected_copy).unwrap();
    for version in [1, 3] {
        let refused = std::panic::catch_unwind(|| {
            replace_fixture(&fixture, &expected_copy, &generated, &answers, version);
        });
        let message = refused.expect_err("the fixture was replaced");
        let message = message.downcast_ref::<String>().map_or("", String::as_str);
        assert!(message.starts_with("refusing"), "{message}");
        assert!(snapshot(&fixture) == snapshot(Path::new(FIXTURE)));
        assert_eq!(
            std::fs::read(&expected_copy).unwrap(),
            std::fs::read(EXPECTED).unwrap()
        );
    }
}

#[test]
#[ignore = "writes tests/golden/db-v1 anew; only for a deliberate regeneration"]
fn regenerate_fixture() {
    assert_eq!(
        std::env::var("MHDB_REGENERATE_DB_FIXTURE").as_deref(),
        Ok("1"),
        "set MHDB_REGENERATE_DB_FIXTURE=1 to overwrite the pinned fixture"
    );
    // Two runs must give the same bytes, or the fixture could not be reproduced.
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

    // Today's writer writes version 3: this refuses to write its output here.
    replace_fixture(
        Path::new(FIXTURE),
        Path::new(EXPECTED),
        &runs[0].0,
        &runs[0].1,
        1,
    );
}
