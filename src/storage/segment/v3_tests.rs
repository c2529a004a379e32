//! Segment format version 3: the builder and combine write it when given a file identity (and
//! version 2's bytes, unchanged, without one); opening checks the identity, refuses reserved
//! flags and section kinds as unsupported once the checksums matched, and finds every other
//! damage as corruption.

use std::path::Path;

use super::format::{FILE_ID_OFFSET, FLAG_BAND_FILTER, FLAG_EXACT_HASH, FLAG_SHINGLES};
use super::test_rng::next;
use super::*;
use crate::Error;
use crate::storage::identity::{DbId, FileIdentity};
use crate::storage::shingle_codec;

pub(super) const ID: FileIdentity = FileIdentity {
    db_id: DbId([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0xa, 0xb, 0xc, 0xd, 0xe, 0xf]),
    file_id: 0x0c,
};

/// A small segment of 3 bands with signatures, shingle sets (`sets`) and a cap of 2, built
/// with `identity`.
pub(super) fn build(identity: Option<FileIdentity>, sets: bool) -> SegmentParts {
    build_with(identity, sets, false)
}

/// [`build`], with a filter per band when `band_filters`.
pub(super) fn build_with(
    identity: Option<FileIdentity>,
    sets: bool,
    band_filters: bool,
) -> SegmentParts {
    let mut rng = 11u64;
    let mut b = SegmentBuilder::with_signatures(3, 100, 8).unwrap();
    if sets {
        b = b.with_sets();
    }
    for docno in (100..140).filter(|d| d % 5 != 2) {
        let key = format!("https://{docno}.example/");
        let keys: Vec<u64> = (0..3).map(|_| (next(&mut rng) % 4) << 32).collect();
        let signature = next(&mut rng).to_le_bytes();
        b.add_signed(docno, key.as_bytes(), &keys, &signature)
            .unwrap();
        if sets {
            let mut set: Vec<u32> = (0..docno % 7).map(|_| next(&mut rng) as u32).collect();
            set.sort_unstable();
            set.dedup();
            b.add_set(&shingle_codec::encode(&set)).unwrap();
        }
    }
    b.set_end_docno(145).unwrap();
    let opts = SegmentOptions {
        bucket_cap: Some(2),
        band_filters,
    };
    b.finish_parts_as(&opts, identity).unwrap()
}

pub(super) fn open_as(bytes: Vec<u8>, expected: Option<FileIdentity>) -> crate::Result<Segment> {
    Segment::open_as(bytes, "seg-000000000000000c.seg", expected)
}

/// Everything a reader gets from a segment, for comparing two that must hold the same.
pub(super) fn contents(seg: &Segment) -> Vec<String> {
    let mut out = vec![format!(
        "{} {} {} {:?} {}",
        seg.base_docno(),
        seg.end_docno(),
        seg.num_bands(),
        seg.bucket_cap(),
        seg.stores_sets()
    )];
    for (row, doc) in seg.docs().enumerate() {
        let (docno, key) = doc.unwrap();
        let set = if seg.stores_sets() {
            seg.set_at(row as u64).unwrap().to_vec()
        } else {
            Vec::new()
        };
        let sig = seg.signature_at(row as u64).unwrap();
        out.push(format!("{docno} {key:?} {sig:?} {set:?}"));
    }
    for band in 0..seg.num_bands() {
        for key32 in 0..4u64 {
            let docs: Vec<u64> = seg
                .postings(band, key32 << 32)
                .unwrap()
                .map(|d| d.unwrap())
                .collect();
            let hot = seg.hot_bucket(band, key32 << 32).unwrap();
            out.push(format!("{band} {key32} {docs:?} {hot:?}"));
        }
    }
    out
}

/// The footer's metadata checksum recomputed over `bytes` (header of `header_len` bytes), as a
/// writer that meant the change would have written it.
pub(super) fn fix_meta_crc(bytes: &mut [u8], header_len: usize) {
    let len = bytes.len();
    let footer = len - 32;
    let table = u64::from_le_bytes(bytes[footer..footer + 8].try_into().unwrap()) as usize;
    let mut h = crc32fast::Hasher::new();
    h.update(&bytes[..header_len]);
    h.update(&bytes[table..footer]);
    h.update(&bytes[footer..footer + 24]);
    let crc = h.finalize();
    bytes[footer + 24..footer + 28].copy_from_slice(&crc.to_le_bytes());
}

/// The offset of section table entry `i`.
pub(super) fn entry_at(bytes: &[u8], i: usize) -> usize {
    let footer = bytes.len() - 32;
    u64::from_le_bytes(bytes[footer..footer + 8].try_into().unwrap()) as usize + 40 * i
}

fn corruption_offset(result: crate::Result<Segment>) -> u64 {
    match result {
        Err(Error::Corruption { offset, .. }) => offset,
        other => panic!(
            "expected corruption, got {:?}",
            other.map(|s| s.format_version())
        ),
    }
}

#[test]
fn version_3_round_trips_and_reads_as_version_2_does() {
    for sets in [false, true] {
        let v3 = build(Some(ID), sets);
        let v2 = build(None, sets);
        let crc = v3.meta_crc;
        let bytes = v3.into_vec();
        assert_eq!(bytes.len(), v2.len() + 32);
        assert_eq!(&bytes[8..12], &3u32.to_le_bytes());
        let flags = u32::from_le_bytes(bytes[12..16].try_into().unwrap());
        assert_eq!(flags, if sets { FLAG_SHINGLES } else { 0 });
        assert_eq!(&bytes[56..72], &ID.db_id.0);
        assert_eq!(&bytes[72..80], &ID.file_id.to_le_bytes());
        let seg = open_as(bytes, Some(ID)).unwrap();
        seg.verify().unwrap();
        assert_eq!(seg.format_version(), 3);
        assert_eq!(seg.identity(), Some(ID));
        assert_eq!(seg.meta_crc(), crc);
        assert_eq!(seg.blocks_checked().1, 1);
        let v2_crc = v2.meta_crc;
        let old = Segment::open(v2.into_vec(), "seg-2").unwrap();
        assert_eq!((old.format_version(), old.identity()), (2, None));
        assert_eq!(old.meta_crc(), v2_crc);
        assert_eq!(contents(&seg), contents(&old));
    }
}

#[test]
fn without_an_identity_the_fixtures_bytes_are_written_unchanged() {
    // Each fixture segment, combined alone with every document live, is written again byte for
    // byte by today's encoder: `None` still writes version 2 exactly.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let mut seen = 0;
    for db in ["db-v2", "db-v2-sets"] {
        for entry in std::fs::read_dir(root.join(db)).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|e| e != "seg") {
                continue;
            }
            let fixture = std::fs::read(&path).unwrap();
            let seg = Segment::open(fixture.clone(), &path).unwrap();
            let opts = SegmentOptions {
                bucket_cap: seg.bucket_cap(),
                ..SegmentOptions::default()
            };
            let again = combine_segments_as(&[&seg], |_| true, &opts, None).unwrap();
            assert_eq!(again.meta_crc, seg.meta_crc());
            assert!(again.into_vec() == fixture, "{}", path.display());
            // And with an identity, the same contents as version 3.
            let v3 = combine_segments_as(&[&seg], |_| true, &opts, Some(ID)).unwrap();
            let v3 = open_as(v3.into_vec(), Some(ID)).unwrap();
            v3.verify().unwrap();
            assert_eq!(contents(&v3), contents(&seg));
            seen += 1;
        }
    }
    assert!(seen >= 3, "{seen} fixture segments");
}

#[test]
fn combine_writes_what_the_builder_writes_in_version_3() {
    let built = build(Some(ID), true).into_vec();
    let seg = open_as(built.clone(), Some(ID)).unwrap();
    let opts = SegmentOptions {
        bucket_cap: Some(2),
        ..SegmentOptions::default()
    };
    let combined = combine_segments_as(&[&seg], |_| true, &opts, Some(ID)).unwrap();
    assert!(combined.into_vec() == built);
    let other = FileIdentity {
        file_id: 0x0d,
        ..ID
    };
    let renumbered = combine_segments_as(&[&seg], |d| d != 101, &opts, Some(other)).unwrap();
    let renumbered = open_as(renumbered.into_vec(), Some(other)).unwrap();
    renumbered.verify().unwrap();
    assert_eq!(renumbered.doc_count(), seg.doc_count() - 1);
}

#[test]
fn a_wrong_identity_is_corruption_at_its_field() {
    let v3 = build(Some(ID), true).into_vec();
    let other_db = FileIdentity {
        db_id: DbId([9; 16]),
        ..ID
    };
    let other_file = FileIdentity {
        file_id: 0x0d,
        ..ID
    };
    assert_eq!(corruption_offset(open_as(v3.clone(), Some(other_db))), 56);
    assert_eq!(corruption_offset(open_as(v3.clone(), Some(other_file))), 72);
    let err = open_as(v3.clone(), Some(other_db)).unwrap_err().to_string();
    assert!(err.contains("offset 56"), "{err}");
    assert!(err.contains(&ID.db_id.to_string()) && err.contains(&other_db.db_id.to_string()));
    let err = open_as(v3.clone(), Some(other_file))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("000000000000000c") && err.contains("000000000000000d"),
        "{err}"
    );
    // A version-3 segment in a database whose files carry no identity, and the reverse.
    assert_eq!(corruption_offset(open_as(v3.clone(), None)), 8);
    assert_eq!(corruption_offset(Segment::open(v3, "seg")), 8);
    let v2 = build(None, true).into_vec();
    assert_eq!(corruption_offset(open_as(v2, Some(ID))), 8);
}

#[test]
fn reserved_flags_with_valid_checksums_are_unsupported() {
    let v3 = build(Some(ID), true).into_vec();
    // Bits 2 (KEEP), 3 (SET_SIZE) and 4 (BAND_FILTER) are built: see below.
    for bit in 5..32 {
        let mut bytes = v3.clone();
        let flags = FLAG_SHINGLES | 1 << bit;
        bytes[12..16].copy_from_slice(&flags.to_le_bytes());
        fix_meta_crc(&mut bytes, 96);
        match open_as(bytes, Some(ID)) {
            Err(Error::Unsupported { feature, .. }) => {
                assert!(
                    feature.contains(&format!("bit {bit}")),
                    "bit {bit}: {feature}"
                );
            }
            other => panic!("flag bit {bit}: {:?}", other.map(|_| ())),
        }
    }
    // The SHINGLES, EXACT_HASH, KEEP, SET_SIZE and BAND_FILTER bits must say what the sections
    // hold: cleared, or set on a segment without the section, it is corruption.
    for (sets, flags) in [
        (true, 0u32),
        (false, FLAG_SHINGLES),
        (true, FLAG_SHINGLES | FLAG_EXACT_HASH),
        (false, FLAG_EXACT_HASH),
        (false, FLAG_BAND_FILTER),
        (false, 1 << 2),
        (true, FLAG_SHINGLES | 1 << 3),
        (false, 1 << 3),
    ] {
        let mut bytes = build(Some(ID), sets).into_vec();
        bytes[12..16].copy_from_slice(&flags.to_le_bytes());
        fix_meta_crc(&mut bytes, 96);
        assert!(open_as(bytes, Some(ID)).unwrap_err().is_corruption());
    }
}

#[test]
fn unknown_section_kinds_and_columns_the_flags_deny_are_corruption() {
    let v3 = build(Some(ID), true).into_vec();
    // With 3 bands and sets: section 6 is HOT, 7 SHINGLES, 8 SIGNATURES. Kind 13, unknown, is
    // corruption; so are EXACT_HASH (9), KEEP (10), SET_SIZE (11) and BAND_FILTER (12) where
    // the flags say there are none, and a column kind in version 2, which defines none.
    for kind in [13u16, 9, 10, 11, 12] {
        let mut bytes = v3.clone();
        let at = entry_at(&bytes, 8);
        bytes[at..at + 2].copy_from_slice(&kind.to_le_bytes());
        fix_meta_crc(&mut bytes, 96);
        assert!(open_as(bytes, Some(ID)).unwrap_err().is_corruption());
    }
    let mut v2 = build(None, true).into_vec();
    let at = entry_at(&v2, 8);
    v2[at..at + 2].copy_from_slice(&9u16.to_le_bytes());
    fix_meta_crc(&mut v2, 64);
    assert!(open_as(v2, None).unwrap_err().is_corruption());
}

#[test]
fn reserved_header_bytes_with_valid_checksums_are_corruption() {
    let v3 = build(Some(ID), false).into_vec();
    for (at, reported) in [(52, 52), (55, 52), (80, 80), (95, 80)] {
        let mut bytes = v3.clone();
        bytes[at] = 1;
        fix_meta_crc(&mut bytes, 96);
        assert_eq!(corruption_offset(open_as(bytes, Some(ID))), reported);
    }
    assert_eq!(FILE_ID_OFFSET + 8, 80);
}

/// Opens and, if that passes, reads everything: what a damaged file must fail.
pub(super) fn open_and_verify(bytes: Vec<u8>) -> crate::Result<()> {
    let seg = open_as(bytes, Some(ID))?;
    seg.verify()
}

#[test]
fn every_truncation_and_bit_flip_of_version_3_is_corruption() {
    // With shingle sets, and with band filters.
    for bytes in [
        build(Some(ID), true).into_vec(),
        build_with(Some(ID), false, true).into_vec(),
    ] {
        every_truncation_and_bit_flip_is_corruption(&bytes);
    }
}

fn every_truncation_and_bit_flip_is_corruption(bytes: &[u8]) {
    assert!(bytes.len() < 4096, "one block: {}", bytes.len());
    for len in 0..bytes.len() {
        match open_and_verify(bytes[..len].to_vec()) {
            Err(Error::Corruption { .. }) => {}
            other => panic!("cut at {len}: {other:?}"),
        }
    }
    for at in 0..bytes.len() {
        for bit in 0..8 {
            let mut bad = bytes.to_vec();
            bad[at] ^= 1 << bit;
            match open_and_verify(bad) {
                Err(Error::Corruption { .. }) => {}
                other => panic!("bit {bit} of byte {at}: {other:?}"),
            }
        }
    }
}

#[test]
fn a_damaged_data_byte_is_found_on_first_read_from_offset_96() {
    let bytes = build(Some(ID), false).into_vec();
    // Byte 96 is the first key byte: the block check covers it, and the read fails.
    let mut bad = bytes.clone();
    bad[96] ^= 0x20;
    let seg = open_as(bad, Some(ID)).unwrap();
    let err = seg.key_of(100).unwrap_err();
    assert!(err.is_corruption(), "{err}");
    let seg = open_as(bytes, Some(ID)).unwrap();
    assert_eq!(seg.key_of(100).unwrap(), Some(&b"https://100.example/"[..]));
}

/// A small version-3 segment with the EXACT_HASH column: 70 rows (two presence words), every
/// third without a hash; with shingle sets when `sets`.
fn build_with_exact(sets: bool) -> (Vec<u8>, Vec<Option<u128>>) {
    let mut b = SegmentBuilder::with_signatures(2, 0, 8)
        .unwrap()
        .with_exact_hashes();
    if sets {
        b = b.with_sets();
    }
    let mut hashes = Vec::new();
    for docno in 0..70u64 {
        let key = format!("k{docno}");
        b.add_signed(
            docno,
            key.as_bytes(),
            &[docno << 32, 1 << 32],
            &docno.to_le_bytes(),
        )
        .unwrap();
        if sets {
            b.add_set(&shingle_codec::encode(&[docno as u32])).unwrap();
        }
        let h = (docno % 3 != 0).then(|| (u128::from(docno) << 64) | 0xabcd);
        b.add_exact_hash(h).unwrap();
        hashes.push(h);
    }
    let parts = b
        .finish_parts_as(&SegmentOptions::default(), Some(ID))
        .unwrap();
    (parts.into_vec(), hashes)
}

/// The offset of the EXACT_HASH section in `bytes` (entry `index` of the table).
fn section_start(bytes: &[u8], index: usize) -> usize {
    let at = entry_at(bytes, index);
    assert_eq!(u16::from_le_bytes([bytes[at], bytes[at + 1]]), 9);
    u64::from_le_bytes(bytes[at + 8..at + 16].try_into().unwrap()) as usize
}

#[test]
fn the_exact_hash_column_round_trips_and_combines() {
    for sets in [false, true] {
        let (bytes, hashes) = build_with_exact(sets);
        let flags = u32::from_le_bytes(bytes[12..16].try_into().unwrap());
        let want = FLAG_EXACT_HASH | if sets { FLAG_SHINGLES } else { 0 };
        assert_eq!(flags, want);
        let seg = open_as(bytes, Some(ID)).unwrap();
        seg.verify().unwrap();
        assert!(seg.stores_exact_hashes());
        for (row, h) in hashes.iter().enumerate() {
            assert_eq!(seg.exact_hash_at(row as u64).unwrap(), *h, "row {row}");
            assert_eq!(seg.exact_hash_of(row as u64).unwrap(), *h);
        }
        // Combining drops the dead rows' hashes and keeps the others in their rows.
        let parts = combine_segments_as(
            &[&seg],
            |d| d % 2 == 0,
            &SegmentOptions::default(),
            Some(ID),
        )
        .unwrap();
        let combined = open_as(parts.into_vec(), Some(ID)).unwrap();
        combined.verify().unwrap();
        for docno in (0..70u64).step_by(2) {
            let want = hashes[docno as usize];
            assert_eq!(combined.exact_hash_of(docno).unwrap(), want);
        }
    }
    // Only a version-3 segment has the column; a segment without it reads no hash.
    let b = SegmentBuilder::with_signatures(2, 0, 8)
        .unwrap()
        .with_exact_hashes();
    assert!(b.finish_parts_as(&SegmentOptions::default(), None).is_err());
    let plain = open_as(build(Some(ID), true).into_vec(), Some(ID)).unwrap();
    assert!(!plain.stores_exact_hashes());
    assert_eq!(plain.exact_hash_at(0).unwrap(), None);
}

/// A presence bit past the last row, bytes in a row without a hash, and a hash of 0 are
/// corruption naming their offset, even under valid checksums; and every bit flip of the
/// column is found by verify.
#[test]
fn exact_hash_damage_is_corruption_at_its_offset() {
    let (bytes, _) = build_with_exact(false);
    // 2 bands, no sets: HOT is section 5, EXACT_HASH 6.
    let start = section_start(&bytes, 6);
    let values = start + 16;
    let fixed = |mut bad: Vec<u8>| {
        // Recompute the section and block checksums as a writer that meant it would have.
        let at = entry_at(&bad, 6);
        let len = u64::from_le_bytes(bad[at + 16..at + 24].try_into().unwrap()) as usize;
        let crc = crc32fast::hash(&bad[start..start + len]);
        bad[at + 32..at + 36].copy_from_slice(&crc.to_le_bytes());
        let ck = entry_at(&bad, 8);
        let ck_at = u64::from_le_bytes(bad[ck + 8..ck + 16].try_into().unwrap()) as usize;
        let block = crc32fast::hash(&bad[96..ck_at]);
        bad[ck_at..ck_at + 4].copy_from_slice(&block.to_le_bytes());
        let table_crc = crc32fast::hash(&bad[ck_at..ck_at + 4]);
        bad[ck + 32..ck + 36].copy_from_slice(&table_crc.to_le_bytes());
        fix_meta_crc(&mut bad, 96);
        bad
    };
    // Row 70 does not exist: bit 6 of the second word.
    let mut past = bytes.clone();
    past[start + 8] |= 1 << 6;
    // Row 0 has no hash.
    let mut stray = bytes.clone();
    stray[values] = 1;
    // Row 1 has one: make it 0.
    let mut zero = bytes.clone();
    zero[values + 16..values + 32].fill(0);
    for (bad, offset) in [(past, start + 8), (stray, values), (zero, values + 16)] {
        let bad = fixed(bad);
        assert!(bad.len() < 4096);
        match open_and_verify(bad) {
            Err(Error::Corruption { offset: got, .. }) => assert_eq!(got, offset as u64),
            other => panic!("expected corruption at {offset}: {other:?}"),
        }
    }
    for at in start..start + 16 + 70 * 16 {
        let mut bad = bytes.clone();
        bad[at] ^= 0x10;
        assert!(
            matches!(open_and_verify(bad), Err(Error::Corruption { .. })),
            "{at}"
        );
    }
}

/// Both columns, EXACT_HASH then SET_SIZE (kind 11, 4-byte rows, a size of 0 a present
/// value): read back, combined, and a stray byte in a row without a size is corruption at
/// its offset.
#[test]
fn the_set_size_column_round_trips_combines_and_checks_absent_rows() {
    use super::{ColumnSet, DocColumns};
    let columns = ColumnSet {
        exact: true,
        keep: None,
        set_size: true,
    };
    let mut b = SegmentBuilder::with_signatures(2, 0, 8)
        .unwrap()
        .with_columns(columns);
    let mut want = Vec::new();
    for docno in 0..70u64 {
        let key = format!("k{docno}");
        b.add_signed(
            docno,
            key.as_bytes(),
            &[docno << 32, 1 << 32],
            &docno.to_le_bytes(),
        )
        .unwrap();
        let values = DocColumns {
            exact: (docno % 3 != 0).then_some(u128::from(docno) + 1),
            keep: None,
            set_size: (docno % 4 != 0).then(|| docno as u32 * 7 - 7),
        };
        b.add_columns(values.clone()).unwrap();
        want.push(values);
    }
    let bytes = b
        .finish_parts_as(&SegmentOptions::default(), Some(ID))
        .unwrap()
        .into_vec();
    let flags = u32::from_le_bytes(bytes[12..16].try_into().unwrap());
    assert_eq!(flags, FLAG_EXACT_HASH | 1 << 3);
    // 2 bands: HOT is section 5, EXACT_HASH 6, SET_SIZE 7.
    let at = entry_at(&bytes, 7);
    assert_eq!(u16::from_le_bytes([bytes[at], bytes[at + 1]]), 11);
    let start = u64::from_le_bytes(bytes[at + 8..at + 16].try_into().unwrap()) as usize;
    let seg = open_as(bytes.clone(), Some(ID)).unwrap();
    seg.verify().unwrap();
    assert_eq!(seg.columns(), columns);
    for (row, v) in want.iter().enumerate() {
        assert_eq!(seg.columns_at(row as u64).unwrap(), *v, "row {row}");
    }
    assert_eq!(seg.set_size_at(1).unwrap(), Some(0));
    let parts = combine_segments_as(
        &[&seg],
        |d| d % 2 == 1,
        &SegmentOptions::default(),
        Some(ID),
    )
    .unwrap();
    let combined = open_as(parts.into_vec(), Some(ID)).unwrap();
    combined.verify().unwrap();
    for docno in (1..70u64).step_by(2) {
        assert_eq!(combined.columns_of(docno).unwrap(), want[docno as usize]);
    }
    // Row 0 has no size: a byte there is corruption (the block checksum finds it first).
    let mut stray = bytes;
    stray[start + 16] = 1;
    assert!(matches!(
        open_and_verify(stray),
        Err(Error::Corruption { .. })
    ));
}

/// The KEEP column of each type (kind 10, flag bit 2, `width_a` = the type): values and
/// absent rows read back, survive combining, and a flipped byte of the section is
/// corruption.
#[test]
fn the_keep_column_round_trips_and_combines_for_every_type() {
    use super::{ColumnSet, DocColumns, KeepType, KeepValue};
    let value = |ty: KeepType, docno: u64| match ty {
        KeepType::I64 => KeepValue::Int(docno as i64 * 1_000_003 - 35_000_000),
        KeepType::F64 => KeepValue::Float(docno as f64 / 7.0 - 3.0),
        KeepType::Str => KeepValue::Str(
            format!("v{}", "é".repeat(docno as usize % 5))
                .into_bytes()
                .into(),
        ),
    };
    for ty in [KeepType::I64, KeepType::F64, KeepType::Str] {
        let columns = ColumnSet {
            exact: false,
            keep: Some(ty),
            set_size: false,
        };
        let mut b = SegmentBuilder::with_signatures(2, 0, 8)
            .unwrap()
            .with_columns(columns);
        let mut want = Vec::new();
        for docno in 0..70u64 {
            let key = format!("k{docno}");
            b.add_signed(
                docno,
                key.as_bytes(),
                &[docno << 32, 1 << 32],
                &docno.to_le_bytes(),
            )
            .unwrap();
            let values = DocColumns {
                keep: (docno % 3 != 1).then(|| value(ty, docno)),
                ..DocColumns::default()
            };
            b.add_columns(values.clone()).unwrap();
            want.push(values);
        }
        let bytes = b
            .finish_parts_as(&SegmentOptions::default(), Some(ID))
            .unwrap()
            .into_vec();
        let flags = u32::from_le_bytes(bytes[12..16].try_into().unwrap());
        assert_eq!(flags, 1 << 2, "{ty:?}");
        // 2 bands: HOT is section 5, KEEP 6.
        let at = entry_at(&bytes, 6);
        assert_eq!(u16::from_le_bytes([bytes[at], bytes[at + 1]]), 10);
        let start = u64::from_le_bytes(bytes[at + 8..at + 16].try_into().unwrap()) as usize;
        let seg = open_as(bytes.clone(), Some(ID)).unwrap();
        seg.verify().unwrap();
        assert_eq!(seg.columns(), columns);
        for (row, v) in want.iter().enumerate() {
            assert_eq!(seg.columns_at(row as u64).unwrap(), *v, "{ty:?} row {row}");
        }
        let parts = combine_segments_as(
            &[&seg],
            |d| d % 2 == 0,
            &SegmentOptions::default(),
            Some(ID),
        )
        .unwrap();
        let combined = open_as(parts.into_vec(), Some(ID)).unwrap();
        combined.verify().unwrap();
        for docno in (0..70u64).step_by(2) {
            assert_eq!(
                combined.columns_of(docno).unwrap(),
                want[docno as usize],
                "{ty:?}"
            );
        }
        // The presence word of rows 0..64, then a value or an offset: flipping either is
        // corruption.
        for off in [start, start + 40] {
            let mut flipped = bytes.clone();
            flipped[off] ^= 0x10;
            assert!(
                matches!(open_and_verify(flipped), Err(Error::Corruption { .. })),
                "{ty:?} byte {off}"
            );
        }
    }
}

/// `signature_rows` gives the rows' signatures back to back and refuses a range outside the
/// segment; a combine that drops documents here and there (breaking the runs of rows it copies
/// at once) keeps every survivor's signature, and its parts count the survivors.
#[test]
fn signature_runs_survive_a_combine_with_scattered_deletions() {
    let seg = open_as(build(Some(ID), false).into_vec(), Some(ID)).unwrap();
    let n = seg.doc_count();
    let rows: Vec<u8> = (3..9)
        .flat_map(|r| seg.signature_at(r).unwrap().to_vec())
        .collect();
    assert_eq!(seg.signature_rows(3, 9).unwrap(), rows.as_slice());
    assert!(seg.signature_rows(0, 0).unwrap().is_empty());
    assert!(seg.signature_rows(0, n + 1).is_err());
    assert!(seg.signature_rows(5, 4).is_err());

    let dropped = |d: u64| d == 100 || d == 107 || d == 108 || d.is_multiple_of(11) || d == 139;
    let opts = SegmentOptions {
        bucket_cap: Some(2),
        ..SegmentOptions::default()
    };
    let parts = combine_segments_as(&[&seg], |d| !dropped(d), &opts, Some(ID)).unwrap();
    let survivors = seg
        .docs()
        .filter(|d| !dropped(d.as_ref().unwrap().0))
        .count() as u64;
    assert_eq!(parts.doc_count, survivors);
    let combined = open_as(parts.into_vec(), Some(ID)).unwrap();
    combined.verify().unwrap();
    for doc in seg.docs() {
        let docno = doc.unwrap().0;
        let want = (!dropped(docno)).then(|| seg.signature_of(docno).unwrap().unwrap());
        assert_eq!(combined.signature_of(docno).unwrap(), want, "docno {docno}");
    }
}
