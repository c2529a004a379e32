//! Segment format tests: encode/decode against a brute-force model, merge against a rebuild
//! from the live union, deterministic bucket caps, and damaged bytes (truncation, single-byte
//! flips, structural damage behind valid checksums) that must give errors, never panics or
//! silently different answers.

mod common;

use std::collections::BTreeMap;

use mhdb::Error;
use mhdb::storage::segment::{
    Segment, SegmentBuilder, SegmentOptions, band_key32, cap_rank, combine_segments as merge,
};

use common::rng::SplitMix64;

#[derive(Clone, Debug)]
struct Doc {
    docno: u64,
    key: Vec<u8>,
    bands: Vec<u64>,
}

/// Random docs in `[base, base + span)` with band keys drawn from a small pool (many
/// collisions), some differing only in the low 32 bits (same stored bucket), and a few
/// duplicate document keys.
fn random_docs(
    rng: &mut SplitMix64,
    base: u64,
    span: u64,
    density: u64,
    num_bands: usize,
) -> Vec<Doc> {
    let pool: Vec<u64> = (0..1 + rng.below(40)).map(|_| rng.next_u64()).collect();
    let mut docs = Vec::new();
    for docno in base..base + span {
        if rng.below(100) >= density {
            continue;
        }
        let key = if rng.below(20) == 0 && docno > base {
            format!("dup-{}", rng.below(3)).into_bytes()
        } else {
            let len = rng.below(40) as usize;
            let mut k = format!("k{docno}/").into_bytes();
            k.extend((0..len).map(|_| rng.below(256) as u8));
            k
        };
        let bands = (0..num_bands)
            .map(|_| match rng.below(4) {
                0 => rng.next_u64(),
                1 => pool[rng.below(pool.len() as u64) as usize] ^ rng.below(4),
                _ => pool[rng.below(pool.len() as u64) as usize],
            })
            .collect();
        docs.push(Doc { docno, key, bands });
    }
    docs
}

fn build(num_bands: usize, base: u64, end: u64, docs: &[Doc], cap: Option<u32>) -> Vec<u8> {
    build_signed(num_bands, base, end, docs, cap, 0)
}

/// A document's stand-in signature of `record` bytes, different for every docno.
fn signature_of(docno: u64, record: usize) -> Vec<u8> {
    (0..record)
        .map(|i| (docno.wrapping_mul(31) >> (i % 8)) as u8 ^ i as u8)
        .collect()
}

/// [`build`], storing a `record`-byte signature per document when `record` > 0.
fn build_signed(
    num_bands: usize,
    base: u64,
    end: u64,
    docs: &[Doc],
    cap: Option<u32>,
    record: usize,
) -> Vec<u8> {
    let mut b = if record == 0 {
        SegmentBuilder::new(num_bands, base).unwrap()
    } else {
        SegmentBuilder::with_signatures(num_bands, base, record).unwrap()
    };
    b.set_end_docno(end).unwrap();
    for d in docs {
        if record == 0 {
            b.add(d.docno, &d.key, &d.bands).unwrap();
        } else {
            let sig = signature_of(d.docno, record);
            b.add_signed(d.docno, &d.key, &d.bands, &sig).unwrap();
        }
    }
    b.finish(&SegmentOptions {
        bucket_cap: cap,
        ..SegmentOptions::default()
    })
    .unwrap()
}

/// The model of one band: key32 → all docnos (ascending), before any cap.
fn model_buckets(docs: &[Doc], band: usize) -> BTreeMap<u32, Vec<u64>> {
    let mut m: BTreeMap<u32, Vec<u64>> = BTreeMap::new();
    for d in docs {
        m.entry(band_key32(d.bands[band]))
            .or_default()
            .push(d.docno);
    }
    m
}

/// The `keep` of `docnos` a cap keeps: those whose keys hash lowest (ties: lower docno),
/// ascending.
fn lowest_ranked(docs: &[Doc], docnos: &[u64], keep: usize) -> Vec<u64> {
    let key_of = |d: u64| &docs.iter().find(|x| x.docno == d).unwrap().key;
    let mut ranked: Vec<(u64, u64)> = docnos.iter().map(|&d| (cap_rank(key_of(d)), d)).collect();
    ranked.sort_unstable();
    let mut kept: Vec<u64> = ranked[..keep].iter().map(|&(_, d)| d).collect();
    kept.sort_unstable();
    kept
}

fn postings(seg: &Segment, band: usize, key: u64) -> Vec<u64> {
    seg.postings(band, key)
        .unwrap()
        .map(|d| d.unwrap())
        .collect()
}

/// Checks every query of `seg` against the docs it was built from.
fn check_against_model(seg: &Segment, docs: &[Doc], cap: Option<u32>, rng: &mut SplitMix64) {
    seg.verify().unwrap();
    assert_eq!(seg.doc_count(), docs.len() as u64);
    let listed: Vec<(u64, Vec<u8>)> = seg
        .docs()
        .map(|d| d.map(|(n, k)| (n, k.to_vec())).unwrap())
        .collect();
    let expected: Vec<(u64, Vec<u8>)> = docs.iter().map(|d| (d.docno, d.key.clone())).collect();
    assert_eq!(listed, expected);

    for docno in seg.base_docno().saturating_sub(2)..seg.end_docno() + 2 {
        let want = docs
            .iter()
            .find(|d| d.docno == docno)
            .map(|d| d.key.as_slice());
        assert_eq!(seg.key_of(docno).unwrap(), want, "key_of({docno})");
    }
    for d in docs {
        let newest = docs
            .iter()
            .filter(|e| e.key == d.key)
            .map(|e| e.docno)
            .max();
        assert_eq!(seg.find_key(&d.key).unwrap(), newest);
    }
    assert_eq!(seg.find_key(b"absent key").unwrap(), None);

    let mut hot_total = 0;
    for band in 0..seg.num_bands() {
        let model = model_buckets(docs, band);
        let mut stored = 0;
        for (&k32, all) in &model {
            let keep = cap.map_or(all.len(), |c| all.len().min(c as usize));
            let hot = (keep < all.len()).then_some(all.len() as u64);
            // Any band key with these top 32 bits finds the bucket.
            let key = (u64::from(k32) << 32) | rng.below(1 << 32);
            assert_eq!(
                postings(seg, band, key),
                lowest_ranked(docs, all, keep),
                "band {band} key32 {k32:#x}"
            );
            assert_eq!(seg.hot_bucket(band, key).unwrap(), hot);
            stored += keep as u64;
            hot_total += u64::from(hot.is_some());
        }
        for _ in 0..20 {
            let key = rng.next_u64();
            if !model.contains_key(&band_key32(key)) {
                assert!(postings(seg, band, key).is_empty());
                assert_eq!(seg.hot_bucket(band, key).unwrap(), None);
            }
        }
        assert_eq!(seg.band_postings(band), Some(stored));
        let stats = seg.bucket_stats(band).unwrap();
        assert_eq!(stats.postings, stored);
        assert_eq!(stats.buckets, model.len() as u64);
        let max = model.values().map(|v| v.len() as u64).max().unwrap_or(0);
        assert_eq!(stats.max(), max);
    }
    assert_eq!(seg.hot_count(), hot_total);
    assert_eq!(seg.hot_buckets().count() as u64, hot_total);
    assert!(seg.postings(seg.num_bands(), 0).is_err());
}

#[test]
fn roundtrip_matches_model() {
    for seed in 0..40u64 {
        let mut rng = SplitMix64(seed);
        let num_bands = 1 + rng.below(5) as usize;
        let base = if seed % 3 == 0 { 0 } else { rng.below(1 << 40) };
        let span = [0, 1, 2, 17, 300, 3000][seed as usize % 6];
        let density = 1 + rng.below(100);
        let docs = random_docs(&mut rng, base, span, density, num_bands);
        let cap = [None, Some(1), Some(3), Some(1000)][(seed / 6) as usize % 4];
        let end = base + span + rng.below(3);
        let bytes = build(num_bands, base, end, &docs, cap);
        let seg = Segment::open(bytes, "roundtrip.bands").unwrap();
        assert_eq!((seg.base_docno(), seg.end_docno()), (base, end));
        assert_eq!(seg.bucket_cap(), cap);
        check_against_model(&seg, &docs, cap, &mut rng);
    }
}

#[test]
fn empty_segment_works() {
    let bytes = SegmentBuilder::new(3, 42)
        .unwrap()
        .finish(&SegmentOptions::default())
        .unwrap();
    let seg = Segment::open(bytes, "empty.bands").unwrap();
    seg.verify().unwrap();
    assert_eq!(
        (seg.doc_count(), seg.base_docno(), seg.end_docno()),
        (0, 42, 42)
    );
    assert_eq!(seg.docs().count(), 0);
    assert_eq!(seg.find_key(b"").unwrap(), None);
    assert_eq!(seg.key_of(42).unwrap(), None);
    assert!(postings(&seg, 2, 7).is_empty());
    assert_eq!(seg.bucket_stats(0).unwrap().quantile(0.99), 0);
}

/// The six documents of one bucket, with docnos `docnos[i]` for key `d{i}`.
fn six_in_one_bucket(docnos: &[u64; 6], cap: u32) -> (Segment, Vec<Doc>) {
    let mut docs: Vec<Doc> = docnos
        .iter()
        .enumerate()
        .map(|(i, &docno)| Doc {
            docno,
            key: format!("d{i}").into_bytes(),
            // Band 0: all in one bucket; band 1: one bucket per doc.
            bands: vec![5 << 32, docno << 32],
        })
        .collect();
    docs.sort_by_key(|d| d.docno);
    let base = docs[0].docno;
    let end = docs[5].docno + 1;
    let bytes = build(2, base, end, &docs, Some(cap));
    (Segment::open(bytes, "c").unwrap(), docs)
}

fn keys_of(docs: &[Doc], docnos: &[u64]) -> Vec<Vec<u8>> {
    let mut keys: Vec<Vec<u8>> = docnos
        .iter()
        .map(|&d| docs.iter().find(|x| x.docno == d).unwrap().key.clone())
        .collect();
    keys.sort();
    keys
}

#[test]
fn caps_keep_lowest_key_hashes_and_flag_hot() {
    let (seg, docs) = six_in_one_bucket(&[10, 11, 13, 14, 15, 19], 4);
    seg.verify().unwrap();
    let all: Vec<u64> = docs.iter().map(|d| d.docno).collect();
    let kept = lowest_ranked(&docs, &all, 4);
    // Not simply the lowest docnos, or this corpus would not test the rule.
    assert_ne!(kept, [10, 11, 13, 14]);
    assert_eq!(postings(&seg, 0, 5 << 32), kept);
    assert_eq!(seg.hot_bucket(0, 5 << 32).unwrap(), Some(6));
    assert_eq!(seg.hot_bucket(1, 19 << 32).unwrap(), None);
    assert_eq!(postings(&seg, 1, 19 << 32), [19]);
    assert_eq!(seg.hot_count(), 1);
    let stats = seg.bucket_stats(0).unwrap();
    assert_eq!(
        (stats.buckets, stats.postings, stats.hot, stats.max()),
        (1, 4, 1, 6)
    );

    // The same keys inserted in another order (other docnos) keep the same documents.
    let (other, other_docs) = six_in_one_bucket(&[40, 35, 33, 32, 31, 30], 4);
    assert_eq!(
        keys_of(&other_docs, &postings(&other, 0, 5 << 32)),
        keys_of(&docs, &kept)
    );

    // Deleting two kept docs and merging does not resurrect the two the cap dropped.
    let gone = [kept[0], kept[2]];
    let merged = merge(
        &[&seg],
        |d| !gone.contains(&d),
        &SegmentOptions {
            bucket_cap: Some(4),
            ..SegmentOptions::default()
        },
    )
    .unwrap();
    let merged = Segment::open(merged, "m").unwrap();
    merged.verify().unwrap();
    assert_eq!(postings(&merged, 0, 5 << 32), [kept[1], kept[3]]);
    // 2 live stored docs + 2 dropped by the earlier cap.
    assert_eq!(merged.hot_bucket(0, 5 << 32).unwrap(), Some(4));
    let dropped = all.iter().find(|d| !kept.contains(d)).unwrap();
    assert_eq!(postings(&merged, 1, dropped << 32), [*dropped]);
    // A tighter cap re-applies over the survivors, by the same rule.
    let tight = merge(
        &[&seg],
        |_| true,
        &SegmentOptions {
            bucket_cap: Some(2),
            ..SegmentOptions::default()
        },
    )
    .unwrap();
    let tight = Segment::open(tight, "t").unwrap();
    assert_eq!(postings(&tight, 0, 5 << 32), lowest_ranked(&docs, &kept, 2));
    assert_eq!(tight.hot_bucket(0, 5 << 32).unwrap(), Some(6));
}

/// With stored signatures (runs of live rows longer than a 4 KiB block, dead rows next to
/// each other, and every fourth seed an input whose rows are all dead), each survivor's
/// signature is carried over with it.
#[test]
fn merge_equals_build_of_live_union() {
    for seed in 0..12u64 {
        let mut rng = SplitMix64(1000 + seed);
        let record = [0usize, 24, 64][seed as usize % 3];
        let num_bands = 1 + rng.below(4) as usize;
        let mut base = rng.below(1000);
        let first_base = base;
        let mut all_docs = Vec::new();
        let mut segs = Vec::new();
        for _ in 0..1 + rng.below(4) {
            let span = rng.below(400);
            let docs = random_docs(&mut rng, base, span, 60, num_bands);
            let end = base + span + rng.below(5);
            let bytes = build_signed(num_bands, base, end, &docs, None, record);
            segs.push(Segment::open(bytes, "in").unwrap());
            all_docs.extend(docs);
            base = end + rng.below(5);
        }
        let end = segs.last().unwrap().end_docno();
        let first_input_end = segs.first().unwrap().end_docno();
        let mut dead: Vec<u64> = all_docs
            .iter()
            .filter(|_| rng.below(4) == 0)
            .map(|d| d.docno)
            .collect();
        if seed % 4 == 0 {
            dead.extend(
                all_docs
                    .iter()
                    .map(|d| d.docno)
                    .filter(|&d| d < first_input_end),
            );
        }
        let is_live = |d: u64| !dead.contains(&d);
        let live: Vec<Doc> = all_docs
            .iter()
            .filter(|d| is_live(d.docno))
            .cloned()
            .collect();
        let refs: Vec<&Segment> = segs.iter().collect();
        for cap in [None, Some(2)] {
            let opts = SegmentOptions {
                bucket_cap: cap,
                ..SegmentOptions::default()
            };
            let merged = merge(&refs, is_live, &opts).unwrap();
            let rebuilt = build_signed(num_bands, first_base, end, &live, cap, record);
            assert_eq!(merged, rebuilt, "seed {seed} cap {cap:?}");
            let seg = Segment::open(merged, "merged").unwrap();
            check_against_model(&seg, &live, cap, &mut rng);
        }
    }
}

#[test]
fn merge_rejects_bad_inputs() {
    let a = Segment::open(build(2, 0, 10, &[], None), "a").unwrap();
    let b = Segment::open(build(2, 5, 20, &[], None), "b").unwrap();
    let c = Segment::open(build(3, 20, 30, &[], None), "c").unwrap();
    let o = SegmentOptions::default();
    assert!(merge::<Vec<u8>>(&[], |_| true, &o).is_err());
    assert!(merge(&[&a, &b], |_| true, &o).is_err());
    assert!(merge(&[&b, &a], |_| true, &o).is_err());
    assert!(merge(&[&a, &c], |_| true, &o).is_err());
    assert!(
        merge(
            &[&a],
            |_| true,
            &SegmentOptions {
                bucket_cap: Some(0),
                ..SegmentOptions::default()
            }
        )
        .is_err()
    );
}

#[test]
fn builder_rejects_bad_input() {
    assert!(SegmentBuilder::new(0, 0).is_err());
    let mut b = SegmentBuilder::new(2, 10).unwrap();
    assert!(b.add(9, b"k", &[1, 2]).is_err());
    assert!(b.add(10, b"k", &[1]).is_err());
    b.add(10, b"k", &[1, 2]).unwrap();
    assert!(b.add(10, b"k", &[1, 2]).is_err());
    assert!(b.set_end_docno(10).is_err());
    b.set_end_docno(12).unwrap();
    assert!(b.add(12, b"k", &[1, 2]).is_err());
}

fn small_segment() -> Vec<u8> {
    let mut rng = SplitMix64(7);
    let docs = random_docs(&mut rng, 100, 40, 70, 3);
    build(3, 100, 140, &docs, Some(2))
}

/// Runs every query and prefetch hint; queries may fail but nothing may panic.
fn exercise(seg: &Segment) {
    seg.prefetch_directories_and_filters();
    for band in 0..seg.num_bands() + 1 {
        let _ = seg.bucket_stats(band);
        for key in [0u64, 1 << 32, u64::MAX, 0x1234_5678_9abc_def0] {
            seg.touch_bucket_directory(band, key);
            seg.prefetch_bucket_directory(band, key);
            seg.prefetch_bucket_entries(band, key);
            if let Ok(p) = seg.postings(band, key) {
                p.for_each(drop);
            }
            let _ = seg.hot_bucket(band, key);
        }
    }
    seg.docs().take(100).for_each(drop);
    seg.hot_buckets().take(100).for_each(drop);
    for docno in [0, u64::MAX]
        .into_iter()
        .chain(seg.base_docno()..seg.base_docno().saturating_add(50))
    {
        seg.prefetch_doc_entry(docno);
        seg.prefetch_signature(docno);
        seg.prefetch_key(docno);
        if let Ok(Some(key)) = seg.key_of(docno) {
            let _ = seg.find_key(key);
        }
    }
    let docnos: Vec<u64> = [0]
        .into_iter()
        .chain(seg.base_docno()..seg.base_docno().saturating_add(50))
        .chain([u64::MAX])
        .collect();
    seg.prefetch_documents(&docnos, true);
    seg.prefetch_keys(&docnos);
}

#[test]
fn truncation_at_every_length_is_corruption() {
    let bytes = small_segment();
    for len in 0..bytes.len() {
        match Segment::open(bytes[..len].to_vec(), "t") {
            Err(e) => assert!(e.is_corruption(), "len {len}: {e}"),
            Ok(_) => panic!("truncated to {len} bytes but opened"),
        }
    }
}

#[test]
fn every_single_byte_flip_is_detected() {
    let bytes = small_segment();
    let mut rng = SplitMix64(99);
    for at in 0..bytes.len() {
        let mut bad = bytes.clone();
        bad[at] ^= 1 + rng.below(255) as u8;
        match Segment::open(bad, "flip") {
            // A damaged version field too: the metadata checksum covers it.
            Err(Error::Corruption { .. }) => {}
            Err(e) => panic!("flip at {at}: unexpected {e}"),
            Ok(seg) => {
                exercise(&seg);
                let err = seg.verify().expect_err("flip passed verify");
                assert!(err.is_corruption(), "flip at {at}: {err}");
            }
        }
    }
}

#[test]
fn unknown_version_is_unsupported() {
    let mut bytes = small_segment();
    bytes[8..12].copy_from_slice(&4u32.to_le_bytes());
    // Written so by a newer writer: the checksums match.
    fix_checksums(&mut bytes);
    match Segment::open(bytes, "v4") {
        Err(Error::UnsupportedVersion {
            found: 4,
            supported: 3,
            ..
        }) => {}
        other => panic!("{other:?}"),
    }
}

/// Recomputes every checksum, as a buggy or hostile writer would, so that the structural checks
/// (not the checksums) must catch the damage.
fn fix_checksums(bytes: &mut [u8]) {
    let len = bytes.len();
    let footer = len - 32;
    let u64_at = |b: &[u8], at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
    let table = u64_at(bytes, footer) as usize;
    let nsec = u32::from_le_bytes(bytes[footer + 8..footer + 12].try_into().unwrap()) as usize;
    // Version 2's block checksums (kind 8) cover every byte from 64 up to that section.
    for i in 0..nsec {
        let e = table + i * 40;
        if u16::from_le_bytes([bytes[e], bytes[e + 1]]) != 8 {
            continue;
        }
        let (Ok(off), Ok(slen)) = (
            usize::try_from(u64_at(bytes, e + 8)),
            usize::try_from(u64_at(bytes, e + 16)),
        ) else {
            continue;
        };
        if off < 64 || off.saturating_add(slen) > table {
            continue;
        }
        // Page-aligned: block j is file bytes 4096·j .. 4096·(j + 1), block 0 after the header.
        let crcs: Vec<u8> = (0..off.div_ceil(4096))
            .flat_map(|j| {
                crc32fast::hash(&bytes[(j * 4096).max(64)..((j + 1) * 4096).min(off)]).to_le_bytes()
            })
            .collect();
        if crcs.len() == slen {
            bytes[off..off + slen].copy_from_slice(&crcs);
        }
    }
    for i in 0..nsec {
        let e = table + i * 40;
        let (off, slen) = (u64_at(bytes, e + 8), u64_at(bytes, e + 16));
        let (Ok(off), Ok(slen)) = (usize::try_from(off), usize::try_from(slen)) else {
            continue;
        };
        if let Some(section) = bytes.get(off..off.saturating_add(slen)) {
            let crc = crc32fast::hash(section);
            bytes[e + 32..e + 36].copy_from_slice(&crc.to_le_bytes());
        }
    }
    let mut h = crc32fast::Hasher::new();
    h.update(&bytes[..64]);
    h.update(&bytes[table..footer]);
    h.update(&bytes[footer..footer + 24]);
    let crc = h.finalize();
    bytes[footer + 24..footer + 28].copy_from_slice(&crc.to_le_bytes());
}

#[test]
fn multi_byte_damage_is_detected_and_never_panics() {
    let bytes = small_segment();
    let mut rng = SplitMix64(5);
    let mut structural = 0;
    for round in 0..4000 {
        let mut bad = bytes.clone();
        for _ in 0..1 + rng.below(3) {
            let at = rng.below(bad.len() as u64 - 32) as usize;
            bad[at] ^= 1 << rng.below(8);
        }
        // Half the rounds recompute every checksum, as a buggy or hostile writer would: then
        // only the structural checks stand between the damage and the reader, and a change
        // that keeps every invariant (say, a posting moved to another bucket in sorted
        // position) is a different valid segment. Those rounds must simply not panic.
        let hostile = round % 2 == 1;
        if hostile {
            fix_checksums(&mut bad);
        }
        let verdict = Segment::open(bad, "damaged").and_then(|seg| {
            exercise(&seg);
            seg.verify()
        });
        match verdict {
            Err(e) => {
                assert!(
                    e.is_corruption()
                        || matches!(
                            e,
                            Error::UnsupportedVersion { .. } | Error::Unsupported { .. }
                        ),
                    "round {round}: {e}"
                );
                structural += u64::from(hostile);
            }
            Ok(()) => assert!(hostile, "round {round}: damage passed verify"),
        }
    }
    // Most structural damage is still caught (this is a property of the data, not a timing).
    assert!(
        structural > 1000,
        "only {structural} of 2000 hostile rounds rejected"
    );
}

/// Prints the size of a 1M-document segment: `cargo test --release --test segment_format
/// -- --ignored --nocapture size_at_one_million_docs`.
#[test]
#[ignore]
fn size_at_one_million_docs() {
    const N: u64 = 1_000_000;
    const BANDS: usize = 16;
    let mut rng = SplitMix64(1);
    let mut b = SegmentBuilder::new(BANDS, 5_000_000).unwrap();
    let pool: Vec<u64> = (0..20_000).map(|_| rng.next_u64()).collect();
    let mut bands = vec![0u64; BANDS];
    let mut key_len = 0;
    for i in 0..N {
        // Mostly unique band keys, with a few near-duplicates sharing buckets.
        for k in bands.iter_mut() {
            *k = if rng.below(10) == 0 {
                pool[rng.below(pool.len() as u64) as usize]
            } else {
                rng.next_u64()
            };
        }
        let key = format!("https://example.com/articles/{}/{i}", rng.below(100_000));
        key_len += key.len();
        b.add(5_000_000 + i, key.as_bytes(), &bands).unwrap();
    }
    let seg = Segment::open(
        b.finish(&SegmentOptions {
            bucket_cap: Some(1000),
            ..SegmentOptions::default()
        })
        .unwrap(),
        "1m",
    )
    .unwrap();
    let s = seg.size_breakdown();
    let n = N as f64;
    println!("{s:?}");
    println!("avg key length: {:.1} B", key_len as f64 / n);
    println!(
        "postings: {:.3} B per (doc, band)",
        s.postings as f64 / (n * BANDS as f64)
    );
    println!("doc table: {:.3} B per doc", s.doc_table as f64 / n);
    println!("key index: {:.3} B per doc", s.key_index as f64 / n);
    println!(
        "keys beyond key bytes: {:.3} B per doc",
        (s.doc_table + s.key_index) as f64 / n
    );
    println!("hot: {} B, metadata: {} B", s.hot, s.metadata);
    let stats = seg.bucket_stats(0).unwrap();
    println!(
        "band 0: {} buckets, p50 {}, p99 {}, max {}, hot {}",
        stats.buckets,
        stats.quantile(0.5),
        stats.quantile(0.99),
        stats.max(),
        stats.hot
    );
    assert_eq!(stats.postings, N);
    // Informative timings only (no assertions on time).
    let t = std::time::Instant::now();
    seg.verify().unwrap();
    println!("verify: {:?}", t.elapsed());
    let t = std::time::Instant::now();
    let merged = merge(&[&seg], |d| d % 10 != 0, &SegmentOptions::default()).unwrap();
    println!(
        "merge (incl. verify), 10% deleted: {:?}, {} B",
        t.elapsed(),
        merged.len()
    );
    assert!(s.postings as f64 / (n * BANDS as f64) <= 5.0);
}

#[test]
fn sparse_range_roundtrips_and_merges() {
    // Few docs in a huge range exercise the sparse (binary search) path of `verify`.
    let docs: Vec<Doc> = (0..50u64)
        .map(|i| Doc {
            docno: 7 + i * 3_000_000,
            key: format!("sparse-{i}").into_bytes(),
            bands: vec![(i % 4) << 32, i << 32],
        })
        .collect();
    let seg = Segment::open(build(2, 7, 200_000_000, &docs, None), "sparse").unwrap();
    seg.verify().unwrap();
    let want: Vec<u64> = docs
        .iter()
        .filter(|d| d.bands[0] == 1 << 32)
        .map(|d| d.docno)
        .collect();
    assert_eq!(postings(&seg, 0, 1 << 32), want);
    assert_eq!(
        seg.find_key(b"sparse-49").unwrap(),
        Some(7 + 49 * 3_000_000)
    );
    let merged = merge(&[&seg], |d| d != 7, &SegmentOptions::default()).unwrap();
    let merged = Segment::open(merged, "m").unwrap();
    merged.verify().unwrap();
    assert_eq!(merged.doc_count(), 49);
    assert_eq!(merged.key_of(7).unwrap(), None);
}

/// Every read the query path makes of a version-2 segment (postings, keys, signatures, hot
/// records) checks the 4 KiB block it reads first: whatever byte of the data area is flipped,
/// each read returns exactly what was written or a corruption error naming a block of this
/// file, never a wrong value; and the reads that touch the damaged block do fail.
#[test]
fn checked_reads_never_return_damaged_bytes() {
    let mut rng = SplitMix64(11);
    let docs = random_docs(&mut rng, 1_000, 300, 90, 3);
    let record = 24;
    let sig = |d: &Doc| -> Vec<u8> {
        (0..record)
            .map(|i| (d.docno as u8).wrapping_mul(i as u8 + 7))
            .collect()
    };
    let mut b = SegmentBuilder::with_signatures(3, 1_000, record).unwrap();
    b.set_end_docno(1_300).unwrap();
    for d in &docs {
        b.add_signed(d.docno, &d.key, &d.bands, &sig(d)).unwrap();
    }
    let bytes = b
        .finish(&SegmentOptions {
            bucket_cap: Some(4),
            ..SegmentOptions::default()
        })
        .unwrap();
    let clean = Segment::open(bytes.clone(), "clean").unwrap();
    clean.verify().unwrap();
    assert_eq!(clean.blocks_checked().0, clean.blocks_checked().1);
    let data_end = common::segment_section(&bytes, 8).unwrap().start;
    type Reads = Vec<Result<Vec<u64>, String>>;
    let read_all = |seg: &Segment| -> Reads {
        let mut out = Vec::new();
        for d in &docs {
            out.push(
                seg.signature_of(d.docno)
                    .map(|s| {
                        s.map(|s| s.iter().map(|&b| u64::from(b)).collect())
                            .unwrap_or_default()
                    })
                    .map_err(|e| e.to_string()),
            );
            out.push(
                seg.key_of(d.docno)
                    .map(|k| {
                        k.map(|k| k.iter().map(|&b| u64::from(b)).collect())
                            .unwrap_or_default()
                    })
                    .map_err(|e| e.to_string()),
            );
            out.push(
                seg.find_key(&d.key)
                    .map(|f| f.into_iter().collect())
                    .map_err(|e| e.to_string()),
            );
            for (band, &bk) in d.bands.iter().enumerate() {
                out.push(
                    seg.postings(band, bk)
                        .and_then(|p| p.collect::<Result<Vec<u64>, _>>())
                        .map_err(|e| e.to_string()),
                );
            }
        }
        out.push(
            seg.hot_buckets()
                .map(|h| h.map(|h| h.original_size))
                .collect::<Result<Vec<u64>, _>>()
                .map_err(|e| e.to_string()),
        );
        out
    };
    let expected = read_all(&clean);
    assert!(expected.iter().all(Result::is_ok));
    for at in (64..data_end).step_by(97) {
        let mut bad = bytes.clone();
        bad[at] ^= 0x21;
        let seg = Segment::open(bad, "damaged.seg").unwrap();
        let got = read_all(&seg);
        let mut failed = 0;
        for (g, e) in got.iter().zip(&expected) {
            match g {
                Ok(v) => assert_eq!(Ok(v), e.as_ref(), "byte {at}: a read returned damaged data"),
                Err(msg) => {
                    assert!(
                        msg.contains("damaged.seg") && msg.contains("checksum"),
                        "byte {at}: {msg}"
                    );
                    failed += 1;
                }
            }
        }
        assert!(
            failed > 0 || seg.verify().is_err(),
            "byte {at}: damage never seen"
        );
        assert!(seg.verify().is_err(), "byte {at}: verify passed");
    }
}

/// The verification walk (`for_each_signature`) finds, for any ascending docnos (present,
/// absent in a hole, before or past the range), exactly the rows `signature_of` and `key_of`
/// find one docno at a time, whatever the prefetch length; the row it gives names the key.
#[test]
fn signature_walk_agrees_with_lookups_across_holes() {
    let record = 24;
    let present: Vec<u64> = (1_000..1_300)
        .filter(|d| d % 7 != 3 && !(1_100..1_160).contains(d))
        .collect();
    let mut b = SegmentBuilder::with_signatures(2, 1_000, record).unwrap();
    b.set_end_docno(1_300).unwrap();
    for &d in &present {
        let sig: Vec<u8> = (0..record)
            .map(|i| (d as u8) ^ (i as u8).wrapping_mul(31))
            .collect();
        b.add_signed(d, format!("key-{d}").as_bytes(), &[d, d * 3], &sig)
            .unwrap();
    }
    let bytes = b
        .finish(&SegmentOptions {
            bucket_cap: None,
            ..SegmentOptions::default()
        })
        .unwrap();
    let seg = Segment::open(bytes, "walk").unwrap();
    let mut state = 11u64;
    for trial in 0..40 {
        let mut asked: Vec<u64> = (0..(trial * 9 + 1))
            .map(|_| {
                state = state.wrapping_mul(6364136223846793005).wrapping_add(1);
                990 + (state >> 33) % 330
            })
            .collect();
        asked.sort_unstable();
        asked.dedup();
        let want: Vec<(u64, Vec<u8>, Vec<u8>)> = asked
            .iter()
            .filter_map(|&d| {
                let sig = seg.signature_of(d).unwrap()?;
                Some((d, sig.to_vec(), seg.key_of(d).unwrap().unwrap().to_vec()))
            })
            .collect();
        for prefetch in [0, 64, 4096] {
            let mut got = Vec::new();
            seg.for_each_signature(&asked, prefetch, |d, row, sig| {
                got.push((d, sig.to_vec(), seg.key_at_row(row)?.to_vec()));
                Ok(())
            })
            .unwrap();
            assert_eq!(got, want, "trial {trial}, prefetch {prefetch}");
        }
    }
}
