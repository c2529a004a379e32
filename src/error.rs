//! The one error type of mhdb.
//!
//! Kept hand-written and `#[non_exhaustive]` so that new failure kinds can be added without a
//! breaking change, and so that corruption (the bytes on disk are wrong) is never confused with
//! an I/O failure (the operating system refused) or a caller's mistake (a bad parameter).

use std::fmt;
use std::path::{Path, PathBuf};

pub use crate::storage::vfs::LockHolder;

/// Result alias used throughout mhdb.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in mhdb.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// A caller-supplied parameter is out of range or inconsistent.
    InvalidParameter {
        /// Which parameter, e.g. `"num_perm"`.
        name: &'static str,
        /// What is wrong with it, in words a user can act on.
        reason: String,
    },
    /// The operating system reported a failure.
    Io {
        /// The file or directory involved, when known.
        path: Option<PathBuf>,
        /// What mhdb was doing, e.g. `"fsync"`.
        op: &'static str,
        /// The underlying error.
        source: std::io::Error,
    },
    /// Bytes on disk do not match what mhdb wrote: a checksum, length or invariant failed.
    Corruption {
        /// The file that holds the bad bytes.
        path: PathBuf,
        /// Byte offset of the problem within the file.
        offset: u64,
        /// What was found.
        detail: String,
    },
    /// A file was written by a newer (or unknown) version of the format.
    UnsupportedVersion {
        /// The file whose version is unknown.
        path: PathBuf,
        /// The version found in the file.
        found: u32,
        /// The newest version this build understands.
        supported: u32,
    },
    /// The database is in an older format version that this build reads but does not write:
    /// it opens read-only, and `mhdb upgrade` (or [`Db::upgrade`](crate::db::Db::upgrade))
    /// converts it.
    NeedsUpgrade {
        /// The database directory.
        path: PathBuf,
        /// Its format version.
        found: u32,
    },
    /// The database uses a feature of the format that this build does not implement.
    Unsupported {
        /// The file that records the feature.
        path: PathBuf,
        /// The feature, in words.
        feature: String,
    },
    /// Stored parameters differ from the ones the caller expects.
    ParameterMismatch {
        /// Which parameter.
        name: &'static str,
        /// The value stored in the database.
        stored: String,
        /// The value the caller supplied.
        requested: String,
    },
    /// There is no database at the path (no `CURRENT` file).
    NotFound {
        /// The directory that holds no database.
        path: PathBuf,
    },
    /// The database is locked by another writer: another process, or another handle of this
    /// one.
    Locked {
        /// The lock file.
        path: PathBuf,
        /// Who holds it, where the system says.
        holder: LockHolder,
    },
    /// An earlier I/O error (or damage found while writing) left this handle refusing writes
    /// until the database is reopened: its durable state was no longer known. What was
    /// committed before stays committed; reopening recovers.
    PreviousIo {
        /// The error that latched the handle, as it was reported (empty where not known).
        cause: String,
    },
    /// The database was opened read-only and a write was attempted.
    ReadOnly,
    /// A query passed its deadline ([`QueryOptions::deadline`](crate::db::QueryOptions::deadline))
    /// and was stopped unanswered.
    DeadlineExceeded {
        /// What the query was doing when it found its deadline passed, e.g.
        /// `"verifying candidates"`.
        stage: &'static str,
    },
}

impl Error {
    /// [`Error::PreviousIo`] where the latched error is not at hand (a layer below the
    /// database handle, which puts its own record of the cause in: `Db::fail`).
    pub(crate) fn previous_io_unknown() -> Self {
        Error::PreviousIo {
            cause: String::new(),
        }
    }

    /// Shorthand for [`Error::InvalidParameter`].
    pub fn invalid(name: &'static str, reason: impl Into<String>) -> Self {
        Error::InvalidParameter {
            name,
            reason: reason.into(),
        }
    }

    /// [`Error::Io`]: the operating system refused `op` on `path`.
    pub(crate) fn io(path: &Path, op: &'static str, source: std::io::Error) -> Self {
        Error::Io {
            path: Some(path.to_path_buf()),
            op,
            source,
        }
    }

    /// [`Error::io`] as a `map_err` adapter: `file.sync_data().map_err(Error::io_on(path, "fsync"))`.
    pub(crate) fn io_on(path: &Path, op: &'static str) -> impl FnOnce(std::io::Error) -> Self {
        let path = path.to_path_buf();
        move |source| Error::Io {
            path: Some(path),
            op,
            source,
        }
    }

    /// [`Error::Corruption`]: the bytes of `path` at `offset` are not what mhdb wrote.
    pub(crate) fn corruption(path: &Path, offset: u64, detail: impl Into<String>) -> Self {
        Error::Corruption {
            path: path.to_path_buf(),
            offset,
            detail: detail.into(),
        }
    }

    /// True when the error means the stored bytes are damaged.
    pub fn is_corruption(&self) -> bool {
        matches!(self, Error::Corruption { .. })
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::InvalidParameter { name, reason } => {
                write!(f, "invalid parameter `{name}`: {reason}")
            }
            Error::Io { path, op, source } => match path {
                Some(p) => write!(f, "I/O error during {op} on {}: {source}", p.display()),
                None => write!(f, "I/O error during {op}: {source}"),
            },
            Error::Corruption {
                path,
                offset,
                detail,
            } => write!(
                f,
                "corruption in {} at byte offset {offset}: {detail}",
                path.display()
            ),
            Error::UnsupportedVersion {
                path,
                found,
                supported,
            } => write!(
                f,
                "{} has format version {found}, but this build reads versions up to {supported}",
                path.display()
            ),
            Error::NeedsUpgrade { path, found } => write!(
                f,
                "{} is in format version {found}, which this build opens read-only; \
                 run `mhdb upgrade {}` (Python: `mhdb.Index.upgrade(path)`) to convert it to \
                 version {}",
                path.display(),
                path.display(),
                crate::storage::manifest::MANIFEST_VERSION
            ),
            Error::Unsupported { path, feature } => write!(
                f,
                "{} uses {feature}, which this build does not support",
                path.display()
            ),
            Error::ParameterMismatch {
                name,
                stored,
                requested,
            } => write!(
                f,
                "parameter `{name}` mismatch: database has {stored}, caller asked for {requested}"
            ),
            Error::NotFound { path } => write!(
                f,
                "{} is not an mhdb database (no CURRENT file)",
                path.display()
            ),
            Error::Locked { path, holder } => {
                // The lock is taken on the directory, then on its LOCK file: name the database.
                let db = match path.file_name() {
                    Some(name) if name == crate::storage::names::LOCK => {
                        path.parent().unwrap_or(path)
                    }
                    _ => path,
                };
                let who = match holder {
                    LockHolder::ThisProcess => {
                        "this process already has it open for writing through another handle \
                         (close that one first, or share it)"
                            .to_string()
                    }
                    LockHolder::Process(pid) => format!("process {pid} has it open for writing"),
                    LockHolder::Unknown => "another process has it open for writing".to_string(),
                };
                write!(
                    f,
                    "database {} is locked by another writer: {who} (lock on {})",
                    db.display(),
                    path.display()
                )
            }
            Error::PreviousIo { cause } if cause.is_empty() => write!(
                f,
                "an earlier I/O error left the database read-only until it is reopened"
            ),
            Error::PreviousIo { cause } => write!(
                f,
                "an earlier error left the database read-only until it is reopened \
                 (what was committed before it is kept): {cause}"
            ),
            Error::ReadOnly => write!(f, "the database is open read-only"),
            Error::DeadlineExceeded { stage } => write!(
                f,
                "the query passed its deadline while {stage}, and was stopped unanswered"
            ),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}
