//! The README's library example does what the README says: run twice (the second run reopens
//! the database), it prints a hit for the edited sentence each time.

mod common;

#[path = "../examples/readme.rs"]
mod readme;

#[test]
fn readme_example_finds_the_edited_sentence_and_runs_twice() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("idx");
    for run in 0..2 {
        let hits = readme::run(&dir).unwrap();
        assert_eq!(hits.len(), 1, "run {run}: {hits:?}");
        assert_eq!(hits[0].1, "https://example.com/a");
        assert!(hits[0].0 >= 0.8 && hits[0].0 < 1.0, "{hits:?}");
    }
    let db = mhdb::db::Db::open_read_only(&dir).unwrap();
    assert_eq!(common::stored(&db).len(), 1);
}
