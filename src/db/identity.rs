//! Where a new database's identity comes from (`format/v3-design.md`, "Database identity").
//! Every operation that makes a database (create, and the destination of export, merge and
//! upgrade) draws through [`identity_for_new_database`], so an identity given for a test or a
//! fixture reaches all of them the same way.

use crate::storage::identity::DbId;
use crate::{Error, Result};

/// The environment variable that fixes every new database's identity: for fixture generators
/// and tests, never for data (every database made under it shares the identity, and files can
/// then move between them undetected).
pub const TEST_IDENTITY_ENV: &str = "MHDB_TEST_IDENTITY";

/// Where [`identity_for_new_database`] took the identity from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IdentitySource {
    /// Given by the caller (`Options::identity`).
    Given,
    /// Read from [`TEST_IDENTITY_ENV`].
    Environment,
    /// Drawn from the operating system's random source.
    Random,
}

/// The identity of a database about to be made: `given` when set, else the one
/// [`TEST_IDENTITY_ENV`] names, else 16 random bytes (all-zero, which means "none", is drawn
/// again). A given or named all-zero identity, or a malformed variable, is refused.
pub fn identity_for_new_database(given: Option<DbId>) -> Result<(DbId, IdentitySource)> {
    if let Some(id) = given {
        return refuse_none(id, "identity").map(|id| (id, IdentitySource::Given));
    }
    if let Some(text) = std::env::var_os(TEST_IDENTITY_ENV).filter(|v| !v.is_empty()) {
        let parsed = text.to_str().and_then(DbId::from_hex).ok_or_else(|| {
            Error::invalid(
                TEST_IDENTITY_ENV,
                format!("{text:?} is not 32 hexadecimal digits"),
            )
        })?;
        return refuse_none(parsed, TEST_IDENTITY_ENV).map(|id| (id, IdentitySource::Environment));
    }
    Ok((random_identity()?, IdentitySource::Random))
}

fn refuse_none(id: DbId, what: &'static str) -> Result<DbId> {
    if id.is_none() {
        return Err(Error::invalid(
            what,
            "all-zero is not an identity (it means \"none\", as in format versions 1 and 2)",
        ));
    }
    Ok(id)
}

fn random_identity() -> Result<DbId> {
    loop {
        let mut bytes = [0u8; 16];
        getrandom::fill(&mut bytes).map_err(|e| Error::Io {
            path: None,
            op: "draw a database identity from the operating system's random source",
            source: std::io::Error::other(e.to_string()),
        })?;
        let id = DbId(bytes);
        if !id.is_none() {
            return Ok(id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_identity_wins_and_zero_is_refused() {
        let id = DbId([7; 16]);
        assert_eq!(
            identity_for_new_database(Some(id)).unwrap(),
            (id, IdentitySource::Given)
        );
        assert!(identity_for_new_database(Some(DbId::NONE)).is_err());
    }

    #[test]
    fn random_identities_differ_and_are_never_none() {
        let a = random_identity().unwrap();
        let b = random_identity().unwrap();
        assert!(!a.is_none() && a != b);
    }
}
