//! `/metrics` in the Prometheus text format (version 0.0.4), written by hand: counters, one
//! gauge and one histogram are a few lines of text each, which a client library would add
//! dependencies and a registry for.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use axum::extract::State;
use axum::http::{HeaderValue, header};
use axum::response::Response;
use mhdb::db::QueryStats;
use parking_lot::Mutex;

use super::App;

/// Latency bucket bounds, in seconds: 50 µs to 10 s.
const BUCKETS: [f64; 14] = [
    0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 1.0, 10.0,
];

/// One endpoint's latencies.
#[derive(Default)]
struct Histogram {
    /// Requests at or under each bound (not yet cumulative).
    counts: [u64; BUCKETS.len()],
    count: u64,
    sum: f64,
}

/// What the server counts.
#[derive(Default)]
pub struct Metrics {
    /// Answers per (endpoint, status).
    requests: Mutex<BTreeMap<(&'static str, u16), u64>>,
    latency: Mutex<BTreeMap<&'static str, Histogram>>,
    queries: AtomicU64,
    candidates: AtomicU64,
    verified: AtomicU64,
    hot_buckets: AtomicU64,
    commits: AtomicU64,
    inserted: AtomicU64,
    duplicates: AtomicU64,
    deleted: AtomicU64,
    refreshes: AtomicU64,
    refresh_failures: AtomicU64,
}

impl Metrics {
    /// One answered request.
    pub fn record(&self, endpoint: &'static str, status: u16, took: Duration) {
        *self.requests.lock().entry((endpoint, status)).or_default() += 1;
        let seconds = took.as_secs_f64();
        let mut latency = self.latency.lock();
        let h = latency.entry(endpoint).or_default();
        if let Some(i) = BUCKETS.iter().position(|b| seconds <= *b) {
            h.counts[i] += 1;
        }
        h.count += 1;
        h.sum += seconds;
    }

    /// One answered query.
    pub fn query(&self, s: &QueryStats) {
        self.queries.fetch_add(1, Ordering::Relaxed);
        self.candidates
            .fetch_add(s.candidates as u64, Ordering::Relaxed);
        self.verified
            .fetch_add(s.verified as u64, Ordering::Relaxed);
        self.hot_buckets
            .fetch_add(s.hot_buckets as u64, Ordering::Relaxed);
    }

    /// One durable write: documents stored, skipped as duplicates, deleted.
    pub fn commit(&self, inserted: usize, duplicates: usize, deleted: usize) {
        self.commits.fetch_add(1, Ordering::Relaxed);
        self.inserted.fetch_add(inserted as u64, Ordering::Relaxed);
        self.duplicates
            .fetch_add(duplicates as u64, Ordering::Relaxed);
        self.deleted.fetch_add(deleted as u64, Ordering::Relaxed);
    }

    /// One look for a writer's commits that found some: whether the refresh worked.
    pub fn refresh(&self, ok: bool) {
        let counter = if ok {
            &self.refreshes
        } else {
            &self.refresh_failures
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// The exposition text.
    pub fn text(&self, live_docs: u64) -> String {
        let mut out = String::new();
        self.write_requests(&mut out);
        self.write_latency(&mut out);
        self.write_counters(&mut out);
        let _ = write!(
            out,
            "# HELP mhdb_live_documents Live documents in the index.\n\
             # TYPE mhdb_live_documents gauge\nmhdb_live_documents {live_docs}\n"
        );
        out
    }

    fn write_counters(&self, out: &mut String) {
        let counters: [(&str, &str, &AtomicU64); 10] = [
            (
                "mhdb_queries_total",
                "Queries answered (a batch counts each).",
                &self.queries,
            ),
            (
                "mhdb_query_candidates_total",
                "Candidate documents gathered from band buckets.",
                &self.candidates,
            ),
            (
                "mhdb_query_verified_total",
                "Candidates whose signature was compared.",
                &self.verified,
            ),
            (
                "mhdb_query_hot_buckets_total",
                "Capped band buckets the queries hit.",
                &self.hot_buckets,
            ),
            (
                "mhdb_commits_total",
                "Write requests committed durably.",
                &self.commits,
            ),
            (
                "mhdb_documents_inserted_total",
                "Documents stored.",
                &self.inserted,
            ),
            (
                "mhdb_duplicates_skipped_total",
                "Documents insert_if_novel did not store.",
                &self.duplicates,
            ),
            (
                "mhdb_documents_deleted_total",
                "Present documents deleted.",
                &self.deleted,
            ),
            (
                "mhdb_refreshes_total",
                "Times a read-only server moved to a writer's newer commits.",
                &self.refreshes,
            ),
            (
                "mhdb_refresh_failures_total",
                "Refreshes that failed (the server kept its state).",
                &self.refresh_failures,
            ),
        ];
        for (name, help, value) in counters {
            let v = value.load(Ordering::Relaxed);
            let _ = write!(
                out,
                "# HELP {name} {help}\n# TYPE {name} counter\n{name} {v}\n"
            );
        }
    }

    fn write_requests(&self, out: &mut String) {
        out.push_str(
            "# HELP mhdb_requests_total HTTP requests answered, by endpoint and status.\n",
        );
        out.push_str("# TYPE mhdb_requests_total counter\n");
        for ((endpoint, status), n) in self.requests.lock().iter() {
            let _ = writeln!(
                out,
                "mhdb_requests_total{{endpoint=\"{endpoint}\",status=\"{status}\"}} {n}"
            );
        }
    }

    fn write_latency(&self, out: &mut String) {
        let name = "mhdb_request_duration_seconds";
        let _ = write!(
            out,
            "# HELP {name} Time from a request's arrival to its answer's headers.\n\
             # TYPE {name} histogram\n"
        );
        for (endpoint, h) in self.latency.lock().iter() {
            let mut cumulative = 0;
            for (bound, n) in BUCKETS.iter().zip(h.counts) {
                cumulative += n;
                let _ = writeln!(
                    out,
                    "{name}_bucket{{endpoint=\"{endpoint}\",le=\"{bound}\"}} {cumulative}"
                );
            }
            let _ = write!(
                out,
                "{name}_bucket{{endpoint=\"{endpoint}\",le=\"+Inf\"}} {}\n\
                 {name}_sum{{endpoint=\"{endpoint}\"}} {}\n\
                 {name}_count{{endpoint=\"{endpoint}\"}} {}\n",
                h.count, h.sum, h.count
            );
        }
    }
}

/// `GET /metrics`.
pub async fn endpoint(State(app): State<Arc<App>>) -> Response {
    let mut response = Response::new(app.metrics.text(app.index.len()).into());
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; version=0.0.4"),
    );
    response
}
