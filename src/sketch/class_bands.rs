//! The band keys of a containment index (`format/containment.md` §2): every document gets the
//! bands of every banding, each keyed under the document's size class, so that a probe of one
//! class meets only documents of that class. The bands are numbered flat, banding after
//! banding, and stored as any index's bands are.

use super::containment::{class_band_seed, size_class};
use super::lsh::{LshParams, hash_slots};
use super::minhash::SketchParams;
use super::spec::{Purpose, derive_seed};
use crate::{Error, Result};

/// Computes a containment index's band keys.
#[derive(Clone, Debug)]
pub struct ClassBanding {
    bandings: Vec<LshParams>,
    /// `first[g]`: the flat number of banding g's band 0.
    first: Vec<usize>,
    band_count: usize,
    class_base: u64,
}

impl ClassBanding {
    /// The bandings `bandings` (each over the first `bands · rows` slots) of signatures made
    /// with `sketch`.
    pub fn new(sketch: &SketchParams, bandings: &[LshParams]) -> Result<Self> {
        sketch.validate()?;
        if bandings.is_empty() || bandings.len() > usize::from(u16::MAX) {
            return Err(Error::invalid(
                "bandings",
                format!("need 1 to {} bandings, got {}", u16::MAX, bandings.len()),
            ));
        }
        let mut first = Vec::with_capacity(bandings.len());
        let mut band_count = 0;
        for b in bandings {
            LshParams::new(b.bands, b.rows, sketch.num_perm)?;
            if b.bands > usize::from(u16::MAX) {
                return Err(Error::invalid(
                    "bandings",
                    format!("{} bands in one banding (at most {})", b.bands, u16::MAX),
                ));
            }
            first.push(band_count);
            band_count += b.bands;
        }
        Ok(ClassBanding {
            bandings: bandings.to_vec(),
            first,
            band_count,
            class_base: derive_seed(sketch.scheme, sketch.seed, Purpose::Class),
        })
    }

    /// The bandings, in their order.
    pub fn bandings(&self) -> &[LshParams] {
        &self.bandings
    }

    /// Bands of all bandings together: the keys of one document.
    pub fn band_count(&self) -> usize {
        self.band_count
    }

    /// The flat number of band 0 of banding `banding`.
    pub fn first_band(&self, banding: usize) -> Option<usize> {
        self.first.get(banding).copied()
    }

    /// Writes the keys of every band of a document of `set_size` distinct shingle hashes whose
    /// signature is `slots` into `out` (exactly [`ClassBanding::band_count`] long).
    pub fn band_keys_to_slice(&self, slots: &[u64], set_size: u64, out: &mut [u64]) -> Result<()> {
        if out.len() != self.band_count {
            return Err(Error::invalid(
                "band keys",
                format!(
                    "{} keys asked, the bandings have {}",
                    out.len(),
                    self.band_count
                ),
            ));
        }
        let class = size_class(set_size);
        for (g, &first) in self.first.iter().enumerate() {
            let Some(keys) = out.get_mut(first..) else {
                continue;
            };
            self.keys_into(slots, class, g, keys)?;
        }
        Ok(())
    }

    /// [`ClassBanding::band_keys_to_slice`] into a new vector.
    pub fn band_keys(&self, slots: &[u64], set_size: u64) -> Result<Vec<u64>> {
        let mut out = vec![0; self.band_count];
        self.band_keys_to_slice(slots, set_size, &mut out)?;
        Ok(out)
    }

    /// The keys of the first `bands` bands of banding `banding` as a document of `class`
    /// would have them: what a query looks up to probe that class.
    pub fn probe_keys(
        &self,
        slots: &[u64],
        class: u8,
        banding: usize,
        bands: usize,
    ) -> Result<Vec<u64>> {
        let mut out = vec![0; bands];
        self.keys_into(slots, class, banding, &mut out)?;
        Ok(out)
    }

    /// Writes the keys of banding `g`'s first `out.len()` bands (at most all of them) for
    /// `class` into `out`.
    fn keys_into(&self, slots: &[u64], class: u8, g: usize, out: &mut [u64]) -> Result<()> {
        let Some(b) = self.bandings.get(g) else {
            return Err(Error::invalid("banding", format!("no banding {g}")));
        };
        let out = match out.get_mut(..b.bands) {
            Some(all) => all,
            None => out,
        };
        let needed = out.len() * b.rows;
        let Some(used) = slots.get(..needed) else {
            return Err(Error::invalid(
                "signature",
                format!("has {} slots, banding {g} needs {needed}", slots.len()),
            ));
        };
        for (i, (dst, band)) in out.iter_mut().zip(used.chunks_exact(b.rows)).enumerate() {
            // Both fit in 16 bits ([`ClassBanding::new`] checks).
            let seed = class_band_seed(self.class_base, class, g as u16, i as u16);
            *dst = hash_slots(band, seed);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sketch::containment::DEFAULT_BANDINGS;

    fn sketch() -> SketchParams {
        SketchParams {
            num_perm: 512,
            ..SketchParams::default()
        }
    }

    fn slots() -> Vec<u64> {
        (0..512u64)
            .map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15))
            .collect()
    }

    #[test]
    fn bands_are_numbered_flat_banding_after_banding() {
        let c = ClassBanding::new(&sketch(), &DEFAULT_BANDINGS).unwrap();
        assert_eq!(c.band_count(), 64 + 32 + 24 + 16 + 12);
        assert_eq!(
            (0..5).map(|g| c.first_band(g).unwrap()).collect::<Vec<_>>(),
            [0, 64, 96, 120, 136]
        );
        assert_eq!(c.first_band(5), None);
    }

    #[test]
    fn a_probe_of_a_documents_class_meets_its_keys() {
        let c = ClassBanding::new(&sketch(), &DEFAULT_BANDINGS).unwrap();
        let s = slots();
        let keys = c.band_keys(&s, 1000).unwrap();
        let class = size_class(1000);
        for (g, b) in DEFAULT_BANDINGS.iter().enumerate() {
            let first = c.first_band(g).unwrap();
            let probe = c.probe_keys(&s, class, g, b.bands).unwrap();
            assert_eq!(probe, keys[first..first + b.bands]);
            assert_eq!(
                c.probe_keys(&s, class, g, 3).unwrap(),
                keys[first..first + 3]
            );
            let other = c.probe_keys(&s, class + 1, g, b.bands).unwrap();
            assert!(other.iter().zip(&probe).all(|(a, b)| a != b));
        }
    }

    #[test]
    fn keys_of_sizes_in_one_class_agree_and_across_classes_differ() {
        let c = ClassBanding::new(&sketch(), &DEFAULT_BANDINGS).unwrap();
        let s = slots();
        // 1024 ..= 1448 is one half octave; 1449 starts the next.
        assert_eq!(
            c.band_keys(&s, 1024).unwrap(),
            c.band_keys(&s, 1448).unwrap()
        );
        let (a, b) = (
            c.band_keys(&s, 1448).unwrap(),
            c.band_keys(&s, 1449).unwrap(),
        );
        assert!(a.iter().zip(&b).all(|(x, y)| x != y));
    }

    /// The hash spec pins these keys: a shipped containment index depends on them.
    #[test]
    fn golden_keys() {
        let c = ClassBanding::new(&sketch(), &DEFAULT_BANDINGS).unwrap();
        let keys = c.band_keys(&slots(), 1000).unwrap();
        let picked = [
            keys[0], keys[63], keys[64], keys[96], keys[120], keys[136], keys[147],
        ];
        assert_eq!(picked, GOLDEN);
    }

    const GOLDEN: [u64; 7] = [
        1515551777230440598,
        657248453110465137,
        5669700245819517431,
        11881820863937041309,
        9148377276619788979,
        3862786789386242327,
        2831842548840038686,
    ];

    #[test]
    fn bad_shapes_are_refused() {
        let s = sketch();
        assert!(ClassBanding::new(&s, &[]).is_err());
        let too_long = LshParams { bands: 64, rows: 9 };
        assert!(ClassBanding::new(&s, &[too_long]).is_err());
        let c = ClassBanding::new(&s, &DEFAULT_BANDINGS).unwrap();
        assert!(c.band_keys(&slots()[..90], 10).is_err());
        assert!(c.band_keys_to_slice(&slots(), 10, &mut [0; 3]).is_err());
    }
}
