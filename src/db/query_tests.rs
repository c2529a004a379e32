//! Unit tests of `query.rs` and its stages.

use super::*;
use crate::db::query_cold::prefetch_lookups;
use crate::db::query_gather::distinct_sorted;
use crate::db::query_rank::{PARALLEL_MATCHES, Ranked, key_head, rank, rank_best};
use crate::db::query_verify::PARALLEL_CANDIDATES;
use crate::db::{IndexParams, Options};

/// The cold-query prefetch hints run on real file maps (not the simulated filesystem,
/// where they do nothing): for any band key and any docno, in range or not, they neither
/// fail nor change an answer.
#[test]
fn prefetch_hints_on_mapped_files_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let db = Db::create(&path, IndexParams::default(), Options::default()).unwrap();
    let texts: Vec<String> = (0..300)
        .map(|i| format!("document {} about {} and {}", i % 37, i, i * 7919 % 101))
        .collect();
    for (i, t) in texts.iter().enumerate() {
        db.insert_text(format!("k{i}"), t).unwrap();
    }
    db.flush().unwrap();
    drop(db);
    let db = Db::open_read_only(&path).unwrap();
    let opts = QueryOptions::default();
    let before: Vec<_> = texts
        .iter()
        .map(|t| db.query_text(t, &opts).unwrap())
        .collect();
    let state = db.state.read();
    let version = &state.version;
    assert!(!version.segments.is_empty());
    let record_bytes = db.params.sig_bytes();
    for t in &texts {
        let sig = db.sketch_text(t).unwrap();
        let keys = db.sketcher.band_keys(&sig).unwrap();
        for from in [0, 1, keys.len(), keys.len() + 1] {
            prefetch_lookups(version, 0, &keys, from);
        }
        prefetch_lookups(version, 0, &[u64::MAX; 64], 0);
    }
    let docnos: Vec<u64> = (0..400).chain([u64::MAX - 1, u64::MAX]).collect();
    for docno in docnos.iter().copied() {
        version.prefetch_documents(&[docno], record_bytes);
        version.prefetch_keys(&[docno]);
        if let Some(seg) = version.segment_of(docno) {
            seg.seg.prefetch_signature(docno);
            seg.seg.prefetch_key(docno);
        }
    }
    version.prefetch_documents(&docnos, record_bytes);
    version.prefetch_keys(&docnos);
    drop(state);
    let after: Vec<_> = texts
        .iter()
        .map(|t| db.query_text(t, &opts).unwrap())
        .collect();
    assert_eq!(before, after);
    assert!(before.iter().all(|r| !r.matches.is_empty()));
}

fn small_db(dir: &std::path::Path) -> (Db, Vec<String>) {
    let db = Db::create(dir.join("db"), IndexParams::default(), Options::default()).unwrap();
    let texts: Vec<String> = (0..200)
        .map(|i| format!("text {} with words {} and {}", i % 23, i, i * 31 % 97))
        .collect();
    for (i, t) in texts.iter().enumerate() {
        db.insert_text(format!("k{i}"), t).unwrap();
    }
    (db, texts)
}

/// Streams answer every query exactly as one-by-one queries do, in input order with their
/// tags, whatever the window (0 is taken as 1).
#[test]
fn streams_answer_in_input_order() {
    let dir = tempfile::tempdir().unwrap();
    let (db, texts) = small_db(dir.path());
    let opts = QueryOptions {
        threshold: Some(0.5),
        limit: Some(5),
        ..QueryOptions::default()
    };
    let want: Vec<QueryResult> = texts
        .iter()
        .map(|t| db.query_text(t, &opts).unwrap())
        .collect();
    let sigs: Vec<Signature> = texts
        .iter()
        .map(|t| db.hasher().unwrap().sketch_text(t))
        .collect();
    for window in [0, 1, 3, 64, 199, 200, 1000] {
        let got: Vec<(usize, QueryResult)> = db
            .query_text_stream(texts.iter().enumerate(), &opts, window)
            .map(|(i, r)| (i, r.unwrap()))
            .collect();
        assert_eq!(got.len(), texts.len());
        for (n, (i, r)) in got.into_iter().enumerate() {
            assert_eq!((i, &r), (n, &want[n]), "window {window}");
        }
        let got: Vec<QueryResult> = db
            .query_stream(sigs.iter().cloned().map(|s| ((), s)), &opts, window)
            .map(|((), r)| r.unwrap())
            .collect();
        assert_eq!(got, want, "window {window}");
    }
    assert_eq!(
        db.query_text_stream(std::iter::empty::<((), &str)>(), &opts, 8)
            .count(),
        0
    );
}

/// A stream reads no further than one window ahead of the answers taken, and a failed
/// query yields its error in its place without ending the stream.
#[test]
fn streams_read_at_most_a_window_ahead() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let dir = tempfile::tempdir().unwrap();
    let (db, texts) = small_db(dir.path());
    let pulled = AtomicUsize::new(0);
    let window = 7;
    let input = texts.iter().enumerate().inspect(|_| {
        pulled.fetch_add(1, Ordering::SeqCst);
    });
    let mut taken = 0;
    for (i, r) in db.query_text_stream(input, &QueryOptions::default(), window) {
        assert_eq!(i, taken);
        assert!(r.is_ok());
        taken += 1;
        // The answered window holds at most `window` not yet taken, and one more window
        // is read ahead.
        let ahead = pulled.load(Ordering::SeqCst) - taken;
        assert!(ahead < 2 * window, "{ahead} queries read ahead");
    }
    assert_eq!(taken, texts.len());
    let wrong = Signature::from_slots(vec![1u64; 3]);
    let good = db.hasher().unwrap().sketch_text(&texts[0]);
    let sigs = [good.clone(), wrong, good];
    let got: Vec<bool> = db
        .query_stream(
            sigs.into_iter().map(|s| ((), s)),
            &QueryOptions::default(),
            2,
        )
        .map(|(_, r)| r.is_ok())
        .collect();
    assert_eq!(got, [true, false, true]);
}

/// De-duplication gives the sorted distinct docnos on both paths: the bitmap (many entries
/// over a dense range) and the sort (few entries, or a sparse range).
#[test]
fn distinct_candidates_are_sorted_and_unique() {
    let mut state = 7u64;
    let mut next = move |m: u64| {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (state >> 33) % m
    };
    for (entries, range, base) in [
        (0, 1, 0),
        (5, 10, 0),
        (5000, 3000, 0),
        (5000, 3000, u64::MAX - 4000),
        (3000, 1 << 40, 17),
        (1024, 64, 1 << 20),
    ] {
        let gathered: Vec<u64> = (0..entries).map(|_| base + next(range)).collect();
        let mut want = gathered.clone();
        want.sort_unstable();
        want.dedup();
        assert_eq!(distinct_sorted(gathered), want, "{entries} in {range}");
    }
}

/// A query with thousands of candidates (a template shared by every document), verified
/// on every core, finds exactly the documents that share a band with it and whose stored
/// signature reaches the threshold, and counts each candidate once.
#[test]
fn hot_queries_find_exactly_the_similar_candidates() {
    let dir = tempfile::tempdir().unwrap();
    let params =
        IndexParams::for_threshold(crate::sketch::SketchParams::default(), 32, 0.5).unwrap();
    let db = Db::create(dir.path().join("db"), params, Options::default()).unwrap();
    let template: String = (0..60)
        .map(|i| format!("shared line {i} of the page. "))
        .collect();
    let texts: Vec<String> = (0..18000)
        .map(|i| {
            let own: String = (0..(i % 40) * 6).map(|j| format!("w{i}x{j} ")).collect();
            format!("{template} page {i}: {own}")
        })
        .collect();
    // Half in a segment, half in memory; a few deleted.
    let keyed: Vec<(String, &String)> = texts
        .iter()
        .enumerate()
        .map(|(i, t)| (format!("k{i:05}"), t))
        .collect();
    for (n, half) in keyed.chunks(keyed.len() / 2).enumerate() {
        let mut batch = crate::db::WriteBatch::new();
        for (key, t) in half {
            batch.insert_text(key, t.as_str());
        }
        db.write(&batch).unwrap();
        if n == 0 {
            db.flush().unwrap();
        }
    }
    let deleted = |i: usize| i % 97 == 3;
    let mut batch = crate::db::WriteBatch::new();
    for i in (0..texts.len()).filter(|&i| deleted(i)) {
        batch.delete(format!("k{i:05}"));
    }
    db.write(&batch).unwrap();
    let hasher = db.hasher().unwrap();
    let (k, bits) = (db.params.sketch.num_perm, db.params.bits);
    let q = hasher.sketch_text(&texts[40]);
    let q_keys = db.sketcher.band_keys(&q).unwrap();
    let q_packed = bbit::pack(q.slots(), bits).unwrap();
    let mut sharing = 0;
    let mut want: Vec<(String, f64)> = Vec::new();
    let mut sharing_deleted = 0;
    for (i, t) in texts.iter().enumerate() {
        let s = hasher.sketch_text(t);
        let keys = db.sketcher.band_keys(&s).unwrap();
        if !keys.iter().zip(&q_keys).any(|(a, b)| a == b) {
            continue;
        }
        if deleted(i) {
            sharing_deleted += 1;
            continue;
        }
        sharing += 1;
        let packed = bbit::pack(s.slots(), bits).unwrap();
        let j = bbit::estimate_packed(&q_packed, &packed, k, bits).unwrap();
        if j >= 0.5 {
            want.push((format!("k{i:05}"), j));
        }
    }
    let got = db.query(&q, &QueryOptions::default()).unwrap();
    assert!(
        got.stats.candidates >= PARALLEL_CANDIDATES,
        "{:?}",
        got.stats
    );
    // Deleted documents are candidates (their postings remain), not verified.
    assert!(sharing_deleted > 0);
    assert_eq!(got.stats.candidates, sharing + sharing_deleted);
    assert_eq!(got.stats.verified, sharing);
    let mut got: Vec<(String, f64)> = got
        .matches
        .into_iter()
        .map(|m| (String::from_utf8(m.key).unwrap(), m.similarity))
        .collect();
    got.sort_by(|a, b| a.0.cmp(&b.0));
    // Enough matches that their keys are resolved on every core too.
    assert!(want.len() >= PARALLEL_MATCHES, "{} matches", want.len());
    assert!(
        want.len() > 100 && want.len() < sharing,
        "{} of {sharing}",
        want.len()
    );
    assert_eq!(got, want);
}

/// A text without shingles is similar to nothing, not even to stored empty texts.
#[test]
fn empty_texts_match_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (db, texts) = small_db(dir.path());
    db.insert_text("empty-1", "").unwrap();
    db.insert_text("empty-2", " \t\n ").unwrap();
    let opts = QueryOptions {
        threshold: Some(0.0),
        limit: None,
        ..QueryOptions::default()
    };
    for q in ["", "   ", "\n"] {
        assert_eq!(db.query_text(q, &opts).unwrap(), QueryResult::default());
    }
    let stored = db.query_text(&texts[1], &opts).unwrap();
    assert!(stored.matches.iter().all(|m| !m.key.starts_with(b"empty")));
    assert!(!stored.matches.is_empty());
}

/// A bucket over the cap gives a query the same documents however the index was laid out
/// (which half was flushed, in which order the documents came): each segment keeps its
/// documents whose keys hash lowest, and the query cuts the union of every source by the
/// same rule. The cap bites (fewer matches than without it) and is reported.
#[test]
fn bucket_caps_cut_queries_by_key_whatever_was_flushed() {
    let template: String = (0..40)
        .map(|i| format!("shared line {i} of the site. "))
        .collect();
    let texts: Vec<String> = (0..240)
        .map(|i| format!("{template} page {i}: w{} w{}", i % 7, i % 11))
        .collect();
    let build = |order: &[usize], flush_every: usize, cap: Option<u32>| {
        let dir = tempfile::tempdir().unwrap();
        let params = IndexParams {
            bucket_cap: cap,
            ..IndexParams::default()
        };
        let db = Db::create(dir.path().join("db"), params, Options::default()).unwrap();
        for (n, &i) in order.iter().enumerate() {
            db.insert_text(format!("k{i:03}"), &texts[i]).unwrap();
            if (n + 1) % flush_every == 0 {
                db.flush().unwrap();
            }
        }
        (dir, db)
    };
    let forward: Vec<usize> = (0..texts.len()).collect();
    let backward: Vec<usize> = forward.iter().rev().copied().collect();
    let layouts = [
        build(&forward, 120, Some(30)),
        build(&backward, 80, Some(30)),
        build(&backward, 1000, Some(30)),
    ];
    let (_dir, uncapped) = build(&forward, 120, None);
    let opts = QueryOptions::default();
    for probe in [0, 17, 239] {
        let answers: Vec<_> = layouts
            .iter()
            .map(|(_, db)| db.query_text(&texts[probe], &opts).unwrap())
            .collect();
        let keys = |r: &QueryResult| r.matches.iter().map(|m| m.key.clone()).collect::<Vec<_>>();
        for a in &answers {
            assert_eq!(keys(a), keys(&answers[0]), "probe {probe}");
            assert!(a.stats.hot_buckets > 0);
        }
        let all = uncapped.query_text(&texts[probe], &opts).unwrap();
        assert_eq!(all.stats.hot_buckets, 0);
        assert!(answers[0].matches.len() < all.matches.len());
    }
}

/// The cap ranks of a segment's hot buckets are kept for later queries: answers from kept
/// ranks equal answers computed afresh by an identical index that never queried, for two
/// families of pages (different hot buckets, of the same size, in every band), before and
/// after documents the cap had kept are deleted. The cap bites: fewer matches than uncapped.
#[test]
fn kept_cap_ranks_answer_as_fresh_ones() {
    let template = |family: usize| -> String {
        (0..40)
            .map(|i| format!("shared line {i} of site {family}. "))
            .collect()
    };
    let templates = [template(0), template(1)];
    let texts: Vec<String> = (0..480)
        .map(|i| format!("{} page {i}: w{} w{}", templates[i % 2], i % 7, i % 11))
        .collect();
    let build = |cap: Option<u32>| {
        let dir = tempfile::tempdir().unwrap();
        let params = IndexParams {
            bucket_cap: cap,
            ..IndexParams::default()
        };
        let db = Db::create(dir.path().join("db"), params, Options::default()).unwrap();
        for (i, t) in texts.iter().enumerate() {
            db.insert_text(format!("k{i:04}"), t).unwrap();
            if (i + 1) % 160 == 0 {
                db.flush().unwrap();
            }
        }
        (dir, db)
    };
    let opts = QueryOptions::default();
    let keys = |r: &QueryResult| r.matches.iter().map(|m| m.key.clone()).collect::<Vec<_>>();
    let probes = [0, 1, 200, 479];
    // The truth for a probe: the first query of an index that has answered nothing else (no
    // rank kept yet), with the documents of `gone` deleted.
    let afresh = |p: usize, gone: &[Vec<u8>]| {
        let (_dir, db) = build(Some(30));
        for k in gone {
            db.delete(k).unwrap();
        }
        keys(&db.query_text(&texts[p], &opts).unwrap())
    };
    let (_warm_dir, warm) = build(Some(30));
    let (_all_dir, uncapped) = build(None);
    let mut first = Vec::new();
    for &p in &probes {
        let a = warm.query_text(&texts[p], &opts).unwrap();
        assert!(a.stats.hot_buckets > 0);
        let all = uncapped.query_text(&texts[p], &opts).unwrap();
        assert!(a.matches.len() < all.matches.len(), "the cap bites");
        first.push(keys(&a));
    }
    let kept: usize = warm
        .state
        .read()
        .version
        .segments
        .iter()
        .map(|s| s.cap_ranks.len())
        .sum();
    assert!(kept > 0, "no ranks kept");
    // Every probe again, in the other order, from kept ranks.
    for (&p, a) in probes.iter().zip(&first).rev() {
        assert_eq!(keys(&warm.query_text(&texts[p], &opts).unwrap()), *a);
        assert_eq!(afresh(p, &[]), *a);
    }
    // Delete documents the cap kept.
    let gone: Vec<Vec<u8>> = first[0].iter().take(10).cloned().collect();
    for k in &gone {
        warm.delete(k).unwrap();
    }
    for &p in probes.iter().rev() {
        let w = keys(&warm.query_text(&texts[p], &opts).unwrap());
        assert_eq!(w, afresh(p, &gone));
        assert!(w.iter().all(|k| !gone.contains(k)));
    }
}

/// Keys whose first 16 bytes tie (a key and its zero-padded extensions, long keys with one
/// head) are still ordered by their whole bytes.
#[test]
fn ranking_falls_back_to_whole_keys_when_heads_tie() {
    let long = |tail: &[u8]| [&[b'x'; 16][..], tail].concat();
    let keys: Vec<Vec<u8>> = vec![
        long(b"b"),
        b"a\0".to_vec(),
        long(b""),
        b"a".to_vec(),
        long(b"a"),
        Vec::new(),
        b"a\0\0".to_vec(),
        long(b"a\0"),
    ];
    let mut rows: Vec<Ranked<'_>> = keys
        .iter()
        .map(|key| Ranked {
            similarity: 0.5,
            key,
            key_head: key_head(key),
            estimate: 0.5,
            exact: false,
            jaccard: None,
        })
        .collect();
    rank(&mut rows);
    let mut expected = keys.clone();
    expected.sort();
    let got: Vec<Vec<u8>> = rows.iter().map(|r| r.key.to_vec()).collect();
    assert_eq!(got, expected);
}

proptest::proptest! {
    /// `rank` (similarity as an integer, then runs of equal similarity by key) orders matches
    /// exactly as the comparison it replaced: similarity by `f64::total_cmp`, best first, then
    /// key — with few distinct similarities (ties, as estimates give), signed zeros and keys
    /// that share prefixes.
    #[test]
    fn rank_orders_as_similarity_then_key(
        rows in proptest::collection::vec(
            (0usize..12, proptest::collection::vec(0u8..3, 0..20)),
            0..200,
        )
    ) {
        const VALUES: [f64; 12] =
            [0.0, -0.0, 0.5, 0.5000000000000001, 0.8, 1.0, 0.25, 0.9375, 0.3, 0.7, 0.1, 0.6];
        let mut keys: Vec<Vec<u8>> = rows.iter().map(|(_, k)| k.clone()).collect();
        keys.sort();
        keys.dedup();
        let rows: Vec<Ranked<'_>> = keys
            .iter()
            .zip(&rows)
            .map(|(key, &(v, _))| Ranked {
                similarity: VALUES[v],
                key,
                key_head: key_head(key),
                estimate: 0.0,
                exact: false,
                jaccard: None,
            })
            .collect();
        let mut expected = rows.clone();
        expected.sort_by(|a, b| b.similarity.total_cmp(&a.similarity).then_with(|| a.key.cmp(b.key)));
        let mut got = rows.clone();
        rank(&mut got);
        let pairs = |v: &[Ranked<'_>]| -> Vec<(u64, Vec<u8>)> {
            v.iter().map(|r| (r.similarity.to_bits(), r.key.to_vec())).collect()
        };
        proptest::prop_assert_eq!(pairs(&got), pairs(&expected));
        // The best `limit` selected first are the first `limit` of the whole ranking.
        for limit in [1, 2, 3, rows.len() / 2, rows.len().saturating_sub(1)] {
            let mut best = rows.clone();
            rank_best(&mut best, limit);
            let n = limit.min(rows.len());
            proptest::prop_assert_eq!(pairs(&best[..n]), pairs(&expected[..n]));
        }
    }
}

/// A containment query with more candidates than one thread verifies alone is judged on
/// every core: every live document that holds the query is found once, in segments and in
/// memory, and no deleted one.
#[test]
fn a_containment_query_of_many_candidates_is_judged_on_every_core() {
    let dir = tempfile::tempdir().unwrap();
    let params = crate::db::IndexOptions {
        containment: Some(true),
        threshold: Some(0.8),
        ..crate::db::IndexOptions::default()
    }
    .build()
    .unwrap();
    let db = Db::create(dir.path().join("db"), params, Options::default()).unwrap();
    let passage: String = (0..40)
        .map(|i| format!("w{}q{}", i * 7919 % 1009, i % 13))
        .collect::<Vec<_>>()
        .join(" ");
    let total = PARALLEL_CANDIDATES + 800;
    let text = |i: usize| format!("{passage} own{i} words{} of{}", i * 31, i % 97);
    let mut batch = crate::db::WriteBatch::new();
    for i in 0..total - 300 {
        batch.insert_text(format!("d{i:05}"), text(i));
    }
    db.write(&batch).unwrap();
    db.flush().unwrap();
    // The last ones stay in memory; every 50th document is deleted.
    for i in total - 300..total {
        db.insert_text(format!("d{i:05}"), &text(i)).unwrap();
    }
    let deleted = |i: usize| i % 50 == 7;
    for i in (0..total).filter(|&i| deleted(i)) {
        db.delete(format!("d{i:05}")).unwrap();
    }
    let opts = QueryOptions {
        containment: Some(0.8),
        ..QueryOptions::default()
    };
    let got = db.query_text(&passage, &opts).unwrap();
    assert!(
        got.stats.candidates >= PARALLEL_CANDIDATES,
        "{:?}",
        got.stats
    );
    let live = (0..total).filter(|&i| !deleted(i)).count();
    assert_eq!(got.stats.verified, live);
    let mut keys: Vec<String> = got
        .matches
        .iter()
        .map(|m| String::from_utf8(m.key.clone()).unwrap())
        .collect();
    keys.sort();
    let want: Vec<String> = (0..total)
        .filter(|&i| !deleted(i))
        .map(|i| format!("d{i:05}"))
        .collect();
    assert_eq!(keys, want);
    assert!(got.matches.iter().all(|m| m.similarity >= 0.8));
}
