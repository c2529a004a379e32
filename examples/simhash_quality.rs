//! SimHash quality and speed on a corpus with near-duplicates of known, graded similarity.
//!
//! Corpus: the first `--bases N` (default 120) texts of `samples/corpus.jsonl` (or of
//! `--corpus FILE`: JSON lines with a "text" field, or plain text whose blank-line separated
//! paragraphs of 400+ bytes become documents), each with six edited copies in which 0.5, 1, 2,
//! 4, 8 and 16 % of the words were replaced, deleted or had a word inserted before them
//! (deterministic). For every pair of documents the example computes the exact cosine of the
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
//! and, per band of exact cosine, how often d ≤ 3 and how far cos(π·d/64) is from the truth.
//! Then single-thread signing speed of `SimHasher::sketch_text` (unkeyed and keyed) next to
//! `MinHasher::sketch_text` (OPH, k = 128) over the same documents.
//!
//! Run: `cargo run --release --example simhash_quality [-- --shingle word:1 --bases 120]`.

use std::collections::HashMap;
use std::time::Instant;

use mhdb::sketch::{
    MinHasher, SecretKey, ShingleConfig, ShingleKind, SimHash, SimHasher, SimParams, SketchParams,
    cosine_from_hamming,
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

/// Sorted (feature hash, term frequency) pairs and the vector's norm.
fn tf_vector(hashes: &[u64]) -> (Vec<(u64, u32)>, f64) {
    let mut counts: HashMap<u64, u32> = HashMap::new();
    for &h in hashes {
        *counts.entry(h).or_default() += 1;
    }
    let mut v: Vec<(u64, u32)> = counts.into_iter().collect();
    v.sort_unstable();
    let norm = v
        .iter()
        .map(|&(_, c)| f64::from(c) * f64::from(c))
        .sum::<f64>()
        .sqrt();
    (v, norm)
}

fn cosine(a: &(Vec<(u64, u32)>, f64), b: &(Vec<(u64, u32)>, f64)) -> f64 {
    let (mut i, mut j, mut dot) = (0, 0, 0f64);
    let (x, y) = (&a.0, &b.0);
    while i < x.len() && j < y.len() {
        match x[i].0.cmp(&y[j].0) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                dot += f64::from(x[i].1) * f64::from(y[j].1);
                i += 1;
                j += 1;
            }
        }
    }
    if a.1 == 0.0 || b.1 == 0.0 {
        return 0.0;
    }
    dot / (a.1 * b.1)
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
    let fps: Vec<SimHash> = docs.iter().map(|d| hasher.sketch_text(d)).collect();
    let vectors: Vec<_> = docs
        .iter()
        .map(|d| tf_vector(&hasher.shingle_hashes(d)))
        .collect();
    let n = docs.len();
    println!(
        "corpus: {corpus}\n{} base texts + {} edited copies = {n} documents, {bytes} bytes, \
         features {shingle} (tf weights), {} pairs",
        originals.len(),
        n - originals.len(),
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

    // Bucket occupancy at h = 3: the largest number of documents sharing one block value.
    let fullest = (0..hasher.blocks().len())
        .map(|j| {
            let mut counts: HashMap<u64, usize> = HashMap::new();
            for f in &fps {
                *counts.entry(hasher.blocks()[j].value(*f)).or_default() += 1;
            }
            counts.into_values().max().unwrap_or(0)
        })
        .max()
        .unwrap_or(0);
    println!("\nh = 3: fullest 16-bit block value holds {fullest} of {n} documents");

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
    let contenders: [(&str, Signer); 6] = [
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
            "minhash oph k=128 unkeyed",
            Box::new(|d| oph.sketch_text(d).slots()[0]),
        ),
        (
            "minhash oph k=128 keyed",
            Box::new(|d| oph_keyed.sketch_text(d).slots()[0]),
        ),
    ];
    let passes = 15;
    let mut times = vec![Vec::new(); contenders.len()];
    for _ in 0..passes {
        for (t, (_, f)) in times.iter_mut().zip(&contenders) {
            let start = Instant::now();
            std::hint::black_box(docs.iter().map(|d| f(d)).fold(0, |a, b| a ^ b));
            t.push(start.elapsed().as_secs_f64());
        }
    }
    let median = |t: &mut Vec<f64>| {
        t.sort_by(f64::total_cmp);
        t[t.len() / 2]
    };
    let medians: Vec<f64> = times.iter_mut().map(median).collect();
    println!(
        "\nsigning, one thread, median of {passes} interleaved passes over {n} documents \
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
         simhash/oph (unkeyed) {:.2}",
        medians[1] / medians[0],
        medians[3] / medians[2],
        medians[5] / medians[4],
        medians[2] / medians[4]
    );
}
