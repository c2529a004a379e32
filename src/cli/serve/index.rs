//! What a read-only server serves. One database now; many shards answering as one index
//! (`Db::open_many`) are the other kind meant to stand behind the same trait, so the handlers
//! never name [`Db`].

use mhdb::db::{Db, IndexParams, QueryOptions, QueryResult};
use mhdb::sketch::Signature;
use serde_json::Value;

use crate::cli::shapes;

/// An index the server queries: every call blocks (it reads files), and many threads call
/// at once.
pub trait ServedIndex: Send + Sync + 'static {
    /// The parameters queries are checked against.
    fn params(&self) -> &IndexParams;
    /// Documents similar to `text`.
    fn query_text(&self, text: &str, opts: &QueryOptions) -> mhdb::Result<QueryResult>;
    /// Documents similar to a signature.
    fn query(&self, sig: &Signature, opts: &QueryOptions) -> mhdb::Result<QueryResult>;
    /// The summary `GET /stats` answers, as `mhdb stats --json` prints it.
    fn stats(&self) -> mhdb::Result<Value>;
    /// Live documents (cheap: `/metrics` asks on every scrape).
    fn live_docs(&self) -> u64;
    /// The directories whose files show what a writer committed (`refresh` watches them).
    fn dirs(&self) -> Vec<std::path::PathBuf>;
    /// Moves to the newest committed state; queries under way finish on the one they began.
    fn refresh(&self) -> mhdb::Result<()>;
}

impl ServedIndex for Db {
    fn params(&self) -> &IndexParams {
        Db::params(self)
    }

    fn query_text(&self, text: &str, opts: &QueryOptions) -> mhdb::Result<QueryResult> {
        Db::query_text(self, text, opts)
    }

    fn query(&self, sig: &Signature, opts: &QueryOptions) -> mhdb::Result<QueryResult> {
        Db::query(self, sig, opts)
    }

    fn stats(&self) -> mhdb::Result<Value> {
        Ok(shapes::stats(&Db::stats(self)?))
    }

    fn live_docs(&self) -> u64 {
        self.len()
    }

    fn dirs(&self) -> Vec<std::path::PathBuf> {
        vec![self.path().to_path_buf()]
    }

    fn refresh(&self) -> mhdb::Result<()> {
        Db::refresh(self)
    }
}
