//! The signature log: a checked header, then one fixed-width packed signature per document
//! number (`format/siglog.md`).

#![deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use super::codec::Decoder;
#[cfg(test)]
use super::codec::Encoder;
use crate::{Error, Result};

const MAGIC: &[u8; 8] = b"MHDBSIGL";
/// Version of the signature-log layout.
pub const SIGLOG_VERSION: u32 = 1;
/// Records start at this offset.
pub(crate) const HEADER_LEN: u64 = 64;

/// The signature log's header: fixed-width records of `record_bytes` follow at offset 64.
/// (Version-1 databases only, which this build no longer writes: the tests use it.)
#[cfg(test)]
pub(crate) fn encode_header(num_perm: u32, bits: u32, record_bytes: u32) -> Vec<u8> {
    let mut e = Encoder::default();
    e.bytes(MAGIC)
        .u32(SIGLOG_VERSION)
        .u32(num_perm)
        .u32(bits)
        .u32(record_bytes);
    e.crc();
    e.buf.resize(HEADER_LEN as usize, 0);
    e.buf
}

pub(crate) fn check_header(
    bytes: &[u8],
    path: &Path,
    num_perm: u32,
    bits: u32,
    record_bytes: u32,
) -> Result<()> {
    let mut d = Decoder::new(bytes, path);
    if d.take(8, "magic")? != MAGIC {
        return Err(Error::corruption(
            path,
            0,
            "not an mhdb signature log (bad magic)",
        ));
    }
    let version = d.u32("version")?;
    let fields = [d.u32("num_perm")?, d.u32("bits")?, d.u32("record bytes")?];
    d.expect_crc()?;
    // The rest of the header is reserved and must be zero (so no byte goes unchecked).
    let padding = d.take(d.remaining(), "header padding")?;
    if let Some(i) = padding.iter().position(|&b| b != 0) {
        return Err(Error::corruption(
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
        return Err(Error::corruption(
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
pub(crate) fn offset(docno: u64, record_bytes: usize) -> u64 {
    HEADER_LEN + docno * record_bytes as u64
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// A header as version 1 wrote it reads back, and one for other parameters is refused.
    #[test]
    fn header_roundtrip() {
        let header = encode_header(128, 32, 512);
        let path = Path::new("signatures.log");
        check_header(&header, path, 128, 32, 512).unwrap();
        assert!(check_header(&header, path, 64, 32, 256).is_err());
        assert_eq!(offset(2, 512), HEADER_LEN + 1024);
    }
}
