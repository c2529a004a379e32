//! Insert if novel checks and stores as one step: a document similar at the threshold to a
//! stored one is skipped and names it; a batch is checked item by item against what is stored
//! before each; and threads inserting clusters of near-duplicates at once never both store two
//! of one cluster, whatever the interleaving (the invariant is checked after the fact, so no
//! outcome depends on timing).

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

use common::rng::SplitMix64;
use mhdb::db::{
    Db, Durability, IndexParams, Novelty, NoveltyOptions, Options, QueryOptions, WriteBatch,
};
use mhdb::sketch::SimParams;
use mhdb::storage::sim::{CrashMode, SimFs};

/// Variant `v` of cluster `c`: 200 words, of which variant v ≥ 1 changes word v. Any two
/// variants of a cluster share all but at most four of their 199 word 2-grams (Jaccard ≥
/// 195/203 ≈ 0.96); two clusters share none.
fn variant(c: u64, v: u64) -> String {
    (0..200)
        .map(|w| {
            if v > 0 && w == v * 7 {
                format!("changed{c}x{v}")
            } else {
                format!("c{c}w{w}")
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn open(params: IndexParams, opts: Options) -> Db {
    Db::create_with_vfs(Arc::new(SimFs::new()), Path::new("/db"), params, opts).unwrap()
}

fn minhash() -> Db {
    open(common::params::word_index(64, 16, 0.8), Options::default())
}

fn simhash() -> Db {
    let params = IndexParams::simhash(SimParams {
        shingle: mhdb::sketch::ShingleConfig::words(2),
        max_hamming: 6,
        ..SimParams::default()
    })
    .unwrap();
    open(params, Options::default())
}

fn keys_of(novelty: &Novelty) -> Vec<Vec<u8>> {
    match novelty {
        Novelty::Inserted => Vec::new(),
        Novelty::Duplicate(matches) => matches.iter().map(|m| m.key.clone()).collect(),
    }
}

fn skips_a_near_duplicate_naming_the_stored_one(db: &Db) {
    let opts = NoveltyOptions::default();
    let first = db.insert_text_if_novel("a", &variant(1, 0), &opts).unwrap();
    assert_eq!(first, Novelty::Inserted);
    let again = db.insert_text_if_novel("b", &variant(1, 3), &opts).unwrap();
    assert_eq!(keys_of(&again), vec![b"a".to_vec()]);
    let Novelty::Duplicate(matches) = &again else {
        unreachable!()
    };
    assert!(matches[0].similarity >= db.params().threshold);
    assert!(db.contains("a").unwrap());
    assert!(
        !db.contains("b").unwrap(),
        "a skipped document is not stored"
    );
    let other = db.insert_text_if_novel("c", &variant(2, 0), &opts).unwrap();
    assert_eq!(other, Novelty::Inserted);
    assert_eq!(db.len(), 2);
}

#[test]
fn a_near_duplicate_is_skipped_and_names_the_stored_document() {
    skips_a_near_duplicate_naming_the_stored_one(&minhash());
}

#[test]
fn a_simhash_index_skips_near_duplicates_too() {
    skips_a_near_duplicate_naming_the_stored_one(&simhash());
}

#[test]
fn a_given_threshold_replaces_the_index_one() {
    let db = minhash();
    db.insert_text("a", &variant(1, 0)).unwrap();
    let strict = NoveltyOptions {
        threshold: Some(1.0),
        ..NoveltyOptions::default()
    };
    let outcome = db
        .insert_text_if_novel("b", &variant(1, 3), &strict)
        .unwrap();
    assert_eq!(outcome, Novelty::Inserted, "below 1.0 is no duplicate");
    let bad = NoveltyOptions {
        threshold: Some(1.5),
        ..NoveltyOptions::default()
    };
    assert!(db.insert_text_if_novel("c", &variant(3, 0), &bad).is_err());
    assert!(!db.contains("c").unwrap(), "a refused check stores nothing");
}

#[test]
fn a_batch_checks_each_item_against_the_items_stored_before_it() {
    let db = minhash();
    let mut batch = WriteBatch::new();
    for (key, c, v) in [
        ("x0", 1, 0),
        ("x1", 1, 1),
        ("y0", 2, 0),
        ("x2", 1, 2),
        ("y1", 2, 5),
    ] {
        batch.insert_text(key, variant(c, v));
    }
    let outcomes = db
        .insert_many_if_novel(&batch, &NoveltyOptions::default())
        .unwrap();
    let named: Vec<Vec<Vec<u8>>> = outcomes.iter().map(keys_of).collect();
    assert_eq!(
        named,
        vec![
            vec![],
            vec![b"x0".to_vec()],
            vec![],
            vec![b"x0".to_vec()],
            vec![b"y0".to_vec()],
        ]
    );
    assert_eq!(db.len(), 2);
}

#[test]
fn a_batch_with_a_delete_is_refused_before_anything_is_stored() {
    let db = minhash();
    let mut batch = WriteBatch::new();
    batch.insert_text("a", variant(1, 0)).delete("b");
    let err = db
        .insert_many_if_novel(&batch, &NoveltyOptions::default())
        .unwrap_err();
    assert!(err.to_string().contains("inserts only"), "{err}");
    assert!(db.is_empty());
}

#[test]
fn a_read_only_handle_refuses() {
    let fs = Arc::new(SimFs::new());
    let params = common::params::word_index(64, 16, 0.8);
    drop(Db::create_with_vfs(fs.clone(), Path::new("/db"), params, Options::default()).unwrap());
    let db = Db::open_with_vfs(fs, Path::new("/db"), Options::default(), true).unwrap();
    let outcome = db.insert_text_if_novel("a", &variant(1, 0), &NoveltyOptions::default());
    assert!(outcome.is_err());
}

const CLUSTERS: u64 = 40;
const VARIANTS: u64 = 8;
const THREADS: u64 = 8;

/// Every thread offers every variant of every cluster, each thread in its own shuffled order,
/// with flushes and compactions going on (small in-memory table). Afterwards: exactly one
/// document of each cluster is stored, no stored document finds another at the threshold,
/// and every skip named documents that are stored, of its own cluster.
#[test]
fn concurrent_callers_never_both_store_near_duplicates() {
    let opts = Options {
        durability: Durability::None,
        memtable_bytes: 16 << 10,
        merge_factor: 2,
        ..Options::default()
    };
    let db = open(common::params::word_index(64, 16, 0.8), opts);
    let outcomes: Vec<Vec<(String, u64, Novelty)>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..THREADS)
            .map(|t| {
                let db = &db;
                scope.spawn(move || {
                    let mut items: Vec<(u64, u64)> = (0..CLUSTERS)
                        .flat_map(|c| (0..VARIANTS).map(move |v| (c, v)))
                        .collect();
                    shuffle(&mut items, t);
                    items
                        .into_iter()
                        .map(|(c, v)| {
                            let key = format!("t{t}-c{c}-v{v}");
                            let novelty = db
                                .insert_text_if_novel(
                                    &key,
                                    &variant(c, v),
                                    &NoveltyOptions::default(),
                                )
                                .unwrap();
                            (key, c, novelty)
                        })
                        .collect()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    check_no_two_stored_are_duplicates(&db, &outcomes);
}

fn check_no_two_stored_are_duplicates(db: &Db, outcomes: &[Vec<(String, u64, Novelty)>]) {
    let stored: BTreeSet<Vec<u8>> = db.keys().unwrap().into_iter().collect();
    let cluster_of = |key: &[u8]| -> u64 {
        let key = std::str::from_utf8(key).unwrap();
        key.split('-').nth(1).unwrap()[1..].parse().unwrap()
    };
    let mut per_cluster: BTreeMap<u64, usize> = BTreeMap::new();
    for key in &stored {
        *per_cluster.entry(cluster_of(key)).or_default() += 1;
    }
    assert_eq!(per_cluster.len() as u64, CLUSTERS);
    assert!(per_cluster.values().all(|&n| n == 1), "{per_cluster:?}");
    let mut inserted = 0;
    for (key, c, novelty) in outcomes.iter().flatten() {
        match novelty {
            Novelty::Inserted => {
                inserted += 1;
                assert!(stored.contains(key.as_bytes()), "{key} was acknowledged");
            }
            Novelty::Duplicate(matches) => {
                assert!(!stored.contains(key.as_bytes()));
                assert!(!matches.is_empty());
                for m in matches {
                    assert!(stored.contains(&m.key), "a skip names a stored document");
                    assert_eq!(cluster_of(&m.key), *c);
                }
            }
        }
    }
    assert_eq!(inserted, stored.len());
    for key in &stored {
        let text = variant(cluster_of(key), variant_of(key));
        let found = db.query_text(&text, &QueryOptions::default()).unwrap();
        let others: Vec<_> = found.matches.iter().filter(|m| &m.key != key).collect();
        assert!(
            others.is_empty(),
            "{:?} finds {others:?}",
            String::from_utf8_lossy(key)
        );
    }
}

fn variant_of(key: &[u8]) -> u64 {
    let key = std::str::from_utf8(key).unwrap();
    key.rsplit('-').next().unwrap()[1..].parse().unwrap()
}

/// A Fisher-Yates shuffle seeded by `seed`.
fn shuffle<T>(items: &mut [T], seed: u64) {
    let mut rng = SplitMix64(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xD1B5);
    for i in (1..items.len()).rev() {
        items.swap(i, rng.below(i as u64 + 1) as usize);
    }
}

/// Single-threaded offers of near-duplicates (5 clusters), with a flush and a compaction on
/// the way; each outcome with the sync count when it was acknowledged.
fn offer_all(fs: Arc<SimFs>) -> Vec<(String, Novelty, u64)> {
    let opts = Options {
        durability: Durability::Sync,
        merge_factor: 2,
        ..Options::default()
    };
    let params = common::params::word_index(64, 16, 0.8);
    let Ok(db) = Db::create_with_vfs(fs.clone(), Path::new("/db"), params, opts) else {
        return Vec::new();
    };
    let mut outcomes = Vec::new();
    for i in 0..24u64 {
        let key = format!("k{i}");
        let Ok(novelty) =
            db.insert_text_if_novel(&key, &variant(i % 5, i / 5), &NoveltyOptions::default())
        else {
            break;
        };
        outcomes.push((key, novelty, fs.sync_count()));
        match i {
            9 | 17 => db.flush().unwrap(),
            20 => db.compact().unwrap(),
            _ => {}
        }
    }
    outcomes
}

/// The simulated filesystem frozen after each of its sync points in turn: the recovered keys
/// are the run's inserts up to some point, and hold every insert acknowledged by then and
/// every document a duplicate acknowledged by then named.
#[test]
fn a_crash_at_any_sync_point_keeps_what_was_acknowledged() {
    let probe = Arc::new(SimFs::new());
    let full = offer_all(probe.clone());
    assert_eq!(full.len(), 24);
    let inserted: Vec<&str> = full
        .iter()
        .filter(|(_, n, _)| n.is_inserted())
        .map(|(k, _, _)| k.as_str())
        .collect();
    assert_eq!(inserted.len(), 5, "one document per cluster");
    let total = probe.sync_count();
    for n in 0..=total {
        let fs = Arc::new(SimFs::new());
        fs.freeze_after_syncs(n);
        let run = offer_all(fs.clone());
        for (mode, name) in [
            (CrashMode::DurableOnly, "durable"),
            (CrashMode::TornUnsynced { seed: n }, "torn"),
        ] {
            let what = format!("crash after sync {n} ({name})");
            let image = Arc::new(fs.crash_image(mode));
            let stored: BTreeSet<String> =
                match Db::open_with_vfs(image, "/db", Options::default(), false) {
                    Ok(db) => db
                        .keys()
                        .unwrap()
                        .into_iter()
                        .map(|k| String::from_utf8(k).unwrap())
                        .collect(),
                    // Before CURRENT is durable there is no database, and nothing acknowledged.
                    Err(e) => {
                        assert!(run.iter().all(|(_, _, c)| *c > n), "{what}: {e}");
                        BTreeSet::new()
                    }
                };
            let prefix: BTreeSet<String> = inserted[..stored.len().min(inserted.len())]
                .iter()
                .map(|k| k.to_string())
                .collect();
            assert_eq!(stored, prefix, "{what}: not a prefix of the inserts");
            for (key, novelty, acked) in run.iter().filter(|(_, _, c)| *c <= n) {
                let named = match novelty {
                    Novelty::Inserted => vec![key.clone()],
                    Novelty::Duplicate(m) => m
                        .iter()
                        .map(|m| String::from_utf8(m.key.clone()).unwrap())
                        .collect(),
                };
                for k in named {
                    assert!(
                        stored.contains(&k),
                        "{what}: {key} acknowledged at {acked} lost {k}"
                    );
                }
            }
        }
    }
}

/// `mhdb add --novel-only --report`: the first document of each cluster is stored, the others
/// are reported in input order with their best match; the summary counts them; `--threshold`
/// and `--report` need `--novel-only`.
#[test]
fn the_cli_adds_only_novel_documents_and_reports_the_others() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    let db = db.to_str().unwrap();
    common::cli::ok(&["create", db, "--shingle", "word:2"]);
    let order = [(1, 0), (1, 2), (2, 0), (1, 4), (3, 0), (2, 3)];
    let lines: String = order
        .iter()
        .map(|&(c, v)| {
            format!(
                "{}\n",
                serde_json::json!({"id": format!("c{c}v{v}"), "text": variant(c, v)})
            )
        })
        .collect();
    let input = tmp.path().join("in.jsonl");
    std::fs::write(&input, lines).unwrap();
    let report = tmp.path().join("dups.jsonl");
    let out = common::cli::run(&[
        "add",
        db,
        input.to_str().unwrap(),
        "--novel-only",
        "--commit-every",
        "2",
        "--report",
        report.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{out:?}");
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains("added 3 documents"), "{stderr}");
    assert!(stderr.contains("3 near-duplicates skipped"), "{stderr}");
    let reported: Vec<serde_json::Value> = std::fs::read_to_string(&report)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let pairs: Vec<(&str, &str)> = reported
        .iter()
        .map(|r| (r["id"].as_str().unwrap(), r["best_match"].as_str().unwrap()))
        .collect();
    assert_eq!(
        pairs,
        [("c1v2", "c1v0"), ("c1v4", "c1v0"), ("c2v3", "c2v0")]
    );
    assert!(
        reported
            .iter()
            .all(|r| r["similarity"].as_f64().unwrap() >= 0.8)
    );
    let keys = common::cli::ok(&["keys", db]);
    let mut keys: Vec<&str> = keys.lines().collect();
    keys.sort_unstable();
    assert_eq!(keys, ["c1v0", "c2v0", "c3v0"]);
    for flags in [&["--threshold", "0.9"][..], &["--report", "x.jsonl"][..]] {
        let mut args = vec!["add", db, input.to_str().unwrap()];
        args.extend_from_slice(flags);
        let out = common::cli::run(&args);
        assert_eq!(out.status.code(), Some(2), "{flags:?} without --novel-only");
    }
}
