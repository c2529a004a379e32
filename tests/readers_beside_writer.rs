//! Readers beside a writer, across processes: while a writer process inserts, deletes,
//! flushes and compacts, `mhdb keys`, `query`, `stats` and `export` run in other processes
//! and are never refused, and each answers from one committed state: the set of keys a reader
//! (or an exported copy) holds is the writer's state after some round that was acknowledged
//! between the command's start and its end.
//!
//! The writer is this test binary re-run in a writer role; each round is one atomic batch,
//! acknowledged on stdout after `write` returns.

mod common;

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use mhdb::db::{Db, Durability, IndexParams, Options, WriteBatch};

const CHILD_ENV: &str = "MHDB_READERS_WRITER_DIR";
const ROUNDS: u64 = 300;
const PER_ROUND: u64 = 10;

fn key(round: u64, i: u64) -> String {
    format!("r{round:03}-{i}")
}

fn text(round: u64, i: u64) -> String {
    format!(
        "document {i} of round {round}: {} and then some words of its own, {}",
        "lorem ipsum dolor sit amet ".repeat((i % 3 + 1) as usize),
        round * 7919 + i
    )
}

/// The keys after `rounds` rounds: round r inserts ten keys and deletes half of round r - 3's.
fn model(rounds: u64) -> BTreeSet<String> {
    let mut keys = BTreeSet::new();
    for r in 1..=rounds {
        for i in 0..PER_ROUND {
            keys.insert(key(r, i));
        }
        if r > 3 {
            for i in 0..PER_ROUND / 2 {
                keys.remove(&key(r - 3, i));
            }
        }
    }
    keys
}

fn options() -> Options {
    Options {
        durability: Durability::Sync,
        auto_compact: true,
        merge_factor: 2,
        ..Options::default()
    }
}

/// The writer role: runs only in the child process.
#[test]
#[ignore = "writer role of readers_answer_from_one_committed_state, run by it"]
fn writer_role() {
    let Ok(dir) = std::env::var(CHILD_ENV) else {
        println!("not the child: nothing to do");
        return;
    };
    let db = Db::open(&dir, options()).unwrap();
    let mut out = std::io::stdout();
    for r in 1..=ROUNDS {
        let mut batch = WriteBatch::new();
        for i in 0..PER_ROUND {
            batch.insert_text(key(r, i), text(r, i));
        }
        if r > 3 {
            for i in 0..PER_ROUND / 2 {
                batch.delete(key(r - 3, i));
            }
        }
        db.write(&batch).unwrap();
        writeln!(out, "ack {r}").unwrap();
        out.flush().unwrap();
        // Flushes (new segments, a new WAL file) and compactions (segments replaced and
        // removed) between rounds, so readers meet every kind of change.
        if r % 4 == 0 {
            db.flush().unwrap();
        }
        if r % 15 == 0 {
            db.compact_full().unwrap();
        }
    }
}

fn mhdb(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mhdb"))
        .args(args)
        .output()
        .unwrap()
}

fn keys_of(out: &Output, what: &str) -> BTreeSet<String> {
    assert!(
        out.status.success(),
        "{what} was refused: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone())
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Fails unless `seen` is the state after some round from `from` (acknowledged before the
/// command started) to `to + 1` (the round after the last one acknowledged when it ended may
/// already be committed: a write is visible before the writer prints its acknowledgement).
fn assert_one_state(seen: &BTreeSet<String>, from: u64, to: u64, what: &str) {
    let last = (to + 1).min(ROUNDS);
    assert!(
        (from..=last).any(|r| model(r) == *seen),
        "{what}: {} keys, not the state after any round in {from}..={last}",
        seen.len()
    );
}

#[test]
fn readers_answer_from_one_committed_state() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    drop(Db::create(&dir, IndexParams::default(), options()).unwrap());
    let s = |p: &Path| p.to_str().unwrap().to_owned();

    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "writer_role",
            "--ignored",
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env(CHILD_ENV, &dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let acked = Arc::new(AtomicU64::new(0));
    let reader = {
        let acked = acked.clone();
        let stdout = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let line = line.unwrap();
                // The harness may print its own words on the same line before the first key.
                if let Some(r) = line.rsplit("ack ").next().and_then(|r| r.parse().ok())
                    && line.contains("ack ")
                {
                    acked.store(r, Ordering::SeqCst);
                }
            }
        })
    };

    let mut commands = 0;
    let mut exports = 0;
    loop {
        let done = child.try_wait().unwrap().is_some();
        let from = acked.load(Ordering::SeqCst);
        let keys = mhdb(&["keys", &s(&dir)]);
        let stats = mhdb(&["stats", &s(&dir), "--json"]);
        let probe = key(from.max(1), PER_ROUND - 1);
        let query = mhdb(&[
            "query",
            &s(&dir),
            "--text",
            &text(from.max(1), PER_ROUND - 1),
            "--json",
        ]);
        let export_to = tmp.path().join(format!("export-{exports}"));
        let export = (commands % 3 == 0).then(|| mhdb(&["export", &s(&dir), &s(&export_to)]));
        let to = acked.load(Ordering::SeqCst);
        commands += 1;

        assert_one_state(&keys_of(&keys, "keys"), from, to, "mhdb keys");
        assert!(
            stats.status.success(),
            "stats: {}",
            String::from_utf8_lossy(&stats.stderr)
        );
        assert!(
            query.status.success(),
            "query: {}",
            String::from_utf8_lossy(&query.stderr)
        );
        if from >= 1 {
            // The probe was acknowledged before the query started: it must be found.
            assert!(
                String::from_utf8_lossy(&query.stdout).contains(&probe),
                "query missed {probe}"
            );
        }
        if let Some(export) = export {
            assert!(
                export.status.success(),
                "export: {}",
                String::from_utf8_lossy(&export.stderr)
            );
            let copied = keys_of(&mhdb(&["keys", &s(&export_to)]), "keys of the export");
            assert_one_state(&copied, from, to, "mhdb export");
            exports += 1;
        }
        if done {
            break;
        }
    }
    reader.join().unwrap();
    assert!(child.wait().unwrap().success(), "the writer failed");
    assert_eq!(acked.load(Ordering::SeqCst), ROUNDS);
    let last = keys_of(&mhdb(&["keys", &s(&dir)]), "final keys");
    assert_eq!(last, model(ROUNDS));
    println!(
        "{commands} rounds of reader commands, {exports} exports beside {ROUNDS} writer rounds"
    );
    assert!(
        commands >= 2 && exports >= 1,
        "{commands} rounds of readers, {exports} exports"
    );
    assert!(common::stored(&Db::open_read_only(&dir).unwrap()).len() == model(ROUNDS).len());
}
