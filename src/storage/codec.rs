//! The field codec of every file kind that is read into memory (manifest, CURRENT, signature-log
//! header, deletion list, WAL header, records and batch payloads): little-endian fields appended
//! by [`Encoder`] and read back by [`Decoder`]. (Segments are mapped, not read, and describe
//! their fixed-size structures with `zerocopy` instead.) Decoding never panics: every read is
//! checked, and a short or malformed input becomes [`Error::Corruption`] naming the file and the
//! byte offset.

#![deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use crate::{Error, Result};

/// Appends little-endian fields to a byte vector.
#[derive(Default)]
pub(crate) struct Encoder {
    pub(crate) buf: Vec<u8>,
}

impl Encoder {
    pub(crate) fn u8(&mut self, v: u8) -> &mut Self {
        self.buf.push(v);
        self
    }
    pub(crate) fn u32(&mut self, v: u32) -> &mut Self {
        self.buf.extend_from_slice(&v.to_le_bytes());
        self
    }
    pub(crate) fn u64(&mut self, v: u64) -> &mut Self {
        self.buf.extend_from_slice(&v.to_le_bytes());
        self
    }
    pub(crate) fn bytes(&mut self, v: &[u8]) -> &mut Self {
        self.buf.extend_from_slice(v);
        self
    }
    /// Appends the CRC32 of everything written so far.
    pub(crate) fn crc(&mut self) -> &mut Self {
        let crc = crc32fast::hash(&self.buf);
        self.u32(crc)
    }
}

/// Reads little-endian fields from a byte slice, tracking the offset for error messages.
pub(crate) struct Decoder<'a> {
    bytes: &'a [u8],
    pos: usize,
    /// Offset of `bytes[0]` within the file, for error messages.
    base: u64,
    path: &'a Path,
}

impl<'a> Decoder<'a> {
    pub(crate) fn new(bytes: &'a [u8], path: &'a Path) -> Self {
        Decoder {
            bytes,
            pos: 0,
            base: 0,
            path,
        }
    }

    pub(crate) fn with_base(bytes: &'a [u8], path: &'a Path, base: u64) -> Self {
        Decoder {
            bytes,
            pos: 0,
            base,
            path,
        }
    }

    pub(crate) fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }

    pub(crate) fn remaining(&self) -> usize {
        self.bytes.len().saturating_sub(self.pos)
    }

    pub(crate) fn corruption(&self, detail: impl Into<String>) -> Error {
        Error::corruption(self.path, self.offset(), detail)
    }

    pub(crate) fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8]> {
        let end = self.pos.checked_add(n);
        match end.and_then(|end| self.bytes.get(self.pos..end)) {
            Some(slice) => {
                self.pos += n;
                Ok(slice)
            }
            None => Err(self.corruption(format!(
                "truncated: {what} needs {n} bytes, {} left",
                self.remaining()
            ))),
        }
    }

    fn array<const N: usize>(&mut self, what: &str) -> Result<[u8; N]> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N, what)?);
        Ok(out)
    }

    pub(crate) fn u8(&mut self, what: &str) -> Result<u8> {
        Ok(self.array::<1>(what)?[0])
    }
    pub(crate) fn u32(&mut self, what: &str) -> Result<u32> {
        Ok(u32::from_le_bytes(self.array(what)?))
    }
    pub(crate) fn u64(&mut self, what: &str) -> Result<u64> {
        Ok(u64::from_le_bytes(self.array(what)?))
    }

    /// Checks that a trailing CRC32 equals the CRC of everything before it in `bytes`.
    pub(crate) fn expect_crc(&mut self) -> Result<()> {
        let covered = self.bytes.get(..self.pos).unwrap_or_default();
        let actual = crc32fast::hash(covered);
        let at = self.offset();
        let stored = self.u32("checksum")?;
        if stored != actual {
            return Err(Error::corruption(
                self.path,
                at,
                format!("checksum mismatch: stored {stored:#010x}, computed {actual:#010x}"),
            ));
        }
        Ok(())
    }

    pub(crate) fn expect_end(&self) -> Result<()> {
        if self.remaining() != 0 {
            return Err(self.corruption(format!("{} unexpected trailing bytes", self.remaining())));
        }
        Ok(())
    }
}
