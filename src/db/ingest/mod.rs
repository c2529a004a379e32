//! Loading many documents: the records a front end reads (a key, a text, a token list or a
//! given signature, and where the record came from), signed on every core, committed in input order in batches,
//! with reading, signing and committing overlapped. `mhdb add` and Python's `insert_many` /
//! `insert` are front ends of this module: they read their input into [`Record`]s, through a
//! [`Source`], and word the [`Rejected`] records and the [`Stop`] errors their own way.
//!
//! | module | owns |
//! | --- | --- |
//! | `sign` | a record's signature, and the rules that refuse one (no shingles, wrong shape) |
//! | `pipeline` | chunks, batches, the overlap, input order, the two commit [`Mode`]s |

mod pipeline;
mod sign;

use std::fmt;

use crate::Error;
use crate::sketch::{OwnedToken, Signature};
use crate::storage::segment::KeepValue;

pub use pipeline::{
    Acknowledge, Counts, Ingest, Mode, OnDuplicate, Sink, Source, Stop, commit_batch,
    commit_batch_if_novel,
};

/// A batch of at least this many documents is committed as a bulk insert (written straight to
/// a new segment and the signature log, with no WAL record to encode, write and replay and no
/// in-memory table to build); below it, by the [`Mode::Atomic`] mode, the WAL is cheaper than
/// a segment per commit.
pub const BULK_MIN: usize = 1024;

/// Records read, parsed and signed at a time by [`Mode::Stream`].
pub const STREAM_CHUNK: usize = 4096;

/// One document to store.
#[derive(Debug)]
pub struct Record<T, O> {
    /// Its key.
    pub key: Vec<u8>,
    /// Its text, token list or signature.
    pub content: Content<T>,
    /// Its keep value (the field `add --keep-field` captures), for an index with the KEEP
    /// column; `None` for a record without one.
    pub keep: Option<KeepValue>,
    /// Where it came from (a line of a file, a position in a sequence), for errors.
    pub origin: O,
}

/// What a document is given as.
#[derive(Clone, Debug)]
pub enum Content<T> {
    /// A text, signed with the database's parameters.
    Text(T),
    /// A token list, signed with the database's parameters (an index of token lists).
    Tokens(Vec<OwnedToken>),
    /// A signature made elsewhere, stored as given after its shape is checked.
    Signature(Signature),
}

impl<T: AsRef<str>> Content<T> {
    /// The content with its text borrowed (a token list or signature is copied).
    pub fn borrowed(&self) -> Content<&str> {
        match self {
            Content::Text(t) => Content::Text(t.as_ref()),
            Content::Tokens(tokens) => Content::Tokens(tokens.clone()),
            Content::Signature(s) => Content::Signature(s.clone()),
        }
    }
}

/// Why a record is not stored.
#[derive(Debug)]
pub enum Fault {
    /// The front end could not read it; the message names the place.
    Malformed(String),
    /// Its text has no shingles ([`IndexParams::has_no_shingles`](super::IndexParams::has_no_shingles)):
    /// it would be similar to nothing, so no query could ever find it.
    NoShingles,
    /// Its token list has no tokens: like a text without shingles, similar to nothing.
    NoTokens,
    /// Its given signature has the wrong shape ([`Db::check_signature`](super::Db::check_signature)).
    Signature(Error),
    /// Its key is already stored ([`OnDuplicate::Error`]).
    Duplicate,
    /// Its keep value cannot go into the index's KEEP column (a NaN, a value of another
    /// type, a string too long); the message names the field.
    Keep(String),
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Fault::Malformed(message) => f.write_str(message),
            Fault::NoShingles => f.write_str(
                "the text has no shingles (it is empty or white space only); such a text is \
                 similar to nothing, so it is not stored",
            ),
            Fault::NoTokens => f.write_str(
                "the token list is empty; such a document is similar to nothing, so it is not \
                 stored",
            ),
            Fault::Signature(e) => e.fmt(f),
            Fault::Duplicate => f.write_str("the key is already stored"),
            Fault::Keep(message) => f.write_str(message),
        }
    }
}

/// A record refused, with where it came from.
#[derive(Debug)]
pub struct Rejected<O> {
    /// Where it came from.
    pub origin: O,
    /// Its key, when it was read.
    pub key: Option<Vec<u8>>,
    /// Why it is refused.
    pub fault: Fault,
}
