//! The deletion list: sorted document numbers deleted but still present in segments, searched
//! in place in its mapped file (`format/manifest.md`).

#![deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use super::codec::{Decoder, Encoder};
use super::vfs::Mapped;
use crate::{Error, Result};

const DEL_MAGIC: &[u8; 8] = b"MHDBDELS";
/// Version of the deletion-list layout.
pub const DELETIONS_VERSION: u32 = 1;
const DEL_HEADER_LEN: usize = 8 + 4 + 8;

/// Encodes a sorted, duplicate-free list of deleted document numbers.
pub(crate) fn encode(sorted: &[u64]) -> Vec<u8> {
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
            return Err(Error::corruption(
                path,
                0,
                "not an mhdb deletion list (bad magic)",
            ));
        }
        let version = d.u32("version")?;
        let count = d.u64("count")?;
        if count != expected_count {
            return Err(Error::corruption(
                path,
                12,
                format!("deletion list holds {count} entries, manifest says {expected_count}"),
            ));
        }
        let want = (DEL_HEADER_LEN as u64)
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
                return Err(Error::corruption(
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
