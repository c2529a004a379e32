//! SimHash quality and speed on a corpus with near-duplicates of known, graded similarity.
//!
//! Corpus: the first `--bases N` (default 120) texts of `samples/corpus.jsonl` (or of
//! `--corpus FILE`: JSON lines with a "text" field, or plain text whose blank-line separated
//! paragraphs of 400+ bytes become documents), each with six edited copies in which 0.5, 1, 2,
//! 4, 8 and 16 % of the words were replaced, deleted or had a word inserted before them
//! (deterministic). For every pair of documents this bench computes the exact cosine of the
//! term-frequency vectors of the same features SimHash uses (the shingle hashes) and the
//! Hamming distance d of the fingerprints, and reports, for each max distance H:
//!
//! - truth: pairs with cosine ≥ cos(π·H/64), the cosine at which d ≤ H is expected;
//! - recall: the fraction of those with d ≤ H (what the pigeonhole index returns: it finds
//!   every pair with d ≤ H, so the index's recall is exactly this);
//! - precision: the fraction of pairs with d ≤ H that are true, and the fraction of them
//!   whose cosine is at least 0.95 (near-duplicates by any reasonable standard);
//! - candidates: pairs sharing a block key (the verification work), next to the matches;
//!
//! and, per band of exact cosine, how often d ≤ 3 and how far cos(π·d/64) is from the truth;
//! then how full the 16-bit block buckets of h = 3 get over `--scale N` documents made of
//! random sentences of the base texts (default 200,000).
//! Then single-thread signing speed of `SimHasher::sketch_text` (unkeyed and keyed) next to
//! `MinHasher::sketch_text` (OPH, k = 128) over the same documents.
//!
//! `--weights logtf` or `--weights tfidf` fingerprints the same features with other weights
//! (through `SimHasher::sketch_weighted`; the truth is then the cosine of those weights).
//!
//! Run: `cargo bench --bench simhash_quality [-- --shingle word:1 --bases 120]`
//! (`tools/bench/simhash_bench.sh` runs it on two corpora).

use std::collections::HashMap;
use std::time::Instant;

use mhdb::sketch::{
    MinHasher, SecretKey, ShingleConfig, ShingleKind, SimHash, SimHasher, SimParams, SimWeighting,
    SketchParams, cosine_from_hamming,
};

/// One contender of the speed comparison: text → something to keep the work from vanishing.
type Signer<'a> = Box<dyn Fn(&str) -> u64 + 'a>;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (((self.next() >> 32) * n as u64) >> 32) as usize
    }

    fn chance(&mut self, p: f64) -> bool {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64 <= p
    }
}

fn load(path: &str) -> Vec<String> {
    let raw = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {path}: {e}"));
    if path.ends_with(".jsonl") {
        raw.lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter_map(|v| v["text"].as_str().map(str::to_string))
            .collect()
    } else {
        raw.split("\n\n")
            .map(|p| p.split_whitespace().collect::<Vec<_>>().join(" "))
            .filter(|p| p.len() >= 400)
            .collect()
    }
}

/// `text` with a fraction `rate` of its words replaced, deleted or preceded by an inserted word
/// (a third each), the new words drawn from `vocab`.
fn edit(text: &str, rate: f64, vocab: &[&str], rng: &mut Rng) -> String {
    let mut out: Vec<&str> = Vec::new();
    for word in text.split_whitespace() {
        if !rng.chance(rate) {
            out.push(word);
            continue;
        }
        match rng.below(3) {
            0 => out.push(vocab[rng.below(vocab.len())]),
            1 => {}
            _ => {
                out.push(vocab[rng.below(vocab.len())]);
                out.push(word);
            }
        }
    }
    out.join(" ")
}

/// How a feature's weight is computed from its term frequency (and document frequency).
#[derive(Clone, Copy, PartialEq)]
enum Weighting {
    /// tf: what `SimHasher::sketch_text` computes (spec §13.1).
    Tf,
    /// 1 + floor(log2 tf): one feature repeated many times weighs less.
    LogTf,
    /// tf · max(1, round(100 · ln(N / df))) with df over the documents being fingerprinted:
    /// features common to the whole corpus weigh little.
    TfIdf,
}

/// A document's sorted (feature hash, weight) pairs and the vector's norm.
struct Features {
    weights: Vec<(u64, u64)>,
    norm: f64,
}

/// Sorted (feature hash, term frequency) pairs.
fn term_frequencies(hashes: &[u64]) -> Vec<(u64, u64)> {
    let mut counts: HashMap<u64, u64> = HashMap::new();
    for &h in hashes {
        *counts.entry(h).or_default() += 1;
    }
    let mut v: Vec<(u64, u64)> = counts.into_iter().collect();
    v.sort_unstable();
    v
}

/// The weighted feature vectors of `docs` under `weighting`.
fn features(hasher: &SimHasher, docs: &[String], weighting: Weighting) -> Vec<Features> {
    let tfs: Vec<Vec<(u64, u64)>> = docs
        .iter()
        .map(|d| term_frequencies(&hasher.shingle_hashes(d)))
        .collect();
    let mut df: HashMap<u64, u64> = HashMap::new();
    if weighting == Weighting::TfIdf {
        for tf in &tfs {
            for &(h, _) in tf {
                *df.entry(h).or_default() += 1;
            }
        }
    }
    let n = docs.len() as f64;
    tfs.into_iter()
        .map(|tf| {
            let weights: Vec<(u64, u64)> = tf
                .into_iter()
                .map(|(h, tf)| {
                    let w = match weighting {
                        Weighting::Tf => tf,
                        Weighting::LogTf => u64::from(64 - tf.leading_zeros()),
                        Weighting::TfIdf => {
                            let idf = (100.0 * (n / df[&h] as f64).ln()).round().max(1.0);
                            tf * idf as u64
                        }
                    };
                    (h, w)
                })
                .collect();
            let norm = weights
                .iter()
                .map(|&(_, w)| (w as f64) * (w as f64))
                .sum::<f64>()
                .sqrt();
            Features { weights, norm }
        })
        .collect()
}

fn cosine(a: &Features, b: &Features) -> f64 {
    let (mut i, mut j, mut dot) = (0, 0, 0f64);
    let (x, y) = (&a.weights, &b.weights);
    while i < x.len() && j < y.len() {
        match x[i].0.cmp(&y[j].0) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                dot += x[i].1 as f64 * y[j].1 as f64;
                i += 1;
                j += 1;
            }
        }
    }
    if a.norm == 0.0 || b.norm == 0.0 {
        return 0.0;
    }
    dot / (a.norm * b.norm)
}

/// Seconds this thread has spent on a CPU (Linux: `/proc/thread-self/schedstat`), so that
/// time spent waiting for a core on a loaded machine is not counted; `None` elsewhere.
fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns: f64 = stat.split_whitespace().next()?.parse().ok()?;
    Some(ns / 1e9)
}

fn arg(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let corpus = arg(&args, "--corpus").unwrap_or_else(|| {
        concat!(env!("CARGO_MANIFEST_DIR"), "/samples/corpus.jsonl").to_string()
    });
    let bases: usize = arg(&args, "--bases").map_or(120, |b| b.parse().expect("--bases N"));
    let shingle: ShingleKind = arg(&args, "--shingle")
        .map_or(Ok(ShingleKind::Char(5)), |s| s.parse())
        .expect("--shingle char:N or word:N");

    let weighting = match arg(&args, "--weights").as_deref() {
        None | Some("tf") => Weighting::Tf,
        Some("logtf") => Weighting::LogTf,
        Some("tfidf") => Weighting::TfIdf,
        Some(other) => panic!("--weights tf|logtf|tfidf, not {other}"),
    };
    let originals: Vec<String> = load(&corpus).into_iter().take(bases).collect();
    let vocab: Vec<&str> = originals
        .iter()
        .flat_map(|t| t.split_whitespace())
        .collect();
    let rates = [0.005, 0.01, 0.02, 0.04, 0.08, 0.16];
    let mut rng = Rng(2026);
    let mut docs: Vec<String> = Vec::new();
    for text in &originals {
        docs.push(text.clone());
        for rate in rates {
            docs.push(edit(text, rate, &vocab, &mut rng));
        }
    }
    let bytes: usize = docs.iter().map(String::len).sum();
    let params = SimParams {
        shingle: ShingleConfig {
            kind: shingle,
            ..ShingleConfig::default()
        },
        ..SimParams::default()
    };
    let hasher = SimHasher::new(params).expect("valid params");
    let vectors = features(&hasher, &docs, weighting);
    let fps: Vec<SimHash> = vectors
        .iter()
        .map(|v| hasher.sketch_weighted(&v.weights))
        .collect();
    // For the weightings an index offers, the weighted form is the text fingerprint.
    let library = match weighting {
        Weighting::Tf => Some(SimWeighting::Tf),
        Weighting::LogTf => Some(SimWeighting::LogTf),
        Weighting::TfIdf => None,
    };
    if let Some(weighting) = library {
        let text_hasher = SimHasher::new(SimParams {
            weighting,
            ..params
        })
        .expect("valid params");
        assert!(
            docs.iter()
                .zip(&fps)
                .all(|(d, &f)| text_hasher.sketch_text(d) == f)
        );
    }
    let n = docs.len();
    println!(
        "corpus: {corpus}\n{} base texts + {} edited copies = {n} documents, {bytes} bytes, \
         features {shingle} ({}), {} pairs",
        originals.len(),
        n - originals.len(),
        match weighting {
            Weighting::Tf => "tf weights",
            Weighting::LogTf => "1 + log2 tf weights",
            Weighting::TfIdf => "tf-idf weights",
        },
        n * (n - 1) / 2
    );

    // Every pair: (exact cosine, Hamming distance).
    let mut pairs: Vec<(f64, u32, usize, usize)> = Vec::with_capacity(n * (n - 1) / 2);
    for i in 0..n {
        for j in i + 1..n {
            pairs.push((
                cosine(&vectors[i], &vectors[j]),
                fps[i].hamming(fps[j]),
                i,
                j,
            ));
        }
    }

    println!(
        "\n| H | truth: cos >= | true pairs | d <= H | recall | precision \
         | of d <= H, cos >= 0.95 | block-key candidates |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- | --- |");
    for h in [1u32, 2, 3, 4, 6] {
        let threshold = cosine_from_hamming(h);
        let block_hasher = SimHasher::new(SimParams {
            max_hamming: h,
            ..params
        })
        .expect("valid params");
        let keys: Vec<Vec<u64>> = fps.iter().map(|&f| block_hasher.block_keys(f)).collect();
        let (mut truth, mut found, mut hit, mut candidates) = (0usize, 0usize, 0usize, 0usize);
        let mut found_near = 0usize;
        for &(cos, d, i, j) in &pairs {
            let t = cos >= threshold - 1e-12;
            let p = d <= h;
            truth += usize::from(t);
            found += usize::from(p);
            hit += usize::from(t && p);
            found_near += usize::from(p && cos >= 0.95);
            candidates += usize::from(keys[i].iter().zip(&keys[j]).any(|(a, b)| a == b));
        }
        println!(
            "| {h} | {threshold:.4} | {truth} | {found} | {:.3} | {:.3} | {:.3} | {candidates} |",
            hit as f64 / truth.max(1) as f64,
            hit as f64 / found.max(1) as f64,
            found_near as f64 / found.max(1) as f64,
        );
    }

    println!(
        "\n| exact cosine | pairs | share with d <= 3 | mean d | mean abs(cos(pi d/64) - cos) |"
    );
    println!("| --- | --- | --- | --- | --- |");
    let bands = [
        (0.999, 1.01),
        (0.995, 0.999),
        (0.99, 0.995),
        (0.98, 0.99),
        (0.95, 0.98),
        (0.9, 0.95),
        (0.8, 0.9),
        (-1.0, 0.8),
    ];
    for (lo, hi) in bands {
        let sel: Vec<_> = pairs.iter().filter(|p| p.0 >= lo && p.0 < hi).collect();
        if sel.is_empty() {
            continue;
        }
        let m = sel.len() as f64;
        let within = sel.iter().filter(|p| p.1 <= 3).count() as f64 / m;
        let mean_d = sel.iter().map(|p| f64::from(p.1)).sum::<f64>() / m;
        let err = sel
            .iter()
            .map(|p| (cosine_from_hamming(p.1) - p.0).abs())
            .sum::<f64>()
            / m;
        println!(
            "| [{lo}, {}) | {} | {within:.3} | {mean_d:.2} | {err:.4} |",
            hi.min(1.0),
            sel.len()
        );
    }

    // Bucket occupancy at h = 3 (16-bit blocks), on `--scale N` documents (default 200,000)
    // that each join 3 to 8 random sentences of the base texts: how far the fullest block
    // value is above the uniform N / 65,536, which says at what corpus size a bucket cap bites.
    let scale: usize = arg(&args, "--scale").map_or(200_000, |s| s.parse().expect("--scale N"));
    let sentences: Vec<&str> = originals
        .iter()
        .flat_map(|t| t.split_inclusive(". "))
        .collect();
    let mixed: Vec<String> = (0..scale)
        .map(|_| {
            let count = 3 + rng.below(6);
            (0..count)
                .map(|_| sentences[rng.below(sentences.len())])
                .collect::<String>()
        })
        .collect();
    let mixed_fps: Vec<SimHash> = features(&hasher, &mixed, weighting)
        .iter()
        .map(|v| hasher.sketch_weighted(&v.weights))
        .collect();
    let distinct_fps = mixed_fps
        .iter()
        .collect::<std::collections::HashSet<_>>()
        .len();
    println!(
        "\nbuckets at h = 3 over {scale} documents of 3-8 random sentences ({} sentences to \
         draw from, {distinct_fps} distinct fingerprints); uniform: {:.1} per 16-bit value",
        sentences.len(),
        scale as f64 / 65_536.0
    );
    println!("| block | values used | fullest | 99.9th pct | docs in buckets > 10x uniform |");
    println!("| --- | --- | --- | --- | --- |");
    for (j, block) in hasher.blocks().iter().enumerate() {
        let mut counts: HashMap<u64, usize> = HashMap::new();
        for f in &mixed_fps {
            *counts.entry(block.value(*f)).or_default() += 1;
        }
        let mut sizes: Vec<usize> = counts.into_values().collect();
        sizes.sort_unstable();
        let hot = (10.0 * scale as f64 / 65_536.0).max(1.0);
        let in_hot: usize = sizes.iter().filter(|&&c| c as f64 > hot).sum();
        println!(
            "| {j} | {} | {} | {} | {in_hot} |",
            sizes.len(),
            sizes.last().copied().unwrap_or(0),
            sizes[sizes.len() * 999 / 1000],
        );
    }

    let key = SecretKey::from_bytes([0x5A; 32]);
    let keyed = SimHasher::new_keyed(params, &key).expect("valid params");
    let sketch = SketchParams {
        shingle: params.shingle,
        ..SketchParams::default()
    };
    let oph = MinHasher::new(sketch).expect("valid params");
    let oph_keyed = MinHasher::new_keyed(sketch, &key).expect("valid params");
    let shingles: usize = docs.iter().map(|d| oph.shingle_hashes(d).len()).sum();
    // Passes of the contenders interleaved, so a change in machine load hits all alike.
    let log_tf = SimHasher::new(SimParams {
        weighting: SimWeighting::LogTf,
        ..params
    })
    .expect("valid params");
    let contenders: [(&str, Signer); 7] = [
        (
            "shingle hashes, unkeyed (XXH3)",
            Box::new(|d| {
                let mut acc = 0;
                oph.for_each_shingle_hash(d, |h| acc ^= h);
                acc
            }),
        ),
        (
            "shingle hashes, keyed (SipHash-1-3)",
            Box::new(|d| {
                let mut acc = 0;
                oph_keyed.for_each_shingle_hash(d, |h| acc ^= h);
                acc
            }),
        ),
        (
            "simhash unkeyed",
            Box::new(|d| hasher.sketch_text(d).bits()),
        ),
        ("simhash keyed", Box::new(|d| keyed.sketch_text(d).bits())),
        (
            "simhash logtf unkeyed",
            Box::new(|d| log_tf.sketch_text(d).bits()),
        ),
        (
            "minhash oph k=128 unkeyed",
            Box::new(|d| oph.sketch_text(d).slots()[0]),
        ),
        (
            "minhash oph k=128 keyed",
            Box::new(|d| oph_keyed.sketch_text(d).slots()[0]),
        ),
    ];
    // Each timing covers REPEAT passes (tens of milliseconds), well above the few
    // milliseconds in which the kernel updates a thread's CPU time.
    const REPEAT: usize = 20;
    let passes = 9;
    let mut times = vec![Vec::new(); contenders.len()];
    for _ in 0..passes {
        for (t, (_, f)) in times.iter_mut().zip(&contenders) {
            let (start, cpu_start) = (Instant::now(), cpu_seconds());
            for _ in 0..REPEAT {
                std::hint::black_box(docs.iter().map(|d| f(d)).fold(0, |a, b| a ^ b));
            }
            // Per pass over the documents.
            t.push(
                match (cpu_start, cpu_seconds()) {
                    (Some(a), Some(b)) => b - a,
                    _ => start.elapsed().as_secs_f64(),
                } / REPEAT as f64,
            );
        }
    }
    let median = |t: &mut Vec<f64>| {
        t.sort_by(f64::total_cmp);
        t[t.len() / 2]
    };
    let medians: Vec<f64> = times.iter_mut().map(median).collect();
    println!(
        "\nsigning, one thread, CPU time (not waiting), median of {passes} interleaved timings of {REPEAT} passes over {n} documents \
         ({shingles} shingles, {:.2} MB):",
        bytes as f64 / 1e6
    );
    println!("| what | MB/s | ns/shingle | us/doc |\n| --- | --- | --- | --- |");
    for ((name, _), t) in contenders.iter().zip(&medians) {
        println!(
            "| {name} | {:.0} | {:.2} | {:.2} |",
            bytes as f64 / 1e6 / t,
            t * 1e9 / shingles as f64,
            t * 1e6 / n as f64
        );
    }
    println!(
        "ratios: keyed/unkeyed shingle hash {:.2}, simhash {:.2}, oph {:.2}; \
         simhash/oph (unkeyed) {:.2}; logtf/tf simhash {:.2}",
        medians[1] / medians[0],
        medians[3] / medians[2],
        medians[6] / medians[5],
        medians[2] / medians[5],
        medians[4] / medians[2]
    );
}
