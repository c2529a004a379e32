//! Insert if novel against what callers do without it, a query and then an insert: documents
//! per second, on one thread and on several, on the same offers (clusters of near-duplicates,
//! each variant offered in a shuffled order), interleaved round by round.
//!
//! Run: `cargo bench --bench novel_insert -- [--clusters 5000] [--variants 4] [--threads 8]
//! [--rounds 3] [--sync] [--only WAY]`. Each round builds a fresh database in a temporary directory (with
//! `--sync`, every call durable on return; by default `Durability::None`, as a crawler that
//! commits periodically runs). Prints one JSON line per (way, threads, round) and one line of
//! medians with the ratio. Query-then-insert is racy with several threads: its `stored`
//! count shows the near-duplicates it let in.

use std::time::Instant;

use mhdb::db::{Db, Durability, IndexParams, NoveltyOptions, Options, QueryOptions};
use mhdb::sketch::{ShingleConfig, SketchParams};

struct Args {
    clusters: u64,
    variants: u64,
    threads: usize,
    rounds: usize,
    sync: bool,
    /// Run one way only (`insert_if_novel` or `query_then_insert`), for a profiler.
    only: Option<String>,
}

fn args() -> Args {
    let mut a = Args {
        clusters: 5000,
        variants: 4,
        threads: 8,
        rounds: 3,
        sync: false,
        only: None,
    };
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let mut it = argv.iter();
    while let Some(flag) = it.next() {
        if flag == "--only" {
            a.only = it.next().cloned();
            continue;
        }
        let mut value = || it.next().and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
        match flag.as_str() {
            "--clusters" => a.clusters = value(),
            "--variants" => a.variants = value(),
            "--threads" => a.threads = value() as usize,
            "--rounds" => a.rounds = value() as usize,
            "--sync" => a.sync = true,
            _ => {} // cargo bench's own flags
        }
    }
    a
}

/// Variant `v` of cluster `c`: 120 words, variant v ≥ 1 with word 5v changed.
fn text(c: u64, v: u64) -> String {
    (0..120)
        .map(|w| {
            if v > 0 && w == v * 5 {
                format!("x{c}v{v}")
            } else {
                format!("c{c}w{w}")
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Every (cluster, variant) offer, shuffled by a fixed seed.
fn offers(a: &Args) -> Vec<(String, String)> {
    let mut items: Vec<(u64, u64)> = (0..a.clusters)
        .flat_map(|c| (0..a.variants).map(move |v| (c, v)))
        .collect();
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    for i in (1..items.len()).rev() {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        items.swap(i, (state % (i as u64 + 1)) as usize);
    }
    items
        .into_iter()
        .map(|(c, v)| (format!("c{c}-v{v}"), text(c, v)))
        .collect()
}

fn fresh(a: &Args, dir: &std::path::Path) -> Db {
    let sketch = SketchParams {
        shingle: ShingleConfig::words(2),
        ..SketchParams::default()
    };
    let params = IndexParams::for_threshold(sketch, 4, 0.8).unwrap();
    let durability = if a.sync {
        Durability::Sync
    } else {
        Durability::None
    };
    let opts = Options {
        durability,
        ..Options::default()
    };
    Db::create(dir.join("db"), params, opts).unwrap()
}

/// One run: the offers split among `threads`; returns (seconds, documents stored).
fn run(a: &Args, docs: &[(String, String)], threads: usize, novel: bool) -> (f64, u64) {
    let tmp = tempfile::tempdir().unwrap();
    let db = fresh(a, tmp.path());
    let start = Instant::now();
    std::thread::scope(|scope| {
        for part in docs.chunks(docs.len().div_ceil(threads)) {
            let db = &db;
            scope.spawn(move || {
                for (key, text) in part {
                    if novel {
                        db.insert_text_if_novel(key, text, &NoveltyOptions::default())
                            .unwrap();
                    } else if db
                        .query_text(text, &QueryOptions::default())
                        .unwrap()
                        .matches
                        .is_empty()
                    {
                        db.insert_text(key, text).unwrap();
                    }
                }
            });
        }
    });
    db.commit().unwrap();
    (start.elapsed().as_secs_f64(), db.len())
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

fn main() {
    let a = args();
    let docs = offers(&a);
    let mut counts = vec![1, a.threads];
    counts.dedup();
    for threads in counts {
        let (mut novel, mut racy) = (Vec::new(), Vec::new());
        for round in 0..a.rounds {
            // Alternate which way goes first, so that neither always runs on a warmer machine.
            let mut ways = [("insert_if_novel", true), ("query_then_insert", false)];
            if round % 2 == 1 {
                ways.reverse();
            }
            for (way, is_novel) in ways {
                if a.only.as_deref().is_some_and(|only| only != way) {
                    continue;
                }
                let (secs, stored) = run(&a, &docs, threads, is_novel);
                let rate = docs.len() as f64 / secs;
                println!(
                    "{{\"way\":\"{way}\",\"threads\":{threads},\"round\":{round},\"docs\":{},\"stored\":{stored},\"seconds\":{secs:.3},\"docs_per_s\":{rate:.0}}}",
                    docs.len()
                );
                if is_novel { &mut novel } else { &mut racy }.push(rate);
            }
        }
        if novel.is_empty() || racy.is_empty() {
            continue;
        }
        let (n, r) = (median(novel), median(racy));
        println!(
            "{{\"threads\":{threads},\"median_docs_per_s\":{{\"insert_if_novel\":{n:.0},\"query_then_insert\":{r:.0}}},\"ratio\":{:.3}}}",
            n / r
        );
    }
}
