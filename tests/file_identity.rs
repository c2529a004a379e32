//! Every file of a version-3 database is tied to it (`format/v3-design.md`, "What is
//! checked, and when"): twin databases built by the same writes, under different identities,
//! have files of the same names and lengths, and one twin's segment, deletion list, WAL file
//! or manifest and CURRENT copied over the other's makes every command fail at open with
//! corruption (exit 3) naming the file and the field's offset, never answer from it. A copy of
//! one database (same identity) is refused as a merge source; export, merge and upgrade write
//! under the destination's identity.

mod common;

use std::path::{Path, PathBuf};

use common::cli::{run, s, success};
use mhdb::db::{Db, DbId, Options};

/// The writes both twins get: a flushed segment, a second one with a deletion list for the
/// first, and a WAL file holding inserts and a delete. `deleted` picks the documents the
/// second flush deletes.
fn build(dir: &Path, identity: DbId, key_prefix: &str, deleted: &[usize]) {
    let opts = Options {
        auto_compact: false,
        identity: Some(identity),
        ..Options::default()
    };
    let db = Db::create(dir, common::golden::params(), opts).unwrap();
    let text = |i: usize| {
        format!("document {i} tells of harbours, lanterns and clocks, number {i} of many")
    };
    let key = |i: usize| format!("{key_prefix}-{i:03}");
    for i in 0..40 {
        db.insert_text(key(i), &text(i)).unwrap();
    }
    db.flush().unwrap();
    for i in 40..60 {
        db.insert_text(key(i), &text(i)).unwrap();
    }
    for &i in deleted {
        db.delete(key(i)).unwrap();
    }
    db.flush().unwrap();
    for i in 60..65 {
        db.insert_text(key(i), &text(i)).unwrap();
    }
    db.delete(key(41)).unwrap();
    db.close().unwrap();
}

fn files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n != "LOCK")
        .collect();
    names.sort();
    names
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for name in files(from) {
        std::fs::copy(from.join(&name), to.join(&name)).unwrap();
    }
}

/// The first file of `dir` whose name starts with `prefix`.
fn file_named(dir: &Path, prefix: &str) -> String {
    files(dir)
        .into_iter()
        .find(|n| n.starts_with(prefix))
        .unwrap_or_else(|| panic!("no {prefix}* in {}", dir.display()))
}

/// Every command that reads the database at `db` fails with corruption (exit 3) naming
/// `file` at `offset`.
fn every_command_refuses(db: &Path, file: &str, offset: u64, what: &str) {
    let docs = db.with_extension("jsonl");
    std::fs::write(&docs, "{\"id\": \"new\", \"text\": \"a new document\"}\n").unwrap();
    let dest = db.with_extension("export");
    let commands: Vec<Vec<&str>> = vec![
        vec!["query", s(db), "--text", "document 3 tells of harbours"],
        vec!["get", s(db), "doc-003"],
        vec!["verify", s(db)],
        vec!["stats", s(db)],
        vec!["export", s(db), s(&dest)],
        vec!["compact", s(db)],
        vec!["add", s(db), s(&docs)],
    ];
    let want = format!("{file} at byte offset {offset}");
    for args in commands {
        let out = run(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "{what}: {args:?}: {err}");
        assert!(
            err.contains(&want),
            "{what}: {args:?}: wanted {want:?} in {err}"
        );
        assert!(
            out.stdout.is_empty() || args[0] == "verify",
            "{what}: {args:?} answered"
        );
    }
    assert!(!dest.exists(), "{what}: export wrote a copy");
}

fn twins(tmp: &Path) -> (PathBuf, PathBuf) {
    let (x, twin) = (tmp.join("x"), tmp.join("twin"));
    build(&x, DbId([1; 16]), "doc", &[3, 7, 11]);
    build(&twin, DbId([2; 16]), "doc", &[3, 7, 11]);
    assert_eq!(files(&x), files(&twin));
    (x, twin)
}

#[test]
fn a_file_of_a_twin_database_is_corruption_for_every_command() {
    let tmp = tempfile::tempdir().unwrap();
    let (x, twin) = twins(tmp.path());
    // (file name prefix, offset of the field that differs: db_id in each header kind)
    let kinds = [("seg-", 56), ("del-", 16), ("wal-", 16)];
    for (prefix, offset) in kinds {
        let victim = tmp.path().join(format!("victim-{prefix}"));
        copy_dir(&x, &victim);
        let name = file_named(&victim, prefix);
        let (ours, theirs) = (x.join(&name), twin.join(&name));
        assert_eq!(
            std::fs::metadata(&ours).unwrap().len(),
            std::fs::metadata(&theirs).unwrap().len(),
            "{name}: the twins' files are alike but for their identity"
        );
        std::fs::copy(&theirs, victim.join(&name)).unwrap();
        every_command_refuses(&victim, &name, offset, &name);
    }
    // The twin's manifest and CURRENT: the files it names are this database's, of another
    // identity than the manifest's (the first segment fails first).
    let victim = tmp.path().join("victim-manifest");
    copy_dir(&x, &victim);
    let manifest = file_named(&victim, "MANIFEST-");
    for name in [manifest.as_str(), "CURRENT"] {
        std::fs::copy(twin.join(name), victim.join(name)).unwrap();
    }
    let segment = file_named(&victim, "seg-");
    every_command_refuses(&victim, &segment, 56, "manifest and CURRENT");
}

/// Files of one identity (a template copied with `cp -r`, or a fixture generator's fixed
/// identity) are still pinned by the manifest: a deletion list of the same length but other
/// entries fails the manifest's `del_crc`, a segment of the same length but other keys its
/// `meta_crc`.
#[test]
fn a_file_of_the_same_identity_is_caught_by_the_manifest_checksums() {
    let tmp = tempfile::tempdir().unwrap();
    let (x, other) = (tmp.path().join("x"), tmp.path().join("other"));
    build(&x, DbId([1; 16]), "doc", &[3, 7, 11]);
    build(&other, DbId([1; 16]), "key", &[4, 8, 12]);
    assert_eq!(files(&x), files(&other));
    for (prefix, what) in [("del-", "checksum"), ("seg-", "meta_crc")] {
        let victim = tmp.path().join(format!("victim-{prefix}"));
        copy_dir(&x, &victim);
        let name = file_named(&victim, prefix);
        let len = std::fs::metadata(x.join(&name)).unwrap().len();
        assert_eq!(std::fs::metadata(other.join(&name)).unwrap().len(), len);
        std::fs::copy(other.join(&name), victim.join(&name)).unwrap();
        let out = run(&["stats", s(&victim)]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "{name}: {err}");
        assert!(err.contains(&name) && err.contains(what), "{name}: {err}");
        assert!(err.contains(&format!("byte offset {}", len - 4)) || prefix == "seg-");
    }
}

#[test]
fn merging_a_copy_of_the_destination_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let x = tmp.path().join("x");
    build(&x, DbId([1; 16]), "doc", &[3]);
    let copy = tmp.path().join("copy");
    copy_dir(&x, &copy);
    let before = files(&x);
    for (dest, src) in [(&x, &x), (&x, &copy), (&copy, &x)] {
        let out = run(&["merge", s(dest), s(src)]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains("nothing was merged"), "{err}");
    }
    let out = run(&["merge", s(&tmp.path().join("d")), s(&x), s(&copy)]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("share the identity 01010101"), "{err}");
    assert!(!tmp.path().join("d").exists());
    assert_eq!(files(&x), before);
    // The library refuses it too.
    let dest = Db::open(&x, Options::default()).unwrap();
    let src = Db::open_read_only(&copy).unwrap();
    assert!(matches!(
        dest.merge_from(&src),
        Err(mhdb::Error::InvalidParameter { .. })
    ));
}

/// The identity and number every data file of `dir` carries in its header.
fn carried(dir: &Path) -> Vec<(String, [u8; 16], u64)> {
    files(dir)
        .into_iter()
        .filter_map(|name| {
            let at = match &name[..4] {
                "seg-" => 56,
                "del-" | "wal-" => 16,
                _ => return None,
            };
            let bytes = std::fs::read(dir.join(&name)).unwrap();
            let id: [u8; 16] = bytes[at..at + 16].try_into().unwrap();
            let number = u64::from_le_bytes(bytes[at + 16..at + 24].try_into().unwrap());
            Some((name, id, number))
        })
        .collect()
}

fn number_of(name: &str) -> u64 {
    u64::from_str_radix(&name[4..20], 16).unwrap()
}

#[test]
fn export_merge_and_upgrade_write_under_the_destination_identity() {
    let tmp = tempfile::tempdir().unwrap();
    let x = tmp.path().join("x");
    build(&x, DbId([1; 16]), "doc", &[3]);
    let fixed = "000102030405060708090a0b0c0d0e0f";
    let with_identity = |args: &[&str]| {
        common::cli::mhdb(args)
            .env(mhdb::db::TEST_IDENTITY_ENV, fixed)
            .output()
            .unwrap()
    };
    // Export: a database of its own identity.
    let exported = tmp.path().join("exported");
    let out = with_identity(&["export", s(&x), s(&exported)]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains(&format!("identity {fixed} from MHDB_TEST_IDENTITY")),
        "{err}"
    );
    let stats: serde_json::Value =
        serde_json::from_slice(&success(run(&["stats", "--json", s(&exported)]), "stats")).unwrap();
    assert_eq!(stats["identity"], fixed);
    // Merge into a new destination, then into an existing one: every file the destination
    // holds carries its identity and its own number, the merged segments included.
    let merged = tmp.path().join("merged");
    let y = tmp.path().join("y");
    build(&y, DbId([3; 16]), "other", &[]);
    success(with_identity(&["merge", s(&merged), s(&x)]), "merge");
    success(run(&["merge", s(&merged), s(&y)]), "merge");
    let carried_files = carried(&merged);
    assert!(carried_files.iter().any(|(n, ..)| n.starts_with("seg-")));
    for (name, id, number) in carried_files {
        assert_eq!(DbId(id).to_string(), fixed, "{name}");
        assert_eq!(number, number_of(&name), "{name}");
    }
    // Upgrade of a version-2 database: a new identity (here the test one).
    let v2 = tmp.path().join("v2");
    copy_dir(
        Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden/db-v2")),
        &v2,
    );
    let before: serde_json::Value =
        serde_json::from_slice(&success(run(&["stats", "--json", s(&v2)]), "stats")).unwrap();
    assert_eq!(before["identity"], serde_json::Value::Null);
    assert_eq!(before["format_version"], 2);
    success(with_identity(&["upgrade", s(&v2)]), "upgrade");
    let after: serde_json::Value =
        serde_json::from_slice(&success(run(&["stats", "--json", s(&v2)]), "stats")).unwrap();
    assert_eq!(after["identity"], fixed);
    assert_eq!(after["format_version"], 3);
    for (name, id, number) in carried(&v2) {
        assert_eq!(DbId(id).to_string(), fixed, "{name}");
        assert_eq!(number, number_of(&name), "{name}");
    }
}

#[test]
fn a_malformed_test_identity_is_refused_before_anything_is_made() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("x");
    let out = common::cli::mhdb(&["create", s(&dir)])
        .env(mhdb::db::TEST_IDENTITY_ENV, "0123")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(!dir.join("CURRENT").exists());
}
