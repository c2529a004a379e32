//! The per-document exact hash (`format/hashing.md` §17, the EXACT_HASH column): what a
//! document stores, and that it is carried through every path a document takes.

mod common;

use std::path::Path;

use common::cli::{run, s};
use common::columns::{Column, survives_every_path};
use common::params::word_index;
use mhdb::db::{Db, ExactHashCounts, IndexOptions, Options};
use mhdb::sketch::{ExactHasher, OwnedToken, SecretKey, ShingleKind, Token};

use common::params::FOUR_TEXTS as TEXTS;

fn create(dir: &Path, opts: Options) -> Db {
    Db::create(dir, word_index(64, 16, 0.5), opts).unwrap()
}

/// The exact hash `db` should store for `text`: the spec's, computed apart from the database.
fn expected(db: &Db, text: &str, key: Option<&SecretKey>) -> u128 {
    let p = db.params().sketch;
    ExactHasher::new(p.scheme.name(), p.seed, key).hash_text(&p.shingle, text)
}

#[test]
fn the_hash_survives_reopen_flush_compaction_merge_and_export() {
    survives_every_path(&Column {
        off: |opts| Options {
            exact_hash: false,
            ..opts
        },
        present: Db::has_exact_hashes,
        assert_value: |db, key, text, what| {
            let want = expected(db, text, None);
            assert_eq!(db.exact_hash_of(key).unwrap(), Some(want), "{what}: {key}");
        },
        absent: |db, key| db.exact_hash_of(key).unwrap().is_none(),
        counts: |db| {
            let counts = db.exact_hash_counts().unwrap();
            assert_eq!(db.stats().unwrap().exact_hashes, counts);
            counts
        },
    });
}

#[test]
fn a_signature_insert_has_no_hash() {
    let tmp = tempfile::tempdir().unwrap();
    let db = create(tmp.path(), Options::default());
    let sig = db.hasher().unwrap().sketch_text(TEXTS[0].1);
    db.insert("sig", &sig).unwrap();
    db.bulk_insert(&[("bulk", sig)]).unwrap();
    db.insert_text("text", TEXTS[0].1).unwrap();
    assert_eq!(db.exact_hash_of("sig").unwrap(), None);
    assert_eq!(db.exact_hash_of("bulk").unwrap(), None);
    assert!(db.exact_hash_of("text").unwrap().is_some());
    db.flush().unwrap();
    assert_eq!(db.exact_hash_of("sig").unwrap(), None);
    let counts = ExactHashCounts {
        with: 1,
        without: 2,
    };
    assert_eq!(db.exact_hash_counts().unwrap(), Some(counts));
}

#[test]
fn texts_that_normalize_alike_share_a_hash_and_an_edit_does_not() {
    let tmp = tempfile::tempdir().unwrap();
    let db = create(tmp.path(), Options::default());
    db.insert_text("x", "The Quick  brown\tFOX").unwrap();
    db.insert_text("y", " the quick brown fox ").unwrap();
    db.insert_text("z", "the quick brown fix").unwrap();
    let h = |k: &str| db.exact_hash_of(k).unwrap().unwrap();
    assert_eq!(h("x"), h("y"));
    assert_ne!(h("x"), h("z"));
}

#[test]
fn keyed_indexes_hash_under_their_key() {
    let tmp = tempfile::tempdir().unwrap();
    let keys = [
        SecretKey::from_bytes([1; 32]),
        SecretKey::from_bytes([2; 32]),
    ];
    let text = TEXTS[0].1;
    let mut seen = Vec::new();
    for (i, key) in keys.iter().enumerate() {
        let opts = Options {
            key: Some(key.clone()),
            ..Options::default()
        };
        let db = create(&tmp.path().join(format!("keyed-{i}")), opts);
        db.insert_text("a", text).unwrap();
        let h = db.exact_hash_of("a").unwrap().unwrap();
        assert_eq!(h, expected(&db, text, Some(key)));
        seen.push(h);
    }
    let plain = create(&tmp.path().join("plain"), Options::default());
    plain.insert_text("a", text).unwrap();
    seen.push(plain.exact_hash_of("a").unwrap().unwrap());
    assert!(seen[0] != seen[1] && seen[0] != seen[2] && seen[1] != seen[2]);
}

#[test]
fn token_lists_store_the_hash_of_their_tokens() {
    let tmp = tempfile::tempdir().unwrap();
    let params = IndexOptions {
        shingle: Some(ShingleKind::Tokens(2)),
        threshold: Some(0.5),
        ..IndexOptions::default()
    }
    .build()
    .unwrap();
    let db = Db::create(tmp.path(), params, Options::default()).unwrap();
    let tokens = [OwnedToken::Str("ab".into()), OwnedToken::Int(7)];
    let tokens: Vec<Token<'_>> = OwnedToken::borrow_all(&tokens);
    db.insert_tokens("t", &tokens).unwrap();
    let p = db.params().sketch;
    let want = ExactHasher::new(p.scheme.name(), p.seed, None).hash_tokens(&tokens);
    assert_eq!(db.exact_hash_of("t").unwrap(), Some(want.unwrap()));
}

#[test]
fn a_flipped_byte_in_the_column_fails_verify() {
    common::columns::a_flipped_row_fails_verify(9, 16);
}

#[test]
fn an_upgraded_database_has_the_column_and_no_hashes() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let db = common::columns::upgraded_v2_fixture(&dir);
    assert!(db.has_exact_hashes());
    let counts = db.exact_hash_counts().unwrap().unwrap();
    assert_eq!(counts.with, 0);
    assert_eq!(counts.without, db.stats().unwrap().live_docs);
    assert!(counts.without > 0);
}

/// `mhdb add --exact-dedup`: exact copies (after normalization) of stored live documents and
/// of earlier documents of the input are skipped and counted; a one-character edit is not a
/// copy; a deleted document's copy is stored; an index without the column refuses (exit 2).
#[test]
fn add_exact_dedup_skips_exact_copies() {
    use common::cli::run_with_stdin;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let db = s(&dir);
    assert!(run(&["create", db, "--threshold", "0.5"]).status.success());
    let lines = concat!(
        "{\"id\":\"a\",\"text\":\"Hello World this is text\"}\n",
        "{\"id\":\"b\",\"text\":\"hello   world this is TEXT\"}\n",
        "{\"id\":\"c\",\"text\":\"hello world this is texts\"}\n",
    );
    let out = run_with_stdin(
        &["add", db, "-", "--exact-dedup", "--json"],
        lines.as_bytes(),
    );
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(stdout.contains("\"exact_copies_skipped\":1"), "{stdout}");
    let said = String::from_utf8(out.stderr).unwrap();
    assert!(said.contains("added 2 documents") && said.contains("1 exact copies skipped"));
    let copy = b"{\"id\":\"d\",\"text\":\"HELLO world this is text\"}\n";
    let out = run_with_stdin(&["add", db, "-", "--exact-dedup"], copy);
    assert!(
        String::from_utf8(out.stderr)
            .unwrap()
            .contains("added 0 documents")
    );
    assert!(run(&["delete", db, "a"]).status.success());
    let out = run_with_stdin(&["add", db, "-", "--exact-dedup"], copy);
    let said = String::from_utf8(out.stderr).unwrap();
    assert!(
        said.contains("added 1 document ") && said.contains("0 exact copies"),
        "{said}"
    );
    let plain = tmp.path().join("plain");
    let plain = s(&plain);
    assert!(run(&["create", plain, "--no-exact-hash"]).status.success());
    let out = run_with_stdin(&["add", plain, "-", "--exact-dedup"], copy);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
}
