//! The dedup pass groups exact copies (equal exact hashes) before banding: only each group's
//! representative is banded, the others are reported at similarity 1 to it. The decisions
//! must be those of the pass that bands every copy, for every keep order and front.

mod common;

use std::collections::{BTreeSet, HashMap};

use common::params::word_index;
use common::rng::SplitMix64;
use mhdb::db::{CopyGrouping, Db, DedupOptions, Options, PairSide};
use mhdb::decisions::{Decisions, Keep};

const THRESHOLD: f64 = 0.7;

/// A document of `words` random words from a small vocabulary.
fn random_text(rng: &mut SplitMix64, words: usize) -> Vec<String> {
    (0..words)
        .map(|_| format!("w{}", rng.below(5000)))
        .collect()
}

/// `text` with `edits` words replaced.
fn near_copy(rng: &mut SplitMix64, text: &[String], edits: usize) -> Vec<String> {
    let mut out = text.to_vec();
    for _ in 0..edits {
        let i = rng.below(out.len() as u64) as usize;
        out[i] = format!("x{}", rng.below(5000));
    }
    out
}

/// Families of documents: an original, exact copies of it, near copies, and exact copies of
/// near copies, inserted in a shuffled order (so a group's members are scattered in age),
/// half flushed into segments and half in memory; plus unrelated documents.
fn corpus_db(dir: &std::path::Path) -> (Db, Vec<String>) {
    let db = Db::create(dir, word_index(128, 32, THRESHOLD), Options::default()).unwrap();
    let mut rng = SplitMix64(0xD0C5);
    let mut docs: Vec<Vec<String>> = Vec::new();
    for _ in 0..40 {
        let original = random_text(&mut rng, 60);
        for _ in 0..rng.below(4) {
            docs.push(original.clone());
        }
        for _ in 0..rng.below(4) {
            let edits = 1 + rng.below(6) as usize;
            let near = near_copy(&mut rng, &original, edits);
            for _ in 0..1 + rng.below(3) {
                docs.push(near.clone());
            }
        }
        docs.push(original);
    }
    for _ in 0..60 {
        docs.push(random_text(&mut rng, 60));
    }
    for i in (1..docs.len()).rev() {
        docs.swap(i, rng.below(i as u64 + 1) as usize);
    }
    let mut keys = Vec::new();
    for (i, words) in docs.iter().enumerate() {
        let key = format!("doc{i:04}");
        db.insert_text(&key, &words.join(" ")).unwrap();
        keys.push(key);
        if i == docs.len() / 2 {
            db.flush().unwrap();
        }
    }
    (db, keys)
}

fn off() -> DedupOptions {
    DedupOptions {
        copies: CopyGrouping::Off,
        ..DedupOptions::default()
    }
}

/// Each exact copy and the representative standing for it, as the pairs pass reports them
/// with `grouping`.
fn representatives(db: &Db, grouping: CopyGrouping) -> HashMap<Vec<u8>, Vec<u8>> {
    let opts = DedupOptions {
        copies: grouping,
        ..DedupOptions::default()
    };
    let mut of = HashMap::new();
    db.dedup_pairs_with_options(
        THRESHOLD,
        opts,
        |p| {
            match p.representative {
                Some(PairSide::A) => of.insert(p.b, p.a),
                Some(PairSide::B) => of.insert(p.a, p.b),
                None => None,
            };
            Ok(())
        },
        |_, _| {},
    )
    .unwrap();
    of
}

/// Every document is kept or dropped as when every copy is banded, with the same best match.
/// Its cluster too, with one difference by design for keep `last`: a copy's cluster is its
/// representative's (the group is decided as one document, at its newest member's place),
/// where banding every copy may attach an older copy to a kept document of intermediate age
/// that is more similar.
#[test]
fn grouped_decisions_equal_those_of_banding_every_copy() {
    let tmp = tempfile::tempdir().unwrap();
    let (db, keys) = corpus_db(&tmp.path().join("db"));
    for (keep, grouping) in [
        (Keep::First, CopyGrouping::Oldest),
        (Keep::Last, CopyGrouping::Newest),
    ] {
        let d = DedupOptions::default();
        let grouped = Decisions::compute(&db, THRESHOLD, d, &keep, &mut |_, _| {}).unwrap();
        let banded = Decisions::compute(&db, THRESHOLD, off(), &keep, &mut |_, _| {}).unwrap();
        assert!(
            grouped.exact_copies > 20,
            "{keep:?}: {}",
            grouped.exact_copies
        );
        assert_eq!(banded.exact_copies, 0);
        assert_eq!(grouped.dropped, banded.dropped, "{keep:?}");
        let reps = representatives(&db, grouping);
        assert_eq!(reps.len() as u64, grouped.exact_copies);
        for key in &keys {
            let k = key.as_bytes();
            let (g, b) = (grouped.decision(k), banded.decision(k));
            let context = format!("{keep:?} {key}");
            assert_eq!((g.keep, g.best_match), (b.keep, b.best_match), "{context}");
            let cluster = match (&keep, reps.get(k)) {
                (Keep::Last, Some(rep)) => banded.decision(rep).cluster,
                _ => b.cluster,
            };
            assert_eq!(g.cluster, cluster, "{context}");
        }
    }
}

#[test]
fn grouped_clusters_equal_those_of_banding_every_copy() {
    let tmp = tempfile::tempdir().unwrap();
    let (db, _) = corpus_db(&tmp.path().join("db"));
    let collect = |opts: DedupOptions| {
        let mut clusters = Vec::new();
        let stats = db
            .for_each_dedup_cluster_with_options(THRESHOLD, opts, |c| {
                clusters.push(c);
                Ok(())
            })
            .unwrap();
        (clusters, stats)
    };
    let (grouped, gs) = collect(DedupOptions::default());
    let (banded, bs) = collect(off());
    assert_eq!(grouped, banded);
    assert!(gs.exact_copies > 20 && bs.exact_copies == 0);
    assert_eq!(gs.pairs, bs.pairs);
    // The copies are never compared: the grouped pass makes fewer comparisons.
    assert!(gs.compared < bs.compared, "{gs:?} {bs:?}");
}

/// Pairs: each copy once, with its representative at 1 (a star), the representative the
/// oldest or newest member as asked; the near pairs are those between representatives.
#[test]
fn copies_are_paired_with_their_representative_only() {
    let tmp = tempfile::tempdir().unwrap();
    let (db, _) = corpus_db(&tmp.path().join("db"));
    for grouping in [CopyGrouping::Oldest, CopyGrouping::Newest] {
        let opts = DedupOptions {
            copies: grouping,
            ..DedupOptions::default()
        };
        let mut copies = BTreeSet::new();
        let mut representatives = BTreeSet::new();
        let mut near = Vec::new();
        let stats = db
            .dedup_pairs_with_options(
                THRESHOLD,
                opts,
                |p| {
                    let (rep, copy) = match p.representative {
                        Some(PairSide::A) => (p.a, p.b),
                        Some(PairSide::B) => (p.b, p.a),
                        None => {
                            near.push((p.a, p.b));
                            return Ok(());
                        }
                    };
                    assert_eq!(p.similarity, 1.0);
                    let want = match grouping {
                        CopyGrouping::Newest => PairSide::B,
                        _ => PairSide::A,
                    };
                    assert_eq!(p.representative, Some(want));
                    assert!(copies.insert(copy.clone()), "{copy:?} twice");
                    representatives.insert(rep);
                    Ok(())
                },
                |_, _| {},
            )
            .unwrap();
        assert_eq!(stats.exact_copies, copies.len() as u64);
        assert_eq!(stats.pairs, copies.len() as u64 + near.len() as u64);
        assert!(copies.is_disjoint(&representatives));
        for (a, b) in &near {
            assert!(!copies.contains(a) && !copies.contains(b), "{a:?} {b:?}");
        }
        for copy in &copies {
            let h = db.exact_hash_of(copy).unwrap();
            assert!(h.is_some());
        }
    }
}

/// Segments cut a bucket over the cap to the members whose keys hash lowest, so a group's
/// representative can lose every posting while some copies keep theirs. Each copy is still
/// paired with its own representative (the oldest member of its group), never with another
/// document.
#[test]
fn copies_cut_from_capped_buckets_pair_with_their_own_representative() {
    let tmp = tempfile::tempdir().unwrap();
    let mut params = word_index(128, 32, THRESHOLD);
    params.bucket_cap = Some(4);
    let db = Db::create(tmp.path().join("db"), params, Options::default()).unwrap();
    let mut rng = SplitMix64(0xCA9);
    let mut oldest: HashMap<String, Vec<u8>> = HashMap::new();
    let mut n = 0;
    let mut insert = |text: &str| {
        let key = format!("doc{n:04}");
        n += 1;
        db.insert_text(&key, text).unwrap();
        oldest.entry(text.to_owned()).or_insert(key.into_bytes());
    };
    for _ in 0..8 {
        insert(&random_text(&mut rng, 60).join(" "));
    }
    let originals: Vec<String> = (0..6)
        .map(|_| random_text(&mut rng, 60).join(" "))
        .collect();
    for _ in 0..12 {
        for text in &originals {
            insert(text);
        }
    }
    db.flush().unwrap();
    let mut pairs = 0;
    let stats = db
        .dedup_pairs_with_options(
            THRESHOLD,
            DedupOptions::default(),
            |p| {
                pairs += 1;
                if p.representative.is_some() {
                    let (ha, hb) = (
                        db.exact_hash_of(&p.a).unwrap(),
                        db.exact_hash_of(&p.b).unwrap(),
                    );
                    assert_eq!(ha, hb, "{:?} paired with {:?} as a copy", p.b, p.a);
                    assert_eq!(p.representative, Some(PairSide::A));
                    assert!(
                        oldest.values().any(|k| *k == p.a),
                        "{:?} is not a group's oldest",
                        p.a
                    );
                }
                Ok(())
            },
            |_, _| {},
        )
        .unwrap();
    assert_eq!(stats.exact_copies, 6 * 11);
    assert_eq!(pairs, stats.pairs);
    assert!(stats.capped_buckets > 0, "{stats:?}");
}
