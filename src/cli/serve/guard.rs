//! What every request passes before its handler: the bearer token, the concurrency bound and
//! the timeout; and what every answer leaves behind: its count and latency in the metrics,
//! and a `Server-Timing` header saying where its time went.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use tokio::sync::OwnedSemaphorePermit;

use super::App;
use super::reply::ApiError;

/// A request's place among the `--max-concurrent` ones: held until its handler's blocking
/// work ends, even when the client has gone or the request timed out, so the bound counts
/// the work the database is really doing.
#[derive(Clone)]
pub struct Permit {
    _held: Arc<OwnedSemaphorePermit>,
}

/// When a request's `--timeout-ms` runs out: a query is given it as its deadline, which the
/// library stops it at even where the guard's timeout cannot interrupt it (in place).
#[derive(Clone, Copy)]
pub struct Deadline(pub Instant);

/// The time an answer spent in the library (signing and querying), which the
/// `Server-Timing` header reports beside the request's whole time in the server.
#[derive(Clone, Copy)]
pub struct LibraryTime(pub Duration);

/// The endpoints, as metrics name them; anything else is `other`.
const ENDPOINTS: &[&str] = &[
    "/query",
    "/query_batch",
    "/stats",
    "/health",
    "/metrics",
    "/insert",
    "/insert_if_novel",
    "/delete",
];

/// The middleware every request goes through.
pub async fn guard(State(app): State<Arc<App>>, mut req: Request, next: Next) -> Response {
    let started = Instant::now();
    let endpoint = ENDPOINTS
        .iter()
        .copied()
        .find(|e| *e == req.uri().path())
        .unwrap_or("other");
    let deadline = if app.deadlines_expired {
        started
    } else {
        started + app.limits.timeout
    };
    req.extensions_mut().insert(Deadline(deadline));
    let mut response = match admit(&app, endpoint, &mut req) {
        Err(refused) => refused.into_response(),
        Ok(()) => match tokio::time::timeout(app.limits.timeout, next.run(req)).await {
            Ok(response) => response,
            Err(_) => timed_out(app.limits.timeout).into_response(),
        },
    };
    let took = started.elapsed();
    app.metrics
        .record(endpoint, response.status().as_u16(), took);
    let library = response.extensions().get::<LibraryTime>().map(|t| t.0);
    if let Ok(timing) = HeaderValue::from_str(&server_timing(library, took)) {
        response.headers_mut().insert("server-timing", timing);
    }
    response
}

/// `lib;dur=MS, total;dur=MS` (milliseconds, as the header's standard has them): the time in
/// the library, when the answer needed it, and the time from the request's arrival in the
/// server to its answer's headers; `total` less `lib` is what serving the request cost.
fn server_timing(library: Option<Duration>, total: Duration) -> String {
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    match library {
        Some(lib) => format!("lib;dur={:.3}, total;dur={:.3}", ms(lib), ms(total)),
        None => format!("total;dur={:.3}", ms(total)),
    }
}

/// Checks the token and takes a place among the concurrent requests (`/health`, which
/// orchestrators probe, and `/metrics`, which says why a server is full, need neither).
fn admit(app: &App, endpoint: &str, req: &mut Request) -> Result<(), ApiError> {
    if endpoint == "/health" {
        return Ok(());
    }
    if let Some(token) = &app.token {
        check_token(req.headers(), token)?;
    }
    if endpoint == "/metrics" {
        return Ok(());
    }
    let permit = app.slots.clone().try_acquire_owned().map_err(|_| {
        let mut e = ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "overload",
            "every one of the server's --max-concurrent places is taken; retry shortly",
        );
        e.retry_after = Some(1);
        e
    })?;
    req.extensions_mut().insert(Permit {
        _held: Arc::new(permit),
    });
    Ok(())
}

/// `Authorization: Bearer TOKEN`, compared in time that does not depend on where it differs.
fn check_token(headers: &HeaderMap, token: &str) -> Result<(), ApiError> {
    let given = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    let matches = given.is_some_and(|g| {
        g.len() == token.len()
            && g.bytes()
                .zip(token.bytes())
                .fold(0u8, |acc, (a, b)| acc | (a ^ b))
                == 0
    });
    if matches {
        return Ok(());
    }
    let why = if given.is_some() {
        "the bearer token is wrong"
    } else {
        "this server requires a bearer token: Authorization: Bearer TOKEN"
    };
    Err(ApiError::new(StatusCode::UNAUTHORIZED, "unauthorized", why))
}

/// The answer to a request that took longer than `timeout`.
pub fn timed_out(timeout: Duration) -> ApiError {
    ApiError::new(
        StatusCode::GATEWAY_TIMEOUT,
        "timeout",
        format!(
            "the request took longer than {} ms (--timeout-ms); a write may still commit, so \
             check before retrying one",
            timeout.as_millis()
        ),
    )
}

/// The request's permit, taken out of it for its blocking work to hold.
pub fn permit(req: &Request) -> Option<Permit> {
    req.extensions().get::<Permit>().cloned()
}

/// When the request's time runs out.
pub fn deadline(req: &Request) -> Instant {
    req.extensions()
        .get::<Deadline>()
        .map_or_else(Instant::now, |d| d.0)
}

/// Runs `work` on the blocking pool (database calls block), holding `permit` until it ends.
pub async fn blocking<T: Send + 'static>(
    permit: Option<Permit>,
    work: impl FnOnce() -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(move || {
        let _held = permit;
        work()
    })
    .await
    .map_err(|e| ApiError::internal(format!("the request's work failed: {e}")))?
}
