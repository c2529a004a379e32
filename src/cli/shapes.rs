//! One shape per kind of result: every command that prints a kind builds it here, so that
//! `query --text --json` and `query --jsonl`, or `keys --json` and `dedup --format drop
//! --json`, print the same thing. README's "JSON shapes" lists them.

use mhdb::db::{IndexParams, QueryResult};
use mhdb::sketch::LshParams;
use serde_json::{Value, json};

use super::escape::key_json;

/// A Jaccard estimate or probability as printed in JSON: rounded to six decimals.
pub fn round6(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}

/// One key of a key list (`keys --json`, `dedup --format drop --json`): `{"id": KEY}`, what
/// `delete --jsonl` reads.
pub fn key_item(key: &[u8]) -> Value {
    json!({ "id": key_json(key) })
}

/// One query's answer: `{"id", "matches": [{"id", "jaccard"}], "candidates", "verified",
/// "hot_buckets"}`, `id` being the query's own id as given.
pub fn answer(id: Value, r: &QueryResult) -> Value {
    let matches: Vec<Value> = r
        .matches
        .iter()
        .map(|m| json!({"id": key_json(&m.key), "jaccard": round6(m.jaccard)}))
        .collect();
    json!({
        "id": id,
        "matches": matches,
        "candidates": r.stats.candidates,
        "verified": r.stats.verified,
        "hot_buckets": r.stats.hot_buckets,
    })
}

/// A near-duplicate pair: `{"a", "b", "jaccard"}`.
pub fn pair(a: Value, b: Value, jaccard: f64) -> Value {
    json!({"a": a, "b": b, "jaccard": round6(jaccard)})
}

/// A star cluster: `{"keep", "duplicates"}`.
pub fn cluster(keep: Option<&[u8]>, duplicates: &[Vec<u8>]) -> Value {
    json!({
        "keep": keep.map(key_json),
        "duplicates": duplicates.iter().map(|k| key_json(k)).collect::<Vec<_>>(),
    })
}

/// An index's parameters, named as the `create` flags that set them ('-' written '_').
pub fn params(p: &IndexParams) -> Value {
    json!({
        "perms": p.sketch.num_perm,
        "scheme": p.sketch.scheme.name(),
        "seed": p.sketch.seed,
        "shingle": p.sketch.shingle.kind.to_string(),
        "nfkc": p.sketch.shingle.nfkc,
        "bits": p.bits,
        "bands": p.lsh.bands,
        "rows": p.lsh.rows,
        "threshold": p.threshold,
        "bucket_cap": p.bucket_cap,
        "spec_version": mhdb::sketch::SPEC_VERSION,
    })
}

/// An index's parameters in text: the `create` flags that would make it again.
pub fn params_text(p: &IndexParams) -> String {
    format!(
        "--perms {} --scheme {} --shingle {}{} --seed {} --bits {} --bands {} --rows {} --threshold {} --bucket-cap {}",
        p.sketch.num_perm,
        p.sketch.scheme,
        p.sketch.shingle.kind,
        if p.sketch.shingle.nfkc { " --nfkc" } else { "" },
        p.sketch.seed,
        p.bits,
        p.lsh.bands,
        p.lsh.rows,
        p.threshold,
        p.bucket_cap.unwrap_or(0),
    )
}

/// The probability of becoming a candidate at each of `points`: `[{"jaccard",
/// "probability"}]`.
pub fn s_curve(lsh: &LshParams, points: &[f64]) -> Value {
    lsh.curve(points)
        .iter()
        .map(|(s, p)| json!({"jaccard": s, "probability": round6(*p)}))
        .collect()
}
