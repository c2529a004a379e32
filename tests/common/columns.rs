//! The lifecycle every per-document column (exact hash, set size) must survive, written once:
//! a column is described by how to turn it off and how to read it back.

use std::path::Path;

use mhdb::db::{ColumnCounts, Db, Options};

use super::params::{FOUR_TEXTS, word_index};

/// One per-document column, seen from a test.
pub struct Column {
    /// Options that create an index without the column.
    pub off: fn(Options) -> Options,
    /// Whether the index has the column.
    pub present: fn(&Db) -> bool,
    /// Asserts that `key` holds the value its `text` should have, naming `what` on failure.
    pub assert_value: fn(&Db, &str, &str, &str),
    /// Whether `key` has no value.
    pub absent: fn(&Db, &str) -> bool,
    /// The column's counts in `stats` (`None` without the column).
    pub counts: fn(&Db) -> Option<ColumnCounts>,
}

fn create(dir: &Path, opts: Options) -> Db {
    Db::create(dir, word_index(64, 16, 0.5), opts).unwrap()
}

fn assert_all(column: &Column, db: &Db, what: &str) {
    for (key, text) in FOUR_TEXTS {
        (column.assert_value)(db, key, text, what);
    }
}

/// The four texts' values survive reopen (WAL replay), flush, compaction, export, and a merge
/// into an index with the column; a merge into one without it, and from one without it,
/// carries none.
pub fn survives_every_path(column: &Column) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let db = create(&dir, Options::default());
    assert!((column.present)(&db));
    for (key, text) in FOUR_TEXTS {
        db.insert_text(key, text).unwrap();
    }
    assert_all(column, &db, "in memory");
    drop(db);
    let db = Db::open(&dir, Options::default()).unwrap();
    assert_all(column, &db, "replayed from the WAL");
    db.flush().unwrap();
    assert_all(column, &db, "flushed");
    db.insert_text("e", "one more document to compact").unwrap();
    db.flush().unwrap();
    db.compact_full().unwrap();
    assert_all(column, &db, "compacted");
    db.delete("e").unwrap();
    let all = ColumnCounts {
        with: 4,
        without: 0,
    };
    assert_eq!((column.counts)(&db), Some(all));
    let exported = tmp.path().join("exported");
    db.export(&exported).unwrap();
    let copy = Db::open(&exported, Options::default()).unwrap();
    assert_all(column, &copy, "exported");
    let with = create(&tmp.path().join("with"), Options::default());
    with.merge_from(&db).unwrap();
    assert_all(column, &with, "merged");
    let without = create(
        &tmp.path().join("without"),
        (column.off)(Options::default()),
    );
    without.merge_from(&db).unwrap();
    assert!(!(column.present)(&without));
    assert!((column.absent)(&without, "a"));
    assert_eq!((column.counts)(&without), None);
    let into = create(&tmp.path().join("into"), Options::default());
    into.merge_from(&without).unwrap();
    let none = ColumnCounts {
        with: 0,
        without: 4,
    };
    assert_eq!((column.counts)(&into), Some(none));
}

/// The four texts flushed into one segment verify clean; with one bit of the second row of
/// section `kind` (rows `row_bytes` wide, after one presence word) flipped, `mhdb verify`
/// exits 3 (corruption).
pub fn a_flipped_row_fails_verify(kind: u16, row_bytes: usize) {
    use super::cli::{run, s};
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let db = create(&dir, Options::default());
    for (key, text) in FOUR_TEXTS {
        db.insert_text(key, text).unwrap();
    }
    db.flush().unwrap();
    drop(db);
    let out = run(&["verify", s(&dir)]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let files = super::golden::snapshot(&dir);
    let seg = dir.join(&super::golden::file_names(&files, "seg-", ".seg")[0]);
    let mut bytes = std::fs::read(&seg).unwrap();
    let section = super::golden::section_start(&bytes, kind).expect("the column's section");
    bytes[section + 8 + row_bytes + row_bytes / 2] ^= 0x40;
    std::fs::write(&seg, bytes).unwrap();
    let out = run(&["verify", s(&dir)]);
    assert_eq!(out.status.code(), Some(3), "{out:?}");
}

/// The db-v2 fixture restored at `dir`, upgraded (which gains every column, its documents
/// without values), and opened.
pub fn upgraded_v2_fixture(dir: &Path) -> Db {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/db-v2");
    super::golden::restore(dir, &super::golden::snapshot(&fixture));
    Db::upgrade(dir, false).unwrap();
    Db::open(dir, Options::default()).unwrap()
}
