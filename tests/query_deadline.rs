//! `QueryOptions::deadline`: a query whose deadline has passed returns
//! `Error::DeadlineExceeded` and no answer, whatever it asks (a threshold query, with exact
//! re-rank or without, top-k, a SimHash query, a batch) and over one database or shards; a
//! deadline not reached changes nothing in the answer. A deadline "in the past" is an instant
//! read before the query starts: the library checks `now >= deadline`, so these tests do not
//! depend on timing.

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::cli::family_docs;
use mhdb::Error;
use mhdb::db::{Db, IndexOptions, IndexParams, Options, QueryOptions, QueryResult, Shards};
use mhdb::sketch::{Signature, SimParams};

/// Families of ten near-duplicates, 60 documents, at threshold 0.7.
fn params(store_sets: bool) -> IndexParams {
    IndexOptions {
        threshold: Some(0.7),
        store_sets: Some(store_sets),
        ..IndexOptions::default()
    }
    .build()
    .unwrap()
}

fn create(path: &Path, params: IndexParams, docs: &[(Vec<u8>, String)]) -> Db {
    let db = Db::create(path, params, Options::default()).unwrap();
    for (key, text) in docs {
        db.insert_text(key, text).unwrap();
    }
    db
}

/// Every kind of query the tests ask: a threshold query, one cut to a limit, and top-k.
fn asks() -> Vec<QueryOptions> {
    let threshold = QueryOptions::default();
    let limited = QueryOptions {
        limit: Some(3),
        ..threshold
    };
    let top = QueryOptions {
        top: Some(5),
        ..threshold
    };
    vec![threshold, limited, top]
}

fn with_deadline(opts: &QueryOptions, deadline: Instant) -> QueryOptions {
    QueryOptions {
        deadline: Some(deadline),
        ..*opts
    }
}

fn assert_stopped(r: mhdb::Result<QueryResult>, what: &str) {
    match r {
        Err(Error::DeadlineExceeded { stage }) => assert!(!stage.is_empty(), "{what}"),
        other => panic!("{what}: expected DeadlineExceeded, got {other:?}"),
    }
}

/// A query of `ask` by `query` against `answer`: stopped when its deadline has passed,
/// answered as without one when its deadline is an hour away.
fn check(answer: &dyn Fn(&QueryOptions) -> mhdb::Result<QueryResult>, ask: &QueryOptions) {
    let unbounded = answer(ask).unwrap();
    assert!(
        !unbounded.matches.is_empty(),
        "{ask:?}: the test needs matches"
    );
    assert_stopped(
        answer(&with_deadline(ask, Instant::now())),
        &format!("{ask:?}"),
    );
    let later = Instant::now() + Duration::from_secs(3600);
    assert_eq!(
        answer(&with_deadline(ask, later)).unwrap(),
        unbounded,
        "{ask:?}"
    );
}

#[test]
fn a_passed_deadline_stops_every_kind_of_query_on_one_database() {
    let docs = family_docs(60);
    for store_sets in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let db = create(&dir.path().join("idx"), params(store_sets), &docs);
        let text = &docs[13].1;
        for ask in asks() {
            check(&|opts| db.query_text(text, opts), &ask);
            let sig = db.sketch_text(text).unwrap();
            check(&|opts| db.query(&sig, opts), &ask);
        }
        // A batch holds every query to the one deadline.
        let sigs: Vec<Signature> = docs[..5]
            .iter()
            .map(|(_, t)| db.sketch_text(t).unwrap())
            .collect();
        let passed = with_deadline(&QueryOptions::default(), Instant::now());
        match db.query_batch(&sigs, &passed) {
            Err(Error::DeadlineExceeded { .. }) => {}
            other => panic!("a batch past its deadline: {other:?}"),
        }
    }
}

#[test]
fn a_passed_deadline_stops_a_simhash_query() {
    let dir = tempfile::tempdir().unwrap();
    let params = IndexParams::simhash(SimParams::default()).unwrap();
    let docs = family_docs(60);
    let db = create(&dir.path().join("sim"), params, &docs);
    let fp = db.simhash_text(&docs[13].1).unwrap();
    for ask in asks() {
        check(&|opts| db.query_simhash(fp, opts), &ask);
    }
}

/// `docs` in three shards under `dir`, in order.
fn three_shards(dir: &Path, docs: &[(Vec<u8>, String)]) -> Vec<PathBuf> {
    docs.chunks(docs.len().div_ceil(3))
        .enumerate()
        .map(|(i, part)| {
            let path = dir.join(format!("shard-{i}"));
            create(&path, params(true), part);
            path
        })
        .collect()
}

#[test]
fn a_passed_deadline_stops_a_query_over_shards() {
    let dir = tempfile::tempdir().unwrap();
    // Families of ten straddle the shards (20 documents each): a query matches in two.
    let docs = family_docs(60);
    let shards: Shards = Db::open_many(three_shards(dir.path(), &docs)).unwrap();
    let text = &docs[15].1;
    for ask in asks() {
        check(&|opts| shards.query_text(text, opts), &ask);
        let detailed = |opts: &QueryOptions| {
            let sig = shards.sketch_text(text)?;
            shards.query_detailed(&sig, opts).map(|a| a.result)
        };
        check(&detailed, &ask);
    }
}
