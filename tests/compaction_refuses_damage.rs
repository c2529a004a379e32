//! Damage is refused, never laundered: compaction and export check the signature-log records
//! they carry over against the checksums the manifest recorded, so a flipped bit is reported
//! as corruption instead of being given a fresh checksum (after which `verify` would pass and
//! the wrong similarity would be permanent).

mod common;

use std::path::Path;

use mhdb::db::{Db, Durability, IndexParams, Options};

fn options() -> Options {
    Options {
        durability: Durability::None,
        auto_compact: false,
        ..Options::default()
    }
}

/// A database of two segments and no deletions, with one bit of document 7's signature-log
/// record flipped.
fn damaged(dir: &Path) {
    let db = Db::create(dir, IndexParams::default(), options()).unwrap();
    for part in 0..2 {
        for i in 0..20 {
            db.insert_text(
                format!("doc-{part}-{i}"),
                &format!("document {i} of part {part}, with enough words to make shingles"),
            )
            .unwrap();
        }
        db.flush().unwrap();
    }
    let record = db.params().sig_bytes() as u64;
    drop(db);
    let path = dir.join("signatures.log");
    let mut bytes = std::fs::read(&path).unwrap();
    let at = (64 + 7 * record + 3) as usize; // inside document 7's record, first segment
    bytes[at] ^= 0x10;
    std::fs::write(&path, bytes).unwrap();
}

fn assert_reported(db: &Db) {
    let report = db.verify().unwrap();
    assert!(
        !report.is_ok(),
        "verify must still report the damaged record"
    );
    assert!(
        report.problems.iter().all(|e| e.is_corruption()),
        "{:?}",
        report.problems
    );
}

#[test]
fn compaction_refuses_a_damaged_signature_record() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    damaged(&dir);
    let db = Db::open(&dir, options()).unwrap();
    assert_reported(&db);
    let before = common::stored(&db);
    let err = db.compact_full().unwrap_err();
    assert!(err.is_corruption(), "{err}");
    assert!(err.to_string().contains("signatures.log"), "{err}");
    drop(db);
    // Nothing was published: the damage is still there to be seen.
    let db = Db::open(&dir, options()).unwrap();
    assert_reported(&db);
    assert_eq!(db.stats().unwrap().segments, 2);
    assert_eq!(common::stored(&db), before);
}

#[test]
fn export_refuses_a_damaged_signature_record() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    damaged(&dir);
    // Read-only: export copies without compacting first.
    let db = Db::open_read_only(&dir).unwrap();
    let err = db.export(tmp.path().join("copy")).unwrap_err();
    assert!(err.is_corruption(), "{err}");
    assert!(!tmp.path().join("copy").join("CURRENT").exists());
    drop(db);
    // As a writer, export compacts first, which refuses too.
    let db = Db::open(&dir, options()).unwrap();
    let err = db.export(tmp.path().join("copy2")).unwrap_err();
    assert!(err.is_corruption(), "{err}");
    assert!(!tmp.path().join("copy2").join("CURRENT").exists());
}
