//! The read endpoints: `/query`, `/query_batch`, `/stats`, `/health`. Answers have the CLI's
//! shapes (`cli::shapes`): a `/query` answer is what `mhdb query --json` prints, a batch's
//! lines what `mhdb query --jsonl` prints, `/stats` what `mhdb stats --json` prints (over shards too).

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Instant;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use mhdb::db::QueryResult;
use rayon::prelude::*;
use serde_json::json;
use tokio::sync::mpsc;

use super::App;
use super::guard::{blocking, permit};
use super::reply::{ApiError, Reply, json_body, json_value};
use super::request::{QueryInput, QuerySpec, parse_json, read_body};
use crate::cli::shapes;

/// Queries of a batch answered together (on every core) and sent as one chunk.
const WINDOW: usize = 64;

/// `POST /query`.
pub async fn query(State(app): State<Arc<App>>, req: Request) -> Reply {
    let permit = permit(&req);
    let (parts, body) = req.into_parts();
    let bytes = read_body(&parts.headers, body, app.limits.max_body_bytes).await?;
    let spec =
        QuerySpec::parse(&parse_json(&bytes)?, app.index.params()).map_err(ApiError::usage)?;
    let text = blocking(permit, move || {
        let r = answer(&app, &spec)?;
        let mut out = Vec::new();
        shapes::write_answer(&mut out, &spec.id, &r)
            .map_err(|e| ApiError::internal(e.to_string()))?;
        Ok(out)
    })
    .await?;
    Ok(json_body(text))
}

/// One query answered, and counted.
fn answer(app: &App, spec: &QuerySpec) -> Result<QueryResult, ApiError> {
    let r = match &spec.input {
        QueryInput::Text(t) => app.index.query_text(t, &spec.opts)?,
        QueryInput::Signature(s) => app.index.query(s, &spec.opts)?,
    };
    app.metrics.query(&r.stats);
    Ok(r)
}

/// `POST /query_batch`: one query object per line in (blank lines skipped), one answer line
/// per query out, in input order, sent a window at a time as they are ready. Every line is
/// checked before any is answered (a bad one is a 400 naming it); a failure while answering
/// (damage found, the timeout) ends the stream with a line `{"error", "kind", "line"}`.
pub async fn query_batch(State(app): State<Arc<App>>, req: Request) -> Reply {
    let permit = permit(&req);
    let (parts, body) = req.into_parts();
    let bytes = read_body(&parts.headers, body, app.limits.max_body_bytes).await?;
    let specs = parse_lines(&app, &bytes)?;
    let deadline = Instant::now() + app.limits.timeout;
    let (tx, rx) = mpsc::channel::<Bytes>(2);
    tokio::task::spawn_blocking(move || {
        let _held = permit;
        answer_lines(&app, &specs, deadline, &tx);
    });
    let chunks = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|b| (Ok::<_, Infallible>(b), rx))
    });
    let mut response = Response::new(Body::from_stream(chunks));
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/x-ndjson"),
    );
    Ok(response)
}

/// The queries of a batch body with their line numbers (from 1).
fn parse_lines(app: &App, bytes: &[u8]) -> Result<Vec<(usize, QuerySpec)>, ApiError> {
    let mut specs = Vec::new();
    for (i, line) in bytes.split(|b| *b == b'\n').enumerate() {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        if specs.len() == app.limits.max_batch {
            return Err(ApiError::too_large(format!(
                "more than {} queries in one batch (--max-batch)",
                app.limits.max_batch
            )));
        }
        let at = |e: String| ApiError::usage(format!("line {}: {e}", i + 1));
        let value = parse_json(line).map_err(|e| at(e.message))?;
        specs.push((
            i + 1,
            QuerySpec::parse(&value, app.index.params()).map_err(at)?,
        ));
    }
    Ok(specs)
}

/// Answers `specs` a window at a time, sending each window's lines; stops at the first
/// failure (sent as a last line), at the deadline, or when the client has gone.
fn answer_lines(
    app: &App,
    specs: &[(usize, QuerySpec)],
    deadline: Instant,
    tx: &mpsc::Sender<Bytes>,
) {
    let windows = specs.chunks(WINDOW).len();
    for (i, window) in specs.chunks(WINDOW).enumerate() {
        let results: Vec<_> = window
            .par_iter()
            .map(|(_, spec)| answer(app, spec))
            .collect();
        let mut out = Vec::new();
        let mut failed = false;
        for ((line, spec), r) in window.iter().zip(results) {
            let written = r.and_then(|r| {
                shapes::write_answer(&mut out, &spec.id, &r)
                    .map_err(|e| ApiError::internal(e.to_string()))
            });
            if let Err(e) = written {
                failure_line(&mut out, &e, *line);
                failed = true;
                break;
            }
            out.push(b'\n');
        }
        if !failed && i + 1 < windows && Instant::now() > deadline {
            let e = ApiError::new(
                StatusCode::GATEWAY_TIMEOUT,
                "timeout",
                "the batch took longer than --timeout-ms; the lines before this one are answered",
            );
            failure_line(&mut out, &e, window.last().map_or(0, |(l, _)| *l + 1));
            failed = true;
        }
        if tx.blocking_send(out.into()).is_err() || failed {
            return;
        }
    }
}

fn failure_line(out: &mut Vec<u8>, e: &ApiError, line: usize) {
    let mut v = e.body();
    v["line"] = json!(line);
    out.extend_from_slice(v.to_string().as_bytes());
    out.push(b'\n');
}

/// `GET /stats`.
pub async fn stats(State(app): State<Arc<App>>, req: Request) -> Reply {
    let permit = permit(&req);
    let index = app.index.clone();
    let v = blocking(permit, move || Ok(shapes::index_stats(&index.stats()?))).await?;
    Ok(json_value(&v))
}

/// `GET /health`: the server answers (no token needed, no database call).
pub async fn health() -> Response {
    json_value(&json!({"ok": true}))
}

/// Any other path.
pub async fn not_found(req: Request) -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "not_found",
        format!(
            "no endpoint {} {} (POST /query, /query_batch; GET /stats, /health, /metrics; \
             with --writer POST /insert, /insert_if_novel, /delete)",
            req.method(),
            req.uri().path()
        ),
    )
}

/// A known path asked with the wrong method.
pub async fn wrong_method(req: Request) -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "usage",
        format!(
            "{} does not take {} (queries and writes are POST; /stats, /health and /metrics GET)",
            req.uri().path(),
            req.method()
        ),
    )
}
