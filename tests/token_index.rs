//! Indexes of token lists (shingle kind `tokens[:N]`, `format/hashing.md` §15): an index
//! stores and answers with the signatures `MinHasher::sketch_tokens` gives (the golden
//! vectors' own), reads token lists from JSON Lines (plain, gzip, zstd), Parquet and Arrow
//! list columns, refuses bad token lists naming their place, keeps its kind across a reopen,
//! refuses texts, and answers `mhdb query --jsonl` lines of token lists; a keyed index with
//! stored sets works end to end, its sets under the set key.

mod common;

use std::path::Path;
use std::sync::Arc;

use arrow_array::builder::{Int64Builder, ListBuilder, StringBuilder};
use arrow_array::{ArrayRef, RecordBatch, StringArray};
use common::cli::{run, s, success};
use common::compress::{gzip, zstd};
use mhdb::db::{Db, IndexOptions, Options, QueryOptions};
use mhdb::sketch::{MinHasher, OwnedToken, Scheme, ShingleKind, Token};
use parquet::arrow::ArrowWriter;
use serde_json::Value;

fn golden() -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden/tokens.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn token(v: &Value) -> Token<'_> {
    match v {
        Value::String(s) => Token::Str(s),
        v => Token::Int(v.as_i64().unwrap()),
    }
}

/// An index of token lists at `width`, storing full 64-bit slots (so that what it stores
/// is the signature itself).
fn create(dir: &Path, width: usize, scheme: Scheme, seed: u64, num_perm: usize) -> Db {
    let params = IndexOptions {
        shingle: Some(ShingleKind::Tokens(width)),
        scheme: Some(scheme),
        seed: Some(seed),
        num_perm: Some(num_perm),
        bits: Some(64),
        band_slots: Some(num_perm),
        threshold: Some(0.5),
        ..IndexOptions::default()
    }
    .build()
    .unwrap();
    Db::create(dir, params, Options::default()).unwrap()
}

fn stored_slots(db: &Db, key: &str) -> Vec<u64> {
    db.get(key).unwrap().expect("stored").slots().unwrap()
}

#[test]
fn an_index_stores_the_golden_signatures_of_its_token_lists() {
    let doc = golden();
    let mut checked = 0;
    for (i, case) in doc["cases"].as_array().unwrap().iter().enumerate() {
        if case["keyed"].as_bool().unwrap() || case["tokens"].as_array().unwrap().is_empty() {
            continue;
        }
        let dir = tempfile::tempdir().unwrap();
        let scheme: Scheme = case["scheme"].as_str().unwrap().parse().unwrap();
        let width = case["width"].as_u64().unwrap() as usize;
        let db = create(
            dir.path(),
            width,
            scheme,
            case["seed"].as_u64().unwrap(),
            16,
        );
        let tokens: Vec<Token<'_>> = case["tokens"]
            .as_array()
            .unwrap()
            .iter()
            .map(token)
            .collect();
        db.insert_tokens("doc", &tokens).unwrap();
        let want: Vec<String> = case["slots16"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap().to_string())
            .collect();
        let got: Vec<String> = stored_slots(&db, "doc")
            .iter()
            .map(|v| format!("{v:016x}"))
            .collect();
        assert_eq!(got, want, "case {i}: {case}");
        let answer = db.query_tokens(&tokens, &QueryOptions::default()).unwrap();
        assert_eq!(answer.matches.len(), 1, "case {i}");
        assert_eq!(answer.matches[0].key, b"doc");
        checked += 1;
    }
    assert!(checked >= 20, "only {checked} golden cases checked");
}

#[test]
fn integers_and_strings_are_different_elements_and_width_2_keeps_order() {
    let dir = tempfile::tempdir().unwrap();
    let set = create(&dir.path().join("set"), 1, Scheme::Oph, 0, 128);
    let strings = [Token::Str("1"), Token::Str("2"), Token::Str("3")];
    let integers = [Token::Int(1), Token::Int(2), Token::Int(3)];
    set.insert_tokens("strings", &strings).unwrap();
    let found = set
        .query_tokens(&integers, &QueryOptions::default())
        .unwrap();
    assert!(found.matches.is_empty(), "{:?}", found.matches);
    // Width 1 is a set: order and repeats do not matter.
    let shuffled = [
        Token::Str("3"),
        Token::Str("1"),
        Token::Str("2"),
        Token::Str("1"),
    ];
    assert_eq!(
        set.sketch_tokens(&shuffled).unwrap(),
        set.sketch_tokens(&strings).unwrap()
    );

    let pairs = create(&dir.path().join("pairs"), 2, Scheme::Oph, 0, 128);
    let hasher = MinHasher::new(pairs.params().sketch).unwrap();
    let abc = [Token::Str("a"), Token::Str("b"), Token::Str("c")];
    pairs.insert_tokens("abc", &abc).unwrap();
    assert_eq!(
        stored_slots(&pairs, "abc"),
        hasher.sketch_tokens(&abc, 2).unwrap().slots()
    );
    let cba = [Token::Str("c"), Token::Str("b"), Token::Str("a")];
    assert_ne!(
        pairs.sketch_tokens(&cba).unwrap(),
        pairs.sketch_tokens(&abc).unwrap()
    );
}

#[test]
fn the_kind_is_kept_across_a_reopen_and_texts_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    drop(create(&path, 3, Scheme::KPerm, 9, 64));
    let db = Db::open(&path, Options::default()).unwrap();
    assert_eq!(db.params().sketch.shingle.kind, ShingleKind::Tokens(3));
    assert!(db.takes_tokens());
    let err = db.insert_text("t", "a text").unwrap_err().to_string();
    assert!(err.contains("an index of token lists"), "{err}");
    assert!(db.query_text("a text", &QueryOptions::default()).is_err());
    let out = run(&["stats", s(&path)]);
    let stats = String::from_utf8(success(out, "stats")).unwrap();
    assert!(stats.contains("--shingle tokens:3"), "{stats}");
    let out = run(&["query", s(&path), "--text", "a text"]);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("--tokens-json"), "{err}");

    let text_index = dir.path().join("text");
    success(run(&["create", s(&text_index)]), "create");
    let db = Db::open(&text_index, Options::default()).unwrap();
    let err = db
        .insert_tokens("k", &[Token::Int(1)])
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("token lists need an index created with"),
        "{err}"
    );
}

#[test]
fn an_index_of_stored_sets_keeps_each_token_list_as_its_set() {
    let dir = tempfile::tempdir().unwrap();
    let params = IndexOptions {
        shingle: Some(ShingleKind::Tokens(1)),
        store_sets: Some(true),
        ..IndexOptions::default()
    }
    .build()
    .unwrap();
    let db = Db::create(dir.path(), params, Options::default()).unwrap();
    let tokens: Vec<OwnedToken> = (0..40).map(OwnedToken::Int).collect();
    let tokens = OwnedToken::borrow_all(&tokens);
    let sig = db.sketch_tokens(&tokens).unwrap();
    assert_eq!(sig.shingle_set().expect("a set").values().len(), 40);
    db.insert_tokens("k", &tokens).unwrap();
    let answer = db.query_tokens(&tokens, &QueryOptions::default()).unwrap();
    assert_eq!(answer.matches.len(), 1);
    assert_eq!(answer.matches[0].similarity, 1.0);
}

/// The rows of the round trips: an id and a token list of strings or of integers.
fn rows() -> Vec<(String, Vec<OwnedToken>)> {
    (0..50)
        .map(|i| {
            let tokens = if i % 2 == 0 {
                (0..8)
                    .map(|t| OwnedToken::Str(format!("w{}", i + t)))
                    .collect()
            } else {
                (0..8)
                    .map(|t| OwnedToken::Int(i64::from(i * 100 + t)))
                    .collect()
            };
            (format!("doc{i}"), tokens)
        })
        .collect()
}

fn jsonl(rows: &[(String, Vec<OwnedToken>)]) -> Vec<u8> {
    let mut out = String::new();
    for (id, tokens) in rows {
        let list: Vec<Value> = tokens
            .iter()
            .map(|t| match t {
                OwnedToken::Str(s) => Value::from(s.as_str()),
                OwnedToken::Int(v) => Value::from(*v),
            })
            .collect();
        out.push_str(&serde_json::json!({"id": id, "meta": {"tokens": list}}).to_string());
        out.push('\n');
    }
    out.into_bytes()
}

/// Rows as a batch: `strings` holds the string tokens of each row, `ints` its integers.
fn list_batch(rows: &[(String, Vec<OwnedToken>)]) -> RecordBatch {
    let ids: StringArray = rows.iter().map(|r| Some(r.0.as_str())).collect();
    let mut strings = ListBuilder::new(StringBuilder::new());
    let mut ints = ListBuilder::new(Int64Builder::new());
    for (_, tokens) in rows {
        for t in tokens {
            match t {
                OwnedToken::Str(s) => strings.values().append_value(s),
                OwnedToken::Int(v) => ints.values().append_value(*v),
            }
        }
        strings.append(true);
        ints.append(true);
    }
    RecordBatch::try_from_iter([
        ("id", Arc::new(ids) as ArrayRef),
        ("strings", Arc::new(strings.finish()) as ArrayRef),
        ("ints", Arc::new(ints.finish()) as ArrayRef),
    ])
    .unwrap()
}

/// Adds `input` to a new index of token sets with `--tokens-field field` and checks every row
/// read back: its stored signature is `sketch_tokens` of the row.
fn round_trip(
    dir: &Path,
    name: &str,
    input: &Path,
    field: &str,
    rows: &[(String, Vec<OwnedToken>)],
) {
    let db_path = dir.join(name);
    success(
        run(&["create", s(&db_path), "--shingle", "tokens"]),
        "create",
    );
    let out = run(&["add", s(&db_path), s(input), "--tokens-field", field]);
    success(out, name);
    let db = Db::open(&db_path, Options::default()).unwrap();
    let hasher = db.hasher().unwrap();
    assert_eq!(db.keys().unwrap().len(), rows.len(), "{name}");
    for (id, tokens) in rows {
        let want = hasher
            .sketch_tokens(&OwnedToken::borrow_all(tokens), 1)
            .unwrap();
        let got = db.get(id).unwrap().expect("stored");
        let want = mhdb::sketch::pack(want.slots(), got.bits).unwrap();
        assert_eq!(got.packed, want, "{name}: {id}");
    }
}

#[test]
fn token_lists_are_read_from_jsonl_parquet_and_arrow() {
    let dir = tempfile::tempdir().unwrap();
    let rows = rows();
    let plain = jsonl(&rows);
    for (name, bytes) in [
        ("in.jsonl", plain.clone()),
        ("in.jsonl.gz", gzip(&plain)),
        ("in.jsonl.zst", zstd(&plain)),
    ] {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        round_trip(
            dir.path(),
            &format!("db-{name}"),
            &path,
            "meta.tokens",
            &rows,
        );
    }
    // A row's list is in the column of its kind: strings or integers.
    let (strings, ints): (Vec<_>, Vec<_>) = rows
        .iter()
        .cloned()
        .partition(|(_, t)| matches!(t[0], OwnedToken::Str(_)));
    for format in ["parquet", "arrow"] {
        for (column, kind) in [("strings", &strings), ("ints", &ints)] {
            let path = dir.path().join(format!("{column}.{format}"));
            write_like(&path, &path, &[list_batch(kind)]);
            round_trip(
                dir.path(),
                &format!("db-{column}-{format}"),
                &path,
                column,
                kind,
            );
        }
    }
}

fn ext(path: &Path) -> &str {
    path.extension().unwrap().to_str().unwrap()
}

/// Writes `batches` in the format of `like` (Parquet or an Arrow file).
fn write_like(like: &Path, path: &Path, batches: &[RecordBatch]) {
    let file = std::fs::File::create(path).unwrap();
    let schema = batches[0].schema();
    if ext(like) == "parquet" {
        let mut w = ArrowWriter::try_new(file, schema, None).unwrap();
        batches.iter().for_each(|b| w.write(b).unwrap());
        w.close().unwrap();
    } else {
        let mut w = arrow_ipc::writer::FileWriter::try_new(file, &schema).unwrap();
        batches.iter().for_each(|b| w.write(b).unwrap());
        w.finish().unwrap();
    }
}

#[test]
fn bad_token_lists_are_refused_naming_their_place_and_skipped_on_request() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    success(run(&["create", s(&db), "--shingle", "tokens:2"]), "create");
    for (line, why) in [
        (r#"{"id": "x", "t": "a b"}"#, "field \"t\" must be an array"),
        (
            r#"{"id": "x", "t": [1.5]}"#,
            "element 0 is a number but not an integer",
        ),
        (r#"{"id": "x", "t": ["a", ["b"]]}"#, "element 1 is an array"),
        (r#"{"id": "x", "t": ["a", null]}"#, "element 1 is null"),
        (r#"{"id": "x", "t": []}"#, "the token list is empty"),
    ] {
        let input = dir.path().join("bad.jsonl");
        std::fs::write(
            &input,
            format!("{{\"id\": \"ok\", \"t\": [\"a\", 1]}}\n{line}\n"),
        )
        .unwrap();
        let out = run(&["add", s(&db), s(&input), "--tokens-field", "t"]);
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(1), "{line}: {err}");
        assert!(err.contains(why), "{line}: {err}");
        if !why.contains("empty") {
            assert!(err.contains("bad.jsonl:2: "), "{line}: {err}");
        }
        let out = run(&[
            "add",
            s(&db),
            s(&input),
            "--tokens-field",
            "t",
            "--skip-invalid",
        ]);
        success(out, line);
    }
    // A null element of a list column: refused naming its row.
    let mut lists = ListBuilder::new(StringBuilder::new());
    lists.values().append_value("a");
    lists.append(true);
    lists.values().append_null();
    lists.append(true);
    let ids: StringArray = ["r0", "r1"].into_iter().map(Some).collect();
    let batch = RecordBatch::try_from_iter([
        ("id", Arc::new(ids) as ArrayRef),
        ("t", Arc::new(lists.finish()) as ArrayRef),
    ])
    .unwrap();
    let parquet = dir.path().join("bad.parquet");
    write_like(&parquet, &parquet, &[batch]);
    let out = run(&["add", s(&db), s(&parquet), "--tokens-field", "t"]);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("row 1") && err.contains("element 0 is null"),
        "{err}"
    );
    // A text column is not a token list.
    let out = run(&["add", s(&db), s(&parquet), "--tokens-field", "id"]);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(err.contains("a token-list column must be a list"), "{err}");
}

/// An index of token sets made by the CLI in `dir`, holding the one list `k`: `["a", "b", 7]`.
fn index_of_one_list(dir: &Path) -> std::path::PathBuf {
    let db = dir.join("db");
    success(run(&["create", s(&db), "--shingle", "tokens"]), "create");
    let input = dir.join("in.jsonl");
    std::fs::write(&input, "{\"id\": \"k\", \"t\": [\"a\", \"b\", 7]}\n").unwrap();
    success(
        run(&["add", s(&db), s(&input), "--tokens-field", "t"]),
        "add",
    );
    db
}

#[test]
fn the_cli_queries_a_token_list() {
    let dir = tempfile::tempdir().unwrap();
    let db = index_of_one_list(dir.path());
    let out = run(&["query", s(&db), "--tokens-json", r#"[7, "b", "a"]"#]);
    let answer = String::from_utf8(success(out, "query")).unwrap();
    assert_eq!(answer, "1.0000\tk\n");
    let out = run(&["query", s(&db), "--tokens-json", r#"["7", "b", "a"]"#]);
    assert_eq!(String::from_utf8(success(out, "query")).unwrap(), "");
    let out = run(&["query", s(&db), "--tokens-json", "{}"]);
    assert_eq!(out.status.code(), Some(2));
}

/// The answers of `mhdb query --jsonl` (one JSON line per query), as `(id, [(key, jaccard)])`.
fn jsonl_answers(stdout: &[u8]) -> Vec<(Value, Vec<(String, f64)>)> {
    String::from_utf8(stdout.to_vec())
        .unwrap()
        .lines()
        .map(|line| {
            let answer: Value = serde_json::from_str(line).unwrap();
            let matches = answer["matches"]
                .as_array()
                .unwrap()
                .iter()
                .map(|m| {
                    let key = m["id"].as_str().unwrap().to_string();
                    (key, m["jaccard"].as_f64().unwrap())
                })
                .collect();
            (answer["id"].clone(), matches)
        })
        .collect()
}

#[test]
fn query_jsonl_takes_token_lists_in_an_index_of_token_lists() {
    let dir = tempfile::tempdir().unwrap();
    let db = index_of_one_list(dir.path());
    let queries = dir.path().join("q.jsonl");
    std::fs::write(
        &queries,
        "{\"id\": \"same\", \"tokens\": [7, \"b\", \"a\"]}\n\
         {\"id\": \"other\", \"tokens\": [\"7\", \"b\", \"a\"]}\n",
    )
    .unwrap();
    let out = success(run(&["query", s(&db), "--jsonl", s(&queries)]), "query");
    let answers = jsonl_answers(&out);
    assert_eq!(answers.len(), 2);
    assert_eq!(answers[0], (Value::from("same"), vec![("k".into(), 1.0)]));
    assert_eq!(answers[1], (Value::from("other"), vec![]));
    // --tokens-field names another field; read from standard input too.
    let out = common::cli::run_with_stdin(
        &["query", s(&db), "--jsonl", "-", "--tokens-field", "list"],
        b"{\"id\": 1, \"list\": [\"a\", 7, \"b\"]}\n",
    );
    let answers = jsonl_answers(&success(out, "query -"));
    assert_eq!(answers, vec![(Value::from(1), vec![("k".into(), 1.0)])]);
    // A text line in an index of token lists: the lines before it are answered, and the
    // error names the line.
    std::fs::write(
        &queries,
        "{\"id\": \"same\", \"tokens\": [7, \"b\", \"a\"]}\n{\"id\": \"t\", \"text\": \"a b 7\"}\n",
    )
    .unwrap();
    let out = run(&["query", s(&db), "--jsonl", s(&queries)]);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_ne!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("q.jsonl:2: "), "{err}");
    assert!(err.contains("an index of token lists"), "{err}");
    assert_eq!(jsonl_answers(&out.stdout).len(), 1, "{err}");
    // A line with neither field names the one missing.
    std::fs::write(&queries, "{\"id\": \"x\"}\n").unwrap();
    let out = run(&["query", s(&db), "--jsonl", s(&queries)]);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(err.contains("q.jsonl:1: missing field \"tokens\""), "{err}");
}

#[test]
fn query_jsonl_refuses_token_lists_in_an_index_of_texts() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    success(run(&["create", s(&db)]), "create");
    let text = "the quick brown fox jumps over the lazy dog";
    let input = dir.path().join("in.jsonl");
    std::fs::write(&input, format!("{{\"id\": \"k\", \"text\": \"{text}\"}}\n")).unwrap();
    success(run(&["add", s(&db), s(&input)]), "add");
    // A line with a text and a token list queries by its text, as before token lists.
    let queries = dir.path().join("q.jsonl");
    std::fs::write(
        &queries,
        format!(
            "{{\"id\": \"both\", \"text\": \"{text}\", \"tokens\": [\"x\"]}}\n\
             {{\"id\": \"list\", \"tokens\": [\"the\", \"quick\"]}}\n"
        ),
    )
    .unwrap();
    let out = run(&["query", s(&db), "--jsonl", s(&queries)]);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_ne!(out.status.code(), Some(0), "{err}");
    assert_eq!(
        jsonl_answers(&out.stdout),
        vec![(Value::from("both"), vec![("k".into(), 1.0)])]
    );
    assert!(err.contains("q.jsonl:2: "), "{err}");
    assert!(err.contains("token list"), "{err}");
}

/// Writes a secret key file (64 hex digits) and returns its path.
fn key_file(dir: &Path) -> std::path::PathBuf {
    let path = dir.join("key.hex");
    let hex: String = (0..32u8)
        .map(|b| format!("{:02x}", b.wrapping_mul(29) ^ 0x3c))
        .collect();
    std::fs::write(&path, hex).unwrap();
    path
}

#[test]
fn a_keyed_index_of_token_lists_with_stored_sets_end_to_end() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let key = key_file(dir.path());
    success(
        run(&[
            "create",
            s(&db),
            "--key-file",
            s(&key),
            "--shingle",
            "tokens",
            "--store-sets",
            "--threshold",
            "0.85",
        ]),
        "create",
    );
    // The query shares 38 of the 42 distinct words of it and "doc": an exact Jaccard of 38/42,
    // within the re-rank margin of the threshold, so that the stored sets decide it (the
    // estimate is a multiple of a slot's share).
    let words =
        |range: std::ops::Range<u32>| -> Vec<String> { range.map(|i| format!("w{i}")).collect() };
    let doc = words(0..40);
    let near: Vec<String> = words(2..42);
    let input = dir.path().join("in.jsonl");
    let line = |id: &str, tokens: &[String]| {
        serde_json::json!({"id": id, "tokens": tokens}).to_string() + "\n"
    };
    let ints: Vec<i64> = (0..30).collect();
    let ints_line = serde_json::json!({"id": "ints", "tokens": ints}).to_string() + "\n";
    std::fs::write(&input, line("doc", &doc) + &ints_line).unwrap();
    let add = ["add", s(&db), s(&input), "--tokens-field", "tokens"];
    let out = run(&add);
    assert_ne!(out.status.code(), Some(0), "add without the key");
    success(run(&[&add[..], &["--key-file", s(&key)]].concat()), "add");

    let want = 38.0 / 42.0;
    let query_json = serde_json::to_string(&near).unwrap();
    let query = |extra: &[&str]| {
        let mut args = vec!["query", s(&db), "--tokens-json", &query_json, "--json"];
        args.extend_from_slice(extra);
        let out = run(&args);
        let answer: Value = serde_json::from_slice(&success(out, "query")).unwrap();
        answer["matches"].as_array().unwrap().clone()
    };
    let matches = query(&["--key-file", s(&key)]);
    assert_eq!(matches.len(), 1, "{matches:?}");
    assert_eq!(matches[0]["id"], "doc");
    // (JSON answers are rounded to six decimals.)
    assert!(
        (matches[0]["jaccard"].as_f64().unwrap() - want).abs() < 1e-6,
        "{matches:?}"
    );
    assert_eq!(matches[0]["exact"], true, "{matches:?}");
    let out = run(&["query", s(&db), "--tokens-json", &query_json]);
    assert_ne!(out.status.code(), Some(0), "a query without the key");

    success(run(&["verify", s(&db)]), "verify");
    let stats = success(run(&["stats", s(&db), "--json"]), "stats");
    let stats: Value = serde_json::from_slice(&stats).unwrap();
    assert_eq!(stats["sets_derivation"], "keyed", "{stats}");

    // Reopened: the same answer, and the stored sets follow the one stored-value rule under
    // the set key: a list of words has the set of the `word:1` text of those words, not the
    // top halves of its keyed hashes.
    let secret = mhdb::sketch::SecretKey::from_file(&key).unwrap();
    let opened = Db::open(
        &db,
        Options {
            key: Some(secret.clone()),
            ..Options::default()
        },
    )
    .unwrap();
    assert!(opened.takes_tokens());
    let near_tokens: Vec<Token<'_>> = near.iter().map(|w| Token::Str(w)).collect();
    let answer = opened
        .query_tokens(&near_tokens, &QueryOptions::default())
        .unwrap();
    assert_eq!(answer.matches.len(), 1);
    assert_eq!(answer.matches[0].key, b"doc");
    assert!((answer.matches[0].similarity - want).abs() < 1e-12);
    let doc_tokens: Vec<Token<'_>> = doc.iter().map(|w| Token::Str(w)).collect();
    let signed = opened.sketch_tokens(&doc_tokens).unwrap();
    let stored_rule = signed.shingle_set().expect("a set in a --store-sets index");
    let words_params = mhdb::sketch::SketchParams {
        shingle: mhdb::sketch::ShingleConfig::words(1),
        ..opened.params().sketch
    };
    let words_hasher = MinHasher::new_keyed(words_params, &secret).unwrap();
    assert_eq!(stored_rule, &words_hasher.shingle_set(&doc.join(" ")));
    let keyed_hashes = opened
        .hasher()
        .unwrap()
        .token_shingle_hashes(&doc_tokens, 1)
        .unwrap();
    assert_ne!(
        stored_rule,
        &mhdb::sketch::ShingleSet::from_hashes(keyed_hashes)
    );
    // The integer list is stored and found too.
    let int_tokens: Vec<Token<'_>> = ints.iter().map(|&v| Token::Int(v)).collect();
    let answer = opened
        .query_tokens(&int_tokens, &QueryOptions::default())
        .unwrap();
    assert_eq!(answer.matches[0].key, b"ints");
    assert_eq!(answer.matches[0].similarity, 1.0);
}
