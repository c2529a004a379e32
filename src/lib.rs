//! mhdb: an embedded, persistent, crash-safe MinHash-LSH index.
//!
//! This crate is built in layers. The bottom layer, [`sketch`], turns text into MinHash
//! signatures and LSH band keys exactly as `format/hashing.md` specifies, so that a signature
//! computed today equals one computed by any later version or by a reader in another language.
//!
//! ```
//! use mhdb::sketch::{MinHasher, SketchParams, TuneOptions, tune};
//!
//! let hasher = MinHasher::new(SketchParams::default())?; // OPH, k = 128, char 5-grams
//! let a = hasher.sketch_text("The quick brown fox jumps over the lazy dog");
//! let b = hasher.sketch_text("The quick brown fox jumped over the lazy dog");
//! let j = a.jaccard(&b)?;
//! assert!(j > 0.4 && j < 0.95);
//!
//! let tuning = tune(0.8, 128, &TuneOptions::default())?;
//! assert!(tuning.params.probability(0.8) >= 0.95);
//! # Ok::<(), mhdb::Error>(())
//! ```

#![deny(unsafe_code)]
#![warn(missing_docs)]

#[cfg(feature = "input")]
pub mod apply;
pub mod db;
pub mod decisions;
pub mod error;
#[cfg(feature = "arrow-input")]
pub mod input;
pub mod sketch;
pub mod storage;

pub use error::{Error, Result};
