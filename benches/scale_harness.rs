//! The scale harness: one database of N documents at the default shape (512 OPH slots of 4
//! bits, 13 bands × 7 rows over the first 128, threshold 0.8), bulk-loaded and then measured
//! as an operator would: insert rate and CPU, bytes per document, open time and memory in a
//! fresh process, warm and cold latencies of planted and no-match queries, and a dedup of
//! the whole database in a fresh process with its peak memory. One JSON object per run goes
//! to `--json FILE`; `tools/bench/scale_run.sh` runs it at 1M, 10M and 10⁸ documents and
//! draws the chart.
//!
//! Run: `cargo bench --bench scale_harness -- --docs 1000000 --dir DIR [--json FILE]
//! [--queries 10000] [--cold 200] [--chunk 1000000] [--keep]`.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use mhdb::db::{Db, Durability, IndexParams, Options, QueryOptions};
use mhdb::sketch::Signature;
use rayon::prelude::*;
use serde_json::{Value, json};

#[allow(dead_code)]
#[path = "support/process.rs"]
mod process;
use process::{
    cpu_seconds, drop_page_cache, load_average, majflt, peak_rss_kib, percentile_us, rss_kib,
};

struct Args {
    docs: usize,
    dir: PathBuf,
    json: Option<PathBuf>,
    queries: usize,
    cold: usize,
    chunk: usize,
    keep: bool,
    /// The commit measured, recorded in the JSON (the run script passes it).
    commit: String,
    /// Child process roles: open the database and report, or dedup it and report.
    open_only: Option<PathBuf>,
    dedup_only: Option<PathBuf>,
}

fn args() -> Args {
    let mut a = Args {
        docs: 1_000_000,
        dir: std::env::temp_dir(),
        json: None,
        queries: 10_000,
        cold: 200,
        chunk: 1_000_000,
        keep: false,
        commit: "unknown".into(),
        open_only: None,
        dedup_only: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut number = |d: usize| it.next().and_then(|v| v.parse().ok()).unwrap_or(d);
        match arg.as_str() {
            "--docs" => a.docs = number(a.docs),
            "--queries" => a.queries = number(a.queries),
            "--cold" => a.cold = number(a.cold),
            "--chunk" => a.chunk = number(a.chunk).max(1),
            "--dir" => a.dir = it.next().map_or(a.dir, PathBuf::from),
            "--json" => a.json = it.next().map(PathBuf::from),
            "--keep" => a.keep = true,
            "--commit" => a.commit = it.next().unwrap_or(a.commit),
            "--open-only" => a.open_only = it.next().map(PathBuf::from),
            "--dedup-only" => a.dedup_only = it.next().map(PathBuf::from),
            _ => {} // cargo bench passes --bench
        }
    }
    a
}

fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Slots of a signature at the default shape.
fn slots() -> usize {
    static SLOTS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *SLOTS.get_or_init(|| IndexParams::default().sketch.num_perm)
}

/// A random signature with 32-bit slot values (as OPH bins are), deterministic per id.
fn signature(id: u64) -> Vec<u64> {
    (0..slots() as u64)
        .map(|i| mix(id.wrapping_mul(1 << 10) + i) >> 32)
        .collect()
}

/// A near-duplicate: about 6 % of the slots changed (Jaccard ≈ 0.94).
fn near(id: u64, salt: u64) -> Vec<u64> {
    let mut s = signature(id);
    for (i, slot) in s.iter_mut().enumerate() {
        if mix(salt * 7919 + i as u64) % 100 < 6 {
            *slot = mix(salt ^ (i as u64) << 40) >> 32;
        }
    }
    s
}

/// Document `i`'s slots: every 100th is a near-duplicate of the one before it.
fn document(i: u64) -> Vec<u64> {
    if i % 100 == 99 {
        near(i - 1, i)
    } else {
        signature(i)
    }
}

/// A planted query's target: a document stored as itself.
fn planted_target(i: u64, n: usize) -> u64 {
    let t = mix(i) % n as u64;
    if t % 100 == 99 { t - 1 } else { t }
}

fn key(i: u64) -> String {
    format!("doc-{i:09}")
}

/// Query `i` of a run: even ones plant a near-duplicate of a stored document (returned as
/// its target), odd ones match nothing.
fn query(i: u64, n: usize) -> (Signature, Option<u64>) {
    if i.is_multiple_of(2) {
        let target = planted_target(i, n);
        (Signature::from_slots(near(target, i + 999)), Some(target))
    } else {
        (Signature::from_slots(signature(20_000_000_000 + i)), None)
    }
}

/// Bulk-loads `n` documents in calls of `chunk`; only the database's work is timed.
fn load(dir: &Path, n: usize, chunk: usize) -> Value {
    let _ = std::fs::remove_dir_all(dir);
    let opts = Options {
        durability: Durability::None,
        ..Options::default()
    };
    let db = Db::create(dir, IndexParams::default(), opts).unwrap();
    let (mut wall, mut cpu) = (Duration::ZERO, 0.0);
    let mut next = 0usize;
    while next < n {
        let end = (next + chunk).min(n);
        let docs: Vec<(String, Signature)> = (next as u64..end as u64)
            .into_par_iter()
            .map(|i| (key(i), Signature::from_slots(document(i))))
            .collect();
        let (t, c) = (Instant::now(), cpu_seconds());
        db.bulk_insert(&docs).unwrap();
        wall += t.elapsed();
        cpu += cpu_seconds() - c;
        next = end;
        eprintln!(
            "loaded {next} of {n}: {:.0} docs/s so far, {} segments, load {}",
            next as f64 / wall.as_secs_f64(),
            db.stats().unwrap().segments,
            load_average()
        );
    }
    let (t, c) = (Instant::now(), cpu_seconds());
    db.flush().unwrap();
    wall += t.elapsed();
    cpu += cpu_seconds() - c;
    let stats = db.stats().unwrap();
    let bytes: u64 = stats.bytes.values().sum();
    json!({
        "insert_docs_per_s": n as f64 / wall.as_secs_f64(),
        "insert_wall_s": wall.as_secs_f64(),
        "insert_cpu_s": cpu,
        "load_peak_rss_mib": peak_rss_kib() as f64 / 1024.0,
        "segments": stats.segments,
        "bytes_per_doc": bytes as f64 / n as f64,
        "bytes_per_doc_by_part": stats.bytes.iter()
            .map(|(k, v)| (k.to_string(), json!(*v as f64 / n as f64)))
            .collect::<serde_json::Map<_, _>>(),
    })
}

/// Latencies of each query class (planted, no match), sorted, with the planted recall.
struct Latencies {
    planted: Vec<Duration>,
    none: Vec<Duration>,
    found: usize,
}

impl Latencies {
    fn run(db: &Db, n: usize, queries: usize, offset: u64) -> Latencies {
        let mut l = Latencies {
            planted: Vec::new(),
            none: Vec::new(),
            found: 0,
        };
        let opts = QueryOptions::default();
        for i in offset..offset + queries as u64 {
            let (sig, target) = query(i, n);
            let t = Instant::now();
            let r = db.query(&sig, &opts).unwrap();
            let took = t.elapsed();
            match target {
                Some(target) => {
                    l.planted.push(took);
                    let want = key(target);
                    l.found += r.matches.iter().any(|m| m.key == want.as_bytes()) as usize;
                }
                None => l.none.push(took),
            }
        }
        l.planted.sort();
        l.none.sort();
        l
    }

    fn json(&self) -> Value {
        json!({
            "planted_p50_us": percentile_us(&self.planted, 0.5),
            "planted_p99_us": percentile_us(&self.planted, 0.99),
            "no_match_p50_us": percentile_us(&self.none, 0.5),
            "no_match_p99_us": percentile_us(&self.none, 0.99),
            "recall": self.found as f64 / self.planted.len().max(1) as f64,
        })
    }
}

/// Warm queries: a first pass brings their pages in, the second is reported.
fn warm(dir: &Path, n: usize, queries: usize) -> Value {
    let db = Db::open_read_only(dir).unwrap();
    Latencies::run(&db, n, queries, 0);
    Latencies::run(&db, n, queries, 0).json()
}

/// Bytes this process has caused to be read from storage (/proc/self/io).
fn read_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/io")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("read_bytes:"))?
                .split_whitespace()
                .nth(1)?
                .parse()
                .ok()
        })
        .unwrap_or(0)
}

/// Drops every file of the database (and of its subdirectories) from the page cache.
fn drop_database_cache(dir: &Path) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            drop_page_cache(&path);
        }
    }
    drop_page_cache(dir);
}

/// Waits until this process has read nothing more for half a second (at most five minutes):
/// the open's prefetch of directories and filters has landed. The seconds waited.
fn settle_reads() -> f64 {
    let t = Instant::now();
    let mut last = read_bytes();
    while t.elapsed() < Duration::from_secs(300) {
        std::thread::sleep(Duration::from_millis(500));
        let now = read_bytes();
        if now == last {
            break;
        }
        last = now;
    }
    t.elapsed().as_secs_f64()
}

/// Cold queries: the page cache of the database's files dropped, opened afresh and its
/// prefetch let land, then queries the harness has not asked before.
fn cold(dir: &Path, n: usize, queries: usize) -> Value {
    drop_database_cache(dir);
    let read = read_bytes();
    let db = Db::open_read_only(dir).unwrap();
    let settled = settle_reads();
    let prefetched = read_bytes() - read;
    let (faults, read) = (majflt(), read_bytes());
    let l = Latencies::run(&db, n, queries, 1 << 40);
    let mut v = l.json();
    v["major_faults_per_query"] = json!((majflt() - faults) as f64 / queries as f64);
    v["read_bytes_per_query"] = json!((read_bytes() - read) as f64 / queries as f64);
    v["open_prefetch_mib"] = json!(prefetched as f64 / (1 << 20) as f64);
    v["open_prefetch_s"] = json!(settled);
    v
}

/// Runs this harness again in a fresh process with `role` and returns its JSON line.
fn child(role: &str, dir: &Path) -> Value {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .arg(role)
        .arg(dir)
        .output()
        .unwrap();
    serde_json::from_slice(&out.stdout).unwrap_or_else(
        |_| json!({ "error": String::from_utf8_lossy(&out.stderr).trim().to_owned() }),
    )
}

fn open_only(dir: &Path) -> Value {
    let before = rss_kib();
    let t = Instant::now();
    let db = Db::open_read_only(dir).unwrap();
    let took = t.elapsed();
    let after = rss_kib();
    drop(db);
    json!({
        "open_ms": took.as_secs_f64() * 1e3,
        "rss_after_open_mib": after as f64 / 1024.0,
        "rss_added_by_open_mib": after.saturating_sub(before) as f64 / 1024.0,
    })
}

/// A dedup of the whole database at 0.8 from a dropped page cache, then again with what the
/// first left cached (the whole database where it fits in memory).
fn dedup_only(dir: &Path) -> Value {
    drop_database_cache(dir);
    let db = Db::open_read_only(dir).unwrap();
    let mut runs = Vec::new();
    for _ in 0..2 {
        let (t, c) = (Instant::now(), cpu_seconds());
        let mut pairs = 0u64;
        let count = |_| {
            pairs += 1;
            Ok(())
        };
        let stats = db.dedup_pairs(0.8, count, |_, _| {}).unwrap();
        runs.push((t.elapsed(), cpu_seconds() - c, pairs, stats.compared));
    }
    let [(cold, cold_cpu, pairs, compared), (warm, warm_cpu, ..)] = runs[..] else {
        unreachable!()
    };
    json!({
        "dedup_s": cold.as_secs_f64(),
        "dedup_cpu_s": cold_cpu,
        "dedup_warm_s": warm.as_secs_f64(),
        "dedup_warm_cpu_s": warm_cpu,
        "dedup_pairs": pairs,
        "dedup_compared": compared,
        "dedup_peak_rss_mib": peak_rss_kib() as f64 / 1024.0,
    })
}

fn main() {
    let a = args();
    if let Some(dir) = &a.open_only {
        println!("{}", open_only(dir));
        return;
    }
    if let Some(dir) = &a.dedup_only {
        println!("{}", dedup_only(dir));
        return;
    }
    let n = a.docs;
    let dir = a.dir.join(format!("scale-{n}"));
    let p = IndexParams::default();
    let mut run = json!({
        "docs": n,
        "shape": format!("{} slots × {} bits, {} bands × {} rows over {} slots, threshold {}",
            p.sketch.num_perm, p.bits, p.lsh.bands, p.lsh.rows, p.band_slots, p.threshold),
        "chunk": a.chunk,
        "cores": std::thread::available_parallelism().map_or(0, |c| c.get()),
        "load_at_start": load_average(),
        "commit": a.commit,
    });
    let mut add = |part: Value, label: &str| {
        eprintln!("{label}: {part}");
        for (k, v) in part.as_object().into_iter().flatten() {
            run[k] = v.clone();
        }
    };
    add(load(&dir, n, a.chunk), "load");
    add(child("--open-only", &dir), "open");
    let warm = warm(&dir, n, a.queries.min(n));
    add(json!({ "warm": warm }), "warm");
    let cold = cold(&dir, n, a.cold * 2);
    add(json!({ "cold": cold }), "cold");
    add(child("--dedup-only", &dir), "dedup");
    add(json!({ "load_at_end": load_average() }), "end");
    println!("{run}");
    if let Some(path) = &a.json {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .unwrap();
        writeln!(f, "{run}").unwrap();
    }
    if !a.keep {
        let _ = std::fs::remove_dir_all(&dir);
    }
}
