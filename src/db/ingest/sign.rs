//! A record's signature: a text or a token list signed with the database's parameters
//! (MinHash, MinHash with its shingle set, or a SimHash fingerprint), a given signature
//! checked for shape.

use rayon::prelude::*;

use super::{Content, Fault, Record, Rejected};
use crate::Error;
use crate::db::Db;
use crate::db::kind::DocumentSigner;
use crate::sketch::OwnedToken;
use crate::sketch::Signature;
use crate::storage::segment::{KeepColumn, KeepValue};

/// A record's signature, or why it has none.
pub(super) enum Signing {
    Signed(Signature),
    /// The record is refused (a rejection the caller may skip).
    Refused(Fault),
    /// The database cannot sign texts (or token lists) at all (a foreign scheme, a keyed index
    /// opened without its key, an index of the other kind of document): no record is to
    /// blame, and nothing can be skipped past it.
    Failed(Error),
}

/// A record handed back with its signature: the record's text is dropped by the caller, on
/// its own thread (a binding may need its interpreter's lock for that).
pub(super) struct Prepared<T, O> {
    pub record: Record<T, O>,
    pub signing: Signing,
}

/// An item made a record and signed, or refused by the front end's parser.
pub(super) type Outcome<T, O> = std::result::Result<Prepared<T, O>, Rejected<O>>;

/// Signs records for one database. A database that cannot sign text (or token lists) is
/// only an error when a text (a token list) comes: signatures given by the caller need no
/// signer.
pub(super) struct Signer<'a> {
    db: &'a Db,
    keep: Option<KeepColumn>,
    hasher: Option<DocumentSigner<'a>>,
    token_hasher: Option<DocumentSigner<'a>>,
}

impl<'a> Signer<'a> {
    pub fn of(db: &'a Db) -> Self {
        Signer {
            db,
            keep: db.keep_column(),
            hasher: db.text_signer().ok(),
            token_hasher: db.token_signer().ok(),
        }
    }

    /// The signature of `record`, with its keep value attached: a text without shingles, a
    /// given signature of the wrong shape and a keep value the index's KEEP column cannot
    /// hold are refused.
    pub fn sign<T: AsRef<str>, O>(&self, record: &Record<T, O>) -> Signing {
        match (self.sign_content(record), &record.keep) {
            (Signing::Signed(sig), Some(value)) => match self.keep_value(value) {
                Ok(value) => Signing::Signed(sig.with_keep_value(value)),
                Err(e) => e,
            },
            (signing, _) => signing,
        }
    }

    /// `value` as the index's KEEP column holds it ([`KeepValue::into_type`]); an index
    /// without the column fails, as no record is to blame.
    fn keep_value(&self, value: &KeepValue) -> Result<KeepValue, Signing> {
        let Some(column) = &self.keep else {
            return Err(Signing::Failed(Error::invalid(
                "keep value",
                "this index has no keep field: add --keep-field fixes one on an index without \
                 segments",
            )));
        };
        value.clone().into_type(column.keep_type).map_err(|why| {
            Signing::Refused(Fault::Keep(format!("field {:?}: {why}", column.field)))
        })
    }

    fn sign_content<T: AsRef<str>, O>(&self, record: &Record<T, O>) -> Signing {
        match &record.content {
            Content::Text(text) => {
                // Without a signer, asking again gives the reason.
                let hasher = match self.hasher.map_or_else(|| self.db.text_signer(), Ok) {
                    Ok(h) => h,
                    Err(e) => return Signing::Failed(e),
                };
                let sig = match hasher.sign(text.as_ref()) {
                    Ok(sig) => sig,
                    Err(e) => return Signing::Refused(Fault::Malformed(e.to_string())),
                };
                if self.db.params().has_no_shingles(&sig) {
                    Signing::Refused(Fault::NoShingles)
                } else {
                    Signing::Signed(sig)
                }
            }
            Content::Tokens(tokens) => self.sign_tokens(tokens),
            Content::Signature(sig) => match self.db.check_signature(sig) {
                Ok(()) => Signing::Signed(sig.clone()),
                Err(e) => Signing::Refused(Fault::Signature(e)),
            },
        }
    }

    /// The signature of a token list: an empty list is refused, as a text without shingles.
    fn sign_tokens(&self, tokens: &[OwnedToken]) -> Signing {
        let hasher = match self.token_hasher.map_or_else(|| self.db.token_signer(), Ok) {
            Ok(h) => h,
            Err(e) => return Signing::Failed(e),
        };
        if tokens.is_empty() {
            return Signing::Refused(Fault::NoTokens);
        }
        match hasher.sign_tokens(&OwnedToken::borrow_all(tokens)) {
            Ok(sig) => Signing::Signed(sig),
            Err(e) => Signing::Refused(Fault::Malformed(e.to_string())),
        }
    }

    /// Turns each item into a record with `parse` and signs it, on every core (a single item
    /// on this thread: handing it to the pool would cost more than it saves). The order is the
    /// items'.
    pub fn prepare<I, T, O, P>(&self, items: Vec<I>, parse: &P) -> Vec<Outcome<T, O>>
    where
        I: Send,
        T: AsRef<str> + Send,
        O: Send,
        P: Fn(I) -> std::result::Result<Record<T, O>, Rejected<O>> + Sync,
    {
        let one = |item: I| -> Outcome<T, O> {
            let record = parse(item)?;
            let signing = self.sign(&record);
            Ok(Prepared { record, signing })
        };
        if items.len() > 1 {
            items.into_par_iter().map(one).collect()
        } else {
            items.into_iter().map(one).collect()
        }
    }
}
