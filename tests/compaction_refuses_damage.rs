//! Damage is refused, never laundered: compaction and export check the block checksums of
//! the signatures they carry over, so a flipped bit is reported as corruption instead of being
//! given a fresh checksum (after which `verify` would pass and the wrong similarity would be
//! permanent). Reading the damaged signature is an error too, never a wrong answer.

mod common;

use std::path::Path;

use mhdb::db::{Db, Durability, IndexParams, Options};
use mhdb::sketch::SketchParams;

fn options() -> Options {
    Options {
        durability: Durability::None,
        auto_compact: false,
        ..Options::default()
    }
}

/// A database of two segments and no deletions, with one bit of document 7's stored
/// signature flipped (in the first segment's SIGNATURES section). With 512-byte signatures
/// (128 slots of 32 bits) that byte lies in a 4 KiB checksum block of its own, past the
/// key directory's, so that only reads of that signature meet the damage (with the default
/// 256-byte signatures the block also holds the directory, and every key lookup in the
/// segment reports it).
fn damaged(dir: &Path) {
    let params = IndexParams::for_threshold(SketchParams::default(), 32, 0.8).unwrap();
    let db = Db::create(dir, params, options()).unwrap();
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
    let record = db.params().sig_bytes();
    drop(db);
    let mut segments: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "seg"))
        .collect();
    segments.sort();
    let path = &segments[0];
    let mut bytes = std::fs::read(path).unwrap();
    let sigs = common::segment_section(&bytes, 6).unwrap();
    assert_eq!(sigs.len(), 20 * record);
    bytes[sigs.start + 7 * record + 3] ^= 0x10; // inside document 7's signature
    std::fs::write(path, bytes).unwrap();
}

/// Every document but the damaged one reads as stored; the damaged one is an error.
fn assert_read_refused(db: &Db) {
    let err = db.get("doc-0-7").unwrap_err();
    assert!(err.is_corruption(), "{err}");
    assert!(err.to_string().contains(".seg"), "{err}");
    assert!(db.get("doc-1-7").unwrap().is_some());
    assert_eq!(db.len(), 40);
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
    assert_read_refused(&db);
    let err = db.compact_full().unwrap_err();
    assert!(err.is_corruption(), "{err}");
    assert!(err.to_string().contains(".seg"), "{err}");
    drop(db);
    // Nothing was published: the damage is still there to be seen.
    let db = Db::open(&dir, options()).unwrap();
    assert_reported(&db);
    assert_eq!(db.stats().unwrap().segments, 2);
    assert_read_refused(&db);
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
