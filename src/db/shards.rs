//! Many read-only databases answering as one index ([`Shards`]): an index built in parallel
//! as shards and shipped as they are, queried side by side instead of merged first.
//!
//! The shards answer as the index `merge` would make of them, in the order given: a key
//! stored in two shards answers from the later one, and "first" (the older document of a
//! pair, the document a cluster keeps) means shard order, then insertion order. Opening
//! reads no document: each shard opens as [`Db::open_read_only`] does (its files mapped,
//! its band directories read ahead by the OS). A key that a later shard also holds is found when a query matches it (a key
//! lookup in the later shards, for matched keys only), and by `dedup`, which reads every
//! document anyway. Cross-shard dedup is in `shards/dedup.rs`.
//!
//! Two differences from a merged index remain, both rare and both on the side of finding
//! more: a band bucket over the bucket cap is cut per shard by a query (a merged index cuts
//! the union, so a query over shards may see more of a hot bucket than the cap), and a
//! top-k query probes exhaustively in each shard whose bands find fewer than K documents
//! they can be trusted for (a merged index may trust its bands where the shards do not).

mod dedup;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rayon::prelude::*;

use super::ingest::Content;
use super::metric::Metric;
use super::query::{Bounds, check_deadline};
use super::{
    Db, IndexParams, Match, Options, QueryOptions, QueryResult, QueryStats, Stats, VerifyReport,
};
use crate::sketch::Signature;
use crate::storage::vfs::StdFs;
use crate::{Error, Result};

/// Read-only databases queried as one index, in the order given ([`Shards::open_many`]).
#[derive(Debug)]
pub struct Shards {
    shards: Vec<Db>,
}

// Many threads share one set of shards, as they share a `Db`: keep it so.
const _: () = {
    const fn send_and_sync<T: Send + Sync>() {}
    send_and_sync::<Shards>();
};

/// A query's answer over shards, with where each match came from.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ShardsAnswer {
    /// The matches, best first (ties by key), and the shards' diagnostics summed.
    pub result: QueryResult,
    /// The shard (its position in [`Shards::shards`]) of each match, in the order of
    /// `result.matches`.
    pub shard_of: Vec<usize>,
    /// Matches dropped because a later shard stores the same key (the later shard answers
    /// for it, as after a merge).
    pub superseded: usize,
}

/// [`Shards::stats`]: each shard's statistics, and their totals.
#[derive(Clone, Debug, PartialEq)]
pub struct ShardsStats {
    /// Each shard's path and statistics, in shard order.
    pub shards: Vec<(PathBuf, Stats)>,
    /// Live documents over all shards (a key stored in two shards counts in both: knowing
    /// otherwise takes reading every key).
    pub live_docs: u64,
    /// Deleted documents still in segments, over all shards.
    pub deleted_docs: u64,
    /// Documents in in-memory tables, over all shards.
    pub memtable_docs: u64,
    /// Segment files over all shards.
    pub segments: usize,
    /// Bytes per file kind over all shards.
    pub bytes: BTreeMap<&'static str, u64>,
    /// Capped buckets over all shards and bands.
    pub hot_buckets: u64,
    /// Torn WAL tails kept aside, over all shards.
    pub torn_tails: usize,
}

impl Db {
    /// Opens the databases at `paths` read-only as one index: see [`Shards::open_many`].
    pub fn open_many<P: AsRef<Path>>(paths: impl IntoIterator<Item = P>) -> Result<Shards> {
        Shards::open_many(paths)
    }
}

impl Shards {
    /// Opens the databases at `paths` read-only ([`Db::open_read_only`]), in order, as one
    /// index. Refused: no path; a database given twice (the same directory, however named:
    /// paths are compared once symbolic links are resolved); shards whose parameters do
    /// not let a query or a dedup pass mean the same thing in each (see
    /// [`Shards::from_dbs`]).
    pub fn open_many<P: AsRef<Path>>(paths: impl IntoIterator<Item = P>) -> Result<Shards> {
        Self::open_many_with_options(paths, &Options::default())
    }

    /// [`Shards::open_many`] with the handle options each shard opens with (a keyed index's
    /// key: [`Options::key`]).
    pub fn open_many_with_options<P: AsRef<Path>>(
        paths: impl IntoIterator<Item = P>,
        opts: &Options,
    ) -> Result<Shards> {
        let dbs = paths
            .into_iter()
            .map(|p| Db::open_with_vfs(Arc::new(StdFs), p, opts.clone(), true))
            .collect::<Result<Vec<_>>>()?;
        Self::from_dbs(dbs)
    }

    /// Shards of databases already open (any handles; the shards only read). The parameters
    /// that must agree are those [`IndexParams::check_mergeable`] checks: the kind and how
    /// text is signed (scheme, slots, seed, shingling, the hashing key), since one query
    /// signature is compared with every shard's documents; the bit width, since a dedup pass
    /// compares stored signatures across shards; the stored sets, so that every pair is
    /// decided the same way; and the banding, since a pair across shards is a candidate when
    /// their stored band keys meet. The threshold and bucket cap are the first shard's, as a
    /// merge takes its destination's.
    pub fn from_dbs(dbs: Vec<Db>) -> Result<Shards> {
        let Some(first) = dbs.first() else {
            return Err(Error::invalid("shards", "no database given"));
        };
        for db in &dbs[1..] {
            first
                .params()
                .check_mergeable(db.params())
                .and_then(|()| first.check_same_set_derivation(db))
                .map_err(|e| incompatible(first.path(), db.path(), e))?;
        }
        let mut seen: Vec<(PathBuf, &Path)> = Vec::with_capacity(dbs.len());
        for db in &dbs {
            let canonical = std::fs::canonicalize(db.path()).unwrap_or(db.path().to_path_buf());
            if let Some((_, earlier)) = seen.iter().find(|(c, _)| *c == canonical) {
                return Err(Error::invalid(
                    "shards",
                    format!(
                        "{} and {} are the same database ({}): give each shard once",
                        earlier.display(),
                        db.path().display(),
                        canonical.display()
                    ),
                ));
            }
            seen.push((canonical, db.path()));
        }
        Ok(Shards { shards: dbs })
    }

    /// The shards, in order.
    pub fn shards(&self) -> &[Db] {
        &self.shards
    }

    /// The parameters queries are answered with: the first shard's (the others' agree on
    /// everything a query compares; see [`Shards::from_dbs`]).
    pub fn params(&self) -> &IndexParams {
        self.first().params()
    }

    fn first(&self) -> &Db {
        // `from_dbs` refuses an empty list.
        &self.shards[0]
    }

    /// Live documents over all shards: the shards' counts summed, so an upper bound of the
    /// merged index's count. A key stored in two shards counts in both, since telling which
    /// keys repeat takes reading every key, which neither opening nor this call does (a
    /// dedup pass reads them all; a query finds the repeats among its matches).
    pub fn len(&self) -> u64 {
        self.shards.iter().map(Db::len).sum()
    }

    /// True when no shard holds a live document.
    pub fn is_empty(&self) -> bool {
        self.shards.iter().all(Db::is_empty)
    }

    /// Whether any shard holds `key`.
    pub fn contains(&self, key: impl AsRef<[u8]>) -> Result<bool> {
        for db in &self.shards {
            if db.contains(key.as_ref())? {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// The stored signature of `key` in the last shard that holds it.
    pub fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<super::StoredSignature>> {
        for db in self.shards.iter().rev() {
            if let Some(sig) = db.get(key.as_ref())? {
                return Ok(Some(sig));
            }
        }
        Ok(None)
    }

    /// The signature of `text` as every shard signs it ([`Db::sketch_text`]).
    pub fn sketch_text(&self, text: &str) -> Result<Signature> {
        self.first().sketch_text(text)
    }

    /// [`Shards::sketch_text`] as a query needs it, without the exact hash
    /// ([`Db::sketch_query_text`]).
    pub(crate) fn sketch_query_text(&self, text: &str) -> Result<Signature> {
        self.first().sketch_query_text(text)
    }

    /// Documents similar to `text`, over all shards ([`Shards::query`]).
    pub fn query_text(&self, text: &str, opts: &QueryOptions) -> Result<QueryResult> {
        self.query(&self.sketch_query_text(text)?, opts)
    }

    /// Documents similar to `sig`, over all shards, as [`Db::query`] answers on the merged
    /// index: best first, ties by key, cut to `limit` (or the `top` K) over all shards. The
    /// diagnostics are the shards' summed.
    pub fn query(&self, sig: &Signature, opts: &QueryOptions) -> Result<QueryResult> {
        Ok(self.query_detailed(sig, opts)?.result)
    }

    /// [`Shards::query`], saying which shard each match came from and how many matches a
    /// later shard's copy of their key replaced.
    pub fn query_detailed(&self, sig: &Signature, opts: &QueryOptions) -> Result<ShardsAnswer> {
        // The number of matches the answer keeps (top-k: K, cut further by a limit).
        let keep = Bounds::ranked(opts).limit;
        let answers = (0..self.shards.len())
            .into_par_iter()
            .map(|i| self.shard_answer(i, sig, opts, keep))
            .collect::<Result<Vec<_>>>()?;
        Ok(merge_answers(answers, keep))
    }

    /// Shard `i`'s best `keep` matches (all without a limit) whose keys no later shard
    /// holds. A shard is asked for `keep` more each time some of its matches turn out to be
    /// replaced, until it has `keep` left or no more to give.
    fn shard_answer(
        &self,
        i: usize,
        sig: &Signature,
        opts: &QueryOptions,
        keep: Option<usize>,
    ) -> Result<ShardAnswer> {
        let db = &self.shards[i];
        let later = &self.shards[i + 1..];
        let mut extra = 0usize;
        loop {
            let asked = keep.map(|k| k.saturating_add(extra));
            let mut shard_opts = *opts;
            // Every shard answers at the first shard's threshold, as the merged index would
            // (a containment index's, by containment).
            if opts.top.is_none() && opts.threshold.is_none() && opts.containment.is_none() {
                let t = Some(self.params().threshold);
                match self.params().metric() {
                    Metric::Containment => shard_opts.containment = t,
                    _ => shard_opts.threshold = t,
                }
            }
            match opts.top {
                Some(_) => {
                    shard_opts.top = asked;
                    shard_opts.limit = None;
                }
                None => shard_opts.limit = asked,
            }
            // Each shard's query stops at the caller's deadline, and so do the lookups of its
            // matches' keys in the later shards.
            let r = db.query(sig, &shard_opts)?;
            check_deadline(opts.deadline, "looking up matched keys in later shards")?;
            let given = r.matches.len();
            let matches = unsuperseded(r.matches, later)?;
            let superseded = given - matches.len();
            let exhausted = asked.is_none_or(|a| given < a);
            if superseded == 0 || exhausted || keep.is_some_and(|k| matches.len() >= k) {
                return Ok(ShardAnswer {
                    shard: i,
                    matches,
                    stats: r.stats,
                    superseded,
                });
            }
            extra += superseded;
        }
    }

    /// Many queries, answered on every core.
    pub fn query_batch(&self, sigs: &[Signature], opts: &QueryOptions) -> Result<Vec<QueryResult>> {
        sigs.par_iter().map(|s| self.query(s, opts)).collect()
    }

    /// A stream of texts answered over all shards, as [`Db::query_text_stream`] answers one
    /// database: `(tag, text)` in, `(tag, result)` out, in input order, a window of queries
    /// answered on every core while the next is read (memory bounded by the window; 0 is
    /// taken as 1).
    pub fn query_text_stream<'s, I, T, S>(
        &'s self,
        queries: I,
        opts: &QueryOptions,
        window: usize,
    ) -> impl Iterator<Item = (T, Result<QueryResult>)> + 's
    where
        I: IntoIterator<Item = (T, S)>,
        I::IntoIter: Send + 's,
        T: Send + 's,
        S: AsRef<str> + Send + 's,
    {
        let texts = queries
            .into_iter()
            .map(|(tag, text)| (tag, Content::Text(text)));
        super::query_stream::document_stream(self, texts, opts, window)
    }

    /// Each shard's statistics, and their totals.
    pub fn stats(&self) -> Result<ShardsStats> {
        let mut out = ShardsStats {
            shards: Vec::with_capacity(self.shards.len()),
            live_docs: 0,
            deleted_docs: 0,
            memtable_docs: 0,
            segments: 0,
            bytes: BTreeMap::new(),
            hot_buckets: 0,
            torn_tails: 0,
        };
        for db in &self.shards {
            let s = db.stats()?;
            out.live_docs += s.live_docs;
            out.deleted_docs += s.deleted_docs;
            out.memtable_docs += s.memtable_docs;
            out.segments += s.segments;
            for (kind, bytes) in &s.bytes {
                *out.bytes.entry(kind).or_insert(0) += bytes;
            }
            out.hot_buckets += s.hot_buckets;
            out.torn_tails += s.torn_tails;
            out.shards.push((db.path().to_path_buf(), s));
        }
        Ok(out)
    }

    /// Every shard verified ([`Db::verify`]): the files checked, summed, and every problem
    /// found (each names its file).
    pub fn verify(&self) -> Result<VerifyReport> {
        let mut report = VerifyReport::default();
        for db in &self.shards {
            let r = db.verify()?;
            report.files_checked += r.files_checked;
            report.problems.extend(r.problems);
        }
        Ok(report)
    }
}

/// One shard's part of an answer.
struct ShardAnswer {
    shard: usize,
    matches: Vec<Match>,
    stats: QueryStats,
    superseded: usize,
}

/// Matches from which their keys are looked up in the later shards on every core (a lookup
/// costs about a microsecond per shard).
const PARALLEL_LOOKUPS: usize = 256;

/// The `matches` whose keys none of the `later` shards holds, in order.
fn unsuperseded(matches: Vec<Match>, later: &[Db]) -> Result<Vec<Match>> {
    if later.is_empty() {
        return Ok(matches);
    }
    let keep = |m: &Match| held_by_any(later, &m.key).map(|held| !held);
    let kept: Vec<bool> = if matches.len() >= PARALLEL_LOOKUPS {
        matches.par_iter().map(keep).collect::<Result<_>>()?
    } else {
        matches.iter().map(keep).collect::<Result<_>>()?
    };
    Ok(matches
        .into_iter()
        .zip(kept)
        .filter_map(|(m, k)| k.then_some(m))
        .collect())
}

/// Whether any of `shards` holds `key`.
fn held_by_any(shards: &[Db], key: &[u8]) -> Result<bool> {
    for db in shards {
        if db.contains(key)? {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The shards' answers as one: ranked as one database ranks (best first, ties by key; a key
/// is in one answer at most, so the order is total), cut to `keep`, diagnostics summed.
fn merge_answers(answers: Vec<ShardAnswer>, keep: Option<usize>) -> ShardsAnswer {
    let mut stats = QueryStats::default();
    let mut superseded = 0;
    let mut all: Vec<(Match, usize)> = Vec::new();
    for a in answers {
        stats.candidates += a.stats.candidates;
        stats.verified += a.stats.verified;
        stats.hot_buckets += a.stats.hot_buckets;
        stats.segments += a.stats.segments;
        stats.exact |= a.stats.exact;
        stats.reranked += a.stats.reranked;
        stats.probed += a.stats.probed;
        superseded += a.superseded;
        all.extend(a.matches.into_iter().map(|m| (m, a.shard)));
    }
    all.sort_by(|(a, _), (b, _)| {
        b.similarity
            .total_cmp(&a.similarity)
            .then_with(|| a.key.cmp(&b.key))
    });
    if let Some(k) = keep {
        all.truncate(k);
    }
    let (matches, shard_of) = all.into_iter().unzip();
    ShardsAnswer {
        result: QueryResult { matches, stats },
        shard_of,
        superseded,
    }
}

/// A shard refused for a parameter that differs from the first shard's: the error names
/// the parameter and both shards.
fn incompatible(first: &Path, other: &Path, e: Error) -> Error {
    match e {
        Error::ParameterMismatch {
            name,
            stored,
            requested,
        } => Error::invalid(
            "shards",
            format!(
                "{} cannot be queried with {}: parameter `{name}` differs ({stored} in {}, \
                 {requested} in {})",
                other.display(),
                first.display(),
                first.display(),
                other.display()
            ),
        ),
        e => e,
    }
}
