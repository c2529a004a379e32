//! What the exact re-rank costs per candidate, against what intersecting two sorted 32-bit
//! arrays costs on this CPU, and what each way of storing a set costs in bytes, on the pages
//! of a real corpus whose sets have `--min` to `--max` values (4,000-5,000 by default: the
//! size at which the re-rank's cost is judged).
//!
//! Run: `cargo bench --bench rerank_limit -- --corpus FILE.jsonl [--field text] [--min 4000]
//! [--max 5000] [--passes 5]`. Each page is the stored document; its query is a set made from
//! the page's own by dropping and adding values so that their Jaccard similarity is the
//! threshold `--threshold` (0.5 by default, where the re-rank has most to do): shingle values
//! are hashes, so a made set is intersected exactly as a real near-duplicate's would be.
//!
//! Timed per candidate (nanoseconds of this thread's CPU time, the least of `--passes` passes
//! over every page, one thread):
//! - `merge_floor`: counting the common values of the two decoded sets with a branch-free
//!   scalar merge (one comparison per value of either side): the limit of a merge on this CPU;
//! - `merge_block`: the same count by the re-rank's block merge (`set_intersect`), with the
//!   threshold at 0 so that it never stops early;
//! - `decode`: decoding the stored set (`shingle_codec`), the re-rank's other half;
//! - `rerank`: decoding then deciding at the threshold, as the re-rank does for one candidate;
//! - `text_zstd_N`: the alternative that stores the page's text compressed with zstd at level
//!   N instead of its set: decompressing it, shingling it again and deciding.
//!
//! Sizes, mean bytes per page: the text; the stored coding of the set (varint gaps); an
//! Elias-Fano coding of it (computed, `n·(2 + ⌈log₂(2³²/n)⌉)` bits, not built); the entropy
//! of a set of n values out of 2³² (`log₂ C(2³², n)` bits: no exact coding of the values can
//! be smaller on average); and the text compressed with zstd.

use std::path::PathBuf;

use mhdb::sketch::set_intersect::jaccard_sorted_at_least;
use mhdb::sketch::{MinHasher, SketchParams};
use mhdb::storage::shingle_codec;

struct Args {
    corpus: PathBuf,
    field: String,
    min: usize,
    max: usize,
    passes: usize,
    threshold: f64,
}

fn args() -> Args {
    let mut a = Args {
        corpus: PathBuf::new(),
        field: "text".into(),
        min: 4000,
        max: 5000,
        passes: 5,
        threshold: 0.5,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = || it.next().unwrap_or_default();
        match arg.as_str() {
            "--corpus" => a.corpus = PathBuf::from(value()),
            "--field" => a.field = value(),
            "--min" => a.min = value().parse().unwrap_or(a.min),
            "--max" => a.max = value().parse().unwrap_or(a.max),
            "--passes" => a.passes = value().parse().unwrap_or(a.passes),
            "--threshold" => a.threshold = value().parse().unwrap_or(a.threshold),
            _ => {}
        }
    }
    if a.corpus.as_os_str().is_empty() {
        eprintln!(
            "usage: rerank_limit --corpus FILE.jsonl [--field text] [--min N] [--max N] [--passes N] [--threshold T]"
        );
        std::process::exit(2);
    }
    a
}

/// A stored page: its text, its set, and the set's stored coding.
struct Page {
    text: String,
    values: Vec<u32>,
    coded: Vec<u8>,
    query: Vec<u32>,
}

fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A set whose Jaccard similarity with `values` is `j`: it keeps `c` of them and adds `n - c`
/// new ones, with c / (2n - c) = j.
fn query_at(values: &[u32], j: f64, seed: u64) -> Vec<u32> {
    let n = values.len();
    let keep = ((2.0 * j * n as f64) / (1.0 + j)).round() as usize;
    let mut kept: Vec<(u64, u32)> = values
        .iter()
        .map(|&v| (mix(seed ^ u64::from(v)), v))
        .collect();
    kept.sort_unstable();
    let mut out: Vec<u32> = kept.iter().take(keep).map(|&(_, v)| v).collect();
    let mut i = 0u64;
    while out.len() < n {
        let v = (mix(seed.wrapping_add(i).wrapping_mul(0x9E37_79B9)) >> 32) as u32;
        if values.binary_search(&v).is_err() {
            out.push(v);
        }
        i += 1;
    }
    out.sort_unstable();
    out.dedup();
    out
}

fn read_pages(a: &Args, hasher: &MinHasher) -> Vec<Page> {
    let body = std::fs::read_to_string(&a.corpus).expect("read the corpus");
    let mut pages = Vec::new();
    for (i, line) in body.lines().enumerate() {
        let Ok(serde_json::Value::Object(o)) = serde_json::from_str(line) else {
            continue;
        };
        let Some(text) = o.get(&a.field).and_then(|t| t.as_str()) else {
            continue;
        };
        let values = hasher.shingle_set(text).values().to_vec();
        if values.len() < a.min || values.len() > a.max {
            continue;
        }
        pages.push(Page {
            text: text.to_string(),
            coded: shingle_codec::encode(&values),
            query: query_at(&values, a.threshold, i as u64),
            values,
        });
    }
    pages
}

/// The common values of two sorted, distinct slices, by a branch-free merge.
fn merge_floor(a: &[u32], b: &[u32]) -> usize {
    let (mut i, mut j, mut common) = (0, 0, 0);
    while i < a.len() && j < b.len() {
        let (x, y) = (a[i], b[j]);
        common += usize::from(x == y);
        i += usize::from(x <= y);
        j += usize::from(y <= x);
    }
    common
}

#[path = "support/cpu_time.rs"]
mod cpu_time;

/// The least CPU time of `passes` passes of `per_page` over every page, in ns per page.
fn time(passes: usize, pages: &[Page], mut per_page: impl FnMut(usize, &Page) -> usize) -> f64 {
    let (best, _) = cpu_time::best_of(passes, || {
        let mut sink = 0u64;
        for (i, p) in pages.iter().enumerate() {
            sink = sink.wrapping_add(per_page(i, p) as u64);
        }
        sink
    });
    best.as_nanos() as f64 / pages.len() as f64
}

/// `log₂ C(2³², n)`: the bits of an optimal coding of a set of n distinct 32-bit values.
fn entropy_bits(n: usize) -> f64 {
    let u = 4_294_967_296.0f64;
    (0..n)
        .map(|i| ((u - i as f64) / (n - i) as f64).log2())
        .sum()
}

fn main() {
    let a = args();
    let hasher = MinHasher::new(SketchParams::default()).expect("default parameters");
    let pages = read_pages(&a, &hasher);
    if pages.is_empty() {
        eprintln!(
            "no page of {} has {}-{} shingle values",
            a.corpus.display(),
            a.min,
            a.max
        );
        std::process::exit(1);
    }
    let n = pages.len() as f64;
    let values: f64 = pages.iter().map(|p| p.values.len() as f64).sum::<f64>() / n;
    println!(
        "# {} pages of {}-{} values (mean {values:.0}), queries at J = {}",
        pages.len(),
        a.min,
        a.max,
        a.threshold
    );
    let mut decoded = Vec::new();
    let rows = [
        (
            "merge_floor",
            time(a.passes, &pages, |_, p| merge_floor(&p.query, &p.values)),
        ),
        (
            "merge_block",
            time(a.passes, &pages, |_, p| {
                jaccard_sorted_at_least(&p.query, &p.values, 0.0).map_or(0, |j| (j * 1e6) as usize)
            }),
        ),
        (
            "decode",
            time(a.passes, &pages, |_, p| {
                shingle_codec::decode_into(&p.coded, &mut decoded).expect("decodes");
                decoded.len()
            }),
        ),
        (
            "rerank",
            time(a.passes, &pages, |_, p| {
                shingle_codec::decode_into(&p.coded, &mut decoded).expect("decodes");
                usize::from(jaccard_sorted_at_least(&p.query, &decoded, a.threshold).is_some())
            }),
        ),
    ];
    for (name, ns) in rows {
        println!(
            "{{\"measure\": \"{name}\", \"ns_per_candidate\": {ns:.0}, \"ns_per_stored_value\": {:.2}}}",
            ns / values
        );
    }
    let text_bytes = pages.iter().map(|p| p.text.len() as f64).sum::<f64>() / n;
    let mut sizes = vec![
        ("text", text_bytes),
        (
            "set_varint",
            pages.iter().map(|p| p.coded.len() as f64).sum::<f64>() / n,
        ),
        (
            "set_elias_fano",
            pages
                .iter()
                .map(|p| {
                    let k = p.values.len() as f64;
                    (k * (2.0 + (4_294_967_296.0 / k).log2().ceil()) / 8.0).ceil() + 8.0
                })
                .sum::<f64>()
                / n,
        ),
        (
            "set_entropy",
            pages
                .iter()
                .map(|p| entropy_bits(p.values.len()) / 8.0)
                .sum::<f64>()
                / n,
        ),
    ];
    for level in [3, 19] {
        let packed: Vec<Vec<u8>> = pages
            .iter()
            .map(|p| zstd::bulk::compress(p.text.as_bytes(), level).expect("compresses"))
            .collect();
        sizes.push((
            if level == 3 {
                "text_zstd_3"
            } else {
                "text_zstd_19"
            },
            packed.iter().map(|c| c.len() as f64).sum::<f64>() / n,
        ));
        let mut i = 0usize;
        let ns = time(a.passes, &pages, |_, p| {
            let c = &packed[i % packed.len()];
            i += 1;
            let text = zstd::bulk::decompress(c, p.text.len()).expect("decompresses");
            let set = hasher.shingle_set(std::str::from_utf8(&text).expect("UTF-8"));
            usize::from(jaccard_sorted_at_least(&p.query, set.values(), a.threshold).is_some())
        });
        println!("{{\"measure\": \"text_zstd_{level}\", \"ns_per_candidate\": {ns:.0}}}");
    }
    for (name, bytes) in sizes {
        println!(
            "{{\"size\": \"{name}\", \"bytes_per_page\": {bytes:.0}, \"of_text\": {:.3}, \"bits_per_value\": {:.2}}}",
            bytes / text_bytes,
            bytes * 8.0 / values
        );
    }
}
