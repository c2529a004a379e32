//! The read endpoints: `/query`, `/query_batch`, `/stats`, `/health`. Answers have the CLI's
//! shapes (`cli::shapes`): a `/query` answer is what `mhdb query --json` prints, a batch's
//! lines what `mhdb query --jsonl` prints, `/stats` what `mhdb stats --json` prints (over shards too).

use std::convert::Infallible;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use mhdb::db::{QueryOptions, QueryResult};
use rayon::prelude::*;
use serde_json::json;
use tokio::sync::mpsc;

use super::App;
use super::guard::{LibraryTime, blocking, deadline, permit, timed_out};
use super::reply::{ApiError, Reply, json_body, json_value};
use super::request::{QueryInput, QuerySpec, parse_json, read_body};
use crate::cli::shapes;

/// Queries of a batch answered together (on every core) and sent as one chunk.
const WINDOW: usize = 64;

/// Text longer than this is signed on the blocking pool: signing takes time in its length,
/// and the library's deadline does not interrupt it.
const IN_PLACE_TEXT_BYTES: usize = 64 << 10;

/// Longest a `/query` holds the async worker that read it. A query not answered by then is
/// stopped by the library and run again on the blocking pool, under the request's own
/// deadline: this much work at most is done twice, and no query holds up the other requests
/// of its worker for longer.
const IN_PLACE_BUDGET: Duration = Duration::from_millis(2);

/// `POST /query`.
pub async fn query(State(app): State<Arc<App>>, req: Request) -> Reply {
    let permit = permit(&req);
    let deadline = deadline(&req);
    let (parts, body) = req.into_parts();
    let bytes = read_body(&parts.headers, body, app.limits.max_body_bytes).await?;
    let mut spec =
        QuerySpec::parse(&parse_json(&bytes)?, app.index.params()).map_err(ApiError::usage)?;
    let (text, took) = match answer_in_place(&app, &mut spec, deadline) {
        InPlace::Answered(answered) => {
            drop(permit);
            answered?
        }
        InPlace::Moved { spent } => {
            let (text, took) = blocking(permit, move || answer_json(&app, &spec, deadline)).await?;
            (text, took + spent)
        }
    };
    let mut response = json_body(text);
    response.extensions_mut().insert(LibraryTime(took));
    Ok(response)
}

/// A `/query` tried in place.
enum InPlace {
    /// Its answer (or failure), in its JSON shape, with the time the library took.
    Answered(Result<(Vec<u8>, Duration), ApiError>),
    /// It needs longer than [`IN_PLACE_BUDGET`] (or a long text to sign): it goes to the
    /// blocking pool, its text signed already, after `spent` in the library.
    Moved { spent: Duration },
}

/// Answers `spec` on the calling async worker within [`IN_PLACE_BUDGET`], signing its text
/// first (`spec` then holds the signature, so that the pool does not sign it again).
/// Handing a query to the pool and its answer back costs two thread wake-ups, which on a
/// busy machine take longer than most queries; in place costs none.
fn answer_in_place(app: &App, spec: &mut QuerySpec, deadline: Instant) -> InPlace {
    let started = Instant::now();
    if let QueryInput::Text(text) = &spec.input {
        if text.len() > IN_PLACE_TEXT_BYTES {
            return InPlace::Moved {
                spent: Duration::ZERO,
            };
        }
        match app.index.sketch_query_text(text) {
            Ok(sig) => spec.input = QueryInput::Signature(sig),
            Err(e) => return InPlace::Answered(Err(e.into())),
        }
    }
    let budget = deadline.min(started + IN_PLACE_BUDGET);
    match answer(app, spec, Some(budget)) {
        Err(mhdb::Error::DeadlineExceeded { .. }) if budget < deadline => InPlace::Moved {
            spent: started.elapsed(),
        },
        r => {
            let took = started.elapsed();
            InPlace::Answered(
                r.map_err(|e| failed(app, e))
                    .and_then(|r| Ok((written(spec, &r)?, took))),
            )
        }
    }
}

/// One query answered by its deadline and written in its JSON shape, with the time the
/// library took.
fn answer_json(
    app: &App,
    spec: &QuerySpec,
    deadline: Instant,
) -> Result<(Vec<u8>, Duration), ApiError> {
    let started = Instant::now();
    let r = answer(app, spec, Some(deadline)).map_err(|e| failed(app, e))?;
    let took = started.elapsed();
    Ok((written(spec, &r)?, took))
}

/// A query's answer in its JSON shape.
fn written(spec: &QuerySpec, r: &QueryResult) -> Result<Vec<u8>, ApiError> {
    let mut out = Vec::with_capacity(256);
    shapes::write_answer(&mut out, &spec.id, r).map_err(|e| ApiError::internal(e.to_string()))?;
    Ok(out)
}

/// One query answered (stopped at `deadline`), and counted.
fn answer(app: &App, spec: &QuerySpec, deadline: Option<Instant>) -> mhdb::Result<QueryResult> {
    let opts = QueryOptions {
        deadline,
        ..spec.opts
    };
    let r = match &spec.input {
        QueryInput::Text(t) => app.index.query_text(t, &opts)?,
        QueryInput::Signature(s) => app.index.query(s, &opts)?,
    };
    app.metrics.query(&r.stats);
    Ok(r)
}

/// A library error as a `/query` answers it: a passed deadline is the request's timeout, in
/// the words the guard's timeout uses.
fn failed(app: &App, e: mhdb::Error) -> ApiError {
    match e {
        mhdb::Error::DeadlineExceeded { .. } => timed_out(app.limits.timeout),
        e => e.into(),
    }
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
            .map(|(_, spec)| {
                answer(app, spec, Some(deadline)).map_err(|e| match e {
                    mhdb::Error::DeadlineExceeded { .. } => batch_timed_out(),
                    e => e.into(),
                })
            })
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
            let next = window.last().map_or(0, |(l, _)| *l + 1);
            failure_line(&mut out, &batch_timed_out(), next);
            failed = true;
        }
        if tx.blocking_send(out.into()).is_err() || failed {
            return;
        }
    }
}

/// The last line of a batch stopped by its timeout.
fn batch_timed_out() -> ApiError {
    ApiError::new(
        StatusCode::GATEWAY_TIMEOUT,
        "timeout",
        "the batch took longer than --timeout-ms; the lines before this one are answered",
    )
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
