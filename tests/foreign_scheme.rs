//! Signatures made elsewhere (datasketch's schemes, `format/hashing.md` §11): an index records
//! their scheme in its manifest (codes 16, 17, 18), stores and compares them like its own, and
//! refuses every text operation with a clear error, so mhdb's signatures and another
//! producer's are never mixed.

mod common;

use mhdb::Error;
use mhdb::db::{Db, IndexParams, Options, QueryOptions, WriteBatch};
use mhdb::sketch::{LshParams, MinHasher, Scheme, Signature};

use common::rng::XorShift64;

fn foreign_params(scheme: Scheme) -> IndexParams {
    let mut p = IndexParams::for_threshold(common::params::sketch(scheme, 64, 1), 64, 0.5).unwrap();
    p.lsh = LshParams::new(8, 8, 64).unwrap();
    p
}

/// A 32-bit signature (datasketch affine32's values) and one sharing its first `shared` slots.
fn pair(seed: u64, shared: usize) -> (Signature, Signature) {
    let mut rng = XorShift64::scrambled(seed);
    let a: Vec<u64> = (0..64).map(|_| rng.next_u64() & 0xFFFF_FFFF).collect();
    let b: Vec<u64> = a
        .iter()
        .enumerate()
        .map(|(i, &v)| if i < shared { v } else { v ^ 0x5A5A })
        .collect();
    (Signature::from_slots(a), Signature::from_slots(b))
}

fn is_text_refusal(e: &Error) -> bool {
    matches!(e, Error::ParameterMismatch { name: "scheme", .. })
        && e.to_string().contains("datasketch")
}

#[test]
fn scheme_codes_and_names_round_trip() {
    let codes: Vec<u8> = Scheme::ALL.iter().map(|s| s.code()).collect();
    assert_eq!(codes, [1, 2, 16, 17, 18]);
    for s in Scheme::ALL {
        assert_eq!(Scheme::from_code(s.code()), Some(s));
        assert_eq!(s.name().parse::<Scheme>().unwrap(), s);
        assert_eq!(s.signs_text(), matches!(s, Scheme::Oph | Scheme::KPerm));
    }
    assert_eq!(Scheme::from_code(3), None);
    assert!(is_text_refusal(
        &MinHasher::new(common::params::sketch(Scheme::DatasketchAffine32, 64, 1)).unwrap_err()
    ));
}

#[test]
fn foreign_signatures_are_stored_queried_and_text_is_refused() {
    for scheme in [
        Scheme::DatasketchLegacy,
        Scheme::DatasketchAffine32,
        Scheme::DatasketchAffine64,
    ] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db");
        let db = Db::create(&path, foreign_params(scheme), Options::default()).unwrap();
        let (a, b) = pair(u64::from(scheme.code()), 48);
        db.insert("a", &a).unwrap();
        let hits = db.query(&b, &QueryOptions::default()).unwrap().matches;
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].similarity, 0.75); // 48 of 64 equal slots, exact at 64 bits
        assert!(is_text_refusal(&db.hasher().unwrap_err()));
        assert!(is_text_refusal(
            &db.insert_text("t", "some text").unwrap_err()
        ));
        assert!(is_text_refusal(
            &db.query_text("some text", &QueryOptions::default())
                .unwrap_err()
        ));
        assert!(is_text_refusal(&db.sketch_text("some text").unwrap_err()));
        let mut batch = WriteBatch::new();
        batch.insert("x", b.clone()).insert_text("y", "text");
        assert!(is_text_refusal(&db.write(&batch).unwrap_err()));
        assert!(!db.contains("x").unwrap(), "a refused batch has no effect");
        drop(db);

        // The scheme is in the manifest, at its documented place (format/manifest.md,
        // version 3): magic 8, version 4, generation 8, db_id 16, features 8, spec_version 4,
        // index kind 1, then the scheme byte.
        let manifest = std::fs::read_dir(&path)
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| {
                p.file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with("MANIFEST-")
            })
            .unwrap();
        assert_eq!(std::fs::read(&manifest).unwrap()[49], scheme.code());

        let db = Db::open_read_only(&path).unwrap();
        assert_eq!(db.params().sketch.scheme, scheme);
        assert_eq!(
            db.query(&b, &QueryOptions::default()).unwrap().matches,
            hits
        );
        assert!(is_text_refusal(
            &db.query_text("x", &QueryOptions::default()).unwrap_err()
        ));
    }
}

#[test]
fn a_caller_expecting_mhdb_signatures_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    drop(
        Db::create(
            &path,
            foreign_params(Scheme::DatasketchAffine32),
            Options::default(),
        )
        .unwrap(),
    );
    let opts = Options {
        expect_sketch: Some(common::params::sketch(Scheme::Oph, 64, 1)),
        ..Options::default()
    };
    let e = Db::open(&path, opts).unwrap_err();
    assert!(
        matches!(e, Error::ParameterMismatch { name: "scheme", .. }),
        "{e}"
    );
}
