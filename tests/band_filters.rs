//! Band filters at the database level: a new index writes a filter per band into every
//! segment (flush and compaction alike) unless created without them, the answers are the same
//! either way, and the reference reader reads both.

mod common;

use std::path::Path;

use mhdb::db::{Db, Durability, IndexParams, Options, QueryOptions, WriteBatch};
use mhdb::sketch::{Signature, SketchParams};

use common::rng::SplitMix64;

/// Segment header flag bit 4: the segment has a BAND_FILTER section per band.
const FLAG_BAND_FILTER: u32 = 1 << 4;

fn signature(seed: u64) -> Vec<u64> {
    let mut rng = SplitMix64(seed);
    (0..128).map(|_| rng.next_u64() >> 32).collect()
}

/// `base` with every `every`-th slot changed.
fn near(base: &[u64], every: usize, salt: u64) -> Vec<u64> {
    let mut rng = SplitMix64(salt);
    let mut s = base.to_vec();
    for slot in s.iter_mut().step_by(every) {
        *slot = rng.next_u64() >> 32;
    }
    s
}

/// A database at `path`, band filters as `filters` says, with 3 flushed batches of 200
/// documents (every tenth a near-duplicate of an earlier one), merged into one segment when
/// `compact`.
fn build(path: &Path, filters: bool, compact: bool) -> Db {
    let opts = Options {
        durability: Durability::None,
        auto_compact: false,
        band_filters: filters,
        ..Options::default()
    };
    let params = IndexParams::for_threshold(SketchParams::default(), 32, 0.8).unwrap();
    let db = Db::create(path, params, opts).unwrap();
    for round in 0..3u64 {
        let mut batch = WriteBatch::new();
        for i in 0..200u64 {
            let id = round * 200 + i;
            let slots = if id % 10 == 9 {
                near(&signature(id - 5), 16, id)
            } else {
                signature(id)
            };
            batch.insert(format!("k{id}"), Signature::from_slots(slots));
        }
        db.write(&batch).unwrap();
        db.flush().unwrap();
    }
    if compact {
        db.compact_full().unwrap();
    }
    db
}

/// The header flags of every segment file of the database at `path`.
fn segment_flags(path: &Path) -> Vec<u32> {
    let mut flags = Vec::new();
    for entry in std::fs::read_dir(path).unwrap() {
        let p = entry.unwrap().path();
        if p.extension().is_some_and(|e| e == "seg") {
            let bytes = std::fs::read(&p).unwrap();
            flags.push(u32::from_le_bytes(bytes[12..16].try_into().unwrap()));
        }
    }
    flags
}

/// Every answer of `db` to planted and unmatched queries, as keys and similarities.
fn answers(db: &Db) -> Vec<Vec<(Vec<u8>, u64)>> {
    let opts = QueryOptions::default();
    (0..600u64)
        .step_by(7)
        .map(|id| Signature::from_slots(near(&signature(id), 20, id + 1)))
        .chain((0..100u64).map(|i| Signature::from_slots(signature(1_000_000 + i))))
        .map(|q| {
            let r = db.query(&q, &opts).unwrap();
            let matches = r.matches.into_iter();
            matches.map(|m| (m.key, m.similarity.to_bits())).collect()
        })
        .collect()
}

#[test]
fn filters_are_written_by_flush_and_compaction_and_change_no_answer() {
    let dir = tempfile::tempdir().unwrap();
    for compact in [false, true] {
        let with = dir.path().join(format!("with-{compact}"));
        let without = dir.path().join(format!("without-{compact}"));
        let (a, b) = (build(&with, true, compact), build(&without, false, compact));
        let expected_segments = if compact { 1 } else { 3 };
        let (fa, fb) = (segment_flags(&with), segment_flags(&without));
        assert_eq!((fa.len(), fb.len()), (expected_segments, expected_segments));
        assert!(fa.iter().all(|f| f & FLAG_BAND_FILTER != 0), "{fa:?}");
        assert!(fb.iter().all(|f| f & FLAG_BAND_FILTER == 0), "{fb:?}");
        let (ra, rb) = (answers(&a), answers(&b));
        assert_eq!(ra, rb);
        let found = ra.iter().filter(|m| !m.is_empty()).count();
        // The 86 planted queries but those whose document was stored as a near-duplicate of
        // another (every tenth), and none of the 100 others.
        assert!(
            (70..=86).contains(&found),
            "{found} queries of 186 found a match"
        );
        assert!(a.verify().unwrap().problems.is_empty());
        drop((a, b));
        // Reopened, and by the reference reader.
        let reopened = Db::open_read_only(&with).unwrap();
        assert_eq!(answers(&reopened), rb);
        for db in [&with, &without] {
            let read = common::reference_read(db);
            assert_eq!(read["live"].as_array().unwrap().len(), 600);
        }
    }
}

#[test]
fn create_without_band_filters_writes_none() {
    let dir = tempfile::tempdir().unwrap();
    for (flag, want) in [(None, FLAG_BAND_FILTER), (Some("--no-band-filters"), 0)] {
        let db = dir.path().join(format!("db-{}", flag.is_some()));
        let db_arg = db.to_str().unwrap();
        let mut args = vec!["create", db_arg];
        args.extend(flag);
        let out = common::cli::run(&args);
        assert!(out.status.success(), "{out:?}");
        let data = dir.path().join("docs.jsonl");
        std::fs::write(&data, "{\"id\": \"a\", \"text\": \"one two three four\"}\n").unwrap();
        let out = common::cli::run(&["add", db_arg, data.to_str().unwrap()]);
        assert!(out.status.success(), "{out:?}");
        let flags = segment_flags(&db);
        assert!(!flags.is_empty());
        assert!(
            flags.iter().all(|f| f & FLAG_BAND_FILTER == want),
            "{flags:?}"
        );
    }
}
