//! `mhdb export` never ships a damaged database as a clean copy: a source reporting a torn WAL
//! tail (which may have held an acknowledged deletion) is refused with exit 3 unless
//! `--allow-damaged` is given, and then what was left out is said.

mod common;

use std::path::{Path, PathBuf};

use common::cli::{run, s};
use mhdb::db::{Db, Durability, IndexParams, Options};

fn options() -> Options {
    Options {
        durability: Durability::Sync,
        ..Options::default()
    }
}

/// A database in `dir` as a writer leaves it when it crashes after inserting three documents
/// and deleting one, the deletion's WAL record damaged (which no reader can tell from a torn
/// write). The handle is leaked, so nothing is cut on close, and its files are copied to
/// `dir`, away from the leaked handle's lock.
fn torn_after_a_deletion(dir: &Path) {
    let live = dir.with_extension("live");
    let db = Db::create(&live, IndexParams::default(), options()).unwrap();
    for i in 0..3 {
        let text = format!("text number {i} with a few words in it");
        db.insert_text(format!("k{i}"), &text).unwrap();
    }
    db.delete(b"k0").unwrap();
    std::mem::forget(db);
    std::fs::create_dir(dir).unwrap();
    for entry in std::fs::read_dir(&live).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), dir.join(entry.file_name())).unwrap();
    }
    let wal: PathBuf = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        .filter(|p| std::fs::metadata(p).unwrap().len() > 16)
        .max()
        .unwrap();
    let mut bytes = std::fs::read(&wal).unwrap();
    let last = bytes.iter().rposition(|&b| b != 0).unwrap();
    bytes[last - 1] ^= 0x04;
    std::fs::write(&wal, &bytes).unwrap();
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn a_torn_tail_is_refused_unless_allowed() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("db");
    torn_after_a_deletion(&src);
    let dest = tmp.path().join("copy");
    let out = run(&["export", s(&src), s(&dest)]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(stderr(&out).contains("--allow-damaged"), "{}", stderr(&out));
    assert!(!dest.exists(), "a refused export left {}", dest.display());

    // A writer's open keeps the tail aside; it is still reported, and still refused.
    drop(Db::open(&src, options()).unwrap());
    let out = run(&["export", s(&src), s(&dest)]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));

    let out = run(&["export", s(&src), s(&dest), "--allow-damaged"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("exported without what this damage held (--allow-damaged)"),
        "{}",
        stderr(&out)
    );
    // The copy has what the source's readers see: the deletion is lost with the tail.
    let copy = Db::open_read_only(&dest).unwrap();
    assert_eq!(copy.keys().unwrap().len(), 3);
}

#[test]
fn a_clean_source_exports_without_the_flag() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("db");
    let db = Db::create(&src, IndexParams::default(), options()).unwrap();
    db.insert_text("k", "a clean document with some words")
        .unwrap();
    drop(db);
    let dest = tmp.path().join("copy");
    let out = run(&["export", s(&src), s(&dest)]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(Db::open_read_only(&dest).unwrap().keys().unwrap().len(), 1);
}
