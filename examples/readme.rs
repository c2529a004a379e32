//! The library example of README.md: `cargo run --example readme`.

use mhdb::db::{Db, IndexParams, Options, QueryOptions, WriteBatch};
use mhdb::sketch::{MinHasher, SketchParams, TuneOptions, tune};

const A: &str = "The quick brown fox jumps over the lazy dog by the river, \
                 while the farmer watches from the porch of his old red barn.";
const B: &str = "The quick brown fox jumped over the lazy dog by the river, \
                 while the farmer watches from the porch of his old red barn.";

/// Signs two texts, tunes a banding, then stores one text in a database at `dir` (created on
/// the first run, reopened after) and queries it with the other: returns the hits as
/// (estimated Jaccard, key).
pub fn run(dir: &std::path::Path) -> mhdb::Result<Vec<(f64, String)>> {
    let hasher = MinHasher::new(SketchParams::default())?; // OPH, k = 128, char 5-grams
    let a = hasher.sketch_text(A);
    let b = hasher.sketch_text(B);
    println!("estimated Jaccard {:.3}", a.jaccard(&b)?);
    let lsh = tune(0.8, 128, &TuneOptions::default())?; // bands × rows for threshold 0.8
    println!(
        "{} bands × {} rows, P(0.8) = {:.3}",
        lsh.params.bands,
        lsh.params.rows,
        lsh.params.probability(0.8)
    );

    // The persistent index: created on the first run, reopened on the next.
    let db = Db::open_or_create(dir, IndexParams::default(), Options::default())?;
    let mut batch = WriteBatch::new();
    batch.insert_text("https://example.com/a", A);
    batch.delete("https://example.com/old");
    db.write(&batch)?; // atomic; durable on return (Durability::Sync)
    let hits = db.query_text(B, &QueryOptions::default())?;
    Ok(hits
        .matches
        .iter()
        .map(|m| (m.similarity, String::from_utf8_lossy(&m.key).into_owned()))
        .collect())
}

#[allow(dead_code)] // called by `cargo run --example readme`; tests call `run`
fn main() -> mhdb::Result<()> {
    for (similarity, key) in run(std::path::Path::new("idx"))? {
        println!("{similarity:.3} {key}");
    }
    Ok(())
}
