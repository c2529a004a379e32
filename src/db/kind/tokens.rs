//! Indexes of token lists (shingle kind `tokens:N`, `format/hashing.md` §15): documents given
//! as lists of string and integer tokens instead of texts. An index takes one or the other,
//! never both: a text's shingles and a token list's are different sets, so mixing them would
//! make every answer across the two meaningless.

use super::DocumentSigner;
use crate::db::{Db, QueryOptions, QueryResult};
use crate::sketch::{Signature, Token};
use crate::{Error, Result};

impl Db {
    /// Whether this index's documents are token lists (shingle kind `tokens:N`).
    pub fn takes_tokens(&self) -> bool {
        self.params.sketch.shingle.kind.is_tokens()
    }

    /// Errors unless this index takes documents of the kind asked for: token lists
    /// (`tokens`) or texts.
    pub(in crate::db) fn check_document_kind(&self, tokens: bool) -> Result<()> {
        if tokens == self.takes_tokens() {
            return Ok(());
        }
        let shingle = self.params.sketch.shingle.kind;
        let (stored, requested) = if tokens {
            (
                format!("{shingle} shingles of texts ({})", self.dir.display()),
                "a token list (token lists need an index created with shingle `tokens` or \
                 `tokens:N`)",
            )
        } else {
            (
                format!(
                    "{shingle}: an index of token lists ({})",
                    self.dir.display()
                ),
                "a text (give its documents as token lists: `insert_tokens`, `query_tokens`, \
                 `mhdb add --tokens-field`, `mhdb query --tokens-json`)",
            )
        };
        Err(Error::ParameterMismatch {
            name: "shingle",
            stored,
            requested: requested.into(),
        })
    }

    /// How this index signs token lists; the error says why it cannot (an index of texts
    /// among the reasons).
    pub(in crate::db) fn token_signer(&self) -> Result<DocumentSigner<'_>> {
        self.check_document_kind(true)?;
        self.document_signer()
    }

    /// The signature of a token list with this database's parameters (what
    /// [`Db::insert_tokens`] and [`Db::query_tokens`] compute): `MinHasher::sketch_tokens` at
    /// the index's width, with its shingle set attached in an index that stores sets. An
    /// error for an index of texts.
    pub fn sketch_tokens(&self, tokens: &[Token<'_>]) -> Result<Signature> {
        self.token_signer()?.sign_tokens(tokens)
    }

    /// Inserts (or replaces) one document given as a token list.
    pub fn insert_tokens(&self, key: impl AsRef<[u8]>, tokens: &[Token<'_>]) -> Result<()> {
        self.insert(key, &self.sketch_tokens(tokens)?)
    }

    /// Documents similar to a token list.
    pub fn query_tokens(&self, tokens: &[Token<'_>], opts: &QueryOptions) -> Result<QueryResult> {
        self.query(&self.sketch_tokens(tokens)?, opts)
    }
}
