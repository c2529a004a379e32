//! Reading an index, whatever stands behind it ([`ReadIndex`]): one database ([`Db`]) or
//! read-only shards answering as one index ([`Shards`]). Front ends (the command-line tool,
//! `mhdb serve`, the Python binding) read through this trait, so the choice between the two
//! is made once, when the index is opened, and never again per call.

use super::ingest::Content;
use super::{
    Db, DedupOptions, DedupPair, DedupStats, IndexParams, QueryOptions, QueryResult, Shards,
    ShardsStats, Stats, StoredSignature, VerifyReport,
};
use crate::Result;
use crate::sketch::Signature;

/// An index that answers queries, key lookups, statistics, verification and dedup passes.
/// Implemented by [`Db`] (any handle; only reads are used) and [`Shards`]; every method
/// answers as the inherent method of the same name does. Object safe: a front end holds a
/// `Box<dyn ReadIndex>` or `Arc<dyn ReadIndex>`, and many threads may call it at once.
pub trait ReadIndex: Send + Sync {
    /// The parameters queries are answered with (the first shard's over shards).
    fn params(&self) -> &IndexParams;

    /// The databases read, in order: one for a database, the shards for shards (never
    /// empty). What a front end needs per database (its path, recovery reports, following a
    /// writer with [`Db::refresh`]) is found here.
    fn dbs(&self) -> &[Db];

    /// The signature of `text` as the index signs it (refused by a keyed index opened
    /// without its key).
    fn sketch_text(&self, text: &str) -> Result<Signature>;

    /// The signature of `text` as a query needs it: [`ReadIndex::sketch_text`]'s without the
    /// exact hash, which only a stored document keeps.
    fn sketch_query_text(&self, text: &str) -> Result<Signature>;

    /// Documents similar to `sig`, best first (ties by key); with `opts.top`, the top K.
    fn query(&self, sig: &Signature, opts: &QueryOptions) -> Result<QueryResult>;

    /// Documents similar to `text` (signed as [`ReadIndex::sketch_text`] signs it).
    fn query_text(&self, text: &str, opts: &QueryOptions) -> Result<QueryResult>;

    /// Whether the index holds `key`.
    fn contains(&self, key: &[u8]) -> Result<bool>;

    /// The stored signature of `key` (over shards: the last shard's that holds it).
    fn get(&self, key: &[u8]) -> Result<Option<StoredSignature>>;

    /// Live documents. Over shards, the shards' counts summed: a key stored in two shards
    /// counts in both (see [`Shards::len`]).
    fn len(&self) -> u64;

    /// True when the index holds no live document.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Counts, sizes and distributions: one database's, or each shard's and their totals.
    fn stats(&self) -> Result<IndexStats>;

    /// Every checksum and cross-file invariant checked (every shard's, over shards).
    fn verify(&self) -> Result<VerifyReport>;

    /// Every near-duplicate pair at `threshold`, as [`Db::dedup_pairs_with_options`] finds
    /// them (over shards: [`Shards::dedup_pairs_with_options`]).
    fn dedup_pairs_with_options(
        &self,
        threshold: f64,
        opts: DedupOptions,
        emit: &mut dyn FnMut(DedupPair) -> Result<()>,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<DedupStats>;

    /// Star clusters at `threshold`, center first, streamed to `emit`, as
    /// [`Db::for_each_dedup_cluster_with_options`] builds them.
    fn for_each_dedup_cluster_with_options(
        &self,
        threshold: f64,
        opts: DedupOptions,
        emit: &mut dyn FnMut(Vec<Vec<u8>>) -> Result<()>,
    ) -> Result<DedupStats>;

    /// Moves every read-only database to its newest committed state ([`Db::refresh`]).
    fn refresh(&self) -> Result<()> {
        self.dbs().iter().try_for_each(Db::refresh)
    }
}

/// [`ReadIndex::stats`]: the statistics of one database, or of shards.
#[derive(Clone, Debug, PartialEq)]
pub enum IndexStats {
    /// One database's.
    One(Box<Stats>),
    /// Each shard's, and their totals.
    Shards(ShardsStats),
}

impl IndexStats {
    /// Live documents (over shards, the shards' counts summed).
    pub fn live_docs(&self) -> u64 {
        match self {
            IndexStats::One(s) => s.live_docs,
            IndexStats::Shards(s) => s.live_docs,
        }
    }
}

impl ReadIndex for Db {
    fn params(&self) -> &IndexParams {
        Db::params(self)
    }

    fn dbs(&self) -> &[Db] {
        std::slice::from_ref(self)
    }

    fn sketch_text(&self, text: &str) -> Result<Signature> {
        Db::sketch_text(self, text)
    }

    fn sketch_query_text(&self, text: &str) -> Result<Signature> {
        Db::sketch_query_text(self, text)
    }

    fn query(&self, sig: &Signature, opts: &QueryOptions) -> Result<QueryResult> {
        Db::query(self, sig, opts)
    }

    fn query_text(&self, text: &str, opts: &QueryOptions) -> Result<QueryResult> {
        Db::query_text(self, text, opts)
    }

    fn contains(&self, key: &[u8]) -> Result<bool> {
        Db::contains(self, key)
    }

    fn get(&self, key: &[u8]) -> Result<Option<StoredSignature>> {
        Db::get(self, key)
    }

    fn len(&self) -> u64 {
        Db::len(self)
    }

    fn stats(&self) -> Result<IndexStats> {
        Ok(IndexStats::One(Box::new(Db::stats(self)?)))
    }

    fn verify(&self) -> Result<VerifyReport> {
        Db::verify(self)
    }

    fn dedup_pairs_with_options(
        &self,
        threshold: f64,
        opts: DedupOptions,
        emit: &mut dyn FnMut(DedupPair) -> Result<()>,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<DedupStats> {
        Db::dedup_pairs_with_options(self, threshold, opts, emit, progress)
    }

    fn for_each_dedup_cluster_with_options(
        &self,
        threshold: f64,
        opts: DedupOptions,
        emit: &mut dyn FnMut(Vec<Vec<u8>>) -> Result<()>,
    ) -> Result<DedupStats> {
        Db::for_each_dedup_cluster_with_options(self, threshold, opts, emit)
    }
}

impl ReadIndex for Shards {
    fn params(&self) -> &IndexParams {
        Shards::params(self)
    }

    fn dbs(&self) -> &[Db] {
        self.shards()
    }

    fn sketch_text(&self, text: &str) -> Result<Signature> {
        Shards::sketch_text(self, text)
    }

    fn sketch_query_text(&self, text: &str) -> Result<Signature> {
        Shards::sketch_query_text(self, text)
    }

    fn query(&self, sig: &Signature, opts: &QueryOptions) -> Result<QueryResult> {
        Shards::query(self, sig, opts)
    }

    fn query_text(&self, text: &str, opts: &QueryOptions) -> Result<QueryResult> {
        Shards::query_text(self, text, opts)
    }

    fn contains(&self, key: &[u8]) -> Result<bool> {
        Shards::contains(self, key)
    }

    fn get(&self, key: &[u8]) -> Result<Option<StoredSignature>> {
        Shards::get(self, key)
    }

    fn len(&self) -> u64 {
        Shards::len(self)
    }

    fn stats(&self) -> Result<IndexStats> {
        Ok(IndexStats::Shards(Shards::stats(self)?))
    }

    fn verify(&self) -> Result<VerifyReport> {
        Shards::verify(self)
    }

    fn dedup_pairs_with_options(
        &self,
        threshold: f64,
        opts: DedupOptions,
        emit: &mut dyn FnMut(DedupPair) -> Result<()>,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<DedupStats> {
        Shards::dedup_pairs_with_options(self, threshold, opts, emit, progress)
    }

    fn for_each_dedup_cluster_with_options(
        &self,
        threshold: f64,
        opts: DedupOptions,
        emit: &mut dyn FnMut(Vec<Vec<u8>>) -> Result<()>,
    ) -> Result<DedupStats> {
        Shards::for_each_dedup_cluster_with_options(self, threshold, opts, emit)
    }
}

impl<'i> dyn ReadIndex + 'i {
    /// A stream of texts answered on every core, as [`Db::query_text_stream`] answers them:
    /// `(tag, text)` in, `(tag, result)` out, in input order, in memory bounded by `window`.
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

    /// A stream of documents of any kind, texts, token lists or signatures, answered as
    /// [`Db::query_text_stream`] answers texts: a document the index does not take (a
    /// token list in an index of texts, or the reverse) is that query's error.
    pub fn query_document_stream<'s, T: Send + 's, S: AsRef<str> + Send + 's>(
        &'s self,
        queries: impl IntoIterator<Item = (T, Content<S>), IntoIter: Send + 's>,
        opts: &QueryOptions,
        window: usize,
    ) -> impl Iterator<Item = (T, Result<QueryResult>)> + 's {
        super::query_stream::document_stream(self, queries.into_iter(), opts, window)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::{IndexOptions, Options};

    fn db_of(dir: &std::path::Path, name: &str, docs: &[(&str, &str)]) -> std::path::PathBuf {
        let params = IndexOptions::default().build().unwrap();
        let path = dir.join(name);
        let db = Db::create(&path, params, Options::default()).unwrap();
        for (key, text) in docs {
            db.insert_text(key, text).unwrap();
        }
        path
    }

    #[test]
    fn one_database_and_shards_answer_through_the_trait_as_their_own_methods() {
        let dir = tempfile::tempdir().unwrap();
        let text = "the quick brown fox jumps over the lazy dog again and again";
        let a = db_of(
            dir.path(),
            "a",
            &[("x", text), ("y", "nothing alike at all here")],
        );
        let b = db_of(
            dir.path(),
            "b",
            &[("x", "another text entirely, nothing alike")],
        );
        let one: Box<dyn ReadIndex> = Box::new(Db::open_read_only(&a).unwrap());
        let many: Box<dyn ReadIndex> = Box::new(Shards::open_many([&a, &b]).unwrap());
        let opts = QueryOptions::default();
        let keys = |r: QueryResult| r.matches.into_iter().map(|m| m.key).collect::<Vec<_>>();
        assert_eq!(
            keys(one.query_text(text, &opts).unwrap()),
            vec![b"x".to_vec()]
        );
        // Shard b's "x" replaces shard a's, and is not like the text.
        assert!(keys(many.query_text(text, &opts).unwrap()).is_empty());
        assert_eq!((one.len(), many.len()), (2, 3));
        assert_eq!(many.dbs().len(), 2);
        assert!(matches!(one.stats().unwrap(), IndexStats::One(s) if s.live_docs == 2));
        assert_eq!(many.stats().unwrap().live_docs(), 3);
        let streamed: Vec<_> = many
            .query_text_stream([(7, text)], &opts, 4)
            .map(|(tag, r)| (tag, keys(r.unwrap())))
            .collect();
        assert_eq!(streamed, vec![(7, Vec::new())]);
        let got = one.get(b"x").unwrap().unwrap();
        assert_eq!(
            many.get(b"x").unwrap(),
            Db::open_read_only(&b).unwrap().get("x").unwrap()
        );
        assert_ne!(Some(got), many.get(b"x").unwrap());
    }

    /// A query's signature has the stored document's slots and no exact hash, over one
    /// database and over shards.
    #[test]
    fn a_query_is_signed_without_the_exact_hash() {
        let tmp = tempfile::tempdir().unwrap();
        let text = "the quick brown fox jumps over the lazy dog";
        let dir = db_of(tmp.path(), "a", &[]);
        let db = Db::open_read_only(&dir).unwrap();
        let stored = db.sketch_text(text).unwrap();
        assert!(stored.exact_hash().is_some());
        let shards = Shards::from_dbs(vec![Db::open_read_only(&dir).unwrap()]).unwrap();
        for index in [&db as &dyn ReadIndex, &shards] {
            let query = index.sketch_query_text(text).unwrap();
            assert_eq!(query.exact_hash(), None);
            assert_eq!(query.slots(), stored.slots());
        }
    }
}
