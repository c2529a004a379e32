//! A WAL tail that recovery cuts is never cut silently unless it is only zeros: bytes that
//! are not a whole record (a record torn by a crash, or damage to the last acknowledged one,
//! which nothing can tell apart) are kept beside the WAL, reported by the handle that cut
//! them, counted by `stats` and reported by `verify` as corruption naming the WAL file and the
//! offset, until a person removes the kept file. Zeros written ahead of the records, all a
//! process kill leaves, are cut without a word.

mod common;

use std::path::{Path, PathBuf};

use mhdb::db::{Db, Durability, IndexParams, Options};

fn options() -> Options {
    Options {
        durability: Durability::Sync,
        ..Options::default()
    }
}

/// The files a writer leaves when it crashes after three acknowledged inserts: its WAL still
/// ends in the zeros written ahead of the records. (The handle is leaked, so nothing is cut on
/// close, and the files are copied to `dir`, away from the leaked handle's lock.)
fn crashed(dir: &Path) -> PathBuf {
    let live = dir.with_extension("live");
    let db = Db::create(&live, IndexParams::default(), options()).unwrap();
    for i in 0..3 {
        db.insert_text(
            format!("k{i}"),
            &format!("text number {i} with a few words in it"),
        )
        .unwrap();
    }
    std::mem::forget(db);
    std::fs::create_dir(dir).unwrap();
    for entry in std::fs::read_dir(&live).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), dir.join(entry.file_name())).unwrap();
    }
    let wal = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        .filter(|p| std::fs::metadata(p).unwrap().len() > 16)
        .max()
        .unwrap();
    let bytes = std::fs::read(&wal).unwrap();
    assert!(
        bytes.ends_with(&[0; 64]),
        "the WAL should end in zeros written ahead"
    );
    wal
}

#[test]
fn zeros_after_the_last_record_are_cut_silently() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    crashed(&dir);
    let db = Db::open(&dir, options()).unwrap();
    assert!(db.cut_tails().is_empty(), "{:?}", db.cut_tails());
    assert_eq!(common::stored(&db).len(), 3);
    assert_eq!(db.stats().unwrap().torn_tails, 0);
    assert!(db.verify().unwrap().is_ok());
}

#[test]
fn a_damaged_last_record_is_kept_and_reported_until_removed() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let wal = crashed(&dir);
    let mut bytes = std::fs::read(&wal).unwrap();
    let last = bytes.iter().rposition(|&b| b != 0).unwrap();
    bytes[last - 5] ^= 0x04; // inside the last record's payload
    std::fs::write(&wal, &bytes).unwrap();

    let db = Db::open(&dir, options()).unwrap();
    // The damaged record is dropped (it cannot be told from a torn write) ...
    assert_eq!(common::stored(&db).len(), 2);
    // ... but not silently.
    let cut = db.cut_tails();
    assert_eq!(cut.len(), 1, "{cut:?}");
    assert_eq!(cut[0].wal, wal);
    let kept = std::fs::read(&cut[0].kept_in).unwrap();
    assert_eq!(kept, bytes[cut[0].offset as usize..=last]);
    assert_eq!(db.stats().unwrap().torn_tails, 1);
    let report = db.verify().unwrap();
    assert_eq!(report.problems.len(), 1, "{:?}", report.problems);
    let problem = report.problems[0].to_string();
    assert!(report.problems[0].is_corruption());
    assert!(
        problem.contains(wal.file_name().unwrap().to_str().unwrap())
            && problem.contains(&format!("offset {}", cut[0].offset)),
        "{problem}"
    );
    // Reopening reports it again (verify does), and nothing else is lost.
    let kept_in = cut[0].kept_in.clone();
    drop(db);
    let db = Db::open(&dir, options()).unwrap();
    assert!(db.cut_tails().is_empty());
    assert!(!db.verify().unwrap().is_ok());
    // A person looked and removed it: the database verifies clean.
    std::fs::remove_file(kept_in).unwrap();
    assert!(db.verify().unwrap().is_ok());
    assert_eq!(common::stored(&db).len(), 2);
}
