//! The guarantees of a MinHash index, held by a SimHash-pigeonhole index (kind 2) too:
//!
//! - pigeonhole recall: every stored fingerprint within the maximum Hamming distance h of a
//!   query is found, whether in the in-memory table or in segments, before and after
//!   compaction, and nothing farther is returned (property test, no bucket cap);
//! - crash safety: a crash at every sync point of a workload of writes, flushes and
//!   compactions recovers to a prefix of the workload holding every acknowledged write, and
//!   queries answer exactly as a brute-force Hamming scan of that prefix;
//! - corruption: a flipped byte of a stored fingerprint is `Error::Corruption` (exit 3 from
//!   `mhdb verify`), never a wrong answer;
//! - concurrency: readers beside a writer always find what was acknowledged before they
//!   asked;
//! - the CLI: every command on a SimHash index, and clear errors for the wrong kind.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use mhdb::Error;
use mhdb::db::{Db, Durability, IndexParams, Metric, Options, QueryOptions, WriteBatch};
use mhdb::sketch::{SimHash, SimParams, SimWeighting, cosine_from_hamming};
use mhdb::storage::sim::{CrashMode, SimFs};
use proptest::prelude::*;

use common::cli::{json_lines, ok, run, s, write_corpus};
use common::rng::SplitMix64;

fn params(max_hamming: u32) -> IndexParams {
    IndexParams::simhash(SimParams {
        max_hamming,
        ..SimParams::default()
    })
    .unwrap()
}

/// Keys with their distance to `q`, of every document in `model` within `h` bits, sorted.
fn brute_force(model: &BTreeMap<String, SimHash>, q: SimHash, h: u32) -> Vec<(String, u32)> {
    let mut out: Vec<(String, u32)> = model
        .iter()
        .map(|(k, fp)| (k.clone(), fp.hamming(q)))
        .filter(|&(_, d)| d <= h)
        .collect();
    out.sort();
    out
}

/// The keys and distances a query returned, sorted by key; checks each reported cosine.
fn answer(db: &Db, q: SimHash, opts: &QueryOptions) -> Vec<(String, u32)> {
    let r = db.query_simhash(q, opts).unwrap();
    // Nearest first.
    assert!(
        r.matches.windows(2).all(|w| w[0].distance <= w[1].distance),
        "matches are not nearest first"
    );
    let mut out: Vec<(String, u32)> = r
        .matches
        .into_iter()
        .map(|m| {
            let d = m.distance.expect("a SimHash match has a distance");
            assert_eq!(m.cosine, Some(cosine_from_hamming(d)));
            assert_eq!(
                (m.metric, m.similarity),
                (Metric::Cosine, cosine_from_hamming(d))
            );
            (String::from_utf8(m.key).unwrap(), d)
        })
        .collect();
    out.sort();
    out
}

/// `base` with `flips` distinct bits flipped, chosen by `rng`.
fn flip_bits(base: u64, flips: u32, rng: &mut SplitMix64) -> u64 {
    let mut fp = base;
    let mut flipped = 0u64;
    while flipped.count_ones() < flips {
        flipped |= 1 << rng.below(64);
    }
    fp ^= flipped;
    fp
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Pigeonhole: with no bucket cap, a query returns exactly the stored fingerprints within
    /// h bits (and within a smaller distance when its threshold asks), from the in-memory
    /// table, from several segments and after compaction.
    #[test]
    fn every_document_within_h_bits_is_found(seed in any::<u64>(), h in 0u32..=6) {
        let mut rng = SplitMix64(seed);
        let dir = tempfile::tempdir().unwrap();
        let mut p = params(h);
        p.bucket_cap = None;
        let db = Db::create(dir.path().join("db"), p, Options {
            durability: Durability::None,
            auto_compact: false,
            ..Options::default()
        }).unwrap();
        // A few centers with documents at every distance up to h + 3 around them, so that
        // many share blocks without being within h; plus unrelated documents.
        let centers: Vec<u64> = (0..4).map(|_| rng.next_u64() | 1).collect();
        let mut model = BTreeMap::new();
        let mut n = 0;
        for round in 0..3 {
            for &c in &centers {
                for d in 0..=h + 3 {
                    let fp = SimHash(flip_bits(c, d, &mut rng));
                    if fp.bits() == 0 {
                        continue;
                    }
                    let key = format!("d{n}");
                    n += 1;
                    db.insert_simhash(&key, fp).unwrap();
                    model.insert(key, fp);
                }
            }
            for _ in 0..20 {
                let key = format!("d{n}");
                n += 1;
                let fp = SimHash(rng.next_u64() | 1);
                db.insert_simhash(&key, fp).unwrap();
                model.insert(key, fp);
            }
            if round < 2 {
                db.flush().unwrap();
            }
        }
        for phase in ["segments and memtable", "compacted"] {
            if phase == "compacted" {
                db.compact().unwrap();
            }
            for &c in &centers {
                for d in 0..=h + 1 {
                    let q = SimHash(flip_bits(c, d, &mut rng));
                    prop_assert_eq!(
                        answer(&db, q, &QueryOptions::default()),
                        brute_force(&model, q, h),
                        "{}: query at {} bits from a center", phase, d
                    );
                    for within in 0..h {
                        let opts = QueryOptions {
                            threshold: Some(cosine_from_hamming(within)),
                            limit: None,
                            ..QueryOptions::default()
                        };
                        prop_assert_eq!(answer(&db, q, &opts), brute_force(&model, q, within));
                    }
                }
            }
        }
    }
}

/// Families of near-duplicate texts (one word changed per member).
/// Top-k in a SimHash index: the k nearest of the documents within `max_hamming` (the ones
/// its blocks can find), nearest first, ties by key; with a limit too, the smaller of the two.
#[test]
fn top_k_returns_the_nearest_within_reach() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::create(dir.path().join("db"), params(4), Options::default()).unwrap();
    let center = 0x9E37_79B9_7F4A_7C15u64;
    let mut rng = SplitMix64(7);
    let mut model = BTreeMap::new();
    for d in 0..=6u32 {
        for copy in 0..2 {
            let key = format!("d{d}-{copy}");
            let fp = SimHash(flip_bits(center, d, &mut rng));
            db.insert_simhash(&key, fp).unwrap();
            model.insert(key, fp);
        }
    }
    let q = SimHash(center);
    let nearest = |n: usize| {
        let mut all: Vec<(u32, String)> = brute_force(&model, q, 4)
            .into_iter()
            .map(|(k, d)| (d, k))
            .collect();
        all.sort();
        let mut kept: Vec<(String, u32)> = all.into_iter().take(n).map(|(d, k)| (k, d)).collect();
        kept.sort();
        kept
    };
    for k in [0, 1, 3, 5, 10, 20] {
        let top = QueryOptions {
            top: Some(k),
            ..QueryOptions::default()
        };
        assert_eq!(answer(&db, q, &top), nearest(k), "top {k}");
        let both = QueryOptions {
            limit: Some(2),
            ..top
        };
        assert_eq!(answer(&db, q, &both), nearest(k.min(2)), "top {k}, limit 2");
    }
}

/// Dedup in a SimHash index reports each pair's similarity as the cosine estimate of its
/// Hamming distance, and says so.
#[test]
fn dedup_pairs_carry_the_cosine_metric() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::create(dir.path().join("db"), params(4), Options::default()).unwrap();
    let center = 0x9E37_79B9_7F4A_7C15u64;
    let mut rng = SplitMix64(11);
    for d in 0..=3u32 {
        db.insert_simhash(format!("d{d}"), SimHash(flip_bits(center, d, &mut rng)))
            .unwrap();
    }
    let mut pairs = Vec::new();
    db.dedup_pairs(
        0.5,
        |p| {
            pairs.push(p);
            Ok(())
        },
        |_, _| {},
    )
    .unwrap();
    assert!(!pairs.is_empty());
    for p in &pairs {
        let d = p.distance.expect("a SimHash pair has a distance");
        assert_eq!(p.metric, Metric::Cosine);
        assert_eq!(p.similarity, cosine_from_hamming(d));
        assert_eq!((p.estimate, p.cosine), (p.similarity, Some(p.similarity)));
    }
}

fn text(seed: u64) -> String {
    let family = seed / 4;
    let mut words: Vec<String> = (0..40).map(|i| format!("f{family}w{i}")).collect();
    words[(seed % 4) as usize * 5] = format!("variant{seed}");
    words.join(" ")
}

#[derive(Clone, Debug)]
enum Step {
    Write(Vec<(String, Option<u64>)>),
    Flush,
    Compact,
}

fn workload() -> Vec<Step> {
    let mut rng = SplitMix64(0x5EED_51A4);
    let mut steps = Vec::new();
    for i in 0..30u64 {
        let ops = (0..=rng.below(3))
            .map(|_| {
                let key = format!("k{}", rng.below(12));
                (key, (rng.below(5) != 0).then(|| rng.below(32)))
            })
            .collect();
        steps.push(Step::Write(ops));
        match i % 8 {
            4 => steps.push(Step::Flush),
            7 => steps.push(Step::Compact),
            _ => {}
        }
    }
    steps
}

/// The fingerprint the index stores for text `seed`.
fn fingerprint(p: &IndexParams, seed: u64) -> SimHash {
    mhdb::sketch::SimHasher::new(p.sim_params().unwrap())
        .unwrap()
        .sketch_text(&text(seed))
}

/// The model after each prefix of the workload's batches.
fn prefix_models(steps: &[Step], p: &IndexParams) -> Vec<BTreeMap<String, SimHash>> {
    let mut models = vec![BTreeMap::new()];
    let mut cur = BTreeMap::new();
    for step in steps {
        if let Step::Write(ops) = step {
            for (key, val) in ops {
                match val {
                    Some(seed) => cur.insert(key.clone(), fingerprint(p, *seed)),
                    None => cur.remove(key),
                };
            }
            models.push(cur.clone());
        }
    }
    models
}

/// Runs the workload; per batch, the sync count when it was acknowledged.
fn run_workload(fs: Arc<SimFs>, steps: &[Step]) -> Vec<Option<u64>> {
    let opts = Options {
        merge_factor: 2,
        memtable_bytes: 1 << 30,
        ..Options::default()
    };
    let mut acks = Vec::new();
    let Ok(db) = Db::create_with_vfs(fs.clone(), "/db", params(3), opts) else {
        return acks;
    };
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
                acks.push(ok.then(|| fs.sync_count()));
            }
            Step::Flush => drop(db.flush()),
            Step::Compact => drop(db.compact()),
        }
    }
    acks
}

/// The live fingerprints of `db`.
fn stored(db: &Db) -> BTreeMap<String, SimHash> {
    common::stored(db)
        .into_iter()
        .map(|(k, packed)| (k, SimHash(u64::from_le_bytes(packed.try_into().unwrap()))))
        .collect()
}

#[test]
fn crash_at_every_sync_point_keeps_every_acknowledged_fingerprint() {
    let steps = workload();
    let p = params(3);
    let models = prefix_models(&steps, &p);
    let probe = Arc::new(SimFs::new());
    assert!(
        run_workload(probe.clone(), &steps)
            .iter()
            .all(Option::is_some)
    );
    let total = probe.sync_count();
    assert!(
        total > 20,
        "the workload should have many sync points ({total})"
    );
    for n in 0..=total {
        let fs = Arc::new(SimFs::new());
        fs.freeze_after_syncs(n);
        let acks = run_workload(fs.clone(), &steps);
        let must_have = acks
            .iter()
            .take_while(|a| a.is_some_and(|c| c <= n))
            .count();
        for (mode, name) in [
            (CrashMode::DurableOnly, "durable"),
            (CrashMode::TornUnsynced { seed: n }, "torn"),
        ] {
            let what = format!("crash after sync {n} ({name})");
            let image = Arc::new(fs.crash_image(mode));
            let db = match Db::open_with_vfs(image, "/db", Options::default(), false) {
                Ok(db) => db,
                Err(e) => {
                    assert_eq!(
                        must_have, 0,
                        "{what}: open failed after acknowledged writes: {e}"
                    );
                    continue;
                }
            };
            assert_eq!(db.params(), &p, "{what}");
            let state = stored(&db);
            let model = (must_have..models.len())
                .map(|j| &models[j])
                .find(|m| **m == state)
                .unwrap_or_else(|| {
                    panic!("{what}: recovered state is not the model after a prefix ≥ {must_have}")
                });
            for seed in [0u64, 5, 13, 22, 31] {
                let q = fingerprint(&p, seed);
                assert_eq!(
                    answer(&db, q, &QueryOptions::default()),
                    brute_force(model, q, 3),
                    "{what}: query {seed}"
                );
            }
            for problem in db.verify().unwrap().problems {
                assert!(
                    name == "torn" && problem.to_string().contains(".torn-"),
                    "{what}: verify failed: {problem}"
                );
            }
        }
    }
}

/// A real index on disk with `n` documents of [`text`], flushed to a segment.
fn disk_index(dir: &Path, n: u64) -> Db {
    let db = Db::create(dir, params(3), Options::default()).unwrap();
    let mut b = WriteBatch::new();
    for i in 0..n {
        b.insert_text(format!("k{i}"), text(i));
    }
    db.write(&b).unwrap();
    db.flush().unwrap();
    db
}

#[test]
fn a_flipped_fingerprint_byte_is_corruption() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    drop(disk_index(&path, 40));
    let seg = std::fs::read_dir(&path)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "seg"))
        .unwrap();
    let mut bytes = std::fs::read(&seg).unwrap();
    // Kind 6: SIGNATURES, 8 bytes (one fingerprint) per document.
    let sigs = common::segment_section(&bytes, 6).unwrap();
    assert_eq!(sigs.len(), 40 * 8);
    bytes[sigs.start + 8 * 7 + 3] ^= 0x10;
    std::fs::write(&seg, bytes).unwrap();

    let db = Db::open_read_only(&path).unwrap();
    let report = db.verify().unwrap();
    assert!(
        report
            .problems
            .iter()
            .any(|p| matches!(p, Error::Corruption { .. }) && p.to_string().contains(".seg")),
        "{:?}",
        report.problems
    );
    // A query whose candidates include the damaged block reports it instead of answering.
    let q = fingerprint(&params(3), 7);
    match db.query_simhash(q, &QueryOptions::default()) {
        Err(Error::Corruption { .. }) => {}
        other => panic!("query over a damaged fingerprint: {other:?}"),
    }
    let out = run(&["verify", s(&path)]);
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn readers_beside_a_writer_find_every_acknowledged_document() {
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(
        Db::create(
            dir.path().join("db"),
            params(3),
            Options {
                memtable_bytes: 4 << 10,
                ..Options::default()
            },
        )
        .unwrap(),
    );
    let p = params(3);
    // Acknowledged so far: readers may only rely on documents below this.
    let acknowledged = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let writer = {
        let (db, acknowledged) = (db.clone(), acknowledged.clone());
        std::thread::spawn(move || {
            for i in 0..300u64 {
                db.insert_text(format!("k{i}"), &text(i)).unwrap();
                acknowledged.store(i + 1, std::sync::atomic::Ordering::SeqCst);
            }
        })
    };
    let readers: Vec<_> =
        (0..2)
            .map(|r| {
                let (db, acknowledged, p) = (db.clone(), acknowledged.clone(), p);
                std::thread::spawn(move || {
                    let mut rng = SplitMix64(r + 11);
                    let mut checked = 0;
                    loop {
                        let done = acknowledged.load(std::sync::atomic::Ordering::SeqCst);
                        if done > 0 {
                            let i = rng.below(done);
                            let r = db
                                .query_simhash(fingerprint(&p, i), &QueryOptions::default())
                                .unwrap();
                            assert!(
                                r.matches.iter().any(|m| m.key == format!("k{i}").as_bytes()
                                    && m.distance == Some(0)),
                                "k{i} acknowledged but not found"
                            );
                            checked += 1;
                        }
                        if done == 300 {
                            return checked;
                        }
                    }
                })
            })
            .collect();
    writer.join().unwrap();
    for r in readers {
        assert!(r.join().unwrap() > 0);
    }
    assert!(
        db.stats().unwrap().segments > 0,
        "the writer should have flushed"
    );
}

#[test]
fn the_wrong_kind_is_refused_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let sim = disk_index(&dir.path().join("sim"), 8);
    let min = Db::create(
        dir.path().join("min"),
        IndexParams::default(),
        Options::default(),
    )
    .unwrap();
    let minhash_sig = min.sketch_text("some text to sign").unwrap();
    let e = sim
        .query(&minhash_sig, &QueryOptions::default())
        .unwrap_err();
    assert!(
        e.to_string()
            .contains("SimHash index takes a 64-bit fingerprint"),
        "{e}"
    );
    let e = sim.insert("x", &minhash_sig).unwrap_err();
    assert!(e.to_string().contains("512-slot"), "{e}");
    let e = min
        .query_simhash(SimHash(1), &QueryOptions::default())
        .unwrap_err();
    assert!(
        matches!(e, Error::ParameterMismatch { name: "kind", .. }),
        "{e}"
    );
    assert!(matches!(
        sim.hasher(),
        Err(Error::ParameterMismatch { name: "kind", .. })
    ));
    let e = min.merge_from(&sim).unwrap_err();
    assert!(
        matches!(e, Error::ParameterMismatch { name: "kind", .. }),
        "{e}"
    );
    let e = sim.merge_from(&min).unwrap_err();
    assert!(
        matches!(e, Error::ParameterMismatch { name: "kind", .. }),
        "{e}"
    );
    // Another maximum distance is another index too, refused naming it.
    let other = Db::create(dir.path().join("h4"), params(4), Options::default()).unwrap();
    let e = other.merge_from(&sim).unwrap_err();
    assert!(
        matches!(
            e,
            Error::ParameterMismatch {
                name: "max_hamming",
                ..
            }
        ),
        "{e}"
    );
}

#[test]
fn a_keyed_simhash_index_needs_its_key_for_text() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let key = mhdb::sketch::SecretKey::from_bytes([7u8; 32]);
    let db = Db::create(
        &path,
        params(3),
        Options {
            key: Some(key.clone()),
            ..Options::default()
        },
    )
    .unwrap();
    db.insert_text("a", &text(1)).unwrap();
    let keyed_fp = db.simhash_text(&text(1)).unwrap();
    assert_ne!(
        keyed_fp,
        fingerprint(&params(3), 1),
        "keyed and unkeyed fingerprints differ"
    );
    drop(db);
    let without = Db::open_read_only(&path).unwrap();
    assert!(
        without
            .query_text(&text(1), &QueryOptions::default())
            .is_err()
    );
    // Fingerprint queries need no key.
    let r = without
        .query_simhash(keyed_fp, &QueryOptions::default())
        .unwrap();
    assert_eq!(r.matches[0].key, b"a");
}

/// Documents for the CLI test: near-duplicate families, and one pair with the same words in
/// another order (same content, different order: tf-cosine 1 under word:1 shingles).
fn cli_docs() -> Vec<(Vec<u8>, String)> {
    let mut docs: Vec<(Vec<u8>, String)> = (0..24)
        .map(|i| (format!("doc-{i}").into_bytes(), text(i)))
        .collect();
    docs.push((b"shuffled".to_vec(), {
        let mut words: Vec<String> = text(0).split(' ').map(String::from).collect();
        words.reverse();
        words.join(" ")
    }));
    docs
}

#[test]
fn every_command_works_on_a_simhash_index() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("idx");
    let corpus = dir.path().join("corpus.jsonl");
    write_corpus(&corpus, &cli_docs());
    let created: serde_json::Value = serde_json::from_str(&ok(&[
        "create",
        s(&db),
        "--kind",
        "simhash",
        "--max-hamming",
        "4",
        "--shingle",
        "word:1",
        "--json",
    ]))
    .unwrap();
    assert_eq!(created["params"]["kind"], "simhash");
    assert_eq!(created["params"]["max_hamming"], 4);
    ok(&["add", s(&db), s(&corpus)]);

    // query: text, JSON, JSONL, a smaller distance.
    let q = text(0);
    let text_out = ok(&["query", s(&db), "--text", &q]);
    let first: Vec<&str> = text_out.lines().next().unwrap().split('\t').collect();
    assert_eq!(first, ["0", "1.0000", "doc-0"], "{text_out}");
    assert!(
        text_out
            .lines()
            .any(|l| l.ends_with("\tshuffled") && l.starts_with("0\t")),
        "{text_out}"
    );
    let answer: serde_json::Value =
        serde_json::from_str(&ok(&["query", s(&db), "--text", &q, "--json"])).unwrap();
    let matches = answer["matches"].as_array().unwrap();
    assert!(matches.iter().all(|m| m.get("jaccard").is_none()));
    for m in matches {
        let d = m["distance"].as_u64().unwrap() as u32;
        assert!(d <= 4);
        assert!((m["cosine"].as_f64().unwrap() - cosine_from_hamming(d)).abs() < 1e-6);
    }
    let queries = dir.path().join("q.jsonl");
    write_corpus(&queries, &cli_docs()[..3]);
    let answers = json_lines(ok(&["query", s(&db), "--jsonl", s(&queries)]).as_bytes());
    assert_eq!(answers.len(), 3);
    assert_eq!(answers[1]["id"], "doc-1");
    assert_eq!(answers[1]["matches"][0]["id"], "doc-1");
    let near = ok(&[
        "query",
        s(&db),
        "--text",
        &q,
        "--max-distance",
        "0",
        "--json",
    ]);
    let near: serde_json::Value = serde_json::from_str(&near).unwrap();
    assert!(
        near["matches"]
            .as_array()
            .unwrap()
            .iter()
            .all(|m| m["distance"] == 0)
    );
    let too_far = run(&["query", s(&db), "--text", &q, "--max-distance", "5"]);
    assert_eq!(too_far.status.code(), Some(2));

    // get, keys, delete.
    let got = json_lines(ok(&["get", s(&db), "doc-3", "--json"]).as_bytes());
    let fp = u64::from_str_radix(got[0]["fingerprint"].as_str().unwrap(), 16).unwrap();
    let reopened = Db::open_read_only(&db).unwrap();
    assert_eq!(reopened.simhash_text(&text(3)).unwrap(), SimHash(fp));
    drop(reopened);
    assert_eq!(ok(&["keys", s(&db)]).lines().count(), 25);
    ok(&["delete", s(&db), "doc-23"]);

    // dedup: pairs carry distance and cosine; clusters and drop.
    let pairs = json_lines(ok(&["dedup", s(&db)]).as_bytes());
    assert!(pairs.iter().any(
        |p| p["distance"] == 0 && [&p["a"], &p["b"]].contains(&&serde_json::json!("shuffled"))
    ));
    assert!(
        pairs
            .iter()
            .all(|p| p["distance"].as_u64().unwrap() <= 4 && p.get("jaccard").is_none())
    );
    let clusters = json_lines(ok(&["dedup", s(&db), "--format", "clusters"]).as_bytes());
    assert!(!clusters.is_empty());
    let drop_keys = ok(&["dedup", s(&db), "--format", "drop"]);
    assert!(!drop_keys.is_empty());

    // stats, verify, compact, export, merge.
    let stats_text = ok(&["stats", s(&db)]);
    assert!(
        stats_text.contains("--kind simhash --max-hamming 4"),
        "{stats_text}"
    );
    let stats: serde_json::Value = serde_json::from_str(&ok(&["stats", s(&db), "--json"])).unwrap();
    assert_eq!(stats["params"]["kind"], "simhash");
    assert_eq!(stats["bands"].as_array().unwrap().len(), 5);
    assert_eq!(stats["live_docs"], 24);
    assert!(ok(&["verify", s(&db)]).starts_with("ok"));
    ok(&["compact", s(&db)]);
    let exported = dir.path().join("exp");
    ok(&["export", s(&db), s(&exported)]);
    let merged = dir.path().join("merged");
    ok(&["merge", s(&merged), s(&exported)]);
    let merged_answer = ok(&["query", s(&merged), "--text", &q]);
    assert_eq!(merged_answer, ok(&["query", s(&db), "--text", &q]));

    // The wrong kind: a MinHash index refuses simhash data and flags, and the reverse.
    let minhash = dir.path().join("min");
    ok(&["create", s(&minhash)]);
    let out = run(&["merge", s(&minhash), s(&db)]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("kind"));
    let out = run(&["query", s(&minhash), "--text", "x", "--max-distance", "2"]);
    assert_eq!(out.status.code(), Some(2));
    let out = run(&[
        "create",
        s(&dir.path().join("bad")),
        "--kind",
        "simhash",
        "--perms",
        "64",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--perms is a MinHash flag"));
    let out = run(&["create", s(&dir.path().join("bad2")), "--max-hamming", "3"]);
    assert_eq!(out.status.code(), Some(2));
    let out = run(&[
        "create",
        s(&dir.path().join("bad3")),
        "--kind",
        "simhash",
        "--max-hamming",
        "16",
    ]);
    assert_eq!(out.status.code(), Some(2));
    // logtf weighting is stored and shown.
    let logtf = dir.path().join("logtf");
    ok(&[
        "create",
        s(&logtf),
        "--kind",
        "simhash",
        "--weighting",
        "logtf",
    ]);
    assert!(ok(&["stats", s(&logtf)]).contains("--weighting logtf"));
    let _ = SimWeighting::LogTf;
}

/// `tools/conformance/reference_reader.py`, written from `format/*.md`, reads a kind-2 index
/// and finds the fingerprints `mhdb get` reports (skipped without python3), in format
/// version 3: the identity in every header and the seeded WAL record checksums.
#[test]
fn the_reference_reader_reads_a_simhash_index() {
    if std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("python3 not found: skipped");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let db = disk_index(&path, 12);
    // Some in the WAL too.
    db.insert_text("wal-doc", &text(40)).unwrap();
    drop(db);
    let read = common::reference_read(&path);
    assert_eq!(read["params"]["index_kind"], "simhash-pigeonhole");
    assert_eq!(read["params"]["max_hamming"], 3);
    let db = Db::open_read_only(&path).unwrap();
    let live = read["live"].as_array().unwrap();
    assert_eq!(live.len(), 13);
    for e in live {
        let key = e["key"].as_str().unwrap();
        let seed = match key {
            "wal-doc" => 40,
            k => k[1..].parse().unwrap(),
        };
        let fp = u64::from_str_radix(e["fingerprint"].as_str().unwrap(), 16).unwrap();
        assert_eq!(SimHash(fp), db.simhash_text(&text(seed)).unwrap(), "{key}");
    }
}
