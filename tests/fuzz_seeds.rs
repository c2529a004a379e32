//! The committed seed corpora of the cargo-fuzz targets (`fuzz/seeds/TARGET/`), replayed in the
//! normal test suite through the very functions the fuzz targets call (`fuzz/src/lib.rs`, included
//! here): every decoder — CURRENT, manifest, deletion list, signature-log header, WAL replay, WAL
//! batch payload, segment open, verify and lookups — on every seed, with the targets' own checks
//! (no panic; a replay from a file equals one from memory; a segment that verifies finds its keys
//! and combines into one that verifies), and the model-based target (writes, flushes, compactions,
//! crashes and reopens of a database checked against what was acknowledged). An input a fuzz run
//! finds crashing, once fixed, is added to the seeds and stays checked here.
//! `tools/reliability/fuzz.sh` runs the targets themselves.

#[allow(dead_code)]
#[path = "../fuzz/src/lib.rs"]
mod targets;

use std::path::Path;

type Target = fn(&[u8]);

const TARGETS: [(&str, Target); 8] = [
    ("current", targets::current),
    ("manifest", targets::manifest),
    ("deletions", targets::deletions),
    ("siglog_header", targets::siglog_header),
    ("wal_replay", targets::wal_replay),
    ("wal_batch", targets::wal_batch),
    ("segment", targets::segment),
    ("model", targets::model),
];

#[test]
fn every_seed_of_every_fuzz_target_passes() {
    let seeds = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz")
        .join("seeds");
    for (name, target) in TARGETS {
        let dir = seeds.join(name);
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        assert!(!files.is_empty(), "{name}: no seeds in {}", dir.display());
        for file in files {
            let bytes = std::fs::read(&file).unwrap();
            let outcome = std::panic::catch_unwind(|| target(&bytes));
            assert!(outcome.is_ok(), "{name}: {} panicked", file.display());
        }
    }
}

/// Every target's directory of seeds is replayed above, and every fuzz target has one.
#[test]
fn every_fuzz_target_has_seeds() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz");
    let mut binaries: Vec<String> = std::fs::read_dir(root.join("fuzz_targets"))
        .unwrap()
        .map(|e| {
            let p = e.unwrap().path();
            p.file_stem().unwrap().to_string_lossy().into_owned()
        })
        .collect();
    binaries.sort();
    let mut replayed: Vec<String> = TARGETS.iter().map(|(n, _)| n.to_string()).collect();
    replayed.sort();
    assert_eq!(binaries, replayed);
}
