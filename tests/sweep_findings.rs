//! Damage that `tools/corruption_sweep.py` found answered with anything but a corruption
//! error (exit 3 naming the file), each reduced to the smallest case.

mod common;

use std::path::{Path, PathBuf};

use mhdb::Error;
use mhdb::db::{Db, Durability, IndexParams, Options};

fn options() -> Options {
    Options {
        durability: Durability::Sync,
        ..Options::default()
    }
}

/// A database closed cleanly after a few acknowledged writes: its newest WAL file holds them
/// and its seal. Returns that file.
fn closed_with_wal(dir: &Path) -> PathBuf {
    let db = Db::create(dir, IndexParams::default(), options()).unwrap();
    for i in 0..3 {
        db.insert_text(
            format!("k{i}"),
            &format!("text number {i} with a few words"),
        )
        .unwrap();
    }
    drop(db);
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        .max()
        .unwrap()
}

/// A bit flipped in a WAL header's version field is damage (the header CRC does not match),
/// not a file written by a newer mhdb: the open fails with corruption naming the file, as in
/// every other file kind (it used to be `UnsupportedVersion`, exit 1).
#[test]
fn a_flipped_wal_version_is_corruption() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let wal = closed_with_wal(&dir);
    let mut bytes = std::fs::read(&wal).unwrap();
    bytes[8] ^= 0x04; // version 2 -> 6
    std::fs::write(&wal, &bytes).unwrap();
    for read_only in [true, false] {
        let opened = if read_only {
            Db::open_read_only(&dir)
        } else {
            Db::open(&dir, options())
        };
        match opened {
            Err(Error::Corruption { path, .. }) => assert_eq!(path, wal),
            Err(other) => panic!("read_only {read_only}: {other:?}"),
            Ok(_) => panic!("read_only {read_only}: opened a damaged WAL"),
        }
    }
}

/// The newest WAL cut inside its last acknowledged record (here: its seal and half of that
/// record gone) reads as a torn tail. A writer's open keeps and reports it; a read-only
/// `verify` used to say "ok" (the reader ignored the tail in case a writer was writing it).
/// A live writer never shows such a tail (zeros ahead, the checksum written last), so the
/// reader reports it too, and changes no byte.
#[test]
fn a_read_only_verify_reports_a_damaged_last_wal_record() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let wal = closed_with_wal(&dir);
    let bytes = std::fs::read(&wal).unwrap();
    // Records: 24-byte header, batches, then a 25-byte seal; cut 30 bytes into the last batch.
    let cut = &bytes[..bytes.len() - 25 - 30];
    std::fs::write(&wal, cut).unwrap();

    let reader = Db::open_read_only(&dir).unwrap();
    assert_eq!(
        common::stored(&reader).len(),
        2,
        "the torn record is not read"
    );
    assert_eq!(reader.cut_tails().len(), 1, "{:?}", reader.cut_tails());
    let report = reader.verify().unwrap();
    assert!(
        report.problems.iter().any(|p| matches!(
            p,
            Error::Corruption { path, .. } if *path == wal
        )),
        "{:?}",
        report.problems
    );
    drop(reader);
    assert_eq!(
        std::fs::read(&wal).unwrap(),
        cut,
        "a reader changed the WAL"
    );
}

/// A crash leaves zeros written ahead (and at most an unfinished record whose checksum is
/// still zero): no reader reports anything.
#[test]
fn a_read_only_verify_is_quiet_about_zeros_after_a_crash() {
    let tmp = tempfile::tempdir().unwrap();
    let live = tmp.path().join("live");
    let db = Db::create(&live, IndexParams::default(), options()).unwrap();
    db.insert_text("k", "a text with a few words in it")
        .unwrap();
    std::mem::forget(db); // a crash: the WAL still ends in the zeros written ahead
    let dir = tmp.path().join("db");
    std::fs::create_dir(&dir).unwrap();
    for entry in std::fs::read_dir(&live).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), dir.join(entry.file_name())).unwrap();
    }
    let reader = Db::open_read_only(&dir).unwrap();
    assert!(reader.cut_tails().is_empty(), "{:?}", reader.cut_tails());
    assert!(reader.verify().unwrap().is_ok());
    assert_eq!(common::stored(&reader).len(), 1);
}
