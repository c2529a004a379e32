//! The per-document set size (the SET_SIZE column: the number of distinct shingle hashes of
//! a document, `format/hashing.md` §3): what a document stores, and that it is carried
//! through every path a document takes.

mod common;

use std::path::Path;

use common::cli::{run, s};
use common::columns::{Column, survives_every_path};
use common::params::word_index;
use mhdb::db::{ColumnCounts, Db, IndexOptions, Options};
use mhdb::sketch::{OwnedToken, ShingleKind, Token};

use common::params::FOUR_TEXTS as TEXTS;

fn create(dir: &Path, opts: Options) -> Db {
    Db::create(dir, word_index(64, 16, 0.5), opts).unwrap()
}

/// The set size `db` should store for `text`: its distinct shingle hashes, counted apart
/// from the database.
fn expected(db: &Db, text: &str) -> u32 {
    let mut hashes = db.hasher().unwrap().shingle_hashes(text);
    hashes.sort_unstable();
    hashes.dedup();
    hashes.len() as u32
}

fn insert_all(db: &Db) {
    for (key, text) in TEXTS {
        db.insert_text(key, text).unwrap();
    }
}

fn assert_sizes(db: &Db, what: &str) {
    for (key, text) in TEXTS {
        let want = expected(db, text);
        assert_eq!(db.set_size_of(key).unwrap(), Some(want), "{what}: {key}");
    }
}

#[test]
fn the_size_survives_reopen_flush_compaction_merge_and_export() {
    survives_every_path(&Column {
        off: |opts| Options {
            set_size: false,
            ..opts
        },
        present: Db::has_set_sizes,
        assert_value: |db, key, text, what| {
            assert_eq!(
                db.set_size_of(key).unwrap(),
                Some(expected(db, text)),
                "{what}: {key}"
            );
        },
        absent: |db, key| db.set_size_of(key).unwrap().is_none(),
        counts: |db| db.stats().unwrap().set_sizes,
    });
    // The columns are chosen apart.
    let tmp = tempfile::tempdir().unwrap();
    let opts = Options {
        set_size: false,
        ..Options::default()
    };
    let db = create(tmp.path(), opts);
    assert!(!db.has_set_sizes() && db.has_exact_hashes());
}

/// Repeated content inside a document does not make it longer; distinct content does.
#[test]
fn the_size_counts_distinct_shingles() {
    let tmp = tempfile::tempdir().unwrap();
    let db = create(tmp.path(), Options::default());
    let line = "terms and conditions apply to every order";
    db.insert_text("once", line).unwrap();
    db.insert_text("thrice", &[line; 3].join(" ")).unwrap();
    db.insert_text("empty", "").unwrap();
    let once = db.set_size_of("once").unwrap().unwrap();
    // Word pairs: the repeats add only the pair across the seam ("order terms"), alike at
    // both seams.
    assert_eq!(once, 6);
    assert_eq!(db.set_size_of("thrice").unwrap(), Some(once + 1));
    assert_eq!(db.set_size_of("empty").unwrap(), Some(0));
}

#[test]
fn a_signature_insert_has_no_size() {
    let tmp = tempfile::tempdir().unwrap();
    let db = create(tmp.path(), Options::default());
    let sig = db.hasher().unwrap().sketch_text(TEXTS[0].1);
    db.insert("sig", &sig).unwrap();
    db.bulk_insert(&[("bulk", sig)]).unwrap();
    db.insert_text("text", TEXTS[0].1).unwrap();
    db.flush().unwrap();
    assert_eq!(db.set_size_of("sig").unwrap(), None);
    assert_eq!(db.set_size_of("bulk").unwrap(), None);
    assert_eq!(
        db.set_size_of("text").unwrap(),
        Some(expected(&db, TEXTS[0].1))
    );
    let counts = ColumnCounts {
        with: 1,
        without: 2,
    };
    assert_eq!(db.stats().unwrap().set_sizes, Some(counts));
}

/// The column with stored sets, and for token lists (the distinct token shingles).
#[test]
fn sets_and_token_lists_store_their_sizes() {
    let tmp = tempfile::tempdir().unwrap();
    let mut params = word_index(64, 16, 0.5);
    params.store_sets = true;
    let db = Db::create(tmp.path().join("sets"), params, Options::default()).unwrap();
    insert_all(&db);
    assert_sizes(&db, "with sets");
    let params = IndexOptions {
        shingle: Some(ShingleKind::Tokens(1)),
        threshold: Some(0.5),
        ..IndexOptions::default()
    }
    .build()
    .unwrap();
    let db = Db::create(tmp.path().join("tokens"), params, Options::default()).unwrap();
    let tokens = [
        OwnedToken::Str("ab".into()),
        OwnedToken::Int(7),
        OwnedToken::Str("ab".into()),
    ];
    let tokens: Vec<Token<'_>> = OwnedToken::borrow_all(&tokens);
    db.insert_tokens("t", &tokens).unwrap();
    assert_eq!(db.set_size_of("t").unwrap(), Some(2));
}

#[test]
fn a_flipped_byte_in_the_column_fails_verify() {
    common::columns::a_flipped_row_fails_verify(11, 4);
}

/// An upgrade gains the column, its documents without sizes; `create --no-set-size` has
/// none, and `stats --json` says so.
#[test]
fn upgrades_and_the_cli_switch() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let db = common::columns::upgraded_v2_fixture(&dir);
    assert!(db.has_set_sizes());
    let counts = db.stats().unwrap().set_sizes.unwrap();
    assert_eq!((counts.with, counts.without > 0), (0, true));
    let plain = tmp.path().join("plain");
    assert!(
        run(&["create", s(&plain), "--no-set-size"])
            .status
            .success()
    );
    let out = run(&["stats", s(&plain), "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["set_sizes"], serde_json::Value::Null);
    assert_eq!(v["exact_hashes"]["with"], 0);
}
