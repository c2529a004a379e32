//! Query latency through the library, in process: the baseline `tools/bench/serve_load.py`
//! sets `mhdb serve`'s `/query` beside. Each of C threads answers its share of the queries
//! (texts, signed inside the timed call as the server does) one at a time; prints one JSON
//! line per client count with the QPS and the p50/p99 latency.
//!
//! Run: `cargo bench --bench query_latency -- --db DIR --queries FILE.jsonl [--clients 1,8,64]`.

use std::path::PathBuf;
use std::time::Instant;

use mhdb::db::{Db, QueryOptions};

fn main() {
    let mut db = PathBuf::new();
    let mut queries = PathBuf::new();
    let mut clients = vec![1usize, 8, 64];
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--db" => db = it.next().map(PathBuf::from).unwrap_or_default(),
            "--queries" => queries = it.next().map(PathBuf::from).unwrap_or_default(),
            "--clients" => {
                clients = it
                    .next()
                    .unwrap_or_default()
                    .split(',')
                    .filter_map(|c| c.parse().ok())
                    .collect()
            }
            _ => {}
        }
    }
    let db = Db::open_read_only(&db).expect("open the database");
    let texts: Vec<String> = std::fs::read_to_string(&queries)
        .expect("read the queries")
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("a JSON line");
            v["text"].as_str().expect("a text").to_string()
        })
        .collect();
    for c in clients {
        run(&db, &texts, c);
    }
}

/// `clients` threads answering `texts` between them, each query timed alone.
fn run(db: &Db, texts: &[String], clients: usize) {
    let opts = QueryOptions::default();
    let started = Instant::now();
    let mut latencies: Vec<f64> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..clients)
            .map(|c| {
                s.spawn(move || {
                    texts
                        .iter()
                        .skip(c)
                        .step_by(clients)
                        .map(|t| {
                            let t0 = Instant::now();
                            let r = db.query_text(t, &opts).expect("query");
                            std::hint::black_box(r);
                            t0.elapsed().as_secs_f64() * 1e6
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().unwrap())
            .collect()
    });
    let wall = started.elapsed().as_secs_f64();
    latencies.sort_by(f64::total_cmp);
    let at = |q: f64| latencies[((latencies.len() as f64 * q) as usize).min(latencies.len() - 1)];
    println!(
        "{}",
        serde_json::json!({
            "clients": clients,
            "queries": latencies.len(),
            "qps": (latencies.len() as f64 / wall).round(),
            "p50_us": at(0.5).round(),
            "p99_us": at(0.99).round(),
        })
    );
}
