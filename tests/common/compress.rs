//! Compressing test inputs as users' pipelines do, for the readers of `.gz` and `.zst` files.

use std::io::Write;

/// `bytes` as one gzip member at the default level.
pub fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

/// `bytes` as one zstd frame at level 3, zstd's default.
pub fn zstd(bytes: &[u8]) -> Vec<u8> {
    zstd::encode_all(bytes, 3).unwrap()
}
