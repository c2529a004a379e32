//! A SimHash-pigeonhole index on disk against gaoya's in-memory `SimHashIndex`, on real text.
//!
//! Documents: the texts of `--corpus FILE` (JSON lines with a "text" field, e.g. the
//! boilerplate-heavy multilingual pages of `tools/bench/hot_corpus.py`), fingerprinted with the
//! default parameters (char 5-grams, h = 3) under each weighting (`tf`, `logtf`); optionally
//! `--pad N` random fingerprints more, to see a large index. Queries: `--queries Q` corpus
//! documents with about 2 % of their words replaced by words of another document (the
//! near-duplicate lookups an index is for).
//!
//! Per weighting it reports how full the 16-bit block buckets get (the largest, the
//! 99th-percentile one, how many reach a cap) and, per bucket cap (`--caps`, default
//! 10000,1000,0 = none), an index built with `bulk_insert` and compacted to one segment:
//! recall of the queries' matches against a brute-force scan (every fingerprint within 3 bits;
//! caps can cut members out of hot buckets), candidates and matches per query, and latency by
//! fingerprint, p50 / p99, warm (second pass) and cold (page cache of every file dropped, a
//! fresh read-only open, 200 queries, major faults per query); then gaoya's index
//! (`SimHashIndex::<u64, u32>::new(5, 4)`: five 12–13-bit blocks, and gaoya keeps distances
//! *below* 4, so it finds the same d ≤ 3 set) on the same fingerprints in the same run.
//!
//! Run: `tools/bench/simhash_bench.sh` (builds the corpus), or
//! `cargo bench --bench simhash_harness -- --corpus FILE [--docs N] [--pad N] [--queries Q]
//! [--caps 10000,0] [--dir DIR]`.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use gaoya::simhash::SimHashIndex;
use mhdb::db::{Db, IndexParams, Options, QueryOptions};
use mhdb::sketch::{SimHash, SimHasher, SimParams, SimWeighting};

#[allow(dead_code)]
#[path = "support/process.rs"]
mod process;
use process::{drop_page_cache, majflt, percentile_us as pct};

struct Args {
    corpus: PathBuf,
    docs: usize,
    pad: usize,
    queries: usize,
    caps: Vec<u32>,
    dir: PathBuf,
}

fn args() -> Args {
    let mut a = Args {
        corpus: PathBuf::from("/tmp/shbench/hot.jsonl"),
        docs: usize::MAX,
        pad: 0,
        queries: 1000,
        caps: vec![10_000, 1_000, 0],
        dir: std::env::temp_dir().join("mhdb-simhash-harness"),
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = || it.next().unwrap_or_default();
        match arg.as_str() {
            "--corpus" => a.corpus = value().into(),
            "--docs" => a.docs = value().parse().expect("--docs N"),
            "--pad" => a.pad = value().parse().expect("--pad N"),
            "--queries" => a.queries = value().parse().expect("--queries Q"),
            "--caps" => {
                a.caps = value()
                    .split(',')
                    .map(|c| c.parse().expect("--caps N,N"))
                    .collect()
            }
            "--dir" => a.dir = value().into(),
            _ => {} // cargo bench passes --bench
        }
    }
    a
}

fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn load(path: &Path, limit: usize) -> Vec<String> {
    let data = std::fs::read_to_string(path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (build it with python3 -m tools.bench.hot_corpus)",
            path.display()
        )
    });
    data.lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| v["text"].as_str().map(str::to_owned))
        .filter(|t| !t.trim().is_empty())
        .take(limit)
        .collect()
}

/// Document `i` with about 2 % of its words replaced by words of document `i + 1`.
fn edited(texts: &[String], i: usize, salt: u64) -> String {
    let donor: Vec<&str> = texts[(i + 1) % texts.len()].split_whitespace().collect();
    texts[i]
        .split_whitespace()
        .enumerate()
        .map(|(w, word)| {
            let r = mix(salt ^ (w as u64) << 20);
            if r.is_multiple_of(50) && !donor.is_empty() {
                donor[(r >> 8) as usize % donor.len()]
            } else {
                word
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Every stored index within 3 bits of `q` (the brute-force answer).
fn brute_force(fps: &[u64], q: u64) -> Vec<u32> {
    (0..fps.len() as u32)
        .filter(|&i| (fps[i as usize] ^ q).count_ones() <= 3)
        .collect()
}

/// Runs every query against `db`: per-query latencies (sorted), matches found of the
/// brute-force ones, total matches and candidates.
fn timed_queries(
    db: &Db,
    queries: &[u64],
    truth: &[Vec<u32>],
) -> (Vec<Duration>, usize, usize, usize) {
    let opts = QueryOptions::default();
    let (mut times, mut found, mut matches, mut candidates) = (Vec::new(), 0, 0, 0);
    for (q, want) in queries.iter().zip(truth) {
        let t = Instant::now();
        let r = db.query_simhash(SimHash(*q), &opts).unwrap();
        times.push(t.elapsed());
        matches += r.matches.len();
        candidates += r.stats.candidates;
        let got: std::collections::HashSet<u32> = r
            .matches
            .iter()
            .map(|m| std::str::from_utf8(&m.key).unwrap()[1..].parse().unwrap())
            .collect();
        found += want.iter().filter(|i| got.contains(i)).count();
    }
    times.sort();
    (times, found, matches, candidates)
}

fn main() {
    let a = args();
    let texts = load(&a.corpus, a.docs);
    println!(
        "corpus {}: {} documents, {:.1} MB; {} random fingerprints added; {} queries",
        a.corpus.display(),
        texts.len(),
        texts.iter().map(String::len).sum::<usize>() as f64 / 1e6,
        a.pad,
        a.queries
    );
    let query_texts: Vec<String> = (0..a.queries)
        .map(|i| edited(&texts, mix(i as u64) as usize % texts.len(), i as u64))
        .collect();
    let _ = std::fs::remove_dir_all(&a.dir);
    std::fs::create_dir_all(&a.dir).unwrap();
    for weighting in [SimWeighting::Tf, SimWeighting::LogTf] {
        let sim = SimParams {
            weighting,
            ..SimParams::default()
        };
        let hasher = SimHasher::new(sim).unwrap();
        let t = Instant::now();
        let mut fps: Vec<u64> = hasher
            .sketch_batch(&texts)
            .iter()
            .map(|f| f.bits())
            .collect();
        let sketch_s = t.elapsed().as_secs_f64();
        fps.extend((0..a.pad as u64).map(|i| mix(i ^ 0xA5A5_0000_0000)));
        let queries: Vec<u64> = hasher
            .sketch_batch(&query_texts)
            .iter()
            .map(|f| f.bits())
            .collect();
        let truth: Vec<Vec<u32>> = queries.iter().map(|&q| brute_force(&fps, q)).collect();
        let true_matches: usize = truth.iter().map(Vec::len).sum();
        // Bucket sizes of the four 16-bit blocks (no cap).
        let mut fullest = Vec::new();
        for block in hasher.blocks() {
            let mut counts = std::collections::HashMap::<u64, u32>::new();
            for &f in &fps {
                *counts.entry(block.value(SimHash(f))).or_default() += 1;
            }
            let mut sizes: Vec<u32> = counts.into_values().collect();
            sizes.sort_unstable();
            let over = |cap: u32| sizes.iter().filter(|&&s| s > cap).count();
            let docs_over = |cap: u32| {
                sizes
                    .iter()
                    .filter(|&&s| s > cap)
                    .map(|&s| s as u64)
                    .sum::<u64>()
            };
            fullest.push(format!(
                "{} values, p99 {}, max {}, >1000: {} ({} docs), >10000: {} ({} docs)",
                sizes.len(),
                sizes[((sizes.len() - 1) as f64 * 0.99) as usize],
                sizes.last().unwrap(),
                over(1000),
                docs_over(1000),
                over(10_000),
                docs_over(10_000)
            ));
        }
        println!(
            "\n## weighting {weighting}: {} fingerprints ({sketch_s:.1} s to sign on every core); \
             {true_matches} matches within 3 bits for {} queries (brute force)",
            fps.len(),
            queries.len()
        );
        for (j, f) in fullest.iter().enumerate() {
            println!("  block {j} buckets: {f}");
        }
        println!(
            "| index | recall | matches/query | candidates/query | warm p50 / p99 µs | cold p50 / p99 µs | faults/cold query |"
        );
        println!("| --- | --- | --- | --- | --- | --- | --- |");
        for &cap in &a.caps {
            let dir = a.dir.join(format!("{weighting}-cap{cap}"));
            let mut p = IndexParams::simhash(sim).unwrap();
            p.bucket_cap = (cap != 0).then_some(cap);
            {
                let db = Db::create(&dir, p, Options::default()).unwrap();
                for chunk in (0..fps.len()).collect::<Vec<_>>().chunks(200_000) {
                    let docs: Vec<(String, mhdb::sketch::Signature)> = chunk
                        .iter()
                        .map(|&i| (format!("d{i}"), SimHash(fps[i]).to_signature()))
                        .collect();
                    db.bulk_insert(&docs).unwrap();
                }
                db.compact().unwrap();
            }
            let db = Db::open_read_only(&dir).unwrap();
            let _ = timed_queries(&db, &queries, &truth);
            let (warm, found, matches, candidates) = timed_queries(&db, &queries, &truth);
            drop(db);
            drop_page_cache(&dir);
            let db = Db::open_read_only(&dir).unwrap();
            let n = queries.len().min(200);
            let f0 = majflt();
            let (cold, ..) = timed_queries(&db, &queries[..n], &truth[..n]);
            let faults = (majflt() - f0) as f64 / n as f64;
            let q = queries.len() as f64;
            println!(
                "| mhdb, cap {} | {:.4} | {:.1} | {:.1} | {:.0} / {:.0} | {:.0} / {:.0} | {faults:.1} |",
                if cap == 0 {
                    "none".to_string()
                } else {
                    cap.to_string()
                },
                found as f64 / true_matches.max(1) as f64,
                matches as f64 / q,
                candidates as f64 / q,
                pct(&warm, 0.5),
                pct(&warm, 0.99),
                pct(&cold, 0.5),
                pct(&cold, 0.99),
            );
        }
        // gaoya, in memory, on the same fingerprints.
        let mut index = SimHashIndex::<u64, u32>::new(5, 4);
        let t = Instant::now();
        index.par_bulk_insert((0..fps.len() as u32).collect(), fps.clone());
        let insert_s = t.elapsed().as_secs_f64();
        for pass in 0..2 {
            let (mut times, mut found, mut matches) = (Vec::new(), 0, 0);
            for (q, want) in queries.iter().zip(&truth) {
                let t = Instant::now();
                let r = index.query_return_distance(q);
                times.push(t.elapsed());
                matches += r.len();
                let want: std::collections::HashSet<&u32> = want.iter().collect();
                found += r.iter().filter(|(i, _)| want.contains(i)).count();
            }
            times.sort();
            if pass == 1 {
                println!(
                    "| gaoya SimHashIndex(5, 4), in memory ({insert_s:.1} s to insert) | {:.4} | {:.1} | – | {:.0} / {:.0} | – | – |",
                    found as f64 / true_matches.max(1) as f64,
                    matches as f64 / queries.len() as f64,
                    pct(&times, 0.5),
                    pct(&times, 0.99)
                );
            }
        }
    }
    let _ = std::fs::remove_dir_all(&a.dir);
}
