//! The database API on real files: create/open/reopen, insert, upsert, delete, get, contains,
//! threshold and top-k queries verified against brute force, flush, compaction, locking,
//! read-only opens and parameter checks.

mod common;

use std::collections::BTreeMap;

use mhdb::Error;
use mhdb::db::{Db, Durability, IndexParams, Metric, Options, QueryOptions, WriteBatch};
use mhdb::sketch::{MinHasher, Signature, SketchParams};

use common::rng::XorShift64;

/// 128 slots of 32 bits with bands over all of them (not the default shape): the tests below
/// compare stored slots and estimates exactly, and size records and batches by 512-byte
/// signatures.
fn params() -> IndexParams {
    IndexParams::for_threshold(SketchParams::default(), 32, 0.8).unwrap()
}

fn words(seed: u64, n: usize) -> Vec<String> {
    let mut rng = XorShift64::scrambled(seed);
    (0..n).map(|_| format!("w{}", rng.below(5000))).collect()
}

/// A base text and a near-duplicate that differs in a few words.
fn text(seed: u64) -> String {
    words(seed, 120).join(" ")
}

fn mutate(t: &str, every: usize) -> String {
    t.split(' ')
        .enumerate()
        .map(|(i, w)| if i % every == 3 { "changed" } else { w })
        .collect::<Vec<_>>()
        .join(" ")
}

fn opts() -> Options {
    Options {
        durability: Durability::Sync,
        ..Options::default()
    }
}

/// A new database at `path` holding `doc0`, `doc1`, … with `text(i)`, written as one batch.
fn db_with_docs(path: &std::path::Path, n: u64) -> Db {
    let db = Db::create(path, params(), opts()).unwrap();
    let mut batch = WriteBatch::new();
    for i in 0..n {
        batch.insert_text(format!("doc{i}"), text(i));
    }
    db.write(&batch).unwrap();
    db
}

#[test]
fn insert_query_delete_upsert_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let db = db_with_docs(&path, 50);
    let hasher = db.hasher().unwrap().clone();
    assert!(db.contains("doc7").unwrap());
    assert!(!db.contains("nope").unwrap());

    let q = hasher.sketch_text(&mutate(&text(7), 40));
    let res = db.query(&q, &QueryOptions::default()).unwrap();
    assert_eq!(
        res.matches.first().map(|m| m.key.as_slice()),
        Some(&b"doc7"[..])
    );
    assert!(res.matches[0].similarity >= 0.8);
    assert_eq!(res.matches[0].metric, Metric::Jaccard);
    assert!(res.stats.candidates >= 1);

    // Upsert: doc7 now holds unrelated text.
    db.insert_text("doc7", &text(999)).unwrap();
    let res = db.query(&q, &QueryOptions::default()).unwrap();
    assert!(res.matches.iter().all(|m| m.key != b"doc7"));
    assert_eq!(db.keys().unwrap().len(), 50);

    assert!(db.delete("doc8").unwrap());
    assert!(!db.delete("doc8").unwrap());
    assert!(!db.contains("doc8").unwrap());

    db.flush().unwrap();
    let stored = db.get("doc9").unwrap().unwrap();
    assert_eq!(stored.slots().unwrap().len(), 128);
    drop(db);

    let db = Db::open(&path, opts()).unwrap();
    assert_eq!(db.keys().unwrap().len(), 49);
    assert!(!db.contains("doc8").unwrap());
    let res = db
        .query(&hasher.sketch_text(&text(999)), &QueryOptions::default())
        .unwrap();
    assert_eq!(res.matches[0].key, b"doc7");
    assert!((res.matches[0].similarity - 1.0).abs() < 1e-9);
}

/// `stats` counts a deleted document (or an upsert's old version) while it still takes a row
/// somewhere, and no longer once compaction has dropped it.
#[test]
fn stats_count_deleted_rows_until_compaction_drops_them() {
    let dir = tempfile::tempdir().unwrap();
    let db = db_with_docs(&dir.path().join("db"), 20);
    db.flush().unwrap();
    for key in ["doc1", "doc2", "doc3"] {
        assert!(db.delete(key).unwrap());
    }
    db.insert_text("doc4", &text(444)).unwrap();
    let counts = |db: &Db| {
        let s = db.stats().unwrap();
        (s.live_docs, s.deleted_docs, s.memtable_docs)
    };
    assert_eq!(counts(&db), (17, 4, 1));
    db.flush().unwrap();
    assert_eq!(counts(&db), (17, 4, 0));
    db.compact_full().unwrap();
    assert_eq!(counts(&db), (17, 0, 0));
    db.insert_text("doc5", &text(555)).unwrap();
    assert_eq!(counts(&db), (17, 1, 1));
}

/// A writer's open removes segment and deletions files no manifest names, whatever their
/// numbers (leftovers of writes cut off by a crash or a full disk), and nothing a reader open
/// beside it uses.
#[test]
fn a_writers_open_removes_leftovers_and_leaves_readers_alone() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let db = db_with_docs(&path, 30);
    let hasher = db.hasher().unwrap().clone();
    db.flush().unwrap();
    drop(db);
    let reader = Db::open_read_only(&path).unwrap();
    let q = hasher.sketch_text(&text(7));
    let answer = |db: &Db| db.query(&q, &QueryOptions::default()).unwrap().matches;
    let before = answer(&reader);
    assert_eq!(before[0].key, b"doc7");
    let leftovers = ["seg-00000000000000ff.seg", "del-0000000000000100.del"];
    for name in leftovers {
        std::fs::write(path.join(name), b"cut off before its commit").unwrap();
    }
    let writer = Db::open(&path, opts()).unwrap();
    for name in leftovers {
        assert!(!path.join(name).exists(), "{name} left behind");
    }
    assert!(writer.verify().unwrap().is_ok());
    assert_eq!(answer(&reader), before);
    writer.insert_text("late", &text(7)).unwrap();
    writer.flush().unwrap();
    reader.refresh().unwrap();
    assert!(answer(&reader).iter().any(|m| m.key == b"late"));
}

#[test]
fn queries_equal_brute_force_across_flushes_and_compaction() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let options = Options {
        durability: Durability::None,
        merge_factor: 2,
        ..Options::default()
    };
    let db = Db::create(&path, params(), options.clone()).unwrap();
    let hasher = db.hasher().unwrap().clone();
    let mut model: BTreeMap<String, Signature> = BTreeMap::new();
    for round in 0..6u64 {
        let mut batch = WriteBatch::new();
        for i in 0..40u64 {
            let id = round * 40 + i;
            // Every third document is a near-duplicate of an earlier one.
            let t = if id % 3 == 0 && id > 0 {
                mutate(&text(id / 3), 25)
            } else {
                text(id)
            };
            let sig = hasher.sketch_text(&t);
            model.insert(format!("k{id}"), sig.clone());
            batch.insert(format!("k{id}"), sig);
        }
        for d in 0..5u64 {
            let key = format!("k{}", round * 37 + d * 3);
            model.remove(&key);
            batch.delete(&key);
        }
        db.write(&batch).unwrap();
        db.flush().unwrap();
    }
    db.compact().unwrap();
    // Brute force over the model: a query must return every live document at or above the
    // threshold that shares a band key with it (the index may not miss one).
    let threshold = db.params().threshold;
    let banding = db.params().banding().unwrap();
    let bands: BTreeMap<&String, Vec<u64>> = model
        .iter()
        .map(|(k, sig)| (k, banding.band_keys(sig.slots()).unwrap()))
        .collect();
    let check = |db: &Db| {
        for (key, sig) in model.iter().step_by(7) {
            let res = db.query(sig, &QueryOptions::default()).unwrap();
            let got: Vec<&[u8]> = res.matches.iter().map(|m| m.key.as_slice()).collect();
            assert!(got.contains(&key.as_bytes()), "{key} must find itself");
            for (other_key, other) in &model {
                let shares_band = bands[key]
                    .iter()
                    .zip(&bands[other_key])
                    .any(|(a, b)| a == b);
                if shares_band && sig.jaccard(other).unwrap() >= threshold {
                    assert!(
                        got.contains(&other_key.as_bytes()),
                        "{key}: brute force finds {other_key}, the query does not"
                    );
                }
            }
            // Every match is live and truly similar (32-bit slots: exact equality estimate).
            for m in &res.matches {
                let k = String::from_utf8(m.key.clone()).unwrap();
                let other = model.get(&k).expect("a match must be a live key");
                let j = sig.jaccard(other).unwrap();
                assert!(
                    (j - m.similarity).abs() < 1e-9,
                    "{k}: {j} vs {}",
                    m.similarity
                );
                assert!(j >= 0.8);
            }
        }
    };
    check(&db);
    assert_eq!(db.keys().unwrap().len(), model.len());
    drop(db);
    let db = Db::open(&path, options).unwrap();
    check(&db);
    let stats = db.stats().unwrap();
    assert_eq!(stats.live_docs as usize, model.len());
    assert!(db.verify().unwrap().is_ok());
}

#[test]
fn top_k_and_threshold_options() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::create(dir.path().join("db"), params(), opts()).unwrap();
    let base = text(1);
    let mut b = WriteBatch::new();
    for (i, every) in [100usize, 30, 12, 6, 4].iter().enumerate() {
        b.insert_text(format!("v{i}"), mutate(&base, *every));
    }
    db.write(&b).unwrap();
    let q = db.hasher().unwrap().sketch_text(&base);
    let all = db
        .query(
            &q,
            &QueryOptions {
                threshold: Some(0.0),
                limit: None,
                ..QueryOptions::default()
            },
        )
        .unwrap();
    assert!(
        all.matches
            .windows(2)
            .all(|w| w[0].similarity >= w[1].similarity)
    );
    let top2 = db
        .query(
            &q,
            &QueryOptions {
                threshold: Some(0.0),
                limit: Some(2),
                ..QueryOptions::default()
            },
        )
        .unwrap();
    assert_eq!(
        top2.matches,
        all.matches[..2.min(all.matches.len())].to_vec()
    );
    assert!(
        db.query(
            &q,
            &QueryOptions {
                threshold: Some(1.5),
                limit: None,
                ..QueryOptions::default()
            }
        )
        .is_err()
    );
}

#[test]
fn second_writer_is_locked_out_and_readers_work_beside_the_writer() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let db = Db::create(&path, params(), opts()).unwrap();
    db.insert_text("a", "hello world, hello everyone").unwrap();
    let err = Db::open(&path, opts()).unwrap_err();
    // The holder is this process (another handle): the error says so, not "another process".
    assert!(
        matches!(
            err,
            Error::Locked {
                holder: mhdb::error::LockHolder::ThisProcess,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(
        err.to_string().contains("this process already has it open"),
        "{err}"
    );
    // Readers open beside the writer and see what it committed, its WAL included.
    let r1 = Db::open_read_only(&path).unwrap();
    let r2 = Db::open_read_only(&path).unwrap();
    assert!(r1.contains("a").unwrap() && r2.contains("a").unwrap());
    assert!(matches!(
        r1.insert_text("b", "x").unwrap_err(),
        Error::ReadOnly
    ));
    // A reader keeps its snapshot until it refreshes, across flushes and compactions.
    db.insert_text("b", "another text entirely, about something else")
        .unwrap();
    db.flush().unwrap();
    db.delete("a").unwrap();
    db.compact_full().unwrap();
    assert!(r1.contains("a").unwrap() && !r1.contains("b").unwrap());
    r1.refresh().unwrap();
    assert!(!r1.contains("a").unwrap() && r1.contains("b").unwrap());
    assert!(
        r2.contains("a").unwrap(),
        "an unrefreshed reader keeps its snapshot"
    );
    // Readers do not hold a writer back.
    drop(db);
    let db = Db::open(&path, opts()).unwrap();
    assert!(db.contains("b").unwrap());
    let err = Db::open(&path, opts()).unwrap_err();
    assert!(matches!(err, Error::Locked { .. }), "{err}");
}

/// Every read of a handle takes its state lock once per step: a read that took it twice
/// would wait, holding the first, behind a refresh waiting for the lock, and both would
/// wait forever (a server following a writer hung this way on `stats`).
#[test]
fn reads_beside_refreshes_of_the_same_handle_never_wait_on_each_other() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    drop(db_with_docs(&path, 40));
    let reader = std::sync::Arc::new(Db::open_read_only(&path).unwrap());
    let reading = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let (done, finished) = std::sync::mpsc::channel();
    // Says a thread ended, by returning or by a panic (which its join then reports).
    struct Ended(std::sync::mpsc::Sender<()>);
    struct Stop(std::sync::Arc<std::sync::atomic::AtomicBool>);
    impl Drop for Stop {
        fn drop(&mut self) {
            self.0.store(false, std::sync::atomic::Ordering::Relaxed);
        }
    }
    impl Drop for Ended {
        fn drop(&mut self) {
            let _ = self.0.send(());
        }
    }
    let refresher = {
        let (reader, reading, done) = (reader.clone(), reading.clone(), done.clone());
        std::thread::spawn(move || {
            let _ended = Ended(done);
            let mut refreshes = 0u64;
            while reading.load(std::sync::atomic::Ordering::Relaxed) || refreshes < 100 {
                reader.refresh().unwrap();
                refreshes += 1;
            }
        })
    };
    let sig = reader.sketch_text(&text(3)).unwrap();
    let answers = std::thread::spawn(move || {
        let _ended = Ended(done);
        // Stops the refresher however this thread ends.
        let _stop = Stop(reading);
        for i in 0..3_000 {
            assert_eq!(reader.stats().unwrap().live_docs, 40);
            if i % 10 == 0 {
                assert_eq!(reader.keys().unwrap().len(), 40);
                assert!(reader.get("doc3").unwrap().is_some());
                assert!(reader.verify().unwrap().problems.is_empty());
                let found = reader.query(&sig, &QueryOptions::default()).unwrap();
                assert_eq!(found.matches[0].key, b"doc3");
            }
        }
    });
    // A deadlock never ends; a generous bound turns it into a failure naming it.
    for _ in 0..2 {
        let ended = finished.recv_timeout(std::time::Duration::from_secs(300));
        assert!(
            ended.is_ok(),
            "reads and refreshes of one handle deadlocked"
        );
    }
    refresher.join().unwrap();
    answers.join().unwrap();
}

#[test]
fn read_only_open_changes_no_byte() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let db = Db::create(&path, params(), opts()).unwrap();
    for i in 0..20u64 {
        db.insert_text(format!("d{i}"), &text(i)).unwrap();
    }
    db.flush().unwrap();
    db.insert_text("unflushed", &text(77)).unwrap();
    drop(db);
    let snapshot = |p: &std::path::Path| {
        let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(p)
            .unwrap()
            .map(|e| e.unwrap())
            .map(|e| {
                (
                    e.file_name().to_string_lossy().into_owned(),
                    std::fs::read(e.path()).unwrap(),
                )
            })
            .collect();
        v.sort();
        v
    };
    let before = snapshot(&path);
    let r = Db::open_read_only(&path).unwrap();
    // Reads answer (from the segment and from the replayed WAL) and still write nothing.
    assert!(r.contains("unflushed").unwrap());
    let res = r.query_text(&text(3), &QueryOptions::default()).unwrap();
    assert_eq!(res.matches[0].key, b"d3");
    assert!((res.matches[0].similarity - 1.0).abs() < 1e-9);
    assert_eq!(r.stats().unwrap().live_docs, 21);
    drop(r);
    assert_eq!(before, snapshot(&path));
}

#[test]
fn bad_inputs_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let db = Db::create(&path, params(), opts()).unwrap();
    // Wrong signature length.
    let other = MinHasher::new(SketchParams {
        num_perm: 64,
        ..SketchParams::default()
    })
    .unwrap();
    let err = db.insert("x", &other.sketch_text("abc")).unwrap_err();
    assert!(err.to_string().contains("slots"), "{err}");
    // Likewise a signature made by hand, in a query and in a bulk insert; the same slots at
    // the database's length are accepted.
    let short = Signature::from_slots(vec![0u64; 127]);
    let err = db.query(&short, &QueryOptions::default()).unwrap_err();
    assert!(err.to_string().contains("slots"), "{err}");
    let err = db.bulk_insert(&[("x", short)]).unwrap_err();
    assert!(err.to_string().contains("slots"), "{err}");
    assert!(!db.contains("x").unwrap());
    db.insert("x", &Signature::from_slots(vec![0u64; 128]))
        .unwrap();
    // Oversized key.
    let err = db.insert_text(vec![b'k'; 70_000], "abc").unwrap_err();
    assert!(err.to_string().contains("key"), "{err}");
    // Creating over an existing database.
    drop(db);
    assert!(Db::create(&path, params(), opts()).is_err());
    // Opening something that is not a database.
    let err = Db::open(dir.path(), opts()).unwrap_err();
    assert!(err.to_string().contains("not an mhdb database"), "{err}");
    // Opening with the wrong expected signature parameters.
    let wrong_seed = Options {
        expect_sketch: Some(SketchParams {
            seed: 42,
            ..SketchParams::default()
        }),
        ..opts()
    };
    let err = Db::open(&path, wrong_seed).unwrap_err();
    assert!(
        matches!(err, Error::ParameterMismatch { name: "seed", .. }),
        "{err}"
    );
    let right = Options {
        expect_sketch: Some(SketchParams::default()),
        ..opts()
    };
    drop(Db::open(&path, right).unwrap());
    // Invalid parameters.
    let p = IndexParams {
        bits: 3,
        ..params()
    };
    assert!(Db::create(dir.path().join("db2"), p, opts()).is_err());
}

#[test]
fn oversized_batch_is_refused_without_effect() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::create(dir.path().join("db"), params(), opts()).unwrap();
    let hasher = db.hasher().unwrap().clone();
    let sig = hasher.sketch_text("some text that is long enough to have shingles");
    let mut b = WriteBatch::new();
    // Each insert logs ~700 bytes: 120k of them exceed one 64 MiB WAL record.
    for i in 0..120_000u32 {
        b.insert(i.to_le_bytes(), sig.clone());
    }
    let err = db.write(&b).unwrap_err();
    assert!(err.to_string().contains("bulk_insert"), "{err}");
    assert_eq!(db.keys().unwrap().len(), 0);
    // The database still accepts writes.
    db.insert_text("ok", "fine").unwrap();
    assert!(db.contains("ok").unwrap());
}

#[test]
fn reopening_without_writes_leaves_no_wal_files_behind() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    drop(Db::create(&path, params(), opts()).unwrap());
    for _ in 0..5 {
        drop(Db::open(&path, opts()).unwrap());
    }
    let wals = std::fs::read_dir(&path)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with("wal-")
        })
        .count();
    assert_eq!(wals, 1);
    let db = Db::open(&path, opts()).unwrap();
    db.insert_text("a", "still works after all that").unwrap();
    drop(db);
    assert!(Db::open(&path, opts()).unwrap().contains("a").unwrap());
}

/// Signature-log records are written a few MiB at a time as they are packed (bulk insert)
/// or copied (flush). Batches spanning many such chunks, with superseded copies and upserts
/// in later chunks, store every signature exactly, and the records' checksums in the
/// manifest match what was written.
#[test]
fn large_bulk_and_flush_batches_store_every_signature() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let bulk_opts = Options {
        durability: Durability::None,
        auto_compact: false,
        ..Options::default()
    };
    let db = Db::create(&path, params(), bulk_opts.clone()).unwrap();
    let k = db.params().sketch.num_perm;
    let sig = |seed: u64| Signature::from_slots(XorShift64::scrambled(seed).next_n(k));
    let mut expected: BTreeMap<String, u64> = BTreeMap::new();
    // 512-byte records: 20,000 of them span three 4 MiB chunks.
    let first: Vec<(String, Signature)> =
        (0..20_000u64).map(|i| (format!("k{i}"), sig(i))).collect();
    db.bulk_insert(&first).unwrap();
    expected.extend((0..20_000u64).map(|i| (format!("k{i}"), i)));
    // A second batch: upserts of stored keys, and keys repeated inside the batch (the last
    // copy wins), all past the first chunk.
    let mut second: Vec<(String, Signature)> = Vec::new();
    for i in 0..20_000u64 {
        let key = if i % 7 == 0 {
            format!("k{}", i * 3 % 20_000)
        } else {
            format!("n{}", i % 15_000)
        };
        let seed = 1_000_000 + i;
        second.push((key.clone(), sig(seed)));
        expected.insert(key, seed);
    }
    db.bulk_insert(&second).unwrap();
    // A flush of a large memtable with deletions in it.
    let mut batch = WriteBatch::new();
    for i in 0..12_000u64 {
        batch.insert(format!("m{i}"), sig(2_000_000 + i));
        expected.insert(format!("m{i}"), 2_000_000 + i);
    }
    for i in (0..12_000u64).step_by(5) {
        batch.delete(format!("m{i}"));
        expected.remove(&format!("m{i}"));
    }
    db.write(&batch).unwrap();
    db.flush().unwrap();
    let check = |db: &Db| {
        assert!(db.verify().unwrap().is_ok());
        assert_eq!(db.keys().unwrap().len(), expected.len());
        for (key, &seed) in &expected {
            let stored = db
                .get(key)
                .unwrap()
                .unwrap_or_else(|| panic!("{key} missing"));
            let want: Vec<u64> = sig(seed).slots().iter().map(|s| s & 0xFFFF_FFFF).collect();
            assert_eq!(stored.slots().unwrap(), want, "{key}");
        }
    };
    check(&db);
    drop(db);
    check(&Db::open(&path, bulk_opts).unwrap());
}

/// A lock held by another process is named by its process id. The holder here is
/// util-linux's `flock` on the database directory, the lock a writer takes first; it says
/// "ready" once it holds it, so no timing is involved.
#[test]
fn a_writer_in_another_process_is_named_by_its_id() {
    use std::io::{BufRead, BufReader};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    drop(Db::create(&path, params(), opts()).unwrap());
    let mut child = std::process::Command::new("flock")
        .args([
            "--exclusive",
            path.to_str().unwrap(),
            "-c",
            "echo ready; read line",
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("util-linux flock");
    let mut ready = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut ready)
        .unwrap();
    assert_eq!(ready, "ready\n");
    let err = Db::open(&path, opts()).unwrap_err();
    drop(child.stdin.take());
    child.wait().unwrap();
    let pid = child.id();
    assert!(
        matches!(
            err,
            Error::Locked {
                holder: mhdb::error::LockHolder::Process(p),
                ..
            } if p == pid
        ),
        "{err:?}"
    );
    assert!(
        err.to_string()
            .contains(&format!("process {pid} has it open")),
        "{err}"
    );
}
