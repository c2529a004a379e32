//! Input is read in bounded memory: where a file is one document (`add --files`,
//! `query --file`) it is held to the per-document limit (`--max-document-bytes`), so
//! `/dev/zero` and a sparse file of 20 GB are refused at once, naming them; a JSON line (plain,
//! gzip or zstd) and a CSV record are held to the same limit, refused naming the file, line,
//! byte offset and the flag, while a file of many lines is not limited by its size; a FIFO
//! found by walking a directory (`add --files DIR`, `add DIR`) is passed over with a warning
//! (it would block), while one named on the command line (`<(cat f)`) is read.

mod common;

use std::path::Path;

use common::cli::{ok, run, s, shell, success};

/// An empty database `dir/db`.
fn empty_db(dir: &Path) -> std::path::PathBuf {
    let db = dir.join("db");
    ok(&["create", s(&db)]);
    db
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The number of live documents, as `stats --json` reports it.
fn documents(db: &Path) -> u64 {
    let stats: serde_json::Value = serde_json::from_str(&ok(&["stats", s(db), "--json"])).unwrap();
    stats["live_docs"].as_u64().unwrap()
}

#[test]
fn dev_zero_as_one_document_is_refused_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = empty_db(dir.path());
    for args in [
        vec!["add", s(&db), "--files", "/dev/zero"],
        vec!["query", s(&db), "--file", "/dev/zero"],
    ] {
        let out = run(&args);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", stderr(&out));
        assert!(
            stderr(&out).contains(
                "/dev/zero: more than 67108864 bytes, the limit for one document \
                 (--max-document-bytes sets it)"
            ),
            "{args:?}: {}",
            stderr(&out)
        );
    }
}

#[test]
fn a_sparse_20_gb_file_in_a_files_directory_is_refused_by_its_size() {
    let dir = tempfile::tempdir().unwrap();
    let db = empty_db(dir.path());
    let docs = dir.path().join("docs");
    std::fs::create_dir(&docs).unwrap();
    std::fs::write(docs.join("a.txt"), "a short document of a few words").unwrap();
    let sparse = std::fs::File::create(docs.join("b.img")).unwrap();
    sparse.set_len(20 << 30).unwrap();
    let out = run(&["add", s(&db), "--files", s(&docs)]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let why = format!(
        "{}: more than 67108864 bytes, the limit for one document",
        docs.join("b.img").display()
    );
    assert!(stderr(&out).contains(&why), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("added 1 document before stopping"),
        "{}",
        stderr(&out)
    );
    let out = run(&["add", s(&db), "--files", s(&docs), "--skip-invalid"]);
    assert!(
        stderr(&out).contains(&format!("skipped {why}")),
        "{}",
        stderr(&out)
    );
    success(out, "add --files --skip-invalid");
    assert_eq!(documents(&db), 1);
}

#[test]
fn the_limit_is_a_flag() {
    let dir = tempfile::tempdir().unwrap();
    let db = empty_db(dir.path());
    let file = dir.path().join("doc.txt");
    std::fs::write(&file, "x".repeat(101)).unwrap();
    let out = run(&[
        "query",
        s(&db),
        "--file",
        s(&file),
        "--max-document-bytes",
        "100",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("more than 100 bytes"),
        "{}",
        stderr(&out)
    );
    ok(&[
        "query",
        s(&db),
        "--file",
        s(&file),
        "--max-document-bytes",
        "101",
    ]);
}

#[test]
fn a_fifo_found_walking_a_directory_is_skipped_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let db = empty_db(dir.path());
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    std::fs::write(data.join("a.jsonl"), jsonl("d", 3, 0)).unwrap();
    let fifo = data.join("b.jsonl");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    assert!(made.unwrap().success());
    let warning = format!("warning: skipped {}: not a regular file", fifo.display());
    // The directory's files as documents, then its JSON lines.
    for (flag, documents_then) in [("--files", 1), ("", 4)] {
        // No writer ever opens the FIFO: reading it would block for ever (the `timeout` is only
        // a guard that turns such a hang into a failure).
        let out = shell(
            "timeout 300 \"$MHDB\" add \"$1\" $3 \"$2\"",
            &[s(&db), s(&data), flag],
        );
        assert!(stderr(&out).contains(&warning), "{flag}: {}", stderr(&out));
        success(out, "add with a FIFO in the directory");
        assert_eq!(documents(&db), documents_then, "{flag}");
    }
}

#[test]
fn a_fifo_named_on_the_command_line_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let db = empty_db(dir.path());
    let jsonl = dir.path().join("f.jsonl");
    std::fs::write(
        &jsonl,
        "{\"id\": \"j\", \"text\": \"one line of json text\"}\n",
    )
    .unwrap();
    let text = dir.path().join("t.txt");
    std::fs::write(&text, "a whole file that is one document").unwrap();
    let out = shell(
        "\"$MHDB\" add \"$1\" <(cat \"$2\") && \"$MHDB\" add \"$1\" --files <(cat \"$3\")",
        &[s(&db), s(&jsonl), s(&text)],
    );
    success(out, "add <(cat f.jsonl); add --files <(cat t.txt)");
    assert_eq!(documents(&db), 2);
}

/// `lines` JSON lines of about 100 bytes each keyed `{prefix}N`, the `long`th (from 1) 300
/// bytes longer.
fn jsonl(prefix: &str, lines: usize, long: usize) -> String {
    (1..=lines)
        .map(|i| {
            let pad = if i == long { 400 } else { 100 };
            let text = format!("document {i} {}", "w".repeat(pad - 40));
            format!("{{\"id\": \"{prefix}{i}\", \"text\": \"{text}\"}}\n")
        })
        .collect()
}

#[test]
fn a_json_line_is_held_to_the_limit_but_a_file_of_lines_is_not() {
    let dir = tempfile::tempdir().unwrap();
    let db = empty_db(dir.path());
    let data = dir.path().join("d.jsonl");
    // 50 lines of about 100 bytes: the file is far over the limit, none of its lines is.
    std::fs::write(&data, jsonl("a", 50, 0)).unwrap();
    let limit = ["--max-document-bytes", "200"];
    ok(&[&["add", s(&db), s(&data)][..], &limit].concat());
    assert_eq!(documents(&db), 50);
    let long = dir.path().join("long.jsonl");
    let lines = jsonl("b", 5, 3);
    std::fs::write(&long, &lines).unwrap();
    let offset = lines.lines().take(2).map(|l| l.len() + 1).sum::<usize>();
    let why = format!(
        "{}:3: the line (from byte offset {offset}) is longer than 200 bytes, the limit for one \
         document",
        long.display()
    );
    let out = run(&[&["add", s(&db), s(&long)][..], &limit].concat());
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains(&why), "{}", stderr(&out));
    let out = run(&[&["add", s(&db), s(&long), "--skip-invalid"][..], &limit].concat());
    assert!(
        stderr(&out).contains(&format!("skipped {why}")),
        "{}",
        stderr(&out)
    );
    success(out, "add --skip-invalid");
    assert_eq!(documents(&db), 54);
    let out = run(&[&["query", s(&db), "--jsonl", s(&long)][..], &limit].concat());
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains(&why), "{}", stderr(&out));
}

#[test]
fn an_endless_line_on_standard_input_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let db = empty_db(dir.path());
    for command in ["\"$MHDB\" add \"$1\" -", "\"$MHDB\" query \"$1\" --jsonl -"] {
        let out = shell(
            &format!("{command} --max-document-bytes 1000000 < /dev/zero"),
            &[s(&db)],
        );
        assert_eq!(out.status.code(), Some(1), "{command}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("<stdin>:1: the line (from byte offset 0) is longer than"),
            "{command}: {}",
            stderr(&out)
        );
    }
}

/// `text` compressed as gzip (`gz`) or zstd.
fn compressed(text: &str, gz: bool) -> Vec<u8> {
    use std::io::Write;
    if !gz {
        return zstd::encode_all(text.as_bytes(), 3).unwrap();
    }
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(text.as_bytes()).unwrap();
    e.finish().unwrap()
}

#[test]
fn a_too_long_json_line_names_the_flag_that_raises_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let db = empty_db(dir.path());
    let lines = jsonl("c", 5, 3);
    let offset = lines.lines().take(2).map(|l| l.len() + 1).sum::<usize>();
    let plain = dir.path().join("long.jsonl");
    std::fs::write(&plain, &lines).unwrap();
    let gz = dir.path().join("long.jsonl.gz");
    std::fs::write(&gz, compressed(&lines, true)).unwrap();
    let zst = dir.path().join("long.jsonl.zst");
    std::fs::write(&zst, compressed(&lines, false)).unwrap();
    let limit = ["--max-document-bytes", "200"];
    for (file, of) in [
        (&plain, ""),
        (&gz, " of the decompressed data"),
        (&zst, " of the decompressed data"),
    ] {
        let why = format!(
            "{}:3: the line (from byte offset {offset}{of}) is longer than 200 bytes, the limit \
             for one document (--max-document-bytes sets it)",
            file.display()
        );
        let out = run(&[&["add", s(&db), s(file)][..], &limit].concat());
        assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
        assert!(stderr(&out).contains(&why), "{}", stderr(&out));
    }
    let out = run(&[&["query", s(&db), "--jsonl", s(&plain)][..], &limit].concat());
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("the limit for one document (--max-document-bytes sets it)"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_csv_record_over_the_limit_is_an_error_naming_its_place() {
    let dir = tempfile::tempdir().unwrap();
    let db = empty_db(dir.path());
    // A field of 100 kB over several lines, after a record of two lines.
    let head = "id,text\n1,\"a short\ntext\"\n";
    let csv = format!("{head}2,\"{}\"\n3,last\n", "many words\n".repeat(10_000));
    let plain = dir.path().join("big.csv");
    std::fs::write(&plain, &csv).unwrap();
    let gz = dir.path().join("big.csv.gz");
    std::fs::write(&gz, compressed(&csv, true)).unwrap();
    for (file, of) in [(&plain, ""), (&gz, " of the decompressed data")] {
        let why = format!(
            "{}:4: the record (from byte offset {}{of}) is longer than 1000 bytes, the limit for \
             one document (--max-document-bytes sets it)",
            file.display(),
            head.len()
        );
        for skip in [&[][..], &["--skip-invalid"]] {
            let args = [
                &["add", s(&db), s(file), "--max-document-bytes", "1000"],
                skip,
            ];
            let out = run(&args.concat());
            assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
            assert!(stderr(&out).contains(&why), "{}", stderr(&out));
        }
    }
}
