//! The sketching core: text → shingles → MinHash signature → b-bit packing and LSH band keys.
//!
//! `format/hashing.md` is the normative description of everything computed here.

pub mod bbit;
pub mod lsh;
pub mod minhash;
pub mod shingle;
pub mod spec;

pub use bbit::{SUPPORTED_BITS, estimate_packed, pack, packed_len, unpack, validate_bits};
pub use lsh::{Banding, LshParams, TuneOptions, Tuning, tune, tune_all};
pub use minhash::{EMPTY_SLOT, MinHasher, PartialSketch, Signature, SketchParams};
pub use shingle::{ShingleConfig, ShingleKind};
pub use spec::{MAX_NUM_PERM, SPEC_VERSION, Scheme};
