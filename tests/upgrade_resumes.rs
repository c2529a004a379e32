//! `mhdb upgrade` survives being interrupted at any step: whatever an interrupted attempt left
//! behind (a partial copy, the export's building directory, the version-1 database renamed
//! aside with or without a finished copy), the next attempt ends with one version-2 database
//! in place holding exactly what the version-1 database held, and never loses it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use mhdb::db::{Db, Options, Upgraded};

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden/db-v1");

/// Every live key with its stored signature.
fn contents(dir: &Path) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let db = Db::open_read_only(dir).unwrap();
    db.keys()
        .unwrap()
        .into_iter()
        .map(|k| {
            let sig = db.get(&k).unwrap().unwrap().packed;
            (k, sig)
        })
        .collect()
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
    }
}

/// A fresh copy of the version-1 fixture at `root/db`, and what it holds.
fn v1_copy(root: &Path) -> BTreeMap<Vec<u8>, Vec<u8>> {
    copy_dir(Path::new(FIXTURE), &root.join("db"));
    contents(&root.join("db"))
}

/// The database at `root/db` is version 2 (a writer may open it) and holds `want`; nothing
/// of the upgrade is left beside it.
fn assert_upgraded(root: &Path, want: &BTreeMap<Vec<u8>, Vec<u8>>) {
    let dir = root.join("db");
    drop(Db::open(&dir, Options::default()).unwrap());
    assert_eq!(&contents(&dir), want);
    let mut names: Vec<String> = std::fs::read_dir(root)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["db"]);
}

#[test]
fn a_clean_upgrade_converts_and_a_second_is_a_no_op() {
    let tmp = tempfile::tempdir().unwrap();
    let want = v1_copy(tmp.path());
    let dir = tmp.path().join("db");
    assert_eq!(
        Db::upgrade(&dir, false).unwrap(),
        Upgraded::Converted { kept: None }
    );
    assert_upgraded(tmp.path(), &want);
    assert_eq!(Db::upgrade(&dir, false).unwrap(), Upgraded::AlreadyCurrent);
}

#[test]
fn leftovers_of_an_attempt_stopped_before_the_swap_are_replaced() {
    let tmp = tempfile::tempdir().unwrap();
    let want = v1_copy(tmp.path());
    // A partial copy (no CURRENT) and the export's building directory, as a kill during the
    // export leaves them.
    let partial = tmp.path().join(".db.mhdb-upgrade");
    std::fs::create_dir(&partial).unwrap();
    std::fs::write(partial.join("seg-0000000000000003.seg"), b"half a segment").unwrap();
    let building = tmp.path().join("..db.mhdb-upgrade.mhdb-export");
    std::fs::create_dir(&building).unwrap();
    std::fs::write(building.join("wal-0000000000000001.log"), b"MHDBWAL").unwrap();
    Db::upgrade(tmp.path().join("db"), false).unwrap();
    assert_upgraded(tmp.path(), &want);
}

#[test]
fn a_version_1_copy_whose_removal_was_cut_short_is_removed_by_the_next_upgrade() {
    let tmp = tempfile::tempdir().unwrap();
    let want = v1_copy(tmp.path());
    let dir = tmp.path().join("db");
    Db::upgrade(&dir, false).unwrap();
    // A kill during the removal leaves the version-1 copy, renamed for removal, part-removed.
    let discarded = tmp.path().join(".db.mhdb-v1-discarded");
    std::fs::create_dir(&discarded).unwrap();
    std::fs::write(
        discarded.join("seg-0000000000000003.seg"),
        b"an old segment",
    )
    .unwrap();
    assert_eq!(Db::upgrade(&dir, false).unwrap(), Upgraded::AlreadyCurrent);
    assert_upgraded(tmp.path(), &want);
}

/// The state between the two renames of an upgrade's swap, under `root`: the version-1
/// database aside (its path returned), the upgraded copy complete (made by a whole upgrade
/// elsewhere), `db` missing.
fn stage_between_the_renames(root: &Path) -> PathBuf {
    let other = tempfile::tempdir().unwrap();
    v1_copy(other.path());
    Db::upgrade(other.path().join("db"), false).unwrap();
    let aside = root.join(".db.mhdb-v1");
    std::fs::rename(root.join("db"), &aside).unwrap();
    copy_dir(&other.path().join("db"), &root.join(".db.mhdb-upgrade"));
    aside
}

#[test]
fn an_attempt_stopped_between_the_renames_is_finished() {
    let tmp = tempfile::tempdir().unwrap();
    let want = v1_copy(tmp.path());
    let dir = tmp.path().join("db");
    stage_between_the_renames(tmp.path());
    assert!(Db::open_read_only(&dir).is_err());
    assert_eq!(
        Db::upgrade(&dir, false).unwrap(),
        Upgraded::Converted { kept: None }
    );
    assert_upgraded(tmp.path(), &want);
}

#[test]
fn an_attempt_stopped_after_the_first_rename_without_a_copy_starts_over() {
    let tmp = tempfile::tempdir().unwrap();
    let want = v1_copy(tmp.path());
    let dir = tmp.path().join("db");
    std::fs::rename(&dir, tmp.path().join(".db.mhdb-v1")).unwrap();
    Db::upgrade(&dir, false).unwrap();
    assert_upgraded(tmp.path(), &want);
}

#[test]
fn a_writer_holding_the_database_blocks_the_upgrade() {
    let tmp = tempfile::tempdir().unwrap();
    let want = v1_copy(tmp.path());
    let dir = tmp.path().join("db");
    // A version-1 writer holds the directory's lock (as a running older mhdb would).
    let lock = std::fs::File::open(&dir).unwrap();
    lock.try_lock().unwrap();
    let err = Db::upgrade(&dir, false).unwrap_err();
    assert!(matches!(err, mhdb::Error::Locked { .. }), "{err}");
    drop(lock);
    assert_eq!(contents(&dir), want);
    Db::upgrade(&dir, false).unwrap();
    assert_upgraded(tmp.path(), &want);
}

#[test]
fn an_upgrade_under_way_keeps_its_copy_from_a_second_upgrade() {
    let tmp = tempfile::tempdir().unwrap();
    let want = v1_copy(tmp.path());
    let dir = tmp.path().join("db");
    // An upgrade under way: it holds the directory's lock and is building its copy.
    let copy = tmp.path().join(".db.mhdb-upgrade");
    std::fs::create_dir(&copy).unwrap();
    std::fs::write(copy.join("being-written"), b"x").unwrap();
    let lock = std::fs::File::open(&dir).unwrap();
    lock.try_lock().unwrap();
    let err = Db::upgrade(&dir, false).unwrap_err();
    assert!(matches!(err, mhdb::Error::Locked { .. }), "{err}");
    assert!(
        copy.join("being-written").exists(),
        "the copy under way was removed"
    );
    drop(lock);
    // Once it is gone, the next upgrade takes the copy for a leftover and starts over.
    Db::upgrade(&dir, false).unwrap();
    assert_upgraded(tmp.path(), &want);
}

#[test]
fn an_upgrade_between_its_renames_is_not_finished_by_a_second_one() {
    let tmp = tempfile::tempdir().unwrap();
    let want = v1_copy(tmp.path());
    let dir = tmp.path().join("db");
    // The first upgrade renamed the database aside and still holds its lock there.
    let aside = stage_between_the_renames(tmp.path());
    let lock = std::fs::File::open(&aside).unwrap();
    lock.try_lock().unwrap();
    let err = Db::upgrade(&dir, false).unwrap_err();
    assert!(matches!(err, mhdb::Error::Locked { .. }), "{err}");
    assert!(
        aside.exists() && !dir.exists(),
        "the swap under way was taken over"
    );
    drop(lock);
    Db::upgrade(&dir, false).unwrap();
    assert_upgraded(tmp.path(), &want);
}
