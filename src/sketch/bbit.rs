//! b-bit signatures (Li & König 2010): keep the lowest `b` bits of every slot, packed.
//!
//! Layout (spec §7): slot i occupies bits `i*b .. i*b+b` of a little-endian bit string, that is
//! bit p lives in byte `p / 8` at bit position `p % 8` (least significant first). For b ≥ 8 each
//! slot is therefore a little-endian integer of b/8 bytes. Padding bits of the last byte are 0.

use multiversion::multiversion;

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
    // Whole-byte widths: fixed-size lanes (this vectorizes).
    fn lanes<const W: usize>(slots: &[u64], out: &mut [u8]) {
        for (lane, &slot) in out.as_chunks_mut::<W>().0.iter_mut().zip(slots) {
            let bytes = slot.to_le_bytes();
            if let Some(low) = bytes.first_chunk::<W>() {
                *lane = *low;
            }
        }
    }
    if bits >= 8 {
        match bits {
            8 => lanes::<1>(slots, out),
            16 => lanes::<2>(slots, out),
            32 => lanes::<4>(slots, out),
            _ => lanes::<8>(slots, out),
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
    // With no minimum, the bounded count never gives up.
    Ok(count_equal_packed_at_least(a, b, num_perm, bits, 0)?.unwrap_or(0))
}

/// Like [`count_equal_packed`], but for verification against a threshold: gives `None` as
/// soon as fewer than `min_equal` fields can be equal (reading no further), and otherwise
/// the exact count. Most candidates of a query fail early, after a cache line or two of a
/// stored signature instead of all of it.
pub fn count_equal_packed_at_least(
    a: &[u8],
    b: &[u8],
    num_perm: usize,
    bits: u32,
    min_equal: usize,
) -> Result<Option<usize>> {
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
    let Some(max_differing) = num_perm.checked_sub(min_equal) else {
        return Ok(None);
    };
    Ok(
        count_differing_up_to(a, b, num_perm * bits as usize, bits, max_differing)
            .map(|d| num_perm - d),
    )
}

/// The fewest equal slots (of `num_perm`, at `bits` bits) whose [`estimate_from_matches`]
/// reaches `threshold`; `num_perm + 1` if none does.
pub fn min_matches_for(threshold: f64, num_perm: usize, bits: u32) -> usize {
    // The estimate does not decrease as matches grow: binary search.
    let (mut lo, mut hi) = (0, num_perm + 1);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if estimate_from_matches(mid, num_perm, bits) < threshold {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// A bound below [`min_matches_for`]: the estimate inverted in closed form, less one slot
/// (so that rounding, and a threshold computed another way, never put it above the exact
/// count); 0 for a threshold of 0 or less. For a gate computed per candidate, where the
/// search would cost more than the comparison it saves.
pub fn min_matches_bound(threshold: f64, num_perm: usize, bits: u32) -> usize {
    if threshold.is_nan() || threshold <= 0.0 {
        return 0;
    }
    // (A cast truncates: the floor of a positive number, without a call to `floor`.)
    let chance = chance_equal(bits);
    let needed = ((threshold * (1.0 - chance) + chance) * num_perm as f64) as usize;
    needed.saturating_sub(1).min(num_perm)
}

/// Counts b-bit fields that differ among the first `total_bits` bits of `a` and `b`, or `None`
/// once more than `limit` fields differ (checked once per 64-byte block, so a signature is
/// read no further than the block where that happens).
///
/// Every candidate of a query passes through here: `multiversion` compiles it for AVX-512,
/// AVX2 (with `popcnt`) and the baseline and picks one at run time (the portable build has no
/// `popcnt`, and its 64-byte blocks then take one SIMD register or two instead of eight words);
/// all versions count the same fields.
#[multiversion(targets(
    "x86_64+avx512f+avx512bw+avx512vl+popcnt",
    "x86_64+avx2+popcnt",
    "x86_64+popcnt",
    "aarch64+neon"
))]
fn count_differing_up_to(
    a: &[u8],
    b: &[u8],
    total_bits: usize,
    bits: u32,
    limit: usize,
) -> Option<usize> {
    let fold = |x: u64| fold_fields(x, bits);
    // Whole words first (in 64-byte blocks, checking the limit after each), then the word
    // that holds the end of the last field, with the padding bits after it masked off
    // (whatever they hold).
    let whole = (total_bits / 64) * 8;
    let (a_whole, a_tail) = a.split_at(whole.min(a.len()));
    let (b_whole, b_tail) = b.split_at(whole.min(b.len()));
    let mut differing = 0usize;
    let mut a_blocks = a_whole.chunks_exact(64);
    let mut b_blocks = b_whole.chunks_exact(64);
    for (ba, bb) in (&mut a_blocks).zip(&mut b_blocks) {
        differing += differing_in_block(ba, bb, bits);
        if differing > limit {
            return None;
        }
    }
    differing += differing_in_block(a_blocks.remainder(), b_blocks.remainder(), bits);
    let tail_bits = total_bits % 64;
    if tail_bits > 0 {
        let mut xa = [0u8; 8];
        let mut xb = [0u8; 8];
        let n = a_tail.len().min(b_tail.len()).min(8);
        if let (Some(da), Some(db), Some(sa), Some(sb)) = (
            xa.get_mut(..n),
            xb.get_mut(..n),
            a_tail.get(..n),
            b_tail.get(..n),
        ) {
            da.copy_from_slice(sa);
            db.copy_from_slice(sb);
        }
        let valid = (1u64 << tail_bits) - 1;
        differing +=
            fold((u64::from_le_bytes(xa) ^ u64::from_le_bytes(xb)) & valid).count_ones() as usize;
    }
    (differing <= limit).then_some(differing)
}

/// One bit per field: each field OR-folded onto its lowest bit, other bits cleared, so that
/// the popcount of `fold_fields(x ^ y)` is the number of fields in which `x` and `y` differ.
#[inline(always)]
fn fold_fields(mut x: u64, bits: u32) -> u64 {
    let field_low_bits = match bits {
        1 => u64::MAX,
        2 => 0x5555_5555_5555_5555,
        4 => 0x1111_1111_1111_1111,
        8 => 0x0101_0101_0101_0101,
        16 => 0x0001_0001_0001_0001,
        32 => 0x0000_0001_0000_0001,
        _ => 1,
    };
    let mut shift = 1;
    while shift < bits {
        x |= x >> shift;
        shift <<= 1;
    }
    x & field_low_bits
}

#[inline]
fn word(w: &[u8]) -> u64 {
    let mut x = [0u8; 8];
    x.copy_from_slice(w);
    u64::from_le_bytes(x)
}

/// Differing fields in a run of whole words (a 64-byte block or less; no padding bits).
#[inline(always)]
fn differing_in_block(a: &[u8], b: &[u8], bits: u32) -> usize {
    match bits {
        1 => differing_words::<1>(a, b),
        2 => differing_words::<2>(a, b),
        4 => differing_nibbles(a, b),
        8 => differing_words::<8>(a, b),
        16 => differing_words::<16>(a, b),
        32 => differing_words::<32>(a, b),
        _ => differing_words::<64>(a, b),
    }
}

/// Differing `BITS`-bit fields in whole words: each word's fields folded onto one bit and
/// counted. With the width a constant the fold is a few shifts the compiler vectorizes (a
/// lane-by-lane `!=` over byte arrays was compiled into one mask-bit extraction per field).
#[inline(always)]
fn differing_words<const BITS: u32>(a: &[u8], b: &[u8]) -> usize {
    let mut n = 0u32;
    for (wa, wb) in a.chunks_exact(8).zip(b.chunks_exact(8)) {
        n += fold_fields(word(wa) ^ word(wb), BITS).count_ones();
    }
    n as usize
}

/// Differing 4-bit fields in at most 8 whole words (one 64-byte block), counted without a
/// popcount instruction (the portable build has none, and its software popcount per word
/// cost more than the rest of the comparison): each word's fields are folded onto their
/// lowest bit and summed lane-wise (a nibble lane then holds at most 8), and the lanes are
/// added up once per block.
#[inline(always)]
fn differing_nibbles(a: &[u8], b: &[u8]) -> usize {
    const LOW: u64 = 0x1111_1111_1111_1111;
    const NIBBLES: u64 = 0x0F0F_0F0F_0F0F_0F0F;
    debug_assert!(a.len() <= 64 && b.len() <= 64);
    let mut lanes = 0u64;
    for (wa, wb) in a.chunks_exact(8).zip(b.chunks_exact(8)) {
        let mut x = word(wa) ^ word(wb);
        x |= x >> 1;
        x |= x >> 2;
        lanes += x & LOW;
    }
    // Nibbles (each <= 8) to bytes (each <= 16), then all bytes (<= 128) into the top one.
    let bytes = (lanes & NIBBLES) + ((lanes >> 4) & NIBBLES);
    (bytes.wrapping_mul(0x0101_0101_0101_0101) >> 56) as usize
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
    let chance = chance_equal(bits);
    ((p - chance) / (1.0 - chance)).clamp(0.0, 1.0)
}

/// The chance that two unrelated `bits`-bit fields are equal, `2^−bits` (0 from 64 bits),
/// built exactly from its exponent: verification asks for it per candidate, where a call to
/// `exp2` or `powi` costs more than the comparison it gates.
fn chance_equal(bits: u32) -> f64 {
    if bits >= 64 {
        return 0.0;
    }
    f64::from_bits((1023 - u64::from(bits)) << 52)
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
        let wide = [0x1122_3344_5566_7788u64, 0x99AA_BBCC_DDEE_FF00];
        assert_eq!(pack(&wide, 8).unwrap(), vec![0x88, 0x00]);
        assert_eq!(
            pack(&wide, 32).unwrap(),
            vec![0x88, 0x77, 0x66, 0x55, 0x00, 0xFF, 0xEE, 0xDD]
        );
        assert_eq!(
            pack(&wide[..1], 64).unwrap(),
            0x1122_3344_5566_7788u64.to_le_bytes()
        );
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

    /// The field-by-field count, the plain definition the word-parallel code must equal.
    fn naive_equal(a: &[u64], b: &[u64], bits: u32) -> usize {
        a.iter()
            .zip(b)
            .filter(|(x, y)| *x & low_mask(bits) == *y & low_mask(bits))
            .count()
    }

    #[test]
    fn bounded_count_is_exact_or_gives_up_only_below_the_bound() {
        let mut state = 0x1234_5678_9ABC_DEF0u64;
        let mut next = move || {
            state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z ^ (z >> 31)
        };
        for &bits in &SUPPORTED_BITS {
            for num_perm in [1usize, 3, 7, 8, 31, 64, 100, 127, 128, 129, 256, 512] {
                for _ in 0..20 {
                    let a: Vec<u64> = (0..num_perm).map(|_| next()).collect();
                    // Agree on a random share of the slots, so counts spread over 0..=k.
                    let share = next() % 101;
                    let b: Vec<u64> = a
                        .iter()
                        .map(|&x| if next() % 100 < share { x } else { next() })
                        .collect();
                    let (pa, mut pb) = (pack(&a, bits).unwrap(), pack(&b, bits).unwrap());
                    // Garbage in the padding bits of the last byte must not count.
                    let used = num_perm * bits as usize % 8;
                    if used != 0
                        && let Some(last) = pb.last_mut()
                    {
                        *last |= !((1u8 << used) - 1);
                    }
                    let want = naive_equal(&a, &b, bits);
                    assert_eq!(count_equal_packed(&pa, &pb, num_perm, bits).unwrap(), want);
                    for min_equal in [0, 1, want.saturating_sub(1), want, want + 1, num_perm] {
                        let got = count_equal_packed_at_least(&pa, &pb, num_perm, bits, min_equal)
                            .unwrap();
                        let expect = (want >= min_equal).then_some(want);
                        assert_eq!(got, expect, "bits {bits} k {num_perm} min {min_equal}");
                    }
                    assert_eq!(
                        count_equal_packed_at_least(&pa, &pb, num_perm, bits, num_perm + 1)
                            .unwrap(),
                        None
                    );
                }
            }
        }
    }

    #[test]
    fn chance_equal_is_two_to_minus_bits() {
        for bits in 0..64u32 {
            assert_eq!(chance_equal(bits), (-(bits as f64)).exp2(), "bits {bits}");
        }
        assert_eq!(chance_equal(64), 0.0);
    }

    #[test]
    fn the_bound_is_never_above_the_fewest_matches() {
        for &bits in &SUPPORTED_BITS {
            for num_perm in [1usize, 16, 100, 128, 256, 512] {
                for i in 0..=1000 {
                    let t = i as f64 / 1000.0;
                    let exact = min_matches_for(t, num_perm, bits);
                    let bound = min_matches_bound(t, num_perm, bits);
                    // Within the floor, the slot of slack and the exact count's own rounding.
                    assert!(
                        bound + 3 >= exact.min(num_perm),
                        "bits {bits} k {num_perm} t {t}"
                    );
                    assert!(
                        bound <= exact.saturating_sub(1),
                        "bits {bits} k {num_perm} t {t}"
                    );
                }
            }
        }
    }

    #[test]
    fn min_matches_matches_the_threshold_test() {
        for &bits in &SUPPORTED_BITS {
            for num_perm in [1usize, 16, 100, 128, 256] {
                for t in [0.0, 0.01, 0.3, 0.5, 0.8, 0.8000001, 0.95, 1.0, 1.5] {
                    let min = min_matches_for(t, num_perm, bits);
                    for m in 0..=num_perm {
                        assert_eq!(
                            estimate_from_matches(m, num_perm, bits) >= t,
                            m >= min,
                            "bits {bits} k {num_perm} t {t} m {m}"
                        );
                    }
                }
            }
        }
    }
}
