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

/// Writes [`answer`] as one JSON text, byte for byte the same, without building it as a
/// [`Value`] first (a hot query's answer holds thousands of matches: building and dropping
/// them as maps took a third of `query --jsonl`).
pub fn write_answer(
    out: &mut impl std::io::Write,
    id: &Value,
    r: &QueryResult,
) -> std::io::Result<()> {
    // serde_json's maps are sorted by key: "candidates", "hot_buckets", "id", "matches",
    // "verified"; and a match's "id", "jaccard".
    write!(
        out,
        "{{\"candidates\":{},\"hot_buckets\":{},\"id\":",
        r.stats.candidates, r.stats.hot_buckets
    )?;
    serde_json::to_writer(&mut *out, id)?;
    out.write_all(b",\"matches\":[")?;
    for (i, m) in r.matches.iter().enumerate() {
        out.write_all(if i == 0 { b"{\"id\":" } else { b",{\"id\":" })?;
        match std::str::from_utf8(&m.key) {
            Ok(key) => serde_json::to_writer(&mut *out, key)?,
            Err(_) => serde_json::to_writer(&mut *out, &key_json(&m.key))?,
        }
        out.write_all(b",\"jaccard\":")?;
        serde_json::to_writer(&mut *out, &round6(m.jaccard))?;
        out.write_all(b"}")?;
    }
    write!(out, "],\"verified\":{}}}", r.stats.verified)
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
        "band_slots": p.band_slots,
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
        "--perms {} --scheme {} --shingle {}{} --seed {} --bits {} --band-slots {} --bands {} --rows {} --threshold {} --bucket-cap {}",
        p.sketch.num_perm,
        p.sketch.scheme,
        p.sketch.shingle.kind,
        if p.sketch.shingle.nfkc { " --nfkc" } else { "" },
        p.sketch.seed,
        p.bits,
        p.band_slots,
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

#[cfg(test)]
mod write_answer_tests {
    use mhdb::db::{Match, QueryStats};

    use super::*;

    /// The streamed answer is byte for byte the built one: ids of every kind, keys that need
    /// escaping or are not UTF-8, estimates that round, no matches.
    #[test]
    fn written_answers_equal_built_ones() {
        let keys: [&[u8]; 5] = [
            b"plain",
            b"quote \" and \\ and \n",
            b"\xff\x00raw",
            "日本語".as_bytes(),
            b"",
        ];
        let ids = [
            Value::Null,
            json!("ref/ja/17"),
            json!(17),
            json!({"hex": "ff00"}),
            json!("tab\there"),
        ];
        for (n, id) in ids.iter().enumerate() {
            let r = QueryResult {
                matches: keys
                    .iter()
                    .take(n)
                    .enumerate()
                    .map(|(i, k)| Match {
                        key: k.to_vec(),
                        jaccard: 1.0 / (i as f64 + 3.0),
                    })
                    .collect(),
                stats: QueryStats {
                    candidates: 4713 + n,
                    verified: 4700,
                    hot_buckets: n,
                    segments: 2,
                    probed: 0,
                },
            };
            let mut written = Vec::new();
            write_answer(&mut written, id, &r).unwrap();
            assert_eq!(
                String::from_utf8(written).unwrap(),
                answer(id.clone(), &r).to_string()
            );
        }
    }
}
