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
    assert!(copy.stats().unwrap().copied_past_damage);
    drop(copy);
    copied_past_damage_says_so_for_good(&dest, &tmp.path().join("copy-of-copy"));
}

/// A copy made past damage says so in `stats`, through its own writes and compactions and in
/// any export of it, so that it is never shipped as a clean copy unknowingly.
fn copied_past_damage_says_so_for_good(copy: &Path, reexport: &Path) {
    let shown = |dir: &Path| {
        let out = run(&["stats", s(dir), "--json"]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let text = run(&["stats", s(dir)]);
        let said = String::from_utf8_lossy(&text.stdout).contains("copied past damage");
        assert_eq!(json["copied_past_damage"].as_bool(), Some(said), "{json}");
        said
    };
    assert!(shown(copy));
    let db = Db::open(copy, options()).unwrap();
    db.insert_text(b"later", "a document added to the copy afterwards")
        .unwrap();
    db.compact().unwrap();
    drop(db);
    assert!(shown(copy), "a commit of the copy dropped the mark");
    let out = run(&["export", s(copy), s(reexport)]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(shown(reexport), "an export of the copy dropped the mark");
}

#[test]
fn a_clean_export_is_not_marked() {
    let tmp = tempfile::tempdir().unwrap();
    let (src, dest) = (tmp.path().join("src"), tmp.path().join("dest"));
    let db = Db::create(&src, IndexParams::default(), options()).unwrap();
    db.insert_text(b"a", "one document of a clean database")
        .unwrap();
    drop(db);
    for flags in [&[][..], &["--allow-damaged"][..]] {
        let _ = std::fs::remove_dir_all(&dest);
        let mut args = vec!["export", s(&src), s(&dest)];
        args.extend_from_slice(flags);
        let out = run(&args);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        assert!(
            !Db::open_read_only(&dest)
                .unwrap()
                .stats()
                .unwrap()
                .copied_past_damage
        );
    }
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

/// A source of `n` documents in `dir/db`.
fn source(dir: &Path, n: usize) -> PathBuf {
    let src = dir.join("db");
    let db = Db::create(&src, IndexParams::default(), options()).unwrap();
    for i in 0..n {
        db.insert_text(format!("k{i}"), &format!("document {i} and its words"))
            .unwrap();
    }
    src
}

/// Where an export to `dest` builds its copy.
fn building(dest: &Path) -> PathBuf {
    let name = dest.file_name().unwrap().to_str().unwrap();
    dest.with_file_name(format!(".{name}.mhdb-export"))
}

#[test]
fn what_a_killed_export_left_is_removed_by_the_next() {
    let tmp = tempfile::tempdir().unwrap();
    let src = source(tmp.path(), 5);
    let dest = tmp.path().join("copy");
    // A killed export leaves its building directory: a database being filled, unlocked once
    // its process is gone.
    let left = Db::create(building(&dest), IndexParams::default(), options()).unwrap();
    left.insert_text("stale", "a document of the killed run")
        .unwrap();
    drop(left);
    let out = run(&["export", s(&src), s(&dest)]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!building(&dest).exists());
    let mut keys = Db::open_read_only(&dest).unwrap().keys().unwrap();
    keys.sort();
    let want: Vec<Vec<u8>> = (0..5).map(|i| format!("k{i}").into_bytes()).collect();
    assert_eq!(keys, want);
}

#[test]
fn an_export_still_building_is_not_touched() {
    let tmp = tempfile::tempdir().unwrap();
    let src = source(tmp.path(), 5);
    let dest = tmp.path().join("copy");
    // A run in progress holds its building directory locked (here, this process does).
    let running = Db::create(building(&dest), IndexParams::default(), options()).unwrap();
    running
        .insert_text("mine", "a document of the running export")
        .unwrap();
    let out = run(&["export", s(&src), s(&dest)]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("locked"), "{}", stderr(&out));
    assert!(!dest.exists());
    assert_eq!(running.keys().unwrap(), [b"mine".to_vec()]);
    drop(running);
    assert!(
        Db::open_read_only(building(&dest))
            .unwrap()
            .contains("mine")
            .unwrap()
    );
}
