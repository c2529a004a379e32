//! The version-3 manifest codec: round trips, every truncation and bit flip, and every
//! reserved or unknown code refused as unsupported while values the format rules out are
//! corruption at their field.

use super::tests::Params;
use super::*;

const KEY: [u8; 32] = [0x5a; 32];

fn manifest(segments: usize, deletions: bool) -> Manifest<Params> {
    Manifest {
        format_version: MANIFEST_V3,
        generation: 7,
        db_id: DbId(std::array::from_fn(|i| i as u8)),
        features: Features::STORE_SETS,
        params: Params(0x6d68_6462, 64, true, [0; 32]),
        keep: None,
        next_docno: 100,
        siglog_records: 0,
        wal_start: 12,
        wal_next_seq: 17,
        next_file_id: 13,
        deletions: if deletions {
            DeletionsMeta {
                id: 11,
                count: 2,
                file_len: 68,
                crc: 0xdead_beef,
            }
        } else {
            DeletionsMeta::default()
        },
        segments: (0..segments as u64)
            .map(|i| SegmentMeta {
                id: 2 + i,
                base: 10 * i,
                span: 10,
                docs: 9,
                file_len: 4096 + i,
                siglog_crc: 0,
                meta_crc: 0x1000 + i as u32,
            })
            .collect(),
    }
}

fn decode(bytes: &[u8]) -> Result<Manifest<Params>> {
    Manifest::<Params>::decode(bytes, Path::new("M"))
}

/// `bytes` with `new` written at `at` and the trailing CRC recomputed.
fn patched(bytes: &[u8], at: usize, new: &[u8]) -> Vec<u8> {
    let mut b = bytes.to_vec();
    b[at..at + new.len()].copy_from_slice(new);
    let n = b.len() - 4;
    let crc = crc32fast::hash(&b[..n]);
    b[n..].copy_from_slice(&crc.to_le_bytes());
    b
}

fn corruption_at(err: &Error) -> Option<u64> {
    match err {
        Error::Corruption { offset, .. } => Some(*offset),
        _ => None,
    }
}

#[test]
fn roundtrips_with_and_without_segments_and_deletions() {
    let mut keyed = manifest(2, true);
    keyed.params.3 = KEY;
    keyed.features = Features::STORE_SETS.with(Features::SETS_KEYED_V2, true);
    let mut no_sets = manifest(1, false);
    no_sets.params.2 = false;
    no_sets.features = Features::NONE;
    for m in [manifest(0, false), manifest(3, true), keyed, no_sets] {
        let bytes = m.encode();
        assert_eq!(bytes.len(), 44 + 82 + 24 + 64 + 44 * m.segments.len() + 4);
        assert_eq!(decode(&bytes).unwrap(), m);
    }
    // The layout's fixed offsets: identity, features, parameters, the banding, the state.
    let m = manifest(1, true);
    let bytes = m.encode();
    assert_eq!(bytes[8..12], MANIFEST_V3.to_le_bytes());
    assert_eq!(bytes[20..36], m.db_id.0);
    assert_eq!(bytes[36..44], 1u64.to_le_bytes());
    assert_eq!(bytes[44..48], 1u32.to_le_bytes());
    assert_eq!(bytes[124..126], 1u16.to_le_bytes());
    assert_eq!(bytes[126..130], 8u32.to_le_bytes());
    assert_eq!(bytes[150..158], 100u64.to_le_bytes());
    assert_eq!(bytes[206..210], 0xdead_beefu32.to_le_bytes());
    assert_eq!(bytes[210..214], 1u32.to_le_bytes());
    assert_eq!(bytes[254..258], 0x1000u32.to_le_bytes());
}

/// The feature bit STORE_SETS is written from the parameters, whatever `features` says.
#[test]
fn store_sets_is_written_from_the_parameters() {
    let mut m = manifest(0, false);
    m.features = Features::NONE;
    let back = decode(&m.encode()).unwrap();
    assert_eq!(back.features, Features::STORE_SETS);
    assert!(back.params.2);
}

#[test]
fn every_truncation_and_bit_flip_is_corruption() {
    let bytes = manifest(2, true).encode();
    for len in 0..bytes.len() {
        let err = decode(&bytes[..len]).unwrap_err();
        assert!(err.is_corruption(), "length {len}: {err}");
    }
    for i in 0..bytes.len() {
        for bit in 0..8 {
            let mut b = bytes.clone();
            b[i] ^= 1 << bit;
            let err = decode(&b).unwrap_err();
            assert!(err.is_corruption(), "byte {i} bit {bit}: {err}");
        }
    }
}

/// The containment metric needs every document's set size: without feature SET_SIZE it is
/// corruption, at the metric's byte.
#[test]
fn containment_without_set_sizes_is_corruption() {
    let bytes = manifest(1, true).encode();
    let err = decode(&patched(&bytes, 50, &[3])).unwrap_err();
    assert!(err.is_corruption(), "{err}");
    assert!(err.to_string().contains("SET_SIZE"), "{err}");
}

/// Each reserved or unknown feature bit, kind, metric, shingle kind and flag, several
/// bandings of a Jaccard index and a partitioned one, written with the CRC recomputed:
/// unsupported.
#[test]
fn reserved_and_unknown_codes_are_unsupported() {
    let bytes = manifest(1, true).encode();
    // Bits 2 (EXACT_HASH), 3 (KEEP), 4 (SET_SIZE), 5 (BAND_FILTERS) and 6
    // (COPIED_PAST_DAMAGE) are built: see the round trips below.
    let mut cases: Vec<(usize, Vec<u8>)> = (7..64)
        .map(|bit| (36, (1u64 | 1 << bit).to_le_bytes().to_vec()))
        .collect();
    cases.extend([0u8, 3, 255].map(|kind| (48, vec![kind])));
    cases.extend([0u8, 4, 255].map(|metric| (50, vec![metric])));
    cases.extend([0u8, 5, 255].map(|kind| (68, vec![kind])));
    cases.extend((5..16).map(|bit| (70, (1u16 << bit).to_le_bytes().to_vec())));
    cases.push((124, 2u16.to_le_bytes().to_vec()));
    cases.push((134, 1u64.to_le_bytes().to_vec()));
    cases.push((142, (u64::MAX - 1).to_le_bytes().to_vec()));
    for (at, new) in cases {
        let err = decode(&patched(&bytes, at, &new)).unwrap_err();
        assert!(
            matches!(err, Error::Unsupported { .. }),
            "{new:?} at {at}: {err}"
        );
    }
    let err = decode(&patched(&bytes, 8, &4u32.to_le_bytes())).unwrap_err();
    assert!(
        matches!(
            err,
            Error::UnsupportedVersion {
                found: 4,
                supported: 3,
                ..
            }
        ),
        "{err}"
    );
}

/// Values the format rules out, with the CRC recomputed: corruption at their field.
#[test]
fn values_the_format_rules_out_are_corruption_at_their_field() {
    let bytes = manifest(1, true).encode();
    let cases: Vec<(usize, Vec<u8>, u64)> = vec![
        // No identity.
        (20, vec![0; 16], 20),
        // SETS_KEYED_V2 without a key, and without stored sets.
        (36, 3u64.to_le_bytes().to_vec(), 36),
        (36, 2u64.to_le_bytes().to_vec(), 36),
        // Cosine with MinHash; a Unicode version with character shingles; a keep type or a
        // keep field without KEEP; no banding.
        (50, vec![2], 50),
        (72, 0x000f_0000u32.to_le_bytes().to_vec(), 72),
        // Unicode words without a Unicode version; a fold flag with character shingles.
        (68, vec![3], 72),
        (70, (1u16 << 3).to_le_bytes().to_vec(), 70),
        (70, (1u16 << 4).to_le_bytes().to_vec(), 70),
        // Token lists with the block's normalization flags (the fixture has some set).
        (68, vec![4], 70),
        (90, vec![1], 90),
        (91, vec![4], 91),
        (124, 0u16.to_le_bytes().to_vec(), 124),
        // Deletion-list fields without a list.
        (182, 0u64.to_le_bytes().to_vec(), 182),
    ];
    for (at, new, offset) in cases {
        let err = decode(&patched(&bytes, at, &new)).unwrap_err();
        assert_eq!(corruption_at(&err), Some(offset), "{new:?} at {at}: {err}");
    }
    // A SimHash kind with the Jaccard metric does not fit either.
    let simhash = patched(&bytes, 48, &[v3::KIND_SIMHASH]);
    let err = decode(&simhash).unwrap_err();
    assert_eq!(corruption_at(&err), Some(50), "{err}");
}

/// CURRENT's layout is unchanged; its version field carries 3.
#[test]
fn current_carries_version_3() {
    let bytes = manifest(2, true).encode();
    let c = Current {
        version: MANIFEST_V3,
        generation: 7,
        manifest_len: bytes.len() as u64,
        manifest_crc: crc32fast::hash(&bytes),
    };
    let cb = c.encode();
    assert_eq!(cb.len(), CURRENT_LEN);
    assert_eq!(Current::decode(&cb, Path::new("C")).unwrap(), c);
    c.check(&bytes, Path::new("M")).unwrap();
}

/// COPIED_PAST_DAMAGE, the one feature that changes no reading, decodes as written.
#[test]
fn the_copied_past_damage_bit_round_trips() {
    let mut m = manifest(1, true);
    m.features = m.features.with(Features::COPIED_PAST_DAMAGE, true);
    let back = decode(&m.encode()).unwrap();
    assert!(back.features.contains(Features::COPIED_PAST_DAMAGE));
    assert!(
        !decode(&manifest(1, true).encode())
            .unwrap()
            .features
            .contains(Features::COPIED_PAST_DAMAGE)
    );
}

/// BAND_FILTERS (segments carry a filter per band) decodes as written.
#[test]
fn the_band_filters_bit_round_trips() {
    let mut m = manifest(1, true);
    m.features = m.features.with(Features::BAND_FILTERS, true);
    let back = decode(&m.encode()).unwrap();
    assert!(back.features.contains(Features::BAND_FILTERS));
    assert_eq!(back, m);
    let plain = decode(&manifest(1, true).encode()).unwrap();
    assert!(!plain.features.contains(Features::BAND_FILTERS));
}

/// EXACT_HASH and SET_SIZE (the columns exist in the index) decode as written.
#[test]
fn the_column_bits_round_trip() {
    for feature in [Features::EXACT_HASH, Features::SET_SIZE] {
        let mut m = manifest(1, true);
        m.features = m.features.with(feature, true);
        let back = decode(&m.encode()).unwrap();
        assert!(back.features.contains(feature));
        assert_eq!(back, m);
        let plain = decode(&manifest(1, true).encode()).unwrap();
        assert!(!plain.features.contains(feature));
    }
}

/// KEEP (the column, its type and its field) decodes as written; the feature without a type
/// from 1 to 3, or without a field, is corruption at the type's offset.
#[test]
fn the_keep_column_round_trips_and_needs_a_type_and_a_field() {
    use crate::storage::segment::{KeepColumn, KeepType};
    for keep_type in [KeepType::I64, KeepType::F64, KeepType::Str] {
        let mut m = manifest(1, true);
        m.features = m.features.with(Features::KEEP, true);
        m.keep = Some(KeepColumn {
            keep_type,
            field: "quality_score".into(),
        });
        let bytes = m.encode();
        assert_eq!(decode(&bytes).unwrap(), m);
        assert_eq!(bytes[90], keep_type.code());
        assert_eq!(bytes[91], 13);
        for code in [0u8, 4, 255] {
            let err = decode(&patched(&bytes, 90, &[code])).unwrap_err();
            assert_eq!(corruption_at(&err), Some(90), "type {code}: {err}");
        }
    }
    let plain = manifest(1, true).encode();
    let features = Features::STORE_SETS.with(Features::KEEP, true);
    let err = decode(&patched(&plain, 36, &features.0.to_le_bytes())).unwrap_err();
    assert_eq!(corruption_at(&err), Some(90), "{err}");
}
