//! Dedup of a containment index drops exactly the documents that another, ahead of them in
//! the keep order, holds at least the threshold of: checked against containment computed
//! exactly from the documents' shingle hashes over every pair, in one database and across
//! shards, from the library and from `mhdb dedup-files` / `dedup --apply` on compressed JSON
//! Lines.

mod common;

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::Path;

use common::cli::{run, s};
use common::compress::zstd;
use common::rng::{SplitMix64, passage, skewed_words};
use mhdb::apply::{Decisions, Keep};
use mhdb::db::ingest::Content;
use mhdb::db::{Db, IndexOptions, Options, ReadIndex, Shards};

const T: f64 = 0.7;

/// Documents in insert order: pages of 150 to 900 words; passages cut from pages (1/8 to all
/// of the page, some with a tenth of their words replaced), some inserted before their page;
/// chains (a passage of a section of a page); exact copies; unrelated paragraphs.
fn corpus() -> Vec<(String, String)> {
    let mut rng = SplitMix64(11);
    let pages: Vec<Vec<String>> = (0..80)
        .map(|_| {
            let n = 150 + rng.below(750) as usize;
            skewed_words(&mut rng, n)
        })
        .collect();
    let mut early = Vec::new();
    let mut late = Vec::new();
    for i in 0..60 {
        let page = &pages[(i * 7) % pages.len()];
        let part = passage(&mut rng, page, i % 3 == 1);
        let doc = (format!("passage{i:02}"), part.join(" "));
        match i % 4 {
            0 => early.push(doc),
            _ => late.push(doc),
        }
        if i % 10 == 3 {
            // A passage of the passage: a chain of three.
            let inner = part[..part.len() / 2].join(" ");
            late.push((format!("inner{i:02}"), inner));
        }
    }
    for i in 0..20 {
        let n = 40 + rng.below(300) as usize;
        late.push((format!("other{i:02}"), skewed_words(&mut rng, n).join(" ")));
    }
    for i in [5, 17, 40] {
        late.push((format!("copy{i:02}"), pages[i].join(" ")));
    }
    let pages = pages
        .into_iter()
        .enumerate()
        .map(|(i, p)| (format!("page{i:02}"), p.join(" ")));
    early.into_iter().chain(pages).chain(late).collect()
}

fn params(store_sets: bool) -> mhdb::db::IndexParams {
    IndexOptions {
        containment: Some(true),
        threshold: Some(T),
        store_sets: Some(store_sets),
        ..IndexOptions::default()
    }
    .build()
    .unwrap()
}

fn build(dir: &Path, store_sets: bool, docs: &[(String, String)]) -> Db {
    let db = Db::create(dir, params(store_sets), Options::default()).unwrap();
    for (key, text) in docs {
        db.insert_text(key, text).unwrap();
    }
    db.flush().unwrap();
    db
}

/// The documents that must go under `keep longest` at `T`, by exact containment: each with
/// the containers ahead of it (more distinct shingles, or as many and inserted earlier) that
/// hold at least `T` of it, and their containment.
fn truth(db: &Db, docs: &[(String, String)]) -> BTreeMap<String, BTreeMap<String, f64>> {
    let hasher = db.hasher().unwrap();
    let sets: Vec<HashSet<u64>> = docs
        .iter()
        .map(|(_, text)| hasher.shingle_hashes(text).into_iter().collect())
        .collect();
    let ahead = |y: usize, x: usize| {
        (sets[y].len(), std::cmp::Reverse(y)) > (sets[x].len(), std::cmp::Reverse(x))
    };
    let mut out = BTreeMap::new();
    for (x, sx) in sets.iter().enumerate() {
        let containers: BTreeMap<String, f64> = sets
            .iter()
            .enumerate()
            .filter(|&(y, _)| y != x && ahead(y, x))
            .map(|(y, sy)| (y, sx.intersection(sy).count() as f64 / sx.len() as f64))
            .filter(|&(_, c)| c >= T)
            .map(|(y, c)| (docs[y].0.clone(), c))
            .collect();
        if !containers.is_empty() {
            out.insert(docs[x].0.clone(), containers);
        }
    }
    out
}

fn decide(index: &dyn ReadIndex, docs: &[(String, String)], estimate_only: bool) -> Decisions {
    let mut chunks = docs.chunks(37);
    let mut next = || {
        chunks.next().map_or_else(Vec::new, |chunk| {
            chunk
                .iter()
                .map(|(k, t)| (k.as_bytes().to_vec(), Content::Text(t.clone())))
                .collect()
        })
    };
    Decisions::compute_containment(
        index,
        &mut next,
        T,
        estimate_only,
        &Keep::Longest,
        &mut |_| {},
    )
    .unwrap()
}

fn dropped(d: &Decisions, docs: &[(String, String)]) -> BTreeSet<String> {
    docs.iter()
        .filter(|(k, _)| !d.decision(k.as_bytes()).keep)
        .map(|(k, _)| k.clone())
        .collect()
}

#[test]
fn with_stored_sets_exactly_the_contained_documents_are_dropped_and_the_longest_kept() {
    let dir = tempfile::tempdir().unwrap();
    let docs = corpus();
    let db = build(dir.path(), true, &docs);
    let truth = truth(&db, &docs);
    let d = decide(&db, &docs, false);
    let gone = dropped(&d, &docs);
    // Precision is strict: each drop is held by a container ahead, named as its best match
    // at its exact containment.
    for key in &gone {
        let decision = d.decision(key.as_bytes());
        let containers = truth
            .get(key)
            .unwrap_or_else(|| panic!("{key} dropped, not held"));
        if let Some((best, c)) = decision.best_match {
            let best = std::str::from_utf8(best).unwrap();
            let exact = containers
                .get(best)
                .expect("best match is a container ahead");
            assert!((c - exact).abs() < 1e-9, "{key} in {best}: {c} vs {exact}");
            assert!(d.decision(best.as_bytes()).keep, "a best match is kept");
            assert_eq!(decision.cluster, best.as_bytes());
        }
        assert!(d.decision(decision.cluster).keep, "{key}'s cluster is kept");
    }
    let found = gone.len() as f64 / truth.len() as f64;
    assert!(
        truth.len() > 60,
        "the corpus holds {} contained",
        truth.len()
    );
    assert!(found >= 0.97, "found {} of {}", gone.len(), truth.len());
    // A page stays unless a whole-page passage inserted before it holds it; every exact copy
    // goes (to its earlier original); a chain keeps its top.
    for i in 0..80 {
        let page = format!("page{i:02}");
        let held = truth.contains_key(&page);
        assert_eq!(d.decision(page.as_bytes()).keep, !held, "{page}");
    }
    for i in [5, 17, 40] {
        let key = format!("copy{i:02}");
        let copy = d.decision(key.as_bytes());
        assert!(!copy.keep);
        assert_eq!(copy.cluster, format!("page{i:02}").as_bytes());
        assert_eq!(copy.best_match.map(|b| b.1), Some(1.0));
    }
    assert!(gone.contains("inner03") && gone.contains("passage03"));
    assert_eq!(
        d.decision(b"inner03").cluster,
        d.decision(b"passage03").cluster
    );
    assert_eq!(d.dropped, gone.len() as u64);
    // A row the index does not hold, though a page holds it, is not decided (`dedup --apply`
    // keeps it as not in the index), and changes no other decision.
    let mut with_stray = docs.clone();
    let stray = docs.iter().find(|(k, _)| k == "page07").unwrap().1.clone();
    with_stray.push(("stray".into(), stray));
    let again = decide(&db, &with_stray, false);
    assert_eq!(again.get(b"stray"), None);
    assert_eq!(dropped(&again, &docs), gone);
}

#[test]
fn from_signatures_alone_the_drops_are_contained_and_shards_decide_as_one_database() {
    let dir = tempfile::tempdir().unwrap();
    let docs = corpus();
    let db = build(&dir.path().join("one"), false, &docs);
    let truth = truth(&db, &docs);
    let d = decide(&db, &docs, false);
    let gone = dropped(&d, &docs);
    let hits = gone.iter().filter(|k| truth.contains_key(*k)).count();
    assert!(
        hits as f64 >= 0.9 * truth.len() as f64,
        "{hits} of {}",
        truth.len()
    );
    assert!(
        hits as f64 >= 0.9 * gone.len() as f64,
        "{hits} right of {}",
        gone.len()
    );
    // Two shards in insert order: the same ages, the same answers, the same decision.
    let half = docs.len() / 2;
    let a = build(&dir.path().join("a"), false, &docs[..half]);
    let b = build(&dir.path().join("b"), false, &docs[half..]);
    drop((a, b));
    let shards = Shards::open_many([dir.path().join("a"), dir.path().join("b")]).unwrap();
    let by_shards = decide(&shards, &docs, false);
    assert_eq!(dropped(&by_shards, &docs), gone);
    for (key, _) in &docs {
        assert_eq!(
            by_shards.decision(key.as_bytes()),
            d.decision(key.as_bytes()),
            "{key}"
        );
    }
}

#[test]
fn a_jaccard_index_is_refused_by_the_containment_pass() {
    let dir = tempfile::tempdir().unwrap();
    let params = IndexOptions::default().build().unwrap();
    let db = Db::create(dir.path(), params, Options::default()).unwrap();
    db.insert_text("a", "some words of a document").unwrap();
    let mut none = Vec::new;
    let err = Decisions::compute_containment(&db, &mut none, T, false, &Keep::Longest, &mut |_| {})
        .err()
        .unwrap();
    assert!(err.to_string().contains("not a containment index"), "{err}");
}

#[test]
fn dedup_files_drops_the_contained_rows_of_compressed_json_lines() {
    let dir = tempfile::tempdir().unwrap();
    let docs = corpus();
    let input = dir.path().join("in");
    std::fs::create_dir_all(input.join("part")).unwrap();
    for (n, chunk) in docs.chunks(100).enumerate() {
        let lines: String = chunk
            .iter()
            .map(|(k, t)| format!("{}\n", serde_json::json!({"id": k, "text": t})))
            .collect();
        let name = input.join("part").join(format!("{n:03}.jsonl.zst"));
        std::fs::write(name, zstd(lines.as_bytes())).unwrap();
    }
    let index = dir.path().join("idx");
    let out = dir.path().join("out");
    let args = [
        "dedup-files",
        s(&input),
        "--out",
        s(&out),
        "--metric",
        "containment",
        "--threshold",
        "0.7",
        "--keep",
        "longest",
        "--index",
        s(&index),
    ];
    let done = run(&args);
    assert!(
        done.status.success(),
        "{}",
        String::from_utf8_lossy(&done.stderr)
    );
    let written: BTreeSet<String> = std::fs::read_dir(out.join("part"))
        .unwrap()
        .flat_map(|f| {
            let bytes = zstd::decode_all(&std::fs::read(f.unwrap().path()).unwrap()[..]).unwrap();
            String::from_utf8(bytes)
                .unwrap()
                .lines()
                .map(|l| {
                    serde_json::from_str::<serde_json::Value>(l).unwrap()["id"]
                        .as_str()
                        .unwrap()
                        .to_string()
                })
                .collect::<Vec<_>>()
        })
        .collect();
    let db = Db::open_read_only(&index).unwrap();
    let gone = dropped(&decide(&db, &docs, false), &docs);
    let expected: BTreeSet<String> = docs
        .iter()
        .map(|(k, _)| k.clone())
        .filter(|k| !gone.contains(k))
        .collect();
    assert!(!gone.is_empty());
    assert_eq!(written, expected);
    // The same index through `dedup --apply`, and the refusals of what it cannot do.
    let again = dir.path().join("again");
    let apply = run(&[
        "dedup",
        s(&index),
        "--keep",
        "longest",
        "--apply",
        s(&input),
        "--out",
        s(&again),
    ]);
    assert!(
        apply.status.success(),
        "{}",
        String::from_utf8_lossy(&apply.stderr)
    );
    let refused = |args: &[&str], words: &str| {
        let out = run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr).to_string();
        assert!(err.contains(words), "{args:?}: {err}");
    };
    refused(
        &["dedup", s(&index), "--format", "drop"],
        "--apply INPUT --out DIR",
    );
    refused(
        &["dedup", s(&index), "--threshold", "0.5"],
        "deduplicated by containment",
    );
    let jaccard = dir.path().join("jaccard");
    let made = run(&["create", s(&jaccard)]);
    assert!(made.status.success());
    refused(
        &["dedup", s(&jaccard), "--containment", "0.5"],
        "is for a containment index",
    );
    refused(
        &[
            "dedup",
            s(&jaccard),
            "--documents",
            s(&input),
            "--format",
            "drop",
        ],
        "--documents is for a containment index",
    );
    refused(
        &["dedup", s(&index), "--documents", s(&input)],
        "--format clusters or drop",
    );
    // The decision as a list of the dropped keys, and as clusters, from the documents read
    // again: what --apply dropped, each dropped key once, under the kept key of its cluster.
    let listed = |format: &str| {
        let args = [
            "dedup",
            s(&index),
            "--keep",
            "longest",
            "--documents",
            s(&input),
            "--format",
            format,
        ];
        let out = run(&args);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let drop_list: BTreeSet<String> = listed("drop").lines().map(str::to_string).collect();
    assert_eq!(drop_list, gone);
    let mut in_clusters = BTreeSet::new();
    for line in listed("clusters").lines() {
        let cluster: serde_json::Value = serde_json::from_str(line).unwrap();
        let keep = cluster["keep"].as_str().unwrap();
        assert!(!gone.contains(keep), "{keep} is kept");
        for d in cluster["duplicates"].as_array().unwrap() {
            let d = d.as_str().unwrap();
            assert!(in_clusters.insert(d.to_string()), "{d} in two clusters");
        }
    }
    assert_eq!(in_clusters, gone);
}
