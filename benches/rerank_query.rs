//! What exact re-rank costs a query (issue 15: "query p50 at most 2× the query without
//! re-rank"): on a database created with `--store-sets`, each query is answered with the
//! re-rank and without it (`estimate_only`), alternately, one at a time, and the latency
//! percentiles of both are printed with their ratio. Signing is excluded (the queries are
//! signed, with their sets, before timing). The queries run in a pool of `--threads` threads
//! (default 1): with more, a query that re-ranks many candidates spreads them over the pool.
//!
//! Run: `cargo bench --bench rerank_query -- --db DIR --queries FILE.jsonl [--threshold T]
//! [--rounds N] [--limit N] [--threads N]` (`python3 -m tools.bench.rerank_quality --keep DIR` leaves such databases and a corpus).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use mhdb::db::{Db, QueryOptions};
use mhdb::sketch::Signature;

fn percentile(sorted: &[Duration], q: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * q).round() as usize;
    sorted.get(i).copied().unwrap_or_default()
}

fn main() {
    let mut db_dir = PathBuf::new();
    let mut queries = PathBuf::new();
    let mut threshold = None;
    let mut rounds = 5usize;
    let mut limit = 500usize;
    let mut threads = 1usize;
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--db" => db_dir = it.next().map(PathBuf::from).unwrap_or_default(),
            "--queries" => queries = it.next().map(PathBuf::from).unwrap_or_default(),
            "--threshold" => threshold = it.next().and_then(|v| v.parse().ok()),
            "--rounds" => rounds = it.next().and_then(|v| v.parse().ok()).unwrap_or(rounds),
            "--limit" => limit = it.next().and_then(|v| v.parse().ok()).unwrap_or(limit),
            "--threads" => threads = it.next().and_then(|v| v.parse().ok()).unwrap_or(threads),
            _ => {}
        }
    }
    if db_dir.as_os_str().is_empty() || queries.as_os_str().is_empty() {
        eprintln!(
            "usage: rerank_query --db DIR --queries FILE.jsonl [--threshold T] [--rounds N] [--limit N] [--threads N]"
        );
        return;
    }
    let db = Db::open_read_only(&db_dir).expect("open the database");
    assert!(db.params().store_sets, "the database must store sets");
    let text = std::fs::read_to_string(&queries).expect("read the queries");
    let sigs: Vec<Signature> = text
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| v.get("text").and_then(|t| t.as_str()).map(str::to_owned))
        .take(limit)
        .map(|t| db.sketch_text(&t).expect("sign"))
        .collect();
    let exact = QueryOptions {
        threshold,
        ..QueryOptions::default()
    };
    let estimated = QueryOptions {
        estimate_only: true,
        ..exact
    };
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads.max(1))
        .build()
        .expect("a pool");
    let (mut with, mut without) = (Vec::new(), Vec::new());
    let (mut reranked, mut matches) = (0usize, 0usize);
    pool.install(|| {
        for round in 0..rounds.max(1) + 1 {
            for s in &sigs {
                // Alternate which goes first, so that neither always finds the caches warm.
                let order = if round % 2 == 0 {
                    [true, false]
                } else {
                    [false, true]
                };
                for use_exact in order {
                    let opts = if use_exact { &exact } else { &estimated };
                    let t = Instant::now();
                    let r = db.query(s, opts).expect("query");
                    let took = t.elapsed();
                    // Round 0 warms the page cache.
                    if round == 0 {
                        continue;
                    }
                    if use_exact {
                        with.push(took);
                        reranked += r.stats.reranked;
                        matches += r.matches.len();
                    } else {
                        without.push(took);
                    }
                }
            }
        }
    });
    with.sort_unstable();
    without.sort_unstable();
    let n = with.len().max(1);
    println!(
        "{} queries × {rounds} rounds, {threads} thread(s): {:.0} candidates re-ranked, {:.0} matches per query",
        sigs.len(),
        reranked as f64 / n as f64,
        matches as f64 / n as f64
    );
    for (name, q) in [("p50", 0.5), ("p90", 0.9), ("p99", 0.99)] {
        let (a, b) = (percentile(&with, q), percentile(&without, q));
        println!(
            "{name}: re-ranked {:9.1} µs, estimate only {:9.1} µs, ratio {:.2}",
            a.as_secs_f64() * 1e6,
            b.as_secs_f64() * 1e6,
            a.as_secs_f64() / b.as_secs_f64().max(1e-12)
        );
    }
}
