//! Which parameters may meet: signatures from elsewhere (a query, an expected sketch at
//! open) against an index's, and one index's documents merged into another's.

use super::params::{IndexKind, IndexParams};
use crate::sketch::{KeyFingerprint, SketchParams};
use crate::{Error, Result};

impl IndexParams {
    /// Errors with [`Error::ParameterMismatch`] if `other`'s signatures are incompatible.
    pub fn check_compatible(&self, other: &SketchParams) -> Result<()> {
        if let IndexKind::SimHash { .. } = self.kind {
            return Err(Error::ParameterMismatch {
                name: "kind",
                stored: self.kind.to_string(),
                requested: format!("minhash ({} signatures)", other.scheme),
            });
        }
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
        match (a.kind, b.kind) {
            (
                IndexKind::SimHash {
                    max_hamming: x,
                    weighting: wx,
                },
                IndexKind::SimHash {
                    max_hamming: y,
                    weighting: wy,
                },
            ) if x != y && wx == wy => {
                return Err(mismatch("max_hamming", x.to_string(), y.to_string()));
            }
            (ka, kb) if ka != kb => {
                return Err(mismatch("kind", ka.to_string(), kb.to_string()));
            }
            _ => {}
        }
        if a.sim_params().is_none() {
            self.check_compatible(&src.sketch)?;
        } else if a.sketch != b.sketch {
            return Err(mismatch(
                "seed/shingle",
                format!("seed {} {:?}", a.sketch.seed, a.sketch.shingle),
                format!("seed {} {:?}", b.sketch.seed, b.sketch.shingle),
            ));
        }
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
