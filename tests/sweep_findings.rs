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
