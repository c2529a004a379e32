//! Request bodies: read within the size bound, parsed as JSON (a malformed one is answered
//! with its line and column), and their fields checked: what a query asks
//! ([`QuerySpec`]) and what a write stores ([`Document`]).

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, header};
use futures_util::StreamExt as _;
use mhdb::db::{IndexParams, NoveltyOptions, QueryOptions};
use mhdb::sketch::Signature;
use mhdb::sketch::containment::EstimateRule;
use serde_json::{Map, Value};

use super::reply::ApiError;
use mhdb::input::key_from_json;

/// The whole body, refused (413) past `limit` bytes: by its declared length before any is
/// read, else as soon as more arrives.
pub async fn read_body(headers: &HeaderMap, body: Body, limit: usize) -> Result<Bytes, ApiError> {
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        return Err(too_long(limit));
    }
    let mut stream = body.into_data_stream();
    let mut bytes = Vec::new();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk
            .map_err(|e| ApiError::usage(format!("the request body could not be read: {e}")))?;
        if bytes.len() + chunk.len() > limit {
            return Err(too_long(limit));
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(bytes.into())
}

fn too_long(limit: usize) -> ApiError {
    ApiError::too_large(format!(
        "the request body is longer than {limit} bytes (--max-body-bytes)"
    ))
}

/// One JSON value; serde_json's message names the line and column of a malformed one.
pub fn parse_json(bytes: &[u8]) -> Result<Value, ApiError> {
    serde_json::from_slice(bytes).map_err(|e| ApiError::usage(format!("malformed JSON: {e}")))
}

/// A JSON object's fields, refusing any not in `allowed` (a misspelt option would otherwise
/// be ignored silently).
pub fn object<'a>(v: &'a Value, allowed: &[&str]) -> Result<&'a Map<String, Value>, String> {
    let Value::Object(map) = v else {
        return Err(format!("expected a JSON object, got {v}"));
    };
    if let Some(unknown) = map.keys().find(|k| !allowed.contains(&k.as_str())) {
        return Err(format!(
            "unknown field {unknown:?} (known: {})",
            allowed.join(", ")
        ));
    }
    Ok(map)
}

/// What one query asks: its text or signature, its id as given, and its options.
pub struct QuerySpec {
    /// Echoed in the answer, as `query --jsonl` echoes a line's id (null when absent).
    pub id: Value,
    pub input: QueryInput,
    pub opts: QueryOptions,
}

/// What a query is about.
pub enum QueryInput {
    Text(String),
    Signature(Signature),
}

/// The fields a query may have.
pub const QUERY_FIELDS: &[&str] = &[
    "id",
    "text",
    "signature",
    "threshold",
    "max_distance",
    "containment",
    "recall",
    "limit",
    "top",
    "no_exact",
];

impl QuerySpec {
    /// A query object, its options checked as the `query` flags are.
    pub fn parse(v: &Value, params: &IndexParams) -> Result<QuerySpec, String> {
        let map = object(v, QUERY_FIELDS)?;
        let input = input(map)?;
        let limit = count(map, "limit")?;
        let top = count(map, "top")?;
        if limit.is_some() && top.is_some() {
            return Err("give \"limit\" or \"top\", not both".into());
        }
        let opts = QueryOptions {
            threshold: threshold(map, params)?,
            limit,
            estimate_only: flag(map, "no_exact")?,
            top,
            // Set by the endpoint, from the request's timeout.
            deadline: None,
            containment: containment(map)?,
            containment_recall: recall(map)?,
        };
        let id = map.get("id").cloned().unwrap_or(Value::Null);
        Ok(QuerySpec { id, input, opts })
    }
}

/// `threshold` in (0, 1], or a SimHash index's `max_distance` turned into one.
fn threshold(map: &Map<String, Value>, params: &IndexParams) -> Result<Option<f64>, String> {
    match (map.get("threshold"), map.get("max_distance")) {
        (Some(_), Some(_)) => Err("give \"threshold\" or \"max_distance\", not both".into()),
        (Some(t), None) => match t.as_f64() {
            Some(t) if t > 0.0 && t <= 1.0 => Ok(Some(t)),
            _ => Err(format!("\"threshold\" must be a number in (0, 1], got {t}")),
        },
        (None, Some(d)) => {
            let d = d
                .as_u64()
                .and_then(|d| u32::try_from(d).ok())
                .ok_or_else(|| format!("\"max_distance\" must be a whole number, got {d}"))?;
            params
                .threshold_for_distance(d)
                .map(Some)
                .map_err(|e| format!("\"max_distance\": {e}"))
        }
        (None, None) => Ok(None),
    }
}

/// A containment query's threshold in (0, 1] (with "top", the floor of a top-k), when
/// given; not with "threshold" or "max_distance" (the library refuses it on an index
/// without size classes).
/// `recall`, a containment query's ([`EstimateRule::for_recall`] says what it may be).
fn recall(map: &Map<String, Value>) -> Result<Option<f64>, String> {
    let Some(r) = map.get("recall") else {
        return Ok(None);
    };
    let r = r
        .as_f64()
        .ok_or_else(|| format!("\"recall\" must be a number in (0, 1), got {r}"))?;
    EstimateRule::for_recall(r).map_err(|e| e.to_string())?;
    Ok(Some(r))
}

fn containment(map: &Map<String, Value>) -> Result<Option<f64>, String> {
    let Some(c) = map.get("containment") else {
        return Ok(None);
    };
    if let Some(other) = ["threshold", "max_distance"]
        .into_iter()
        .find(|k| map.contains_key(*k))
    {
        return Err(format!("give \"containment\" or {other:?}, not both"));
    }
    match c.as_f64() {
        Some(c) if c > 0.0 && c <= 1.0 => Ok(Some(c)),
        _ => Err(format!(
            "\"containment\" must be a number in (0, 1], got {c}"
        )),
    }
}

/// A count of at least 1 (`limit`, `top`), when given.
fn count(map: &Map<String, Value>, name: &str) -> Result<Option<usize>, String> {
    match map.get(name) {
        None => Ok(None),
        Some(v) => match v.as_u64() {
            Some(n) if n >= 1 => Ok(Some(n as usize)),
            _ => Err(format!(
                "{name:?} must be a whole number of at least 1, got {v}"
            )),
        },
    }
}

fn flag(map: &Map<String, Value>, name: &str) -> Result<bool, String> {
    match map.get(name) {
        None => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(v) => Err(format!("{name:?} must be true or false, got {v}")),
    }
}

/// A query's or a document's text or signature.
fn input(map: &Map<String, Value>) -> Result<QueryInput, String> {
    match (map.get("text"), map.get("signature")) {
        (Some(Value::String(t)), None) => Ok(QueryInput::Text(t.clone())),
        (None, Some(s)) => Ok(QueryInput::Signature(signature(s)?)),
        (Some(_), Some(_)) => Err("give \"text\" or \"signature\", not both".into()),
        (Some(_), None) => Err("\"text\" must be a string".into()),
        (None, None) => Err("give \"text\" or \"signature\"".into()),
    }
}

/// A signature given as its slot values.
fn signature(v: &Value) -> Result<Signature, String> {
    let slots = v
        .as_array()
        .ok_or("\"signature\" must be an array of slot values")?
        .iter()
        .map(|s| {
            s.as_u64()
                .ok_or_else(|| format!("a signature slot must be a whole number, got {s}"))
        })
        .collect::<Result<Vec<u64>, String>>()?;
    Ok(Signature::from_slots(slots))
}

/// One document of a write request.
pub struct Document {
    pub key: Vec<u8>,
    /// Its text, or its signature (for a write of signatures made elsewhere).
    pub input: QueryInput,
}

/// The fields a document of an insert may have; `extra` adds a request's own.
pub fn document(v: &Value, extra: &[&str]) -> Result<Document, String> {
    let mut allowed = vec!["id", "text", "signature"];
    allowed.extend_from_slice(extra);
    let map = object(v, &allowed)?;
    let key = key_field(map)?;
    let input = input(map)?;
    Ok(Document { key, input })
}

/// The `id` of a document: a string, or `{"hex": ...}` (as `add` reads it).
pub fn key_field(map: &Map<String, Value>) -> Result<Vec<u8>, String> {
    let id = map.get("id").ok_or("missing field \"id\"")?;
    key_from_json(id).map_err(|e| format!("\"id\": {e}"))
}

/// A write's items: one object, or an array of them (at most `max`, else 413); whether it
/// was one.
pub fn items(v: &Value, max: usize) -> Result<(Vec<&Value>, bool), ApiError> {
    match v {
        Value::Array(items) if items.len() > max => Err(ApiError::too_large(format!(
            "{} documents in one request; at most {max} (--max-batch)",
            items.len()
        ))),
        Value::Array(items) => Ok((items.iter().collect(), false)),
        other => Ok((vec![other], true)),
    }
}

/// The fields an insert-if-novel document may have beside a document's.
pub const NOVELTY_FIELDS: &[&str] = &["threshold", "max_distance", "limit", "no_exact"];

/// How an insert-if-novel document asks to be checked (`threshold` or `max_distance`,
/// `limit`, `no_exact`, as a query's).
pub fn novelty_options(v: &Value, params: &IndexParams) -> Result<NoveltyOptions, String> {
    let map = object(v, &[&["id", "text", "signature"], NOVELTY_FIELDS].concat())?;
    Ok(NoveltyOptions {
        threshold: threshold(map, params)?,
        limit: count(map, "limit")?,
        estimate_only: flag(map, "no_exact")?,
    })
}
