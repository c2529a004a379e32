//! Hot queries through the library: queries with thousands of candidates each (a page of a
//! boilerplate family, see `tools/bench/hot_corpus.py`), signed before timing, so the figures are the
//! query alone: candidate gathering, de-duplication, verification and result building.
//!
//! Run: `cargo bench --bench hot_query -- --db DIR --queries FILE.jsonl [--threshold T]
//! [--passes N]` on a database built by `mhdb add` (`tools/bench/hot_bench.py` does it all).
//! Prints ns per unique candidate on one thread, the same queries one at a time on every core
//! (one large query spread over the cores), and as a batch on every core.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use mhdb::db::{Db, QueryOptions};
use mhdb::sketch::Signature;

struct Args {
    db: PathBuf,
    queries: PathBuf,
    threshold: Option<f64>,
    passes: usize,
}

fn args() -> Args {
    let mut a = Args {
        db: PathBuf::new(),
        queries: PathBuf::new(),
        threshold: None,
        passes: 5,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--db" => a.db = it.next().map(PathBuf::from).unwrap_or_default(),
            "--queries" => a.queries = it.next().map(PathBuf::from).unwrap_or_default(),
            "--threshold" => a.threshold = it.next().and_then(|v| v.parse().ok()),
            "--passes" => a.passes = it.next().and_then(|v| v.parse().ok()).unwrap_or(a.passes),
            _ => {}
        }
    }
    a
}

/// The fastest of `passes` runs of `run` (the machine is shared: the minimum is the least
/// disturbed).
fn best_of(passes: usize, mut run: impl FnMut() -> usize) -> (Duration, usize) {
    let mut best = Duration::MAX;
    let mut out = 0;
    for _ in 0..passes.max(1) {
        let t = Instant::now();
        out = run();
        best = best.min(t.elapsed());
    }
    (best, out)
}

/// CPU time this thread has run (Linux's schedstat; zero elsewhere): on a shared machine the
/// one-thread figure is also given in CPU time, which other processes do not inflate.
fn thread_cpu() -> Duration {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .map_or(Duration::ZERO, Duration::from_nanos)
}

fn main() {
    let a = args();
    if a.db.as_os_str().is_empty() || a.queries.as_os_str().is_empty() {
        eprintln!("usage: hot_query --db DIR --queries FILE.jsonl [--threshold T] [--passes N]");
        return;
    }
    let db = Db::open_read_only(&a.db).expect("open the database");
    let hasher = db.hasher().expect("a text signer");
    let text = std::fs::read_to_string(&a.queries).expect("read the queries");
    let sigs: Vec<Signature> = text
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| v.get("text").and_then(|t| t.as_str()).map(str::to_owned))
        .map(|t| hasher.sketch_text(&t))
        .collect();
    let opts = QueryOptions {
        threshold: a.threshold,
        limit: None,
        ..QueryOptions::default()
    };
    // Warm the page cache and count the work once.
    let (mut candidates, mut verified, mut matches) = (0usize, 0usize, 0usize);
    for s in &sigs {
        let r = db.query(s, &opts).expect("query");
        candidates += r.stats.candidates;
        verified += r.stats.verified;
        matches += r.matches.len();
    }
    let n = sigs.len().max(1);
    println!(
        "{} queries: {:.0} candidates, {:.0} verified, {:.0} matches per query",
        sigs.len(),
        candidates as f64 / n as f64,
        verified as f64 / n as f64,
        matches as f64 / n as f64
    );
    let one_by_one = || {
        sigs.iter()
            .map(|s| db.query(s, &opts).expect("query").matches.len())
            .sum::<usize>()
    };
    let single = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .expect("a pool");
    let (t1, m1) = single.install(|| best_of(a.passes, one_by_one));
    let cpu1 = single.install(|| {
        (0..a.passes.max(1))
            .map(|_| {
                let c = thread_cpu();
                one_by_one();
                thread_cpu() - c
            })
            .min()
            .unwrap_or_default()
    });
    let (tn, mn) = best_of(a.passes, one_by_one);
    let (tb, mb) = best_of(a.passes, || {
        db.query_batch(&sigs, &opts)
            .expect("batch")
            .iter()
            .map(|r| r.matches.len())
            .sum()
    });
    assert!(m1 == matches && mn == matches && mb == matches);
    let per_cand = |t: Duration| t.as_nanos() as f64 / candidates.max(1) as f64;
    let per_query = |t: Duration| t.as_secs_f64() * 1e3 / n as f64;
    let cores = rayon::current_num_threads();
    println!(
        "one thread, CPU time:    {:8.1} ns per unique candidate, {:7.3} ms per query",
        per_cand(cpu1),
        per_query(cpu1)
    );
    println!(
        "one thread:              {:8.1} ns per unique candidate, {:7.3} ms per query, {:7.0} queries/s",
        per_cand(t1),
        per_query(t1),
        n as f64 / t1.as_secs_f64()
    );
    println!(
        "one at a time, {cores} cores:  {:8.1} ns per unique candidate, {:7.3} ms per query, {:7.0} queries/s ({:.2}x one thread)",
        per_cand(tn),
        per_query(tn),
        n as f64 / tn.as_secs_f64(),
        t1.as_secs_f64() / tn.as_secs_f64()
    );
    println!(
        "batch, {cores} cores:          {:8.1} ns per unique candidate, {:7.3} ms per query, {:7.0} queries/s ({:.2}x one thread)",
        per_cand(tb),
        per_query(tb),
        n as f64 / tb.as_secs_f64(),
        t1.as_secs_f64() / tb.as_secs_f64()
    );
}
