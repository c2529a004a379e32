//! Data where users keep it (`mhdb::input`, `mhdb add`): every format and compression reads
//! back the rows written, in order; directories and globs in sorted order; nested fields; ids
//! from paths; id column types; and every bad input stopping or refused with an error that
//! names the file and the row group, row, line or byte offset, with nothing committed lost.
//! The inputs are written here with the writers of the same crates (Parquet, Arrow IPC,
//! gzip, zstd).

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::types::Int32Type;
use arrow_array::{
    ArrayRef, BinaryArray, DictionaryArray, Float64Array, Int64Array, LargeStringArray,
    RecordBatch, StringArray, StructArray, UInt8Array,
};
use arrow_schema::{DataType, Field};
use common::cli::{run, run_with_stdin, success};
use common::compress::{gzip, zstd};
use mhdb::db::ingest::Source;
use mhdb::input::{Fields, Id, Reader};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, GzipLevel, ZstdLevel};
use parquet::file::properties::WriterProperties;

/// A row as read back: its key and text, or why it was refused.
type Row = Result<(Vec<u8>, String), String>;

/// The rows of the test data: ids and texts with quotes, commas, tabs, newlines and
/// non-ASCII letters, so that every writer's quoting and encoding is exercised.
fn rows(n: usize) -> Vec<(String, String)> {
    (0..n)
        .map(|i| {
            let text = match i % 4 {
                0 => format!("plain text number {i} with some words"),
                1 => format!("quoted \"{i}\", with a comma, and a tab\there"),
                2 => format!("two\nlines {i} and ünïcödé 日本語"),
                _ => format!("{i}"),
            };
            (format!("doc-{i}"), text)
        })
        .collect()
}

fn expected(rows: &[(String, String)]) -> Vec<Row> {
    rows.iter()
        .map(|(id, text)| Ok((id.as_bytes().to_vec(), text.clone())))
        .collect()
}

fn fields(id: &str, text: &str) -> Fields {
    Fields {
        id: Id::Field(id.to_string()),
        text: text.to_string(),
        tokens: false,
        keep: None,
    }
}

/// Every record of `inputs` as the library reads it, in order, then the error that stopped
/// the reading, if any.
fn read(inputs: &[&Path], fields: &Fields) -> (Vec<Row>, Option<String>) {
    let inputs: Vec<PathBuf> = inputs.iter().map(|p| p.to_path_buf()).collect();
    let mut reader = match Reader::new(&inputs, fields.clone()) {
        Ok(r) => r,
        Err(e) => return (Vec::new(), Some(e.to_string())),
    };
    let mut out = Vec::new();
    loop {
        match reader.next_chunk(1000) {
            Ok(chunk) if chunk.is_empty() => return (out, None),
            Ok(chunk) => out.extend(chunk.into_iter().map(|item| {
                fields
                    .parse(item)
                    .map(|r| match r.content {
                        mhdb::db::ingest::Content::Text(t) => (r.key, t),
                        other => unreachable!("a text field read {other:?}"),
                    })
                    .map_err(|r| r.fault.to_string())
            })),
            Err(e) => return (out, Some(e.to_string())),
        }
    }
}

/// Reads `inputs` whole, failing on any error or refused record.
fn read_ok(inputs: &[&Path], fields: &Fields) -> Vec<Row> {
    let (rows, error) = read(inputs, fields);
    assert_eq!(error, None);
    rows
}

fn jsonl(rows: &[(String, String)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (id, text) in rows {
        writeln!(out, "{}", serde_json::json!({"id": id, "text": text})).unwrap();
    }
    out
}

/// RFC 4180: every field quoted, quotes doubled.
fn delimited(rows: &[(String, String)], sep: char) -> Vec<u8> {
    let quote = |s: &str| format!("\"{}\"", s.replace('"', "\"\""));
    let mut out = format!("id{sep}text\n");
    for (id, text) in rows {
        out.push_str(&format!("{}{sep}{}\n", quote(id), quote(text)));
    }
    out.into_bytes()
}

fn batch(columns: Vec<(&str, ArrayRef)>) -> RecordBatch {
    RecordBatch::try_from_iter(columns).unwrap()
}

fn id_text_batch(rows: &[(String, String)]) -> RecordBatch {
    let ids: StringArray = rows.iter().map(|r| Some(r.0.as_str())).collect();
    let texts: StringArray = rows.iter().map(|r| Some(r.1.as_str())).collect();
    batch(vec![("id", Arc::new(ids)), ("text", Arc::new(texts))])
}

/// Writes `batch` as Parquet in row groups of `group_rows`.
fn parquet(path: &Path, batch: &RecordBatch, compression: Compression, group_rows: usize) {
    let props = WriterProperties::builder()
        .set_compression(compression)
        .set_max_row_group_row_count(Some(group_rows))
        .build();
    let file = std::fs::File::create(path).unwrap();
    let mut w = ArrowWriter::try_new(file, batch.schema(), Some(props)).unwrap();
    w.write(batch).unwrap();
    w.close().unwrap();
}

/// Writes `batch` as an Arrow IPC file or stream, in batches of `per` rows.
fn arrow_ipc(path: &Path, batch: &RecordBatch, stream: bool, per: usize) {
    let file = std::fs::File::create(path).unwrap();
    let slices = (0..batch.num_rows())
        .step_by(per)
        .map(|at| batch.slice(at, per.min(batch.num_rows() - at)));
    if stream {
        let mut w = arrow_ipc::writer::StreamWriter::try_new(file, &batch.schema()).unwrap();
        slices.for_each(|b| w.write(&b).unwrap());
        w.finish().unwrap();
    } else {
        let mut w = arrow_ipc::writer::FileWriter::try_new(file, &batch.schema()).unwrap();
        slices.for_each(|b| w.write(&b).unwrap());
        w.finish().unwrap();
    }
}

#[test]
fn every_format_and_compression_reads_back_its_rows() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let data = rows(10_000);
    let want = expected(&data);
    let lines = jsonl(&data);
    let table = id_text_batch(&data);
    let mut files: Vec<(&str, Vec<u8>)> = vec![
        ("plain.jsonl", lines.clone()),
        ("any-name", lines.clone()),
        ("a.jsonl.gz", gzip(&lines)),
        ("a.jsonl.zst", zstd(&lines)),
        // Compression is recognized by its magic bytes, whatever the name.
        ("gzip-named-plain.jsonl", gzip(&lines)),
        ("a.csv", delimited(&data, ',')),
        ("a.tsv", delimited(&data, '\t')),
        ("a.csv.gz", gzip(&delimited(&data, ','))),
        ("a.tsv.zst", zstd(&delimited(&data, '\t'))),
    ];
    // A multi-member gzip file (pigz, bgzip, `cat a.gz b.gz`) is read whole.
    let half = lines.len() / 2
        + lines[lines.len() / 2..]
            .iter()
            .position(|&b| b == b'\n')
            .unwrap()
        + 1;
    let mut members = gzip(&lines[..half]);
    members.extend(gzip(&lines[half..]));
    files.push(("members.jsonl.gz", members));
    for (name, bytes) in &files {
        std::fs::write(d.join(name), bytes).unwrap();
        assert!(
            read_ok(&[&d.join(name)], &fields("id", "text")) == want,
            "{name}"
        );
    }
    let codecs = [
        ("none", Compression::UNCOMPRESSED),
        ("snappy", Compression::SNAPPY),
        ("gzip", Compression::GZIP(GzipLevel::default())),
        ("zstd", Compression::ZSTD(ZstdLevel::default())),
        ("lz4", Compression::LZ4_RAW),
    ];
    for (name, codec) in codecs {
        let path = d.join(format!("{name}.parquet"));
        parquet(&path, &table, codec, 3000);
        assert!(read_ok(&[&path], &fields("id", "text")) == want, "{name}");
    }
    for stream in [false, true] {
        let path = d.join(if stream { "t.arrows" } else { "t.arrow" });
        arrow_ipc(&path, &table, stream, 4000);
        assert!(read_ok(&[&path], &fields("id", "text")) == want, "{path:?}");
    }
}

#[test]
fn directories_and_globs_are_read_in_sorted_order() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("data");
    let part = |i: usize| vec![(format!("k{i}"), format!("text of part {i}"))];
    std::fs::create_dir_all(root.join("b/c")).unwrap();
    std::fs::create_dir_all(root.join("a")).unwrap();
    std::fs::write(root.join("z.jsonl"), jsonl(&part(5))).unwrap();
    parquet(
        &root.join("b/c/y.parquet"),
        &id_text_batch(&part(4)),
        Compression::SNAPPY,
        10,
    );
    std::fs::write(root.join("b/x.jsonl.gz"), gzip(&jsonl(&part(3)))).unwrap();
    std::fs::write(root.join("a/2.jsonl"), jsonl(&part(2))).unwrap();
    std::fs::write(root.join("a/10.jsonl"), jsonl(&part(1))).unwrap();
    // What Spark and Hadoop leave beside their data is passed over in directories.
    std::fs::write(root.join("_SUCCESS"), b"").unwrap();
    std::fs::write(root.join("b/.x.jsonl.gz.crc"), b"\x00\x01").unwrap();
    let keys = |rows: Vec<Row>| -> Vec<String> {
        rows.into_iter()
            .map(|r| String::from_utf8(r.unwrap().0).unwrap())
            .collect()
    };
    let f = fields("id", "text");
    assert_eq!(keys(read_ok(&[&root], &f)), ["k1", "k2", "k4", "k3", "k5"]);
    // Inputs in the order given, each expanded in order.
    let pattern = root.join("**").join("*.jsonl");
    assert_eq!(
        keys(read_ok(&[&root.join("z.jsonl"), &pattern], &f)),
        ["k5", "k1", "k2", "k5"]
    );
    let pattern = root.join("*").join("*.j*");
    let (_, error) = read(&[&root.join("nothing-*.parquet")], &f);
    assert_eq!(
        error.unwrap(),
        format!(
            "no file matches {}",
            root.join("nothing-*.parquet").display()
        )
    );
    assert_eq!(keys(read_ok(&[&pattern], &f)), ["k1", "k2", "k3"]);
    // Ids from paths are relative to the directory walked, or to a glob's fixed part.
    let by_path = Fields {
        id: Id::FromPath,
        text: "text".into(),
        tokens: false,
        keep: None,
    };
    assert_eq!(
        keys(read_ok(&[&root], &by_path)),
        [
            "a/10.jsonl:1",
            "a/2.jsonl:1",
            "b/c/y.parquet:0",
            "b/x.jsonl.gz:1",
            "z.jsonl:1"
        ]
    );
    assert_eq!(
        keys(read_ok(&[&pattern], &by_path)),
        ["a/10.jsonl:1", "a/2.jsonl:1", "b/x.jsonl.gz:1"]
    );
    assert_eq!(
        keys(read_ok(&[&root.join("a/2.jsonl")], &by_path)),
        ["2.jsonl:1"]
    );
}

#[test]
fn ids_from_paths_number_lines_from_1_and_rows_from_0() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let data = rows(5);
    let by_path = Fields {
        id: Id::FromPath,
        text: "text".into(),
        tokens: false,
        keep: None,
    };
    // A blank line is counted: the id is the line an editor shows.
    let mut lines = b"\n".to_vec();
    lines.extend(jsonl(&data));
    std::fs::write(d.join("a.jsonl"), &lines).unwrap();
    parquet(
        &d.join("a.parquet"),
        &id_text_batch(&data),
        Compression::SNAPPY,
        2,
    );
    arrow_ipc(&d.join("a.arrow"), &id_text_batch(&data), false, 2);
    std::fs::write(d.join("a.csv"), delimited(&data, ',')).unwrap();
    let ids = |name: &str| -> Vec<String> {
        read_ok(&[&d.join(name)], &by_path)
            .into_iter()
            .map(|r| String::from_utf8(r.unwrap().0).unwrap())
            .collect()
    };
    assert_eq!(
        ids("a.jsonl"),
        [
            "a.jsonl:2",
            "a.jsonl:3",
            "a.jsonl:4",
            "a.jsonl:5",
            "a.jsonl:6"
        ]
    );
    let rows_from_0: Vec<String> = (0..5).map(|i| format!("a.parquet:{i}")).collect();
    assert_eq!(ids("a.parquet"), rows_from_0);
    assert_eq!(ids("a.arrow")[4], "a.arrow:4");
    // CSV: the header is line 1; a quoted text spanning two lines moves the next record down.
    assert_eq!(
        ids("a.csv"),
        ["a.csv:2", "a.csv:3", "a.csv:4", "a.csv:6", "a.csv:7"]
    );
}

#[test]
fn nested_fields_reach_into_objects_and_struct_columns() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let json = "{\"meta\": {\"url\": \"https://a/1\"}, \"doc\": {\"body\": \"first text\"}}\n\
                {\"meta\": {\"url\": \"https://a/2\"}, \"doc\": {\"body\": \"second text\"}}\n";
    std::fs::write(d.join("n.jsonl"), json).unwrap();
    let urls = StringArray::from(vec!["https://a/1", "https://a/2"]);
    let lang = StringArray::from(vec!["en", "fr"]);
    let meta = StructArray::from(vec![
        (
            Arc::new(Field::new("lang", DataType::Utf8, false)),
            Arc::new(lang) as ArrayRef,
        ),
        (
            Arc::new(Field::new("url", DataType::Utf8, false)),
            Arc::new(urls) as ArrayRef,
        ),
    ]);
    let body = StructArray::from(vec![(
        Arc::new(Field::new("body", DataType::Utf8, false)),
        Arc::new(StringArray::from(vec!["first text", "second text"])) as ArrayRef,
    )]);
    let other = Int64Array::from(vec![1, 2]);
    let table = batch(vec![
        ("other", Arc::new(other)),
        ("meta", Arc::new(meta)),
        ("doc", Arc::new(body)),
    ]);
    parquet(&d.join("n.parquet"), &table, Compression::SNAPPY, 10);
    arrow_ipc(&d.join("n.arrow"), &table, false, 10);
    let want = vec![
        Ok((b"https://a/1".to_vec(), "first text".to_string())),
        Ok((b"https://a/2".to_vec(), "second text".to_string())),
    ];
    for name in ["n.jsonl", "n.parquet", "n.arrow"] {
        assert_eq!(
            read_ok(&[&d.join(name)], &fields("meta.url", "doc.body")),
            want,
            "{name}"
        );
    }
    // A column whose own name holds a dot is found by that name first.
    let dotted = batch(vec![
        (
            "meta.url",
            Arc::new(StringArray::from(vec!["exact"])) as ArrayRef,
        ),
        ("t", Arc::new(StringArray::from(vec!["a text"])) as ArrayRef),
    ]);
    parquet(&d.join("dotted.parquet"), &dotted, Compression::SNAPPY, 10);
    assert_eq!(
        read_ok(&[&d.join("dotted.parquet")], &fields("meta.url", "t")),
        vec![Ok((b"exact".to_vec(), "a text".to_string()))]
    );
}

#[test]
fn id_columns_may_be_strings_binary_or_integers() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ids.parquet");
    let table = batch(vec![
        (
            "large",
            Arc::new(LargeStringArray::from(vec!["l0", "l1"])) as ArrayRef,
        ),
        (
            "bin",
            Arc::new(BinaryArray::from(vec![&b"\xff\x00"[..], b"b1"])),
        ),
        ("i64", Arc::new(Int64Array::from(vec![17, -5]))),
        ("u8", Arc::new(UInt8Array::from(vec![0, 255]))),
        ("f64", Arc::new(Float64Array::from(vec![1.5, 2.0]))),
        (
            "dict",
            Arc::new(DictionaryArray::<Int32Type>::from_iter(["x", "x"])),
        ),
        ("text", Arc::new(StringArray::from(vec!["one", "two"]))),
    ]);
    parquet(&path, &table, Compression::SNAPPY, 10);
    let keys = |id: &str| -> Vec<Vec<u8>> {
        read_ok(&[&path], &fields(id, "text"))
            .into_iter()
            .map(|r| r.unwrap().0)
            .collect()
    };
    assert_eq!(keys("large"), [b"l0".to_vec(), b"l1".to_vec()]);
    assert_eq!(keys("bin"), [b"\xff\x00".to_vec(), b"b1".to_vec()]);
    // An integer is its decimal digits: the key the JSON id "17" gives.
    assert_eq!(keys("i64"), [b"17".to_vec(), b"-5".to_vec()]);
    assert_eq!(keys("u8"), [b"0".to_vec(), b"255".to_vec()]);
    // A dictionary-encoded column (a pandas categorical) is read as its values.
    assert_eq!(keys("dict"), [b"x".to_vec(), b"x".to_vec()]);
    assert_eq!(
        read_ok(&[&path], &fields("u8", "dict"))[1],
        Ok((b"255".to_vec(), "x".to_string()))
    );
    let name = path.display();
    assert_eq!(
        read(&[&path], &fields("f64", "text")).1.unwrap(),
        format!(
            "{name}: column \"f64\" is of type Float64; an id column must hold strings, binary \
             or integers"
        )
    );
    assert_eq!(
        read(&[&path], &fields("large", "i64")).1.unwrap(),
        format!(
            "{name}: column \"i64\" is of type Int64; a text column must hold strings or binary"
        )
    );
}

#[test]
fn truncated_compressed_streams_stop_naming_file_and_byte_offset() {
    let dir = tempfile::tempdir().unwrap();
    let lines = jsonl(&rows(20_000));
    for (name, bytes) in [("t.jsonl.gz", gzip(&lines)), ("t.jsonl.zst", zstd(&lines))] {
        let path = dir.path().join(name);
        let cut = bytes.len() * 2 / 3;
        std::fs::write(&path, &bytes[..cut]).unwrap();
        let (read_back, error) = read(&[&path], &fields("id", "text"));
        let kind = if name.ends_with("gz") { "gzip" } else { "zstd" };
        let error = error.unwrap();
        let want = format!(
            "{}: read error: truncated or corrupt {kind} stream after byte {cut} of the file (",
            path.display()
        );
        assert!(error.starts_with(&want), "{error}");
        // The lines before the break were read, whole.
        assert!(read_back.len() > 1000 && read_back.iter().all(Result::is_ok));
    }
}

/// A Parquet file of 300 rows in three row groups of 100, uncompressed and without
/// dictionaries, so that a row group's pages lie where its metadata says.
fn three_groups(path: &Path) -> RecordBatch {
    let table = id_text_batch(&rows(300));
    let props = WriterProperties::builder()
        .set_compression(Compression::UNCOMPRESSED)
        .set_dictionary_enabled(false)
        .set_max_row_group_row_count(Some(100))
        .build();
    let mut w = ArrowWriter::try_new(
        std::fs::File::create(path).unwrap(),
        table.schema(),
        Some(props),
    )
    .unwrap();
    w.write(&table).unwrap();
    w.close().unwrap();
    table
}

#[test]
fn bad_parquet_footers_and_row_groups_stop_naming_them() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("g.parquet");
    three_groups(&path);
    let bytes = std::fs::read(&path).unwrap();
    let name = path.display().to_string();

    // A footer cut short.
    let cut = dir.path().join("cut.parquet");
    std::fs::write(&cut, &bytes[..bytes.len() - 20]).unwrap();
    let error = read(&[&cut], &fields("id", "text")).1.unwrap();
    assert!(
        error.starts_with(&format!(
            "{}: not a readable Parquet file (its footer): ",
            cut.display()
        )),
        "{error}"
    );

    // Row group 1's text column overwritten where its first page header lies.
    let meta =
        parquet::file::reader::SerializedFileReader::new(std::fs::File::open(&path).unwrap())
            .unwrap();
    use parquet::file::reader::FileReader as _;
    let (start, _) = meta.metadata().row_group(1).column(1).byte_range();
    let mut bad = bytes.clone();
    bad[start as usize..start as usize + 16].fill(0xff);
    std::fs::write(&path, &bad).unwrap();
    let (read_back, error) = read(&[&path], &fields("id", "text"));
    let error = error.unwrap();
    assert!(
        error.starts_with(&format!(
            "{name}: row group 1 (rows 100..200) cannot be read from row 100: "
        )),
        "{error}"
    );
    // Row group 0 was read whole before it.
    assert_eq!(read_back, expected(&rows(100)));
}

#[test]
fn missing_columns_and_wrong_types_stop_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let table = batch(vec![
        ("id", Arc::new(StringArray::from(vec!["a"])) as ArrayRef),
        ("body", Arc::new(StringArray::from(vec!["text"]))),
    ]);
    parquet(&d.join("m.parquet"), &table, Compression::SNAPPY, 10);
    arrow_ipc(&d.join("m.arrows"), &table, true, 10);
    std::fs::write(d.join("m.csv"), "id,body\na,text\n").unwrap();
    for name in ["m.parquet", "m.arrows"] {
        let path = d.join(name);
        assert_eq!(
            read(&[&path], &fields("id", "text")).1.unwrap(),
            format!(
                "{}: no column \"text\" (its columns: id, body)",
                path.display()
            )
        );
    }
    let csv = d.join("m.csv");
    assert_eq!(
        read(&[&csv], &fields("id", "text")).1.unwrap(),
        format!(
            "{}: no column \"text\" in its header (its columns: id, body)",
            csv.display()
        )
    );
    let path = d.join("m.parquet");
    assert_eq!(
        read(&[&path], &fields("id", "body.x")).1.unwrap(),
        format!(
            "{}: no column \"body.x\" (its columns: id, body)",
            path.display()
        )
    );
}

#[test]
fn nulls_non_utf8_texts_and_ragged_rows_are_refused_in_their_place() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let table = batch(vec![
        (
            "id",
            Arc::new(StringArray::from(vec![
                Some("a"),
                None,
                Some("c"),
                Some("d"),
            ])) as ArrayRef,
        ),
        (
            "text",
            Arc::new(BinaryArray::from(vec![
                Some(&b"fine"[..]),
                Some(b"fine"),
                Some(b"ab\xffcd"),
                None,
            ])),
        ),
    ]);
    parquet(&d.join("n.parquet"), &table, Compression::SNAPPY, 2);
    arrow_ipc(&d.join("n.arrow"), &table, false, 10);
    std::fs::write(
        d.join("n.csv"),
        b"id,text\na,fine\nb,ab\xffcd\nc\nd,fine,extra\ne,ok\n",
    )
    .unwrap();
    let p = |name: &str| d.join(name).display().to_string();
    let (got, error) = read(&[&d.join("n.parquet")], &fields("id", "text"));
    assert_eq!(error, None);
    let n = p("n.parquet");
    assert_eq!(
        got,
        vec![
            Ok((b"a".to_vec(), "fine".to_string())),
            Err(format!("{n}: row group 0, row 1: column \"id\" is null")),
            Err(format!(
                "{n}: row group 1, row 2: column \"text\" is not UTF-8 (byte 2 of the value)"
            )),
            Err(format!("{n}: row group 1, row 3: column \"text\" is null")),
        ]
    );
    let (got, _) = read(&[&d.join("n.arrow")], &fields("id", "text"));
    assert_eq!(
        got[1],
        Err(format!("{}: row 1: column \"id\" is null", p("n.arrow")))
    );
    let (got, error) = read(&[&d.join("n.csv")], &fields("id", "text"));
    assert_eq!(error, None);
    let c = p("n.csv");
    assert_eq!(
        got,
        vec![
            Ok((b"a".to_vec(), "fine".to_string())),
            Err(format!(
                "{c}:3: column \"text\" is not UTF-8 (byte 2 of the value)"
            )),
            Err(format!("{c}:4: 1 fields where the header has 2")),
            Err(format!("{c}:5: 3 fields where the header has 2")),
            Ok((b"e".to_vec(), "ok".to_string())),
        ]
    );
}

/// The keys stored in `db`, as `mhdb keys` prints them.
fn stored_keys(db: &Path) -> Vec<String> {
    let out = success(run(&["keys", &db.display().to_string()]), "keys");
    let mut keys: Vec<String> = String::from_utf8(out)
        .unwrap()
        .lines()
        .map(String::from)
        .collect();
    keys.sort();
    keys
}

fn create(db: &Path) {
    success(
        run(&["create", &db.display().to_string(), "--threshold", "0.8"]),
        "create",
    );
}

#[test]
fn add_loads_a_parquet_folder_and_finds_its_documents() {
    let dir = tempfile::tempdir().unwrap();
    let (db, data) = (dir.path().join("db"), dir.path().join("data"));
    std::fs::create_dir_all(data.join("part=1")).unwrap();
    let all = rows(600);
    parquet(
        &data.join("part=1/a.parquet"),
        &id_text_batch(&all[..400]),
        Compression::SNAPPY,
        150,
    );
    std::fs::write(data.join("b.jsonl.zst"), zstd(&jsonl(&all[400..]))).unwrap();
    create(&db);
    let out = run(&[
        "add",
        &db.display().to_string(),
        &data.display().to_string(),
        "--json",
    ]);
    let stdout = String::from_utf8(success(out, "add")).unwrap();
    assert_eq!(stdout, "{\"committed\":600,\"last_id\":\"doc-399\"}\n");
    let mut want: Vec<String> = all.iter().map(|r| r.0.clone()).collect();
    want.sort();
    assert_eq!(stored_keys(&db), want);
    let text = &all[0].1;
    let out = run(&["query", &db.display().to_string(), "--text", text, "--json"]);
    let answer: serde_json::Value = serde_json::from_slice(&success(out, "query")).unwrap();
    assert_eq!(answer["matches"][0]["id"], "doc-0");
}

#[test]
fn add_stops_at_a_bad_row_after_committing_the_rows_before_it_or_skips_it() {
    let dir = tempfile::tempdir().unwrap();
    let (db, path) = (dir.path().join("db"), dir.path().join("n.parquet"));
    let data = rows(300);
    let ids: StringArray = (0..300)
        .map(|i| (i != 150).then(|| data[i].0.as_str()))
        .collect();
    let texts: StringArray = data.iter().map(|r| Some(r.1.as_str())).collect();
    let table = batch(vec![
        ("id", Arc::new(ids) as ArrayRef),
        ("text", Arc::new(texts)),
    ]);
    parquet(&path, &table, Compression::ZSTD(ZstdLevel::default()), 100);
    create(&db);
    let (db_s, path_s) = (db.display().to_string(), path.display().to_string());
    let out = run(&["add", &db_s, &path_s, "--commit-every", "40"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!(
            "mhdb: {path_s}: row group 1, row 150: column \"id\" is null\nmhdb: added 150 \
             documents before stopping (0 invalid skipped, 0 duplicates skipped); nothing after \
             them was added\n"
        )
    );
    // Everything before the bad row is committed.
    assert_eq!(stored_keys(&db).len(), 150);
    let out = run(&["add", &db_s, &path_s, "--skip-invalid"]);
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success(), "{stderr}");
    assert_eq!(
        stderr,
        format!(
            "mhdb: skipped {path_s}: row group 1, row 150: column \"id\" is null\nmhdb: added \
             299 documents (1 invalid skipped, 0 duplicates skipped)\n"
        )
    );
    assert_eq!(stored_keys(&db).len(), 299);
}

#[test]
fn add_stops_at_an_unreadable_row_group_keeping_what_it_acknowledged() {
    let dir = tempfile::tempdir().unwrap();
    let (db, path) = (dir.path().join("db"), dir.path().join("g.parquet"));
    three_groups(&path);
    let meta =
        parquet::file::reader::SerializedFileReader::new(std::fs::File::open(&path).unwrap())
            .unwrap();
    use parquet::file::reader::FileReader as _;
    let (start, _) = meta.metadata().row_group(2).column(1).byte_range();
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[start as usize..start as usize + 16].fill(0xff);
    std::fs::write(&path, &bytes).unwrap();
    create(&db);
    let (db_s, path_s) = (db.display().to_string(), path.display().to_string());
    // --skip-invalid does not pass over a row group it cannot read.
    let out = run(&[
        "add",
        &db_s,
        &path_s,
        "--json",
        "--commit-every",
        "50",
        "--skip-invalid",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "mhdb: {path_s}: row group 2 (rows 200..300) cannot be read from row 200: "
        )),
        "{stderr}"
    );
    // Every commit acknowledged on stdout is stored, and nothing else.
    let stdout = String::from_utf8(out.stdout).unwrap();
    let last: serde_json::Value =
        serde_json::from_str(stdout.lines().last().expect("some commits")).unwrap();
    let committed = last["committed"].as_u64().unwrap() as usize;
    assert!(committed > 0 && committed <= 200, "{stdout}");
    assert_eq!(stored_keys(&db).len(), committed);
}

#[test]
fn standard_input_is_json_lines_plain_or_compressed() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    create(&db);
    let db_s = db.display().to_string();
    let data = rows(50);
    let out = run_with_stdin(&["add", &db_s, "-"], &zstd(&jsonl(&data[..25])));
    success(out, "add zstd stdin");
    let out = run_with_stdin(
        &["add", &db_s, "--id-from-path"],
        &gzip(&jsonl(&data[25..])),
    );
    success(out, "add gzip stdin");
    assert_eq!(stored_keys(&db).len(), 50);
    assert!(stored_keys(&db).contains(&"<stdin>:25".to_string()));
    // Parquet needs a file to seek in.
    let path = dir.path().join("p.parquet");
    parquet(&path, &id_text_batch(&data), Compression::SNAPPY, 10);
    let out = run_with_stdin(&["add", &db_s, "-"], &std::fs::read(&path).unwrap());
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(
            "mhdb: <stdin>: standard input is read as JSON Lines (plain, gzip or zstd); give \
             Parquet, Arrow and CSV data as files"
        ),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
