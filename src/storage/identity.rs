//! What ties a file to its database in format version 3: the database's 16-byte identity
//! (`db_id`) and the file's own number (`file_id`, the `<id>` of its name), both written in the
//! header of every segment, deletion list and WAL file and checked against the manifest and the
//! name on open (`format/v3-design.md`, "Database identity"). Drawing a new identity is the
//! database layer's; storage only carries and compares it.

use std::fmt;
use std::path::Path;

use crate::{Error, Result};

/// A database's identity. All-zero means "none" (versions 1 and 2 have no identity).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct DbId(pub [u8; 16]);

impl DbId {
    /// The absent identity of a version-1 or version-2 database.
    pub const NONE: DbId = DbId([0; 16]);

    /// Whether this is the absent identity.
    pub fn is_none(&self) -> bool {
        self.0 == [0; 16]
    }

    /// The identity a file numbered `file_id` of this database carries: `None` for the
    /// absent identity (a database of version 1 or 2, whose files carry none).
    pub fn file(self, file_id: u64) -> Option<FileIdentity> {
        (!self.is_none()).then_some(FileIdentity {
            db_id: self,
            file_id,
        })
    }

    /// Parses 32 hex digits (either case) in byte order.
    pub fn from_hex(text: &str) -> Option<DbId> {
        let digits = text.as_bytes();
        if digits.len() != 32 || !digits.iter().all(u8::is_ascii_hexdigit) {
            return None;
        }
        let mut bytes = [0u8; 16];
        for (byte, pair) in bytes.iter_mut().zip(digits.chunks_exact(2)) {
            let pair = std::str::from_utf8(pair).ok()?;
            *byte = u8::from_str_radix(pair, 16).ok()?;
        }
        Some(DbId(bytes))
    }
}

/// 32 lowercase hex digits in byte order.
impl fmt::Display for DbId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.iter().try_for_each(|b| write!(f, "{b:02x}"))
    }
}

impl fmt::Debug for DbId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DbId({self})")
    }
}

/// The identity a file of a version-3 database must carry: its database's and its own number.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct FileIdentity {
    /// The database the file belongs to.
    pub db_id: DbId,
    /// The `<id>` of the file's name.
    pub file_id: u64,
}

/// Where a file kind keeps the fields an identity check names in its errors.
#[derive(Clone, Copy, Debug)]
pub(crate) struct IdentityOffsets {
    /// The format version field: what a file of the wrong generation (with an identity where
    /// none is expected, or without one where one is) gets wrong.
    pub(crate) version: u64,
    /// The `db_id` field.
    pub(crate) db_id: u64,
    /// The `file_id` field.
    pub(crate) file_id: u64,
}

/// Checks the identity a file carries (`found`: `None` for a file of a version without one)
/// against the one its reader expects (`None` for a database of version 1 or 2): any
/// difference is corruption at the field that differs, `what` naming the kind of file.
pub(crate) fn check_file_identity(
    path: &Path,
    what: &str,
    found: Option<FileIdentity>,
    expected: Option<FileIdentity>,
    at: IdentityOffsets,
) -> Result<()> {
    let (found, expected) = match (found, expected) {
        (None, None) => return Ok(()),
        (Some(f), None) => {
            return Err(Error::corruption(
                path,
                at.version,
                format!(
                    "a {what} of format version 3 (of database {}) in a database of an older \
                     version, whose files carry no identity",
                    f.db_id
                ),
            ));
        }
        (None, Some(e)) => {
            return Err(Error::corruption(
                path,
                at.version,
                format!(
                    "a {what} of an older format version, without an identity, in database {} \
                     (of version 3)",
                    e.db_id
                ),
            ));
        }
        (Some(f), Some(e)) => (f, e),
    };
    if found.db_id != expected.db_id {
        return Err(Error::corruption(
            path,
            at.db_id,
            format!(
                "belongs to database {}, not to this database ({})",
                found.db_id, expected.db_id
            ),
        ));
    }
    if found.file_id != expected.file_id {
        return Err(Error::corruption(
            path,
            at.file_id,
            format!(
                "carries file number {:016x}, not {:016x} (its name's)",
                found.file_id, expected.file_id
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trip_and_refusals() {
        let id = DbId(std::array::from_fn(|i| i as u8));
        assert_eq!(id.to_string(), "000102030405060708090a0b0c0d0e0f");
        assert_eq!(DbId::from_hex(&id.to_string()), Some(id));
        assert_eq!(DbId::from_hex("000102030405060708090A0B0C0D0E0F"), Some(id));
        assert_eq!(DbId::from_hex("00"), None);
        assert_eq!(DbId::from_hex("zz0102030405060708090a0b0c0d0e0f"), None);
        assert_eq!(DbId::from_hex("+00102030405060708090a0b0c0d0e0f"), None);
        assert!(DbId::NONE.is_none() && !id.is_none());
    }
}
