//! A containment index (`format/containment.md`) finds the documents that hold most of a
//! query, |Q ∩ X| / |Q| ≥ t, where Jaccard misses them: checked against containment computed
//! exactly from the documents' shingle hashes, built by inserting in two sessions and all at
//! once (the answers must agree), with and without stored sets, and refused where it cannot
//! answer.

mod common;

use std::collections::{BTreeMap, HashSet};
use std::path::Path;

use common::rng::{SplitMix64, passage, skewed_words};
use mhdb::db::{Db, IndexOptions, IndexParams, Metric, Options, QueryOptions, Shards};
use mhdb::sketch::Signature;

const PAGES: usize = 160;
const QUERIES: usize = 60;

/// Pages of 150 to 900 words, and queries: paragraphs cut from pages (1/8 to all of the page,
/// some with a tenth of their words replaced) and unrelated paragraphs.
fn corpus() -> (Vec<(String, String)>, Vec<String>) {
    let mut rng = SplitMix64(7);
    let pages: Vec<Vec<String>> = (0..PAGES)
        .map(|_| {
            let n = 150 + rng.below(750) as usize;
            skewed_words(&mut rng, n)
        })
        .collect();
    let mut queries = Vec::new();
    for i in 0..QUERIES {
        let page = &pages[(i * 7) % PAGES];
        if i % 6 == 5 {
            let n = 40 + rng.below(200) as usize;
            queries.push(skewed_words(&mut rng, n).join(" "));
            continue;
        }
        let part = passage(&mut rng, page, i % 3 == 1);
        queries.push(part.join(" "));
    }
    let pages = pages
        .into_iter()
        .enumerate()
        .map(|(i, p)| (format!("page{i:03}"), p.join(" ")))
        .collect();
    (pages, queries)
}

fn params(store_sets: bool, threshold: f64) -> IndexParams {
    IndexOptions {
        containment: Some(true),
        threshold: Some(threshold),
        store_sets: Some(store_sets),
        ..IndexOptions::default()
    }
    .build()
    .unwrap()
}

/// The distinct shingle hashes of `text` as `db` hashes them.
fn hashes(db: &Db, text: &str) -> HashSet<u64> {
    db.hasher()
        .unwrap()
        .shingle_hashes(text)
        .into_iter()
        .collect()
}

/// Every (query, page) pair whose exact containment reaches `t`, with the query's size
/// relative to the page's.
fn truth(
    db: &Db,
    pages: &[(String, String)],
    queries: &[String],
    t: f64,
) -> Vec<(usize, String, f64)> {
    let page_sets: Vec<HashSet<u64>> = pages.iter().map(|(_, p)| hashes(db, p)).collect();
    let mut pairs = Vec::new();
    for (qi, q) in queries.iter().enumerate() {
        let qs = hashes(db, q);
        for ((key, _), ps) in pages.iter().zip(&page_sets) {
            let c = qs.intersection(ps).count() as f64 / qs.len() as f64;
            if c >= t {
                pairs.push((qi, key.clone(), qs.len() as f64 / ps.len() as f64));
            }
        }
    }
    pairs
}

/// Every query's matches: key → (containment, Jaccard, exact).
fn answers(db: &Db, queries: &[String], t: f64) -> Vec<BTreeMap<String, (f64, f64, bool)>> {
    let opts = QueryOptions {
        containment: Some(t),
        ..QueryOptions::default()
    };
    answers_with(db, queries, &opts)
}

/// Every query's matches under `opts`: key → (containment, Jaccard, exact).
fn answers_with(
    db: &Db,
    queries: &[String],
    opts: &QueryOptions,
) -> Vec<BTreeMap<String, (f64, f64, bool)>> {
    queries
        .iter()
        .map(|q| {
            let r = db.query_text(q, opts).unwrap();
            r.matches
                .into_iter()
                .map(|m| {
                    assert_eq!(m.metric, Metric::Containment);
                    let j = m.jaccard.expect("a containment match carries its Jaccard");
                    (
                        String::from_utf8(m.key).unwrap(),
                        (m.similarity, j, m.exact),
                    )
                })
                .collect()
        })
        .collect()
}

fn build_at_once(dir: &Path, store_sets: bool, pages: &[(String, String)]) -> Db {
    let db = Db::create(dir, params(store_sets, 0.7), Options::default()).unwrap();
    let docs: Vec<(&str, Signature)> = pages
        .iter()
        .map(|(k, p)| (k.as_str(), db.sketch_text(p).unwrap()))
        .collect();
    db.bulk_insert(&docs).unwrap();
    db
}

/// The first half inserted and flushed, the database closed and reopened, the second half
/// inserted through the log.
fn build_in_two_sessions(dir: &Path, store_sets: bool, pages: &[(String, String)]) -> Db {
    let (first, second) = pages.split_at(pages.len() / 2);
    {
        let db = Db::create(dir, params(store_sets, 0.7), Options::default()).unwrap();
        for (k, p) in first {
            db.insert_text(k, p).unwrap();
        }
        db.flush().unwrap();
    }
    let db = Db::open(dir, Options::default()).unwrap();
    for (k, p) in second {
        db.insert_text(k, p).unwrap();
    }
    db
}

#[test]
fn stored_sets_answer_exactly_and_find_every_planted_pair() {
    let (pages, queries) = corpus();
    let dir = tempfile::tempdir().unwrap();
    let db = build_at_once(dir.path(), true, &pages);
    for t in [0.5, 0.7, 0.9] {
        let want = truth(&db, &pages, &queries, t);
        let got = answers(&db, &queries, t);
        let mut found = 0;
        for (qi, key, _) in &want {
            found += usize::from(got[*qi].contains_key(key));
        }
        let recall = found as f64 / want.len() as f64;
        assert!(want.len() >= 30, "t = {t}: only {} true pairs", want.len());
        assert!(
            recall >= 0.95,
            "t = {t}: recall {recall} over {} pairs",
            want.len()
        );
        for (qi, matches) in got.iter().enumerate() {
            let qs = hashes(&db, &queries[qi]);
            for (key, &(c, _, exact)) in matches {
                assert!(exact, "t = {t}: {key} not decided exactly");
                assert!(c >= t, "t = {t}: {key} reported at {c}");
                let page = &pages.iter().find(|(k, _)| k == key).unwrap().1;
                let true_c = qs.intersection(&hashes(&db, page)).count() as f64 / qs.len() as f64;
                // Stored sets keep 32-bit values of the 64-bit hashes: equal up to collisions.
                assert!(
                    (c - true_c).abs() < 0.01,
                    "t = {t}: {key} at {c}, truly {true_c}"
                );
            }
        }
    }
}

#[test]
fn signatures_alone_find_pairs_of_queries_at_least_an_eighth_of_the_page() {
    let (pages, queries) = corpus();
    let dir = tempfile::tempdir().unwrap();
    let db = build_at_once(dir.path(), false, &pages);
    for t in [0.5, 0.7] {
        let want: Vec<_> = truth(&db, &pages, &queries, t)
            .into_iter()
            .filter(|&(_, _, ratio)| ratio >= 1.0 / 8.0)
            .collect();
        let got = answers(&db, &queries, t);
        let found = want
            .iter()
            .filter(|(qi, key, _)| got[*qi].contains_key(key))
            .count();
        let recall = found as f64 / want.len() as f64;
        assert!(
            recall >= 0.9,
            "t = {t}: recall {recall} over {} pairs",
            want.len()
        );
        // An estimate may misjudge a pair near t, but not one far below it when the query is
        // at least a quarter of the page (the estimate's spread grows with the page/query
        // ratio, `format/containment.md` §4).
        for (qi, matches) in got.iter().enumerate() {
            let qs = hashes(&db, &queries[qi]);
            for key in matches.keys() {
                let ps = hashes(&db, &pages.iter().find(|(k, _)| k == key).unwrap().1);
                let c = qs.intersection(&ps).count() as f64 / qs.len() as f64;
                let ratio = qs.len() as f64 / ps.len() as f64;
                assert!(
                    ratio < 0.25 || c >= t - 0.25,
                    "t = {t}: {key} matched at containment {c}, query/page {ratio}"
                );
            }
        }
    }
}

#[test]
fn two_sessions_of_inserts_answer_as_one_build() {
    let (pages, queries) = corpus();
    for store_sets in [false, true] {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let at_once = build_at_once(a.path(), store_sets, &pages);
        let in_two = build_in_two_sessions(b.path(), store_sets, &pages);
        for t in [0.5, 0.8] {
            assert_eq!(
                answers(&at_once, &queries, t),
                answers(&in_two, &queries, t),
                "store_sets {store_sets}, t = {t}"
            );
        }
        in_two.flush().unwrap();
        in_two.compact().unwrap();
        let read_only = Db::open_read_only(b.path()).unwrap();
        assert_eq!(
            answers(&at_once, &queries, 0.6),
            answers(&read_only, &queries, 0.6),
            "store_sets {store_sets}, compacted and reopened read-only"
        );
    }
}

#[test]
fn a_quoted_paragraph_is_found_where_jaccard_misses_it() {
    let (pages, _) = corpus();
    let dir = tempfile::tempdir().unwrap();
    let db = build_at_once(dir.path(), false, &pages);
    let (key, page) = pages.iter().max_by_key(|(_, p)| p.len()).unwrap();
    let words: Vec<&str> = page.split(' ').collect();
    let paragraph = words[words.len() / 3..words.len() / 3 + words.len() / 6].join(" ");
    let by_containment = db
        .query_text(
            &paragraph,
            &QueryOptions {
                containment: Some(0.8),
                ..QueryOptions::default()
            },
        )
        .unwrap();
    assert!(
        by_containment
            .matches
            .iter()
            .any(|m| m.key == key.as_bytes()),
        "{key} not found by containment"
    );
    let by_jaccard = db
        .query_text(
            &paragraph,
            &QueryOptions {
                threshold: Some(0.5),
                ..QueryOptions::default()
            },
        )
        .unwrap();
    assert!(by_jaccard.matches.iter().all(|m| m.key != key.as_bytes()));
    // A Jaccard query on a containment index finds the page itself.
    let itself = db
        .query_text(
            page,
            &QueryOptions {
                threshold: Some(0.9),
                ..QueryOptions::default()
            },
        )
        .unwrap();
    let m = itself
        .matches
        .iter()
        .find(|m| m.key == key.as_bytes())
        .unwrap();
    assert_eq!(
        (m.metric, m.similarity, m.jaccard),
        (Metric::Jaccard, 1.0, None)
    );
}

#[test]
fn what_cannot_be_answered_is_refused_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let jaccard = Db::create(
        dir.path().join("j"),
        IndexParams::default(),
        Options::default(),
    )
    .unwrap();
    let ask = QueryOptions {
        containment: Some(0.7),
        ..QueryOptions::default()
    };
    let err = jaccard
        .query_text("some text to look for", &ask)
        .unwrap_err();
    assert!(err.to_string().contains("not a containment index"), "{err}");

    let db = Db::create(dir.path().join("c"), params(false, 0.7), Options::default()).unwrap();
    let bare = Signature::from_slots(db.sketch_text("a text").unwrap().slots().to_vec());
    let err = db.insert("k", &bare).unwrap_err();
    assert!(err.to_string().contains("set size"), "{err}");
    let err = db.query(&bare, &ask).unwrap_err();
    assert!(err.to_string().contains("set size"), "{err}");
    let err = IndexOptions {
        containment: Some(true),
        bands: Some(4),
        rows: Some(4),
        ..IndexOptions::default()
    }
    .build()
    .map_err(mhdb::Error::from)
    .unwrap_err();
    assert!(err.to_string().contains("bandings are fixed"), "{err}");
}

#[test]
fn shards_answer_as_one_index() {
    let (pages, queries) = corpus();
    let dir = tempfile::tempdir().unwrap();
    let whole = build_at_once(&dir.path().join("whole"), false, &pages);
    let (a, b) = pages.split_at(pages.len() / 3);
    build_at_once(&dir.path().join("a"), false, a);
    build_at_once(&dir.path().join("b"), false, b);
    let shards = Shards::open_many([dir.path().join("a"), dir.path().join("b")]).unwrap();
    let opts = QueryOptions {
        containment: Some(0.6),
        ..QueryOptions::default()
    };
    for q in &queries {
        let one = whole.query_text(q, &opts).unwrap().matches;
        let many = shards.query_text(q, &opts).unwrap().matches;
        assert_eq!(one, many, "{q}");
    }
    // A Jaccard index among the shards is refused, naming what differs.
    Db::create(
        dir.path().join("j"),
        IndexParams::default(),
        Options::default(),
    )
    .unwrap();
    let mixed = Shards::open_many([dir.path().join("a"), dir.path().join("j")]);
    assert!(mixed.is_err());
}

#[test]
fn top_k_is_by_containment_down_to_its_floor() {
    let (pages, queries) = corpus();
    let dir = tempfile::tempdir().unwrap();
    let db = build_at_once(dir.path(), true, &pages);
    let at = |containment: Option<f64>, top: Option<usize>| QueryOptions {
        containment,
        top,
        ..QueryOptions::default()
    };
    let mut ranked = 0;
    for q in &queries {
        let all = db.query_text(q, &at(Some(0.05), None)).unwrap().matches;
        let top = db.query_text(q, &at(Some(0.05), Some(3))).unwrap().matches;
        assert_eq!(top, all[..all.len().min(3)].to_vec());
        assert!(top.windows(2).all(|w| w[0].similarity >= w[1].similarity));
        ranked += usize::from(all.len() > 3);
        let floor = db.query_text(q, &at(None, None)).unwrap();
        let default_floor = db.query_text(q, &at(None, Some(2))).unwrap().matches;
        let at_floor = db
            .query_text(q, &at(Some(mhdb::db::TOP_K_FLOOR), None))
            .unwrap();
        assert_eq!(
            default_floor,
            at_floor.matches[..at_floor.matches.len().min(2)].to_vec()
        );
        assert!(floor.matches.len() <= at_floor.matches.len());
    }
    assert!(ranked > 0, "no query had more than 3 matches to rank");
    let both = QueryOptions {
        threshold: Some(0.5),
        top: Some(3),
        ..QueryOptions::default()
    };
    assert!(db.query_text(&queries[0], &both).is_err());
}

/// A query without options answers by containment at the index's threshold, over shards as
/// on the single index; novelty is judged by containment; the all-pairs dedup is refused.
#[test]
fn defaults_mean_containment_everywhere() {
    let (pages, queries) = corpus();
    let dir = tempfile::tempdir().unwrap();
    let whole = build_at_once(&dir.path().join("whole"), false, &pages);
    let (a, b) = pages.split_at(pages.len() / 2);
    build_at_once(&dir.path().join("a"), false, a);
    build_at_once(&dir.path().join("b"), false, b);
    let shards = Shards::open_many([dir.path().join("a"), dir.path().join("b")]).unwrap();
    let plain = QueryOptions::default();
    for q in &queries[..20] {
        let one = whole.query_text(q, &plain).unwrap().matches;
        assert!(one.iter().all(|m| m.metric == Metric::Containment));
        assert_eq!(one, shards.query_text(q, &plain).unwrap().matches, "{q}");
    }
    // A paragraph of a stored page is not novel in a containment index at its threshold.
    let (key, page) = &pages[3];
    let words: Vec<&str> = page.split(' ').collect();
    let quote = words[..words.len() / 2].join(" ");
    let sig = whole.sketch_text(&quote).unwrap();
    let stored = whole
        .insert_if_novel("quote", &sig, &mhdb::db::NoveltyOptions::default())
        .unwrap();
    let mhdb::db::Novelty::Duplicate(matches) = stored else {
        panic!("the quote was stored as novel");
    };
    assert!(
        matches.iter().any(|m| m.key == key.as_bytes()),
        "{matches:?}"
    );
    // Pairs and clusters by band buckets would miss containers in other size classes: the
    // all-pairs pass is refused, pointing at the containment decision.
    let err = whole.dedup_clusters(0.7).unwrap_err();
    assert!(err.to_string().contains("read again"), "{err}");
    let err = shards.dedup_clusters(0.7).unwrap_err();
    assert!(err.to_string().contains("read again"), "{err}");
}

/// A query probes only the size classes that hold a document: a class first filled in
/// memory, then in a segment, then in a database reopened read-only, is probed each time.
#[test]
fn a_class_filled_after_the_first_query_is_probed() {
    let dir = tempfile::tempdir().unwrap();
    let (pages, _) = corpus();
    let db = Db::create(dir.path(), params(false, 0.7), Options::default()).unwrap();
    let short: Vec<&(String, String)> = pages.iter().filter(|(_, p)| p.len() < 2500).collect();
    for (key, text) in &short {
        db.insert_text(key, text).unwrap();
    }
    db.flush().unwrap();
    let quote = short[0].1.clone();
    let host: String = pages.iter().map(|(_, p)| p.as_str()).collect::<Vec<_>>()[..6].join(" ");
    let host = format!("{host} {quote}");
    let found = |db: &Db| -> bool {
        let opts = QueryOptions {
            containment: Some(0.9),
            ..QueryOptions::default()
        };
        let r = db.query_text(&quote, &opts).unwrap();
        r.matches.iter().any(|m| m.key == b"host")
    };
    assert!(!found(&db));
    db.insert_text("host", &host).unwrap();
    assert!(found(&db), "in memory");
    db.flush().unwrap();
    assert!(found(&db), "in a segment");
    drop(db);
    assert!(found(&Db::open_read_only(dir.path()).unwrap()), "reopened");
}

/// Every query's matches at containment `t` decided by estimate with `recall` (None: the
/// default), as key → containment reported.
fn answers_at_recall(
    db: &Db,
    queries: &[String],
    t: f64,
    recall: Option<f64>,
) -> Vec<BTreeMap<String, f64>> {
    let opts = QueryOptions {
        containment: Some(t),
        containment_recall: recall,
        ..QueryOptions::default()
    };
    answers_with(db, queries, &opts)
        .into_iter()
        .map(|m| m.into_iter().map(|(k, (c, _, _))| (k, c)).collect())
        .collect()
}

#[test]
fn a_wanted_recall_trades_false_matches_for_true_ones_at_the_threshold() {
    let (pages, queries) = corpus();
    let dir = tempfile::tempdir().unwrap();
    let db = build_at_once(dir.path(), false, &pages);
    for t in [0.7, 0.9] {
        let want: HashSet<(usize, String)> = truth(&db, &pages, &queries, t)
            .into_iter()
            .filter(|&(_, _, ratio)| ratio >= 1.0 / 8.0)
            .map(|(qi, key, _)| (qi, key))
            .collect();
        let score = |got: &[BTreeMap<String, f64>]| {
            let found: HashSet<(usize, String)> = got
                .iter()
                .enumerate()
                .flat_map(|(qi, m)| m.keys().map(move |k| (qi, k.clone())))
                .collect();
            let hit = want.intersection(&found).count() as f64;
            (hit / want.len() as f64, hit / found.len().max(1) as f64)
        };
        let strict = answers_at_recall(&db, &queries, t, Some(0.05));
        let plain = answers_at_recall(&db, &queries, t, None);
        let half = answers_at_recall(&db, &queries, t, Some(0.5));
        let wide = answers_at_recall(&db, &queries, t, Some(0.95));
        assert_eq!(plain, half, "t = {t}: recall 0.5 is the default");
        for qi in 0..queries.len() {
            assert!(
                strict[qi].keys().all(|k| plain[qi].contains_key(k)),
                "t = {t}"
            );
            assert!(
                plain[qi].keys().all(|k| wide[qi].contains_key(k)),
                "t = {t}"
            );
            // What the default keeps reaches t; what it adds is reported as estimated.
            assert!(plain[qi].values().all(|&c| c >= t));
            assert!(strict[qi].values().all(|&c| c >= t));
            for (k, c) in &wide[qi] {
                assert!(plain[qi].get(k).is_none_or(|p| p == c));
            }
        }
        let ((r_strict, p_strict), (r_plain, p_plain), (r_wide, p_wide)) =
            (score(&strict), score(&plain), score(&wide));
        assert!(r_wide >= 0.95, "t = {t}: recall {r_wide} at 0.95 wanted");
        // The passages with a tenth of their words replaced sit near 0.9: there the default
        // keeps about half of them, and the wide rule nearly all.
        assert!(
            r_wide >= r_plain && r_plain >= r_strict,
            "t = {t}: {r_wide} {r_plain} {r_strict}"
        );
        assert!(
            p_strict >= p_plain && p_plain >= p_wide,
            "t = {t}: {p_strict} {p_plain} {p_wide}"
        );
        if t == 0.9 {
            assert!(
                r_wide > r_plain && r_plain > r_strict,
                "{r_wide} {r_plain} {r_strict}"
            );
        }
    }
}

#[test]
fn a_recall_is_refused_where_it_decides_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::create(dir.path().join("c"), params(false, 0.7), Options::default()).unwrap();
    for bad in [0.0, 1.0, -0.5, f64::NAN] {
        let opts = QueryOptions {
            containment: Some(0.7),
            containment_recall: Some(bad),
            ..QueryOptions::default()
        };
        let err = db.query_text("a text to look for", &opts).unwrap_err();
        assert!(err.to_string().contains("recall"), "{bad}: {err}");
    }
    let jaccard_query = QueryOptions {
        threshold: Some(0.7),
        containment_recall: Some(0.9),
        ..QueryOptions::default()
    };
    let err = db.query_text("a text", &jaccard_query).unwrap_err();
    assert!(
        err.to_string().contains("applies to a containment query"),
        "{err}"
    );
    let jaccard = Db::create(
        dir.path().join("j"),
        IndexParams::default(),
        Options::default(),
    )
    .unwrap();
    let err = jaccard
        .query_text(
            "a text",
            &QueryOptions {
                containment_recall: Some(0.9),
                ..QueryOptions::default()
            },
        )
        .unwrap_err();
    assert!(err.to_string().contains("not a containment index"), "{err}");
}

#[test]
fn stored_sets_decide_whatever_recall_is_asked() {
    let (pages, queries) = corpus();
    let dir = tempfile::tempdir().unwrap();
    let db = build_at_once(dir.path(), true, &pages);
    let exact = answers_at_recall(&db, &queries, 0.9, None);
    assert_eq!(answers_at_recall(&db, &queries, 0.9, Some(0.99)), exact);
    assert_eq!(answers_at_recall(&db, &queries, 0.9, Some(0.01)), exact);
}
