//! Random sequences of insert, delete, upsert, commit, flush, compact, reopen and crash-reopen,
//! checked against an in-memory model after every step: the same live keys with the same
//! stored signatures, and queries returning exactly the model's documents at or above the
//! threshold among those sharing a band (with identical documents always found).

mod common;

use std::path::Path;
use std::sync::Arc;

use mhdb::db::{Db, Durability, Options, QueryOptions, WriteBatch};
use mhdb::storage::sim::{CrashMode, SimFs};
use proptest::prelude::*;

use common::model::{Model, Packer, estimate};

#[derive(Clone, Debug)]
enum Op {
    Put(u8, u8),
    Delete(u8),
    Batch(Vec<(u8, Option<u8>)>),
    Bulk(Vec<(u8, u8)>),
    Commit,
    Flush,
    Compact,
    CompactFull,
    Reopen,
    CrashReopen,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0u8..24, 0u8..32).prop_map(|(k, t)| Op::Put(k, t)),
        2 => (0u8..24).prop_map(Op::Delete),
        2 => prop::collection::vec((0u8..24, prop::option::of(0u8..32)), 1..5).prop_map(Op::Batch),
        1 => prop::collection::vec((0u8..24, 0u8..32), 0..6).prop_map(Op::Bulk),
        1 => Just(Op::Commit),
        1 => Just(Op::Flush),
        1 => Just(Op::Compact),
        1 => Just(Op::CompactFull),
        1 => Just(Op::Reopen),
        1 => Just(Op::CrashReopen),
    ]
}

fn text(t: u8) -> String {
    // Texts of one family (t / 4) share most words.
    let family = t / 4;
    (0..24)
        .map(|i| {
            if i == usize::from(t % 4) * 5 {
                format!("v{t}")
            } else {
                format!("f{family}x{i}")
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn options() -> Options {
    Options {
        durability: Durability::Sync,
        merge_factor: 2,
        memtable_bytes: 16 << 10,
        ..Options::default()
    }
}

fn check(db: &Db, model: &Model) {
    let keys = common::stored(db);
    assert_eq!(&keys, model);
    let p = db.params();
    let packer = Packer::of(db);
    for t in [0u8, 9, 17, 30] {
        let sig = db.hasher().unwrap().sketch_text(&text(t));
        let packed = packer.pack(&sig);
        let res = db.query(&sig, &QueryOptions::default()).unwrap();
        for m in &res.matches {
            let k = String::from_utf8(m.key.clone()).unwrap();
            let stored = model.get(&k).expect("match must be live");
            let j = estimate(p, &packed, stored);
            assert!((j - m.similarity).abs() < 1e-12);
            assert!(j >= p.threshold);
        }
        for (k, stored) in model {
            if *stored == packed {
                assert!(
                    res.matches.iter().any(|m| m.key == k.as_bytes()),
                    "identical document {k} not found"
                );
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, .. ProptestConfig::default() })]

    #[test]
    fn database_matches_model(ops in prop::collection::vec(op(), 1..40)) {
        let fs = Arc::new(SimFs::new());
        let dir = Path::new("/db");
        // 32 slots over word 2-grams, 8-bit stored signatures, tuned for 0.6.
        let params = common::params::word_index(32, 8, 0.6);
        let packer = Packer::new(&params);
        let sig_of = |t: u8| packer.text(&text(t));
        let mut db = Some(Db::create_with_vfs(fs.clone(), dir, params, options()).unwrap());
        let mut fs = fs;
        let mut model = Model::new();
        for op in ops {
            let d = db.as_ref().unwrap();
            match op {
                Op::Put(k, t) => {
                    d.insert_text(format!("k{k}"), &text(t)).unwrap();
                    model.insert(format!("k{k}"), sig_of(t));
                }
                Op::Delete(k) => {
                    let was = d.delete(format!("k{k}")).unwrap();
                    prop_assert_eq!(was, model.remove(&format!("k{k}")).is_some());
                }
                Op::Batch(items) => {
                    let mut b = WriteBatch::new();
                    for (k, t) in items {
                        match t {
                            Some(t) => {
                                b.insert_text(format!("k{k}"), text(t));
                                model.insert(format!("k{k}"), sig_of(t));
                            }
                            None => {
                                b.delete(format!("k{k}"));
                                model.remove(&format!("k{k}"));
                            }
                        }
                    }
                    d.write(&b).unwrap();
                }
                Op::Bulk(items) => {
                    let docs: Vec<(String, mhdb::sketch::Signature)> = items
                        .iter()
                        .map(|(k, t)| (format!("k{k}"), packer.hasher().sketch_text(&text(*t))))
                        .collect();
                    d.bulk_insert(&docs).unwrap();
                    for (k, t) in items {
                        model.insert(format!("k{k}"), sig_of(t));
                    }
                }
                Op::Commit => d.commit().unwrap(),
                Op::Flush => d.flush().unwrap(),
                Op::Compact => d.compact().unwrap(),
                Op::CompactFull => d.compact_full().unwrap(),
                Op::Reopen => {
                    drop(db.take());
                    db = Some(Db::open_with_vfs(fs.clone(), dir, options(), false).unwrap());
                }
                Op::CrashReopen => {
                    drop(db.take());
                    fs = Arc::new(fs.crash_image(CrashMode::DurableOnly));
                    db = Some(Db::open_with_vfs(fs.clone(), dir, options(), false).unwrap());
                }
            }
            check(db.as_ref().unwrap(), &model);
        }
        let d = db.as_ref().unwrap();
        prop_assert!(d.verify().unwrap().is_ok());
        prop_assert_eq!(d.stats().unwrap().live_docs as usize, model.len());
    }
}
