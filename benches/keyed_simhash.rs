//! The cost of keyed hashing and of SimHash signing (criterion), each next to its peer in the
//! same run. Documents are the texts of `samples/corpus.jsonl` (ASCII prose) joined to 2 KB and
//! 20 KB; char 5-grams, default normalization.
//!
//! Groups:
//! - `shingle_hash`: normalize + hash every 5-gram of the 20 KB document, public seeded XXH3
//!   (`unkeyed`) against SipHash-1-3 under a secret key (`keyed`); throughput in shingles, so
//!   criterion's time per iteration over the shingle count (printed first) is ns per shingle;
//! - `oph`, `kperm`: `MinHasher::sketch_text` (k = 128) unkeyed and keyed;
//! - `simhash`: `SimHasher::sketch_text` (h = 3) unkeyed and keyed with tf weights, and
//!   unkeyed with log-tf weights (which sorts the shingle hashes to count them).
//!
//! Run: `cargo bench --bench keyed_simhash`.

use std::hint::black_box;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use mhdb::sketch::{
    MinHasher, Scheme, SecretKey, ShingleConfig, SimHasher, SimParams, SimWeighting, SketchParams,
};

const SIZES: [(&str, usize); 2] = [("2KB", 2 * 1024), ("20KB", 20 * 1024)];

/// The shipped sample texts, joined with spaces and cut to `bytes` (they are ASCII).
fn document(bytes: usize) -> String {
    let corpus =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/samples/corpus.jsonl"))
            .expect("samples/corpus.jsonl");
    let mut out = String::new();
    for line in corpus.lines().cycle() {
        let doc: serde_json::Value = serde_json::from_str(line).expect("a JSON line");
        out.push_str(doc["text"].as_str().expect("a text field"));
        out.push(' ');
        if out.len() >= bytes {
            break;
        }
    }
    out.truncate(bytes);
    out
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

fn bench(c: &mut Criterion) {
    let key = SecretKey::from_bytes(*b"a bench key, not a secret one!!!");
    let minhash = |scheme, key: Option<&SecretKey>| {
        MinHasher::with_key(
            SketchParams {
                scheme,
                num_perm: 128,
                seed: 0,
                shingle: ShingleConfig::chars(5),
            },
            key,
        )
        .expect("valid params")
    };
    let docs: Vec<(&str, String)> = SIZES.iter().map(|&(n, b)| (n, document(b))).collect();

    let (plain, keyed) = (minhash(Scheme::Oph, None), minhash(Scheme::Oph, Some(&key)));
    let big = &docs[1].1;
    let shingles = plain.shingle_hashes(big).len();
    eprintln!("shingle_hash: {} bytes, {shingles} shingles", big.len());
    let mut g = config(c, "shingle_hash");
    g.throughput(Throughput::Elements(shingles as u64));
    for (name, h) in [("unkeyed", &plain), ("keyed", &keyed)] {
        g.bench_function(name, |b| {
            b.iter(|| {
                let mut acc = 0u64;
                h.for_each_shingle_hash(black_box(big), |x| acc ^= x);
                acc
            })
        });
    }
    g.finish();

    for (group, scheme) in [("oph", Scheme::Oph), ("kperm", Scheme::KPerm)] {
        let (plain, keyed) = (minhash(scheme, None), minhash(scheme, Some(&key)));
        let mut g = config(c, group);
        for (size, doc) in &docs {
            g.throughput(Throughput::Bytes(doc.len() as u64));
            for (name, h) in [("unkeyed", &plain), ("keyed", &keyed)] {
                g.bench_with_input(BenchmarkId::new(name, size), doc, |b, doc| {
                    b.iter(|| h.sketch_text(black_box(doc)))
                });
            }
        }
        g.finish();
    }

    let plain = SimHasher::new(SimParams::default()).expect("valid params");
    let keyed = SimHasher::new_keyed(SimParams::default(), &key).expect("valid params");
    let log_tf = SimHasher::new(SimParams {
        weighting: SimWeighting::LogTf,
        ..SimParams::default()
    })
    .expect("valid params");
    let mut g = config(c, "simhash");
    for (size, doc) in &docs {
        g.throughput(Throughput::Bytes(doc.len() as u64));
        for (name, h) in [("unkeyed", &plain), ("keyed", &keyed), ("logtf", &log_tf)] {
            g.bench_with_input(BenchmarkId::new(name, size), doc, |b, doc| {
                b.iter(|| h.sketch_text(black_box(doc)))
            });
        }
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
