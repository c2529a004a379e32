//! Top-k queries (`QueryOptions::top`): the K most similar documents against brute force
//! over every stored signature, the probe beyond the bands, and the edges (K = 0, K larger
//! than the database, deletions, a floor).

mod common;

use mhdb::db::{Db, IndexParams, Options, QueryOptions, TOP_K_FLOOR, WriteBatch};
use mhdb::sketch::{LshParams, SketchParams, bbit};
use proptest::prelude::*;

use common::rng::SplitMix64;

/// Brute force: every live document's estimate against `query`, at least `floor`, best first
/// (ties by key), the first `k`.
fn brute_force(
    db: &Db,
    live: &[(String, String)],
    query: &str,
    k: usize,
    floor: f64,
) -> Vec<(String, f64)> {
    let p = db.params();
    let hasher = db.hasher().unwrap();
    let pack = |t: &str| bbit::pack(hasher.sketch_text(t).slots(), p.bits).unwrap();
    let q = pack(query);
    let mut all: Vec<(String, f64)> = live
        .iter()
        .map(|(key, text)| {
            let s = bbit::estimate_packed(&q, &pack(text), p.sketch.num_perm, p.bits).unwrap();
            (key.clone(), s)
        })
        .filter(|(_, s)| *s >= floor)
        .collect();
    all.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    all.truncate(k);
    all
}

fn top(db: &Db, query: &str, k: usize, floor: Option<f64>) -> (Vec<(String, f64)>, usize) {
    let r = db
        .query_text(
            query,
            &QueryOptions {
                threshold: floor,
                limit: None,
                top: Some(k),
                ..QueryOptions::default()
            },
        )
        .unwrap();
    let got = r
        .matches
        .into_iter()
        .map(|m| (String::from_utf8(m.key).unwrap(), m.similarity))
        .collect();
    (got, r.stats.probed)
}

const VOCAB: [&str; 24] = [
    "amber", "birch", "cedar", "delta", "ember", "fjord", "grove", "heron", "inlet", "juniper",
    "kelp", "larch", "marsh", "nettle", "oak", "pine", "quartz", "reed", "sage", "thistle",
    "umber", "vale", "willow", "yarrow",
];

fn random_text(rng: &mut SplitMix64, words: usize) -> String {
    (0..words)
        .map(|_| VOCAB[rng.below(VOCAB.len() as u64) as usize])
        .collect::<Vec<_>>()
        .join(" ")
}

/// 128 bands of one row at 64 bits: a document whose estimate is above 0 shares a slot, so a
/// band, with the query, and every such document is a candidate.
fn one_row_bands() -> IndexParams {
    let mut p = IndexParams::for_threshold(SketchParams::default(), 64, 0.5).unwrap();
    p.lsh = LshParams::new(128, 1, 128).unwrap();
    p
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// When every document with any similarity is a band candidate, top-k is exactly brute
    /// force, whatever K, floor, deletions and where the documents are (segment or memory).
    #[test]
    fn top_k_is_brute_force_when_every_document_is_a_candidate(
        seed in any::<u64>(),
        docs in 1usize..40,
        k in 0usize..50,
        floor_tenths in 0u32..10,
    ) {
        let mut rng = SplitMix64(seed);
        let dir = tempfile::tempdir().unwrap();
        let db = Db::create(dir.path().join("db"), one_row_bands(), Options::default()).unwrap();
        let mut live: Vec<(String, String)> = Vec::new();
        for i in 0..docs {
            let text = if i > 0 && rng.below(3) == 0 {
                // An edited copy of an earlier document: neighbours at every similarity.
                let (_, base) = &live[rng.below(live.len() as u64) as usize];
                let mut words: Vec<&str> = base.split(' ').collect();
                let n = words.len();
                words[rng.below(n as u64) as usize] = "zinnia";
                words.join(" ")
            } else {
                let n = 8 + rng.below(30) as usize;
                random_text(&mut rng, n)
            };
            live.push((format!("k{i:03}"), text));
        }
        for (i, (key, text)) in live.iter().enumerate() {
            db.insert_text(key.as_bytes(), text).unwrap();
            if i == docs / 2 {
                db.flush().unwrap();
            }
        }
        let deleted: Vec<usize> = (0..docs).filter(|_| rng.below(5) == 0).collect();
        let mut batch = WriteBatch::new();
        for &i in &deleted {
            batch.delete(live[i].0.as_bytes());
        }
        db.write(&batch).unwrap();
        let live: Vec<(String, String)> = live
            .into_iter()
            .enumerate()
            .filter(|(i, _)| !deleted.contains(i))
            .map(|(_, d)| d)
            .collect();
        let floor = f64::from(floor_tenths) / 10.0;
        let query = random_text(&mut rng, 20);
        for q in [query.as_str()].into_iter().chain(live.first().map(|(_, t)| t.as_str())) {
            let (got, _) = top(&db, q, k, Some(floor));
            prop_assert_eq!(got, brute_force(&db, &live, q, k, floor));
        }
    }
}

/// A page template and its variants with most of the page rewritten: similarities of 0.3 to
/// 0.6, which the default bands (tuned for 0.8) rarely make candidates. The probe finds them:
/// top-k equals brute force, although a threshold query at the floor misses most of them.
#[test]
fn probing_finds_what_the_bands_miss() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::create(
        dir.path().join("db"),
        IndexParams::default(),
        Options::default(),
    )
    .unwrap();
    let mut rng = SplitMix64(11);
    let base: Vec<String> = (0..300).map(|i| format!("w{i}")).collect();
    let mut live = Vec::new();
    for v in 0..40 {
        // Keep a share of the words between 45 and 85 %.
        let keep = 45 + (v % 9) * 5;
        let words: Vec<String> = base
            .iter()
            .map(|w| {
                if rng.below(100) < keep {
                    w.clone()
                } else {
                    format!("x{}", rng.below(1_000_000))
                }
            })
            .collect();
        live.push((format!("variant-{v:02}"), words.join(" ")));
    }
    for i in 0..300 {
        let n = 100 + rng.below(200) as usize;
        live.push((format!("other-{i:03}"), random_text(&mut rng, n)));
    }
    for (key, text) in &live {
        db.insert_text(key.as_bytes(), text).unwrap();
    }
    db.flush().unwrap();
    let query = base.join(" ");
    let (got, probed) = top(&db, &query, 10, None);
    let want = brute_force(&db, &live, &query, 10, TOP_K_FLOOR);
    assert_eq!(want.len(), 10);
    assert!(want.iter().all(|(k, _)| k.starts_with("variant")));
    assert_eq!(got, want);
    assert_eq!(probed, live.len(), "every live document scored");
    // The answer came from the probe: its documents are the candidates reported.
    let top_10 = QueryOptions {
        top: Some(10),
        ..QueryOptions::default()
    };
    let stats = db.query_text(&query, &top_10).unwrap().stats;
    assert_eq!((stats.candidates, stats.verified), (live.len(), live.len()));
    let thresholded = db
        .query_text(
            &query,
            &QueryOptions {
                threshold: Some(TOP_K_FLOOR),
                ..QueryOptions::default()
            },
        )
        .unwrap();
    let found: Vec<&[u8]> = thresholded.matches.iter().map(|m| &m.key[..]).collect();
    let missed = want
        .iter()
        .filter(|(k, _)| !found.contains(&k.as_bytes()))
        .count();
    assert!(missed > 0, "the bands alone found all of the top 10");
}

/// Near-duplicates the bands are reliable for (J ≥ 0.9): answered from the bands alone, with
/// no probe, and still exactly brute force.
#[test]
fn near_duplicates_are_answered_from_the_bands() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::create(
        dir.path().join("db"),
        IndexParams::default(),
        Options::default(),
    )
    .unwrap();
    let mut rng = SplitMix64(3);
    let page = random_text(&mut rng, 400);
    let mut live = Vec::new();
    for v in 0..12 {
        live.push((format!("copy-{v:02}"), format!("{page} edit {v}")));
    }
    for i in 0..200 {
        let n = 50 + rng.below(100) as usize;
        live.push((format!("other-{i:03}"), random_text(&mut rng, n)));
    }
    for (key, text) in &live {
        db.insert_text(key.as_bytes(), text).unwrap();
    }
    let (got, probed) = top(&db, &page, 5, None);
    assert_eq!(probed, 0);
    assert_eq!(got, brute_force(&db, &live, &page, 5, TOP_K_FLOOR));
    assert!(got.iter().all(|(k, s)| k.starts_with("copy") && *s >= 0.9));
}

/// K larger than the database gives every live document at or above the floor, in order; K
/// = 0 gives nothing; a limit cuts the top-k answer; a text without shingles matches nothing.
#[test]
fn k_beyond_the_database_and_other_edges() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::create(dir.path().join("db"), one_row_bands(), Options::default()).unwrap();
    let mut rng = SplitMix64(5);
    let live: Vec<(String, String)> = (0..30)
        .map(|i| (format!("d{i:02}"), random_text(&mut rng, 30)))
        .collect();
    for (key, text) in &live {
        db.insert_text(key.as_bytes(), text).unwrap();
    }
    let q = &live[0].1;
    let (all, _) = top(&db, q, 1000, Some(0.0));
    assert_eq!(all.len(), live.len());
    assert_eq!(all, brute_force(&db, &live, q, 1000, 0.0));
    assert!(all.windows(2).all(|w| w[0].1 >= w[1].1));
    let (floored, _) = top(&db, q, 1000, None);
    assert!(floored.iter().all(|(_, s)| *s >= TOP_K_FLOOR));
    assert_eq!(floored, brute_force(&db, &live, q, 1000, TOP_K_FLOOR));
    assert!(top(&db, q, 0, None).0.is_empty());
    let limited = db
        .query_text(
            q,
            &QueryOptions {
                threshold: Some(0.0),
                limit: Some(3),
                top: Some(10),
                ..QueryOptions::default()
            },
        )
        .unwrap();
    assert_eq!(limited.matches.len(), 3);
    assert!(top(&db, "  ", 5, None).0.is_empty());
    let bad = db.query_text(
        q,
        &QueryOptions {
            threshold: Some(1.5),
            limit: None,
            top: Some(3),
            ..QueryOptions::default()
        },
    );
    assert!(bad.is_err());
}
