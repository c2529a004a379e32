//! Queries running concurrently with a writer see consistent snapshots: while one thread
//! writes batches (each batch five identical-text documents of one family), deletes whole
//! families in one batch, and flushes and compacts (automatically and explicitly), reader
//! threads querying a family always see all of its documents or none — never part of a batch
//! — and a deleted family never reappears. No errors, no panics.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use mhdb::db::{Db, Durability, IndexParams, Options, QueryOptions, WriteBatch};
use mhdb::sketch::{ShingleConfig, SketchParams};
use mhdb::storage::simfs::SimFs;

const FAMILIES: u64 = 300;
const PER_BATCH: usize = 5;

fn text(family: u64) -> String {
    (0..30)
        .map(|w| format!("fam{family}x{w}"))
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn readers_see_whole_batches_during_writes_flushes_and_compactions() {
    let fs = Arc::new(SimFs::new());
    let params = IndexParams::for_threshold(
        SketchParams {
            num_perm: 64,
            shingle: ShingleConfig::words(2),
            ..SketchParams::default()
        },
        16,
        0.8,
    )
    .unwrap();
    let opts = Options {
        durability: Durability::None,
        memtable_bytes: 8 << 10, // flush often
        merge_factor: 2,         // merge often
        ..Options::default()
    };
    let db = Arc::new(Db::create_with_vfs(fs, Path::new("/db"), params, opts).unwrap());
    let hasher = db.hasher().clone();
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
