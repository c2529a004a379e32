//! A merge that names one database twice, or the destination as a source, is refused before
//! anything is written: merging a database into itself would only rewrite its documents
//! (and used to double its segments on every run).

mod common;

use std::path::Path;

use common::cli::{run, success};
use mhdb::db::{Db, Options};

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// A database at `dir` with a few documents.
fn filled(dir: &Path) {
    success(run(&["create", s(dir), "--threshold", "0.5"]), "create");
    let docs = dir.with_extension("jsonl");
    let lines: String = (0..20)
        .map(|i| {
            format!(
                "{{\"id\": \"d{i}\", \"text\": \"alpha beta gamma delta {i} epsilon zeta eta\"}}\n"
            )
        })
        .collect();
    std::fs::write(&docs, lines).unwrap();
    success(run(&["add", s(dir), s(&docs)]), "add");
}

fn files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn merging_a_database_into_itself_is_refused_and_changes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let x = tmp.path().join("x");
    filled(&x);
    let link = tmp.path().join("x-link");
    std::os::unix::fs::symlink(&x, &link).unwrap();
    let before = files(&x);
    for src in [&x, &link, &x.join("..").join("x")] {
        let out = run(&["merge", s(&x), s(src)]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains("is the destination itself"), "{err}");
        assert!(err.contains("nothing was merged"), "{err}");
    }
    assert_eq!(files(&x), before);
    let db = Db::open_read_only(&x).unwrap();
    assert_eq!(db.len(), 20);
}

#[test]
fn a_source_given_twice_is_refused_before_the_destination_is_made() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b, dest) = (
        tmp.path().join("a"),
        tmp.path().join("b"),
        tmp.path().join("d"),
    );
    filled(&a);
    filled(&b);
    let out = run(&["merge", s(&dest), s(&a), s(&b), s(&a)]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!("is the same database as {}", a.display())),
        "{err}"
    );
    assert!(!dest.exists(), "nothing is created");
    // Distinct sources still merge.
    success(run(&["merge", s(&dest), s(&a), s(&b)]), "merge");
    assert_eq!(Db::open_read_only(&dest).unwrap().len(), 20);
}

#[test]
fn the_library_refuses_a_handle_on_the_database_itself() {
    let tmp = tempfile::tempdir().unwrap();
    let x = tmp.path().join("x");
    filled(&x);
    let db = Db::open(&x, Options::default()).unwrap();
    let itself = Db::open_read_only(&x).unwrap();
    let err = db.merge_from(&itself).unwrap_err();
    assert!(matches!(err, mhdb::Error::InvalidParameter { .. }), "{err}");
    assert_eq!(db.len(), 20);
}
