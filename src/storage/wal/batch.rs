//! The WAL's batch payload (`format/wal.md`): a write batch once its keys are resolved to
//! document numbers ([`LogOp`]). A batch is logged inside one WAL record (a group commit
//! combines several batches into one record), so after a crash it is either wholly there or
//! wholly absent.

use std::path::Path;

use crate::storage::codec::{Decoder, Encoder};
use crate::storage::segment::{ColumnSet, DocColumns, KeepType, KeepValue, MAX_KEEP_STRING};
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
        /// The document's values of the index's per-document columns (each none for a
        /// document that lacks it). Version 2's operations carry none.
        columns: DocColumns,
    },
    Delete {
        docno: u64,
    },
}

const TAG_INSERT: u8 = 1;
const TAG_DELETE: u8 = 2;
/// An insert with its coded shingle set (indexes that store sets, `format/wal.md`).
const TAG_INSERT_WITH_SET: u8 = 3;
/// Version 3's one insert: the band-key count, then a mask of the optional fields that follow.
const TAG_INSERT_V3: u8 = 4;

/// Bits of a version-3 insert's `fields` mask.
const FIELD_SET: u8 = 1;
const FIELD_EXACT_HASH: u8 = 2;
const FIELD_KEEP: u8 = 4;
const FIELD_SET_SIZE: u8 = 8;
/// Bits no version defines: a newer writer's field, refused as unsupported.
const FIELDS_UNKNOWN: u8 = 0xf0;

/// Which operations a WAL's batches are coded with: version 2's inserts (tags 1 and 3, also
/// those of version 1) or version 3's (tag 4 with a field mask). Deletes are alike in both.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum OpsVersion {
    V2,
    V3,
}

/// What the database says every operation of a batch must look like.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct OpsLayout {
    /// The WAL file's version of the operations.
    pub version: OpsVersion,
    /// Band keys per insert (the manifest's `bands`).
    pub bands: usize,
    /// Bytes of a packed signature (the manifest's `record_bytes`).
    pub sig_bytes: usize,
    /// Whether every insert carries its coded shingle set (the manifest's `store_sets`).
    pub store_sets: bool,
    /// The per-document columns an insert may carry values of (the manifest's features).
    pub columns: ColumnSet,
}

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

/// A batch's payload: `count u32`, then the operations coded as `version` codes them.
pub(crate) fn encode_ops(ops: &[LogOp], version: OpsVersion) -> Vec<u8> {
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
                columns,
            } => {
                let tag = match (version, set) {
                    (OpsVersion::V3, _) => TAG_INSERT_V3,
                    (OpsVersion::V2, Some(_)) => TAG_INSERT_WITH_SET,
                    (OpsVersion::V2, None) => TAG_INSERT,
                };
                e.u8(tag).u64(*docno).u32(key.len() as u32).bytes(key);
                if version == OpsVersion::V3 {
                    e.bytes(&(band_keys.len() as u16).to_le_bytes());
                }
                for &k in band_keys.iter() {
                    e.u64(k);
                }
                e.bytes(sig);
                // Version 2 has no columns: only a database of version 3 has them.
                let columns = match version {
                    OpsVersion::V3 => columns.clone(),
                    OpsVersion::V2 => DocColumns::default(),
                };
                if version == OpsVersion::V3 {
                    let bit = |present: bool, bit: u8| if present { bit } else { 0 };
                    e.u8(bit(set.is_some(), FIELD_SET)
                        | bit(columns.exact.is_some(), FIELD_EXACT_HASH)
                        | bit(columns.keep.is_some(), FIELD_KEEP)
                        | bit(columns.set_size.is_some(), FIELD_SET_SIZE));
                }
                if let Some(set) = set {
                    e.u32(set.len() as u32).bytes(set);
                }
                if let Some(h) = columns.exact {
                    e.bytes(&h.to_le_bytes());
                }
                if let Some(v) = &columns.keep {
                    encode_keep(&mut e, v);
                }
                if let Some(n) = columns.set_size {
                    e.u32(n);
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
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum OpRef<'a> {
    Insert {
        docno: u64,
        key: &'a [u8],
        /// `bands` little-endian u64 band keys.
        band_keys: &'a [u8],
        sig: &'a [u8],
        /// The coded shingle set (an index that stores sets has one on every insert).
        set: Option<&'a [u8]>,
        /// The column values the insert carries.
        columns: DocColumns,
    },
    Delete {
        docno: u64,
    },
}

/// Decodes a WAL payload, calling `visit` for each operation in order; `layout` comes from
/// the database parameters and the WAL file's version.
pub(crate) fn decode_ops(
    payload: &[u8],
    layout: &OpsLayout,
    path: &Path,
    offset: u64,
    mut visit: impl FnMut(OpRef<'_>) -> Result<()>,
) -> Result<()> {
    let mut d = Decoder::with_base(payload, path, offset);
    let count = d.u32("op count")? as usize;
    for _ in 0..count {
        let tag_at = d.offset();
        let op = match (d.u8("op tag")?, layout.version) {
            (TAG_DELETE, _) => OpRef::Delete {
                docno: d.u64("docno")?,
            },
            (tag @ (TAG_INSERT | TAG_INSERT_WITH_SET), OpsVersion::V2) => {
                if (tag == TAG_INSERT_WITH_SET) != layout.store_sets {
                    return Err(d.corruption(if layout.store_sets {
                        "an insert without its shingle set in an index that stores sets"
                    } else {
                        "an insert with a shingle set in an index that stores none"
                    }));
                }
                decode_insert_v2(&mut d, layout, path)?
            }
            (TAG_INSERT_V3, OpsVersion::V3) => decode_insert_v3(&mut d, layout, path)?,
            (tag @ (TAG_INSERT | TAG_INSERT_WITH_SET), OpsVersion::V3) => {
                return Err(Error::corruption(
                    path,
                    tag_at,
                    format!("a version-2 insert (op tag {tag}) in a version-3 WAL"),
                ));
            }
            (other, _) => {
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

/// The fields of a version-2 insert after its tag.
fn decode_insert_v2<'a>(d: &mut Decoder<'a>, layout: &OpsLayout, path: &Path) -> Result<OpRef<'a>> {
    let docno = d.u64("docno")?;
    let key = decode_key(d)?;
    let band_keys = d.take(layout.bands * 8, "band keys")?;
    let sig = d.take(layout.sig_bytes, "signature")?;
    let set = if layout.store_sets {
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
        columns: DocColumns::default(),
    })
}

/// The fields of a version-3 insert (tag 4) after its tag: the band-key count is checked
/// against the index's, and the field mask against what the index stores.
fn decode_insert_v3<'a>(d: &mut Decoder<'a>, layout: &OpsLayout, path: &Path) -> Result<OpRef<'a>> {
    let docno = d.u64("docno")?;
    let key = decode_key(d)?;
    let nkeys_at = d.offset();
    let nkeys = usize::from(decode_u16(d, "band key count")?);
    if nkeys != layout.bands {
        return Err(Error::corruption(
            path,
            nkeys_at,
            format!(
                "an insert with {nkeys} band keys in an index with {}",
                layout.bands
            ),
        ));
    }
    let band_keys = d.take(nkeys * 8, "band keys")?;
    let sig = d.take(layout.sig_bytes, "signature")?;
    let fields_at = d.offset();
    let fields = d.u8("insert fields")?;
    check_fields(fields, layout, path, fields_at)?;
    let set = if fields & FIELD_SET != 0 {
        Some(decode_set(d, path)?)
    } else {
        None
    };
    let exact = if fields & FIELD_EXACT_HASH != 0 {
        Some(decode_exact(d)?)
    } else {
        None
    };
    let keep = match (fields & FIELD_KEEP != 0, layout.columns.keep) {
        (true, Some(ty)) => Some(decode_keep(d, ty, path)?),
        _ => None,
    };
    let set_size = if fields & FIELD_SET_SIZE != 0 {
        Some(d.u32("set size")?)
    } else {
        None
    };
    Ok(OpRef::Insert {
        docno,
        key,
        band_keys,
        sig,
        set,
        columns: DocColumns {
            exact,
            keep,
            set_size,
        },
    })
}

/// A version-3 insert's field mask: a bit no version defines is a newer writer's
/// (unsupported); a column the index does not have, or a shingle set present exactly when
/// the index stores none, is damage. An exact hash may be absent (a document inserted by
/// signature has none).
fn check_fields(fields: u8, layout: &OpsLayout, path: &Path, at: u64) -> Result<()> {
    let store_sets = layout.store_sets;
    if fields & FIELDS_UNKNOWN != 0 {
        return Err(Error::Unsupported {
            path: path.to_path_buf(),
            feature: format!("WAL insert field bits {:#04x}", fields & FIELDS_UNKNOWN),
        });
    }
    let lacking = [
        (FIELD_EXACT_HASH, layout.columns.exact, "EXACT_HASH"),
        (FIELD_KEEP, layout.columns.keep.is_some(), "KEEP"),
        (FIELD_SET_SIZE, layout.columns.set_size, "SET_SIZE"),
    ];
    if let Some((_, _, column)) = lacking
        .iter()
        .find(|(bit, has, _)| fields & bit != 0 && !has)
    {
        return Err(Error::corruption(
            path,
            at,
            format!("an insert with a {column} field in an index without that column"),
        ));
    }
    if (fields & FIELD_SET != 0) != store_sets {
        return Err(Error::corruption(
            path,
            at,
            if store_sets {
                "an insert without its shingle set in an index that stores sets"
            } else {
                "an insert with a shingle set in an index that stores none"
            },
        ));
    }
    Ok(())
}

/// An insert's exact hash: 16 bytes, a LE u128 that is never 0 (0 is not a stored value).
fn decode_exact(d: &mut Decoder<'_>) -> Result<u128> {
    let bytes = d.take(16, "exact hash")?;
    let h = bytes
        .iter()
        .rev()
        .fold(0u128, |acc, &b| (acc << 8) | u128::from(b));
    if h == 0 {
        return Err(d.corruption("an exact hash of 0 (never stored)"));
    }
    Ok(h)
}

/// A little-endian u16 (the codec has no field that narrow).
fn decode_u16(d: &mut Decoder<'_>, what: &str) -> Result<u16> {
    let bytes = d.take(2, what)?;
    Ok(bytes
        .iter()
        .rev()
        .fold(0u16, |acc, &b| (acc << 8) | u16::from(b)))
}

/// An insert's key, with its length before it.
fn decode_key<'a>(d: &mut Decoder<'a>) -> Result<&'a [u8]> {
    let key_len = d.u32("key length")? as usize;
    if key_len > MAX_KEY_LEN {
        return Err(d.corruption(format!("key length {key_len} exceeds {MAX_KEY_LEN}")));
    }
    d.take(key_len, "key")
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

/// A KEEP field: 8 bytes for a number, `len u16` then the bytes for a string.
fn encode_keep(e: &mut Encoder, value: &KeepValue) {
    let bytes = value.to_bytes();
    // Longer strings are refused before a record is made (`KeepValue::into_type`).
    debug_assert!(bytes.len() <= MAX_KEEP_STRING || value.keep_type() != KeepType::Str);
    if value.keep_type() == KeepType::Str {
        e.bytes(&(bytes.len().min(MAX_KEEP_STRING) as u16).to_le_bytes());
        e.bytes(bytes.get(..MAX_KEEP_STRING).unwrap_or(&bytes));
    } else {
        e.bytes(&bytes);
    }
}

/// A KEEP field of the index's type `ty`; a NaN is damage.
fn decode_keep(d: &mut Decoder<'_>, ty: KeepType, path: &Path) -> Result<KeepValue> {
    let at = d.offset();
    let len = match ty {
        KeepType::Str => usize::from(decode_u16(d, "keep value length")?),
        _ => 8,
    };
    let bytes = d.take(len, "keep value")?;
    KeepValue::from_bytes(ty, bytes).ok_or_else(|| Error::corruption(path, at, "a NaN keep value"))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::expect_used)]
mod tests {
    use super::*;

    fn layout(version: OpsVersion, bands: usize, store_sets: bool) -> OpsLayout {
        OpsLayout {
            version,
            bands,
            sig_bytes: 16,
            store_sets,
            columns: ColumnSet::default(),
        }
    }

    fn decode(bytes: &[u8], bands: usize, store_sets: bool) -> Result<Vec<LogOp>> {
        decode_as(bytes, &layout(OpsVersion::V2, bands, store_sets))
    }

    fn decode_as(bytes: &[u8], layout: &OpsLayout) -> Result<Vec<LogOp>> {
        let mut out = Vec::new();
        decode_ops(bytes, layout, Path::new("wal"), 0, |op| {
            out.push(match op {
                OpRef::Insert {
                    docno,
                    key,
                    band_keys,
                    sig,
                    set,
                    columns,
                } => LogOp::Insert {
                    docno,
                    key: key.into(),
                    band_keys: band_keys_le(band_keys).collect(),
                    sig: sig.into(),
                    set: set.map(Into::into),
                    columns,
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
                    columns: DocColumns::default(),
                },
                LogOp::Delete { docno: 2 },
            ];
            let bytes = encode_ops(&ops, OpsVersion::V2);
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
            columns: DocColumns::default(),
        }];
        let err = decode(&encode_ops(&ops, OpsVersion::V2), 1, true).unwrap_err();
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
                            columns: DocColumns::default(),
                        }
                    }
                })
                .collect()
        };
        let batches: Vec<Vec<LogOp>> = (0..7u64).map(|i| batch(i * 10, i + 1)).collect();
        let encoded: Vec<Vec<u8>> = batches
            .iter()
            .map(|b| encode_ops(b, OpsVersion::V2))
            .collect();
        let decode_all = |payloads: &[std::borrow::Cow<'_, [u8]>]| {
            let mut docnos = Vec::new();
            for p in payloads {
                let layout = OpsLayout {
                    sig_bytes: 8,
                    ..layout(OpsVersion::V2, 2, false)
                };
                decode_ops(p, &layout, Path::new("wal"), 0, |op| {
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

    /// A batch of every version-3 operation: inserts (with a set when the index stores sets)
    /// and a delete.
    fn v3_ops(store_sets: bool) -> Vec<LogOp> {
        let set = crate::storage::shingle_codec::encode(&[7 << 1, 1 << 28]);
        vec![
            LogOp::Insert {
                docno: 5,
                key: b"https://example.com/a".to_vec().into(),
                band_keys: vec![1, 2, 3].into(),
                sig: vec![9u8; 16].into(),
                set: store_sets.then(|| set.clone().into()),
                columns: DocColumns::default(),
            },
            LogOp::Delete { docno: 2 },
            LogOp::Insert {
                docno: 6,
                key: b"".to_vec().into(),
                band_keys: vec![u64::MAX, 0, 7].into(),
                sig: vec![1u8; 16].into(),
                set: store_sets.then(|| set.clone().into()),
                columns: DocColumns::default(),
            },
        ]
    }

    /// Offset of the first insert's `fields` byte in [`v3_ops`]'s payload: count, tag, docno,
    /// key, nkeys, 3 band keys, signature.
    const FIRST_FIELDS_AT: usize = 4 + 1 + 8 + 4 + 21 + 2 + 3 * 8 + 16;

    /// Version 3's insert (tag 4) round-trips with and without its set, and every truncation
    /// is corruption; version 2's inserts are refused in a version-3 WAL and tag 4 in an
    /// earlier one.
    #[test]
    fn v3_roundtrip_truncation_and_tags_of_the_other_version() {
        for store_sets in [false, true] {
            let ops = v3_ops(store_sets);
            let v3 = layout(OpsVersion::V3, 3, store_sets);
            let bytes = encode_ops(&ops, OpsVersion::V3);
            assert_eq!(bytes[4], TAG_INSERT_V3);
            assert_eq!(bytes[FIRST_FIELDS_AT], u8::from(store_sets));
            assert_eq!(decode_as(&bytes, &v3).unwrap(), ops);
            for len in 0..bytes.len() {
                let err = decode_as(&bytes[..len], &v3).unwrap_err();
                assert!(err.is_corruption(), "{store_sets} {len}: {err}");
            }
            let err = decode(&bytes, 3, store_sets).unwrap_err();
            assert!(err.to_string().contains("unknown WAL op tag 4"), "{err}");
            let v2 = encode_ops(&ops, OpsVersion::V2);
            let err = decode_as(&v2, &v3).unwrap_err();
            assert!(err.to_string().contains("version-2 insert"), "{err}");
            assert!(matches!(err, Error::Corruption { offset: 4, .. }), "{err}");
        }
    }

    /// The band-key count must be the index's, and the SET bit present exactly when the index
    /// stores sets: both corruption at their field.
    #[test]
    fn v3_band_key_count_and_set_bit_are_checked() {
        let bytes = encode_ops(&v3_ops(true), OpsVersion::V3);
        let err = decode_as(&bytes, &layout(OpsVersion::V3, 4, true)).unwrap_err();
        let nkeys_at = FIRST_FIELDS_AT as u64 - 16 - 24 - 2;
        assert!(
            matches!(err, Error::Corruption { offset, .. } if offset == nkeys_at),
            "{err}"
        );
        let without_sets = layout(OpsVersion::V3, 3, false);
        let err = decode_as(&bytes, &without_sets).unwrap_err();
        assert!(
            matches!(err, Error::Corruption { offset, .. } if offset == FIRST_FIELDS_AT as u64),
            "{err}"
        );
        let bytes = encode_ops(&v3_ops(false), OpsVersion::V3);
        let err = decode_as(&bytes, &layout(OpsVersion::V3, 3, true)).unwrap_err();
        assert!(err.is_corruption(), "{err}");
    }

    /// An exact hash round-trips after the set, may be absent on one insert and present on
    /// the next, and is corruption in an index without the column or when it is 0.
    #[test]
    fn v3_exact_hash_field() {
        let exact = 0x0123_4567_89ab_cdef_fedc_ba98_7654_3210u128;
        for store_sets in [false, true] {
            let mut ops = v3_ops(store_sets);
            if let LogOp::Insert { columns, .. } = &mut ops[0] {
                columns.exact = Some(exact);
            }
            let with = OpsLayout {
                columns: ColumnSet {
                    exact: true,
                    ..ColumnSet::default()
                },
                ..layout(OpsVersion::V3, 3, store_sets)
            };
            let bytes = encode_ops(&ops, OpsVersion::V3);
            assert_eq!(bytes[FIRST_FIELDS_AT], u8::from(store_sets) | 2);
            assert_eq!(decode_as(&bytes, &with).unwrap(), ops);
            for len in 0..bytes.len() {
                assert!(decode_as(&bytes[..len], &with).unwrap_err().is_corruption());
            }
            let without = layout(OpsVersion::V3, 3, store_sets);
            let err = decode_as(&bytes, &without).unwrap_err();
            assert!(
                matches!(err, Error::Corruption { offset, .. } if offset == FIRST_FIELDS_AT as u64),
                "{err}"
            );
            let hash_at = bytes.len() - 16 - (bytes.len() - encoded_len_of_first(&ops));
            let mut zero = bytes.clone();
            zero[hash_at..hash_at + 16].fill(0);
            assert!(decode_as(&zero, &with).unwrap_err().is_corruption());
        }
    }

    /// The length of the payload holding the count and the first operation of `ops`.
    fn encoded_len_of_first(ops: &[LogOp]) -> usize {
        let first = encode_ops(&ops[..1], OpsVersion::V3);
        first.len()
    }

    /// Field bit 2 names a column no index has yet, and bits 1 (EXACT_HASH) and 3 (SET_SIZE)
    /// ones this index lacks: corruption; bits 4–7 are a newer writer's: unsupported.
    #[test]
    fn v3_reserved_field_bits_are_corruption_and_unknown_ones_unsupported() {
        let good = encode_ops(&v3_ops(false), OpsVersion::V3);
        let v3 = layout(OpsVersion::V3, 3, false);
        for bit in 1..8 {
            let mut bytes = good.clone();
            bytes[FIRST_FIELDS_AT] |= 1 << bit;
            let err = decode_as(&bytes, &v3).unwrap_err();
            if bit < 4 {
                assert!(
                    matches!(err, Error::Corruption { offset, .. } if offset == FIRST_FIELDS_AT as u64),
                    "bit {bit}: {err}"
                );
            } else {
                assert!(matches!(err, Error::Unsupported { .. }), "bit {bit}: {err}");
            }
        }
    }
}
