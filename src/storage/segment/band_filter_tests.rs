//! Band filters in version-3 segments: written by the builder and by combine alike, read
//! without changing any answer, skipping a band's table for a key the filter rules out, and
//! checked (header at open, every key present at verify) so that damage is corruption.

use super::band_filter::{BLOCK_BYTES, HEADER_BYTES};
use super::format::{BLOCK_LEN, FLAG_BAND_FILTER};
use super::test_rng::next;
use super::v3_tests::{
    ID, build, build_with, contents, entry_at, fix_meta_crc, open_and_verify, open_as,
};
use super::*;
use crate::Error;

/// With 3 bands, no sets and filters: HOT is section 6, the filters 7..10, then SIGNATURES
/// and CHECKSUMS.
const FIRST_FILTER: usize = 7;

fn filtered() -> Vec<u8> {
    build_with(Some(ID), false, true).into_vec()
}

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap())
}

/// `(offset, len)` of section `i`.
fn section(bytes: &[u8], i: usize) -> (usize, usize) {
    let at = entry_at(bytes, i);
    (
        u64_at(bytes, at + 8) as usize,
        u64_at(bytes, at + 16) as usize,
    )
}

/// Every checksum recomputed (sections, blocks, the block table, the metadata), as a writer
/// that meant the bytes would have written them.
fn reseal(bytes: &mut [u8]) {
    let footer = bytes.len() - 32;
    let nsec = u32::from_le_bytes(bytes[footer + 8..footer + 12].try_into().unwrap()) as usize;
    for i in 0..nsec - 1 {
        let (off, len) = section(bytes, i);
        let crc = crc32fast::hash(&bytes[off..off + len]);
        let at = entry_at(bytes, i);
        bytes[at + 32..at + 36].copy_from_slice(&crc.to_le_bytes());
    }
    let (table, len) = section(bytes, nsec - 1);
    for j in 0..len / 4 {
        let (from, to) = ((j * BLOCK_LEN).max(96), ((j + 1) * BLOCK_LEN).min(table));
        let crc = crc32fast::hash(&bytes[from..to]);
        bytes[table + 4 * j..table + 4 * j + 4].copy_from_slice(&crc.to_le_bytes());
    }
    let crc = crc32fast::hash(&bytes[table..table + len]);
    let at = entry_at(bytes, nsec - 1);
    bytes[at + 32..at + 36].copy_from_slice(&crc.to_le_bytes());
    fix_meta_crc(bytes, 96);
}

#[test]
fn filters_change_no_answer_and_combine_writes_what_the_builder_writes() {
    let bytes = filtered();
    let flags = u32::from_le_bytes(bytes[12..16].try_into().unwrap());
    assert_eq!(flags, FLAG_BAND_FILTER);
    for i in 0..3 {
        let at = entry_at(&bytes, FIRST_FILTER + i);
        assert_eq!(u16::from_le_bytes([bytes[at], bytes[at + 1]]), 12);
        assert_eq!((bytes[at + 2], u32::from(bytes[at + 4])), (1, i as u32));
    }
    let seg = open_as(bytes.clone(), Some(ID)).unwrap();
    seg.verify().unwrap();
    assert!(seg.has_band_filters());
    let plain = open_as(build(Some(ID), false).into_vec(), Some(ID)).unwrap();
    assert!(!plain.has_band_filters());
    assert_eq!(contents(&seg), contents(&plain));
    // Keys the segment lacks: the same (empty) answers, whether the filter or the table says so.
    let mut rng = 5u64;
    for _ in 0..2000 {
        let (band, key) = ((next(&mut rng) % 3) as usize, next(&mut rng));
        let mut a = Vec::new();
        let mut b = Vec::new();
        seg.postings_into(band, key, &mut a).unwrap();
        plain.postings_into(band, key, &mut b).unwrap();
        assert_eq!(a, b);
        assert_eq!(seg.postings(band, key).unwrap().count(), a.len());
        assert_eq!(
            seg.hot_bucket(band, key).unwrap(),
            plain.hot_bucket(band, key).unwrap()
        );
    }
    let opts = SegmentOptions {
        bucket_cap: Some(2),
        band_filters: true,
    };
    let combined = combine_segments_as(&[&seg], |_| true, &opts, Some(ID)).unwrap();
    assert!(combined.into_vec() == bytes);
    // Only a version-3 segment has filters.
    let b = SegmentBuilder::with_signatures(2, 0, 8).unwrap();
    assert!(b.finish_parts_as(&opts, None).is_err());
}

/// A segment of 20,000 documents in 2 bands, with filters when `filters`.
fn large(filters: bool) -> Segment {
    let mut rng = 3u64;
    let mut b = SegmentBuilder::with_signatures(2, 0, 8).unwrap();
    for docno in 0..20_000u64 {
        let keys = [next(&mut rng), next(&mut rng)];
        b.add_signed(docno, &docno.to_le_bytes(), &keys, &[0; 8])
            .unwrap();
    }
    let opts = SegmentOptions {
        bucket_cap: None,
        band_filters: filters,
    };
    let parts = b.finish_parts_as(&opts, Some(ID)).unwrap();
    open_as(parts.into_vec(), Some(ID)).unwrap()
}

/// The blocks whose checksum a read has checked so far.
fn checked_blocks(seg: &Segment) -> Vec<usize> {
    let words = seg
        .checked
        .iter()
        .map(|w| w.load(std::sync::atomic::Ordering::Relaxed));
    words
        .enumerate()
        .flat_map(|(i, w)| {
            (0..64)
                .filter(move |b| w & (1 << b) != 0)
                .map(move |b| i * 64 + b)
        })
        .collect()
}

#[test]
fn a_lookup_the_filter_rules_out_reads_no_byte_of_the_band_table() {
    let seg = large(true);
    let filter_blocks: Vec<(usize, usize)> = seg
        .layout
        .filters
        .iter()
        .map(|f| (f.start / BLOCK_LEN, (f.end - 1) / BLOCK_LEN))
        .collect();
    let in_filter = |block: usize| filter_blocks.iter().any(|&(a, b)| (a..=b).contains(&block));
    let mut rng = 99u64;
    let (mut ruled_out, mut tried) = (0, 0);
    let mut out = Vec::new();
    while tried < 1000 {
        let (band, key) = ((next(&mut rng) % 2) as usize, next(&mut rng));
        tried += 1;
        if seg.band_may_hold(band, band_key32(key)).unwrap() {
            continue;
        }
        ruled_out += 1;
        seg.postings_into(band, key, &mut out).unwrap();
        assert!(seg.hot_bucket(band, key).unwrap().is_none());
    }
    assert!(out.is_empty());
    // About 1 % false positives at 10 bits a key.
    assert!(ruled_out > 950, "{ruled_out} of {tried} ruled out");
    let read = checked_blocks(&seg);
    assert!(!read.is_empty());
    assert!(
        read.iter().all(|&b| in_filter(b)),
        "{read:?} {filter_blocks:?}"
    );
    // Without filters the same lookups read the band tables.
    let plain = large(false);
    plain.postings_into(0, 1, &mut out).unwrap();
    assert!(!checked_blocks(&plain).is_empty());
}

#[test]
fn another_filter_kind_is_unsupported() {
    for kind in [2u8, 3, 0, 200] {
        let mut bytes = filtered();
        let at = entry_at(&bytes, FIRST_FILTER + 1);
        bytes[at + 2] = kind;
        fix_meta_crc(&mut bytes, 96);
        match open_as(bytes, Some(ID)) {
            Err(Error::Unsupported { feature, .. }) => {
                assert!(
                    feature.contains(&format!("band filter kind {kind}")),
                    "{feature}"
                );
            }
            other => panic!("kind {kind}: {:?}", other.map(|_| ())),
        }
    }
}

#[test]
fn a_damaged_filter_header_or_size_is_corruption_at_its_offset() {
    let bytes = filtered();
    let (start, len) = section(&bytes, FIRST_FILTER);
    assert_eq!((len - HEADER_BYTES) % BLOCK_BYTES, 0);
    // Under valid checksums: a block count the length does not hold, no probes, too many.
    for (field, value) in [(8, 2u32), (8, 0), (12, 0), (12, 17), (8, u32::MAX)] {
        let mut bad = bytes.clone();
        bad[start + field..start + field + 4].copy_from_slice(&value.to_le_bytes());
        reseal(&mut bad);
        match open_as(bad, Some(ID)) {
            Err(Error::Corruption { offset, detail, .. }) => {
                assert_eq!(offset, start as u64, "{detail}");
                assert!(detail.contains("band filter"), "{detail}");
            }
            other => panic!("{value} at {field}: {:?}", other.map(|_| ())),
        }
    }
    // A section length that is not a header and whole blocks.
    let mut short = bytes.clone();
    let at = entry_at(&short, FIRST_FILTER);
    short[at + 16..at + 24].copy_from_slice(&(len as u64 - 1).to_le_bytes());
    fix_meta_crc(&mut short, 96);
    assert!(open_as(short, Some(ID)).unwrap_err().is_corruption());
}

#[test]
fn verify_finds_a_filter_that_hides_a_key_or_miscounts() {
    let bytes = filtered();
    let (start, len) = section(&bytes, FIRST_FILTER);
    let mut hiding = bytes.clone();
    hiding[start + HEADER_BYTES..start + len].fill(0);
    reseal(&mut hiding);
    let seg = open_as(hiding, Some(ID)).unwrap();
    let err = seg.verify().unwrap_err();
    assert!(
        err.is_corruption() && err.to_string().contains("hides key"),
        "{err}"
    );
    let mut miscount = bytes.clone();
    let at = entry_at(&miscount, FIRST_FILTER + 2);
    let count = u64_at(&miscount, at + 24);
    miscount[at + 24..at + 32].copy_from_slice(&(count + 1).to_le_bytes());
    fix_meta_crc(&mut miscount, 96);
    let (start, _) = section(&bytes, FIRST_FILTER + 2);
    match open_and_verify(miscount) {
        Err(Error::Corruption { offset, .. }) => assert_eq!(offset, start as u64),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_damaged_filter_header_block_keeps_the_file_open_and_fails_its_reads() {
    let mut bytes = filtered();
    let (start, _) = section(&bytes, FIRST_FILTER);
    bytes[start] ^= 0x01;
    let seg = open_as(bytes, Some(ID)).unwrap();
    let mut out = Vec::new();
    let err = seg.postings_into(0, 1 << 32, &mut out).unwrap_err();
    assert!(err.is_corruption(), "{err}");
    assert!(seg.hot_bucket(0, 1 << 32).unwrap_err().is_corruption());
    assert!(seg.verify().unwrap_err().is_corruption());
}
