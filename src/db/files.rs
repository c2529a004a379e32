//! File names of a database directory and the two small file kinds owned by the database
//! layer: the signature log and the deletion list (layouts in `format/siglog.md` and
//! `format/manifest.md`).

#![deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use super::codec::{Decoder, Encoder, corruption};
use crate::storage::vfs::Mapped;
use crate::{Error, Result};

pub(crate) const LOCK: &str = "LOCK";
pub(crate) const CURRENT: &str = "CURRENT";
pub(crate) const CURRENT_TMP: &str = "CURRENT.tmp";
pub(crate) const SIGLOG: &str = "signatures.log";

pub(crate) fn manifest_name(generation: u64) -> String {
    format!("MANIFEST-{generation:016x}")
}
pub(crate) fn wal_name(id: u64) -> String {
    format!("wal-{id:016x}.log")
}
pub(crate) fn segment_name(id: u64) -> String {
    format!("seg-{id:016x}.seg")
}
pub(crate) fn deletions_name(id: u64) -> String {
    format!("del-{id:016x}.del")
}

/// What a file name in the database directory is, if mhdb made it.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum FileKind {
    Manifest(u64),
    Wal(u64),
    Segment(u64),
    Deletions(u64),
    CurrentTmp,
}

pub(crate) fn classify(name: &str) -> Option<FileKind> {
    let hex = |s: &str| {
        (s.len() == 16)
            .then(|| u64::from_str_radix(s, 16).ok())
            .flatten()
    };
    if name == CURRENT_TMP {
        return Some(FileKind::CurrentTmp);
    }
    if let Some(rest) = name.strip_prefix("MANIFEST-") {
        return hex(rest).map(FileKind::Manifest);
    }
    if let Some(rest) = name
        .strip_prefix("wal-")
        .and_then(|r| r.strip_suffix(".log"))
    {
        return hex(rest).map(FileKind::Wal);
    }
    if let Some(rest) = name
        .strip_prefix("seg-")
        .and_then(|r| r.strip_suffix(".seg"))
    {
        return hex(rest).map(FileKind::Segment);
    }
    if let Some(rest) = name
        .strip_prefix("del-")
        .and_then(|r| r.strip_suffix(".del"))
    {
        return hex(rest).map(FileKind::Deletions);
    }
    None
}

// ---------------------------------------------------------------------------------------------
// Signature log

const SIGLOG_MAGIC: &[u8; 8] = b"MHDBSIGL";
/// Version of the signature-log layout.
pub const SIGLOG_VERSION: u32 = 1;
/// Records start at this offset.
pub(crate) const SIGLOG_HEADER_LEN: u64 = 64;

/// The signature log's header: fixed-width records of `record_bytes` follow at offset 64.
pub(crate) fn siglog_header(num_perm: u32, bits: u32, record_bytes: u32) -> Vec<u8> {
    let mut e = Encoder::default();
    e.bytes(SIGLOG_MAGIC)
        .u32(SIGLOG_VERSION)
        .u32(num_perm)
        .u32(bits)
        .u32(record_bytes);
    e.crc();
    e.buf.resize(SIGLOG_HEADER_LEN as usize, 0);
    e.buf
}

pub(crate) fn check_siglog_header(
    bytes: &[u8],
    path: &Path,
    num_perm: u32,
    bits: u32,
    record_bytes: u32,
) -> Result<()> {
    let mut d = Decoder::new(bytes, path);
    if d.take(8, "magic")? != SIGLOG_MAGIC {
        return Err(corruption(path, 0, "not an mhdb signature log (bad magic)"));
    }
    let version = d.u32("version")?;
    let fields = [d.u32("num_perm")?, d.u32("bits")?, d.u32("record bytes")?];
    d.expect_crc()?;
    // The rest of the header is reserved and must be zero (so no byte goes unchecked).
    let padding = d.take(d.remaining(), "header padding")?;
    if let Some(i) = padding.iter().position(|&b| b != 0) {
        return Err(corruption(
            path,
            28 + i as u64,
            "reserved header bytes are not zero",
        ));
    }
    if version != SIGLOG_VERSION {
        return Err(Error::UnsupportedVersion {
            path: path.to_path_buf(),
            found: version,
            supported: SIGLOG_VERSION,
        });
    }
    if fields != [num_perm, bits, record_bytes] {
        return Err(corruption(
            path,
            12,
            format!(
                "signature log holds k={} bits={} record={}B, manifest says k={num_perm} bits={bits} record={record_bytes}B",
                fields[0], fields[1], fields[2]
            ),
        ));
    }
    Ok(())
}

/// Byte offset of record `docno`.
pub(crate) fn siglog_offset(docno: u64, record_bytes: usize) -> u64 {
    SIGLOG_HEADER_LEN + docno * record_bytes as u64
}

// ---------------------------------------------------------------------------------------------
// Deletion list

const DEL_MAGIC: &[u8; 8] = b"MHDBDELS";
/// Version of the deletion-list layout.
pub const DELETIONS_VERSION: u32 = 1;
const DEL_HEADER_LEN: usize = 8 + 4 + 8;

/// Encodes a sorted, duplicate-free list of deleted document numbers.
pub(crate) fn encode_deletions(sorted: &[u64]) -> Vec<u8> {
    let mut e = Encoder::default();
    e.bytes(DEL_MAGIC)
        .u32(DELETIONS_VERSION)
        .u64(sorted.len() as u64);
    for &d in sorted {
        e.u64(d);
    }
    e.crc();
    e.buf
}

/// A deletion list read in place from its mapped file.
#[derive(Debug, Default)]
pub(crate) struct Deletions {
    map: Option<Mapped>,
    count: usize,
}

impl Deletions {
    /// Checks header, length and checksum; the list is then searched in place.
    pub(crate) fn open(map: Mapped, path: &Path, expected_count: u64) -> Result<Deletions> {
        let bytes: &[u8] = &map;
        let mut d = Decoder::new(bytes, path);
        if d.take(8, "magic")? != DEL_MAGIC {
            return Err(corruption(path, 0, "not an mhdb deletion list (bad magic)"));
        }
        let version = d.u32("version")?;
        let count = d.u64("count")?;
        if count != expected_count {
            return Err(corruption(
                path,
                12,
                format!("deletion list holds {count} entries, manifest says {expected_count}"),
            ));
        }
        let want = (DEL_HEADER_LEN as u64)
            .checked_add(count.saturating_mul(8))
            .and_then(|n| n.checked_add(4));
        if want != Some(bytes.len() as u64) {
            return Err(corruption(
                path,
                bytes.len() as u64,
                format!(
                    "deletion list is {} bytes, {count} entries need {want:?}",
                    bytes.len()
                ),
            ));
        }
        d.take(count as usize * 8, "entries")?;
        d.expect_crc()?;
        if version != DELETIONS_VERSION {
            return Err(Error::UnsupportedVersion {
                path: path.to_path_buf(),
                found: version,
                supported: DELETIONS_VERSION,
            });
        }
        let dels = Deletions {
            map: Some(map),
            count: count as usize,
        };
        // Sortedness is what binary search relies on; check it (cheap: one sequential pass).
        let mut prev = None;
        for i in 0..dels.count {
            let v = dels.get(i);
            if prev.is_some_and(|p| p >= v) {
                return Err(corruption(
                    path,
                    (DEL_HEADER_LEN + i * 8) as u64,
                    "deletion list is not strictly increasing",
                ));
            }
            prev = Some(v);
        }
        Ok(dels)
    }

    fn get(&self, i: usize) -> u64 {
        let start = DEL_HEADER_LEN + i * 8;
        let mut b = [0u8; 8];
        if let Some(src) = self.map.as_deref().and_then(|m| m.get(start..start + 8)) {
            b.copy_from_slice(src);
        }
        u64::from_le_bytes(b)
    }

    pub(crate) fn len(&self) -> usize {
        self.count
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
