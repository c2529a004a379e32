//! `IndexOptions::build`, the one owner of a new index's parameter rules (`mhdb create` and
//! Python's `Index.create` both go through it): what a left-out option defaults to, which
//! options a kind of index refuses (an explicit value equal to the default included), how
//! refusals name the option, and which choices come back as warnings.

use mhdb::Error;
use mhdb::db::{
    DEFAULT_BUCKET_CAP, IndexKind, IndexOption, IndexOptions, IndexParams, KindChoice,
    OptionsError, ParamsWarning, STORED_SETS_RECALL,
};
use mhdb::sketch::{Scheme, ShingleKind, SimWeighting};

fn build(options: IndexOptions) -> IndexParams {
    options.build().unwrap()
}

fn simhash() -> IndexOptions {
    IndexOptions {
        kind: Some(KindChoice::SimHash),
        ..IndexOptions::default()
    }
}

/// Nothing given: the library's default index; each scheme has its own default slots, and the
/// shape follows the slots.
#[test]
fn left_out_options_take_the_defaults() {
    assert_eq!(build(IndexOptions::default()), IndexParams::default());
    let kperm = build(IndexOptions {
        scheme: Some(Scheme::KPerm),
        ..IndexOptions::default()
    });
    assert_eq!(
        (kperm.sketch.num_perm, kperm.band_slots, kperm.bits),
        (128, 128, 16)
    );
    let small = build(IndexOptions {
        num_perm: Some(64),
        ..IndexOptions::default()
    });
    assert_eq!((small.band_slots, small.bits), (64, 32));
    let sim = build(simhash());
    assert_eq!(
        sim.kind,
        IndexKind::SimHash {
            max_hamming: 3,
            weighting: SimWeighting::Tf
        }
    );
    assert_eq!(sim.bucket_cap, Some(DEFAULT_BUCKET_CAP));
}

/// Options given are kept: shingling for both kinds, a bucket cap of 0 is none, explicit bands
/// and rows replace the tuned ones.
#[test]
fn given_options_are_kept() {
    let p = build(IndexOptions {
        shingle: Some(ShingleKind::Word(2)),
        nfkc: Some(true),
        lowercase: Some(false),
        seed: Some(9),
        bucket_cap: Some(0),
        bands: Some(4),
        rows: Some(8),
        threshold: Some(0.5),
        ..IndexOptions::default()
    });
    assert_eq!(p.sketch.shingle.kind, ShingleKind::Word(2));
    assert!(p.sketch.shingle.nfkc && !p.sketch.shingle.lowercase);
    assert_eq!((p.sketch.seed, p.bucket_cap), (9, None));
    assert_eq!((p.lsh.bands, p.lsh.rows, p.threshold), (4, 8, 0.5));
    let sim = build(IndexOptions {
        max_hamming: Some(5),
        weighting: Some(SimWeighting::LogTf),
        shingle: Some(ShingleKind::Word(3)),
        bucket_cap: Some(7),
        ..simhash()
    });
    assert_eq!(sim.sim_params().unwrap().max_hamming, 5);
    assert_eq!(sim.sketch.shingle.kind, ShingleKind::Word(3));
    assert_eq!(sim.bucket_cap, Some(7));
}

/// A simhash index refuses every MinHash option given, the threshold too, even at the
/// default's value 0.8 (an explicit value is never taken for a left-out one); the first one
/// given is named. A MinHash index refuses the SimHash options.
#[test]
fn options_of_the_other_kind_are_refused_even_at_their_default() {
    let refused = |options: IndexOptions| match options.build() {
        Err(OptionsError::WrongKind { option, kind }) => (option, kind),
        other => panic!("{other:?}"),
    };
    let cases = [
        (
            IndexOptions {
                threshold: Some(0.8),
                ..simhash()
            },
            IndexOption::Threshold,
        ),
        (
            IndexOptions {
                scheme: Some(Scheme::Oph),
                ..simhash()
            },
            IndexOption::Scheme,
        ),
        (
            IndexOptions {
                store_sets: Some(false),
                band_slots: Some(64),
                ..simhash()
            },
            IndexOption::StoreSets,
        ),
        (
            IndexOptions {
                band_slots: Some(64),
                threshold: Some(0.5),
                num_perm: Some(64),
                ..simhash()
            },
            IndexOption::NumPerm,
        ),
    ];
    for (options, first) in cases {
        assert_eq!(refused(options), (first, KindChoice::SimHash));
    }
    let minhash = IndexOptions {
        weighting: Some(SimWeighting::Tf),
        ..IndexOptions::default()
    };
    assert_eq!(
        refused(minhash),
        (IndexOption::Weighting, KindChoice::MinHash)
    );
}

/// The canonical words of each refusal (those Python raises), naming the parameter.
#[test]
fn refusals_name_the_option_canonically() {
    let words = |options: IndexOptions| Error::from(options.build().unwrap_err()).to_string();
    assert_eq!(
        words(IndexOptions {
            threshold: Some(0.8),
            ..simhash()
        }),
        "invalid parameter `threshold`: a simhash index's threshold follows from max_hamming; \
         give max_hamming"
    );
    assert_eq!(
        words(IndexOptions {
            bits: Some(8),
            ..simhash()
        }),
        "invalid parameter `kind`: bits is a MinHash parameter; a simhash index takes \
         max_hamming, weighting, seed and the shingling"
    );
    assert_eq!(
        words(IndexOptions {
            max_hamming: Some(3),
            ..IndexOptions::default()
        }),
        "invalid parameter `kind`: max_hamming and weighting are parameters of kind=\"simhash\""
    );
    assert_eq!(
        words(IndexOptions {
            bands: Some(4),
            ..IndexOptions::default()
        }),
        "invalid parameter `bands`: give both bands and rows, or neither (then they are tuned \
         for the threshold)"
    );
    // Out-of-range values are the parameter checks' own errors, passed on.
    let e = IndexOptions {
        num_perm: Some(100_000),
        ..IndexOptions::default()
    }
    .build()
    .unwrap_err();
    assert!(matches!(
        &e,
        OptionsError::Invalid(Error::InvalidParameter {
            name: "num_perm",
            ..
        })
    ));
    assert!(
        words(IndexOptions {
            max_hamming: Some(16),
            ..simhash()
        })
        .contains("max_hamming")
    );
    assert_eq!(
        "lsh".parse::<KindChoice>().unwrap_err().to_string(),
        "invalid parameter `kind`: unknown index kind \"lsh\"; expected \"minhash\" or \"simhash\""
    );
}

/// Stored sets re-tune the bands for recall; a banding short of it, or one that misses most
/// pairs at the threshold, comes back as a warning (and a SimHash index has none).
#[test]
fn disappointing_choices_are_warnings() {
    let sets = build(IndexOptions {
        store_sets: Some(true),
        ..IndexOptions::default()
    });
    assert!(sets.store_sets && sets.lsh.probability(0.8) >= STORED_SETS_RECALL);
    assert!(sets.warnings().is_empty());
    assert!(IndexParams::default().warnings().is_empty());
    let weak = build(IndexOptions {
        bands: Some(2),
        rows: Some(60),
        ..IndexOptions::default()
    });
    match weak.warnings()[..] {
        [
            ParamsWarning::WeakBanding {
                lsh,
                threshold,
                probability,
            },
        ] => {
            assert_eq!((lsh.bands, lsh.rows, threshold), (2, 60, 0.8));
            assert!(probability < 0.5);
        }
        ref other => panic!("{other:?}"),
    }
    let short = build(IndexOptions {
        store_sets: Some(true),
        threshold: Some(0.01),
        ..IndexOptions::default()
    });
    assert!(matches!(
        short.warnings()[..],
        [ParamsWarning::StoredSetsShortOfRecall {
            band_slots: 128,
            ..
        }]
    ));
    assert!(build(simhash()).warnings().is_empty());
}
