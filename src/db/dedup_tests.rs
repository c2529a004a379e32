use std::collections::{BTreeMap, BTreeSet};

use super::*;
use crate::db::{IndexParams, Options, WriteBatch};
use crate::sketch::{SketchParams, bbit};

/// A boilerplate-heavy corpus: pages that share most of one template and differ by a
/// page-specific part of varying length, plus groups of exact and edited copies.
fn hot_texts(n: usize) -> Vec<String> {
    let template: String = (0..40)
        .map(|i| format!("shared line {i} of the site. "))
        .collect();
    (0..n)
        .map(|i| {
            let family = i / 3;
            let own: String = (0..(family % 30) * 5)
                .map(|j| format!("w{family}x{j} "))
                .collect();
            format!("{template} page {family}: {own} edit {}", i % 3)
        })
        .collect()
}

/// A database holding `texts` under keys `k00000`…, inserted in `order`, with a few
/// deleted; with `flush`, the first half is flushed to a segment.
fn build(
    dir: &std::path::Path,
    texts: &[String],
    order: &[usize],
    cap: Option<u32>,
    flush: bool,
) -> Db {
    let mut params = IndexParams::for_threshold(SketchParams::default(), 32, 0.5).unwrap();
    params.bucket_cap = cap;
    let db = Db::create(dir, params, Options::default()).unwrap();
    for (n, half) in order.chunks(order.len().div_ceil(2)).enumerate() {
        let mut batch = WriteBatch::new();
        for &i in half {
            batch.insert_text(format!("k{i:05}"), texts[i].as_str());
        }
        db.write(&batch).unwrap();
        if n == 0 && flush {
            db.flush().unwrap();
        }
    }
    let mut batch = WriteBatch::new();
    for i in (0..texts.len()).filter(|i| i % 89 == 5) {
        batch.delete(format!("k{i:05}"));
    }
    db.write(&batch).unwrap();
    db
}

/// Pairs by (smaller key, larger key), with their estimates.
type Pairs = BTreeMap<(Vec<u8>, Vec<u8>), f64>;

fn pairs_of(db: &Db, t: f64) -> (Pairs, DedupStats) {
    let mut pairs = BTreeMap::new();
    let stats = db
        .dedup_pairs(
            t,
            |p| {
                let key = (p.a.clone().min(p.b.clone()), p.a.max(p.b));
                assert!(pairs.insert(key, p.similarity).is_none(), "a pair twice");
                Ok(())
            },
            |_, _| {},
        )
        .unwrap();
    (pairs, stats)
}

/// Pairs are exactly the live pairs that share a band bucket and whose stored signatures
/// reach the threshold, each once; clusters are the star clusters of those pairs (oldest
/// unassigned document first, taking its unassigned neighbours), computed here from the
/// full pair list as the reference.
#[test]
fn pairs_and_clusters_match_the_definitions_on_a_hot_corpus() {
    let dir = tempfile::tempdir().unwrap();
    let texts = hot_texts(900);
    let order: Vec<usize> = (0..texts.len()).collect();
    let db = build(dir.path(), &texts, &order, None, true);
    let hasher = db.hasher().unwrap();
    let (k, bits) = (db.params.sketch.num_perm, db.params.bits);
    let docs: Vec<(Vec<u64>, Vec<u8>)> = texts
        .iter()
        .map(|t| {
            let s = hasher.sketch_text(t);
            (
                db.sketcher.band_keys(&s).unwrap(),
                bbit::pack(s.slots(), bits).unwrap(),
            )
        })
        .collect();
    let live: Vec<usize> = (0..texts.len()).filter(|i| i % 89 != 5).collect();
    let mut want = BTreeMap::new();
    for (x, &i) in live.iter().enumerate() {
        for &j in &live[x + 1..] {
            let share = docs[i]
                .0
                .iter()
                .zip(&docs[j].0)
                .any(|(a, b)| a >> 32 == b >> 32);
            let e = bbit::estimate_packed(&docs[i].1, &docs[j].1, k, bits).unwrap();
            if share && e >= 0.5 {
                let key = |d: usize| format!("k{d:05}").into_bytes();
                want.insert((key(i), key(j)), e);
            }
        }
    }
    let (got, stats) = pairs_of(&db, 0.5);
    assert!(want.len() > 2000, "a hot corpus: {} pairs", want.len());
    assert!(got == want, "{} pairs, {} expected", got.len(), want.len());
    assert_eq!(stats.pairs, want.len() as u64);
    assert_eq!(stats.capped_buckets, 0);

    // Star clusters from the pair list, keys in insertion (= age) order.
    let mut neighbours: BTreeMap<&[u8], BTreeSet<&[u8]>> = BTreeMap::new();
    for (a, b) in want.keys() {
        neighbours.entry(a).or_default().insert(b);
        neighbours.entry(b).or_default().insert(a);
    }
    let mut assigned = BTreeSet::new();
    let mut star = Vec::new();
    for (&center, ns) in &neighbours {
        if assigned.contains(center) {
            continue;
        }
        let members: Vec<&[u8]> = ns
            .iter()
            .copied()
            .filter(|n| !assigned.contains(n))
            .collect();
        if members.is_empty() {
            continue;
        }
        assigned.insert(center);
        assigned.extend(members.iter().copied());
        star.push(
            std::iter::once(center)
                .chain(members)
                .map(<[u8]>::to_vec)
                .collect::<Vec<_>>(),
        );
    }
    let clusters = db.dedup_clusters(0.5).unwrap();
    assert!(clusters.len() > 50 && clusters.iter().any(|c| c.len() > 20));
    assert!(
        clusters == star,
        "{} clusters, {} expected",
        clusters.len(),
        star.len()
    );
}

/// A bucket over the cap keeps the same members whatever the insertion order (the choice
/// depends on the keys only), fewer pairs are compared than without the cap, and the
/// pass says how many buckets it cut. Either all in memory, or half of it in a segment
/// (whose own cap, applied when it was written, follows the same rule).
#[test]
fn bucket_caps_are_honoured_and_decided_by_key() {
    for flush in [false, true] {
        caps_decided_by_key(flush);
    }
}

fn caps_decided_by_key(flush: bool) {
    let texts = hot_texts(600);
    let forward: Vec<usize> = (0..texts.len()).collect();
    let backward: Vec<usize> = forward.iter().rev().copied().collect();
    let cap = 40;
    let mut results = Vec::new();
    for order in [&forward, &backward] {
        let dir = tempfile::tempdir().unwrap();
        let db = build(dir.path(), &texts, order, Some(cap), flush);
        let (pairs, stats) = pairs_of(&db, 0.5);
        assert!(stats.capped_buckets > 0);
        // No document pairs with more partners than the cap allows in all bands together.
        let mut partners: BTreeMap<Vec<u8>, usize> = BTreeMap::new();
        for (a, b) in pairs.keys() {
            *partners.entry(a.clone()).or_default() += 1;
            *partners.entry(b.clone()).or_default() += 1;
        }
        let bands = db.params.lsh.bands;
        assert!(partners.values().all(|&p| p < cap as usize * bands));
        let (_, uncapped) = {
            let dir = tempfile::tempdir().unwrap();
            let db = build(dir.path(), &texts, order, None, false);
            pairs_of(&db, 0.5)
        };
        assert!(stats.compared < uncapped.compared);
        results.push((pairs.into_keys().collect::<Vec<_>>(), stats));
    }
    // (Clusters depend on the order by design: the oldest document is kept.)
    assert!(
        results[0].0 == results[1].0,
        "capped pairs depend on insertion order: {:?}",
        results[0]
            .0
            .iter()
            .zip(&results[1].0)
            .find(|(a, b)| a != b)
            .map(|(a, b)| (
                String::from_utf8_lossy(&a.0).to_string(),
                String::from_utf8_lossy(&a.1).to_string(),
                String::from_utf8_lossy(&b.0).to_string(),
                String::from_utf8_lossy(&b.1).to_string()
            ))
    );
    assert_eq!(results[0].1.capped_buckets, results[1].1.capped_buckets);
}

/// A pass finds the same pairs and clusters whether its documents' numbers are dense or far
/// apart (most documents deleted and compacted away, so the pass lists the numbers instead of
/// marking a bitmap), as a database holding only the survivors does.
#[test]
fn sparse_docnos_dedup_as_a_fresh_database_of_the_survivors() {
    let texts = hot_texts(1200);
    let order: Vec<usize> = (0..texts.len()).collect();
    let survives = |i: usize| i % 97 < 3;
    let thinned_dir = tempfile::tempdir().unwrap();
    let thinned = build(thinned_dir.path(), &texts, &order, None, true);
    let mut batch = WriteBatch::new();
    for i in (0..texts.len()).filter(|&i| !survives(i)) {
        batch.delete(format!("k{i:05}"));
    }
    thinned.write(&batch).unwrap();
    thinned.flush().unwrap();
    thinned.compact().unwrap();
    let fresh_dir = tempfile::tempdir().unwrap();
    let mut params = IndexParams::for_threshold(SketchParams::default(), 32, 0.5).unwrap();
    params.bucket_cap = None;
    let fresh = Db::create(fresh_dir.path(), params, Options::default()).unwrap();
    let mut batch = WriteBatch::new();
    for i in (0..texts.len()).filter(|&i| survives(i) && i % 89 != 5) {
        batch.insert_text(format!("k{i:05}"), texts[i].as_str());
    }
    fresh.write(&batch).unwrap();
    let (want, _) = pairs_of(&fresh, 0.5);
    let (got, _) = pairs_of(&thinned, 0.5);
    assert!(want.len() > 10, "{} pairs among the survivors", want.len());
    assert!(got == want, "{} pairs, {} expected", got.len(), want.len());
    assert_eq!(
        thinned.dedup_clusters(0.5).unwrap(),
        fresh.dedup_clusters(0.5).unwrap()
    );
}
