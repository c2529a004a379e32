//! I/O faults at every point of a workload: for every N, the N-th mutating or syncing I/O call
//! fails with EIO or ENOSPC. The failure surfaces as an error (never a panic; only a failed
//! removal of an already obsolete file is tolerated silently, as the next open removes it),
//! every later write is refused until the database is reopened (errors are sticky: a failed
//! fsync is never retried as if it had worked), and reopening — on the live files and on a
//! power-loss image of them — yields exactly the acknowledged batches, plus at most the one
//! that failed, whole or not at all. Reopening for writing also removes the files that failed
//! writes left behind.

mod common;

use std::path::Path;
use std::sync::Arc;

use mhdb::Error;
use mhdb::db::{Db, Durability, IndexParams, Options, WriteBatch};
use mhdb::storage::sim::{CrashMode, FaultFs, SimFs};

use common::model::{Model, Packer, apply};

/// 32 slots over word 2-grams, 16-bit stored signatures, tuned for 0.5.
fn params() -> IndexParams {
    common::params::word_index(32, 16, 0.5)
}

fn text(seed: u64) -> String {
    (0..20)
        .map(|i| format!("t{}w{i}", (seed + i) % 37))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Batches of (key, Some(text seed) | None for delete); every 4th step also flushes and every
/// 7th compacts.
fn workload() -> Vec<Vec<(String, Option<u64>)>> {
    (0..24u64)
        .map(|i| {
            let mut ops = vec![(format!("k{}", i % 9), Some(i))];
            if i % 3 == 2 {
                ops.push((format!("k{}", (i + 4) % 9), None));
            }
            ops
        })
        .collect()
}

fn models(batches: &[Vec<(String, Option<u64>)>]) -> Vec<Model> {
    let packer = Packer::new(&params());
    let mut out = vec![Model::new()];
    let mut cur = Model::new();
    for ops in batches {
        for (k, v) in ops {
            apply(&mut cur, k, v.map(|seed| packer.text(&text(seed))));
        }
        out.push(cur.clone());
    }
    out
}

fn opts() -> Options {
    Options {
        durability: Durability::Sync,
        merge_factor: 2,
        ..Options::default()
    }
}

/// Runs the workload; returns (acknowledged batches, whether some call failed).
fn run(
    fs: Arc<dyn mhdb::storage::vfs::Vfs>,
    batches: &[Vec<(String, Option<u64>)>],
) -> (usize, bool) {
    let db = match Db::create_with_vfs(fs, Path::new("/db"), params(), opts()) {
        Ok(db) => db,
        Err(e) => {
            assert!(matches!(e, Error::Io { .. }), "create failed with {e}");
            return (0, true);
        }
    };
    let mut acked = 0;
    for (i, ops) in batches.iter().enumerate() {
        let mut b = WriteBatch::new();
        for (k, v) in ops {
            match v {
                Some(seed) => b.insert_text(k, text(*seed)),
                None => b.delete(k),
            };
        }
        let mut result = db.write(&b);
        if result.is_ok() {
            acked += 1;
            if i % 4 == 3 {
                result = db.flush();
            }
            if result.is_ok() && i % 7 == 6 {
                result = db.compact();
            }
        }
        if let Err(e) = result {
            assert!(
                matches!(e, Error::Io { .. } | Error::PreviousIo { .. }),
                "unexpected error kind: {e}"
            );
            // Sticky: every later write, commit or flush is refused.
            let mut again = WriteBatch::new();
            again.insert_text("late", "late write");
            assert!(
                db.write(&again).is_err(),
                "write accepted after an I/O error"
            );
            assert!(db.flush().is_err(), "flush accepted after an I/O error");
            assert!(db.commit().is_err(), "commit accepted after an I/O error");
            // Queries still answer.
            let _ = db.contains("k1").unwrap();
            return (acked, true);
        }
    }
    (acked, false)
}

fn check(fs: Arc<dyn mhdb::storage::vfs::Vfs>, models: &[Model], acked: usize, what: &str) {
    let db = match Db::open_with_vfs(fs.clone(), Path::new("/db"), opts(), false) {
        Ok(db) => db,
        Err(e) => {
            assert_eq!(
                acked, 0,
                "{what}: reopen failed after acknowledged writes: {e}"
            );
            return;
        }
    };
    let got = common::stored(&db);
    let ok = (acked..=(acked + 1).min(models.len() - 1)).any(|j| models[j] == got);
    assert!(
        ok,
        "{what}: state after reopen is not the model after {acked} (or {}) batches",
        acked + 1
    );
    assert!(db.verify().unwrap().is_ok(), "{what}: verify failed");
    // A writer's open removes what failed writes left behind: every segment file is one the
    // manifest references, and at most one deletions file is left (the referenced one), so
    // that failures on a full disk do not pile up partial files retry after retry.
    let names = fs.list_dir(Path::new("/db")).unwrap();
    let count = |prefix: &str| names.iter().filter(|n| n.starts_with(prefix)).count();
    assert_eq!(
        count("seg-"),
        db.stats().unwrap().segments,
        "{what}: unreferenced segment files after a writer's open: {names:?}"
    );
    assert!(count("del-") <= 1, "{what}: {names:?}");
}

#[test]
fn every_io_call_can_fail() {
    let batches = workload();
    let models = models(&batches);
    let probe = FaultFs::new(Arc::new(SimFs::new()), 0, 5, false);
    let (acked, failed) = run(Arc::new(probe.clone()), &batches);
    assert!(!failed && acked == batches.len());
    let total = probe.io_count();
    assert!(
        total > 50,
        "workload should make many I/O calls, made {total}"
    );
    for errno in [5, 28] {
        for n in 1..=total {
            let sim = Arc::new(SimFs::new());
            let fs = FaultFs::new(sim.clone(), n, errno, false);
            let (acked, failed) = run(Arc::new(fs), &batches);
            // A failed removal of an obsolete file is harmless (the next open removes the
            // orphan) and is the only kind of failure allowed to go unreported.
            assert!(
                failed || acked == batches.len(),
                "errno {errno}, call {n}: a write was lost without an error"
            );
            let what = format!("errno {errno}, failing call {n}");
            check(sim.clone(), &models, acked, &format!("{what}, live files"));
            let image = Arc::new(sim.crash_image(CrashMode::DurableOnly));
            check(image, &models, acked, &format!("{what}, power loss"));
        }
    }
}
