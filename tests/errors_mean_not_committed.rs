//! An error from a write means the write did not commit: with the N-th I/O call failing, for
//! every N (writes and syncs; then also maps and directory listings, which loading a new
//! version makes), the state a power loss leaves is exactly the acknowledged writes (batches through
//! the WAL, bulk inserts), never one more that was reported as failed. Once a write's commit
//! point is passed, a failure of the upkeep after it (the flush a full memtable starts, the
//! removal of obsolete files, an automatic compaction) is latched instead of returned: the
//! write succeeds, `Db::write_failure` names the failure, and the next write is refused with
//! `PreviousIo` naming it too. A handle whose WAL write failed refuses to export (its memory
//! may hold the failed batch).

mod common;

use std::path::Path;
use std::sync::Arc;

use mhdb::Error;
use mhdb::db::{Db, Durability, IndexParams, Options, WriteBatch};
use mhdb::storage::sim::{CrashMode, FaultFs, SimFs};

use common::model::{Model, Packer, apply};

fn params() -> IndexParams {
    common::params::word_index(32, 16, 0.5)
}

fn text(seed: u64) -> String {
    (0..20)
        .map(|i| format!("t{}w{i}", (seed + i) % 41))
        .collect::<Vec<_>>()
        .join(" ")
}

/// One step: a batch through the WAL, or a bulk insert.
enum Step {
    Batch(Vec<(String, Option<u64>)>),
    Bulk(Vec<(String, u64)>),
}

/// WAL batches and bulk inserts in turn; the memtable is small enough that batches flush, and
/// bulk inserts (merge factor 2) compact.
fn workload() -> Vec<Step> {
    (0..16u64)
        .map(|i| {
            if i % 2 == 0 {
                let mut ops = vec![(format!("k{}", i % 7), Some(i))];
                if i % 4 == 0 {
                    ops.push((format!("b{}", (i + 3) % 5), None));
                }
                Step::Batch(ops)
            } else {
                Step::Bulk(
                    (0..3)
                        .map(|j| (format!("b{}", (i + j) % 5), i * 10 + j))
                        .collect(),
                )
            }
        })
        .collect()
}

fn models(steps: &[Step]) -> Vec<Model> {
    let packer = Packer::new(&params());
    let mut out = vec![Model::new()];
    let mut cur = Model::new();
    for step in steps {
        match step {
            Step::Batch(ops) => {
                for (k, v) in ops {
                    apply(&mut cur, k, v.map(|seed| packer.text(&text(seed))));
                }
            }
            Step::Bulk(docs) => {
                for (k, seed) in docs {
                    apply(&mut cur, k, Some(packer.text(&text(*seed))));
                }
            }
        }
        out.push(cur.clone());
    }
    out
}

fn opts() -> Options {
    Options {
        durability: Durability::Sync,
        merge_factor: 2,
        auto_compact: true,
        memtable_bytes: 1,
        ..Options::default()
    }
}

/// What a run saw.
struct Run {
    /// Steps that returned success.
    acked: usize,
    /// Whether a step returned an error.
    failed: bool,
    /// Whether an upkeep failure was latched behind a success.
    latched: bool,
}

fn run(fs: Arc<dyn mhdb::storage::vfs::Vfs>, steps: &[Step]) -> Run {
    let mut seen = Run {
        acked: 0,
        failed: false,
        latched: false,
    };
    let Ok(db) = Db::create_with_vfs(fs, Path::new("/db"), params(), opts()) else {
        seen.failed = true;
        return seen;
    };
    for step in steps {
        let result = match step {
            Step::Batch(ops) => {
                let mut b = WriteBatch::new();
                for (k, v) in ops {
                    match v {
                        Some(seed) => b.insert_text(k, text(*seed)),
                        None => b.delete(k),
                    };
                }
                db.write(&b)
            }
            Step::Bulk(docs) => {
                let sigs: Vec<_> = docs
                    .iter()
                    .map(|(k, seed)| (k.clone(), db.sketch_text(&text(*seed)).unwrap()))
                    .collect();
                db.bulk_insert(&sigs)
            }
        };
        match result {
            Ok(()) => {
                seen.acked += 1;
                if let Some(cause) = db.write_failure() {
                    // Latched behind a success: named, and the next write is refused with it.
                    assert!(!cause.is_empty(), "a latched failure without its cause");
                    let mut again = WriteBatch::new();
                    again.insert_text("late", "late write");
                    match db.write(&again) {
                        Err(Error::PreviousIo { cause: refused }) => assert_eq!(refused, cause),
                        other => panic!("write after a latched failure: {other:?}"),
                    }
                    seen.latched = true;
                    return seen;
                }
            }
            Err(e) => {
                assert!(
                    matches!(e, Error::Io { .. } | Error::PreviousIo { .. }),
                    "unexpected error kind: {e}"
                );
                let mut again = WriteBatch::new();
                again.insert_text("late", "late write");
                match db.write(&again) {
                    Err(Error::PreviousIo { cause }) => {
                        assert!(!cause.is_empty(), "a refusal that does not name its cause")
                    }
                    other => panic!("write after an error: {other:?}"),
                }
                // After a failed WAL batch its memory may hold the batch: no durable copy is
                // made of it.
                if matches!(step, Step::Batch(_)) {
                    assert!(
                        matches!(db.export("/copy"), Err(Error::PreviousIo { .. })),
                        "export from a handle whose WAL write failed"
                    );
                }
                seen.failed = true;
                return seen;
            }
        }
    }
    seen
}

/// The state a reopen of `fs` finds.
fn reopened(fs: Arc<dyn mhdb::storage::vfs::Vfs>) -> Option<Model> {
    let db = Db::open_with_vfs(fs, Path::new("/db"), opts(), false).ok()?;
    assert!(db.verify().unwrap().is_ok(), "verify failed after reopen");
    Some(common::stored(&db))
}

#[test]
fn an_error_means_not_committed_and_upkeep_failures_are_latched_not_returned() {
    let steps = workload();
    let models = models(&steps);
    let probe = FaultFs::new(Arc::new(SimFs::new()), 0, 5, false);
    let clean = run(Arc::new(probe.clone()), &steps);
    assert!(!clean.failed && !clean.latched && clean.acked == steps.len());
    let total = probe.io_count();
    let loads_probe = FaultFs::with_loads(Arc::new(SimFs::new()), 0, 12);
    run(Arc::new(loads_probe.clone()), &steps);
    let total_with_loads = loads_probe.io_count();
    let mut latched_runs = 0;
    // Writes and syncs failing with EIO and ENOSPC; then also maps and directory listings
    // failing (ENOMEM), which a new version's loading meets.
    for (errno, loads, calls) in [
        (5, false, total),
        (28, false, total),
        (12, true, total_with_loads),
    ] {
        for n in 1..=calls {
            let sim = Arc::new(SimFs::new());
            let fs = if loads {
                FaultFs::with_loads(sim.clone(), n, errno)
            } else {
                FaultFs::new(sim.clone(), n, errno, false)
            };
            let seen = run(Arc::new(fs), &steps);
            latched_runs += usize::from(seen.latched);
            let what = format!("errno {errno}, failing call {n}");
            let image = Arc::new(sim.crash_image(CrashMode::DurableOnly));
            match reopened(image) {
                // Exactly the acknowledged steps: one reported as failed never committed.
                Some(got) => assert!(
                    got == models[seen.acked],
                    "{what}: after a power loss the state is not that of the {} acknowledged \
                     steps{}",
                    seen.acked,
                    if models.get(seen.acked + 1) == Some(&got) {
                        " but of one more: a step reported as failed had committed"
                    } else {
                        ""
                    }
                ),
                None => assert_eq!(seen.acked, 0, "{what}: reopen failed"),
            }
        }
    }
    // The workload does reach upkeep failures after commits (else the test shows little).
    assert!(
        latched_runs > 0,
        "no failing call fell in the upkeep after a commit"
    );
}
