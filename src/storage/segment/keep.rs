//! The KEEP column (`format/segment.md`, section kind 10): one value per document of the
//! index's keep type, captured from a field of its input row, which `dedup --keep max:FIELD`
//! and `min:FIELD` rank by. Numbers are 8-byte rows after the presence bitmap; strings an
//! offset table of `doc_count + 1` u64s (relative to the table's end), then their bytes.

#![deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used)]

use std::cmp::Ordering;

use super::reader::Segment;
use crate::Result;

/// The longest string a KEEP value may be, in bytes (the WAL codes its length as a u16).
pub const MAX_KEEP_STRING: usize = u16::MAX as usize;

/// The type of an index's keep values, fixed by the first `add --keep-field`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeepType {
    /// 64-bit signed integers.
    I64,
    /// 64-bit IEEE floats, never NaN.
    F64,
    /// Byte strings of at most [`MAX_KEEP_STRING`] bytes, compared bytewise.
    Str,
}

impl KeepType {
    /// The code the manifest and the section's `width_a` store.
    pub fn code(self) -> u8 {
        match self {
            KeepType::I64 => 1,
            KeepType::F64 => 2,
            KeepType::Str => 3,
        }
    }

    /// The type of `code`, if it is one.
    pub fn from_code(code: u8) -> Option<KeepType> {
        match code {
            1 => Some(KeepType::I64),
            2 => Some(KeepType::F64),
            3 => Some(KeepType::Str),
            _ => None,
        }
    }

    /// The name `stats` shows.
    pub fn name(self) -> &'static str {
        match self {
            KeepType::I64 => "i64",
            KeepType::F64 => "f64",
            KeepType::Str => "string",
        }
    }
}

/// One document's keep value.
#[derive(Clone, Debug)]
pub enum KeepValue {
    /// An integer.
    Int(i64),
    /// A float (never NaN).
    Float(f64),
    /// A string's bytes.
    Str(Box<[u8]>),
}

impl PartialEq for KeepValue {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (KeepValue::Int(a), KeepValue::Int(b)) => a == b,
            (KeepValue::Float(a), KeepValue::Float(b)) => a.to_bits() == b.to_bits(),
            (KeepValue::Str(a), KeepValue::Str(b)) => a == b,
            _ => false,
        }
    }
}

impl Eq for KeepValue {}

impl KeepValue {
    /// Its type.
    pub fn keep_type(&self) -> KeepType {
        match self {
            KeepValue::Int(_) => KeepType::I64,
            KeepValue::Float(_) => KeepType::F64,
            KeepValue::Str(_) => KeepType::Str,
        }
    }

    /// This value as one of type `ty`, or why it cannot be: an integer goes into a float
    /// column when it converts exactly (|v| ≤ 2⁵³); a NaN, a string too long, or another
    /// type, is refused.
    pub fn into_type(self, ty: KeepType) -> std::result::Result<KeepValue, String> {
        const EXACT_IN_F64: u64 = 1 << 53;
        match (self, ty) {
            (KeepValue::Float(f), _) if f.is_nan() => Err("NaN is not a keep value".into()),
            (KeepValue::Int(v), KeepType::F64) if v.unsigned_abs() <= EXACT_IN_F64 => {
                Ok(KeepValue::Float(v as f64))
            }
            (KeepValue::Int(v), KeepType::F64) => Err(format!(
                "the integer {v} has no exact f64 (the index's keep values are f64)"
            )),
            (KeepValue::Str(s), KeepType::Str) if s.len() > MAX_KEEP_STRING => Err(format!(
                "a string of {} bytes (at most {MAX_KEEP_STRING})",
                s.len()
            )),
            (v, ty) if v.keep_type() == ty => Ok(v),
            (v, ty) => Err(format!(
                "a value of type {} in an index whose keep values are {}",
                v.keep_type().name(),
                ty.name()
            )),
        }
    }

    /// The order `max` and `min` rank by: numbers by value, strings bytewise. Values of
    /// different types (never in one index) order by type.
    pub fn rank_cmp(&self, other: &KeepValue) -> Ordering {
        match (self, other) {
            (KeepValue::Int(a), KeepValue::Int(b)) => a.cmp(b),
            (KeepValue::Float(a), KeepValue::Float(b)) => {
                a.partial_cmp(b).unwrap_or(Ordering::Equal)
            }
            (KeepValue::Str(a), KeepValue::Str(b)) => a.cmp(b),
            (a, b) => a.keep_type().code().cmp(&b.keep_type().code()),
        }
    }

    /// The bytes a segment row and a WAL field store (strings without their length).
    pub(crate) fn to_bytes(&self) -> Vec<u8> {
        match self {
            KeepValue::Int(v) => v.to_le_bytes().to_vec(),
            KeepValue::Float(f) => f.to_bits().to_le_bytes().to_vec(),
            KeepValue::Str(s) => s.to_vec(),
        }
    }

    /// The value of type `ty` that `bytes` store (8 bytes for a number): `None` when a
    /// number's bytes are not 8 long, or are a NaN.
    pub(crate) fn from_bytes(ty: KeepType, bytes: &[u8]) -> Option<KeepValue> {
        let eight = || <[u8; 8]>::try_from(bytes).ok();
        match ty {
            KeepType::I64 => Some(KeepValue::Int(i64::from_le_bytes(eight()?))),
            KeepType::F64 => Some(f64::from_bits(u64::from_le_bytes(eight()?)))
                .filter(|f| !f.is_nan())
                .map(KeepValue::Float),
            KeepType::Str => Some(KeepValue::Str(bytes.into())),
        }
    }
}

/// A document's place in an order by value (a keep value, or a set size as an integer):
/// documents with a value first, lowest first (highest first when `descending`), then those
/// without one, all tied. Ties are for the caller to break (by age).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeepRank {
    /// The value ranked by, if the document has one.
    pub value: Option<KeepValue>,
    /// Highest first.
    pub descending: bool,
}

impl Ord for KeepRank {
    fn cmp(&self, other: &Self) -> Ordering {
        match (&self.value, &other.value) {
            (Some(a), Some(b)) if self.descending => b.rank_cmp(a),
            (Some(a), Some(b)) => a.rank_cmp(b),
            (a, b) => a.is_none().cmp(&b.is_none()),
        }
    }
}

impl PartialOrd for KeepRank {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// An index's KEEP column: the type of its values and the field they come from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeepColumn {
    /// The values' type.
    pub keep_type: KeepType,
    /// The UTF-8 name of the captured field (1 to 255 bytes).
    pub field: String,
}

/// The KEEP section being built, a row at a time in ordinal order.
#[derive(Clone, Debug)]
pub(super) struct KeepBuilder {
    keep_type: KeepType,
    presence: Vec<u64>,
    /// Numbers: 8 bytes a row. Strings: the bytes of every value, in order.
    values: Vec<u8>,
    /// Strings: where each row's bytes end.
    ends: Vec<u64>,
    rows: usize,
}

impl KeepBuilder {
    pub(super) fn new(keep_type: KeepType) -> Self {
        KeepBuilder {
            keep_type,
            presence: Vec::new(),
            values: Vec::new(),
            ends: Vec::new(),
            rows: 0,
        }
    }

    pub(super) fn keep_type(&self) -> KeepType {
        self.keep_type
    }

    pub(super) fn rows(&self) -> usize {
        self.rows
    }

    /// Appends the next row (a value of another type is stored as none; the writers check
    /// types before this).
    pub(super) fn push(&mut self, value: Option<&KeepValue>) {
        if self.rows.is_multiple_of(64) {
            self.presence.push(0);
        }
        let value = value.filter(|v| v.keep_type() == self.keep_type);
        if let (Some(_), Some(word)) = (value, self.presence.last_mut()) {
            *word |= 1 << (self.rows % 64);
        }
        match (self.keep_type, value) {
            (KeepType::Str, v) => {
                self.values
                    .extend_from_slice(&v.map(KeepValue::to_bytes).unwrap_or_default());
                self.ends.push(self.values.len() as u64);
            }
            (_, Some(v)) => self.values.extend_from_slice(&v.to_bytes()),
            (_, None) => self.values.extend_from_slice(&[0; 8]),
        }
        self.rows += 1;
    }

    pub(super) fn section(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.presence.len() * 8 + self.values.len());
        for w in &self.presence {
            out.extend_from_slice(&w.to_le_bytes());
        }
        if self.keep_type == KeepType::Str {
            for end in std::iter::once(0).chain(self.ends.iter().copied()) {
                out.extend_from_slice(&end.to_le_bytes());
            }
        }
        out.extend_from_slice(&self.values);
        out
    }
}

/// Where a segment's KEEP section is, and its type.
#[derive(Clone, Copy, Debug)]
pub(super) struct KeepSection {
    pub(super) start: usize,
    pub(super) end: usize,
    pub(super) keep_type: KeepType,
}

/// Whether a KEEP section of `len` bytes with `width_a` = `code` fits `doc_count` rows.
pub(super) fn keep_len_ok(code: u32, doc_count: u64, len: u64) -> bool {
    let presence = doc_count.div_ceil(64).saturating_mul(8);
    match u8::try_from(code).ok().and_then(KeepType::from_code) {
        Some(KeepType::Str) => doc_count
            .checked_add(1)
            .and_then(|n| n.checked_mul(8))
            .and_then(|t| t.checked_add(presence))
            .is_some_and(|min| min <= len),
        Some(_) => {
            doc_count
                .checked_mul(8)
                .and_then(|v| v.checked_add(presence))
                == Some(len)
        }
        None => false,
    }
}

impl<B: AsRef<[u8]>> Segment<B> {
    /// The keep value of the document at ordinal (row) `i`, checked against the block
    /// checksums: `None` for a row without one, or a segment without the column.
    pub fn keep_value_at(&self, i: u64) -> Result<Option<KeepValue>> {
        let Some(section) = self.layout.keep else {
            return Ok(None);
        };
        let at = |n: u64| (n as usize).saturating_mul(8);
        let values_at = section.start + at(self.layout.doc_count.div_ceil(64));
        match section.keep_type {
            KeepType::Str => self.keep_string_at(section, values_at, i),
            ty => Ok(self
                .column_row::<8>(section.start, i, "keep value")?
                .map(|b| KeepValue::from_bytes(ty, &b).ok_or(values_at + at(i)))
                .transpose()
                .map_err(|off| self.err(off, format!("row {i}: a NaN keep value")))?),
        }
    }

    /// Row `i` of a string KEEP section whose offset table starts at `table`: its range must
    /// lie inside the section, be empty for a row without a value, and start where the
    /// previous row's ended.
    fn keep_string_at(
        &self,
        section: KeepSection,
        table: usize,
        i: u64,
    ) -> Result<Option<KeepValue>> {
        let doc_count = self.layout.doc_count;
        if i >= doc_count {
            return Err(crate::Error::invalid(
                "row",
                format!("{i} is past the {doc_count} documents"),
            ));
        }
        let word_at = section.start + (i / 64) as usize * 8;
        let offset_at = table + i as usize * 8;
        self.check(word_at, 8)?;
        self.check(offset_at, 16)?;
        let u64_at = |at: usize| {
            self.data()
                .get(at..at + 8)
                .and_then(|b| <[u8; 8]>::try_from(b).ok())
                .map(u64::from_le_bytes)
                .ok_or_else(|| self.err(at, "keep value table out of bounds"))
        };
        let present = (u64_at(word_at)? >> (i % 64)) & 1 == 1;
        let (start, end) = (u64_at(offset_at)?, u64_at(offset_at + 8)?);
        let bytes_at = table + (doc_count as usize + 1) * 8;
        let range = usize::try_from(start)
            .ok()
            .zip(usize::try_from(end).ok())
            .filter(|&(s, e)| s <= e && e - s <= MAX_KEEP_STRING)
            .map(|(s, e)| (bytes_at.saturating_add(s), bytes_at.saturating_add(e)))
            .filter(|&(_, e)| e <= section.end)
            .ok_or_else(|| self.err(offset_at, format!("row {i}: a bad keep value range")))?;
        if i == 0 && start != 0 {
            return Err(self.err(offset_at, "the keep values do not start at 0"));
        }
        if !present {
            return match start == end {
                true => Ok(None),
                false => Err(self.err(offset_at, format!("row {i} has no keep value but bytes"))),
            };
        }
        self.check(range.0, range.1 - range.0)?;
        let bytes = self
            .data()
            .get(range.0..range.1)
            .ok_or_else(|| self.err(range.0, "keep value out of bounds"))?;
        Ok(Some(KeepValue::Str(bytes.into())))
    }

    /// A string KEEP section's last offset must be where the section ends.
    pub(super) fn verify_keep_end(&self) -> Result<()> {
        let Some(section) = self.layout.keep.filter(|s| s.keep_type == KeepType::Str) else {
            return Ok(());
        };
        let doc_count = self.layout.doc_count as usize;
        let table = section.start + doc_count.div_ceil(64) * 8;
        let last_at = table + doc_count * 8;
        self.check(last_at, 8)?;
        let last = self
            .data()
            .get(last_at..last_at + 8)
            .and_then(|b| <[u8; 8]>::try_from(b).ok())
            .map(u64::from_le_bytes);
        let bytes = (section.end - table - (doc_count + 1) * 8) as u64;
        match last == Some(bytes) {
            true => Ok(()),
            false => Err(self.err(last_at, "the keep values do not end with their section")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_go_into_float_columns_only_when_exact() {
        let ok = KeepValue::Int(1 << 53).into_type(KeepType::F64);
        assert_eq!(ok, Ok(KeepValue::Float(9_007_199_254_740_992.0)));
        assert!(
            KeepValue::Int((1 << 53) + 1)
                .into_type(KeepType::F64)
                .is_err()
        );
        assert!(KeepValue::Float(f64::NAN).into_type(KeepType::F64).is_err());
        assert!(KeepValue::Float(1.5).into_type(KeepType::I64).is_err());
        let long = KeepValue::Str(vec![b'a'; MAX_KEEP_STRING + 1].into());
        assert!(long.into_type(KeepType::Str).is_err());
    }

    #[test]
    fn codes_round_trip() {
        for ty in [KeepType::I64, KeepType::F64, KeepType::Str] {
            assert_eq!(KeepType::from_code(ty.code()), Some(ty));
        }
        assert_eq!(KeepType::from_code(0), None);
        assert_eq!(KeepType::from_code(4), None);
    }
}
