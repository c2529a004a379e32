//! Fixed-width bit fields, packed LSB first: the widths a range of values needs, the writer
//! the encoder packs with and the bounds-checked reads the decoder uses on the query path.

#![deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used)]

/// Bits needed to store every value in `0..n` (0 when `n ≤ 1`).
pub(super) fn bits_below(n: u64) -> u32 {
    if n <= 1 {
        0
    } else {
        64 - (n - 1).leading_zeros()
    }
}

/// Bits needed to store the value `v` itself.
pub(super) fn bits_for(v: u64) -> u32 {
    64 - v.leading_zeros()
}

/// The `bits` low bits set (all 64 when `bits ≥ 64`).
pub(super) fn low_mask(bits: u32) -> u64 {
    if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    }
}

/// Appends fixed-width little-endian bit fields (LSB first) to a byte vector.
pub(super) struct BitWriter {
    out: Vec<u8>,
    acc: u128,
    nbits: u32,
}

impl BitWriter {
    pub(super) fn new(capacity_bytes: usize) -> Self {
        BitWriter {
            out: Vec::with_capacity(capacity_bytes),
            acc: 0,
            nbits: 0,
        }
    }

    pub(super) fn push(&mut self, value: u64, width: u32) {
        debug_assert!(width <= 64 && (width == 64 || value >> width == 0));
        if width == 0 {
            return;
        }
        // Fewer than 64 bits wait in `acc` between calls; whole 64-bit words leave at once.
        self.acc |= u128::from(value & low_mask(width)) << self.nbits;
        self.nbits += width;
        if self.nbits >= 64 {
            self.out.extend_from_slice(&(self.acc as u64).to_le_bytes());
            self.acc >>= 64;
            self.nbits -= 64;
        }
    }

    pub(super) fn finish(mut self) -> Vec<u8> {
        let tail = self.nbits.div_ceil(8) as usize;
        self.out
            .extend_from_slice(self.acc.to_le_bytes().get(..tail).unwrap_or_default());
        self.out
    }
}

/// Reads `width ≤ 64` bits starting `bit` bits after byte `start`; `None` when out of bounds.
pub(super) fn read_bits(bytes: &[u8], start: usize, bit: u64, width: u32) -> Option<u64> {
    if width == 0 {
        return Some(0);
    }
    let byte = start.checked_add(usize::try_from(bit / 8).ok()?)?;
    let shift = (bit % 8) as u32;
    // Fast path: a fixed 16-byte load (no variable-length copy) when the bytes are there.
    if let Some(window) = byte
        .checked_add(16)
        .and_then(|end| bytes.get(byte..end))
        .and_then(|w| <[u8; 16]>::try_from(w).ok())
    {
        let v = u128::from_le_bytes(window) >> shift;
        return Some((v as u64) & low_mask(width));
    }
    let nbytes = (shift + width).div_ceil(8) as usize;
    let mut buf = [0u8; 16];
    let src = bytes.get(byte..byte.checked_add(nbytes)?)?;
    buf.get_mut(..nbytes)?.copy_from_slice(src);
    let v = u128::from_le_bytes(buf) >> shift;
    Some((v as u64) & low_mask(width))
}

pub(super) fn read_u32(bytes: &[u8], at: usize) -> Option<u32> {
    let b = bytes.get(at..at.checked_add(4)?)?;
    Some(u32::from_le_bytes(b.try_into().ok()?))
}

#[cfg(test)]
mod tests {
    use super::super::test_rng::next;
    use super::*;

    /// The word-at-a-time writer lays out bits exactly as writing them one by one would
    /// (LSB first), for every width, and `read_bits` reads each field back.
    #[test]
    fn bit_writer_matches_a_bit_by_bit_reference() {
        let mut rng = 1u64;
        for round in 0..200 {
            let fields: Vec<(u64, u32)> = (0..(round % 40))
                .map(|_| {
                    let width = (next(&mut rng) % 65) as u32;
                    (next(&mut rng) & low_mask(width), width)
                })
                .collect();
            let mut w = BitWriter::new(0);
            let mut reference: Vec<u8> = Vec::new();
            let mut bit = 0usize;
            for &(value, width) in &fields {
                w.push(value, width);
                for b in 0..width {
                    if bit.is_multiple_of(8) {
                        reference.push(0);
                    }
                    if let Some(last) = reference.last_mut().filter(|_| (value >> b) & 1 == 1) {
                        *last |= 1 << (bit % 8);
                    }
                    bit += 1;
                }
            }
            let bytes = w.finish();
            assert_eq!(bytes, reference, "fields {fields:?}");
            let mut at = 0u64;
            for &(value, width) in &fields {
                assert_eq!(read_bits(&bytes, 0, at, width), Some(value));
                at += u64::from(width);
            }
        }
    }
}
