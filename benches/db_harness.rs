//! Whole-database harness (not criterion: it measures minutes-long phases once, at scale):
//! bulk and single inserts, group commit, warm and cold queries, open time and memory, bytes
//! per document, flush/compaction throughput and WAL recovery, with the gaoya crate's in-memory
//! `MinHashIndex` on the same signatures as the reference.
//!
//! Run: `cargo bench --bench db_harness -- --docs 1000000` (add `--skip-gaoya` to skip the peer,
//! `--dir PATH` to choose the disk, `--only bulk,flush,commit,recovery,text` to run some
//! phases, `--keep` to keep the databases, `--no-band-filters` to create them without band
//! filters, `--no-auto-compact` to keep every bulk call's segment (with `--bulk-chunk`, a
//! database of several segments), `--bulk-chunk N` for the documents per
//! `bulk_insert` call when loading (default 1,000,000), `--cold-only DIR` / `--warm-only DIR` to rerun
//! the cold or warm queries on a kept one, `--text-queries DB FILE` to time queries of
//! signatures precomputed from a JSONL file on a database built by `mhdb add`). `tools/bench/bench_db.sh` runs it and keeps the output.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mhdb::db::{Db, Durability, IndexParams, Options, QueryOptions, WriteBatch};
use mhdb::sketch::{Signature, SketchParams};

#[allow(dead_code)]
#[path = "support/process.rs"]
mod process;
use process::{cpu_seconds, drop_page_cache, load_average, majflt, percentile_us as pct, rss_kib};

const K: usize = 128;

struct Args {
    docs: usize,
    queries: usize,
    dir: PathBuf,
    skip_gaoya: bool,
    open_only: Option<PathBuf>,
    /// Only run the cold queries on a database the harness built before (see `--keep`).
    cold_only: Option<PathBuf>,
    /// `--text-queries DB FILE`: time queries of precomputed signatures (signed from the
    /// JSONL file's "text" fields before timing) on a database built by `mhdb add`.
    text_queries: Option<(PathBuf, PathBuf)>,
    /// Only run the warm queries (twice; the second pass is reported) on a kept database.
    warm_only: Option<PathBuf>,
    /// Keep the databases (under `--dir`) instead of removing them at the end.
    keep: bool,
    /// Documents per `bulk_insert` call when loading.
    bulk_chunk: usize,
    /// Phases to run (empty: all): bulk (bulk load, warm/cold queries, dedup, open, bytes),
    /// flush, commit, recovery, text.
    only: Vec<String>,
    /// Create the databases without band filters.
    no_band_filters: bool,
    /// Do not merge segments after a bulk insert.
    no_auto_compact: bool,
}

impl Args {
    fn wants(&self, phase: &str) -> bool {
        self.only.is_empty() || self.only.iter().any(|p| p == phase)
    }
}

fn args() -> Args {
    let mut a = Args {
        docs: 1_000_000,
        queries: 10_000,
        dir: std::env::temp_dir(),
        skip_gaoya: false,
        open_only: None,
        cold_only: None,
        warm_only: None,
        text_queries: None,
        keep: false,
        bulk_chunk: 1_000_000,
        only: Vec::new(),
        no_band_filters: false,
        no_auto_compact: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--docs" => a.docs = it.next().and_then(|v| v.parse().ok()).unwrap_or(a.docs),
            "--queries" => a.queries = it.next().and_then(|v| v.parse().ok()).unwrap_or(a.queries),
            "--dir" => a.dir = it.next().map(PathBuf::from).unwrap_or(a.dir),
            "--skip-gaoya" => a.skip_gaoya = true,
            "--open-only" => a.open_only = it.next().map(PathBuf::from),
            "--cold-only" => a.cold_only = it.next().map(PathBuf::from),
            "--warm-only" => a.warm_only = it.next().map(PathBuf::from),
            "--text-queries" => {
                a.text_queries = it.next().zip(it.next()).map(|(d, f)| (d.into(), f.into()))
            }
            "--keep" => a.keep = true,
            "--no-band-filters" => a.no_band_filters = true,
            "--no-auto-compact" => a.no_auto_compact = true,
            "--bulk-chunk" => {
                a.bulk_chunk = it
                    .next()
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(a.bulk_chunk)
            }
            "--only" => {
                a.only = it
                    .next()
                    .map(|v| v.split(',').map(str::to_owned).collect())
                    .unwrap_or_default()
            }
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

/// A random 32-bit-valued signature (as k-permutation slots are), deterministic per id.
fn signature(id: u64) -> Vec<u64> {
    (0..K as u64).map(|i| mix(id * 1000 + i) >> 32).collect()
}

/// A near-duplicate: about 6% of the slots changed (estimated Jaccard ≈ 0.94).
fn near(id: u64, salt: u64) -> Vec<u64> {
    let mut s = signature(id);
    for (i, slot) in s.iter_mut().enumerate() {
        if mix(salt * 7919 + i as u64) % 100 < 6 {
            *slot = mix(salt ^ (i as u64) << 40) >> 32;
        }
    }
    s
}

/// Queries plant near-duplicates of documents that were stored as themselves (not of the
/// every-100th documents that are stored as near-duplicates of their predecessor).
fn plain_target(t: u64) -> u64 {
    if t % 100 == 99 { t - 1 } else { t }
}

fn params(bits: u32) -> IndexParams {
    IndexParams::for_threshold(SketchParams::default(), bits, 0.8).unwrap()
}

fn bulk_opts() -> Options {
    let a = args();
    Options {
        durability: Durability::None,
        memtable_bytes: 256 << 20,
        band_filters: !a.no_band_filters,
        auto_compact: !a.no_auto_compact,
        ..Options::default()
    }
}

/// Bulk-loads `n` documents in `bulk_insert` calls of `chunk` documents each.
fn bulk_load(dir: &Path, n: usize, bits: u32, chunk: usize) -> (Db, Duration) {
    let _ = std::fs::remove_dir_all(dir);
    let db = Db::create(dir, params(bits), bulk_opts()).unwrap();
    // Only the database's work is timed, not generating the signatures.
    let mut took = Duration::ZERO;
    let chunk = chunk.max(1);
    let mut next = 0usize;
    while next < n {
        let end = (next + chunk).min(n);
        let docs: Vec<(String, Signature)> = (next..end)
            .map(|i| {
                // Every 100th document is a near-duplicate of the one before it.
                let slots = if i % 100 == 99 {
                    near(i as u64 - 1, i as u64)
                } else {
                    signature(i as u64)
                };
                (format!("doc-{i:08}"), Signature::from_slots(slots))
            })
            .collect();
        let t = Instant::now();
        db.bulk_insert(&docs).unwrap();
        took += t.elapsed();
        next = end;
    }
    let t = Instant::now();
    db.flush().unwrap();
    (db, took + t.elapsed())
}

/// `q` queries, half with a planted near-duplicate, half with none: sorted latencies of each
/// half, and how many planted ones were found. (Callers run it twice for warm figures.)
fn warm_queries(db: &Db, n: usize, q: usize) -> (Vec<Duration>, Vec<Duration>, usize) {
    let mut planted = Vec::with_capacity(q / 2);
    let mut none = Vec::with_capacity(q / 2);
    let mut found = 0usize;
    let opts = QueryOptions::default();
    for i in 0..q {
        let (sig, is_planted, target) = if i % 2 == 0 {
            let target = plain_target(mix(i as u64) % n as u64);
            (near(target, i as u64), true, target)
        } else {
            (signature(10_000_000_000 + i as u64), false, 0)
        };
        let sig = Signature::from_slots(sig);
        let t = Instant::now();
        let r = db.query(&sig, &opts).unwrap();
        let el = t.elapsed();
        if is_planted {
            planted.push(el);
            let key = format!("doc-{target:08}");
            if r.matches.iter().any(|m| m.key == key.as_bytes()) {
                found += 1;
            }
        } else {
            none.push(el);
        }
    }
    planted.sort();
    none.sort();
    (planted, none, found)
}

/// gaoya's latencies for the queries of [`warm_queries`], of each class apart (planted,
/// then no match), sorted; a first pass warms its memory as mhdb's does.
fn gaoya_warm_queries(
    index: &gaoya::minhash::MinHashIndex<u32, u64>,
    n: usize,
    q: usize,
    width: usize,
) -> [Vec<Duration>; 2] {
    let query = |i: usize| -> Vec<u32> {
        let slots = if i.is_multiple_of(2) {
            near(plain_target(mix(i as u64) % n as u64), i as u64)
        } else {
            signature(10_000_000_000 + i as u64)
        };
        slots[..width].iter().map(|&v| v as u32).collect()
    };
    let mut classes = [Vec::new(), Vec::new()];
    for pass in 0..2 {
        for i in 0..q {
            let s = query(i);
            let t = Instant::now();
            std::hint::black_box(index.query_owned_return_similarity(&s));
            if pass == 1 {
                classes[i % 2].push(t.elapsed());
            }
        }
    }
    classes.iter_mut().for_each(|c| c.sort());
    classes
}

/// 200 queries with planted near-duplicates after dropping the page cache of `dir`'s files:
/// their latencies, sorted, and the major page faults per query.
fn cold_queries(dir: &Path, n: usize) -> (Vec<Duration>, f64) {
    drop_page_cache(dir);
    let db = Db::open_read_only(dir).unwrap();
    let opts = QueryOptions::default();
    let mut cold = Vec::new();
    let f0 = majflt();
    for i in 0..200u64 {
        let target = plain_target(mix(i + 77) % n as u64);
        let sig = Signature::from_slots(near(target, i + 999));
        let t = Instant::now();
        std::hint::black_box(db.query(&sig, &opts).unwrap());
        cold.push(t.elapsed());
    }
    let faults = (majflt() - f0) as f64 / 200.0;
    cold.sort();
    (cold, faults)
}

fn main() {
    let a = args();
    if let Some((dir, file)) = &a.text_queries {
        let db = Db::open_read_only(dir).unwrap();
        let texts: Vec<String> = std::fs::read_to_string(file)
            .unwrap()
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter_map(|v| v.get("text")?.as_str().map(str::to_owned))
            .take(a.queries)
            .collect();
        let sigs = db.hasher().unwrap().sketch_batch(&texts);
        let opts = QueryOptions::default();
        let (mut matches, mut candidates, mut verified) = (0usize, 0usize, 0usize);
        for s in &sigs {
            let r = db.query(s, &opts).unwrap(); // also warms the page cache
            matches += r.matches.len();
            candidates += r.stats.candidates;
            verified += r.stats.verified;
        }
        let t = Instant::now();
        for s in &sigs {
            std::hint::black_box(db.query(s, &opts).unwrap());
        }
        let one = sigs.len() as f64 / t.elapsed().as_secs_f64();
        let t = Instant::now();
        std::hint::black_box(db.query_batch(&sigs, &opts).unwrap());
        let all = sigs.len() as f64 / t.elapsed().as_secs_f64();
        println!(
            "{{\"queries\": {}, \"matches\": {matches}, \"candidates\": {candidates}, \"verified\": {verified}, \"one_thread\": {one:.0}, \"all_cores\": {all:.0}}}",
            sigs.len()
        );
        return;
    }
    if let Some(dir) = &a.warm_only {
        let db = Db::open_read_only(dir).unwrap();
        let n = db.stats().unwrap().live_docs as usize;
        let q = a.queries.min(n);
        warm_queries(&db, n, q); // fault the pages in
        let (planted, none, found) = warm_queries(&db, n, q);
        println!(
            "warm query ({} segments, load {}) planted p50 {:.1} µs, p99 {:.1} µs, recall {:.4}; no match p50 {:.1} µs, p99 {:.1} µs",
            db.stats().unwrap().segments,
            load_average(),
            pct(&planted, 0.5),
            pct(&planted, 0.99),
            found as f64 / planted.len().max(1) as f64,
            pct(&none, 0.5),
            pct(&none, 0.99)
        );
        return;
    }
    if let Some(dir) = &a.cold_only {
        let n = Db::open_read_only(dir).unwrap().stats().unwrap().live_docs as usize;
        let (cold, faults) = cold_queries(dir, n);
        println!(
            "cold query p50 {:.0} µs, p90 {:.0} µs, p99 {:.0} µs, {faults:.1} major faults/query",
            pct(&cold, 0.5),
            pct(&cold, 0.9),
            pct(&cold, 0.99)
        );
        return;
    }
    if let Some(dir) = a.open_only {
        let before = rss_kib();
        let t = Instant::now();
        let db = Db::open_read_only(&dir).unwrap();
        let open = t.elapsed();
        let after = rss_kib();
        println!("{} {} {}", open.as_secs_f64() * 1e3, before, after);
        drop(db);
        return;
    }
    let n = a.docs;
    let base = a.dir.join(format!("mhdb-bench-{}", std::process::id()));
    std::fs::create_dir_all(&base).unwrap();
    println!("# mhdb database harness: {n} documents, k = {K}, threshold 0.8");
    let p = params(32);
    println!(
        "parameters: {} bands × {} rows, 32-bit signatures, P(0.8) = {:.4}\n",
        p.lsh.bands,
        p.lsh.rows,
        p.lsh.probability(0.8)
    );
    println!("load average at start: {}\n", load_average());
    println!("| measurement | mhdb | gaoya (in memory) |");
    println!("| --- | --- | --- |");

    if a.wants("bulk") {
        // 1. Bulk insert of precomputed signatures, durable at the end.
        let dir32 = base.join("db32");
        let cpu0 = cpu_seconds();
        let (db, took) = bulk_load(&dir32, n, 32, a.bulk_chunk);
        let bulk_cpu = cpu_seconds() - cpu0;
        let stats = db.stats().unwrap();
        let bulk_rate = n as f64 / took.as_secs_f64();

        // gaoya on the same signatures.
        let mut gaoya_row = String::from("–");
        let mut gaoya_query = None;
        let mut gaoya_index = None;
        if !a.skip_gaoya {
            let width = p.lsh.bands * p.lsh.rows;
            let rss0 = rss_kib();
            let cpu0 = cpu_seconds();
            let t = Instant::now();
            let mut index: gaoya::minhash::MinHashIndex<u32, u64> =
                gaoya::minhash::MinHashIndex::new(p.lsh.bands, p.lsh.rows, 0.8);
            // Its parallel bulk API, in calls of as many documents as mhdb's bulk insert gets.
            let chunk = a.bulk_chunk.clamp(1, n);
            for start in (0..n).step_by(chunk) {
                let ids: Vec<u64> = (start as u64..(start + chunk).min(n) as u64).collect();
                // gaoya wants exactly bands × rows slots.
                let sigs = ids
                    .iter()
                    .map(|&i| signature(i)[..width].iter().map(|&v| v as u32).collect())
                    .collect();
                index.par_bulk_insert(ids, sigs);
            }
            let g = t.elapsed();
            let rss1 = rss_kib();
            gaoya_row = format!(
                "{:.0} docs/s, {:.1} s user+sys CPU ({:.0} B RAM/doc)",
                n as f64 / g.as_secs_f64(),
                cpu_seconds() - cpu0,
                (rss1.saturating_sub(rss0) * 1024) as f64 / n as f64
            );
            gaoya_index = Some(index);
        }
        println!(
            "| bulk insert, precomputed signatures (durable at end; calls of {} docs) | {bulk_rate:.0} docs/s, {bulk_cpu:.1} s user+sys CPU | {gaoya_row} |",
            a.bulk_chunk.min(n)
        );

        // 2. Queries, warm: half with a planted near-duplicate, half with none.
        let q = a.queries.min(n);
        warm_queries(&db, n, q); // a first pass maps the pages in: "warm" means resident
        let (planted, none, found) = warm_queries(&db, n, q);
        if let Some(index) = &gaoya_index {
            gaoya_query = Some(gaoya_warm_queries(index, n, q, p.lsh.bands * p.lsh.rows));
        }
        let gaoya_cell = |class: usize| {
            gaoya_query
                .as_ref()
                .map_or("–".into(), |g: &[Vec<Duration>; 2]| {
                    let lat = &g[class];
                    format!("p50 {:.1} µs, p99 {:.1} µs", pct(lat, 0.5), pct(lat, 0.99))
                })
        };
        println!(
            "| warm query, planted near-duplicate ({} segments) | p50 {:.1} µs, p99 {:.1} µs, recall {:.4} | {} |",
            stats.segments,
            pct(&planted, 0.5),
            pct(&planted, 0.99),
            found as f64 / planted.len().max(1) as f64,
            gaoya_cell(0)
        );
        println!(
            "| warm query, no match | p50 {:.1} µs, p99 {:.1} µs | {} |",
            pct(&none, 0.5),
            pct(&none, 0.99),
            gaoya_cell(1)
        );
        drop(gaoya_index);

        // Dedup of the whole database (every band's buckets, verified pairs).
        let rss_before = rss_kib();
        let t = Instant::now();
        let mut pairs = 0u64;
        let dstats = db
            .dedup_pairs(
                0.8,
                |_| {
                    pairs += 1;
                    Ok(())
                },
                |_, _| {},
            )
            .unwrap();
        let took = t.elapsed();
        println!(
            "| dedup, all pairs at 0.8 | {:.2} s ({:.0} docs/s, {} pairs, {} comparisons, RSS +{:.0} MiB) | |",
            took.as_secs_f64(),
            n as f64 / took.as_secs_f64(),
            pairs,
            dstats.compared,
            rss_kib().saturating_sub(rss_before) as f64 / 1024.0
        );

        // 3. Cold queries after dropping the page cache of every file.
        drop(db);
        let (cold, faults) = cold_queries(&dir32, n);
        println!(
            "| cold query (page cache dropped, 200 queries) | p50 {:.0} µs, p99 {:.0} µs, {faults:.1} major faults/query | |",
            pct(&cold, 0.5),
            pct(&cold, 0.99)
        );

        // 4. Open time and resident memory right after open, in a fresh process.
        let exe = std::env::current_exe().unwrap();
        let out = std::process::Command::new(exe)
            .arg("--open-only")
            .arg(&dir32)
            .output()
            .unwrap();
        let line = String::from_utf8_lossy(&out.stdout);
        let f: Vec<f64> = line
            .split_whitespace()
            .filter_map(|v| v.parse().ok())
            .collect();
        if f.len() == 3 {
            println!(
                "| open (read-only, fresh process) | {:.1} ms, RSS {:.1} MiB after open (+{:.1} MiB) | |",
                f[0],
                f[2] / 1024.0,
                (f[2] - f[1]) / 1024.0
            );
        }

        // 5. Bytes per document per component at 32 and 8 bits.
        let per_doc = |s: &mhdb::db::Stats| {
            s.bytes
                .iter()
                .map(|(k, v)| format!("{k} {:.1}", *v as f64 / n as f64))
                .collect::<Vec<_>>()
                .join(", ")
        };
        println!("| bytes/doc on disk, 32-bit | {} | |", per_doc(&stats));
        let seg_bytes = stats.bytes.get("segments").copied().unwrap_or(0);
        println!(
            "| segment bytes per (doc, band) incl. keys | {:.2} | |",
            seg_bytes as f64 / (n * p.lsh.bands) as f64
        );
        let dir8 = base.join("db8");
        let (db8, took8) = bulk_load(&dir8, n, 8, a.bulk_chunk);
        println!(
            "| bulk insert, 8-bit signatures (durable at end) | {:.0} docs/s | |",
            n as f64 / took8.as_secs_f64()
        );
        println!(
            "| bytes/doc on disk, 8-bit | {} | |",
            per_doc(&db8.stats().unwrap())
        );
        drop(db8);
        let _ = std::fs::remove_dir_all(&dir8);
    }

    if a.wants("flush") {
        // 6. Flush and compaction throughput.
        let dirf = base.join("dbf");
        let db = Db::create(&dirf, params(32), bulk_opts()).unwrap();
        let m = (n / 4).max(1000);
        for chunk in (0..m).collect::<Vec<_>>().chunks(10_000) {
            let mut b = WriteBatch::new();
            for &i in chunk {
                b.insert(
                    format!("doc-{i:08}"),
                    Signature::from_slots(signature(i as u64)),
                );
            }
            db.write(&b).unwrap();
        }
        db.commit().unwrap();
        let t = Instant::now();
        db.flush().unwrap();
        let flush = t.elapsed();
        let s = db.stats().unwrap();
        let written = s.bytes.get("segments").copied().unwrap_or(0)
            + s.bytes.get("signatures").copied().unwrap_or(0);
        for round in 0..3 {
            let docs: Vec<(String, Signature)> = (0..m / 4)
                .map(|i| {
                    let id = m + round * m + i;
                    (
                        format!("doc-{id:08}"),
                        Signature::from_slots(signature(id as u64)),
                    )
                })
                .collect();
            db.bulk_insert(&docs).unwrap();
        }
        let seg_before = db
            .stats()
            .unwrap()
            .bytes
            .get("segments")
            .copied()
            .unwrap_or(0);
        let t = Instant::now();
        db.compact_full().unwrap();
        let compact = t.elapsed();
        println!(
            "| flush ({m} docs) | {:.0} MB/s ({:.2} s) | |",
            written as f64 / 1e6 / flush.as_secs_f64(),
            flush.as_secs_f64()
        );
        println!(
            "| full compaction | {:.0} MB/s of segments ({:.2} s) | |",
            seg_before as f64 / 1e6 / compact.as_secs_f64(),
            compact.as_secs_f64()
        );
        drop(db);
        let _ = std::fs::remove_dir_all(&dirf);
    }

    if a.wants("commit") {
        // 7. Single inserts with a sync commit each, and group commit with 8 writers.
        let dirs = base.join("dbs");
        let db = Arc::new(Db::create(&dirs, params(32), Options::default()).unwrap());
        let singles = 2000u64;
        let t = Instant::now();
        for i in 0..singles {
            db.insert(format!("s{i}"), &Signature::from_slots(signature(i)))
                .unwrap();
        }
        let single = singles as f64 / t.elapsed().as_secs_f64();
        let per_thread = 1500u64;
        let t = Instant::now();
        std::thread::scope(|scope| {
            for th in 0..8u64 {
                let db = db.clone();
                scope.spawn(move || {
                    for i in 0..per_thread {
                        let id = 1_000_000 + th * per_thread + i;
                        db.insert(format!("g{id}"), &Signature::from_slots(signature(id)))
                            .unwrap();
                    }
                });
            }
        });
        let group = (8 * per_thread) as f64 / t.elapsed().as_secs_f64();
        println!("| single inserts, fsync per commit | {single:.0} commits/s | |");
        println!("| group commit, 8 writer threads | {group:.0} durable inserts/s | |");
        drop(db);
        let _ = std::fs::remove_dir_all(&dirs);
    }

    if a.wants("recovery") {
        // 8. Recovery of a 100k-record WAL.
        let dirr = base.join("dbr");
        let db = Db::create(&dirr, params(32), bulk_opts()).unwrap();
        let records = 100_000u64;
        for i in 0..records {
            db.insert(format!("r{i}"), &Signature::from_slots(signature(i)))
                .unwrap();
        }
        db.commit().unwrap();
        drop(db);
        let t = Instant::now();
        let db = Db::open(&dirr, bulk_opts()).unwrap();
        let rec = t.elapsed();
        assert!(db.contains("r99999").unwrap());
        println!(
            "| recovery, {records} WAL records | {:.0} ms ({:.0} records/s) | |",
            rec.as_secs_f64() * 1e3,
            records as f64 / rec.as_secs_f64()
        );
        drop(db);
    }

    if a.wants("text") {
        // 9. Text insert throughput (signing on every core).
        let dirt = base.join("dbt");
        let db = Db::create(&dirt, params(32), bulk_opts()).unwrap();
        let texts: Vec<String> = (0..20_000u64)
            .map(|d| {
                (0..350)
                    .map(|w| format!("w{}", mix(d * 1000 + w) % 20_000))
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect();
        let bytes: usize = texts.iter().map(|t| t.len()).sum();
        let t = Instant::now();
        for chunk in texts.chunks(2000) {
            let sigs = db.hasher().unwrap().sketch_batch(chunk);
            let mut b = WriteBatch::new();
            for (i, s) in sigs.into_iter().enumerate() {
                b.insert(format!("t{}-{i}", chunk.as_ptr() as usize), s);
            }
            db.write(&b).unwrap();
        }
        db.flush().unwrap();
        let el = t.elapsed().as_secs_f64();
        println!(
            "| bulk insert from text ({} docs, {:.1} KB avg) | {:.0} docs/s, {:.0} MB/s of text | |",
            texts.len(),
            bytes as f64 / texts.len() as f64 / 1e3,
            texts.len() as f64 / el,
            bytes as f64 / 1e6 / el
        );
        drop(db);
    }

    println!("\nload average at the end: {}", load_average());
    if a.keep {
        println!("\nkept the databases under {}", base.display());
    } else {
        let _ = std::fs::remove_dir_all(&base);
    }
}
