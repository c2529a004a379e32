//! The constants and seed derivation of the hash spec (`format/hashing.md`).
//!
//! Everything random in a signature comes from here, derived from (scheme, user seed, spec
//! version). Changing anything in this file changes every signature ever computed: the golden
//! vectors in `tests/golden_vectors.rs` exist to make such a change fail loudly.

use xxhash_rust::xxh3::xxh3_64_with_seed;

/// Version of the hash spec. Stored with every database; bumped on any change to how a
/// signature or band key is computed.
pub const SPEC_VERSION: u32 = 1;

/// The largest number of slots (permutations) a signature may have.
pub const MAX_NUM_PERM: usize = 8192;

/// Increment of the SplitMix64 generator (the golden ratio in 64-bit fixed point).
const SPLITMIX_GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

/// How a signature is computed: by mhdb from text (`Oph`, `KPerm`), or by another producer
/// from its caller's tokens (the *foreign* schemes: mhdb stores and compares such signatures
/// but never signs text for them; `format/hashing.md` §11).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Scheme {
    /// One-permutation hashing with optimal densification (Shrivastava 2017). The default.
    Oph,
    /// Classic k-permutation MinHash: k affine permutations of each shingle hash.
    KPerm,
    /// datasketch's `MinHash` before 2.0 (its `"legacy"` scheme in 2.x): `(a·h + b) mod
    /// (2^61 − 1)` masked to 32 bits, each value stored in a u64 slot.
    DatasketchLegacy,
    /// datasketch 2.x `MinHash` with `scheme="affine32"` (its default): u32 values.
    DatasketchAffine32,
    /// datasketch 2.x `MinHash` with `scheme="affine64"`: u64 values.
    DatasketchAffine64,
}

impl Scheme {
    /// The scheme's name as it appears in the spec, in seed derivation and on disk.
    pub fn name(self) -> &'static str {
        match self {
            Scheme::Oph => "oph",
            Scheme::KPerm => "kperm",
            Scheme::DatasketchLegacy => "datasketch-legacy",
            Scheme::DatasketchAffine32 => "datasketch-affine32",
            Scheme::DatasketchAffine64 => "datasketch-affine64",
        }
    }

    /// The one-byte code stored on disk.
    pub fn code(self) -> u8 {
        match self {
            Scheme::Oph => 1,
            Scheme::KPerm => 2,
            Scheme::DatasketchLegacy => 16,
            Scheme::DatasketchAffine32 => 17,
            Scheme::DatasketchAffine64 => 18,
        }
    }

    /// Inverse of [`Scheme::code`].
    pub fn from_code(code: u8) -> Option<Scheme> {
        Scheme::ALL.into_iter().find(|s| s.code() == code)
    }

    /// Every scheme, mhdb's first.
    pub const ALL: [Scheme; 5] = [
        Scheme::Oph,
        Scheme::KPerm,
        Scheme::DatasketchLegacy,
        Scheme::DatasketchAffine32,
        Scheme::DatasketchAffine64,
    ];

    /// True for the schemes mhdb computes from text (`oph`, `kperm`); false for signatures
    /// made elsewhere (datasketch), which an index stores and compares but never signs.
    pub fn signs_text(self) -> bool {
        matches!(self, Scheme::Oph | Scheme::KPerm)
    }

    /// The error for signing text under a foreign scheme: such signatures come from their
    /// producer, and mhdb never mixes them with its own.
    pub fn text_refused(self) -> crate::Error {
        crate::Error::ParameterMismatch {
            name: "scheme",
            stored: format!(
                "{self} (signatures made by datasketch from the caller's tokens: insert and query by signature)"
            ),
            requested: "text signed by mhdb (oph or kperm)".into(),
        }
    }
}

impl std::str::FromStr for Scheme {
    type Err = crate::Error;
    fn from_str(s: &str) -> crate::Result<Scheme> {
        Scheme::ALL
            .into_iter()
            .find(|scheme| scheme.name() == s)
            .ok_or_else(|| {
                crate::Error::invalid(
                    "scheme",
                    format!(
                        "unknown scheme {s:?}; expected \"oph\" or \"kperm\" (or, for \
                         signatures made by datasketch, \"datasketch-legacy\", \
                         \"datasketch-affine32\" or \"datasketch-affine64\")"
                    ),
                )
            })
    }
}

impl std::fmt::Display for Scheme {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// What a derived seed is used for. The names are part of the spec.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Purpose {
    Shingle,
    Perm,
    Densify,
    Band,
    /// The unkeyed exact hash of a document (spec §17).
    Exact,
    /// The band seeds of a containment index's size classes (`format/containment.md` §2).
    Class,
}

impl Purpose {
    fn name(self) -> &'static str {
        match self {
            Purpose::Shingle => "shingle",
            Purpose::Perm => "perm",
            Purpose::Densify => "densify",
            Purpose::Band => "band",
            Purpose::Exact => "exact",
            Purpose::Class => "class",
        }
    }
}

/// `xxh3_64_with_seed("mhdb-spec-<V>/<scheme>/<purpose>", user_seed)`.
pub(crate) fn derive_seed(scheme: Scheme, user_seed: u64, purpose: Purpose) -> u64 {
    derive_named_seed(scheme.name(), user_seed, purpose)
}

/// [`derive_seed`] for a name that is not a MinHash [`Scheme`] (`simhash`).
pub(crate) fn derive_named_seed(name: &str, user_seed: u64, purpose: Purpose) -> u64 {
    let label = format!("mhdb-spec-{SPEC_VERSION}/{name}/{}", purpose.name());
    xxh3_64_with_seed(label.as_bytes(), user_seed)
}

/// The SplitMix64 output function (Steele, Lea, Flood 2014): a bijective 64-bit mixer.
#[inline]
pub(crate) const fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The SplitMix64 generator: `state += gamma; return mix64(state)`.
pub(crate) struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    pub(crate) fn new(seed: u64) -> Self {
        SplitMix64 { state: seed }
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(SPLITMIX_GAMMA);
        mix64(self.state)
    }
}

/// Lemire's multiply-shift range reduction of the high 32 bits of `h` into `0..n`.
#[inline]
pub(crate) fn reduce_high32(h: u64, n: usize) -> usize {
    (((h >> 32) * n as u64) >> 32) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix_matches_reference_output() {
        // Reference values of SplitMix64 seeded with 0, as published with the algorithm.
        let mut g = SplitMix64::new(0);
        assert_eq!(g.next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(g.next_u64(), 0x6E78_9E6A_A1B9_65F4);
    }

    #[test]
    fn reduce_stays_in_range() {
        for n in [1usize, 3, 128, 1000] {
            assert!(reduce_high32(u64::MAX, n) < n);
            assert_eq!(reduce_high32(0, n), 0);
        }
    }
}
