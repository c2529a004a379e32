//! An index that stores shingle sets (`--store-sets`, issue 15) decides and reports candidates
//! near the threshold by the exact Jaccard similarity of the documents' shingle sets, not the
//! signature's estimate (those far above it by their estimate, which is then never wrong on
//! this corpus): in memory, after a
//! reopen (WAL replay), a flush, a compaction, an export and a merge; in queries and in dedup.
//! Documents given as bare signatures are refused (there is no set to store), a damaged
//! stored set is corruption (never a wrong similarity), and `estimate_only` answers as an
//! index without sets does.

use std::collections::HashSet;

use mhdb::db::{Db, DedupOptions, IndexParams, Metric, Options, QueryOptions};
use mhdb::sketch::{ShingleConfig, SketchParams};

/// Paragraphs of this repository's own documentation (real prose and tables), and edited
/// copies of them: words dropped or swapped at a few rates, so that pairs fall on both sides
/// of the thresholds.
fn corpus() -> Vec<(String, String)> {
    let mut paragraphs = Vec::new();
    for name in [
        "README.md",
        "format/segment.md",
        "format/wal.md",
        "format/hashing.md",
    ] {
        let text =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/").to_owned() + name)
                .unwrap();
        paragraphs.extend(
            text.split("\n\n")
                .map(str::trim)
                .filter(|p| p.len() > 300)
                .map(str::to_owned),
        );
    }
    paragraphs.truncate(30);
    let mut docs = Vec::new();
    for (i, p) in paragraphs.iter().enumerate() {
        docs.push((format!("p{i}"), p.clone()));
        let words: Vec<&str> = p.split_whitespace().collect();
        for (v, every) in [(1, 9usize), (2, 5), (3, 3)] {
            let edited: Vec<&str> = words
                .iter()
                .enumerate()
                .filter(|(j, _)| (j + v) % every != 0)
                .map(|(_, w)| *w)
                .collect();
            docs.push((format!("p{i}v{v}"), edited.join(" ")));
        }
    }
    docs
}

fn params(threshold: f64) -> IndexParams {
    IndexParams::for_threshold(SketchParams::default(), 32, threshold)
        .unwrap()
        .with_stored_sets()
        .unwrap()
}

/// A text's shingles themselves (not their hashes).
fn shingles(text: &str) -> HashSet<Vec<u8>> {
    let config = ShingleConfig::default();
    let mut normalized = String::new();
    config.normalize_into(text, &mut normalized);
    let mut set = HashSet::new();
    config.for_each_shingle(&normalized, |s| {
        set.insert(s.to_vec());
    });
    set
}

/// The exact Jaccard of two shingle sets: what the index must report, up to 32-bit hash
/// collisions.
fn jaccard(sa: &HashSet<Vec<u8>>, sb: &HashSet<Vec<u8>>) -> f64 {
    let common = sa.intersection(sb).count();
    common as f64 / (sa.len() + sb.len() - common) as f64
}

/// The exact Jaccard of two texts.
fn exact(a: &str, b: &str) -> f64 {
    jaccard(&shingles(a), &shingles(b))
}

/// Every answer to every document's text: each match's similarity is its exact Jaccard, at
/// or above the threshold; and no pair well above the threshold is missed.
fn check_answers(db: &Db, docs: &[(String, String)], threshold: f64, what: &str) {
    let sets: std::collections::HashMap<&str, HashSet<Vec<u8>>> = docs
        .iter()
        .map(|(k, t)| (k.as_str(), shingles(t)))
        .collect();
    let mut reranked = 0;
    for (key, text) in docs {
        let own = &sets[key.as_str()];
        let r = db.query_text(text, &QueryOptions::default()).unwrap();
        assert!(r.stats.exact, "{what}: {key} not re-ranked");
        reranked += r.stats.reranked;
        let found: HashSet<&[u8]> = r.matches.iter().map(|m| m.key.as_slice()).collect();
        let sure = threshold + mhdb::db::rerank_margin(threshold, 128, 32);
        for m in &r.matches {
            let want = jaccard(own, &sets[std::str::from_utf8(&m.key).unwrap()]);
            let name = String::from_utf8_lossy(&m.key);
            if m.exact {
                assert!(
                    (m.similarity - want).abs() < 1e-3
                        && m.similarity >= threshold
                        && m.estimate < sure,
                    "{what}: {key} ~ {name}: reported {} (estimate {}), exact {want}",
                    m.similarity,
                    m.estimate
                );
            } else {
                // Far enough above the threshold for the estimate to decide.
                assert!(
                    m.similarity == m.estimate && m.estimate >= sure && want >= threshold,
                    "{what}: {key} ~ {name}: estimate {} unchecked, exact {want}",
                    m.estimate
                );
            }
        }
        for (other, set) in &sets {
            let j = jaccard(own, set);
            if j >= threshold + 0.1 {
                assert!(
                    found.contains(other.as_bytes()),
                    "{what}: {key} missed {other} at J = {j}"
                );
            }
        }
    }
    assert!(reranked > 0, "{what}: nothing was re-ranked");
}

#[test]
fn similarities_are_exact_wherever_the_documents_live() {
    let docs = corpus();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    for threshold in [0.5, 0.8] {
        let _ = std::fs::remove_dir_all(&dir);
        let db = Db::create(&dir, params(threshold), Options::default()).unwrap();
        // Half through the WAL one by one, half in bulk.
        let (one_by_one, bulk) = docs.split_at(docs.len() / 2);
        for (k, t) in one_by_one {
            db.insert_text(k, t).unwrap();
        }
        check_answers(&db, one_by_one, threshold, "in memory");
        drop(db);
        let db = Db::open(&dir, Options::default()).unwrap();
        check_answers(&db, one_by_one, threshold, "after WAL replay");
        let signed: Vec<(String, mhdb::sketch::Signature)> = bulk
            .iter()
            .map(|(k, t)| (k.clone(), db.sketch_text(t).unwrap()))
            .collect();
        db.bulk_insert(&signed).unwrap();
        db.flush().unwrap();
        check_answers(&db, &docs, threshold, "flushed");
        // Deletes, then a full compaction: survivors keep their sets.
        let survivors: Vec<(String, String)> = docs
            .iter()
            .filter(|(k, _)| !k.ends_with("v2"))
            .cloned()
            .collect();
        for (k, _) in docs.iter().filter(|(k, _)| k.ends_with("v2")) {
            db.delete(k).unwrap();
        }
        db.compact_full().unwrap();
        db.verify().unwrap();
        check_answers(&db, &survivors, threshold, "compacted");
        let shipped = tmp.path().join(format!("export-{threshold}"));
        db.export(&shipped).unwrap();
        let copy = Db::open_read_only(&shipped).unwrap();
        check_answers(&copy, &survivors, threshold, "exported");
        let merged_dir = tmp.path().join(format!("merged-{threshold}"));
        let merged = Db::create(&merged_dir, params(threshold), Options::default()).unwrap();
        merged.merge_from(&copy).unwrap();
        check_answers(&merged, &survivors, threshold, "merged");
    }
}

#[test]
fn dedup_reports_exact_pairs_and_estimate_only_does_not() {
    let docs = corpus();
    let tmp = tempfile::tempdir().unwrap();
    let db = Db::create(tmp.path().join("db"), params(0.6), Options::default()).unwrap();
    for (k, t) in &docs {
        db.insert_text(k, t).unwrap();
    }
    let text_of = |k: &[u8]| {
        let k = std::str::from_utf8(k).unwrap();
        &docs.iter().find(|(key, _)| key == k).unwrap().1
    };
    let (mut pairs, mut exact_pairs) = (0, 0);
    db.dedup_pairs(
        0.6,
        |p| {
            pairs += 1;
            assert_eq!(p.metric, Metric::Jaccard);
            let want = exact(text_of(&p.a), text_of(&p.b));
            if p.exact {
                assert!(
                    (p.similarity - want).abs() < 1e-3 && p.similarity >= 0.6,
                    "{p:?} vs {want}"
                );
                exact_pairs += 1;
            } else {
                assert!(p.similarity == p.estimate && want >= 0.6, "{p:?} vs {want}");
            }
            Ok(())
        },
        |_, _| {},
    )
    .unwrap();
    assert!(
        pairs > 20 && exact_pairs > 0,
        "{pairs} pairs, {exact_pairs} exact"
    );
    let mut estimated = 0;
    db.dedup_pairs_with_options(
        0.6,
        DedupOptions {
            estimate_only: true,
            ..DedupOptions::default()
        },
        |p| {
            estimated += 1;
            assert!(p.similarity == p.estimate && !p.exact);
            Ok(())
        },
        |_, _| {},
    )
    .unwrap();
    assert!(estimated > 0);
    let q = db
        .query_text(
            &docs[0].1,
            &QueryOptions {
                estimate_only: true,
                ..QueryOptions::default()
            },
        )
        .unwrap();
    assert!(!q.stats.exact && q.matches.iter().all(|m| m.similarity == m.estimate));
}

#[test]
fn bare_signatures_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let db = Db::create(tmp.path().join("db"), params(0.8), Options::default()).unwrap();
    let bare = db.hasher().unwrap().sketch_text("some text to be signed");
    for err in [
        db.insert("k", &bare).unwrap_err(),
        db.bulk_insert(&[("k", bare.clone())]).unwrap_err(),
    ] {
        assert!(
            matches!(err, mhdb::Error::InvalidParameter { .. }) && err.to_string().contains("text"),
            "{err}"
        );
    }
    assert_eq!(db.len(), 0);
    // A query by bare signature is answered by estimate.
    db.insert_text("k", "some text to be signed").unwrap();
    let r = db.query(&bare, &QueryOptions::default()).unwrap();
    assert!(!r.stats.exact && r.matches.len() == 1);
}

#[test]
fn a_damaged_stored_set_is_corruption() {
    let docs = corpus();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let db = Db::create(&dir, params(0.8), Options::default()).unwrap();
    for (k, t) in &docs {
        db.insert_text(k, t).unwrap();
    }
    db.flush().unwrap();
    drop(db);
    // Find the coded set of the first document in its segment and flip one of its bits.
    let set = mhdb::sketch::ShingleSet::from_hashes(
        IndexParams::default()
            .hasher()
            .unwrap()
            .shingle_hashes(&docs[0].1),
    );
    let coded = mhdb::storage::shingle_codec::encode(set.values());
    let seg = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "seg"))
        .unwrap();
    let mut bytes = std::fs::read(&seg).unwrap();
    let at = bytes
        .windows(coded.len())
        .position(|w| w == coded.as_slice())
        .expect("the set is stored as coded");
    bytes[at + coded.len() / 2] ^= 0x10;
    std::fs::write(&seg, &bytes).unwrap();
    let db = Db::open_read_only(&dir).unwrap();
    let err = db
        .query_text(&docs[0].1, &QueryOptions::default())
        .unwrap_err();
    assert!(matches!(err, mhdb::Error::Corruption { .. }), "{err}");
    assert!(db.verify().is_err() || !db.verify().unwrap().problems.is_empty());
}

/// Top-k in an index that stores sets ranks by exact Jaccard: the K best by the documents'
/// true similarity, each reported exactly.
#[test]
fn top_k_ranks_by_exact_jaccard() {
    let docs = corpus();
    let tmp = tempfile::tempdir().unwrap();
    let db = Db::create(tmp.path().join("db"), params(0.8), Options::default()).unwrap();
    for (k, t) in &docs {
        db.insert_text(k, t).unwrap();
    }
    let sets: Vec<HashSet<Vec<u8>>> = docs.iter().map(|(_, t)| shingles(t)).collect();
    for q in [0, 5, 17] {
        let r = db
            .query_text(
                &docs[q].1,
                &QueryOptions {
                    top: Some(5),
                    ..QueryOptions::default()
                },
            )
            .unwrap();
        assert!(r.stats.exact && !r.matches.is_empty());
        let mut truth: Vec<(f64, &str)> = docs
            .iter()
            .zip(&sets)
            .map(|((k, _), s)| (jaccard(&sets[q], s), k.as_str()))
            .filter(|&(j, _)| j >= mhdb::db::TOP_K_FLOOR)
            .collect();
        truth.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(b.1)));
        truth.truncate(5);
        let got: Vec<(f64, String)> = r
            .matches
            .iter()
            .map(|m| (m.similarity, String::from_utf8(m.key.clone()).unwrap()))
            .collect();
        assert_eq!(got.len(), truth.len(), "query {q}: {got:?} vs {truth:?}");
        for ((gj, gk), (tj, tk)) in got.iter().zip(&truth) {
            assert!((gj - tj).abs() < 1e-3, "query {q}: {got:?} vs {truth:?}");
            assert!(
                gk == tk || (gj - tj).abs() < 1e-3,
                "query {q}: {got:?} vs {truth:?}"
            );
        }
        // Beside each exact value, the signature's own estimate: the one the same query
        // reports without the re-rank.
        let estimated: std::collections::HashMap<Vec<u8>, f64> = db
            .query_text(
                &docs[q].1,
                &QueryOptions {
                    top: Some(docs.len()),
                    threshold: Some(0.0),
                    estimate_only: true,
                    ..QueryOptions::default()
                },
            )
            .unwrap()
            .matches
            .into_iter()
            .map(|m| (m.key, m.estimate))
            .collect();
        for m in &r.matches {
            assert_eq!(Some(&m.estimate), estimated.get(&m.key), "query {q}: {m:?}");
        }
        assert!(
            r.matches.iter().any(|m| m.estimate != m.similarity),
            "query {q}: every estimate equals its exact value: {:?}",
            r.matches
        );
    }
}

/// A long page (six paragraphs) and 64 copies of it with every n-th word replaced (n from 40
/// down to 20, shifted): J to the page from about 0.9 to 0.75, and among the copies around
/// and below, so that one query re-ranks dozens of candidates and one bucket holds dozens of
/// members.
fn near_copies() -> (String, Vec<(String, String)>) {
    let base: Vec<String> = corpus()
        .into_iter()
        .filter(|(k, _)| !k.contains('v'))
        .take(6)
        .map(|(_, t)| t)
        .collect::<Vec<_>>()
        .join(" ")
        .split_whitespace()
        .map(str::to_owned)
        .collect();
    let copies = (0..64usize)
        .map(|c| {
            let every = 40 - c % 21;
            let copy: Vec<String> = base
                .iter()
                .enumerate()
                .map(|(i, w)| {
                    if (i + c) % every == 0 {
                        format!("x{c}y{i}")
                    } else {
                        w.clone()
                    }
                })
                .collect();
            (format!("copy{c}"), copy.join(" "))
        })
        .collect();
    (base.join(" "), copies)
}

fn near_copies_db(dir: &std::path::Path, threshold: f64) -> (Db, String, Vec<(String, String)>) {
    let (base, copies) = near_copies();
    let db = Db::create(dir.join("db"), params(threshold), Options::default()).unwrap();
    db.insert_text("base", &base).unwrap();
    for (k, t) in &copies {
        db.insert_text(k, t).unwrap();
    }
    db.flush().unwrap();
    (db, base, copies)
}

fn in_pool<T: Send>(threads: usize, f: impl FnOnce() -> T + Send) -> T {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap()
        .install(f)
}

/// A query for the page re-ranks dozens of candidates, which is spread over the cores; the
/// answer (matches, their order and every figure) is exactly the one-thread answer, whatever
/// the thread count.
#[test]
fn a_parallel_re_rank_answers_exactly_as_a_serial_one() {
    let tmp = tempfile::tempdir().unwrap();
    let (db, base, _) = near_copies_db(tmp.path(), 0.8);
    let query = db.sketch_text(&base).unwrap();
    let answer = |threads| {
        in_pool(threads, || {
            db.query(&query, &QueryOptions::default()).unwrap()
        })
    };
    let serial = answer(1);
    // (The parallel re-rank starts at 8 candidates in the window; the corpus is drawn from
    // this repository's own documents, so the exact count moves when they are edited.)
    assert!(
        serial.stats.exact && serial.stats.reranked >= 16,
        "the query must re-rank many candidates: {:?}",
        serial.stats
    );
    assert!(serial.matches.iter().any(|m| m.exact));
    for threads in [2, 3, 4] {
        for _ in 0..5 {
            assert_eq!(answer(threads), serial, "{threads} threads");
        }
    }
}

/// Dedup over buckets of dozens of members (verified many rows at a time, each later member's
/// set decoded once for all of them) reports exactly the pairs, similarities and estimates
/// that querying each document for the older ones finds (the same candidates, window and
/// exact intersection), in the same order whatever the thread count.
#[test]
fn dedup_over_large_buckets_agrees_with_queries() {
    let tmp = tempfile::tempdir().unwrap();
    let t = 0.8;
    let (db, base, copies) = near_copies_db(tmp.path(), t);
    let dedup = |threads| {
        in_pool(threads, || {
            let mut pairs = Vec::new();
            db.dedup_pairs(
                t,
                |p| {
                    pairs.push(p);
                    Ok(())
                },
                |_, _| {},
            )
            .unwrap();
            pairs
        })
    };
    let pairs = dedup(1);
    for threads in [2, 4] {
        assert_eq!(dedup(threads), pairs, "{threads} threads");
    }
    let docs: Vec<(String, String)> = std::iter::once(("base".to_owned(), base))
        .chain(copies)
        .collect();
    let mut want = Vec::new();
    for (i, (key, text)) in docs.iter().enumerate() {
        for m in db
            .query_text(text, &QueryOptions::default())
            .unwrap()
            .matches
        {
            let older = docs
                .iter()
                .position(|(k, _)| k.as_bytes() == m.key)
                .unwrap();
            if older < i {
                want.push((
                    m.key.clone(),
                    key.as_bytes().to_vec(),
                    m.similarity,
                    m.estimate,
                    m.exact,
                ));
            }
        }
    }
    let mut got: Vec<_> = pairs
        .into_iter()
        .map(|p| (p.a, p.b, p.similarity, p.estimate, p.exact))
        .collect();
    let order = |a: &(Vec<u8>, Vec<u8>, f64, f64, bool), b: &(Vec<u8>, Vec<u8>, f64, f64, bool)| {
        (&a.0, &a.1).cmp(&(&b.0, &b.1))
    };
    got.sort_by(order);
    want.sort_by(order);
    assert!(
        want.len() > 200 && want.iter().filter(|p| p.4).count() > 50,
        "{} pairs, {} exact",
        want.len(),
        want.iter().filter(|p| p.4).count()
    );
    assert_eq!(got, want);
}

/// Top-k over dozens of near-copies computes exact Jaccards in rounds on every core against a
/// rising bar; the answer is the one-thread answer, and each match is the exact Jaccard of the
/// texts.
#[test]
fn top_k_against_a_rising_bar_answers_as_a_serial_one() {
    let tmp = tempfile::tempdir().unwrap();
    let (db, base, copies) = near_copies_db(tmp.path(), 0.8);
    let query = db.sketch_text(&base).unwrap();
    let opts = QueryOptions {
        top: Some(10),
        ..QueryOptions::default()
    };
    let serial = in_pool(1, || db.query(&query, &opts).unwrap());
    assert_eq!(serial.matches.len(), 10);
    for m in &serial.matches {
        let text = match std::str::from_utf8(&m.key).unwrap() {
            "base" => &base,
            k => &copies.iter().find(|(key, _)| key == k).unwrap().1,
        };
        assert!(
            m.exact && (m.similarity - exact(&base, text)).abs() < 1e-3,
            "{m:?}"
        );
    }
    for threads in [2, 4] {
        for _ in 0..5 {
            assert_eq!(
                in_pool(threads, || db.query(&query, &opts).unwrap()),
                serial
            );
        }
    }
}
