//! Streaming batch queries: [`Db::query_stream`] and [`Db::query_text_stream`] answer a
//! stream of queries on every core, a window at a time, yielding the answers in input order in
//! memory bounded by the window (not by the length of the stream). The same stream answers
//! over any [`ReadIndex`] (shards too), texts, token lists and signatures mixed:
//! [`document_stream`].

use rayon::prelude::*;

use super::Db;
use super::ingest::Content;
use super::query::{QueryOptions, QueryResult};
use super::read_index::ReadIndex;
use crate::Result;
use crate::sketch::{OwnedToken, Signature};

impl Db {
    /// Answers a stream of signatures on every core, yielding the answers in input order as
    /// they are ready, in memory bounded by `window` (not by the length of the stream).
    ///
    /// Each item is `(tag, signature)`; the tag is yours (a line number, an id, `()`) and comes
    /// back untouched with the answer: `(tag, result)`. The stream works a window at a time:
    /// it reads up to `window` queries, then answers them in parallel while it reads the next
    /// `window` from `queries`, then yields the answers in order. So at most `2 × window`
    /// queries and `window` answers are held at once, reading overlaps answering, and the
    /// first answer comes out once the first window is full (or `queries` ends). A window of
    /// a few thousand keeps every core busy; 0 is taken as 1.
    ///
    /// `queries` is pulled on a worker thread (hence `Send`), never further than one window
    /// ahead of the answers taken. A failed query yields its error in its place and the stream
    /// goes on.
    ///
    /// ```no_run
    /// # fn main() -> mhdb::Result<()> {
    /// use mhdb::db::{Db, QueryOptions};
    /// let db = Db::open_read_only("idx")?;
    /// let hasher = db.hasher()?;
    /// let sigs = ["first text", "second text"].map(|t| hasher.sketch_text(t));
    /// for (i, result) in db.query_stream(sigs.into_iter().enumerate(), &QueryOptions::default(), 1024) {
    ///     println!("query {i}: {} matches", result?.matches.len());
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn query_stream<I, T>(
        &self,
        queries: I,
        opts: &QueryOptions,
        window: usize,
    ) -> impl Iterator<Item = (T, Result<QueryResult>)>
    where
        I: IntoIterator<Item = (T, Signature)>,
        I::IntoIter: Send,
        T: Send,
    {
        QueryStream::new(self, queries.into_iter(), opts, window, |db, sig, opts| {
            db.query(&sig, opts)
        })
    }

    /// [`Db::query_stream`] for texts: each text is signed with this database's parameters on
    /// the worker that answers it, so signing runs on every core too.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use mhdb::db::{Db, QueryOptions};
    /// let db = Db::open_read_only("idx")?;
    /// use std::io::BufRead;
    /// // One query per line. (The input is pulled on a worker thread, so it must be `Send`:
    /// // read standard input as `BufReader::new(std::io::stdin())`, not through a `StdinLock`.)
    /// let file = std::io::BufReader::new(std::fs::File::open("queries.txt")?);
    /// let texts = file.lines().map_while(std::io::Result::ok);
    /// for (line, result) in db.query_text_stream(texts.enumerate(), &QueryOptions::default(), 4096) {
    ///     println!("line {}: {} matches", line + 1, result?.matches.len());
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn query_text_stream<I, T, S>(
        &self,
        queries: I,
        opts: &QueryOptions,
        window: usize,
    ) -> impl Iterator<Item = (T, Result<QueryResult>)>
    where
        I: IntoIterator<Item = (T, S)>,
        I::IntoIter: Send,
        T: Send,
        S: AsRef<str> + Send,
    {
        QueryStream::new(self, queries.into_iter(), opts, window, |db, text, opts| {
            db.query_text(text.as_ref(), opts)
        })
    }
}

/// A stream of documents of any kind answered by `index`: a text or a token list signed as
/// the index signs it, on the worker that answers it; a signature as given. A document of a
/// kind the index does not take (a token list in an index of texts, or the reverse) is that
/// query's error, and the stream goes on.
pub(super) fn document_stream<'s, R, I, T, S>(
    index: &'s R,
    queries: I,
    opts: &QueryOptions,
    window: usize,
) -> impl Iterator<Item = (T, Result<QueryResult>)> + 's
where
    R: ReadIndex + ?Sized,
    I: Iterator<Item = (T, Content<S>)> + Send + 's,
    T: Send + 's,
    S: AsRef<str> + Send + 's,
{
    QueryStream::new(index, queries, opts, window, query_document)
}

/// Documents similar to one document of any kind ([`document_stream`]).
pub(crate) fn query_document<R, S>(
    index: &R,
    doc: Content<S>,
    opts: &QueryOptions,
) -> Result<QueryResult>
where
    R: ReadIndex + ?Sized,
    S: AsRef<str>,
{
    match doc {
        Content::Text(text) => index.query_text(text.as_ref(), opts),
        // Shards sign alike (opening them checks it): the first signs for all.
        Content::Tokens(tokens) => {
            let sig = index.dbs()[0].sketch_tokens(&OwnedToken::borrow_all(&tokens))?;
            index.query(&sig, opts)
        }
        Content::Signature(sig) => index.query(&sig, opts),
    }
}

/// How a [`QueryStream`] over `R` answers one query of type `Q`.
type Answer<R, Q> = fn(&R, Q, &QueryOptions) -> Result<QueryResult>;

/// [`Db::query_stream`] and [`Db::query_text_stream`]: queries are read a window at a time;
/// a window is answered on every core while the next one is read, and its answers are then
/// yielded in order.
struct QueryStream<'db, R: ?Sized, I, T, Q> {
    db: &'db R,
    opts: QueryOptions,
    window: usize,
    input: I,
    /// `input` has ended.
    exhausted: bool,
    /// Read, not yet answered: the next window.
    pending: Vec<(T, Q)>,
    /// Answered, not yet yielded.
    ready: std::vec::IntoIter<(T, Result<QueryResult>)>,
    answer: Answer<R, Q>,
}

impl<'db, R, I, T, Q> QueryStream<'db, R, I, T, Q>
where
    R: Sync + ?Sized,
    I: Iterator<Item = (T, Q)> + Send,
    T: Send,
    Q: Send,
{
    fn new(db: &'db R, input: I, opts: &QueryOptions, window: usize, answer: Answer<R, Q>) -> Self {
        QueryStream {
            db,
            opts: *opts,
            window: window.max(1),
            input,
            exhausted: false,
            pending: Vec::new(),
            ready: Vec::new().into_iter(),
            answer,
        }
    }
}

/// Up to `window` more items of `input`; sets `exhausted` when it ends.
fn read_window<I: Iterator>(input: &mut I, window: usize, exhausted: &mut bool) -> Vec<I::Item> {
    let mut out = Vec::with_capacity(window);
    while out.len() < window {
        match input.next() {
            Some(item) => out.push(item),
            None => {
                *exhausted = true;
                break;
            }
        }
    }
    out
}

impl<R, I, T, Q> Iterator for QueryStream<'_, R, I, T, Q>
where
    R: Sync + ?Sized,
    I: Iterator<Item = (T, Q)> + Send,
    T: Send,
    Q: Send,
{
    type Item = (T, Result<QueryResult>);

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(answer) = self.ready.next() {
                return Some(answer);
            }
            if self.pending.is_empty() {
                if self.exhausted {
                    return None;
                }
                self.pending = read_window(&mut self.input, self.window, &mut self.exhausted);
                if self.pending.is_empty() {
                    return None;
                }
            }
            let batch = std::mem::take(&mut self.pending);
            let (db, opts, answer, window) = (self.db, &self.opts, self.answer, self.window);
            let (input, exhausted) = (&mut self.input, &mut self.exhausted);
            let (answers, next) = rayon::join(
                || {
                    batch
                        .into_par_iter()
                        .map(|(tag, q)| (tag, answer(db, q, opts)))
                        .collect::<Vec<_>>()
                },
                || {
                    if *exhausted {
                        Vec::new()
                    } else {
                        read_window(input, window, exhausted)
                    }
                },
            );
            self.ready = answers.into_iter();
            self.pending = next;
        }
    }
}
