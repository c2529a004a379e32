//! The sketch kernel on a real corpus: what signing costs per document on one core, phase by
//! phase, on the very texts `mhdb add` loads (so the two can be compared as a ratio; see
//! `tools/bench/ingest_bench.py`, which runs both).
//!
//! Run: `cargo bench --bench ingest_kernel -- --corpus FILE.jsonl [--field text]
//! [--perms 512,128] [--passes 3]`. The texts are read and parsed before timing. Phases, each
//! timed over every text on one thread (the fastest of `--passes`, in this thread's CPU time
//! so that other processes on a shared machine do not inflate it):
//! - `utf8`: checking that the texts are UTF-8 (`std::str::from_utf8`);
//! - `json`: the JSON lines checked and parsed, their texts taken out (what `mhdb add` does
//!   before signing);
//! - `normalize`: Unicode lowercasing and whitespace collapsing into a buffer;
//! - `shingle`: normalization and the hash of every char 5-gram;
//! - `oph` (per `--perms`): the signature (`MinHasher::sketch_text`: the above, OPH binning
//!   and densification);
//! - `oph+pack` (per `--perms`): the signature, packed at the shape's default bits and its band
//!   keys computed: all that a bulk insert does to a document before writing it.
//!
//! Prints one JSON object per phase: documents, bytes, shingles, seconds, ns per shingle and
//! MB/s of text; and one `digest` object: XXH3 of every normalized text and of every
//! signature, per shape, so that two builds can be shown to sign the corpus identically.

use std::path::PathBuf;
use std::time::Duration;

use mhdb::db::{default_band_slots, default_bits};
use mhdb::sketch::{Banding, LshParams, MinHasher, SketchParams, bbit};
use xxhash_rust::xxh3::Xxh3;

struct Args {
    corpus: PathBuf,
    field: String,
    perms: Vec<usize>,
    passes: usize,
    /// The phases to run (all when empty): a profile can then look at one alone.
    phases: Vec<String>,
}

impl Args {
    fn wants(&self, phase: &str) -> bool {
        self.phases.is_empty() || self.phases.iter().any(|p| p == phase)
    }
}

fn args() -> Args {
    let mut a = Args {
        corpus: PathBuf::new(),
        field: "text".to_string(),
        perms: vec![512, 128],
        passes: 3,
        phases: Vec::new(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--corpus" => a.corpus = it.next().map(PathBuf::from).unwrap_or_default(),
            "--field" => a.field = it.next().unwrap_or(a.field),
            "--perms" => {
                a.perms = it
                    .next()
                    .unwrap_or_default()
                    .split(',')
                    .filter_map(|p| p.parse().ok())
                    .collect()
            }
            "--phases" => {
                a.phases = it
                    .next()
                    .unwrap_or_default()
                    .split(',')
                    .map(str::to_owned)
                    .collect()
            }
            "--passes" => a.passes = it.next().and_then(|v| v.parse().ok()).unwrap_or(a.passes),
            _ => {}
        }
    }
    a
}

#[path = "support/cpu_time.rs"]
mod cpu_time;
use cpu_time::best_of;

fn main() {
    let a = args();
    if a.corpus.as_os_str().is_empty() {
        eprintln!(
            "usage: ingest_kernel --corpus FILE.jsonl [--field text] [--perms 512,128] [--passes N]"
        );
        return;
    }
    let raw = std::fs::read_to_string(&a.corpus).expect("read the corpus");
    let texts: Vec<String> = raw
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| v.get(&a.field)?.as_str().map(str::to_owned))
        .collect();
    let bytes: usize = texts.iter().map(String::len).sum();
    let ascii = texts.iter().filter(|t| t.is_ascii()).count();
    let base = MinHasher::new(SketchParams::default()).expect("default params");
    let mut shingles = 0u64;
    for t in &texts {
        base.for_each_shingle_hash(t, |_| shingles += 1);
    }
    eprintln!(
        "{} texts ({ascii} pure ASCII), {bytes} bytes, {shingles} char 5-grams",
        texts.len()
    );
    let report = |phase: &str, perms: Option<usize>, cpu: Duration| {
        let secs = cpu.as_secs_f64();
        println!(
            "{}",
            serde_json::json!({
                "phase": phase,
                "perms": perms,
                "docs": texts.len(),
                "bytes": bytes,
                "shingles": shingles,
                "cpu_s": secs,
                "ns_per_shingle": secs * 1e9 / shingles.max(1) as f64,
                "mb_per_s": bytes as f64 / secs / 1e6,
            })
        );
    };

    let cfg = base.params().shingle;
    if a.wants("digest") {
        let mut digest = serde_json::Map::new();
        let mut norm = Xxh3::new();
        let mut buf = String::new();
        for t in &texts {
            cfg.normalize_into(t, &mut buf);
            norm.update(buf.as_bytes());
            norm.update(&[0xFF]);
        }
        digest.insert(
            "normalized".into(),
            format!("{:016x}", norm.digest()).into(),
        );
        for &k in &a.perms {
            let hasher = MinHasher::new(SketchParams {
                num_perm: k,
                ..SketchParams::default()
            })
            .expect("valid params");
            let mut d = Xxh3::new();
            for t in &texts {
                for s in hasher.sketch_text(t).slots() {
                    d.update(&s.to_le_bytes());
                }
            }
            digest.insert(format!("oph{k}"), format!("{:016x}", d.digest()).into());
        }
        println!("{}", serde_json::json!({ "digest": digest }));
    }
    if a.wants("utf8") {
        // Checking that the text is UTF-8, as reading any JSON line does.
        let (cpu, _) = best_of(a.passes, || {
            texts
                .iter()
                .map(|t| u64::from(std::str::from_utf8(t.as_bytes()).is_ok()))
                .sum()
        });
        report("utf8", None, cpu);
    }
    if a.wants("json") {
        // Parsing every line into a JSON value and taking its text out, as `mhdb add` does.
        let (cpu, _) = best_of(a.passes, || {
            let mut n = 0u64;
            for line in raw.lines() {
                let Ok(text) = std::str::from_utf8(line.as_bytes()) else {
                    continue;
                };
                if let Ok(mut v) = serde_json::from_str::<serde_json::Value>(text)
                    && let Some(serde_json::Value::String(t)) = v.get_mut(&a.field)
                {
                    n += std::mem::take(t).len() as u64;
                }
            }
            n
        });
        report("json", None, cpu);
    }
    if a.wants("normalize") {
        let (cpu, _) = best_of(a.passes, || {
            let mut buf = String::new();
            let mut n = 0u64;
            for t in &texts {
                cfg.normalize_into(t, &mut buf);
                n += buf.len() as u64;
            }
            n
        });
        report("normalize", None, cpu);
    }
    if a.wants("shingle") {
        let (cpu, _) = best_of(a.passes, || {
            let mut acc = 0u64;
            for t in &texts {
                base.for_each_shingle_hash(t, |h| acc ^= h);
            }
            acc
        });
        report("shingle", None, cpu);
    }

    for &k in &a.perms {
        let sketch = SketchParams {
            num_perm: k,
            ..SketchParams::default()
        };
        let hasher = MinHasher::new(sketch).expect("valid params");
        if a.wants("oph") {
            let (cpu, _) = best_of(a.passes, || {
                texts
                    .iter()
                    .map(|t| hasher.sketch_text(t).slots()[0])
                    .fold(0, |a, b| a ^ b)
            });
            report("oph", Some(k), cpu);
        }
        if !a.wants("oph+pack") {
            continue;
        }

        let bits = default_bits(k);
        // The default bands at 0.8 over the default band slots: 13 × 7 (any shape banding
        // the first slots costs about the same).
        let band_slots = default_band_slots(k);
        let lsh = LshParams::new(13, 7, band_slots).expect("13 x 7 fits");
        let banding = Banding::new(
            &SketchParams {
                num_perm: band_slots,
                ..sketch
            },
            lsh,
        )
        .expect("banding");
        let mut packed = vec![0u8; bbit::packed_len(k, bits)];
        let mut keys = vec![0u64; lsh.bands];
        let (cpu, _) = best_of(a.passes, || {
            let mut acc = 0u64;
            for t in &texts {
                let sig = hasher.sketch_text(t);
                bbit::pack_into(sig.slots(), bits, &mut packed).expect("pack");
                banding
                    .band_keys_to_slice(&sig.slots()[..band_slots], &mut keys)
                    .expect("band keys");
                acc ^= keys[0] ^ u64::from(packed[0]);
            }
            acc
        });
        report("oph+pack", Some(k), cpu);
    }
}
