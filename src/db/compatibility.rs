//! Which parameters may meet: signatures from elsewhere (a query, an expected sketch at
//! open) against an index's, and one index's documents merged into another's.

use super::params::IndexParams;
use crate::sketch::{KeyFingerprint, SketchParams};
use crate::{Error, Result};

impl IndexParams {
    /// The MinHash part of [`IndexParams::check_compatible`]: the same scheme, slots, seed
    /// and shingling.
    pub(super) fn check_compatible_sketch(&self, other: &SketchParams) -> Result<()> {
        let s = &self.sketch;
        let mismatch = |name: &'static str, stored: String, requested: String| {
            Err(Error::ParameterMismatch {
                name,
                stored,
                requested,
            })
        };
        if s.scheme != other.scheme {
            return mismatch("scheme", s.scheme.to_string(), other.scheme.to_string());
        }
        if s.num_perm != other.num_perm {
            return mismatch(
                "num_perm",
                s.num_perm.to_string(),
                other.num_perm.to_string(),
            );
        }
        if s.seed != other.seed {
            return mismatch("seed", s.seed.to_string(), other.seed.to_string());
        }
        if s.shingle != other.shingle {
            return mismatch(
                "shingle",
                format!("{:?}", s.shingle),
                format!("{:?}", other.shingle),
            );
        }
        Ok(())
    }

    /// Errors with [`Error::ParameterMismatch`] (this index's value as `stored`, `src`'s as
    /// `requested`) unless `src`'s documents can be merged into this index as they are
    /// stored: the same kind, signatures, bit width, key, stored sets and banding.
    pub fn check_mergeable(&self, src: &IndexParams) -> Result<()> {
        let (a, b) = (self, src);
        let mismatch = |name: &'static str, x: String, y: String| Error::ParameterMismatch {
            name,
            stored: x,
            requested: y,
        };
        a.check_same_kind(b)?;
        if a.bits != b.bits {
            return Err(mismatch("bits", a.bits.to_string(), b.bits.to_string()));
        }
        if a.key_fingerprint != b.key_fingerprint {
            // Fingerprints, never keys: shown as `stats` shows them.
            let describe = |fp: &KeyFingerprint| {
                if fp.is_unkeyed() {
                    "unkeyed".to_string()
                } else {
                    format!("keyed (key fingerprint {})", fp.short())
                }
            };
            return Err(mismatch(
                "key",
                describe(&a.key_fingerprint),
                describe(&b.key_fingerprint),
            ));
        }
        if a.store_sets != b.store_sets {
            return Err(mismatch(
                "store_sets",
                a.store_sets.to_string(),
                b.store_sets.to_string(),
            ));
        }
        if a.lsh != b.lsh {
            return Err(mismatch(
                "bands/rows",
                format!("{}×{}", a.lsh.bands, a.lsh.rows),
                format!("{}×{}", b.lsh.bands, b.lsh.rows),
            ));
        }
        Ok(())
    }
}
