//! The deletion list: sorted document numbers deleted but still present in segments, searched
//! in place in its mapped file (`format/manifest.md`). Version 1 (a database of version 2 or
//! older) has no identity; version 2 carries the database's identity and the file's number, and
//! flag bits for what may come.

#![deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use super::codec::{Decoder, Encoder};
use super::identity::{DbId, FileIdentity, IdentityOffsets, check_file_identity};
use super::vfs::Mapped;
use crate::{Error, Result};

const DEL_MAGIC: &[u8; 8] = b"MHDBDELS";
/// The deletion-list layout of a database of version 2 or older: no identity.
pub const DELETIONS_VERSION: u32 = 1;
/// The deletion-list layout with flags, the database's identity and the file's number.
pub const DELETIONS_V2: u32 = 2;
/// Version 1: magic, version, count.
const V1_HEADER_LEN: usize = 8 + 4 + 8;
/// Version 2: magic, version, flags, db_id, file_id, count.
const V2_HEADER_LEN: usize = 8 + 4 + 4 + 16 + 8 + 8;
/// Where version 2 keeps its fields, for errors that name them.
const V2_DB_ID_OFFSET: u64 = 16;
const V2_FILE_ID_OFFSET: u64 = 32;
const V2_COUNT_OFFSET: u64 = 40;
const V1_COUNT_OFFSET: u64 = 12;

/// Encodes a sorted, duplicate-free list of deleted document numbers: as version 2, carrying
/// `identity` (the database's and the number of the name the file is written under), or as
/// version 1 with `None`.
pub(crate) fn encode(sorted: &[u64], identity: Option<FileIdentity>) -> Vec<u8> {
    let mut e = Encoder::default();
    e.bytes(DEL_MAGIC);
    match identity {
        None => e.u32(DELETIONS_VERSION),
        Some(id) => e
            .u32(DELETIONS_V2)
            .u32(0)
            .bytes(&id.db_id.0)
            .u64(id.file_id),
    };
    e.u64(sorted.len() as u64);
    for &d in sorted {
        e.u64(d);
    }
    e.crc();
    e.buf
}

/// The trailing checksum of an encoded list (what a version-3 manifest records as `del_crc`).
pub(crate) fn trailing_crc(encoded: &[u8]) -> u32 {
    encoded
        .len()
        .checked_sub(4)
        .and_then(|at| encoded.get(at..))
        .and_then(|b| <[u8; 4]>::try_from(b).ok())
        .map_or(0, u32::from_le_bytes)
}

/// A deletion list read in place from its mapped file.
#[derive(Debug, Default)]
pub(crate) struct Deletions {
    map: Option<Mapped>,
    count: usize,
    /// Where the entries start: 20 in version 1, 48 in version 2.
    entries_at: usize,
    /// The trailing checksum (0 for no list).
    crc: u32,
}

/// What the header of a deletion list whose checksum matched says.
struct Header {
    identity: Option<FileIdentity>,
    count: u64,
    /// Offset of the `count` field.
    count_at: u64,
    entries_at: usize,
}

impl Deletions {
    /// Checks the checksum, the version, the identity against `expected` (`None`: the list of
    /// a database of version 2 or older, which has none), the count against the manifest's
    /// and the length; the list is then searched in place.
    pub(crate) fn open(
        map: Mapped,
        path: &Path,
        expected_count: u64,
        expected: Option<FileIdentity>,
    ) -> Result<Deletions> {
        let bytes: &[u8] = &map;
        let (crc, crc_at) = check_frame(bytes, path)?;
        let header = read_header(bytes.get(..crc_at).unwrap_or_default(), path)?;
        check_file_identity(
            path,
            "deletion list",
            header.identity,
            expected,
            IdentityOffsets {
                version: 8,
                db_id: V2_DB_ID_OFFSET,
                file_id: V2_FILE_ID_OFFSET,
            },
        )?;
        let count = header.count;
        if count != expected_count {
            return Err(Error::corruption(
                path,
                header.count_at,
                format!("deletion list holds {count} entries, manifest says {expected_count}"),
            ));
        }
        let want = (header.entries_at as u64)
            .checked_add(count.saturating_mul(8))
            .and_then(|n| n.checked_add(4));
        if want != Some(bytes.len() as u64) {
            return Err(Error::corruption(
                path,
                bytes.len() as u64,
                format!(
                    "deletion list is {} bytes, {count} entries need {want:?}",
                    bytes.len()
                ),
            ));
        }
        let dels = Deletions {
            map: Some(map),
            count: count as usize,
            entries_at: header.entries_at,
            crc,
        };
        dels.check_sorted(path)?;
        Ok(dels)
    }

    /// Sortedness is what binary search relies on; check it (cheap: one sequential pass).
    fn check_sorted(&self, path: &Path) -> Result<()> {
        let mut prev = None;
        for i in 0..self.count {
            let v = self.get(i);
            if prev.is_some_and(|p| p >= v) {
                return Err(Error::corruption(
                    path,
                    (self.entries_at + i * 8) as u64,
                    "deletion list is not strictly increasing",
                ));
            }
            prev = Some(v);
        }
        Ok(())
    }

    fn get(&self, i: usize) -> u64 {
        let start = self.entries_at + i * 8;
        let mut b = [0u8; 8];
        if let Some(src) = self.map.as_deref().and_then(|m| m.get(start..start + 8)) {
            b.copy_from_slice(src);
        }
        u64::from_le_bytes(b)
    }

    pub(crate) fn len(&self) -> usize {
        self.count
    }

    /// The trailing checksum over every byte before it (0 when there is no list): what a
    /// version-3 manifest records as `del_crc`.
    pub(crate) fn crc(&self) -> u32 {
        self.crc
    }

    /// The offset of the trailing checksum, for an error that names it.
    pub(crate) fn crc_offset(&self) -> u64 {
        self.map.as_deref().map_or(0, |m| m.len().saturating_sub(4)) as u64
    }

    pub(crate) fn contains(&self, docno: u64) -> bool {
        let (mut lo, mut hi) = (0usize, self.count);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self.get(mid).cmp(&docno) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return true,
            }
        }
        false
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = u64> + '_ {
        (0..self.count).map(|i| self.get(i))
    }
}

/// The magic, then the trailing checksum over every byte before it (the same in both
/// versions, so it is checked before anything it covers is trusted); returns the checksum and
/// where it is.
fn check_frame(bytes: &[u8], path: &Path) -> Result<(u32, usize)> {
    if bytes.get(..8) != Some(DEL_MAGIC.as_slice()) {
        return Err(Error::corruption(
            path,
            0,
            "not an mhdb deletion list (bad magic)",
        ));
    }
    let Some(crc_at) = bytes.len().checked_sub(4).filter(|&n| n >= V1_HEADER_LEN) else {
        return Err(Error::corruption(
            path,
            bytes.len() as u64,
            format!(
                "deletion list is {} bytes, shorter than a header and checksum",
                bytes.len()
            ),
        ));
    };
    let computed = crc32fast::hash(bytes.get(..crc_at).unwrap_or_default());
    let stored = bytes
        .get(crc_at..)
        .and_then(|b| <[u8; 4]>::try_from(b).ok())
        .map(u32::from_le_bytes);
    if stored != Some(computed) {
        return Err(Error::corruption(
            path,
            crc_at as u64,
            format!(
                "checksum mismatch: stored {:#010x}, computed {computed:#010x}",
                stored.unwrap_or_default()
            ),
        ));
    }
    Ok((computed, crc_at))
}

/// The header of a list whose checksum matched (`bytes`: the list without its checksum): the
/// version judged (a damaged one fails the checksum first), then version 2's flags (an unknown
/// bit is a newer build's: unsupported).
fn read_header(bytes: &[u8], path: &Path) -> Result<Header> {
    let mut d = Decoder::with_base(bytes.get(8..).unwrap_or_default(), path, 8);
    let version = d.u32("version")?;
    match version {
        DELETIONS_VERSION => Ok(Header {
            identity: None,
            count: d.u64("count")?,
            count_at: V1_COUNT_OFFSET,
            entries_at: V1_HEADER_LEN,
        }),
        DELETIONS_V2 => {
            let flags = d.u32("flags")?;
            if flags != 0 {
                return Err(Error::Unsupported {
                    path: path.to_path_buf(),
                    feature: format!("deletion list flag bit {}", flags.trailing_zeros()),
                });
            }
            let mut db_id = [0u8; 16];
            db_id.copy_from_slice(d.take(16, "db_id")?);
            let file_id = d.u64("file_id")?;
            Ok(Header {
                identity: Some(FileIdentity {
                    db_id: DbId(db_id),
                    file_id,
                }),
                count: d.u64("count")?,
                count_at: V2_COUNT_OFFSET,
                entries_at: V2_HEADER_LEN,
            })
        }
        found => Err(Error::UnsupportedVersion {
            path: path.to_path_buf(),
            found,
            supported: DELETIONS_V2,
        }),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::expect_used)]
#[path = "deletions_tests.rs"]
mod tests;
