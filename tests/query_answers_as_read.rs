//! `mhdb query --jsonl -` reading a pipe answers each line as soon as it is read: a caller that
//! writes one query and waits for its answer before writing the next (a conversation, not a
//! batch) gets each answer while standard input is still open.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;
use std::sync::mpsc;
use std::time::Duration;

use common::cli::{database_of, family_docs, family_text, mhdb, s};

#[test]
fn each_line_of_a_pipe_is_answered_before_the_next_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let db = database_of(dir.path(), &family_docs(50));
    let mut child = mhdb(&["query", s(&db), "--jsonl", "-", "--limit", "1"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    let (tx, answers) = mpsc::channel();
    let reader = std::thread::spawn(move || {
        for line in stdout.lines() {
            if tx.send(line.unwrap()).is_err() {
                return;
            }
        }
    });
    for i in 0..5u64 {
        let query = serde_json::json!({"id": i, "text": family_text(i * 10)});
        writeln!(stdin, "{query}").unwrap();
        stdin.flush().unwrap();
        // The bound only turns a hang (an answer held until more lines or the end) into a
        // failure; an answer normally comes in milliseconds.
        let line = answers
            .recv_timeout(Duration::from_secs(300))
            .unwrap_or_else(|_| panic!("no answer to line {i} while standard input is open"));
        let answer: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(answer["id"], i);
        let best = &answer["matches"][0];
        assert_eq!(best["id"], format!("doc-{}", i * 10), "{answer}");
    }
    drop(stdin);
    assert!(child.wait().unwrap().success());
    reader.join().unwrap();
}
