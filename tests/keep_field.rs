//! The KEEP column (`add --keep-field`): each document's value of one field, a number or a
//! string, survives every path a document takes; the first add fixes the field and its type;
//! values of the wrong kind are refused naming the file, the place and the field; a flipped
//! byte of the column is corruption; and `dedup --keep max:FIELD|min:FIELD` ranks by it.

mod common;

use std::path::Path;

use common::cli::{run, run_with_stdin, s};
use common::params::{FOUR_TEXTS, word_index};
use mhdb::db::{ColumnCounts, Db, Options};
use mhdb::storage::segment::{KeepColumn, KeepType, KeepValue};
use serde_json::Value;

fn score(field: &str) -> KeepColumn {
    KeepColumn {
        keep_type: KeepType::Str,
        field: field.into(),
    }
}

/// The four texts' keep values: strings, and none for the last.
fn value_of(key: &str) -> Option<KeepValue> {
    (key != "d").then(|| KeepValue::Str(format!("v-{key}-é").into_bytes().into()))
}

fn create_keeping(dir: &Path, column: Option<KeepColumn>) -> Db {
    let mut db = Db::create(dir, word_index(64, 16, 0.5), Options::default()).unwrap();
    if let Some(column) = column {
        db.fix_keep_column(&column).unwrap();
    }
    db
}

fn insert_four(db: &Db) {
    for (key, text) in FOUR_TEXTS {
        let mut sig = db.sketch_text(text).unwrap();
        if let Some(v) = value_of(key) {
            sig = sig.with_keep_value(v);
        }
        db.insert(key, &sig).unwrap();
    }
}

fn assert_values(db: &Db, what: &str) {
    for (key, _) in FOUR_TEXTS {
        let got = db.columns_of(key).unwrap().keep;
        assert_eq!(got, value_of(key), "{what}: {key}");
    }
}

fn assert_none(db: &Db, what: &str) {
    for (key, _) in FOUR_TEXTS {
        assert_eq!(db.columns_of(key).unwrap().keep, None, "{what}: {key}");
    }
}

/// Values survive reopen (WAL replay), flush, compaction, export and a merge into an index
/// keeping the same field; a merge into one keeping another field, or none, carries none.
#[test]
fn values_survive_every_path() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let db = create_keeping(&dir, Some(score("score")));
    insert_four(&db);
    assert_values(&db, "in memory");
    drop(db);
    let db = Db::open(&dir, Options::default()).unwrap();
    assert_values(&db, "replayed from the WAL");
    db.flush().unwrap();
    assert_values(&db, "flushed");
    db.insert_text("e", "one more document to compact").unwrap();
    db.flush().unwrap();
    db.compact_full().unwrap();
    assert_values(&db, "compacted");
    db.delete("e").unwrap();
    let stats = db.stats().unwrap();
    assert_eq!(stats.keep_column, Some(score("score")));
    let counts = ColumnCounts {
        with: 3,
        without: 1,
    };
    assert_eq!(stats.keep_values, Some(counts));
    let exported = tmp.path().join("exported");
    db.export(&exported).unwrap();
    let copy = Db::open(&exported, Options::default()).unwrap();
    assert_values(&copy, "exported");
    assert_eq!(copy.keep_column(), Some(score("score")));
    let same = create_keeping(&tmp.path().join("same"), Some(score("score")));
    same.merge_from(&db).unwrap();
    assert_values(&same, "merged");
    let other = create_keeping(&tmp.path().join("other"), Some(score("date")));
    other.merge_from(&db).unwrap();
    assert_none(&other, "merged into an index keeping another field");
    let none = create_keeping(&tmp.path().join("none"), None);
    none.merge_from(&db).unwrap();
    assert_none(&none, "merged into an index without the column");
    assert_eq!(none.stats().unwrap().keep_values, None);
}

/// The first add fixes the field (and its type); another field later is refused, and so is
/// fixing one on an index that already has segments without it.
#[test]
fn the_keep_field_is_fixed_once_before_segments() {
    let tmp = tempfile::tempdir().unwrap();
    let mut db = create_keeping(&tmp.path().join("db"), Some(score("score")));
    db.fix_keep_column(&score("score")).unwrap();
    let err = db.fix_keep_column(&score("date")).unwrap_err();
    assert!(err.to_string().contains("\"date\""), "{err}");
    let number = KeepColumn {
        keep_type: KeepType::I64,
        field: "score".into(),
    };
    let err = db.fix_keep_column(&number).unwrap_err();
    assert!(err.to_string().contains("string"), "{err}");
    let mut plain = create_keeping(&tmp.path().join("plain"), None);
    plain.insert_text("a", FOUR_TEXTS[0].1).unwrap();
    plain.flush().unwrap();
    let err = plain.fix_keep_column(&score("score")).unwrap_err();
    assert!(err.to_string().contains("segments"), "{err}");
}

/// A Parquet file of three rows with an int64 column `q` holding `values`.
fn write_parquet(path: &Path, values: &[Option<i64>]) {
    use arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray};
    use std::sync::Arc;
    let ids: Vec<String> = (0..values.len()).map(|i| format!("r{i}")).collect();
    let texts: Vec<String> = (0..values.len())
        .map(|i| format!("row {i} of the file"))
        .collect();
    let columns: Vec<(&str, ArrayRef)> = vec![
        ("id", Arc::new(StringArray::from(ids))),
        ("text", Arc::new(StringArray::from(texts))),
        ("q", Arc::new(Int64Array::from(values.to_vec()))),
    ];
    let batch = RecordBatch::try_from_iter(columns).unwrap();
    let file = std::fs::File::create(path).unwrap();
    let mut w = parquet::arrow::ArrowWriter::try_new(file, batch.schema(), None).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
}

fn stats_keep(db: &Path) -> Value {
    let out = run(&["stats", s(db), "--json"]);
    assert!(out.status.success(), "{out:?}");
    let stats: Value = serde_json::from_slice(&out.stdout).unwrap();
    stats["keep"].clone()
}

fn created(dir: &Path) -> std::path::PathBuf {
    let db = dir.join("db");
    assert!(
        run(&["create", s(&db), "--threshold", "0.5"])
            .status
            .success()
    );
    db
}

/// JSON numbers are f64 unless --keep-type says otherwise, a Parquet integer column is i64,
/// CSV strings are strings; nulls, missing fields and empty CSV fields are no value.
#[test]
fn add_captures_the_field_from_each_format() {
    let tmp = tempfile::tempdir().unwrap();
    let jsonl = tmp.path().join("docs.jsonl");
    std::fs::write(
        &jsonl,
        "{\"id\":\"a\",\"text\":\"first text here\",\"q\":3}\n\
         {\"id\":\"b\",\"text\":\"second text here\",\"q\":0.5}\n\
         {\"id\":\"c\",\"text\":\"third text here\",\"q\":null}\n\
         {\"id\":\"d\",\"text\":\"fourth text here\"}\n",
    )
    .unwrap();
    let db = created(&tmp.path().join("j"));
    let out = run(&["add", s(&db), s(&jsonl), "--keep-field", "q"]);
    assert!(out.status.success(), "{out:?}");
    let want = serde_json::json!({"field": "q", "type": "f64", "with": 2, "without": 2});
    assert_eq!(stats_keep(&db), want);
    let db = created(&tmp.path().join("i64"));
    let args = [
        "add",
        s(&db),
        s(&jsonl),
        "--keep-field",
        "q",
        "--keep-type",
        "i64",
    ];
    let out = run(&args);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("docs.jsonl:2: field \"q\""), "{said}");

    let parquet = tmp.path().join("docs.parquet");
    write_parquet(&parquet, &[Some(5), None, Some(-7)]);
    let db = created(&tmp.path().join("p"));
    let out = run(&["add", s(&db), s(&parquet), "--keep-field", "q"]);
    assert!(out.status.success(), "{out:?}");
    let want = serde_json::json!({"field": "q", "type": "i64", "with": 2, "without": 1});
    assert_eq!(stats_keep(&db), want);

    let csv = tmp.path().join("docs.csv");
    std::fs::write(
        &csv,
        "id,text,lang\na,first text,en\nb,second text,\nc,third,fr\n",
    )
    .unwrap();
    let db = created(&tmp.path().join("c"));
    let out = run(&["add", s(&db), s(&csv), "--keep-field", "lang"]);
    assert!(out.status.success(), "{out:?}");
    let want = serde_json::json!({"field": "lang", "type": "string", "with": 2, "without": 1});
    assert_eq!(stats_keep(&db), want);
    // The index keeps "lang": another field is a usage error.
    let out = run(&["add", s(&db), s(&csv), "--keep-field", "text"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
}

/// A boolean, or a string in a numeric index, refuses its record naming the file, the line
/// and the field; --skip-invalid skips and counts it.
#[test]
fn values_of_the_wrong_kind_are_refused_in_their_place() {
    let tmp = tempfile::tempdir().unwrap();
    let db = created(tmp.path());
    let lines = "{\"id\":\"a\",\"text\":\"first text here\",\"q\":1.5}\n\
                 {\"id\":\"b\",\"text\":\"second text here\",\"q\":\"high\"}\n\
                 {\"id\":\"c\",\"text\":\"third text here\",\"q\":true}\n";
    let out = run_with_stdin(&["add", s(&db), "-", "--keep-field", "q"], lines.as_bytes());
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("<stdin>:2: field \"q\": a value of type string"),
        "{said}"
    );
    let args = ["add", s(&db), "-", "--keep-field", "q", "--skip-invalid"];
    let out = run_with_stdin(&args, lines.as_bytes());
    assert!(out.status.success(), "{out:?}");
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("field \"q\" is a boolean"), "{said}");
    assert!(said.contains("2 invalid skipped"), "{said}");
}

/// `dedup --keep max:q` keeps the highest value of each group, `min:q` the lowest, documents
/// without one last; exact copies too; a field the index does not keep is a usage error.
#[test]
fn dedup_keeps_the_highest_or_lowest_value() {
    let tmp = tempfile::tempdir().unwrap();
    let db = created(tmp.path());
    let base = "the annual report of the society covers every meeting held this year";
    let lines = [
        format!("{{\"id\":\"a\",\"text\":\"{base}\",\"q\":2}}"),
        format!("{{\"id\":\"b\",\"text\":\"{base} again\",\"q\":9}}"),
        format!("{{\"id\":\"c\",\"text\":\"{base}\",\"q\":-4}}"),
        format!("{{\"id\":\"d\",\"text\":\"{base} once more\"}}"),
        format!("{{\"id\":\"e\",\"text\":\"{base}\",\"q\":12}}"),
    ];
    let add = ["add", s(&db), "-", "--keep-field", "q"];
    assert!(
        run_with_stdin(&add, lines.join("\n").as_bytes())
            .status
            .success()
    );
    let kept = |keep: &str| {
        let out = run(&["dedup", s(&db), "--format", "clusters", "--keep", keep]);
        assert!(out.status.success(), "{out:?}");
        let line: Value = serde_json::from_slice(&out.stdout).unwrap();
        line["keep"].as_str().unwrap().to_string()
    };
    // e is an exact copy of a and c, with the highest value of all.
    assert_eq!(kept("max:q"), "e");
    assert_eq!(kept("min:q"), "c");
    assert_eq!(kept("first"), "a");
    let out = run(&["dedup", s(&db), "--format", "drop", "--keep", "max:other"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("\"q\""));
}

/// The column's rows are covered by the block checksums: a flipped bit of the second row is
/// corruption (`mhdb verify` exits 3).
#[test]
fn a_flipped_keep_row_fails_verify() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let db = Db::create(&dir, word_index(64, 16, 0.5), Options::default()).unwrap();
    drop(db);
    let mut db = Db::open(&dir, Options::default()).unwrap();
    db.fix_keep_column(&KeepColumn {
        keep_type: KeepType::I64,
        field: "q".into(),
    })
    .unwrap();
    for (i, (key, text)) in FOUR_TEXTS.iter().enumerate() {
        let sig = db
            .sketch_text(text)
            .unwrap()
            .with_keep_value(KeepValue::Int(i as i64));
        db.insert(key, &sig).unwrap();
    }
    db.flush().unwrap();
    drop(db);
    let out = run(&["verify", s(&dir)]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let files = common::golden::snapshot(&dir);
    let seg = dir.join(&common::golden::file_names(&files, "seg-", ".seg")[0]);
    let mut bytes = std::fs::read(&seg).unwrap();
    let section = common::golden::section_start(&bytes, 10).expect("the KEEP section");
    bytes[section + 8 + 8 + 3] ^= 0x40;
    std::fs::write(&seg, bytes).unwrap();
    let out = run(&["verify", s(&dir)]);
    assert_eq!(out.status.code(), Some(3), "{out:?}");
}
