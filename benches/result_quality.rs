//! Exact ground truth and query latency for `tools/bench/result_quality.py` (result quality
//! at the threshold, and top-k, on a corpus with many pairs near the threshold).
//!
//! Similarity is the exact Jaccard of the documents' shingle-hash sets as mhdb computes them
//! (default normalization, char 5-grams, `MinHasher::shingle_hashes`), so the truth and the
//! index agree on what a shingle is.
//!
//! ```text
//! cargo bench --bench result_quality -- pairs CORPUS.jsonl MIN OUT.bin
//!     every pair with J ≥ MIN: records of (u32 i, u32 j, f32 J), little-endian, i < j the
//!     documents' line numbers (AllPairs with prefix and positional filtering: Bayardo et
//!     al. 2007, Xiao et al. 2008)
//! cargo bench --bench result_quality -- topk CORPUS.jsonl QUERIES.jsonl K FLOOR
//!     brute force: per query line, the K documents of highest J ≥ FLOOR (ties by key), as
//!     JSON lines {"id", "top": [[key, J], ...]}
//! cargo bench --bench result_quality -- latency DB QUERIES.jsonl [TOP]
//!     signs every query, then times `Db::query` (or top-TOP queries) one by one on one
//!     thread, twice (the second pass is reported): {"queries", "p50_us", "p90_us",
//!     "mean_us", "matches"}
//! ```

use std::io::{BufRead, BufReader, BufWriter, Write};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use mhdb::db::{Db, QueryOptions};
use mhdb::sketch::{MinHasher, SketchParams};
use rayon::prelude::*;

type Res<T> = Result<T, Box<dyn std::error::Error>>;

fn read_jsonl(path: &str) -> Res<Vec<(String, String)>> {
    let mut out = Vec::new();
    for (n, line) in BufReader::new(std::fs::File::open(path)?)
        .lines()
        .enumerate()
    {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let v: serde_json::Value =
            serde_json::from_str(&line).map_err(|e| format!("{path}:{}: not JSON: {e}", n + 1))?;
        let field = |name: &str| {
            v.get(name)
                .and_then(|x| x.as_str())
                .map(str::to_owned)
                .ok_or_else(|| format!("{path}:{}: no string field {name:?}", n + 1))
        };
        out.push((field("id")?, field("text")?));
    }
    Ok(out)
}

/// Each text's distinct shingle hashes, sorted.
fn shingle_sets(docs: &[(String, String)]) -> Res<Vec<Vec<u64>>> {
    let hasher = MinHasher::new(SketchParams::default())?;
    Ok(docs
        .par_iter()
        .map(|(_, text)| {
            let mut h = hasher.shingle_hashes(text);
            h.sort_unstable();
            h.dedup();
            h
        })
        .collect())
}

/// |A ∩ B| of two sorted sets, or `None` as soon as it cannot reach `needed`.
fn overlap_at_least<T: Ord>(a: &[T], b: &[T], needed: usize) -> Option<usize> {
    let (mut i, mut j, mut n) = (0, 0, 0);
    while i < a.len() && j < b.len() {
        if n + (a.len() - i).min(b.len() - j) < needed {
            return None;
        }
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                n += 1;
                i += 1;
                j += 1;
            }
        }
    }
    (n >= needed).then_some(n)
}

/// The fewest shared elements that give J ≥ t for sets of sizes `a` and `b`.
fn needed_overlap(t: f64, a: usize, b: usize) -> usize {
    // J = o / (a + b − o) ≥ t  ⇔  o ≥ t (a + b) / (1 + t); a tiny slack for rounding, the
    // exact test follows.
    ((t * (a + b) as f64 / (1.0 + t)) - 1e-9).ceil().max(1.0) as usize
}

fn jaccard(overlap: usize, a: usize, b: usize) -> f64 {
    overlap as f64 / (a + b - overlap) as f64
}

/// AllPairs: tokens ranked rarest first; a pair with J ≥ t shares a token among the first
/// |A| − ⌈t·|A|⌉ + 1 of each, and only pairs of sizes within a factor t are compared.
fn pairs(corpus: &str, min: f64, out: &str) -> Res<()> {
    let docs = read_jsonl(corpus)?;
    let sets = shingle_sets(&docs)?;
    let mut df: std::collections::HashMap<u64, u32> = std::collections::HashMap::new();
    for s in &sets {
        for &h in s {
            *df.entry(h).or_default() += 1;
        }
    }
    let mut tokens: Vec<(u32, u64)> = df.iter().map(|(&h, &n)| (n, h)).collect();
    tokens.sort_unstable();
    let rank: std::collections::HashMap<u64, u32> = tokens
        .iter()
        .enumerate()
        .map(|(r, &(_, h))| (h, r as u32))
        .collect();
    drop(df);
    let ranked: Vec<Vec<u32>> = sets
        .par_iter()
        .map(|s| {
            let mut r: Vec<u32> = s.iter().map(|h| rank[h]).collect();
            r.sort_unstable();
            r
        })
        .collect();
    drop(sets);
    let prefix = |n: usize| n - (min * n as f64).ceil() as usize + 1;
    // (document, position of the token in it) per token.
    let mut postings: Vec<Vec<(u32, u32)>> = vec![Vec::new(); tokens.len()];
    for (d, r) in ranked.iter().enumerate() {
        if r.is_empty() {
            continue;
        }
        for (pos, &t) in r[..prefix(r.len()).min(r.len())].iter().enumerate() {
            postings[t as usize].push((d as u32, pos as u32));
        }
    }
    let done = AtomicUsize::new(0);
    let found: Vec<Vec<(u32, u32, f32)>> = (0..ranked.len())
        .into_par_iter()
        .map_init(
            || vec![u32::MAX; ranked.len()],
            |seen, i| {
                let a = &ranked[i];
                let mut out = Vec::new();
                if a.is_empty() {
                    return out;
                }
                for (p, &t) in a[..prefix(a.len()).min(a.len())].iter().enumerate() {
                    for &(j, q) in &postings[t as usize] {
                        let j = j as usize;
                        // Each pair once, from its larger document (ties by number).
                        let b = &ranked[j];
                        if (b.len(), j) >= (a.len(), i) || seen[j] == i as u32 {
                            continue;
                        }
                        seen[j] = i as u32;
                        if (b.len() as f64) < min * a.len() as f64 {
                            continue;
                        }
                        let needed = needed_overlap(min, a.len(), b.len());
                        // Positional filter (PPJoin, Xiao et al. 2008): the first shared
                        // token is at p in A and q in B, so at most this many are shared.
                        let most = 1 + (a.len() - p - 1).min(b.len() - q as usize - 1);
                        if most < needed {
                            continue;
                        }
                        if let Some(o) = overlap_at_least(a, b, needed) {
                            let jac = jaccard(o, a.len(), b.len());
                            if jac >= min {
                                out.push((i.min(j) as u32, i.max(j) as u32, jac as f32));
                            }
                        }
                    }
                }
                let n = done.fetch_add(1, Ordering::Relaxed) + 1;
                if n.is_multiple_of(2000) {
                    eprintln!("pairs: {n} of {} documents", ranked.len());
                }
                out
            },
        )
        .collect();
    let mut w = BufWriter::new(std::fs::File::create(out)?);
    let mut count = 0usize;
    for (i, j, jac) in found.into_iter().flatten() {
        w.write_all(&i.to_le_bytes())?;
        w.write_all(&j.to_le_bytes())?;
        w.write_all(&jac.to_le_bytes())?;
        count += 1;
    }
    w.flush()?;
    eprintln!(
        "{count} pairs with J ≥ {min} among {} documents",
        docs.len()
    );
    Ok(())
}

/// Brute-force top-k by exact Jaccard, ties by key, nothing below `floor`.
fn topk(corpus: &str, queries: &str, k: usize, floor: f64) -> Res<()> {
    let docs = read_jsonl(corpus)?;
    let sets = shingle_sets(&docs)?;
    let qdocs = read_jsonl(queries)?;
    let qsets = shingle_sets(&qdocs)?;
    let answers: Vec<String> = qsets
        .par_iter()
        .zip(&qdocs)
        .map(|(q, (id, _))| {
            let mut best: Vec<(f64, &str)> = Vec::new();
            if !q.is_empty() {
                for (s, (key, _)) in sets.iter().zip(&docs) {
                    let (lo, hi) = (q.len().min(s.len()), q.len().max(s.len()));
                    if s.is_empty() || (lo as f64) < floor * hi as f64 {
                        continue;
                    }
                    let needed = needed_overlap(floor, q.len(), s.len());
                    if let Some(o) = overlap_at_least(q, s, needed) {
                        let j = jaccard(o, q.len(), s.len());
                        if j >= floor {
                            best.push((j, key));
                        }
                    }
                }
            }
            best.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(b.1)));
            best.truncate(k);
            serde_json::json!({"id": id, "top": best.iter().map(|(j, key)| serde_json::json!([key, j])).collect::<Vec<_>>()})
                .to_string()
        })
        .collect();
    let stdout = std::io::stdout();
    let mut w = BufWriter::new(stdout.lock());
    for a in answers {
        writeln!(w, "{a}")?;
    }
    Ok(())
}

fn latency(db: &str, queries: &str, top: Option<usize>) -> Res<()> {
    let db = Db::open_read_only(db)?;
    let hasher = db.hasher()?;
    let sigs: Vec<_> = read_jsonl(queries)?
        .iter()
        .map(|(_, t)| hasher.sketch_text(t))
        .collect();
    let opts = QueryOptions {
        top,
        ..QueryOptions::default()
    };
    let mut times = Vec::new();
    let mut matches = 0usize;
    for pass in 0..2 {
        times.clear();
        matches = 0;
        for s in &sigs {
            let t0 = Instant::now();
            let r = db.query(s, &opts)?;
            times.push(t0.elapsed().as_secs_f64() * 1e6);
            matches += r.matches.len();
        }
        let _ = pass;
    }
    let mean = times.iter().sum::<f64>() / times.len().max(1) as f64;
    times.sort_by(f64::total_cmp);
    let at = |q: f64| {
        times
            .get(((times.len() as f64 * q) as usize).min(times.len().saturating_sub(1)))
            .copied()
            .unwrap_or(0.0)
    };
    println!(
        "{}",
        serde_json::json!({"queries": sigs.len(), "p50_us": at(0.5), "p90_us": at(0.9), "mean_us": mean, "matches": matches})
    );
    Ok(())
}

const USAGE: &str = "usage: result_quality pairs CORPUS MIN OUT | topk CORPUS QUERIES K FLOOR | latency DB QUERIES [TOP]";

fn main() -> Res<()> {
    // `cargo bench` appends `--bench`; run with no command (as `cargo bench` alone does), this
    // only prints its usage.
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    match a.as_slice() {
        [] => {
            eprintln!("{USAGE}");
            Ok(())
        }
        ["pairs", corpus, min, out] => pairs(corpus, min.parse()?, out),
        ["topk", corpus, queries, k, floor] => topk(corpus, queries, k.parse()?, floor.parse()?),
        ["latency", db, queries] => latency(db, queries, None),
        ["latency", db, queries, top] => latency(db, queries, Some(top.parse()?)),
        _ => Err(USAGE.into()),
    }
}
