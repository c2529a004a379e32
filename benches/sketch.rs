//! Sketching throughput (criterion): k = 128, char 5-grams, deterministic pseudo-English text.
//!
//! Groups (each at 2 KB and 20 KB per document, `Throughput::Bytes` so criterion prints MB/s):
//! - `shingling`: normalize + xxh3 every 5-gram (`MinHasher::for_each_shingle_hash`), no Vec;
//! - `kperm`: `sketch_text` with `Scheme::KPerm` (shingling + 128 multiply-add-min per shingle);
//! - `oph`: `sketch_text` with `Scheme::Oph` (shingling + one bin update + densification);
//! - `oph_512`: the same at 512 slots, the default shape of a new index (more bins to fill
//!   and densify per document, the same work per shingle);
//! - `oph_512_pack`: `oph_512` and the signature packed at 4 bits (the default index's
//!   stored signature), what the default index does to a document besides its band keys;
//! - `gaoya_minhash32`: gaoya 0.2.2 `MinHasher32::new(128).create_signature` over
//!   `gaoya::text::shingle_text(text, 5)` (its own char 5-gram windows of the raw text, FNV-hashed,
//!   no normalization, collected into a Vec of u32 hashes, then 128 `(a*x+b) % (2^31-1)` minima);
//! - `batch`: `sketch_batch` over 2,000 × 2 KB documents (rayon, every core) next to a
//!   sequential loop of `sketch_text` over the same documents, for OPH and kperm.
//!
//! The text is ASCII, single-spaced, with capitalized sentences and punctuation, so every scheme
//! sees the same number of 5-gram windows (bytes − 4) and mhdb's normalization only lowercases.
//! Run: `RUSTFLAGS='-C target-cpu=native' cargo bench --bench sketch`. mhdb picks its vector
//! kernels at run time whatever the flags; gaoya, compiled here, gets the CPU's vector
//! instructions only from the flag, so without it the comparison favours mhdb.

use std::hint::black_box;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use gaoya::minhash::{MinHasher as _, MinHasher32};
use mhdb::sketch::{MinHasher, Scheme, ShingleConfig, SketchParams};

const K: usize = 128;
const SIZES: [(&str, usize); 2] = [("2KB", 2 * 1024), ("20KB", 20 * 1024)];
const BATCH_DOCS: usize = 2_000;
const BATCH_DOC_BYTES: usize = 2 * 1024;

/// A fixed vocabulary of common English words, space-separated.
const VOCAB: &str = "\
    the of and to in a is that for it as was with be by on not he this are or his from at \
    which but have an had they you were their one all we can her has there been if more \
    when will would who so no time people year way day man thing woman life child world \
    school state family student group country problem hand part place case week company \
    system program question work government number night point home water room mother area \
    money story fact month lot right study book eye job word business issue side kind head \
    house service friend father power hour game line end member law car city community name \
    president team minute idea kid body information back parent face others level office \
    door health person art war history party result change morning reason research girl guy \
    moment air teacher force education good new first last long great little own other old \
    big high different small large next early young important few public bad same able say \
    get make go know take see come think look want give use find tell ask seem feel try \
    leave call keep provide";

/// SplitMix64: a tiny seeded PRNG, enough for reproducible text.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n`.
    fn below(&mut self, n: usize) -> usize {
        (((self.next() >> 32) * n as u64) >> 32) as usize
    }
}

/// Deterministic pseudo-English of exactly `bytes` ASCII bytes: words from [`VOCAB`] with a
/// skewed (roughly Zipf-like) frequency, capitalized sentences of 6–20 words, some commas.
fn text(seed: u64, bytes: usize) -> String {
    let vocab: Vec<&str> = VOCAB.split_whitespace().collect();
    let mut rng = Rng(seed);
    let mut out = String::with_capacity(bytes + 32);
    let mut left_in_sentence = 0usize;
    while out.len() < bytes {
        if left_in_sentence == 0 {
            left_in_sentence = 6 + rng.below(15);
        }
        // The product of two uniforms favours small indices, i.e. the frequent words.
        let idx = rng.below(vocab.len()) * (1 + rng.below(vocab.len())) / vocab.len();
        let word = vocab[idx];
        let sentence_start = out.is_empty() || out.ends_with(". ");
        if sentence_start {
            let mut chars = word.chars();
            if let Some(first) = chars.next() {
                out.push(first.to_ascii_uppercase());
                out.push_str(chars.as_str());
            }
        } else {
            out.push_str(word);
        }
        left_in_sentence -= 1;
        if left_in_sentence == 0 {
            out.push_str(". ");
        } else if rng.below(10) == 0 {
            out.push_str(", ");
        } else {
            out.push(' ');
        }
    }
    out.truncate(bytes);
    // Keep the normalized text identical in length to the raw one (no trailing space to trim).
    while out.ends_with(' ') {
        out.pop();
        out.push('x');
    }
    out
}

fn hasher(scheme: Scheme) -> MinHasher {
    hasher_k(scheme, K)
}

fn hasher_k(scheme: Scheme, k: usize) -> MinHasher {
    MinHasher::new(SketchParams {
        scheme,
        num_perm: k,
        seed: 0,
        shingle: ShingleConfig::chars(5),
    })
    .expect("valid params")
}

fn config<'a>(
    c: &'a mut Criterion,
    name: &str,
) -> criterion::BenchmarkGroup<'a, criterion::measurement::WallTime> {
    let mut g = c.benchmark_group(name);
    g.warm_up_time(Duration::from_secs(1));
    g.measurement_time(Duration::from_secs(3));
    g.sample_size(30);
    g
}

fn bench_single(c: &mut Criterion) {
    let oph = hasher(Scheme::Oph);
    let kperm = hasher(Scheme::KPerm);
    let gaoya = MinHasher32::new(K);
    let docs: Vec<(&str, String)> = SIZES.iter().map(|&(n, b)| (n, text(42, b))).collect();
    for (name, doc) in &docs {
        let mhdb_shingles = oph.shingle_hashes(doc).len();
        let gaoya_shingles = gaoya::text::shingle_text(doc, 5).count();
        eprintln!(
            "doc {name}: {} bytes, {mhdb_shingles} mhdb shingles, {gaoya_shingles} gaoya shingles",
            doc.len()
        );
    }

    let mut g = config(c, "shingling");
    for (name, doc) in &docs {
        g.throughput(Throughput::Bytes(doc.len() as u64));
        g.bench_with_input(BenchmarkId::from_parameter(name), doc, |b, doc| {
            b.iter(|| {
                let mut acc = 0u64;
                oph.for_each_shingle_hash(black_box(doc), |h| acc ^= h);
                acc
            })
        });
    }
    g.finish();

    for (group, h) in [("kperm", &kperm), ("oph", &oph)] {
        let mut g = config(c, group);
        for (name, doc) in &docs {
            g.throughput(Throughput::Bytes(doc.len() as u64));
            g.bench_with_input(BenchmarkId::from_parameter(name), doc, |b, doc| {
                b.iter(|| h.sketch_text(black_box(doc)))
            });
        }
        g.finish();
    }

    let oph512 = hasher_k(Scheme::Oph, 512);
    let mut g = config(c, "oph_512");
    for (name, doc) in &docs {
        g.throughput(Throughput::Bytes(doc.len() as u64));
        g.bench_with_input(BenchmarkId::from_parameter(name), doc, |b, doc| {
            b.iter(|| oph512.sketch_text(black_box(doc)))
        });
    }
    g.finish();
    let mut g = config(c, "oph_512_pack");
    let mut packed = vec![0u8; mhdb::sketch::packed_len(512, 4)];
    for (name, doc) in &docs {
        g.throughput(Throughput::Bytes(doc.len() as u64));
        g.bench_with_input(BenchmarkId::from_parameter(name), doc, |b, doc| {
            b.iter(|| {
                let sig = oph512.sketch_text(black_box(doc));
                mhdb::sketch::bbit::pack_into(sig.slots(), 4, &mut packed).expect("pack");
                packed[0]
            })
        });
    }
    g.finish();

    let mut g = config(c, "gaoya_minhash32");
    g.sample_size(10);
    for (name, doc) in &docs {
        g.throughput(Throughput::Bytes(doc.len() as u64));
        g.bench_with_input(BenchmarkId::from_parameter(name), doc, |b, doc| {
            b.iter(|| gaoya.create_signature(gaoya::text::shingle_text(black_box(doc), 5)))
        });
    }
    g.finish();
}

fn bench_batch(c: &mut Criterion) {
    let docs: Vec<String> = (0..BATCH_DOCS as u64)
        .map(|i| text(1000 + i, BATCH_DOC_BYTES))
        .collect();
    let total: usize = docs.iter().map(String::len).sum();
    eprintln!(
        "batch: {BATCH_DOCS} docs, {total} bytes, {} rayon threads",
        rayon::current_num_threads()
    );
    let mut g = config(c, "batch");
    g.sample_size(10);
    g.throughput(Throughput::Bytes(total as u64));
    for (scheme, h) in [
        ("oph", hasher(Scheme::Oph)),
        ("kperm", hasher(Scheme::KPerm)),
    ] {
        g.bench_function(format!("{scheme}_parallel"), |b| {
            b.iter(|| h.sketch_batch(black_box(&docs)))
        });
        g.bench_function(format!("{scheme}_sequential"), |b| {
            b.iter(|| {
                docs.iter()
                    .map(|d| h.sketch_text(black_box(d)))
                    .collect::<Vec<_>>()
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench_single, bench_batch);
criterion_main!(benches);
