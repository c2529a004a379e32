//! Shards answer as the index `merge` makes of them: the sample corpus split four ways (one
//! key stored twice, with different texts), queried, ranked and deduplicated through
//! `Shards`, equals the merged index's answers; a key in two shards answers from the later
//! one; a shard given twice, shards that cannot answer together and damaged shards are
//! refused with errors that say which. The CLI's `query SHARD...` and `dedup SHARD...` print
//! what the merged index prints.

mod common;

use std::path::{Path, PathBuf};

use common::cli::{ok, run, s};
use mhdb::db::{
    CopyGrouping, Db, DedupOptions, DedupPair, IndexOptions, IndexParams, KindChoice, Options,
    QueryOptions, QueryResult, Shards,
};
use mhdb::sketch::ShingleKind;
use serde_json::Value;

/// The sample corpus: (key, text), in file order.
fn corpus() -> Vec<(String, String)> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("samples/corpus.jsonl");
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            (
                v["id"].as_str().unwrap().to_string(),
                v["text"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn params(threshold: f64, store_sets: bool, bucket_cap: Option<u32>) -> IndexParams {
    IndexOptions {
        threshold: Some(threshold),
        store_sets: Some(store_sets),
        bucket_cap,
        ..IndexOptions::default()
    }
    .build()
    .unwrap()
}

/// The corpus in four shards (`dir/shard-N`), the last also holding the first shard's first
/// key with another document's text; and the merged index of the four (`dir/merged`).
fn split_and_merge(dir: &Path, params: IndexParams) -> (Vec<PathBuf>, PathBuf) {
    let docs = corpus();
    let quarter = docs.len().div_ceil(4);
    let mut paths = Vec::new();
    for (i, part) in docs.chunks(quarter).enumerate() {
        let path = dir.join(format!("shard-{i}"));
        let db = Db::create(&path, params, Options::default()).unwrap();
        for (key, text) in part {
            db.insert_text(key, text).unwrap();
        }
        if i == 3 {
            // Stored in shard 0 too: the merged index keeps this copy.
            db.insert_text(&docs[0].0, &docs[100].1).unwrap();
        }
        paths.push(path);
    }
    let merged_path = dir.join("merged");
    let merged = Db::create(&merged_path, params, Options::default()).unwrap();
    for p in &paths {
        merged.merge_from(&Db::open_read_only(p).unwrap()).unwrap();
    }
    (paths, merged_path)
}

/// The matches as (key, similarity), in order.
fn matches(r: &QueryResult) -> Vec<(Vec<u8>, f64)> {
    r.matches
        .iter()
        .map(|m| (m.key.clone(), m.similarity))
        .collect()
}

/// Shards band every document, exact copies too (a pair per two copies); one database bands
/// a representative per group of copies and pairs the others with it. Compared with shards,
/// the merged index bands every copy as well.
fn band_every_copy() -> DedupOptions {
    DedupOptions {
        copies: CopyGrouping::Off,
        ..DedupOptions::default()
    }
}

fn all_pairs(emit: impl FnOnce(&mut dyn FnMut(DedupPair) -> mhdb::Result<()>)) -> Vec<String> {
    let mut out = Vec::new();
    emit(&mut |p| {
        out.push(format!(
            "{} {} {} {} {}",
            String::from_utf8_lossy(&p.a),
            String::from_utf8_lossy(&p.b),
            p.similarity,
            p.estimate,
            p.exact
        ));
        Ok(())
    });
    out
}

fn assert_queries_agree(shards: &Shards, merged: &Db, texts: &[&str]) {
    let kinds = [
        QueryOptions::default(),
        QueryOptions {
            limit: Some(3),
            ..QueryOptions::default()
        },
        QueryOptions {
            top: Some(5),
            ..QueryOptions::default()
        },
        QueryOptions {
            threshold: Some(0.4),
            ..QueryOptions::default()
        },
    ];
    for text in texts {
        for opts in &kinds {
            let want = merged.query_text(text, opts).unwrap();
            let got = shards.query_text(text, opts).unwrap();
            assert_eq!(matches(&got), matches(&want), "{opts:?} for {text:.40}");
        }
    }
}

#[test]
fn shards_answer_as_the_merged_index() {
    for (threshold, store_sets) in [(0.5, false), (0.7, true)] {
        let dir = tempfile::tempdir().unwrap();
        let (paths, merged_path) = split_and_merge(dir.path(), params(threshold, store_sets, None));
        let shards = Db::open_many(&paths).unwrap();
        let merged = Db::open_read_only(&merged_path).unwrap();
        let docs = corpus();
        let texts: Vec<&str> = docs.iter().step_by(7).map(|(_, t)| t.as_str()).collect();
        assert_queries_agree(&shards, &merged, &texts);
        // The key stored twice answers with its later text, from the last shard.
        let answer = shards
            .query_detailed(
                &shards.sketch_text(&docs[100].1).unwrap(),
                &QueryOptions::default(),
            )
            .unwrap();
        let at = answer
            .result
            .matches
            .iter()
            .position(|m| m.key == docs[0].0.as_bytes())
            .expect("the later copy matches its own text");
        assert_eq!(answer.shard_of[at], 3);

        let t = threshold;
        let want = all_pairs(|e| {
            merged
                .dedup_pairs_with_options(t, band_every_copy(), e, |_, _| ())
                .unwrap();
        });
        let got = all_pairs(|e| {
            shards.dedup_pairs(t, e, |_, _| ()).unwrap();
        });
        assert!(want.len() > 50, "{} pairs: too few to compare", want.len());
        assert_eq!(got, want, "pairs at {t}, sets {store_sets}");
        assert_eq!(
            shards.dedup_clusters(t).unwrap(),
            merged.dedup_clusters(t).unwrap()
        );
    }
}

#[test]
fn simhash_shards_answer_as_the_merged_index() {
    let dir = tempfile::tempdir().unwrap();
    let simhash = IndexOptions {
        kind: Some(KindChoice::SimHash),
        max_hamming: Some(6),
        shingle: Some(ShingleKind::Word(1)),
        ..IndexOptions::default()
    };
    let p = simhash.build().unwrap();
    let (paths, merged_path) = split_and_merge(dir.path(), p);
    let shards = Db::open_many(&paths).unwrap();
    let merged = Db::open_read_only(&merged_path).unwrap();
    let docs = corpus();
    let texts: Vec<&str> = docs.iter().step_by(11).map(|(_, t)| t.as_str()).collect();
    assert_queries_agree(&shards, &merged, &texts);
    let t = p.threshold;
    let want = all_pairs(|e| {
        merged
            .dedup_pairs_with_options(t, band_every_copy(), e, |_, _| ())
            .unwrap();
    });
    let got = all_pairs(|e| {
        shards.dedup_pairs(t, e, |_, _| ()).unwrap();
    });
    assert!(!want.is_empty());
    assert_eq!(got, want);
    assert_eq!(
        shards.dedup_clusters(t).unwrap(),
        merged.dedup_clusters(t).unwrap()
    );
}

#[test]
fn dedup_across_shards_caps_buckets_as_the_merged_index() {
    let dir = tempfile::tempdir().unwrap();
    let (paths, merged_path) = split_and_merge(dir.path(), params(0.3, false, Some(3)));
    let shards = Db::open_many(&paths).unwrap();
    let merged = Db::open_read_only(&merged_path).unwrap();
    let mut capped = (0, 0);
    let want = all_pairs(|e| {
        capped.0 = merged
            .dedup_pairs_with_options(0.3, band_every_copy(), e, |_, _| ())
            .unwrap()
            .capped_buckets;
    });
    let got = all_pairs(|e| {
        capped.1 = shards
            .dedup_pairs(0.3, e, |_, _| ())
            .unwrap()
            .capped_buckets;
    });
    assert!(
        capped.0 > 0,
        "the cap must bite for this test to mean anything"
    );
    assert_eq!(got, want);
    // A cap cuts among the documents banded: every copy, here as over shards.
    let mut clusters = Vec::new();
    merged
        .for_each_dedup_cluster_with_options(0.3, band_every_copy(), |c| {
            clusters.push(c);
            Ok(())
        })
        .unwrap();
    assert_eq!(shards.dedup_clusters(0.3).unwrap(), clusters);
}

#[test]
fn a_key_in_two_shards_answers_from_the_later_shard() {
    let dir = tempfile::tempdir().unwrap();
    let docs = corpus();
    let (old_text, new_text) = (&docs[0].1, &docs[1].1);
    let p = params(0.5, false, None);
    let a = dir.path().join("a");
    let b = dir.path().join("b");
    Db::create(&a, p, Options::default())
        .unwrap()
        .insert_text("k", old_text)
        .unwrap();
    let db_b = Db::create(&b, p, Options::default()).unwrap();
    db_b.insert_text("k", new_text).unwrap();
    drop(db_b);
    let shards = Db::open_many([&a, &b]).unwrap();
    // The earlier shard's copy is replaced: its text finds nothing.
    let old = shards
        .query_detailed(
            &shards.sketch_text(old_text).unwrap(),
            &QueryOptions::default(),
        )
        .unwrap();
    assert!(old.result.matches.is_empty(), "{:?}", old.result.matches);
    assert_eq!(old.superseded, 1);
    let new = shards
        .query_detailed(
            &shards.sketch_text(new_text).unwrap(),
            &QueryOptions::default(),
        )
        .unwrap();
    assert_eq!(new.shard_of, vec![1]);
    assert_eq!(new.result.matches[0].similarity, 1.0);
    // Top-k and a limit ask the earlier shard for more once its best is replaced.
    let top = QueryOptions {
        top: Some(1),
        ..QueryOptions::default()
    };
    let top = shards.query_text(old_text, &top).unwrap();
    assert!(top.matches.iter().all(|m| m.similarity < 1.0));
    assert_eq!(
        shards.get("k").unwrap(),
        Db::open_read_only(&b).unwrap().get("k").unwrap()
    );
    assert_eq!(
        shards.len(),
        2,
        "len counts a key in each shard that stores it"
    );
    // In the other order, the first text wins.
    let reversed = Db::open_many([&b, &a]).unwrap();
    let r = reversed
        .query_text(old_text, &QueryOptions::default())
        .unwrap();
    assert_eq!(matches(&r), vec![(b"k".to_vec(), 1.0)]);
}

#[test]
fn many_replaced_matches_answer_as_the_merged_index() {
    // 300 copies of one text in the first shard, 120 of their keys stored again with another
    // text in the second: a query for the first text matches every copy in the first shard,
    // and the 120 replaced ones must go, with or without a limit or top-k.
    let dir = tempfile::tempdir().unwrap();
    let docs = corpus();
    let (same, other) = (&docs[5].1, &docs[6].1);
    let p = params(0.5, false, None);
    let paths = [dir.path().join("a"), dir.path().join("b")];
    let a = Db::create(&paths[0], p, Options::default()).unwrap();
    let b = Db::create(&paths[1], p, Options::default()).unwrap();
    for i in 0..300 {
        a.insert_text(format!("k-{i:03}"), same).unwrap();
    }
    for i in (0..300).step_by(5).chain((1..300).step_by(5)) {
        b.insert_text(format!("k-{i:03}"), other).unwrap();
    }
    let merged = Db::create(dir.path().join("m"), p, Options::default()).unwrap();
    merged.merge_from(&a).unwrap();
    merged.merge_from(&b).unwrap();
    drop((a, b));
    let shards = Db::open_many(&paths).unwrap();
    assert_queries_agree(&shards, &merged, &[same.as_str(), other.as_str()]);
    let answer = shards
        .query_detailed(&shards.sketch_text(same).unwrap(), &QueryOptions::default())
        .unwrap();
    assert_eq!((answer.result.matches.len(), answer.superseded), (180, 120));
}

#[test]
fn a_shard_given_twice_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a");
    let b = dir.path().join("b");
    for p in [&a, &b] {
        Db::create(p, params(0.5, false, None), Options::default()).unwrap();
    }
    let err = Db::open_many([&a, &b, &a]).unwrap_err().to_string();
    assert!(err.contains("same database"), "{err}");
    // Under another name (a symbolic link, a path through `..`) it is still the same.
    let link = dir.path().join("link");
    std::os::unix::fs::symlink(&a, &link).unwrap();
    let err = Db::open_many([&a, &link]).unwrap_err().to_string();
    assert!(
        err.contains("same database") && err.contains("link"),
        "{err}"
    );
    let dotted = dir.path().join("b/../a");
    assert!(Db::open_many([&dotted, &a]).is_err());
    assert!(Db::open_many(Vec::<PathBuf>::new()).is_err());
}

#[test]
fn shards_that_cannot_answer_together_are_refused_naming_the_parameter() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a");
    let b = dir.path().join("b");
    let c = dir.path().join("c");
    Db::create(&a, params(0.5, false, None), Options::default()).unwrap();
    let eight_bits = IndexOptions {
        threshold: Some(0.5),
        bits: Some(8),
        ..IndexOptions::default()
    };
    Db::create(&b, eight_bits.build().unwrap(), Options::default()).unwrap();
    Db::create(&c, params(0.5, true, None), Options::default()).unwrap();
    let err = Db::open_many([&a, &b]).unwrap_err();
    assert!(
        matches!(err, mhdb::Error::InvalidParameter { .. }),
        "{err:?}"
    );
    let msg = err.to_string();
    assert!(
        msg.contains("`bits`") && msg.contains(s(&a)) && msg.contains(s(&b)),
        "{msg}"
    );
    let msg = Db::open_many([&a, &c]).unwrap_err().to_string();
    assert!(msg.contains("`store_sets`"), "{msg}");
    // A threshold of its own (over the same bands) is not a refusal: the first shard's
    // answers.
    let d = dir.path().join("d");
    let lsh = params(0.5, false, None).lsh;
    let own_threshold = IndexOptions {
        threshold: Some(0.8),
        bands: Some(lsh.bands),
        rows: Some(lsh.rows),
        ..IndexOptions::default()
    };
    Db::create(&d, own_threshold.build().unwrap(), Options::default()).unwrap();
    assert_eq!(Db::open_many([&a, &d]).unwrap().params().threshold, 0.5);
}

#[test]
fn a_damaged_shard_reports_corruption_naming_its_file() {
    let dir = tempfile::tempdir().unwrap();
    let (paths, _) = split_and_merge(dir.path(), params(0.5, false, None));
    for p in &paths {
        Db::open(p, Options::default()).unwrap().flush().unwrap();
    }
    common::cli::damage_a_segment(&paths[2]);
    let shards = match Db::open_many(&paths) {
        Ok(shards) => shards,
        Err(e) => {
            assert_corruption_in(&e, &paths[2]);
            return;
        }
    };
    let report = shards.verify().unwrap();
    assert!(!report.is_ok());
    for problem in &report.problems {
        assert_corruption_in(problem, &paths[2]);
    }
    let failed = corpus()
        .iter()
        .map(|(_, t)| shards.query_text(t, &QueryOptions::default()))
        .find_map(Result::err)
        .expect("some query reads the damaged bytes");
    assert_corruption_in(&failed, &paths[2]);
    let mut dedup = Ok(Default::default());
    all_pairs(|e| dedup = shards.dedup_pairs(0.5, e, |_, _| ()));
    assert_corruption_in(&dedup.unwrap_err(), &paths[2]);
}

fn assert_corruption_in(e: &mhdb::Error, shard: &Path) {
    match e {
        mhdb::Error::Corruption { path, .. } => {
            assert!(
                path.starts_with(shard),
                "{} not in {}",
                path.display(),
                shard.display()
            )
        }
        e => panic!("not corruption: {e}"),
    }
}

#[test]
fn cli_query_and_dedup_over_shards_print_what_the_merged_index_prints() {
    let dir = tempfile::tempdir().unwrap();
    let (paths, merged) = split_and_merge(dir.path(), params(0.5, false, None));
    let shard_args: Vec<&str> = paths.iter().map(|p| s(p)).collect();
    let pattern = dir.path().join("shard-*");
    let docs = corpus();
    for text in [&docs[3].1, &docs[200].1] {
        for extra in [&[][..], &["--top", "4"], &["--limit", "2"]] {
            let mut one = vec!["query", s(&merged), "--text", text];
            one.extend(extra);
            let mut many = vec!["query"];
            many.extend(&shard_args);
            many.extend(["--text", text.as_str()]);
            many.extend(extra);
            assert_eq!(ok(&many), ok(&one), "{extra:?}");
            // Quoted, the pattern reaches mhdb, which expands it.
            let mut globbed = vec!["query", s(&pattern), "--text", text];
            globbed.extend(extra);
            assert_eq!(ok(&globbed), ok(&one), "{extra:?}");
        }
    }
    // Pairs differ by design where there are exact copies (see `band_every_copy`).
    for format in ["clusters", "drop"] {
        let one = ok(&["dedup", s(&merged), "--format", format]);
        let mut many = vec!["dedup", "--format", format];
        many.extend(&shard_args);
        assert_eq!(ok(&many), one, "{format}");
        assert!(!one.is_empty());
    }
    // A pattern that matches nothing is named.
    let none = dir.path().join("nothing-*");
    let out = run(&["query", s(&none), "--text", "x"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("nothing-*"));
    // The same shard twice is a usage error.
    let out = run(&["dedup", shard_args[0], shard_args[0]]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("same database"));
}

#[test]
fn cli_on_a_damaged_shard_exits_3_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let (paths, _) = split_and_merge(dir.path(), params(0.5, false, None));
    for p in &paths {
        Db::open(p, Options::default()).unwrap().flush().unwrap();
    }
    common::cli::damage_a_segment(&paths[1]);
    let mut args = vec!["dedup"];
    args.extend(paths.iter().map(|p| s(p)));
    let out = run(&args);
    assert_eq!(out.status.code(), Some(3));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(s(&paths[1])), "{stderr}");
    args[0] = "verify";
    let out = run(&args);
    assert_eq!(out.status.code(), Some(3));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(s(&paths[1])) && stderr.contains(".seg"),
        "{stderr}"
    );
}

#[test]
fn cli_stats_and_verify_over_shards() {
    let dir = tempfile::tempdir().unwrap();
    let (paths, merged) = split_and_merge(dir.path(), params(0.5, false, None));
    let pattern = dir.path().join("shard-?");
    let stats: Value = serde_json::from_str(&ok(&["stats", s(&pattern), "--json"])).unwrap();
    let shards = stats["shards"].as_array().unwrap();
    let listed: Vec<&str> = shards.iter().map(|x| x["path"].as_str().unwrap()).collect();
    let expected: Vec<&str> = paths.iter().map(|p| s(p)).collect();
    assert_eq!(listed, expected, "a pattern expands sorted");
    let one: Value = serde_json::from_str(&ok(&["stats", s(&paths[0]), "--json"])).unwrap();
    let mut first = shards[0].clone();
    first.as_object_mut().unwrap().remove("path");
    assert_eq!(first, one, "each shard as `stats` shows it alone");
    // The key stored in two shards counts in both.
    let merged_live = Db::open_read_only(&merged).unwrap().len();
    assert_eq!(stats["total"]["live_docs"], merged_live + 1);
    assert_eq!(stats["total"]["shards"], 4);
    let text = ok(&["stats", s(&paths[0]), s(&paths[1])]);
    assert!(text.contains("total         2 shards"), "{text}");
    let brackets = dir.path().join("shard-[0-3]");
    let verified: Value = serde_json::from_str(&ok(&["verify", s(&brackets), "--json"])).unwrap();
    let alone: Value = serde_json::from_str(&ok(&["verify", s(&paths[0]), "--json"])).unwrap();
    assert_eq!(verified["ok"], true);
    assert_eq!(
        verified["files_checked"].as_u64().unwrap(),
        4 * alone["files_checked"].as_u64().unwrap()
    );
}
