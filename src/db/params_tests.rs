use super::*;
use std::path::Path;

use crate::db::params_stored::{ShingleCodes, shingle_codes, shingle_from_codes};
use crate::sketch::{ShingleConfig, WordFolding};
use crate::storage::codec::{Decoder, Encoder};
use crate::storage::manifest::{MANIFEST_V3, ParamsV3, StoredParams};

/// Too many bands for the slots they cover names the cover (band_slots), not the
/// signature's length.
#[test]
fn bands_beyond_their_slots_name_band_slots() {
    let mut p = IndexParams::default();
    (p.lsh.bands, p.lsh.rows) = (20, 20);
    let err = p.validate().unwrap_err().to_string();
    assert!(
        err.contains("cover only the first 128 of the signature's 512 slots (band_slots)"),
        "{err}"
    );
}

/// The rule `mhdb add` and the Python binding refuse texts by: a text without shingles,
/// in either kind of index, and no other text.
#[test]
fn has_no_shingles_is_the_empty_text_of_either_kind() {
    let minhash = IndexParams::default();
    let h = minhash.hasher().unwrap();
    let sim = SimParams::default();
    let simhash = IndexParams::simhash(sim).unwrap();
    let s = crate::sketch::SimHasher::new(sim).unwrap();
    for text in ["", " \t\n "] {
        assert!(minhash.has_no_shingles(&h.sketch_text(text)), "{text:?}");
        assert!(simhash.has_no_shingles(&s.sketch_text(text).to_signature()));
    }
    assert!(!minhash.has_no_shingles(&h.sketch_text("x")));
    assert!(!simhash.has_no_shingles(&s.sketch_text("some words").to_signature()));
}

#[test]
fn encode_decode_roundtrip() {
    // Version 1 has no band_slots: its bands cover every slot.
    let v1 = IndexParams::for_threshold(SketchParams::default(), 32, 0.8).unwrap();
    for (p, version) in [(v1, 1), (IndexParams::default(), 2)] {
        let p = IndexParams {
            bucket_cap: None,
            ..p
        };
        let mut e = Encoder::default();
        p.encode(&mut e, version);
        let path = Path::new("x");
        let mut d = Decoder::new(&e.buf, path);
        assert_eq!(IndexParams::decode(&mut d, path, version).unwrap(), p);
        d.expect_end().unwrap();
    }
}

/// Bands over fewer slots than the signature round-trip; a stored k_b above k_v, or
/// bands × rows above k_b, is corruption.
#[test]
fn band_slots_roundtrip_and_bad_values_are_corruption() {
    let sketch = SketchParams {
        num_perm: 512,
        ..SketchParams::default()
    };
    let p = IndexParams::with_band_slots(sketch, 4, 128, 0.8).unwrap();
    assert_eq!(p.band_slots, 128);
    assert_eq!(
        p.lsh,
        tune(0.8, 128, &TuneOptions::default()).unwrap().params
    );
    let path = Path::new("x");
    let encoded = |p: &IndexParams| {
        let mut e = Encoder::default();
        p.encode(&mut e, 2);
        e.buf
    };
    let bytes = encoded(&p);
    let mut d = Decoder::new(&bytes, path);
    assert_eq!(IndexParams::decode(&mut d, path, 2).unwrap(), p);
    for band_slots in [513, 0, 64] {
        let bad = IndexParams { band_slots, ..p };
        assert!(bad.validate().is_err(), "{bad:?}");
        let bytes = encoded(&bad);
        let mut d = Decoder::new(&bytes, path);
        let err = IndexParams::decode(&mut d, path, 2).unwrap_err();
        assert!(matches!(err, Error::Corruption { .. }), "{err}");
    }
    for band_slots in [0, 513] {
        let err = IndexParams::with_band_slots(sketch, 8, band_slots, 0.8).unwrap_err();
        assert!(err.to_string().contains("band_slots"), "{err}");
    }
    // k-permutation bands over a prefix too.
    let kperm = SketchParams {
        scheme: Scheme::KPerm,
        num_perm: 256,
        ..SketchParams::default()
    };
    let p = IndexParams::with_band_slots(kperm, 8, 64, 0.5).unwrap();
    assert!(p.lsh.bands * p.lsh.rows <= 64);
}

#[test]
fn stored_sets_round_trip_in_version_2_and_tune_for_recall() {
    let p = IndexParams::default().with_stored_sets().unwrap();
    assert!(p.store_sets);
    assert!(p.lsh.probability(p.threshold) >= STORED_SETS_RECALL);
    let mut e = Encoder::default();
    p.encode(&mut e, 2);
    let path = Path::new("x");
    let mut d = Decoder::new(&e.buf, path);
    assert_eq!(IndexParams::decode(&mut d, path, 2).unwrap(), p);
}

#[test]
fn simhash_params_roundtrip_and_validate() {
    for (h, weighting) in [
        (0, SimWeighting::Tf),
        (3, SimWeighting::LogTf),
        (15, SimWeighting::Tf),
    ] {
        let p = IndexParams::simhash(SimParams {
            max_hamming: h,
            weighting,
            seed: 7,
            ..SimParams::default()
        })
        .unwrap();
        assert_eq!(p.lsh.bands, h as usize + 1);
        assert_eq!(p.sig_bytes(), 8);
        let mut e = Encoder::default();
        p.encode(&mut e, 2);
        let path = Path::new("x");
        let mut d = Decoder::new(&e.buf, path);
        let back = IndexParams::decode(&mut d, path, 2).unwrap();
        assert_eq!(back, p);
        assert_eq!(back.sim_params().unwrap().max_hamming, h);
    }
    assert!(
        IndexParams::simhash(SimParams {
            max_hamming: 16,
            ..SimParams::default()
        })
        .is_err()
    );
}

#[test]
fn default_is_tuned_for_recall() {
    let p = IndexParams::default();
    assert!(p.lsh.probability(0.8) >= 0.95);
    assert!(p.lsh.bands * p.lsh.rows <= p.band_slots);
    assert_eq!((p.sketch.num_perm, p.band_slots, p.bits), (512, 128, 4));
    assert_eq!(p.sig_bytes(), 256);
}

#[test]
fn default_shape_follows_the_slots() {
    let bits: Vec<u32> = [1024, 512, 256, 128, 64, 32, 1]
        .iter()
        .map(|&k| default_bits(k))
        .collect();
    assert_eq!(bits, [4, 4, 8, 16, 32, 32, 32]);
    assert_eq!(default_band_slots(512), 128);
    assert_eq!(default_band_slots(64), 64);
    assert_eq!(default_slots(Scheme::Oph), 512);
    assert_eq!(default_slots(Scheme::KPerm), 128);
    let kperm = SketchParams {
        scheme: Scheme::KPerm,
        num_perm: default_slots(Scheme::KPerm),
        ..SketchParams::default()
    };
    let p = IndexParams::with_shape(kperm, None, None, 0.5).unwrap();
    assert_eq!((p.sketch.num_perm, p.band_slots, p.bits), (128, 128, 16));
}

/// Every kind of index round-trips through a version-3 manifest's parameters block: MinHash
/// with and without stored sets, keyed, and SimHash (cosine metric, blocks as its banding);
/// parameters the block cannot describe validly are corruption at the block.
#[test]
fn version_3_block_roundtrip() {
    use crate::storage::identity::DbId;
    use crate::storage::manifest::{Features, MANIFEST_V3, Manifest};
    let keyed = IndexParams {
        key_fingerprint: KeyFingerprint([3; 32]),
        ..IndexParams::default().with_stored_sets().unwrap()
    };
    let simhash = IndexParams::simhash(SimParams::default()).unwrap();
    let plain = IndexParams {
        bucket_cap: None,
        ..IndexParams::default()
    };
    let path = Path::new("M");
    for p in [plain, keyed, simhash] {
        let block = p.to_v3();
        assert_eq!(
            block.metric,
            if p.kind == IndexKind::MinHash { 1 } else { 2 }
        );
        assert_eq!(IndexParams::from_v3(&block, p.store_sets, path).unwrap(), p);
        let m = Manifest {
            format_version: MANIFEST_V3,
            generation: 1,
            db_id: DbId([9; 16]),
            features: Features::NONE.with(Features::STORE_SETS, p.store_sets),
            params: p,
            keep: None,
            next_docno: 0,
            siglog_records: 0,
            wal_start: 1,
            wal_next_seq: 1,
            next_file_id: 2,
            deletions: Default::default(),
            segments: Vec::new(),
        };
        assert_eq!(Manifest::decode(&m.encode(), path).unwrap(), m);
    }
    let mut block = plain.to_v3();
    block.scheme = 99;
    let err = IndexParams::from_v3(&block, false, path).unwrap_err();
    assert!(matches!(err, Error::Corruption { offset: 44, .. }), "{err}");
    let mut block = plain.to_v3();
    block.spec_version = 2;
    let err = IndexParams::from_v3(&block, false, path).unwrap_err();
    assert!(
        matches!(err, Error::UnsupportedVersion { found: 2, .. }),
        "{err}"
    );
}

/// The default parameters with `shingle`.
fn with_shingle(shingle: ShingleConfig) -> IndexParams {
    IndexParams {
        sketch: SketchParams {
            shingle,
            ..SketchParams::default()
        },
        ..IndexParams::default()
    }
}

/// Unicode word shingles and their folds map to shingle kind 3, the fold flag bits and the
/// build's Unicode version, and back; versions 1 and 2 have no code for them.
#[test]
fn unicode_word_shingles_have_a_code_in_version_3_only() {
    use crate::storage::manifest::Features;
    let both = WordFolding {
        punctuation: true,
        digits: true,
    };
    let digits = WordFolding {
        digits: true,
        ..WordFolding::default()
    };
    for (folding, fold_bits) in [(WordFolding::default(), 0), (digits, 16), (both, 24)] {
        let shingle = ShingleConfig {
            nfkc: true,
            ..ShingleConfig::unicode_words(3, folding)
        };
        let codes = shingle_codes(&shingle);
        assert_eq!(
            codes,
            ShingleCodes {
                kind: 3,
                width: 3,
                flags: 0b111 | fold_bits,
                unicode_version: 0x10_00_00,
            }
        );
        assert_eq!(
            shingle_from_codes(codes.kind, codes.width, codes.flags),
            Some(shingle)
        );
        let p = with_shingle(shingle);
        let block = p.to_v3();
        assert_eq!(
            (
                block.shingle_kind,
                block.shingle_flags,
                block.unicode_version
            ),
            (3, 0b111 | fold_bits, 0x10_00_00)
        );
        // The version-3 block's bytes decode to the same codes.
        let mut e = Encoder::default();
        block.encode(&mut e);
        let mut d = Decoder::new(&e.buf, Path::new("M"));
        let back = ParamsV3::decode(&mut d, Path::new("M"), Features::NONE).unwrap();
        assert_eq!(back, block);
        p.check_format_version(MANIFEST_V3).unwrap();
        for version in [1, 2] {
            let err = p.check_format_version(version).unwrap_err().to_string();
            assert!(err.contains("needs format version 3"), "{err}");
        }
    }
}

/// A version-3 block of Unicode words segmented at another Unicode version is unsupported;
/// a version-2 manifest naming shingle kind 3 is corrupt.
#[test]
fn unicode_words_of_another_unicode_version_or_in_version_2_are_refused() {
    let p = with_shingle(ShingleConfig::unicode_words(1, WordFolding::default()));
    let mut block = p.to_v3();
    block.unicode_version = 0x11_00_00;
    let err = IndexParams::from_v3(&block, false, Path::new("M")).unwrap_err();
    assert!(matches!(err, Error::Unsupported { .. }), "{err}");
    assert!(err.to_string().contains("Unicode 17.0.0"), "{err}");
    let mut e = Encoder::default();
    IndexParams::default().encode(&mut e, 2);
    // spec_version 4, kind 1, scheme 1, num_perm 4, band_slots 4, seed 8: the shingle kind.
    e.buf[22] = 3;
    let err = IndexParams::decode(&mut Decoder::new(&e.buf, Path::new("M")), Path::new("M"), 2)
        .unwrap_err();
    assert!(err.is_corruption(), "{err}");
    assert!(err.to_string().contains("unknown shingle kind 3"), "{err}");
}

/// This build refuses to create what its manifest version cannot store, and round-trips it
/// through a version-3 manifest once it writes one.
#[test]
fn creating_unicode_words_needs_the_build_to_write_version_3() {
    let p = with_shingle(ShingleConfig::unicode_words(2, WordFolding::default()));
    if MANIFEST_VERSION < MANIFEST_V3 {
        let err = p.validate().unwrap_err().to_string();
        assert!(err.contains("needs format version 3"), "{err}");
    } else {
        p.validate().unwrap();
        let back = IndexParams::from_v3(&p.to_v3(), false, Path::new("M")).unwrap();
        assert_eq!(back, p);
    }
}

/// Token lists have a code only in version 3 (kind 4, no normalization flag); a version-2
/// manifest naming kind 4 is corrupt, and a version-3 block round-trips.
#[test]
fn token_lists_need_version_3_and_round_trip_in_it() {
    let p = with_shingle(ShingleConfig::tokens(2));
    let codes = shingle_codes(&p.sketch.shingle);
    assert_eq!((codes.kind, codes.width, codes.flags), (4, 2, 0));
    for version in [1, 2] {
        let err = p.check_format_version(version).unwrap_err().to_string();
        assert!(err.contains("needs format version 3"), "{err}");
    }
    let back = IndexParams::from_v3(&p.to_v3(), false, Path::new("M")).unwrap();
    assert_eq!(back, p);
    let mut e = Encoder::default();
    IndexParams::default().encode(&mut e, 2);
    e.buf[22] = 4;
    let err = IndexParams::decode(&mut Decoder::new(&e.buf, Path::new("M")), Path::new("M"), 2)
        .unwrap_err();
    assert!(err.to_string().contains("unknown shingle kind 4"), "{err}");
}
