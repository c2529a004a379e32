//! b-bit signatures (Li & König 2010): keep the lowest `b` bits of every slot, packed.
//!
//! Layout (spec §7): slot i occupies bits `i*b .. i*b+b` of a little-endian bit string, that is
//! bit p lives in byte `p / 8` at bit position `p % 8` (least significant first). For b ≥ 8 each
//! slot is therefore a little-endian integer of b/8 bytes. Padding bits of the last byte are 0.

use crate::{Error, Result};

/// The supported bit widths.
pub const SUPPORTED_BITS: [u32; 7] = [1, 2, 4, 8, 16, 32, 64];

/// Checks that `bits` is one of [`SUPPORTED_BITS`].
pub fn validate_bits(bits: u32) -> Result<()> {
    if SUPPORTED_BITS.contains(&bits) {
        Ok(())
    } else {
        Err(Error::invalid(
            "bits",
            format!("must be one of 1, 2, 4, 8, 16, 32, 64; got {bits}"),
        ))
    }
}

/// Bytes taken by `num_perm` slots at `bits` bits each.
pub fn packed_len(num_perm: usize, bits: u32) -> usize {
    (num_perm * bits as usize).div_ceil(8)
}

fn low_mask(bits: u32) -> u64 {
    if bits == 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    }
}

/// Packs `slots` at `bits` bits each into `out`, which must be exactly
/// [`packed_len`]`(slots.len(), bits)` bytes long.
pub fn pack_into(slots: &[u64], bits: u32, out: &mut [u8]) -> Result<()> {
    validate_bits(bits)?;
    let want = packed_len(slots.len(), bits);
    if out.len() != want {
        return Err(Error::invalid(
            "out",
            format!("buffer has {} bytes, {want} needed", out.len()),
        ));
    }
    if bits >= 8 {
        let width = bits as usize / 8;
        for (chunk, &slot) in out.chunks_exact_mut(width).zip(slots) {
            let bytes = slot.to_le_bytes();
            chunk.copy_from_slice(bytes.get(..width).unwrap_or(&bytes));
        }
    } else {
        out.fill(0);
        let per_byte = 8 / bits as usize;
        let mask = low_mask(bits) as u8;
        for (i, &slot) in slots.iter().enumerate() {
            if let Some(byte) = out.get_mut(i / per_byte) {
                *byte |= ((slot as u8) & mask) << ((i % per_byte) as u32 * bits);
            }
        }
    }
    Ok(())
}

/// Packs a signature's slots at `bits` bits each.
pub fn pack(slots: &[u64], bits: u32) -> Result<Vec<u8>> {
    let mut out = vec![0u8; packed_len(slots.len(), bits)];
    pack_into(slots, bits, &mut out)?;
    Ok(out)
}

/// Reads `num_perm` slots of `bits` bits back (the high bits are zero).
pub fn unpack(packed: &[u8], num_perm: usize, bits: u32) -> Result<Vec<u64>> {
    validate_bits(bits)?;
    if packed.len() != packed_len(num_perm, bits) {
        return Err(Error::invalid(
            "packed",
            format!(
                "{} bytes cannot hold exactly {num_perm} slots of {bits} bits",
                packed.len()
            ),
        ));
    }
    let mut out = Vec::with_capacity(num_perm);
    if bits >= 8 {
        for chunk in packed.chunks_exact(bits as usize / 8) {
            let mut bytes = [0u8; 8];
            if let Some(dst) = bytes.get_mut(..chunk.len()) {
                dst.copy_from_slice(chunk);
            }
            out.push(u64::from_le_bytes(bytes));
        }
    } else {
        let per_byte = 8 / bits as usize;
        let mask = low_mask(bits);
        for i in 0..num_perm {
            let byte = packed.get(i / per_byte).copied().unwrap_or(0);
            out.push(u64::from(byte >> ((i % per_byte) as u32 * bits)) & mask);
        }
    }
    Ok(out)
}

/// Number of slots whose packed b-bit values are equal.
pub fn count_equal_packed(a: &[u8], b: &[u8], num_perm: usize, bits: u32) -> Result<usize> {
    validate_bits(bits)?;
    let len = packed_len(num_perm, bits);
    if a.len() != len || b.len() != len {
        return Err(Error::invalid(
            "packed",
            format!(
                "signatures of {} and {} bytes, {len} expected for {num_perm} slots of {bits} bits",
                a.len(),
                b.len()
            ),
        ));
    }
    Ok(num_perm - count_differing(a, b, num_perm * bits as usize, bits))
}

/// Counts b-bit fields that differ among the first `total_bits` bits of `a` and `b`.
fn count_differing(a: &[u8], b: &[u8], total_bits: usize, bits: u32) -> usize {
    // One bit per field: the lowest bit of each field after OR-folding the field onto it.
    let field_low_bits = match bits {
        1 => u64::MAX,
        2 => 0x5555_5555_5555_5555,
        4 => 0x1111_1111_1111_1111,
        8 => 0x0101_0101_0101_0101,
        16 => 0x0001_0001_0001_0001,
        32 => 0x0000_0001_0000_0001,
        _ => 1,
    };
    let fold = |mut x: u64| {
        let mut shift = 1;
        while shift < bits {
            x |= x >> shift;
            shift <<= 1;
        }
        x & field_low_bits
    };
    let mut differing = 0usize;
    let mut a_words = a.chunks_exact(8);
    let mut b_words = b.chunks_exact(8);
    for (wa, wb) in (&mut a_words).zip(&mut b_words) {
        let mut xa = [0u8; 8];
        let mut xb = [0u8; 8];
        xa.copy_from_slice(wa);
        xb.copy_from_slice(wb);
        differing += fold(u64::from_le_bytes(xa) ^ u64::from_le_bytes(xb)).count_ones() as usize;
    }
    let (ra, rb) = (a_words.remainder(), b_words.remainder());
    if !ra.is_empty() {
        let mut xa = [0u8; 8];
        let mut xb = [0u8; 8];
        if let (Some(da), Some(db)) = (xa.get_mut(..ra.len()), xb.get_mut(..rb.len())) {
            da.copy_from_slice(ra);
            db.copy_from_slice(rb);
        }
        // Ignore padding bits beyond the last field, whatever they hold.
        let tail_bits = total_bits - (a.len() - ra.len()) * 8;
        let valid = if tail_bits >= 64 {
            u64::MAX
        } else {
            (1u64 << tail_bits) - 1
        };
        differing +=
            fold((u64::from_le_bytes(xa) ^ u64::from_le_bytes(xb)) & valid).count_ones() as usize;
    }
    differing
}

/// Jaccard estimate from the number of equal b-bit slots. At b = 64 this is the plain
/// estimator `matches / k`; below, the Li & König correction for a large universe:
/// `(p - 2^-b) / (1 - 2^-b)`, clamped to `[0, 1]`.
pub fn estimate_from_matches(matches: usize, num_perm: usize, bits: u32) -> f64 {
    if num_perm == 0 {
        return 0.0;
    }
    let p = matches as f64 / num_perm as f64;
    if bits >= 64 {
        return p;
    }
    let chance = (-(bits as f64)).exp2();
    ((p - chance) / (1.0 - chance)).clamp(0.0, 1.0)
}

/// Jaccard estimate between two packed signatures.
pub fn estimate_packed(a: &[u8], b: &[u8], num_perm: usize, bits: u32) -> Result<f64> {
    let matches = count_equal_packed(a, b, num_perm, bits)?;
    Ok(estimate_from_matches(matches, num_perm, bits))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pack_layout_is_lsb_first_little_endian() {
        let slots = [0b01u64, 0b10, 0b11, 0b00, 0xFF];
        assert_eq!(pack(&slots, 2).unwrap(), vec![0b0011_1001, 0b0000_0011]);
        assert_eq!(pack(&[0x1234u64], 16).unwrap(), vec![0x34, 0x12]);
        assert_eq!(pack(&[1u64, 0, 1], 1).unwrap(), vec![0b101]);
    }

    #[test]
    fn roundtrip_and_counts_for_every_width() {
        let slots: Vec<u64> = (0..37u64)
            .map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15))
            .collect();
        let other: Vec<u64> = slots
            .iter()
            .enumerate()
            .map(|(i, &s)| if i % 3 == 0 { s ^ (1 << 63) ^ 1 } else { s })
            .collect();
        for bits in SUPPORTED_BITS {
            let pa = pack(&slots, bits).unwrap();
            let pb = pack(&other, bits).unwrap();
            let back = unpack(&pa, slots.len(), bits).unwrap();
            let mask = low_mask(bits);
            assert!(back.iter().zip(&slots).all(|(b, s)| *b == s & mask));
            let expect = slots
                .iter()
                .zip(&other)
                .filter(|(x, y)| *x & mask == *y & mask)
                .count();
            assert_eq!(
                count_equal_packed(&pa, &pb, slots.len(), bits).unwrap(),
                expect,
                "bits = {bits}"
            );
        }
    }

    #[test]
    fn padding_bits_do_not_count() {
        let a = pack(&[1u64, 2, 3], 2).unwrap();
        let mut b = a.clone();
        b[0] |= 0b1100_0000; // padding of the 4th (absent) field
        assert_eq!(count_equal_packed(&a, &b, 3, 2).unwrap(), 3);
    }

    #[test]
    fn bad_widths_and_lengths_are_errors() {
        assert!(validate_bits(3).is_err());
        assert!(pack(&[1], 0).is_err());
        assert!(count_equal_packed(&[0; 2], &[0; 3], 16, 1).is_err());
        assert!(unpack(&[0; 3], 16, 2).is_err());
    }

    #[test]
    fn correction_maps_chance_agreement_to_zero() {
        assert_eq!(estimate_from_matches(64, 128, 1), 0.0);
        assert_eq!(estimate_from_matches(128, 128, 1), 1.0);
        assert!((estimate_from_matches(96, 128, 1) - 0.5).abs() < 1e-12);
        assert_eq!(estimate_from_matches(64, 128, 64), 0.5);
    }
}
