//! SIGINT or SIGTERM during `mhdb add` ends it with the signal's exit status (130, 143) and
//! says how many documents were committed: as many as its last `--json` commit line says,
//! all of them in the database.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use common::cli::{mhdb, ok, s};
use mhdb::db::Db;

/// `n` JSON lines keyed `doc-N`.
fn lines(n: usize) -> String {
    (0..n)
        .map(|i| {
            format!("{{\"id\": \"doc-{i}\", \"text\": \"document {i} of the signal test\"}}\n")
        })
        .collect()
}

/// Starts `mhdb add` on a pipe, writes enough lines for several commits without closing the
/// pipe, waits for the first commit line, sends `signal`; returns the exit code, stderr and
/// the last commit line's total.
fn stopped_by(
    signal: &str,
) -> (
    Option<i32>,
    String,
    u64,
    std::path::PathBuf,
    tempfile::TempDir,
) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    ok(&["create", s(&db)]);
    let mut child = mhdb(&["add", s(&db), "-", "--json", "--commit-every", "1000"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    // Three chunks of the pipeline (4,096 lines each): the first is read, signed and committed
    // while the pipe stays open.
    stdin.write_all(lines(3 * 4096).as_bytes()).unwrap();
    stdin.flush().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    stdout.read_line(&mut first).unwrap();
    assert!(first.starts_with("{\"committed\":"), "{first:?}");
    let pid = child.id().to_string();
    assert!(
        Command::new("kill")
            .args([signal, &pid])
            .status()
            .unwrap()
            .success()
    );
    let mut last = first;
    for line in stdout.lines() {
        last = line.unwrap();
    }
    let out = child.wait_with_output().unwrap();
    drop(stdin);
    let last: serde_json::Value = serde_json::from_str(&last).unwrap();
    let total = last["committed"].as_u64().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    (out.status.code(), stderr, total, db, dir)
}

#[test]
fn sigint_says_how_many_documents_were_committed() {
    let (code, stderr, total, db, _dir) = stopped_by("-INT");
    assert_eq!(code, Some(130), "{stderr}");
    let words = format!("stopped by SIGINT: added {total} documents (through id doc-");
    assert!(stderr.contains(&words), "{stderr}");
    // What was said is committed (a batch being committed at the signal may be too).
    let stored = Db::open_read_only(&db).unwrap().keys().unwrap().len() as u64;
    assert!(
        stored >= total && total >= 1000,
        "{stored} stored, {total} said"
    );
}

#[test]
fn sigterm_says_it_too() {
    let (code, stderr, total, _db, _dir) = stopped_by("-TERM");
    assert_eq!(code, Some(143), "{stderr}");
    let words = format!("stopped by SIGTERM: added {total} documents");
    assert!(stderr.contains(&words), "{stderr}");
}
