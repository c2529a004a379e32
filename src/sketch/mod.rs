//! The sketching core: text (or a token list) → shingles → MinHash signature → b-bit packing
//! and LSH band keys; or text → weighted shingles → SimHash fingerprint → pigeonhole block
//! keys. Either can be keyed by a secret so that nobody without it can predict a signature.
//!
//! `format/hashing.md` is the normative description of everything computed here.

pub mod bbit;
pub mod class_bands;
pub mod containment;
pub mod exact;
mod first_probes;
pub mod keyed;
pub mod lsh;
pub mod minhash;
pub(crate) mod normal;
mod normalize;
pub mod probe_planner;
pub mod set_intersect;
pub mod set_size;
pub mod shingle;
pub mod shingle_set;
mod signature;
pub mod simhash;
pub mod spec;
pub mod tokens;
mod unicode_tables;
pub mod unicode_words;
mod xxh3_short;

pub use bbit::{SUPPORTED_BITS, estimate_packed, pack, packed_len, unpack, validate_bits};
pub use class_bands::ClassBanding;
pub use exact::ExactHasher;
pub use keyed::{KEY_FILE_ENV, KEY_LEN, KeyFingerprint, SecretKey, ShingleHash};
pub use lsh::{Banding, LshParams, TuneOptions, Tuning, tune, tune_all};
pub use minhash::{EMPTY_SLOT, MinHasher, PartialSketch, Signature, SketchParams};
pub use shingle::{ShingleConfig, ShingleKind};
pub use shingle_set::{SetDerivation, SetValueHash, ShingleSet};
pub use simhash::{MAX_HAMMING, SimHash, SimHasher, SimParams, SimWeighting, cosine_from_hamming};
pub use spec::{MAX_NUM_PERM, SPEC_VERSION, Scheme};
pub use tokens::{OwnedToken, Token};
pub use unicode_words::WordFolding;
