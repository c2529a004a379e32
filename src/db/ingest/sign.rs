//! A record's signature: a text signed with the database's parameters (MinHash, MinHash with
//! its shingle set, or a SimHash fingerprint), a given signature checked for shape.

use rayon::prelude::*;

use super::{Content, Fault, Record, Rejected};
use crate::Error;
use crate::db::Db;
use crate::db::kind::TextSigner;
use crate::sketch::Signature;

/// A record's signature, or why it has none.
pub(super) enum Signing {
    Signed(Signature),
    /// The record is refused (a rejection the caller may skip).
    Refused(Fault),
    /// The database cannot sign texts at all (a foreign scheme, a keyed index opened without
    /// its key): no record is to blame, and nothing can be skipped past it.
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

/// Signs records for one database. A database that cannot sign text is only an error when a
/// text comes: signatures given by the caller need no signer.
pub(super) struct Signer<'a> {
    db: &'a Db,
    hasher: Option<TextSigner<'a>>,
}

impl<'a> Signer<'a> {
    pub fn of(db: &'a Db) -> Self {
        Signer {
            db,
            hasher: db.text_signer().ok(),
        }
    }

    /// The signature of `record`: a text without shingles and a given signature of the wrong
    /// shape are refused.
    pub fn sign<T: AsRef<str>, O>(&self, record: &Record<T, O>) -> Signing {
        match &record.content {
            Content::Text(text) => {
                // Without a signer, asking again gives the reason.
                let hasher = match self.hasher.map_or_else(|| self.db.text_signer(), Ok) {
                    Ok(h) => h,
                    Err(e) => return Signing::Failed(e),
                };
                let sig = hasher.sign(text.as_ref());
                if self.db.params().has_no_shingles(&sig) {
                    Signing::Refused(Fault::NoShingles)
                } else {
                    Signing::Signed(sig)
                }
            }
            Content::Signature(sig) => match self.db.check_signature(sig) {
                Ok(()) => Signing::Signed(sig.clone()),
                Err(e) => Signing::Refused(Fault::Signature(e)),
            },
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
