//! Helpers shared by the integration tests: `mod common;` in a test file.
//!
//! - [`rng`]: the two deterministic generators the tests draw their data from.
//! - [`params`]: the sketch and index parameters the tests build.
//! - [`sets`]: set pairs with an exactly known Jaccard similarity.
//! - [`vectors`]: the golden-vector files and the published test key.
//! - [`model`]: the reference model of a database (key → stored signature).
//! - [`process`]: killing a child process without losing what it acknowledged.
//! - [`golden`]: the generator and answer checks of the committed database fixtures.
//! - `compress`: gzip and zstd of test inputs (with the `input` feature).
//! - [`cli`]: running the `mhdb` binary (arguments, standard input, shell pipes), its test
//!   corpus, and the documented key escaping read and written independently of the binary.

// Each test file is its own crate and compiles this module with it, using only some of the
// helpers; the rest would warn as dead code in every test binary that does not call them.
#![allow(dead_code)]

pub mod cli;
pub mod columns;
// The compression crates come with the `input` feature.
#[cfg(feature = "input")]
pub mod compress;
pub mod golden;
pub mod model;
pub mod params;
pub mod process;
pub mod rng;
pub mod sets;
pub mod vectors;

use std::collections::BTreeMap;

use mhdb::db::Db;

/// Every live key (as UTF-8) with its stored packed signature: the database's side of a
/// comparison with a [`model::Model`].
pub fn stored(db: &Db) -> BTreeMap<String, Vec<u8>> {
    db.keys()
        .unwrap()
        .into_iter()
        .map(|k| {
            let sig = db
                .get(&k)
                .unwrap()
                .expect("a listed key must have a signature")
                .packed;
            (String::from_utf8(k).unwrap(), sig)
        })
        .collect()
}

/// `tools/conformance/reference_reader.py` (written from `format/*.md`, not from the code)
/// run on the database at `db`, its output JSON parsed; panics with its error output if it
/// finds a problem.
pub fn reference_read(db: &std::path::Path) -> serde_json::Value {
    let out = std::process::Command::new("python3")
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tools/conformance/reference_reader.py"
        ))
        .arg(db)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The byte range of section `kind` in the segment file `bytes`, read from its footer and
/// section table as `format/segment.md` lays them out (kind 6 is SIGNATURES).
pub fn segment_section(bytes: &[u8], kind: u16) -> Option<std::ops::Range<usize>> {
    let u64_at = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap()) as usize;
    let footer = bytes.len().checked_sub(32)?;
    let table = u64_at(footer);
    let count = u32::from_le_bytes(bytes[footer + 8..footer + 12].try_into().unwrap()) as usize;
    (0..count).map(|i| table + 40 * i).find_map(|e| {
        let k = u16::from_le_bytes(bytes[e..e + 2].try_into().unwrap());
        (k == kind).then(|| u64_at(e + 8)..u64_at(e + 8) + u64_at(e + 16))
    })
}
