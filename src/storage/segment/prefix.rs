//! Prefix tables, the sorted `(key32, value)` lists behind the key index and every band (see
//! `format/segment.md`): a directory indexed by the top bits of the key, then the bit-packed
//! entries (key suffix, value). Here are the table's encoder and its in-place decoder (entry
//! reads, bucket lookup, checked full scan).

#![deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used)]

use super::bits::{BitWriter, low_mask, read_bits, read_u32};
use super::reader::Segment;
use crate::{Error, Result};

/// Largest directory prefix a prefix table may use (a 1 GiB directory).
pub(super) const MAX_PREFIX_BITS: u32 = 28;

/// The prefix-bit count that makes a prefix table of `n` entries smallest (ties: more bits).
fn choose_prefix_bits(n: u64, value_bits: u32) -> u32 {
    let mut best = (u128::MAX, 0);
    for p in 0..=MAX_PREFIX_BITS {
        let dir_bits = 32 * ((1u128 << p) + 1);
        let entry_bits = u128::from(n) * u128::from(32 - p + value_bits);
        let total = dir_bits + entry_bits;
        if total <= best.0 {
            best = (total, p);
        }
    }
    best.1
}

/// Encodes a prefix table (see `format/segment.md`): `entries` sorted by (key32, value).
pub(super) fn encode_prefix_table(
    entries: &[(u32, u64)],
    value_bits: u32,
) -> Result<(Vec<u8>, u32)> {
    let n = entries.len() as u64;
    if n > u64::from(u32::MAX) {
        return Err(Error::invalid(
            "segment",
            format!("a table would hold {n} entries, more than 2^32 − 1"),
        ));
    }
    let p = choose_prefix_bits(n, value_bits);
    let s = 32 - p;
    let slots = 1usize << p;
    let mut dir = Vec::with_capacity((slots + 1) * 4);
    let mut i = 0usize;
    for slot in 0..=slots {
        while let Some(&(k, _)) = entries.get(i) {
            let k_slot = if p == 0 { 0 } else { (k >> s) as usize };
            if k_slot < slot {
                i += 1;
            } else {
                break;
            }
        }
        dir.extend_from_slice(&(i as u32).to_le_bytes());
    }
    let width = u64::from(s + value_bits);
    let mut w = BitWriter::new((n * width).div_ceil(8) as usize);
    let smask = low_mask(s);
    if s + value_bits <= 64 {
        for &(k, v) in entries {
            w.push((u64::from(k) & smask) | (v << s), s + value_bits);
        }
    } else {
        for &(k, v) in entries {
            w.push(u64::from(k) & smask, s);
            w.push(v, value_bits);
        }
    }
    dir.extend_from_slice(&w.finish());
    Ok((dir, p))
}

/// A bit-packed prefix table inside the file (key index or one band).
#[derive(Clone, Copy, Debug)]
pub(super) struct Table {
    /// Absolute offset of the directory.
    pub(super) offset: usize,
    /// Absolute offset of the packed entries.
    pub(super) entries: usize,
    pub(super) count: u64,
    pub(super) prefix_bits: u32,
    pub(super) value_bits: u32,
}

impl Table {
    pub(super) fn suffix_bits(&self) -> u32 {
        32 - self.prefix_bits
    }
    pub(super) fn width(&self) -> u64 {
        u64::from(self.suffix_bits() + self.value_bits)
    }
    pub(super) fn slots(&self) -> u64 {
        1u64 << self.prefix_bits
    }
}

/// Decoding a prefix table in place, from the segment's bytes. Every read is bounds-checked and
/// a failure is a corruption error at the byte offset.
impl<B: AsRef<[u8]>> Segment<B> {
    /// Entry index at which directory slot `slot` starts.
    pub(super) fn dir(&self, t: &Table, slot: u64) -> Result<u64> {
        let at = t.offset + (slot as usize) * 4;
        self.check(at, 4)?;
        read_u32(self.data(), at)
            .map(u64::from)
            .ok_or_else(|| self.err(at, "directory out of bounds"))
    }

    /// Where directory slot `slot`'s entries start and end, read without checking the bytes
    /// against their block checksum: only for prefetch hints (a damaged directory then asks
    /// the CPU for the wrong lines; the lookup itself checks what it reads).
    pub(super) fn dir_range_unchecked(&self, t: &Table, slot: u64) -> Option<(u64, u64)> {
        let at = t
            .offset
            .checked_add(usize::try_from(slot).ok()?.checked_mul(4)?)?;
        let data = self.data();
        Some((
            u64::from(read_u32(data, at)?),
            u64::from(read_u32(data, at.checked_add(4)?)?),
        ))
    }

    /// (suffix, value) of entry `i`.
    pub(super) fn entry(&self, t: &Table, i: u64) -> Result<(u64, u64)> {
        self.entry_in(self.data(), t, i)
    }

    /// (suffix, value) of entry `i`, read from `data` (the segment's bytes: a caller reading
    /// many entries fetches them once, not once per entry through the map's indirection).
    #[inline]
    fn entry_in(&self, data: &[u8], t: &Table, i: u64) -> Result<(u64, u64)> {
        let width = t.width();
        self.check_bits(t.entries, i * width, width.min(u64::from(u32::MAX)) as u32)?;
        self.read_entry(data, t, i)
    }

    /// (suffix, value) of entry `i`, bounds-checked but not checked against its block's
    /// checksum: only for a caller that has checked the whole table.
    #[inline(always)]
    fn read_entry(&self, data: &[u8], t: &Table, i: u64) -> Result<(u64, u64)> {
        let width = t.width();
        let bit = i * width;
        let s = t.suffix_bits();
        if width <= 64 {
            // Suffix and value in one read.
            return read_bits(data, t.entries, bit, width as u32)
                .map(|x| (x & low_mask(s), x >> s))
                .ok_or_else(|| self.err(t.entries + (bit / 8) as usize, "entry out of bounds"));
        }
        let suffix = read_bits(data, t.entries, bit, s);
        let value = read_bits(data, t.entries, bit + u64::from(s), t.value_bits);
        match (suffix, value) {
            (Some(a), Some(b)) => Ok((a, b)),
            _ => Err(self.err(t.entries + (bit / 8) as usize, "entry out of bounds")),
        }
    }

    /// The directory slot of `key32`, the key's suffix, and the slot's entry range (checked
    /// against the table).
    fn slot_of(&self, t: &Table, key32: u32) -> Result<(u64, u64, u64, u64)> {
        let s = t.suffix_bits();
        let slot = if t.prefix_bits == 0 {
            0
        } else {
            u64::from(key32 >> s)
        };
        let suffix = u64::from(key32) & low_mask(s);
        // The slot's start and the next slot's (its end), adjacent: one check, two reads.
        let at = t.offset + (slot as usize) * 4;
        self.check(at, 8)?;
        let (start, end) = self
            .dir_range_unchecked(t, slot)
            .ok_or_else(|| self.err(at, "directory out of bounds"))?;
        if start > end || end > t.count {
            return Err(self.err(
                t.offset + slot as usize * 4,
                format!(
                    "directory slot {slot}: range {start}..{end} outside 0..{}",
                    t.count
                ),
            ));
        }
        Ok((slot, suffix, start, end))
    }

    /// Calls `f(index, value)` for each entry whose key is `key32`, in order: one lower-bound
    /// search over the key's directory slot, then a scan that decodes each entry once.
    #[inline]
    pub(super) fn for_each_value_of(
        &self,
        t: &Table,
        key32: u32,
        mut f: impl FnMut(u64, u64) -> Result<()>,
    ) -> Result<()> {
        let (slot, suffix, start, end) = self.slot_of(t, key32)?;
        let data = self.data();
        let width = t.width();
        // The search and the scan read no further than the slot's entries: their bytes are
        // checked once here, not entry by entry (each check is a bitmap test, and the search
        // reads several entries of a lookup that finds none or a few).
        if width <= 64 && start < end {
            let (from, to) = (
                (start * width / 8) as usize,
                (end * width).div_ceil(8) as usize,
            );
            self.check(t.entries + from, to - from)?;
        }
        // (suffix, value) of entry `i`, its bytes checked above.
        let entry_at = |i: u64| -> Result<(u64, u64)> {
            if width <= 64 {
                let bit = i * width;
                read_bits(data, t.entries, bit, width as u32)
                    .map(|x| (x & low_mask(t.suffix_bits()), x >> t.suffix_bits()))
                    .ok_or_else(|| self.err(t.entries + (bit / 8) as usize, "entry out of bounds"))
            } else {
                self.entry_in(data, t, i)
            }
        };
        let (mut lo, mut hi) = (start, end);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if entry_at(mid)?.0 < suffix {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        for i in lo..end {
            let (sfx, value) = entry_at(i)?;
            if sfx != suffix {
                if sfx < suffix {
                    return Err(self.err(
                        t.offset + slot as usize * 4,
                        format!("directory slot {slot}: entries not sorted"),
                    ));
                }
                break;
            }
            f(i, value)?;
        }
        Ok(())
    }

    /// Index range of the entries whose key is `key32`.
    pub(super) fn lookup(&self, t: &Table, key32: u32) -> Result<(u64, u64)> {
        let mut range: Option<(u64, u64)> = None;
        self.for_each_value_of(t, key32, |i, _| {
            range = Some(range.map_or((i, i + 1), |(lo, _)| (lo, i + 1)));
            Ok(())
        })?;
        match range {
            Some(r) => Ok(r),
            None => Ok((0, 0)),
        }
    }

    /// Calls `f(index, key32, value)` for every entry in order, checking the directory.
    ///
    /// The whole table's blocks are checked before the first entry: a full scan reads every
    /// one of them anyway, and a checksum lookup per entry cost more than the reads.
    pub(super) fn for_each_entry(
        &self,
        t: &Table,
        mut f: impl FnMut(u64, u32, u64) -> Result<()>,
    ) -> Result<()> {
        let s = t.suffix_bits();
        self.check(t.offset, (t.slots() as usize + 1) * 4)?;
        self.check(
            t.entries,
            t.count.saturating_mul(t.width()).div_ceil(8) as usize,
        )?;
        let data = self.data();
        let dir = |slot: u64| {
            let at = t.offset + slot as usize * 4;
            read_u32(data, at)
                .map(u64::from)
                .ok_or_else(|| self.err(at, "directory out of bounds"))
        };
        let mut prev = dir(0)?;
        if prev != 0 {
            return Err(self.err(t.offset, "directory does not start at 0"));
        }
        for slot in 0..t.slots() {
            let next = dir(slot + 1)?;
            if next < prev || next > t.count {
                return Err(self.err(
                    t.offset + (slot as usize + 1) * 4,
                    format!("directory entry {next} out of order or past {}", t.count),
                ));
            }
            let high = if t.prefix_bits == 0 {
                0
            } else {
                (slot as u32) << s
            };
            for i in prev..next {
                let (sfx, value) = self.read_entry(data, t, i)?;
                f(i, high | sfx as u32, value)?;
            }
            prev = next;
        }
        if prev != t.count {
            return Err(self.err(
                t.offset + t.slots() as usize * 4,
                format!("directory ends at {prev}, table has {}", t.count),
            ));
        }
        Ok(())
    }

    /// Byte offset of the entry `i` starts in (for error offsets and prefetching).
    pub(super) fn entry_offset(&self, t: &Table, i: u64) -> usize {
        t.entries + ((i * t.width()) / 8) as usize
    }
}
