//! `mhdb serve`: a database, or read-only shards answering as one index, over HTTP/JSON,
//! for services that do not link Rust.
//!
//! The stack is axum on hyper and tokio: the mainstream async HTTP stack of Rust, maintained
//! together by the tokio project, with HTTP/1 keep-alive, streamed bodies and a graceful
//! shutdown built in, and nothing here needs more than its routing and middleware (it is built
//! without its default features: no JSON, forms or query-string extractors; bodies are parsed
//! with the `serde_json` the CLI already uses).
//!
//! The database's calls block (they read mapped files and wait for fsyncs), and the runtime
//! has one async worker per core (tokio's default): a call on a worker holds up every other
//! request that worker would serve. So writes, `/stats` and batches run on tokio's blocking
//! pool, where the per-request timeout answers without waiting for them. A `/query` starts in
//! place, on the async worker that read it, since handing it to the pool and its answer back
//! costs two thread wake-ups, more than most queries take; the library stops it at a deadline
//! ([`QueryOptions::deadline`](mhdb::db::QueryOptions::deadline)), at most
//! `reads::IN_PLACE_BUDGET` (2 ms) away. One stopped there runs again on the pool under the
//! request's own deadline (`--timeout-ms`), past which the library stops it too and the
//! answer is a 504. Every query in place, with only the request's deadline, would let two
//! long queries (a top-k probing every document, a hot bucket of an uncapped index) hold
//! both workers of a 2-core machine, `/health` included, for up to `--timeout-ms`; on the
//! pool they share the cores with the other requests instead, which keep being answered.
//! A text longer than 64 KiB, whose signing the deadline does not interrupt, goes to the
//! pool unsigned.
//!
//! | module | holds |
//! | --- | --- |
//! | `request` | request bodies: JSON parsing with its position, query and document fields |
//! | `reply` | JSON errors with their status and kind, and JSON answers |
//! | `guard` | what every request passes: the token, the concurrency bound, the timeout, metrics |
//! | `reads` | `/query`, `/query_batch`, `/stats`, `/health` |
//! | `writes` | `/insert`, `/insert_if_novel`, `/delete` (with `--writer`) |
//! | `metrics` | `/metrics` in Prometheus text format |
//! | `refresh` | a read-only server following a writer in another process |

mod guard;
mod metrics;
mod reads;
mod refresh;
mod reply;
mod request;
mod writes;

use std::io::Write as _;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::routing::{get, post};
use axum::serve::ListenerExt as _;
use mhdb::db::{Db, ReadIndex};
use tokio::sync::Semaphore;

use super::args::ServeArgs;
use super::databases::{Databases, database_args};
use super::output::{CliError, CliResult, message, warn};
use metrics::Metrics;

/// Hidden test knob: set (to anything), every `/query` finds its deadline passed, the path
/// of a query that finishes after its timeout, which no test could reach without a race.
pub const EXPIRED_DEADLINES_ENV: &str = "MHDB_TEST_EXPIRED_DEADLINES";

/// Whether [`EXPIRED_DEADLINES_ENV`] is set, said on stderr when it is.
fn deadlines_expired() -> bool {
    let set = std::env::var_os(EXPIRED_DEADLINES_ENV).is_some();
    if set {
        warn(format_args!(
            "{EXPIRED_DEADLINES_ENV} is set: every /query is answered 504, as past its \
             timeout (a test knob)"
        ));
    }
    set
}

/// The bounds a request is held to.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Largest request body, in bytes.
    pub max_body_bytes: usize,
    /// Most queries of a batch, or documents of a write.
    pub max_batch: usize,
    /// Longest a request may take.
    pub timeout: Duration,
}

/// What every handler shares.
pub struct App {
    /// What queries and stats read: the database, or the shards.
    pub index: Arc<dyn ReadIndex>,
    /// The same database as a writer's handle, with `--writer`.
    pub writer: Option<Arc<Db>>,
    /// The bearer token every endpoint but `/health` requires, if any.
    pub token: Option<String>,
    pub limits: Limits,
    /// Requests served at once; a request finding none free is answered 503.
    pub slots: Arc<Semaphore>,
    /// Every `/query`'s deadline is its arrival, so that each is answered as one that
    /// finished late (504): set by [`EXPIRED_DEADLINES_ENV`], for tests only.
    pub deadlines_expired: bool,
    pub metrics: Metrics,
}

/// `mhdb serve`.
pub fn serve(args: &ServeArgs) -> CliResult<ExitCode> {
    let token = read_token(args)?;
    let (index, writer) = open(args)?;
    let timeout = Duration::from_millis(args.timeout_ms);
    let app = Arc::new(App {
        deadlines_expired: deadlines_expired(),
        index,
        writer,
        token,
        limits: Limits {
            max_body_bytes: args.max_body_bytes,
            max_batch: args.max_batch,
            timeout,
        },
        slots: Arc::new(Semaphore::new(args.max_concurrent)),
        metrics: Metrics::default(),
    });
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        // Every admitted request holds at most one blocking thread; the refresher one more.
        .max_blocking_threads(args.max_concurrent + 2)
        .build()?;
    let served = runtime.block_on(run(app.clone(), args));
    // Dropping the runtime waits for the blocking calls still running (a write whose request
    // timed out): none is cut off, and the database closes after them.
    drop(runtime);
    served?;
    message("stopped: every request under way was finished");
    Ok(ExitCode::SUCCESS)
}

/// Binds, says where, and serves until SIGTERM or SIGINT; the requests under way finish first.
async fn run(app: Arc<App>, args: &ServeArgs) -> CliResult {
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .map_err(|e| CliError::other(format!("cannot listen on {}: {e}", args.listen)))?;
    let bound = listener.local_addr()?;
    warn_if_exposed(bound, app.token.is_some());
    if app.writer.is_none() {
        refresh::spawn(app.clone(), Duration::from_millis(args.refresh_ms));
    }
    let router = routes(&app);
    // The first line on stdout: a caller that asked for port 0 learns the port here, and
    // knows connections are accepted from now on.
    {
        let mut out = std::io::stdout().lock();
        writeln!(out, "listening on {bound}").map_err(CliError::stdout)?;
        out.flush().map_err(CliError::stdout)?;
    }
    // Answers go out as soon as they are written: without TCP_NODELAY, a streamed batch's
    // second chunk waits for the client's delayed ACK of the first (40 ms on Linux).
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    axum::serve(listener, router)
        .with_graceful_shutdown(stop_signal())
        .await?;
    Ok(())
}

/// Every endpoint, behind the guard. The write endpoints of a server without `--writer`
/// answer 403 (kind `read_only`), which says more than a 404.
fn routes(app: &Arc<App>) -> Router {
    Router::new()
        .route("/query", post(reads::query))
        .route("/query_batch", post(reads::query_batch))
        .route("/stats", get(reads::stats))
        .route("/health", get(reads::health))
        .route("/metrics", get(metrics::endpoint))
        .route("/insert", post(writes::insert))
        .route("/insert_if_novel", post(writes::insert_if_novel))
        .route("/delete", post(writes::delete))
        .fallback(reads::not_found)
        .method_not_allowed_fallback(reads::wrong_method)
        .layer(axum::middleware::from_fn_with_state(
            app.clone(),
            guard::guard,
        ))
        .with_state(app.clone())
}

/// What a server reads, and the same database as a writer's handle with `--writer`.
type Served = (Arc<dyn ReadIndex>, Option<Arc<Db>>);

/// What `args` name, opened as `--writer` asks: one database for writing (also the index
/// queries read), or one database or shards read-only. A keyed index must have its key.
fn open(args: &ServeArgs) -> CliResult<Served> {
    let (index, writer): (Arc<dyn ReadIndex>, _) = if args.writer {
        let db = Arc::new(Db::open(writer_path(args)?, mhdb::db::Options::default())?);
        (db.clone(), Some(db))
    } else {
        (
            Arc::from(Databases::open_quietly(&args.dbs)?.into_index()),
            None,
        )
    };
    for db in index.dbs() {
        super::output::report_recovery(db);
    }
    let first = &index.dbs()[0];
    super::output::warn_unused_key(first);
    if !first.params().key_fingerprint.is_unkeyed() {
        // Text queries and inserts need the key: a server without it would refuse every
        // request that carries text, so it does not start.
        index.sketch_query_text("").map_err(|e| {
            CliError::usage(format!(
                "cannot serve {}: {}",
                first.path().display(),
                CliError::from(e)
            ))
        })?;
    }
    Ok((index, writer))
}

/// The one database `--writer` opens: shards are read-only, so several are refused.
fn writer_path(args: &ServeArgs) -> CliResult<PathBuf> {
    let mut paths = database_args(&args.dbs)?;
    if paths.len() > 1 {
        return Err(CliError::usage(format!(
            "--writer serves one database, and {} were given ({}): shards are served \
             read-only (leave out --writer)",
            paths.len(),
            paths
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    Ok(paths.remove(0))
}

/// The token in `--token-file`, without the white space around it.
fn read_token(args: &ServeArgs) -> CliResult<Option<String>> {
    let Some(path) = &args.token_file else {
        return Ok(None);
    };
    let text = std::fs::read_to_string(path)
        .map_err(|e| CliError::usage(format!("cannot read {}: {e}", path.display())))?;
    let token = text.trim();
    if token.is_empty() {
        return Err(CliError::usage(format!(
            "{} holds no token (it is empty or white space)",
            path.display()
        )));
    }
    Ok(Some(token.to_string()))
}

/// Anyone who can reach a non-loopback address can query (and with `--writer`, write).
fn warn_if_exposed(bound: SocketAddr, has_token: bool) {
    if !bound.ip().is_loopback() && !has_token {
        warn(format_args!(
            "listening on {bound}, which is not a loopback address, without --token-file: \
             anyone who can reach it can use every endpoint (and there is no TLS: put a \
             reverse proxy in front)"
        ));
    }
}

/// Resolves on the first SIGTERM or SIGINT.
async fn stop_signal() {
    super::signals::stop_signal().await;
    message("stopping: finishing the requests under way");
}
