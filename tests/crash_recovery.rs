//! Crash safety of every write path: a deterministic workload of inserts, deletes, upserts,
//! commits, flushes and compactions runs on the simulated filesystem, which is frozen after
//! each of its sync points in turn (nothing written later becomes durable). The crash image is
//! reopened and must (1) open, (2) equal the model after some prefix of the workload that
//! includes every acknowledged batch (so no acknowledged write is lost and no batch is partly
//! there), and (3) answer queries exactly as a brute-force scan of that model does. The same
//! holds for an index that stores shingle sets, whose re-ranked answers must report the exact
//! Jaccard of the recovered documents' texts.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use mhdb::db::{Db, Durability, IndexParams, Options, QueryOptions, WriteBatch};
use mhdb::sketch::Signature;
use mhdb::storage::sim::{CrashMode, SimFs};

use common::model::{Model, Packer, apply, estimate};
use common::rng::XorShift64;

#[derive(Clone, Debug)]
enum Step {
    Write(Vec<(String, Option<u64>)>), // key → Some(text seed) insert/upsert, None delete
    Bulk(Vec<(String, u64)>),          // bulk_insert: key → text seed
    Commit,
    Flush,
    Compact,
}

/// 32 slots over word 2-grams, 16-bit stored signatures, tuned for 0.5; signature seed 7;
/// with stored shingle sets or not.
fn params(sets: bool) -> IndexParams {
    let mut p = common::params::word_index(32, 16, 0.5);
    p.sketch.seed = 7;
    if sets {
        p = p.with_stored_sets().unwrap();
    }
    p
}

fn text(seed: u64) -> String {
    // Families of near-duplicates: seed / 4 picks the family.
    let family = seed / 4;
    let mut words: Vec<String> = (0..30).map(|i| format!("f{family}w{i}")).collect();
    words[(seed % 4) as usize * 3] = format!("variant{seed}");
    words.join(" ")
}

fn workload() -> Vec<Step> {
    let mut steps = Vec::new();
    let mut rng = XorShift64::new(0x2545_F491_4F6C_DD1D);
    let mut rnd = |n: u64| rng.below(n);
    for i in 0..36u64 {
        let mut ops = Vec::new();
        for _ in 0..=rnd(3) {
            let key = format!("k{}", rnd(14));
            if rnd(5) == 0 {
                ops.push((key, None));
            } else {
                ops.push((key, Some(rnd(40))));
            }
        }
        steps.push(Step::Write(ops));
        if i % 11 == 6 {
            let bulk = (0..=rnd(4))
                .map(|_| (format!("k{}", rnd(14)), rnd(40)))
                .collect();
            steps.push(Step::Bulk(bulk));
        }
        match i % 9 {
            3 => steps.push(Step::Commit),
            5 => steps.push(Step::Flush),
            8 => steps.push(Step::Compact),
            _ => {}
        }
    }
    steps
}

/// Model states after each prefix of the workload's batches.
fn prefix_models(steps: &[Step], db_params: &IndexParams) -> Vec<Model> {
    let packer = Packer::new(db_params);
    let mut models = vec![Model::new()];
    let mut cur = Model::new();
    for step in steps {
        if let Step::Bulk(docs) = step {
            for (key, seed) in docs {
                cur.insert(key.clone(), packer.text(&text(*seed)));
            }
            models.push(cur.clone());
        }
        if let Step::Write(ops) = step {
            for (key, val) in ops {
                apply(&mut cur, key, val.map(|seed| packer.text(&text(seed))));
            }
            models.push(cur.clone());
        }
    }
    models
}

/// Runs the workload; returns, per batch, the sync count when it was acknowledged (None if it
/// never was).
fn run(fs: Arc<SimFs>, steps: &[Step], durability: Durability, sets: bool) -> Vec<Option<u64>> {
    let dir = Path::new("/db");
    let opts = Options {
        durability,
        merge_factor: 2,
        memtable_bytes: 1 << 30,
        ..Options::default()
    };
    let mut acks = Vec::new();
    let Ok(db) = Db::create_with_vfs(fs.clone(), dir, params(sets), opts) else {
        return acks;
    };
    // Batches written since the last durability point (for Durability::None).
    let mut unacked: Vec<usize> = Vec::new();
    for step in steps {
        match step {
            Step::Write(ops) => {
                let mut b = WriteBatch::new();
                for (key, val) in ops {
                    match val {
                        Some(seed) => b.insert_text(key, text(*seed)),
                        None => b.delete(key),
                    };
                }
                let ok = db.write(&b).is_ok();
                acks.push(None);
                let idx = acks.len() - 1;
                if ok && durability == Durability::Sync {
                    acks[idx] = Some(fs.sync_count());
                } else if ok {
                    unacked.push(idx);
                }
            }
            Step::Bulk(docs) => {
                let docs: Vec<(String, Signature)> = docs
                    .iter()
                    .map(|(k, seed)| (k.clone(), db.sketch_text(&text(*seed)).unwrap()))
                    .collect();
                let ok = db.bulk_insert(&docs).is_ok();
                // A bulk insert is durable when it returns, and makes earlier writes durable.
                let now = fs.sync_count();
                if ok {
                    for i in unacked.drain(..) {
                        acks[i] = Some(now);
                    }
                }
                acks.push(ok.then_some(now));
            }
            Step::Commit | Step::Flush | Step::Compact => {
                let r = match step {
                    Step::Commit => db.commit(),
                    Step::Flush => db.flush(),
                    _ => db.compact(),
                };
                if r.is_ok() {
                    let now = fs.sync_count();
                    for i in unacked.drain(..) {
                        acks[i] = Some(now);
                    }
                }
            }
        }
    }
    acks
}

fn check_image(image: Arc<SimFs>, models: &[Model], must_have: usize, what: &str, sets: bool) {
    let db = match Db::open_with_vfs(image, "/db", Options::default(), false) {
        Ok(db) => db,
        Err(e) => {
            // Before CURRENT is durable the database does not exist yet; that is only
            // acceptable if nothing was acknowledged.
            assert_eq!(
                must_have, 0,
                "{what}: open failed after acknowledged writes: {e}"
            );
            return;
        }
    };
    let state = common::stored(&db);
    let matching: Vec<usize> = (must_have..models.len())
        .filter(|&j| models[j] == state)
        .collect();
    assert!(
        !matching.is_empty(),
        "{what}: recovered state ({} keys) is not the model after any prefix ≥ {must_have}",
        state.len()
    );
    // Queries agree with brute force over the recovered model.
    let model = &models[matching[0]];
    let p = params(sets);
    let packer = Packer::new(&p);
    if sets {
        check_exact_answers(&db, model, &packer, what);
    }
    for seed in [0u64, 5, 13, 22, 39] {
        let sig: Signature = packer.hasher().sketch_text(&text(seed));
        let packed = packer.pack(&sig);
        let got = db.query(&sig, &QueryOptions::default()).unwrap();
        let got: BTreeMap<String, f64> = got
            .matches
            .into_iter()
            .map(|m| (String::from_utf8(m.key).unwrap(), m.similarity))
            .collect();
        for (key, stored) in model {
            let j = estimate(&p, &packed, stored);
            if let Some(g) = got.get(key) {
                assert!((g - j).abs() < 1e-12, "{what}: {key} estimate {g} vs {j}");
            } else if j >= 0.999 {
                // LSH may miss a true match only if no band collides; identical signatures
                // always collide.
                panic!("{what}: query {seed} missed identical document {key}");
            }
        }
        for key in got.keys() {
            assert!(
                model.contains_key(key),
                "{what}: query returned deleted/unknown {key}"
            );
        }
    }
    // Recovery may have cut a torn record the crash left in the WAL: kept aside and reported
    // (a torn write cannot be told from damage), never anything else; and only where unsynced
    // writes survived in part.
    let report = db.verify().unwrap();
    for problem in &report.problems {
        assert!(
            what.contains("(torn)") && problem.to_string().contains(".torn-"),
            "{what}: verify failed: {problem}"
        );
    }
    // Each cut this recovery made is reported; so is one an earlier, interrupted recovery
    // made (its kept bytes stay until a person removes them).
    assert!(db.cut_tails().len() <= report.problems.len(), "{what}");
    if !what.contains("in recovery") {
        assert_eq!(db.cut_tails().len(), report.problems.len(), "{what}");
    }
}

/// Re-ranked answers by text report, for each recovered document, the exact Jaccard of the
/// query's text and the text the model says it holds (found from its stored signature).
fn check_exact_answers(db: &Db, model: &Model, packer: &Packer, what: &str) {
    let set_of = |seed: u64| {
        let hashes = packer.hasher().shingle_hashes(&text(seed));
        mhdb::sketch::ShingleSet::from_hashes(hashes)
    };
    let seed_of: BTreeMap<Vec<u8>, u64> = (0..40u64)
        .map(|seed| (packer.pack(&packer.hasher().sketch_text(&text(seed))), seed))
        .collect();
    for q in [0u64, 5, 13, 22, 39] {
        let got = db.query_text(&text(q), &QueryOptions::default()).unwrap();
        assert!(got.stats.exact, "{what}: not re-ranked");
        for m in got.matches.iter().filter(|m| m.exact) {
            let key = String::from_utf8(m.key.clone()).unwrap();
            let stored = model
                .get(&key)
                .unwrap_or_else(|| panic!("{what}: unknown {key}"));
            let seed = seed_of[stored];
            let want = set_of(q).jaccard(&set_of(seed));
            assert!(
                (m.similarity - want).abs() < 1e-12,
                "{what}: {key} exact {} vs {want}",
                m.similarity
            );
        }
    }
}

fn crash_at_every_sync_point(durability: Durability, sets: bool) {
    let steps = workload();
    let models = prefix_models(&steps, &params(sets));
    let probe = Arc::new(SimFs::new());
    let full = run(probe.clone(), &steps, durability, sets);
    assert!(
        full.iter().all(Option::is_some),
        "workload must succeed without crashes"
    );
    let total = probe.sync_count();
    assert!(
        total > 20,
        "workload should have many sync points, has {total}"
    );
    for n in 0..=total {
        let fs = Arc::new(SimFs::new());
        fs.freeze_after_syncs(n);
        let acks = run(fs.clone(), &steps, durability, sets);
        let must_have = acks
            .iter()
            .take_while(|a| a.is_some_and(|c| c <= n))
            .count();
        for (mode, name) in [
            (CrashMode::DurableOnly, "durable"),
            (CrashMode::TornUnsynced { seed: n }, "torn"),
        ] {
            let image = Arc::new(fs.crash_image(mode));
            check_image(
                image,
                &models,
                must_have,
                &format!("{durability:?} crash after sync {n} ({name})"),
                sets,
            );
        }
    }
}

#[test]
fn crash_at_every_sync_point_sync_durability() {
    crash_at_every_sync_point(Durability::Sync, false);
}

#[test]
fn crash_at_every_sync_point_bulk_durability() {
    crash_at_every_sync_point(Durability::None, false);
}

#[test]
fn crash_at_every_sync_point_with_stored_sets() {
    crash_at_every_sync_point(Durability::Sync, true);
}

#[test]
fn recovery_is_idempotent() {
    // Crash, recover, crash again right after recovery: still the same state.
    let steps = workload();
    let models = prefix_models(&steps, &params(false));
    let fs = Arc::new(SimFs::new());
    let _ = run(fs.clone(), &steps, Durability::Sync, false);
    let image = Arc::new(fs.crash_image(CrashMode::DurableOnly));
    {
        let db = Db::open_with_vfs(image.clone(), "/db", Options::default(), false).unwrap();
        assert_eq!(common::stored(&db), *models.last().unwrap());
    }
    let again = Arc::new(image.crash_image(CrashMode::DurableOnly));
    check_image(again, &models, models.len() - 1, "second recovery", false);
}

/// Recovery writes too: it cuts torn tails (keeping them aside), seals the WAL files it
/// replays and starts a new one. A crash at any of its own sync points, after a crash at
/// several points of the workload, leaves a database that recovers again to a state with
/// every acknowledged write.
#[test]
fn a_crash_during_recovery_recovers_again() {
    let steps = workload();
    let models = prefix_models(&steps, &params(false));
    let probe = Arc::new(SimFs::new());
    run(probe.clone(), &steps, Durability::Sync, false);
    let total = probe.sync_count();
    for n in [total / 4, total / 2, 3 * total / 4, total - 1] {
        let fs = Arc::new(SimFs::new());
        fs.freeze_after_syncs(n);
        let acks = run(fs.clone(), &steps, Durability::Sync, false);
        let must_have = acks
            .iter()
            .take_while(|a| a.is_some_and(|c| c <= n))
            .count();
        let image = fs.crash_image(CrashMode::TornUnsynced { seed: n });
        let counting = Arc::new(image.crash_image(CrashMode::DurableOnly));
        let before = counting.sync_count();
        drop(Db::open_with_vfs(counting.clone(), "/db", Options::default(), false).unwrap());
        let recovery_syncs = counting.sync_count() - before;
        assert!(recovery_syncs > 0, "recovery after sync {n} wrote nothing");
        for k in 0..=recovery_syncs {
            let again = Arc::new(image.crash_image(CrashMode::DurableOnly));
            again.freeze_after_syncs(again.sync_count() + k);
            drop(Db::open_with_vfs(
                again.clone(),
                "/db",
                Options::default(),
                false,
            ));
            for (mode, name) in [
                (CrashMode::DurableOnly, "durable"),
                (CrashMode::TornUnsynced { seed: k }, "torn"),
            ] {
                check_image(
                    Arc::new(again.crash_image(mode)),
                    &models,
                    must_have,
                    &format!(
                        "crash after sync {n} (torn), then in recovery after its sync {k} ({name})"
                    ),
                    false,
                );
            }
        }
    }
}
