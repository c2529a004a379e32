//! `mhdb dedup --apply`: the output is the input minus the dropped rows. Every format and
//! compression is written by the crates' own writers, loaded with `mhdb add`, applied, and
//! read back with the same crates: lines and records byte for byte, Arrow schemas and
//! metadata equal, rows in order. The dropped rows are the ones `dedup --format drop` names
//! (keep first), or those a greedy pass over `dedup`'s pairs newest first drops (keep last).

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;

use arrow_array::{
    Array, ArrayRef, BooleanArray, Float64Array, Int64Array, RecordBatch, StringArray,
};
use arrow_schema::{DataType, Field, Schema};
use common::cli::{json_lines, ok, run, s};
use common::compress::{gzip, zstd};
use parquet::arrow::ArrowWriter;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;

/// A row: id, text, and a number column that only the output carries along.
type Row = (String, String, i64);

/// `n` rows in near-duplicate families of ten, ids prefixed by `prefix` (unique across
/// files), texts of the letter `mark` in every word (no text of one mark near another's).
fn rows(prefix: &str, mark: char, n: u64) -> Vec<Row> {
    (0..n)
        .map(|i| (format!("{prefix}-{i}"), text(mark, i), i as i64 * 7))
        .collect()
}

/// Sixty words, all but one decided by the family (`i / 10`).
fn text(mark: char, i: u64) -> String {
    let family = i / 10;
    (0..60)
        .map(|w| {
            if w == (i % 10) as usize * 6 {
                format!("edit{mark}{i}")
            } else {
                format!("{mark}{mark}{family}{mark}{w}{mark}")
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// `rows` without the `dropped` ones.
fn kept(rows: &[Row], dropped: &BTreeSet<String>) -> Vec<Row> {
    rows.iter()
        .filter(|r| !dropped.contains(&r.0))
        .cloned()
        .collect()
}

fn jsonl(rows: &[Row]) -> Vec<u8> {
    let mut out = Vec::new();
    for (id, text, n) in rows {
        // Not serde_json's own spacing, so that a rewrite would show.
        writeln!(
            out,
            "{{\"id\": {:?}, \"text\": {:?},  \"n\": {n}}}",
            id, text
        )
        .unwrap();
    }
    out
}

fn delimited(rows: &[Row], sep: char) -> Vec<u8> {
    let mut out = format!("id{sep}text{sep}n\r\n");
    for (id, text, n) in rows {
        out.push_str(&format!("{id}{sep}\"{text}\"{sep}{n}\r\n"));
    }
    out.into_bytes()
}

/// Decompressed by magic bytes.
fn plain(bytes: Vec<u8>) -> Vec<u8> {
    let mut out = Vec::new();
    if bytes.starts_with(b"\x1f\x8b") {
        flate2::read::MultiGzDecoder::new(&bytes[..])
            .read_to_end(&mut out)
            .unwrap();
    } else if bytes.starts_with(b"\x28\xb5\x2f\xfd") {
        out = zstd::decode_all(&bytes[..]).unwrap();
    } else {
        out = bytes;
    }
    out
}

fn schema() -> Arc<Schema> {
    let meta = [("origin".to_string(), "dedup-apply test".to_string())];
    Arc::new(Schema::new_with_metadata(
        vec![
            Field::new("id", DataType::Utf8, false),
            Field::new("text", DataType::Utf8, true),
            Field::new("n", DataType::Int64, false),
        ],
        meta.into_iter()
            .collect::<std::collections::HashMap<String, String>>(),
    ))
}

fn batch(rows: &[Row]) -> RecordBatch {
    let ids: StringArray = rows.iter().map(|r| Some(r.0.as_str())).collect();
    let texts: StringArray = rows.iter().map(|r| Some(r.1.as_str())).collect();
    let ns: Int64Array = rows.iter().map(|r| Some(r.2)).collect();
    let columns: Vec<ArrayRef> = vec![Arc::new(ids), Arc::new(texts), Arc::new(ns)];
    RecordBatch::try_new(schema(), columns).unwrap()
}

/// Parquet in row groups of 25 rows, with a key-value entry of its own.
fn write_parquet(path: &Path, rows: &[Row], compression: Compression) {
    let props = WriterProperties::builder()
        .set_compression(compression)
        .set_max_row_group_row_count(Some(25))
        .set_key_value_metadata(Some(vec![KeyValue::new(
            "made_by".into(),
            "test".to_string(),
        )]))
        .build();
    let file = std::fs::File::create(path).unwrap();
    let mut w = ArrowWriter::try_new(file, schema(), Some(props)).unwrap();
    w.write(&batch(rows)).unwrap();
    w.close().unwrap();
}

/// An Arrow IPC file (with footer metadata) or stream, in batches of 30 rows.
fn write_ipc(path: &Path, rows: &[Row], stream: bool) {
    let file = std::fs::File::create(path).unwrap();
    let b = batch(rows);
    let slices: Vec<RecordBatch> = (0..b.num_rows())
        .step_by(30)
        .map(|at| b.slice(at, 30.min(b.num_rows() - at)))
        .collect();
    if stream {
        let mut w = arrow_ipc::writer::StreamWriter::try_new(file, &schema()).unwrap();
        slices.iter().for_each(|s| w.write(s).unwrap());
        w.finish().unwrap();
    } else {
        let mut w = arrow_ipc::writer::FileWriter::try_new(file, &schema()).unwrap();
        w.write_metadata("footer", "kept");
        slices.iter().for_each(|s| w.write(s).unwrap());
        w.finish().unwrap();
    }
}

/// Every format and compression, one file each, below `data/` (some in a subdirectory).
const FILES: [&str; 11] = [
    "a.jsonl",
    "b.jsonl.gz",
    "c.jsonl.zst",
    "d.csv",
    "e.tsv",
    "sub/f.csv.gz",
    "sub/g.parquet",
    "sub/h.zstd.parquet",
    "i.arrow",
    "j.arrows",
    "k.tsv.zst",
];

fn write_inputs(data: &Path) -> BTreeMap<&'static str, Vec<Row>> {
    std::fs::create_dir_all(data.join("sub")).unwrap();
    let mut all = BTreeMap::new();
    for (number, name) in FILES.into_iter().enumerate() {
        let mark = char::from(b'a' + number as u8);
        let r = rows(&name.replace(['/', '.'], "_"), mark, 60);
        let path = data.join(name);
        match name {
            "a.jsonl" => std::fs::write(&path, jsonl(&r)).unwrap(),
            "b.jsonl.gz" => std::fs::write(&path, gzip(&jsonl(&r))).unwrap(),
            "c.jsonl.zst" => std::fs::write(&path, zstd(&jsonl(&r))).unwrap(),
            "d.csv" => std::fs::write(&path, delimited(&r, ',')).unwrap(),
            "e.tsv" => std::fs::write(&path, delimited(&r, '\t')).unwrap(),
            "sub/f.csv.gz" => std::fs::write(&path, gzip(&delimited(&r, ','))).unwrap(),
            "k.tsv.zst" => std::fs::write(&path, zstd(&delimited(&r, '\t'))).unwrap(),
            "sub/g.parquet" => write_parquet(&path, &r, Compression::SNAPPY),
            "sub/h.zstd.parquet" => {
                write_parquet(&path, &r, Compression::ZSTD(ZstdLevel::try_new(3).unwrap()))
            }
            "i.arrow" => write_ipc(&path, &r, false),
            _ => write_ipc(&path, &r, true),
        }
        all.insert(name, r);
    }
    all
}

/// A database at 0.7 loaded by `mhdb add` from `inputs`.
fn database(dir: &Path, inputs: &[&Path]) -> PathBuf {
    let db = dir.join("idx");
    ok(&["create", s(&db), "--threshold", "0.7"]);
    let mut args = vec!["add", s(&db)];
    args.extend(inputs.iter().map(|p| s(p)));
    ok(&args);
    db
}

/// The keys `dedup --format drop` names.
fn drop_set(db: &Path) -> BTreeSet<String> {
    ok(&["dedup", s(db), "--format", "drop"])
        .lines()
        .map(String::from)
        .collect()
}

/// Each dropped key's cluster center, from `dedup --format clusters`.
fn centers(db: &Path) -> BTreeMap<String, String> {
    let out = ok(&["dedup", s(db), "--format", "clusters"]);
    let mut map = BTreeMap::new();
    for c in json_lines(out.as_bytes()) {
        let keep = c["keep"].as_str().unwrap().to_string();
        for d in c["duplicates"].as_array().unwrap() {
            map.insert(d.as_str().unwrap().to_string(), keep.clone());
        }
    }
    map
}

fn apply(db: &Path, inputs: &[&Path], out: &Path, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["dedup", s(db), "--apply"];
    args.extend(inputs.iter().map(|p| s(p)));
    args.extend(["--out", s(out)]);
    args.extend(extra);
    run(&args)
}

fn succeeded(out: std::process::Output) -> String {
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success(), "dedup --apply failed: {err}");
    err
}

/// The rows of a Parquet or Arrow output as (id, n), with the schema read.
fn arrow_rows(path: &Path) -> (Arc<Schema>, Vec<RecordBatch>) {
    let file = std::fs::File::open(path).unwrap();
    let name = path.to_string_lossy();
    if name.ends_with(".parquet") {
        let b = ParquetRecordBatchReaderBuilder::try_new(file).unwrap();
        let schema = b.schema().clone();
        (schema, b.build().unwrap().map(Result::unwrap).collect())
    } else if name.ends_with(".arrows") {
        let r = arrow_ipc::reader::StreamReader::try_new(file, None).unwrap();
        (r.schema(), r.map(Result::unwrap).collect())
    } else {
        let r = arrow_ipc::reader::FileReader::try_new(file, None).unwrap();
        (r.schema(), r.map(Result::unwrap).collect())
    }
}

fn column<'b, T: 'static>(b: &'b RecordBatch, name: &str) -> &'b T {
    b.column_by_name(name)
        .unwrap()
        .as_any()
        .downcast_ref::<T>()
        .unwrap()
}

/// The (id, n) of every row of the Arrow batches.
fn ids_and_numbers(batches: &[RecordBatch]) -> Vec<(String, i64)> {
    let mut out = Vec::new();
    for b in batches {
        let ids = column::<StringArray>(b, "id");
        let ns = column::<Int64Array>(b, "n");
        for i in 0..b.num_rows() {
            out.push((ids.value(i).to_string(), ns.value(i)));
        }
    }
    out
}

fn is_arrow(name: &str) -> bool {
    name.ends_with(".parquet") || name.ends_with(".arrow") || name.ends_with(".arrows")
}

/// The input file `name` re-made from `rows`, decompressed (line formats).
fn line_file(name: &str, rows: &[Row]) -> Vec<u8> {
    if name.contains(".jsonl") {
        jsonl(rows)
    } else if name.contains(".csv") {
        delimited(rows, ',')
    } else {
        delimited(rows, '\t')
    }
}

#[test]
fn every_format_and_compression_is_written_back_minus_the_dropped_rows() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let inputs = write_inputs(&data);
    let db = database(dir.path(), &[&data]);
    let dropped = drop_set(&db);
    assert!(
        dropped.len() > 100,
        "the families must drop rows: {}",
        dropped.len()
    );
    let out = dir.path().join("out");
    let err = succeeded(apply(&db, &[&data], &out, &[]));
    let total: usize = inputs.values().map(Vec::len).sum();
    assert!(
        err.contains(&format!(
            "{} files, {total} rows in: {} kept, {} dropped, 0 not in the index",
            FILES.len(),
            total - dropped.len(),
            dropped.len()
        )),
        "{err}"
    );
    for (name, rows) in &inputs {
        let kept = kept(rows, &dropped);
        assert!(
            !kept.is_empty() && kept.len() < rows.len(),
            "{name}: {} kept",
            kept.len()
        );
        let written = out.join(name);
        let input_head = std::fs::read(data.join(name)).unwrap()[..4].to_vec();
        let output = std::fs::read(&written).unwrap();
        if !is_arrow(name) {
            // Same compression (its magic bytes), and the kept lines' bytes unchanged.
            assert_eq!(output[..2], input_head[..2], "{name}: compression");
            assert_eq!(plain(output), line_file(name, &kept), "{name}");
            continue;
        }
        let (schema, batches) = arrow_rows(&written);
        assert_eq!(schema, schema_read_back(&data.join(name)), "{name}: schema");
        let want: Vec<(String, i64)> = kept.iter().map(|r| (r.0.clone(), r.2)).collect();
        assert_eq!(ids_and_numbers(&batches), want, "{name}: rows");
        check_file_metadata(name, &data.join(name), &written);
    }
}

/// The schema of an input as its reader reads it.
fn schema_read_back(path: &Path) -> Arc<Schema> {
    arrow_rows(path).0
}

/// Parquet: the key-value entry and codec kept; Arrow file: the footer's metadata kept.
fn check_file_metadata(name: &str, input: &Path, output: &Path) {
    if name.ends_with(".parquet") {
        let meta = |p: &Path| {
            ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(p).unwrap())
                .unwrap()
                .metadata()
                .clone()
        };
        let (i, o) = (meta(input), meta(output));
        let kv = |m: &parquet::file::metadata::ParquetMetaData| {
            let mut kv: Vec<(String, Option<String>)> = m
                .file_metadata()
                .key_value_metadata()
                .unwrap()
                .iter()
                .filter(|e| e.key != "ARROW:schema")
                .map(|e| (e.key.clone(), e.value.clone()))
                .collect();
            kv.sort();
            kv
        };
        assert_eq!(kv(&o), kv(&i), "{name}: key-value metadata");
        let codec =
            |m: &parquet::file::metadata::ParquetMetaData| m.row_group(0).column(0).compression();
        assert_eq!(codec(&o), codec(&i), "{name}: codec");
        assert_eq!(
            o.num_row_groups(),
            i.num_row_groups(),
            "{name}: a row group per row group"
        );
    } else if name.ends_with(".arrow") {
        let footer = |p: &Path| {
            arrow_ipc::reader::FileReader::try_new(std::fs::File::open(p).unwrap(), None)
                .unwrap()
                .custom_metadata()
                .clone()
        };
        assert_eq!(footer(output), footer(input), "{name}: footer metadata");
    }
}

#[test]
fn annotate_keeps_every_row_and_adds_the_decision_in_each_format() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let inputs = write_inputs(&data);
    let db = database(dir.path(), &[&data]);
    let (dropped, centers) = (drop_set(&db), centers(&db));
    let out = dir.path().join("out");
    succeeded(apply(&db, &[&data], &out, &["--annotate"]));
    for (name, rows) in &inputs {
        let written = out.join(name);
        // Per row: (id, keep, cluster, best_match, similarity).
        let got: Vec<Annotated> = if is_arrow(name) {
            let (schema, batches) = arrow_rows(&written);
            let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
            assert_eq!(names, ANNOTATED_COLUMNS);
            assert_eq!(
                schema.metadata(),
                schema_read_back(&data.join(name)).metadata()
            );
            batches.iter().flat_map(annotated_rows).collect()
        } else if name.contains(".jsonl") {
            let lines = plain(std::fs::read(&written).unwrap());
            json_lines(&lines)
                .iter()
                .map(|v| {
                    let key = |f: &str| v[f].as_str().map(String::from);
                    (
                        key("id").unwrap(),
                        v["keep"].as_bool().unwrap(),
                        key("cluster"),
                        key("best_match"),
                        v["similarity"].as_f64(),
                    )
                })
                .collect()
        } else {
            csv_annotated(name, &plain(std::fs::read(&written).unwrap()))
        };
        assert_eq!(got.len(), rows.len(), "{name}: every row");
        for ((id, keep, cluster, best, similarity), row) in got.iter().zip(rows) {
            assert_eq!(id, &row.0, "{name}: order");
            assert_eq!(*keep, !dropped.contains(id), "{name}: {id}");
            if *keep {
                assert_eq!(cluster.as_deref(), Some(id.as_str()), "{name}: {id}");
                assert_eq!((best, similarity), (&None, &None), "{name}: {id}");
            } else {
                assert_eq!(cluster, &centers.get(id).cloned(), "{name}: {id}");
                assert!(
                    best.as_ref().is_some_and(|b| !dropped.contains(b)),
                    "{name}: {id}"
                );
                assert!(
                    similarity.is_some_and(|s| (0.7..=1.0).contains(&s)),
                    "{name}: {id}"
                );
            }
        }
    }
}

/// The columns of an annotated output.
const ANNOTATED_COLUMNS: [&str; 7] = [
    "id",
    "text",
    "n",
    "cluster",
    "keep",
    "best_match",
    "similarity",
];

/// A row annotated: (id, keep, cluster, best_match, similarity).
type Annotated = (String, bool, Option<String>, Option<String>, Option<f64>);

fn annotated_rows(b: &RecordBatch) -> Vec<Annotated> {
    let ids = column::<StringArray>(b, "id");
    let keep = column::<BooleanArray>(b, "keep");
    let cluster = column::<StringArray>(b, "cluster");
    let best = column::<StringArray>(b, "best_match");
    let sim = column::<Float64Array>(b, "similarity");
    let text = |a: &StringArray, i| (!a.is_null(i)).then(|| a.value(i).to_string());
    (0..b.num_rows())
        .map(|i| {
            (
                ids.value(i).to_string(),
                keep.value(i),
                text(cluster, i),
                text(best, i),
                (!sim.is_null(i)).then(|| sim.value(i)),
            )
        })
        .collect()
}

/// The annotated CSV/TSV rows (the header checked), read with the csv crate.
fn csv_annotated(name: &str, bytes: &[u8]) -> Vec<Annotated> {
    let sep = if name.contains(".csv") { b',' } else { b'\t' };
    let mut r = csv::ReaderBuilder::new().delimiter(sep).from_reader(bytes);
    let header: Vec<String> = r.headers().unwrap().iter().map(String::from).collect();
    assert_eq!(header, ANNOTATED_COLUMNS);
    let opt = |s: &str| (!s.is_empty()).then(|| s.to_string());
    r.records()
        .map(|rec| {
            let rec = rec.unwrap();
            (
                rec[0].to_string(),
                &rec[4] == "true",
                opt(&rec[3]),
                opt(&rec[5]),
                opt(&rec[6]).map(|s| s.parse().unwrap()),
            )
        })
        .collect()
}

#[test]
fn a_taken_column_name_is_refused_naming_file_and_column_unless_prefixed() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("taken.jsonl");
    let mut lines = Vec::new();
    for (id, text, _) in rows("t", 't', 20) {
        writeln!(
            lines,
            "{}",
            serde_json::json!({"id": id, "text": text, "keep": "mine"})
        )
        .unwrap();
    }
    std::fs::write(&data, &lines).unwrap();
    let pq = dir.path().join("taken.parquet");
    let b = batch(&rows("p", 'p', 20));
    let cluster: ArrayRef = Arc::new(Int64Array::from(vec![1i64; 20]));
    let b = RecordBatch::try_from_iter(
        b.columns()
            .iter()
            .cloned()
            .zip(["id", "text", "n"])
            .map(|(c, n)| (n, c))
            .chain([("cluster", cluster)]),
    )
    .unwrap();
    let mut w =
        ArrowWriter::try_new(std::fs::File::create(&pq).unwrap(), b.schema(), None).unwrap();
    w.write(&b).unwrap();
    w.close().unwrap();
    let db = database(dir.path(), &[&data, &pq]);
    for (input, column) in [(&data, "keep"), (&pq, "cluster")] {
        let out = dir.path().join(format!("out-{column}"));
        let o = apply(&db, &[input], &out, &["--annotate"]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(
            err.contains(s(input)) && err.contains(&format!("column \"{column}\" is taken")),
            "{err}"
        );
        succeeded(apply(
            &db,
            &[input],
            &out,
            &["--annotate", "--annotate-prefix", "dedup_", "--overwrite"],
        ));
    }
    let annotated = std::fs::read(dir.path().join("out-keep/taken.jsonl")).unwrap();
    let first = &json_lines(&annotated)[0];
    assert_eq!(first["keep"], "mine");
    assert_eq!(first["dedup_keep"], true);
    let (schema, _) = arrow_rows(&dir.path().join("out-cluster/taken.parquet"));
    assert!(schema.field_with_name("dedup_cluster").is_ok());
}

/// The rows a greedy pass newest first drops: a row is dropped when a newer kept row is one
/// of its `dedup` pairs (insert order is the input's order here).
fn newest_first_drops(db: &Path, order: &[String]) -> BTreeSet<String> {
    let rank: BTreeMap<&str, usize> = order
        .iter()
        .enumerate()
        .map(|(i, k)| (k.as_str(), i))
        .collect();
    let mut newer: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for p in json_lines(ok(&["dedup", s(db)]).as_bytes()) {
        let (a, b) = (p["a"].as_str().unwrap(), p["b"].as_str().unwrap());
        let (old, new) = if rank[a] < rank[b] { (a, b) } else { (b, a) };
        newer
            .entry(old.to_string())
            .or_default()
            .push(new.to_string());
    }
    let mut dropped = BTreeSet::new();
    for key in order.iter().rev() {
        let by_kept = newer
            .get(key)
            .is_some_and(|n| n.iter().any(|k| !dropped.contains(k)));
        if by_kept {
            dropped.insert(key.clone());
        }
    }
    dropped
}

#[test]
fn keep_last_keeps_the_newest_of_each_group() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data.jsonl");
    let r = rows("doc", 'd', 80);
    std::fs::write(&data, jsonl(&r)).unwrap();
    let db = database(dir.path(), &[&data]);
    let order: Vec<String> = r.iter().map(|r| r.0.clone()).collect();
    let dropped = newest_first_drops(&db, &order);
    assert!(
        dropped.len() > 40 && !dropped.contains("doc-79"),
        "{dropped:?}"
    );
    assert_ne!(dropped, drop_set(&db));
    let out = dir.path().join("out");
    succeeded(apply(&db, &[&data], &out, &["--keep", "last"]));
    let kept = kept(&r, &dropped);
    assert_eq!(std::fs::read(out.join("data.jsonl")).unwrap(), jsonl(&kept));
}

#[test]
fn rows_not_in_the_index_are_kept_and_counted() {
    let dir = tempfile::tempdir().unwrap();
    let (loaded, all) = (
        dir.path().join("loaded.jsonl"),
        dir.path().join("in/all.jsonl"),
    );
    let r = rows("doc", 'd', 50);
    std::fs::write(&loaded, jsonl(&r[..30])).unwrap();
    std::fs::create_dir_all(all.parent().unwrap()).unwrap();
    std::fs::write(&all, jsonl(&r)).unwrap();
    let db = database(dir.path(), &[&loaded]);
    let dropped = drop_set(&db);
    let out = dir.path().join("out");
    let err = succeeded(apply(&db, &[&all], &out, &[]));
    assert!(
        err.contains(&format!("{} dropped, 20 not in the index", dropped.len())),
        "{err}"
    );
    let kept = kept(&r, &dropped);
    assert_eq!(std::fs::read(out.join("all.jsonl")).unwrap(), jsonl(&kept));
}

#[test]
fn an_id_met_twice_is_an_error_naming_both_places_unless_asked() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.jsonl"), dir.path().join("b.jsonl"));
    let r = rows("doc", 'd', 30);
    std::fs::write(&a, jsonl(&r[..20])).unwrap();
    // doc-5 again, on line 3 of b.
    let again: Vec<Row> = [&r[20..22], &r[5..6], &r[22..]].concat();
    std::fs::write(&b, jsonl(&again)).unwrap();
    let db = database(dir.path(), &[&a, &b]);
    let out = dir.path().join("out");
    let o = apply(&db, &[&a, &b], &out, &[]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!("{}:3: id doc-5", s(&b))) && err.contains(&format!("{}:6", s(&a))),
        "{err}"
    );
    assert!(
        !out.join("b.jsonl").exists(),
        "no partial file under the final name"
    );
    let dropped = drop_set(&db);
    let keep_first = succeeded(apply(
        &db,
        &[&a, &b],
        &out,
        &["--on-duplicate", "keep-first", "--overwrite"],
    ));
    assert!(
        keep_first.contains("1 with an id met before"),
        "{keep_first}"
    );
    let b_out = std::fs::read(out.join("b.jsonl")).unwrap();
    let kept_b: Vec<Row> = again
        .iter()
        .filter(|r| !dropped.contains(&r.0) && r.0 != "doc-5")
        .cloned()
        .collect();
    assert_eq!(b_out, jsonl(&kept_b));
    succeeded(apply(
        &db,
        &[&a, &b],
        &out,
        &["--on-duplicate", "keep-all", "--overwrite"],
    ));
    assert_eq!(
        std::fs::read(out.join("b.jsonl")).unwrap(),
        jsonl(&kept(&again, &dropped))
    );
}

#[test]
fn an_output_that_is_holds_or_lies_in_an_input_is_refused_before_writing() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    let file = data.join("a.jsonl");
    std::fs::write(&file, jsonl(&rows("doc", 'd', 20))).unwrap();
    let db = database(dir.path(), &[&file]);
    for out in [data.join("deduped"), data.clone(), dir.path().to_path_buf()] {
        let o = apply(&db, &[&data], &out, &[]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains("is, holds or lies in the input"), "{err}");
    }
    assert!(!data.join("deduped").exists());
    assert_eq!(std::fs::read(&file).unwrap(), jsonl(&rows("doc", 'd', 20)));
    // An output file that exists is refused too, unless replaced on purpose.
    let out = dir.path().join("out");
    succeeded(apply(&db, &[&data], &out, &[]));
    let o = apply(&db, &[&data], &out, &[]);
    assert_eq!(o.status.code(), Some(2));
    succeeded(apply(&db, &[&data], &out, &["--overwrite"]));
}

/// Killed at moments spread over its run, `--apply` leaves under each final name either
/// nothing or the whole file; the rerun writes the same bytes as an uninterrupted run.
#[test]
fn a_kill_leaves_no_partial_file_under_a_final_name_and_a_rerun_gives_the_same_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    for f in 0..6u64 {
        std::fs::write(
            data.join(format!("part-{f}.jsonl.zst")),
            zstd(&jsonl(&rows(
                &format!("p{f}"),
                char::from(b'a' + f as u8),
                4000,
            ))),
        )
        .unwrap();
    }
    let db = database(dir.path(), &[&data]);
    let reference = dir.path().join("reference");
    let started = std::time::Instant::now();
    succeeded(apply(&db, &[&data], &reference, &[]));
    // Kills spread over the run as long as an uninterrupted one takes.
    let run_ms = started.elapsed().as_millis() as u64;
    let expected: BTreeMap<PathBuf, Vec<u8>> = files_below(&reference);
    assert_eq!(expected.len(), 6);
    let out = dir.path().join("out");
    for delay_ms in [run_ms / 5, run_ms * 2 / 5, run_ms * 3 / 5, run_ms * 4 / 5] {
        let line = [
            "dedup",
            s(&db),
            "--apply",
            s(&data),
            "--out",
            s(&out),
            "--overwrite",
        ];
        kill_after(common::cli::mhdb(&line), delay_ms, &out, &expected);
    }
    succeeded(apply(&db, &[&data], &out, &["--overwrite"]));
    assert_eq!(files_below(&out), expected);

    // `dedup-files` writes through the same atomic path: killed while it indexes or writes,
    // it leaves under the final names only whole files (their bytes as an uninterrupted run
    // writes them), and a rerun writes them all.
    let out = dir.path().join("out-files");
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let line = [
        "dedup-files",
        s(&data),
        "--out",
        s(&out),
        "--threshold",
        "0.7",
        "--overwrite",
    ];
    for delay_ms in [run_ms / 2, run_ms, run_ms * 3 / 2, run_ms * 2] {
        let mut cmd = common::cli::mhdb(&line);
        cmd.env("TMPDIR", &tmp);
        kill_after(cmd, delay_ms, &out, &expected);
    }
    ok(&line);
    let written: BTreeMap<PathBuf, Vec<u8>> = files_below(&out)
        .into_iter()
        .filter(|(p, _)| !p.to_string_lossy().starts_with('.'))
        .collect();
    assert_eq!(written, expected);
}

/// Runs `cmd`, kills it after `delay_ms`, and checks that every file under a final name in
/// `out` (temporary files start with '.') holds what an uninterrupted run writes.
fn kill_after(mut cmd: Command, delay_ms: u64, out: &Path, expected: &BTreeMap<PathBuf, Vec<u8>>) {
    let mut child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(delay_ms));
    let _ = child.kill();
    child.wait().unwrap();
    for (path, bytes) in files_below(out) {
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if !name.starts_with('.') {
            let what = format!("{name} after a kill at {delay_ms} ms of {cmd:?}");
            assert_eq!(Some(&bytes), expected.get(&path), "{what}");
        }
    }
}

/// Every file below `dir`, by its path relative to `dir`, with its bytes.
fn files_below(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries {
        let p = e.unwrap().path();
        out.insert(
            p.strip_prefix(dir).unwrap().to_path_buf(),
            std::fs::read(&p).unwrap(),
        );
    }
    out
}

/// Every file below `dir`, at any depth, by its path relative to `dir`, with its bytes.
fn tree(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                todo.push(p);
            } else {
                let bytes = std::fs::read(&p).unwrap();
                out.insert(p.strip_prefix(dir).unwrap().to_path_buf(), bytes);
            }
        }
    }
    out
}

/// `mhdb dedup-files` writes, byte for byte, what `create`, `add` and `dedup --apply` write on
/// the same inputs (every format and compression), also with --annotate and with --keep last;
/// its temporary index is gone when it ends, and an index asked for with --index is kept and
/// answers as the one built by hand.
#[test]
fn dedup_files_writes_what_create_add_and_apply_write() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let inputs = write_inputs(&data);
    let rows: usize = inputs.values().map(Vec::len).sum();
    let db = database(dir.path(), &[&data]);
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let variants: [&[&str]; 3] = [&[], &["--annotate"], &["--keep", "last"]];
    for (i, extra) in variants.into_iter().enumerate() {
        let reference = dir.path().join(format!("reference-{i}"));
        succeeded(apply(&db, &[&data], &reference, extra));
        let out = dir.path().join(format!("out-{i}"));
        let mut args = vec!["dedup-files", s(&data), "--out", s(&out)];
        args.extend(["--threshold", "0.7", "--json"]);
        args.extend(extra);
        let done = common::cli::mhdb(&args)
            .env("TMPDIR", &tmp)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&done.stderr);
        assert!(done.status.success(), "{extra:?}: {err}");
        let summary: serde_json::Value = serde_json::from_slice(&done.stdout).unwrap();
        assert_eq!(summary["documents"], rows, "{summary}");
        assert_eq!(summary["rows"], rows, "{summary}");
        assert_eq!(summary["files"], FILES.len(), "{summary}");
        assert_eq!(tree(&out), tree(&reference), "{extra:?}");
        let left: Vec<_> = std::fs::read_dir(&tmp).unwrap().collect();
        assert!(
            left.is_empty(),
            "{extra:?}: the temporary index was left: {left:?}"
        );
    }
    let kept = dir.path().join("kept");
    let out = dir.path().join("out-kept");
    ok(&[
        "dedup-files",
        s(&data),
        "--out",
        s(&out),
        "--threshold",
        "0.7",
        "--index",
        s(&kept),
    ]);
    assert_eq!(drop_set(&kept), drop_set(&db));
    assert_eq!(tree(&out), tree(&dir.path().join("reference-0")));
    // Refused before anything is built: the output exists.
    let again = run(&[
        "dedup-files",
        s(&data),
        "--out",
        s(&out),
        "--index",
        s(&dir.path().join("other")),
    ]);
    assert_eq!(
        again.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
    assert!(
        !dir.path().join("other").exists(),
        "an index was built for a refused run"
    );
}
