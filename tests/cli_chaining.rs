//! The `mhdb` tools chain like Unix tools: `-` reads standard input for every input,
//! `mhdb dedup --format drop | mhdb delete idx -` through a real shell pipe removes exactly the
//! dropped keys, keys that break line formats (newlines, NUL, non-UTF-8, backslashes, the empty
//! key) survive `keys` → `delete -` and `keys --json` → `delete --jsonl -` exactly, and
//! `query --jsonl` streams: answers in input order, the first ones written while later lines
//! are still unread.

mod common;

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::Stdio;
use std::sync::mpsc;
use std::time::Duration;

use common::cli::{
    database_of, family_docs, family_text, json_lines, key_json, key_lines, mhdb, odd_keys, ok,
    run, run_with_stdin, s, shell, success, write_corpus,
};
use mhdb::db::Db;

/// Every live key, read through the library.
fn stored_keys(db: &Path) -> BTreeSet<Vec<u8>> {
    Db::open_read_only(db)
        .unwrap()
        .keys()
        .unwrap()
        .into_iter()
        .collect()
}

/// A database of 20 families of near-duplicates keyed `doc-N`, and then the odd keys, each a
/// near-copy of a family's first document (so dedup drops them).
fn families_with_odd_keys(dir: &Path) -> std::path::PathBuf {
    let mut docs = family_docs(200);
    for (n, key) in odd_keys().into_iter().enumerate() {
        docs.push((key, family_text(n as u64 * 10)));
    }
    database_of(dir, &docs)
}

#[test]
fn dedup_drop_piped_to_delete_removes_exactly_the_dropped_keys() {
    let dir = tempfile::tempdir().unwrap();
    let db = families_with_odd_keys(dir.path());
    let before = stored_keys(&db);
    let drop_list = success(
        run(&["dedup", s(&db), "--format", "drop"]),
        "dedup --format drop",
    );
    let dropped: BTreeSet<Vec<u8>> = key_lines(&drop_list).into_iter().collect();
    assert_eq!(
        dropped.len(),
        key_lines(&drop_list).len(),
        "a key listed twice"
    );
    // Every odd key copies its family's oldest document: each is dropped.
    for key in odd_keys() {
        assert!(dropped.contains(&key), "{key:?} not in the drop list");
    }
    assert!(dropped.len() >= 150, "{} dropped", dropped.len());

    let out = shell(
        r#""$MHDB" dedup "$1" --format drop | "$MHDB" delete "$1" -"#,
        &[s(&db)],
    );
    success(out.clone(), "dedup | delete");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("deleted {0} of {0} keys", dropped.len())),
        "{stderr}"
    );
    let after = stored_keys(&db);
    let expected: BTreeSet<Vec<u8>> = before.difference(&dropped).cloned().collect();
    assert_eq!(after, expected);
    // One document per family is left, and nothing more to drop.
    assert_eq!(after.len(), 20);
    assert!(ok(&["dedup", s(&db), "--format", "drop"]).is_empty());
    // With nothing to drop the pipe still succeeds and deletes nothing.
    success(
        shell(
            r#""$MHDB" dedup "$1" --format drop | "$MHDB" delete "$1" -"#,
            &[s(&db)],
        ),
        "empty dedup | delete",
    );
    assert_eq!(stored_keys(&db), expected);
}

#[test]
fn odd_keys_round_trip_through_text_and_json() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("idx");
    let data = dir.path().join("odd.jsonl");
    let docs: Vec<(Vec<u8>, String)> = odd_keys()
        .into_iter()
        .enumerate()
        .map(|(n, k)| (k, family_text(n as u64 * 10)))
        .collect();
    write_corpus(&data, &docs);
    ok(&["create", s(&db)]);
    ok(&["add", s(&db), s(&data)]);
    let all: BTreeSet<Vec<u8>> = odd_keys().into_iter().collect();
    assert_eq!(stored_keys(&db), all, "add must store the exact bytes");

    // Text: one escaped key per line, every line reading back as exactly one stored key.
    let listed = success(run(&["keys", s(&db)]), "keys");
    let lines = key_lines(&listed);
    assert_eq!(lines.len(), all.len());
    assert_eq!(lines.into_iter().collect::<BTreeSet<_>>(), all);
    // Ordinary keys print as they are.
    let text = String::from_utf8_lossy(&listed);
    for plain in ["-", "naïve café 東京", "1", "{\"hex\": \"00\"}"] {
        assert!(text.lines().any(|l| l == plain), "{plain:?} in {text:?}");
    }
    // `get -` finds every listed key; `get` with an escaped argument finds one.
    success(run_with_stdin(&["get", s(&db), "-"], &listed), "get -");
    let out = ok(&["get", s(&db), "two\\nlines", "\\xff\\xfe not UTF-8"]);
    assert_eq!(out, "two\\nlines\tpresent\n\\xff\\xfe not UTF-8\tpresent\n");

    // JSON: exact keys, strings or {"hex"}; `keys --json` feeds `delete --jsonl -`.
    let json = success(run(&["keys", s(&db), "--json"]), "keys --json");
    let from_json: BTreeSet<Vec<u8>> = json_lines(&json)
        .iter()
        .map(|v| common::cli::key_from_json(&v["id"]))
        .collect();
    assert_eq!(from_json, all);
    for v in json_lines(&json) {
        let key = common::cli::key_from_json(&v["id"]);
        assert_eq!(v["id"], key_json(&key), "{v}");
    }

    // Delete half of them through the text form, the other half through JSON.
    let (first, second): (Vec<_>, Vec<_>) = key_lines(&listed)
        .into_iter()
        .enumerate()
        .partition(|(i, _)| i % 2 == 0);
    let raw_lines: Vec<&[u8]> = listed.split(|&b| b == b'\n').collect();
    let mut half = Vec::new();
    for (i, _) in &first {
        half.extend_from_slice(raw_lines[*i]);
        half.push(b'\n');
    }
    success(run_with_stdin(&["delete", s(&db), "-"], &half), "delete -");
    let left: BTreeSet<Vec<u8>> = second.iter().map(|(_, k)| k.clone()).collect();
    assert_eq!(stored_keys(&db), left);
    let json_rest = success(run(&["keys", s(&db), "--json"]), "keys --json");
    let out = run_with_stdin(&["delete", s(&db), "--jsonl", "-", "--json"], &json_rest);
    let summary = json_lines(&success(out, "delete --jsonl -"));
    assert_eq!(
        summary,
        [serde_json::json!({"deleted": left.len(), "requested": left.len()})]
    );
    assert!(stored_keys(&db).is_empty());
}

#[test]
fn dash_reads_standard_input_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("idx");
    let data = dir.path().join("corpus.jsonl");
    write_corpus(&data, &family_docs(50));
    let corpus = std::fs::read(&data).unwrap();
    ok(&["create", s(&db)]);
    // add -
    success(run_with_stdin(&["add", s(&db), "-"], &corpus), "add -");
    assert_eq!(stored_keys(&db).len(), 50);

    // query --jsonl - answers exactly as query --jsonl FILE.
    let from_file = ok(&["query", s(&db), "--jsonl", s(&data)]);
    let from_stdin = run_with_stdin(&["query", s(&db), "--jsonl", "-"], &corpus);
    assert_eq!(
        String::from_utf8(success(from_stdin, "query --jsonl -")).unwrap(),
        from_file
    );
    assert_eq!(from_file.lines().count(), 50);

    // query --file - answers as query --file FILE.
    let one = dir.path().join("one.txt");
    std::fs::write(&one, family_text(13)).unwrap();
    let from_file = ok(&["query", s(&db), "--file", s(&one)]);
    let from_stdin = run_with_stdin(
        &["query", s(&db), "--file", "-"],
        family_text(13).as_bytes(),
    );
    assert_eq!(
        String::from_utf8(success(from_stdin, "query --file -")).unwrap(),
        from_file
    );
    assert!(from_file.starts_with("1.0000\tdoc-13\n"), "{from_file}");

    // delete --jsonl -, delete - and keys as arguments together.
    let gone = b"{\"id\": \"doc-1\"}\n{\"id\": \"doc-2\"}\n";
    success(
        run_with_stdin(&["delete", s(&db), "--jsonl", "-"], gone),
        "delete --jsonl -",
    );
    success(
        run_with_stdin(
            &["delete", s(&db), "doc-3", "-", "doc-4"],
            b"doc-5\ndoc-6\n",
        ),
        "delete KEY - KEY",
    );
    let left = stored_keys(&db);
    assert_eq!(left.len(), 44);
    for i in 1..=6 {
        assert!(!left.contains(format!("doc-{i}").as_bytes()));
    }
    // Standard input can be read once.
    let out = run(&["delete", s(&db), "-", "--jsonl", "-"]);
    assert_eq!(out.status.code(), Some(2));
    // A bad line deletes nothing and is named.
    let out = run_with_stdin(&["delete", s(&db), "-"], b"doc-7\ndoc\\q8\n");
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("<stdin>:2: unknown escape \\q"));
    assert_eq!(stored_keys(&db).len(), 44);
}

/// A query per line with its line number as id, each an edited copy of a document.
fn numbered_queries(n: u64) -> Vec<u8> {
    let mut out = Vec::new();
    for i in 0..n {
        let line = serde_json::json!({"id": i, "text": family_text((i * 7919) % 200)});
        writeln!(out, "{line}").unwrap();
    }
    out
}

#[test]
fn query_jsonl_streams_in_input_order() {
    let dir = tempfile::tempdir().unwrap();
    let db = database_of(dir.path(), &family_docs(200));

    // Order: several windows (2048 lines each) of answers come back in input order, each the
    // answer `query --text --json` gives.
    let n = 5000u64;
    let queries = numbered_queries(n);
    let out = success(
        run_with_stdin(&["query", s(&db), "--jsonl", "-", "--limit", "3"], &queries),
        "query --jsonl -",
    );
    let answers = json_lines(&out);
    assert_eq!(answers.len() as u64, n);
    for (i, a) in answers.iter().enumerate() {
        assert_eq!(a["id"], i, "answer {i} out of order");
    }
    for i in [0u64, 2047, 2048, 4999] {
        let text = family_text((i * 7919) % 200);
        let single = ok(&["query", s(&db), "--text", &text, "--limit", "3", "--json"]);
        let mut single: serde_json::Value = serde_json::from_str(&single).unwrap();
        single["id"] = i.into();
        assert_eq!(answers[i as usize], single);
    }

    // Streaming: with three windows written and standard input still open, the first answers
    // come out. (Were the whole input read first, this would wait for the close below, which
    // comes only after the first answer or after five minutes.)
    let mut child = mhdb(&["query", s(&db), "--jsonl", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let (first_seen, wait_for_first) = mpsc::channel::<()>();
    let writer = std::thread::spawn(move || {
        stdin.write_all(&numbered_queries(3 * 2048)).unwrap();
        stdin.flush().unwrap();
        let answered_before_close = wait_for_first
            .recv_timeout(Duration::from_secs(300))
            .is_ok();
        stdin.write_all(&numbered_queries(10)).unwrap();
        drop(stdin);
        answered_before_close
    });
    let mut reader = BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    reader.read_line(&mut first).unwrap();
    let _ = first_seen.send(());
    // Read on while the writer finishes: the child writes answers as it reads.
    let rest = reader.lines().count();
    assert!(
        writer.join().unwrap(),
        "no answer before standard input was closed"
    );
    let first: serde_json::Value = serde_json::from_str(&first).unwrap();
    assert_eq!(first["id"], 0);
    assert_eq!(rest, 3 * 2048 + 10 - 1);
    assert!(child.wait().unwrap().success());
}
