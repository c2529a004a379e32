//! Queries running concurrently with a writer see consistent snapshots: while one thread
//! writes batches (each batch five identical-text documents of one family), deletes whole
//! families in one batch, and flushes and compacts (automatically and explicitly), reader
//! threads querying a family always see all of its documents or none — never part of a batch
//! — and a deleted family never reappears. No errors, no panics. A dedup pass reads the
//! snapshot of its start and does not hold writers back.

mod common;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use mhdb::db::{Db, Durability, IndexParams, Options, QueryOptions, WriteBatch};
use mhdb::storage::sim::SimFs;

const FAMILIES: u64 = 300;
const PER_BATCH: usize = 5;

fn text(family: u64) -> String {
    (0..30)
        .map(|w| format!("fam{family}x{w}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// k = 64, word 2-grams, 16-bit signatures, tuned for 0.8.
fn params() -> IndexParams {
    common::params::word_index(64, 16, 0.8)
}

#[test]
fn readers_see_whole_batches_during_writes_flushes_and_compactions() {
    let fs = Arc::new(SimFs::new());
    let params = params();
    let opts = Options {
        durability: Durability::None,
        memtable_bytes: 8 << 10, // flush often
        merge_factor: 2,         // merge often
        ..Options::default()
    };
    let db = Arc::new(Db::create_with_vfs(fs, Path::new("/db"), params, opts).unwrap());
    let hasher = db.hasher().unwrap().clone();
    let sigs: Vec<_> = (0..FAMILIES)
        .map(|f| hasher.sketch_text(&text(f)))
        .collect();
    // Families written so far, and families deleted (every third, three batches later).
    let written = AtomicU64::new(0);
    let done = AtomicBool::new(false);
    std::thread::scope(|scope| {
        scope.spawn(|| {
            for f in 0..FAMILIES {
                let mut b = WriteBatch::new();
                for i in 0..PER_BATCH {
                    b.insert(format!("f{f}-{i}"), sigs[f as usize].clone());
                }
                db.write(&b).unwrap();
                written.store(f + 1, Ordering::SeqCst);
                if f >= 3 && (f - 3) % 3 == 0 {
                    let mut d = WriteBatch::new();
                    for i in 0..PER_BATCH {
                        d.delete(format!("f{}-{i}", f - 3));
                    }
                    db.write(&d).unwrap();
                }
                match f % 10 {
                    4 => db.flush().unwrap(),
                    9 => db.compact().unwrap(),
                    _ => {}
                }
            }
            db.commit().unwrap();
            done.store(true, Ordering::SeqCst);
        });
        for reader in 0..3u64 {
            let db = db.clone();
            let sigs = &sigs;
            let written = &written;
            let done = &done;
            scope.spawn(move || {
                let mut rounds = 0u64;
                let mut seen_deleted = vec![false; FAMILIES as usize];
                while !done.load(Ordering::SeqCst) || rounds < 50 {
                    rounds += 1;
                    let f = (rounds * 7 + reader * 13) % FAMILIES;
                    let res = db
                        .query(&sigs[f as usize], &QueryOptions::default())
                        .unwrap();
                    let mine = res
                        .matches
                        .iter()
                        .filter(|m| m.key.starts_with(format!("f{f}-").as_bytes()))
                        .count();
                    assert!(
                        mine == 0 || mine == PER_BATCH,
                        "reader {reader}: family {f} partly visible ({mine} of {PER_BATCH})"
                    );
                    let deletable = f.is_multiple_of(3);
                    if deletable && mine == 0 && written.load(Ordering::SeqCst) > f + 3 {
                        seen_deleted[f as usize] = true;
                    }
                    assert!(
                        !(seen_deleted[f as usize] && mine > 0),
                        "reader {reader}: deleted family {f} reappeared"
                    );
                    if rounds > 100_000 {
                        break;
                    }
                }
            });
        }
    });
    // Final state: deleted families gone, the others complete.
    for f in 0..FAMILIES {
        let deleted = f % 3 == 0 && f + 3 < FAMILIES;
        for i in 0..PER_BATCH {
            assert_eq!(
                db.contains(format!("f{f}-{i}")).unwrap(),
                !deleted,
                "f{f}-{i}"
            );
        }
    }
    assert!(db.stats().unwrap().segments >= 1);
    assert!(db.verify().unwrap().is_ok());
}

/// While `dedup_pairs` runs (called back from inside the pass), another
/// thread inserts, deletes, flushes and compacts. Those writes complete while the pass is
/// still running (before, a pass held the state lock and they waited for its end), and the
/// pass reports exactly the pairs of the database as it was when it started.
#[test]
fn dedup_reads_a_snapshot_and_lets_writers_proceed() {
    let fs = Arc::new(SimFs::new());
    let params = params();
    let opts = Options {
        durability: Durability::None,
        ..Options::default()
    };
    let db = Arc::new(Db::create_with_vfs(fs, Path::new("/db"), params, opts).unwrap());
    // Families 0..20 flushed to a segment, 20..30 in the memtable; two documents each.
    for f in 0..30u64 {
        let mut b = WriteBatch::new();
        b.insert_text(format!("f{f}-a"), text(f));
        b.insert_text(format!("f{f}-b"), text(f));
        db.write(&b).unwrap();
        if f == 19 {
            db.flush().unwrap();
        }
    }
    let pairs_before: Vec<(Vec<u8>, Vec<u8>)> = (0..30)
        .map(|f| {
            (
                format!("f{f}-a").into_bytes(),
                format!("f{f}-b").into_bytes(),
            )
        })
        .collect();

    // Writes issued from inside the pass, on another thread: they must finish before the
    // pass does (the pass waits for them, with a generous bound that only a deadlock hits).
    let write_during_pass = |round: u64| {
        let (tx, rx) = std::sync::mpsc::channel();
        let db = db.clone();
        // Detached, so that a writer stuck behind the pass cannot hang the test.
        std::thread::spawn(move || {
            let mut b = WriteBatch::new();
            b.insert_text(format!("new{round}-a"), text(1000 + round));
            b.insert_text(format!("new{round}-b"), text(1000 + round));
            b.delete(format!("f{round}-a"));
            db.write(&b).unwrap();
            db.flush().unwrap();
            db.compact_full().unwrap();
            tx.send(()).unwrap();
        });
        rx.recv_timeout(std::time::Duration::from_secs(120))
            .expect("a write waited for the dedup pass to end");
    };

    let mut found = Vec::new();
    let mut wrote = false;
    db.dedup_pairs(
        0.8,
        |p| {
            if !wrote {
                write_during_pass(0);
                wrote = true;
            }
            let (a, b) = if p.a < p.b { (p.a, p.b) } else { (p.b, p.a) };
            found.push((a, b));
            Ok(())
        },
        |_, _| {},
    )
    .unwrap();
    assert!(wrote);
    found.sort();
    let mut want = pairs_before.clone();
    want.sort();
    assert_eq!(found, want, "the pass saw its starting snapshot");

    // The next pass sees the writes: f0-a deleted, new0 added.
    let mut found = Vec::new();
    db.dedup_pairs(
        0.8,
        |p| {
            found.push(p.a.min(p.b.clone()));
            Ok(())
        },
        |_, _| {},
    )
    .unwrap();
    assert_eq!(found.len(), 30);
    assert!(found.contains(&b"new0-a".to_vec()));
    assert!(!found.contains(&b"f0-a".to_vec()));
}
