//! One shape per kind of result: every command that prints a kind builds it here, so that
//! `query --text --json` and `query --jsonl`, or `keys --json` and `dedup --format drop
//! --json`, print the same thing. README's "JSON shapes" lists them.

use mhdb::db::{DedupPair, IndexKind, IndexParams, IndexStats, QueryResult, Stats};
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
/// "hot_buckets"}`, `id` being the query's own id as given. Re-ranked by exact Jaccard (an
/// index that stores sets), each match also has its `"estimate"`, and the answer says
/// `"exact": true` and how many candidates were `"reranked"`.
pub fn answer(id: Value, r: &QueryResult) -> Value {
    let exact = r.stats.exact;
    let matches: Vec<Value> = r
        .matches
        .iter()
        .map(|m| match (m.distance, m.cosine) {
            (Some(d), Some(c)) => {
                json!({"id": key_json(&m.key), "distance": d, "cosine": round6(c)})
            }
            _ => {
                let mut v = match m.jaccard {
                    // A containment query's match: its containment, and its Jaccard beside it.
                    Some(j) => json!({
                        "id": key_json(&m.key),
                        "containment": round6(m.similarity),
                        "jaccard": round6(j),
                    }),
                    None => json!({"id": key_json(&m.key), "jaccard": round6(m.similarity)}),
                };
                if exact {
                    v["estimate"] = json!(round6(m.estimate));
                    v["exact"] = json!(m.exact);
                }
                v
            }
        })
        .collect();
    let mut v = json!({
        "id": id,
        "matches": matches,
        "candidates": r.stats.candidates,
        "verified": r.stats.verified,
        "hot_buckets": r.stats.hot_buckets,
    });
    if exact {
        v["exact"] = json!(true);
        v["reranked"] = json!(r.stats.reranked);
    }
    v
}

/// Writes [`answer`] as one JSON text, byte for byte the same, without building it as a
/// [`Value`] first (a hot query's answer holds thousands of matches: building and dropping
/// them as maps took a third of `query --jsonl`).
pub fn write_answer(
    out: &mut impl std::io::Write,
    id: &Value,
    r: &QueryResult,
) -> std::io::Result<()> {
    // serde_json's maps are sorted by key: "candidates", ("exact",) "hot_buckets", "id",
    // "matches", ("reranked",) "verified"; and a match's ("containment",) ("estimate",) "id",
    // "jaccard".
    let exact = r.stats.exact;
    write!(out, "{{\"candidates\":{},", r.stats.candidates)?;
    if exact {
        out.write_all(b"\"exact\":true,")?;
    }
    write!(out, "\"hot_buckets\":{},\"id\":", r.stats.hot_buckets)?;
    serde_json::to_writer(&mut *out, id)?;
    out.write_all(b",\"matches\":[")?;
    let mut jaccard_text = Vec::with_capacity(24);
    let mut last_jaccard = None;
    for (i, m) in r.matches.iter().enumerate() {
        out.write_all(if i == 0 { b"{" } else { b",{" })?;
        if m.jaccard.is_some() {
            out.write_all(b"\"containment\":")?;
            serde_json::to_writer(&mut *out, &round6(m.similarity))?;
            out.write_all(b",")?;
        }
        // A SimHash match: "cosine" and "distance" sort before "id"; a re-ranked one's
        // "estimate" too.
        if let (Some(d), Some(c)) = (m.distance, m.cosine) {
            out.write_all(b"\"cosine\":")?;
            serde_json::to_writer(&mut *out, &round6(c))?;
            write!(out, ",\"distance\":{d},")?;
        } else if exact {
            out.write_all(b"\"estimate\":")?;
            serde_json::to_writer(&mut *out, &round6(m.estimate))?;
            write!(out, ",\"exact\":{},", m.exact)?;
        }
        out.write_all(b"\"id\":")?;
        match std::str::from_utf8(&m.key) {
            Ok(key) => serde_json::to_writer(&mut *out, key)?,
            Err(_) => serde_json::to_writer(&mut *out, &key_json(&m.key))?,
        }
        if m.distance.is_none() {
            out.write_all(b",\"jaccard\":")?;
            // Matches come best first, so runs share a similarity (an estimate takes one of
            // k + 1 values): each run's number is formatted once.
            let jaccard = m.jaccard.unwrap_or(m.similarity);
            if last_jaccard != Some(jaccard.to_bits()) {
                jaccard_text.clear();
                serde_json::to_writer(&mut jaccard_text, &round6(jaccard))?;
                last_jaccard = Some(jaccard.to_bits());
            }
            out.write_all(&jaccard_text)?;
        }
        out.write_all(b"}")?;
    }
    out.write_all(b"]")?;
    if exact {
        write!(out, ",\"reranked\":{}", r.stats.reranked)?;
    }
    write!(out, ",\"verified\":{}}}", r.stats.verified)
}

/// A near-duplicate pair: `{"a", "b", "jaccard"}`; from a re-ranking pass also the
/// `"estimate"` and whether `jaccard` is `"exact"`.
pub fn pair(a: Value, b: Value, jaccard: f64, reranked: Option<(f64, bool)>) -> Value {
    let mut v = json!({"a": a, "b": b, "jaccard": round6(jaccard)});
    if let Some((e, exact)) = reranked {
        v["estimate"] = json!(round6(e));
        v["exact"] = json!(exact);
    }
    v
}

/// A pair `dedup` found: [`pair`] (with the estimate beside an `exact` Jaccard), or for a
/// SimHash index `{"a", "b", "distance", "cosine"}`.
pub fn dedup_pair(p: &DedupPair, exact: bool) -> Value {
    let (a, b) = (key_json(&p.a), key_json(&p.b));
    match (p.distance, p.cosine) {
        (Some(d), Some(c)) => json!({"a": a, "b": b, "distance": d, "cosine": round6(c)}),
        _ => pair(a, b, p.similarity, exact.then_some((p.estimate, p.exact))),
    }
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
    if let Some(sim) = p.sim_params() {
        return json!({
            "kind": p.kind.name(),
            "max_hamming": sim.max_hamming,
            "weighting": sim.weighting.name(),
            "seed": p.sketch.seed,
            "shingle": p.sketch.shingle.kind.to_string(),
            "nfkc": p.sketch.shingle.nfkc,
            "threshold": p.threshold,
            "bucket_cap": p.bucket_cap,
            "spec_version": mhdb::sketch::SPEC_VERSION,
        });
    }
    let containment = p.kind == IndexKind::Containment;
    json!({
        "kind": p.kind.name(),
        "metric": p.metric().name(),
        "perms": p.sketch.num_perm,
        "scheme": p.sketch.scheme.name(),
        "seed": p.sketch.seed,
        "shingle": p.sketch.shingle.kind.to_string(),
        "nfkc": p.sketch.shingle.nfkc,
        "bits": p.bits,
        "band_slots": p.band_slots,
        // A containment index's bandings are fixed by its metric.
        "bands": (!containment).then_some(p.lsh.bands),
        "rows": (!containment).then_some(p.lsh.rows),
        "threshold": p.threshold,
        "bucket_cap": p.bucket_cap,
        "store_sets": p.store_sets,
        "spec_version": mhdb::sketch::SPEC_VERSION,
    })
}

/// An index's parameters in text: the `create` flags that would make it again.
pub fn params_text(p: &IndexParams) -> String {
    if let Some(sim) = p.sim_params() {
        return format!(
            "--kind simhash --max-hamming {} --weighting {} --shingle {}{} --seed {} --bucket-cap {}",
            sim.max_hamming,
            sim.weighting,
            p.sketch.shingle.kind,
            if p.sketch.shingle.nfkc { " --nfkc" } else { "" },
            p.sketch.seed,
            p.bucket_cap.unwrap_or(0),
        );
    }
    let banding = match p.kind {
        IndexKind::Containment => "--metric containment".to_string(),
        _ => format!("--bands {} --rows {}", p.lsh.bands, p.lsh.rows),
    };
    format!(
        "--perms {} --scheme {} --shingle {}{} --seed {} --bits {} --band-slots {} {banding} --threshold {} --bucket-cap {}{}",
        p.sketch.num_perm,
        p.sketch.scheme,
        p.sketch.shingle.kind,
        if p.sketch.shingle.nfkc { " --nfkc" } else { "" },
        p.sketch.seed,
        p.bits,
        p.band_slots,
        p.threshold,
        p.bucket_cap.unwrap_or(0),
        if p.store_sets { " --store-sets" } else { "" },
    )
}

/// An index's S-curve (as [`s_curve`]); null for a SimHash index, which has none.
pub fn index_s_curve(p: &IndexParams, points: &[f64]) -> Value {
    p.candidate_curve(points)
        .map_or(Value::Null, |curve| curve_json(&curve))
}

/// The probability of becoming a candidate at each of `points`: `[{"jaccard",
/// "probability"}]`.
pub fn s_curve(lsh: &LshParams, points: &[f64]) -> Value {
    curve_json(&lsh.curve(points))
}

fn curve_json(curve: &[(f64, f64)]) -> Value {
    curve
        .iter()
        .map(|(s, p)| json!({"jaccard": round6(*s), "probability": round6(*p)}))
        .collect()
}

/// The S-curve points `stats` shows.
pub const STATS_CURVE: [f64; 7] = [0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95];

/// A database's summary (`stats --json`, `GET /stats`): counts, sizes, bucket distributions,
/// parameters and S-curve.
pub fn stats(s: &Stats) -> Value {
    let p = &s.params;
    json!({
        "format_version": s.format_version,
        "identity": s.identity.map(|id| id.to_string()),
        "copied_past_damage": s.copied_past_damage,
        "sets_derivation": s.sets_derivation.map(|d| d.name()),
        "exact_hashes": s.exact_hashes.map(|c| json!({"with": c.with, "without": c.without})),
        "set_sizes": s.set_sizes.map(|c| json!({"with": c.with, "without": c.without})),
        "keep": s.keep_column.as_ref().zip(s.keep_values).map(|(k, c)| json!({
            "field": k.field,
            "type": k.keep_type.name(),
            "with": c.with,
            "without": c.without,
        })),
        "live_docs": s.live_docs,
        "deleted_docs": s.deleted_docs,
        "memtable_docs": s.memtable_docs,
        "segments": s.segments,
        "bytes": s.bytes,
        "hot_buckets": s.hot_buckets,
        "torn_tails": s.torn_tails,
        "bands": s.bands.iter().map(|b| json!({
            "buckets": b.buckets, "p50": b.p50, "p99": b.p99, "max": b.max, "hot": b.hot,
        })).collect::<Vec<_>>(),
        "params": params(p),
        "expected_recall_at_threshold": s.expected_recall_at_threshold,
        // A SimHash index has no S-curve: every document within max_hamming is a candidate
        // (unless its block's bucket was capped).
        "s_curve": index_s_curve(p, &STATS_CURVE),
    })
}

/// The summary of one database ([`stats`]) or of shards: each shard's, with its `path`,
/// and their totals (`{"shards": [{"path", …}], "total": {…}}`), as `stats --json` prints it
/// and `GET /stats` answers it.
pub fn index_stats(s: &IndexStats) -> Value {
    let all = match s {
        IndexStats::One(s) => return stats(s),
        IndexStats::Shards(all) => all,
    };
    let shards: Vec<Value> = all
        .shards
        .iter()
        .map(|(path, s)| {
            let mut v = stats(s);
            if let Value::Object(map) = &mut v {
                map.insert("path".into(), path.to_string_lossy().into());
            }
            v
        })
        .collect();
    let total = json!({
        "shards": all.shards.len(),
        "live_docs": all.live_docs,
        "deleted_docs": all.deleted_docs,
        "memtable_docs": all.memtable_docs,
        "segments": all.segments,
        "bytes": all.bytes,
        "hot_buckets": all.hot_buckets,
        "torn_tails": all.torn_tails,
    });
    json!({"shards": shards, "total": total})
}

#[cfg(test)]
mod write_answer_tests {
    use mhdb::db::{Match, Metric, QueryStats};

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
            for exact in [false, true] {
                let r = QueryResult {
                    matches: keys
                        .iter()
                        .take(n)
                        .enumerate()
                        .map(|(i, k)| Match {
                            key: k.to_vec(),
                            similarity: 1.0 / (i as f64 + 3.0),
                            // Every other match as a SimHash index reports it.
                            metric: if i % 2 == 1 && !exact {
                                Metric::Cosine
                            } else {
                                Metric::Jaccard
                            },
                            estimate: 1.0 / (i as f64 + 2.5),
                            exact: exact && i % 3 != 0,
                            distance: (i % 2 == 1 && !exact).then_some(i as u32),
                            cosine: (i % 2 == 1 && !exact)
                                .then(|| mhdb::sketch::cosine_from_hamming(i as u32)),
                            // Every fourth as a containment query reports it.
                            jaccard: (i % 4 == 0).then(|| 1.0 / (i as f64 + 7.0)),
                        })
                        .collect(),
                    stats: QueryStats {
                        candidates: 4713 + n,
                        verified: 4700,
                        hot_buckets: n,
                        segments: 2,
                        probed: 0,
                        exact,
                        reranked: 30 + n,
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
}
