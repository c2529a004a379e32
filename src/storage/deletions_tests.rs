//! The deletion list's codec: both layouts round trip, version 1's bytes are the fixture's,
//! and every damage to a version-2 list is corruption, never a panic or another list.

use std::path::Path;

use super::*;
use crate::storage::identity::DbId;

const ID: FileIdentity = FileIdentity {
    db_id: DbId([0x5d, 0x0c, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14]),
    file_id: 0x0b,
};

fn open(bytes: &[u8], count: u64, expected: Option<FileIdentity>) -> Result<Deletions> {
    Deletions::open(
        Mapped::from_vec(bytes.to_vec()),
        Path::new("del-000000000000000b.del"),
        count,
        expected,
    )
}

/// The bytes of a list whose header was rewritten, with its checksum recomputed as a writer
/// would (so that the check under test, not the checksum, must catch it).
fn rewritten(mut bytes: Vec<u8>, at: usize, field: &[u8]) -> Vec<u8> {
    bytes[at..at + field.len()].copy_from_slice(field);
    let n = bytes.len() - 4;
    let crc = crc32fast::hash(&bytes[..n]);
    bytes[n..].copy_from_slice(&crc.to_le_bytes());
    bytes
}

fn corruption_offset(result: Result<Deletions>) -> u64 {
    match result {
        Err(Error::Corruption { offset, .. }) => offset,
        other => panic!("expected corruption, got {other:?}"),
    }
}

#[test]
fn version_1_encodes_the_fixture_bytes() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/db-v2");
    let fixture = std::fs::read(dir.join("del-000000000000000b.del")).unwrap();
    let count = (fixture.len() as u64 - 24) / 8;
    let list = open(&fixture, count, None).unwrap();
    let entries: Vec<u64> = list.iter().collect();
    assert_eq!(encode(&entries, None), fixture);
    assert_eq!(
        list.crc(),
        u32::from_le_bytes(fixture[fixture.len() - 4..].try_into().unwrap())
    );
    assert_eq!(list.crc_offset(), fixture.len() as u64 - 4);
}

#[test]
fn version_2_round_trips_with_its_identity_and_checksum() {
    let entries = [3u64, 9, 10, 1 << 40];
    let bytes = encode(&entries, Some(ID));
    assert_eq!(bytes.len(), 52 + 8 * entries.len());
    assert_eq!(&bytes[8..12], &DELETIONS_V2.to_le_bytes());
    assert_eq!(&bytes[16..32], &ID.db_id.0);
    assert_eq!(&bytes[32..40], &ID.file_id.to_le_bytes());
    let list = open(&bytes, 4, Some(ID)).unwrap();
    assert_eq!(list.iter().collect::<Vec<_>>(), entries);
    assert!(list.contains(10) && !list.contains(11));
    let crc = crc32fast::hash(&bytes[..bytes.len() - 4]);
    assert_eq!(list.crc(), crc);
    assert_eq!(list.crc_offset(), bytes.len() as u64 - 4);
    let empty = encode(&[], Some(ID));
    assert_eq!(open(&empty, 0, Some(ID)).unwrap().len(), 0);
}

#[test]
fn identity_mismatch_is_corruption_at_its_field() {
    let v2 = encode(&[1, 2], Some(ID));
    let other_db = FileIdentity {
        db_id: DbId([7; 16]),
        ..ID
    };
    let other_file = FileIdentity { file_id: 12, ..ID };
    assert_eq!(corruption_offset(open(&v2, 2, Some(other_db))), 16);
    assert_eq!(corruption_offset(open(&v2, 2, Some(other_file))), 32);
    // A version-2 list in a database whose files carry no identity, and the reverse.
    assert_eq!(corruption_offset(open(&v2, 2, None)), 8);
    let v1 = encode(&[1, 2], None);
    assert_eq!(corruption_offset(open(&v1, 2, Some(ID))), 8);
    // The message says whose it is.
    let err = open(&v2, 2, Some(other_db)).unwrap_err().to_string();
    assert!(err.contains(&ID.db_id.to_string()), "{err}");
    assert!(err.contains(&other_db.db_id.to_string()), "{err}");
    // The count is the manifest's, at its own field.
    assert_eq!(corruption_offset(open(&v2, 3, Some(ID))), 40);
    assert_eq!(corruption_offset(open(&v1, 3, None)), 12);
}

#[test]
fn unknown_flags_and_versions_with_valid_checksums_are_unsupported() {
    let v2 = encode(&[5, 6, 7], Some(ID));
    for bit in 0..32 {
        let bytes = rewritten(v2.clone(), 12, &(1u32 << bit).to_le_bytes());
        match open(&bytes, 3, Some(ID)) {
            Err(Error::Unsupported { feature, .. }) => {
                assert!(feature.contains(&format!("bit {bit}")), "{feature}")
            }
            other => panic!("flag bit {bit}: {other:?}"),
        }
    }
    let v3 = rewritten(v2, 8, &3u32.to_le_bytes());
    assert!(matches!(
        open(&v3, 3, Some(ID)),
        Err(Error::UnsupportedVersion {
            found: 3,
            supported: 2,
            ..
        })
    ));
}

#[test]
fn every_truncation_and_bit_flip_of_version_2_is_corruption() {
    let bytes = encode(&[2, 3, 5, 8, 13], Some(ID));
    for len in 0..bytes.len() {
        let result = open(&bytes[..len], 5, Some(ID));
        assert!(
            matches!(result, Err(Error::Corruption { .. })),
            "cut at {len}: {result:?}"
        );
    }
    for at in 0..bytes.len() {
        for bit in 0..8 {
            let mut bad = bytes.clone();
            bad[at] ^= 1 << bit;
            let result = open(&bad, 5, Some(ID));
            assert!(
                matches!(result, Err(Error::Corruption { .. })),
                "bit {bit} of byte {at}: {result:?}"
            );
        }
    }
}

#[test]
fn a_list_out_of_order_is_corruption_at_its_entry() {
    let bytes = encode(&[4, 4], Some(ID));
    assert_eq!(corruption_offset(open(&bytes, 2, Some(ID))), 56);
}
