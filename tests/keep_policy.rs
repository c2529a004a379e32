//! The keep policies of the dedup decision (`mhdb::decisions::Keep`): every order is the
//! same greedy pass, checked against a brute-force greedy on random small indexes (with
//! keep values of each type, absent ones and ties); and the CLI's `dedup --keep
//! longest|shortest`.

mod common;

use std::collections::{HashMap, HashSet};

use common::cli::{run, run_with_stdin, s};
use common::params::word_index;
use common::rng::SplitMix64;
use mhdb::db::{CopyGrouping, Db, DedupOptions, Options};
use mhdb::decisions::{Decisions, Keep};
use mhdb::storage::segment::{KeepColumn, KeepType, KeepValue};

/// A keep value of type `ty` from a small number (so values tie): `None` one time in four.
fn keep_value(ty: KeepType, rng: &mut SplitMix64) -> Option<KeepValue> {
    let n = rng.below(5) as i64;
    (rng.below(4) != 0).then(|| match ty {
        KeepType::I64 => KeepValue::Int(n - 2),
        KeepType::F64 => KeepValue::Float(n as f64 * 0.5 - 1.0),
        KeepType::Str => KeepValue::Str(["", "a", "ab", "b", "é"][n as usize].as_bytes().into()),
    })
}

/// A random small index: families of near-duplicates of random lengths (some documents
/// repeat their words, which adds no distinct shingles; some are exact copies), a few given
/// by signature (no set size), each with a random keep value of the seed's type. Returns the
/// database and its keys in insert order.
fn random_index(dir: &std::path::Path, seed: u64) -> (Db, Vec<String>) {
    let mut rng = SplitMix64(seed);
    let mut db = Db::create(dir, word_index(64, 16, 0.5), Options::default()).unwrap();
    let keep_type = [KeepType::I64, KeepType::F64, KeepType::Str][seed as usize % 3];
    db.fix_keep_column(&KeepColumn {
        keep_type,
        field: "score".into(),
    })
    .unwrap();
    let mut keys = Vec::new();
    for i in 0..24 {
        let family = rng.below(4);
        let len = 6 + rng.below(10) as usize;
        let mut words: Vec<String> = (0..len).map(|w| format!("f{family}w{w}")).collect();
        if rng.below(3) == 0 {
            words.push(format!("edit{}", rng.below(3)));
        }
        if rng.below(4) == 0 {
            words.extend(words.clone());
        }
        let key = format!("k{i:02}");
        let text = words.join(" ");
        let mut sig = match rng.below(6) {
            0 => db.hasher().unwrap().sketch_text(&text),
            _ => db.sketch_text(&text).unwrap(),
        };
        if let Some(v) = keep_value(keep_type, &mut rng) {
            sig = sig.with_keep_value(v);
        }
        db.insert(&key, &sig).unwrap();
        keys.push(key);
    }
    (db, keys)
}

/// The greedy by definition: documents in the policy's total order (rank, then insert
/// order), each kept unless a kept document before it is a verified neighbour. Returns each
/// dropped document with its cluster: the first kept neighbour before it.
fn brute_force(db: &Db, keys: &[String], keep: &Keep, t: f64) -> HashMap<String, String> {
    let mut edges: HashSet<(String, String)> = HashSet::new();
    // Every verified pair, exact copies included (grouped, they would come as a star).
    let every_pair = DedupOptions {
        copies: CopyGrouping::Off,
        ..DedupOptions::default()
    };
    db.dedup_pairs_with_options(
        t,
        every_pair,
        |p| {
            let (a, b) = (
                String::from_utf8(p.a).unwrap(),
                String::from_utf8(p.b).unwrap(),
            );
            edges.insert((a.clone(), b.clone()));
            edges.insert((b, a));
            Ok(())
        },
        |_, _| {},
    )
    .unwrap();
    let age: HashMap<&String, usize> = keys.iter().enumerate().map(|(i, k)| (k, i)).collect();
    let size = |k: &String| db.set_size_of(k).unwrap();
    let mut order: Vec<&String> = keys.iter().collect();
    order.sort_by_key(|k| {
        let (s, a) = (size(k), age[k] as i64);
        match keep {
            Keep::First => (0, 0, a),
            Keep::Last => (0, 0, -a),
            Keep::Longest => (i64::from(s.is_none()), -i64::from(s.unwrap_or(0)), a),
            Keep::Shortest => (i64::from(s.is_none()), i64::from(s.unwrap_or(0)), a),
            // Ranked below, by value; a stable sort keeps insert order within ties.
            _ => (0, 0, a),
        }
    });
    let value = |k: &String| db.columns_of(k).unwrap().keep;
    let by_value = |a: &&String, b: &&String| match (value(a), value(b)) {
        (Some(x), Some(y)) if matches!(keep, Keep::Max(_)) => y.rank_cmp(&x),
        (Some(x), Some(y)) => x.rank_cmp(&y),
        (x, y) => x.is_none().cmp(&y.is_none()),
    };
    if keep.keep_field().is_some() {
        order.sort_by(by_value);
    }
    let mut kept: Vec<&String> = Vec::new();
    let mut dropped = HashMap::new();
    for k in order {
        match kept
            .iter()
            .find(|c| edges.contains(&((**c).clone(), k.clone())))
        {
            Some(c) => _ = dropped.insert(k.clone(), (*c).clone()),
            None => kept.push(k),
        }
    }
    dropped
}

/// Each member of `dedup --format clusters`' star clusters with its center.
fn star_clusters(db: &Db, t: f64) -> HashMap<String, String> {
    let mut of = HashMap::new();
    for cluster in db.dedup_clusters(t).unwrap() {
        let center = String::from_utf8(cluster[0].clone()).unwrap();
        for m in &cluster[1..] {
            of.insert(String::from_utf8(m.clone()).unwrap(), center.clone());
        }
    }
    of
}

/// Every order decides, and attaches each dropped document to its first kept neighbour, as
/// the greedy written plainly does; keep `first` is the index's star clusters.
#[test]
fn every_policy_is_the_brute_force_greedy() {
    let tmp = tempfile::tempdir().unwrap();
    for seed in 0..12u64 {
        let (db, keys) = random_index(&tmp.path().join(format!("db{seed}")), seed);
        if seed % 2 == 1 {
            db.flush().unwrap();
        }
        let orders = [
            Keep::First,
            Keep::Last,
            Keep::Longest,
            Keep::Shortest,
            Keep::Max("score".into()),
            Keep::Min("score".into()),
        ];
        for keep in orders {
            let d = Decisions::compute(&db, 0.5, DedupOptions::default(), &keep, &mut |_, _| {})
                .unwrap();
            let got: HashMap<String, String> = keys
                .iter()
                .filter_map(|k| {
                    let v = d.decision(k.as_bytes());
                    let cluster = String::from_utf8(v.cluster.to_vec()).unwrap();
                    (!v.keep).then(|| (k.clone(), cluster))
                })
                .collect();
            let want = brute_force(&db, &keys, &keep, 0.5);
            assert_eq!(got, want, "seed {seed}, keep {keep}");
            assert_eq!(d.dropped, want.len() as u64);
            if keep == Keep::First {
                assert_eq!(got, star_clusters(&db, 0.5), "seed {seed}");
            }
        }
    }
}

/// A database `dir/db` of three near-duplicates: "short" (inserted first), "long" (its text
/// with a sentence more) and "padded" (short's text repeated three times: more bytes, no
/// more distinct shingles than short plus one seam), and one by signature (no size).
fn cli_database(dir: &std::path::Path) -> std::path::PathBuf {
    let db = dir.join("db");
    let base = "the annual report of the society covers every meeting held this year";
    let lines = [
        format!("{{\"id\":\"short\",\"text\":\"{base}\"}}"),
        format!("{{\"id\":\"long\",\"text\":\"{base} and its accounts\"}}"),
        format!("{{\"id\":\"padded\",\"text\":\"{base} {base} {base}\"}}"),
    ];
    assert!(
        run(&[
            "create",
            s(&db),
            "--threshold",
            "0.5",
            "--shingle",
            "word:2"
        ])
        .status
        .success()
    );
    let out = run_with_stdin(&["add", s(&db), "-"], lines.join("\n").as_bytes());
    assert!(out.status.success(), "{out:?}");
    db
}

#[test]
fn dedup_keep_longest_and_shortest_rank_by_distinct_shingles() {
    let tmp = tempfile::tempdir().unwrap();
    let db = cli_database(tmp.path());
    let drop = |keep: &str| {
        let out = run(&["dedup", s(&db), "--format", "drop", "--keep", keep]);
        assert!(out.status.success(), "{out:?}");
        let mut keys: Vec<String> = String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(str::to_string)
            .collect();
        keys.sort();
        keys
    };
    // Sizes: short 11 word pairs, padded 12 (the seam), long 14.
    assert_eq!(drop("longest"), ["padded", "short"]);
    assert_eq!(drop("shortest"), ["long", "padded"]);
    assert_eq!(drop("first"), ["long", "padded"]);
    assert_eq!(drop("last"), ["long", "short"]);
    let out = run(&["dedup", s(&db), "--format", "clusters", "--keep", "longest"]);
    let line: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(line["keep"], "long");
    let mut dups: Vec<&str> = common::golden::strings(&line["duplicates"]);
    dups.sort();
    assert_eq!(dups, ["padded", "short"]);
    // A name that is no order is a usage error naming the choices.
    let out = run(&["dedup", s(&db), "--format", "drop", "--keep", "biggest"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("longest"));
}

#[test]
fn keep_by_size_needs_the_set_size_column() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    assert!(run(&["create", s(&db), "--no-set-size"]).status.success());
    let line = b"{\"id\":\"a\",\"text\":\"some text to index here\"}\n";
    assert!(run_with_stdin(&["add", s(&db), "-"], line).status.success());
    let out = run(&["dedup", s(&db), "--format", "drop", "--keep", "longest"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("set size") && said.contains("--no-set-size"),
        "{said}"
    );
}
