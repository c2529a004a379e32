//! The WAL's batch payload (`format/wal.md`): a write batch once its keys are resolved to
//! document numbers ([`LogOp`]). A batch is logged inside one WAL record (a group commit
//! combines several batches into one record), so after a crash it is either wholly there or
//! wholly absent.

use std::path::Path;

use crate::storage::codec::{Decoder, Encoder};
use crate::storage::shingle_codec::decode_into;
use crate::{Error, Result};

/// Largest key accepted, in bytes.
pub const MAX_KEY_LEN: usize = 64 * 1024;

/// A resolved operation, as logged in the WAL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum LogOp {
    Insert {
        docno: u64,
        key: Box<[u8]>,
        band_keys: Box<[u64]>,
        sig: Box<[u8]>,
        /// The coded shingle set, in an index that stores sets.
        set: Option<Box<[u8]>>,
    },
    Delete {
        docno: u64,
    },
}

const TAG_INSERT: u8 = 1;
const TAG_DELETE: u8 = 2;
/// An insert with its coded shingle set (indexes that store sets, `format/wal.md`).
const TAG_INSERT_WITH_SET: u8 = 3;

/// Combines encoded batches (`count u32` then the operations) into as few batches as possible,
/// each at most `max_len` bytes, in order: counts add up and operation lists concatenate, so
/// replaying a combined batch applies the same operations in the same order. A group commit
/// writes its batches as one WAL record this way (`format/wal.md`).
pub(crate) fn combine_payloads<'a>(
    payloads: impl IntoIterator<Item = &'a [u8]>,
    max_len: usize,
) -> Vec<std::borrow::Cow<'a, [u8]>> {
    use std::borrow::Cow;
    let mut out: Vec<Cow<'a, [u8]>> = Vec::new();
    for p in payloads {
        let Some((count, ops)) = p.split_first_chunk::<4>() else {
            out.push(Cow::Borrowed(p));
            continue;
        };
        let fits = out
            .last()
            .is_some_and(|last| last.len() + ops.len() <= max_len);
        match out.last_mut() {
            Some(last) if fits && last.len() >= 4 => {
                let last = last.to_mut();
                if let Some(total) = last.first_chunk_mut::<4>() {
                    let sum = u32::from_le_bytes(*total).saturating_add(u32::from_le_bytes(*count));
                    *total = sum.to_le_bytes();
                }
                last.extend_from_slice(ops);
            }
            _ => out.push(Cow::Borrowed(p)),
        }
    }
    out
}

pub(crate) fn encode_ops(ops: &[LogOp]) -> Vec<u8> {
    let mut e = Encoder::default();
    e.u32(ops.len() as u32);
    for op in ops {
        match op {
            LogOp::Insert {
                docno,
                key,
                band_keys,
                sig,
                set,
            } => {
                let tag = if set.is_some() {
                    TAG_INSERT_WITH_SET
                } else {
                    TAG_INSERT
                };
                e.u8(tag).u64(*docno).u32(key.len() as u32).bytes(key);
                for &k in band_keys.iter() {
                    e.u64(k);
                }
                e.bytes(sig);
                if let Some(set) = set {
                    e.u32(set.len() as u32).bytes(set);
                }
            }
            LogOp::Delete { docno } => {
                e.u8(TAG_DELETE).u64(*docno);
            }
        }
    }
    e.buf
}

/// One decoded operation, borrowing from the WAL payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum OpRef<'a> {
    Insert {
        docno: u64,
        key: &'a [u8],
        /// `bands` little-endian u64 band keys.
        band_keys: &'a [u8],
        sig: &'a [u8],
        /// The coded shingle set (an index that stores sets has one on every insert).
        set: Option<&'a [u8]>,
    },
    Delete {
        docno: u64,
    },
}

/// Decodes a WAL payload, calling `visit` for each operation in order; `bands`,
/// `sig_bytes` and `store_sets` come from the database parameters.
pub(crate) fn decode_ops(
    payload: &[u8],
    bands: usize,
    sig_bytes: usize,
    store_sets: bool,
    path: &Path,
    offset: u64,
    mut visit: impl FnMut(OpRef<'_>) -> Result<()>,
) -> Result<()> {
    let mut d = Decoder::with_base(payload, path, offset);
    let count = d.u32("op count")? as usize;
    for _ in 0..count {
        let tag_at = d.offset();
        let op = match d.u8("op tag")? {
            tag @ (TAG_INSERT | TAG_INSERT_WITH_SET) => {
                if (tag == TAG_INSERT_WITH_SET) != store_sets {
                    return Err(d.corruption(if store_sets {
                        "an insert without its shingle set in an index that stores sets"
                    } else {
                        "an insert with a shingle set in an index that stores none"
                    }));
                }
                decode_insert(&mut d, bands, sig_bytes, store_sets, path)?
            }
            TAG_DELETE => OpRef::Delete {
                docno: d.u64("docno")?,
            },
            other => {
                return Err(Error::corruption(
                    path,
                    tag_at,
                    format!("unknown WAL op tag {other}"),
                ));
            }
        };
        visit(op)?;
    }
    d.expect_end()
}

/// The fields of an insert after its tag.
fn decode_insert<'a>(
    d: &mut Decoder<'a>,
    bands: usize,
    sig_bytes: usize,
    store_sets: bool,
    path: &Path,
) -> Result<OpRef<'a>> {
    let docno = d.u64("docno")?;
    let key_len = d.u32("key length")? as usize;
    if key_len > MAX_KEY_LEN {
        return Err(d.corruption(format!("key length {key_len} exceeds {MAX_KEY_LEN}")));
    }
    let key = d.take(key_len, "key")?;
    let band_keys = d.take(bands * 8, "band keys")?;
    let sig = d.take(sig_bytes, "signature")?;
    let set = if store_sets {
        Some(decode_set(d, path)?)
    } else {
        None
    };
    Ok(OpRef::Insert {
        docno,
        key,
        band_keys,
        sig,
        set,
    })
}

/// An insert's coded shingle set, with its length before it. A set that does not decode is
/// damage, found now rather than by a query.
fn decode_set<'a>(d: &mut Decoder<'a>, path: &Path) -> Result<&'a [u8]> {
    let len = d.u32("shingle set length")? as usize;
    let at = d.offset();
    let set = d.take(len, "shingle set")?;
    let mut scratch = Vec::new();
    decode_into(set, &mut scratch).map_err(|e| Error::Corruption {
        path: path.to_path_buf(),
        offset: at + e.offset as u64,
        detail: e.to_string(),
    })?;
    Ok(set)
}

/// Little-endian band keys as an exact-size iterator.
pub(crate) fn band_keys_le(bytes: &[u8]) -> impl ExactSizeIterator<Item = u64> + '_ {
    bytes.chunks_exact(8).map(|c| {
        let mut b = [0u8; 8];
        b.copy_from_slice(c);
        u64::from_le_bytes(b)
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::expect_used)]
mod tests {
    use super::*;

    fn decode(bytes: &[u8], bands: usize, store_sets: bool) -> Result<Vec<LogOp>> {
        let mut out = Vec::new();
        decode_ops(bytes, bands, 16, store_sets, Path::new("wal"), 0, |op| {
            out.push(match op {
                OpRef::Insert {
                    docno,
                    key,
                    band_keys,
                    sig,
                    set,
                } => LogOp::Insert {
                    docno,
                    key: key.into(),
                    band_keys: band_keys_le(band_keys).collect(),
                    sig: sig.into(),
                    set: set.map(Into::into),
                },
                OpRef::Delete { docno } => LogOp::Delete { docno },
            });
            Ok(())
        })
        .map(|()| out)
    }

    #[test]
    fn roundtrip_and_truncation() {
        let set = crate::storage::shingle_codec::encode(&[7 << 1, 1 << 28]);
        for store_sets in [false, true] {
            let ops = vec![
                LogOp::Insert {
                    docno: 5,
                    key: b"https://example.com/a".to_vec().into(),
                    band_keys: vec![1, 2, 3].into(),
                    sig: vec![9u8; 16].into(),
                    set: store_sets.then(|| set.clone().into()),
                },
                LogOp::Delete { docno: 2 },
            ];
            let bytes = encode_ops(&ops);
            assert_eq!(decode(&bytes, 3, store_sets).unwrap(), ops);
            for len in 0..bytes.len() {
                assert!(decode(&bytes[..len], 3, store_sets).is_err());
            }
            // Wrong parameters are detected, not misread.
            assert!(decode(&bytes, 4, store_sets).is_err());
            assert!(decode(&bytes, 3, !store_sets).is_err());
        }
    }

    /// A stored set that does not decode is corruption at its byte, even with a valid CRC.
    #[test]
    fn a_malformed_set_is_corruption() {
        let ops = vec![LogOp::Insert {
            docno: 1,
            key: b"k".to_vec().into(),
            band_keys: vec![1].into(),
            sig: vec![0u8; 16].into(),
            set: Some(vec![3, 1].into()),
        }];
        let err = decode(&encode_ops(&ops), 1, true).unwrap_err();
        assert!(matches!(err, Error::Corruption { .. }), "{err}");
    }

    /// Combined batches decode to the batches' operations in order; a combination never
    /// exceeds the size limit, and a lone batch is passed through as it is.
    #[test]
    fn combined_batches_decode_to_the_concatenation() {
        let batch = |first: u64, n: u64| -> Vec<LogOp> {
            (first..first + n)
                .map(|d| {
                    if d % 3 == 0 {
                        LogOp::Delete { docno: d }
                    } else {
                        LogOp::Insert {
                            docno: d,
                            key: format!("k{d}").into_bytes().into(),
                            band_keys: vec![d, d + 1].into(),
                            sig: vec![d as u8; 8].into(),
                            set: None,
                        }
                    }
                })
                .collect()
        };
        let batches: Vec<Vec<LogOp>> = (0..7u64).map(|i| batch(i * 10, i + 1)).collect();
        let encoded: Vec<Vec<u8>> = batches.iter().map(|b| encode_ops(b)).collect();
        let decode_all = |payloads: &[std::borrow::Cow<'_, [u8]>]| {
            let mut docnos = Vec::new();
            for p in payloads {
                decode_ops(p, 2, 8, false, Path::new("wal"), 0, |op| {
                    docnos.push(match op {
                        OpRef::Insert { docno, .. } | OpRef::Delete { docno } => docno,
                    });
                    Ok(())
                })
                .unwrap();
            }
            docnos
        };
        let want: Vec<u64> = batches
            .iter()
            .flatten()
            .map(|op| match op {
                LogOp::Insert { docno, .. } | LogOp::Delete { docno } => *docno,
            })
            .collect();
        let largest = encoded.iter().map(Vec::len).max().unwrap();
        for max_len in [usize::MAX, largest, 2 * largest, 3 * largest] {
            let combined = combine_payloads(encoded.iter().map(Vec::as_slice), max_len);
            assert!(combined.iter().all(|c| c.len() <= max_len));
            assert_eq!(decode_all(&combined), want, "max_len {max_len}");
        }
        assert_eq!(
            combine_payloads(encoded.iter().map(Vec::as_slice), usize::MAX).len(),
            1
        );
        let lone = combine_payloads([encoded[0].as_slice()], usize::MAX);
        assert!(matches!(lone[0], std::borrow::Cow::Borrowed(_)));
    }
}
