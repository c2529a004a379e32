//! `mhdb add --files` keeps input order as the JSON Lines path does: the files ahead of one
//! that is not UTF-8 are committed before its error (with `--json`, the commit line says so),
//! the files after it are not; `--skip-invalid` skips it in its place.

mod common;

use common::cli::{json_lines, ok, run, s};

#[test]
fn files_before_a_bad_one_are_committed_and_none_after() {
    let dir = tempfile::tempdir().unwrap();
    let files = dir.path().join("files");
    std::fs::create_dir(&files).unwrap();
    // Walked in name order: a, b (not UTF-8), c.
    std::fs::write(files.join("a.txt"), "alpha beta gamma delta").unwrap();
    std::fs::write(files.join("b.txt"), b"ab\xffc").unwrap();
    std::fs::write(files.join("c.txt"), "epsilon zeta eta theta").unwrap();
    let db = dir.path().join("db");
    ok(&["create", s(&db)]);
    let out = run(&["add", s(&db), "--files", s(&files), "--json"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    let bad = files.join("b.txt");
    assert!(
        err.contains(&format!("{}: not UTF-8 (byte offset 2)", bad.display())),
        "{err}"
    );
    let a = files.join("a.txt").display().to_string();
    let commits = json_lines(&out.stdout);
    assert_eq!(commits, [serde_json::json!({"committed": 1, "last_id": a})]);
    assert_eq!(ok(&["keys", s(&db)]), format!("{a}\n"));

    let out = run(&["add", s(&db), "--files", s(&files), "--skip-invalid"]);
    assert!(out.status.success(), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("added 2 documents (1 invalid skipped"),
        "{err}"
    );
    assert_eq!(ok(&["keys", s(&db)]).lines().count(), 2);
}
