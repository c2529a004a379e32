//! What a segment's header says the file holds: its version, bands, optional sections and
//! docno range, checked against itself and the section count, and the kind each section of
//! the table must have (`format/segment.md`, "Sections").

#![deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use super::bits::bits_below;
use super::format::{
    FILE_ID_OFFSET, FLAG_BAND_FILTER, FLAG_EXACT_HASH, FLAG_KEEP, FLAG_SET_SIZE, FLAG_SHINGLES,
    Header, IDENTITY_TAIL_OFFSET, IdentityTail, KIND_BAND, KIND_BAND_FILTER, KIND_CHECKSUMS,
    KIND_DOC_TABLE, KIND_EXACT_HASH, KIND_HOT, KIND_KEEP, KIND_KEY_BLOB, KIND_KEY_INDEX,
    KIND_SET_SIZE, KIND_SHINGLES, KIND_SIGNATURES, RESERVED_FLAGS, SEGMENT_FORMAT_V1,
    SEGMENT_FORMAT_V2,
};
use super::open::{Metadata, bad};
use crate::{Error, Result};

/// What the header says the file holds, checked against itself and the section count.
pub(super) struct Shape {
    pub(super) version: u32,
    /// Where the data area starts: 64, or 96 in version 3.
    pub(super) header_len: usize,
    pub(super) record_bytes: usize,
    pub(super) num_bands: u32,
    /// The optional sections the header's flags name, in file order (version 3; version 2
    /// may have SHINGLES), between HOT and the band filters.
    pub(super) optional: Vec<u16>,
    /// The segment has a BAND_FILTER section per band (version 3 only), after the optional
    /// sections and before SIGNATURES.
    pub(super) has_filters: bool,
    pub(super) nsec: usize,
    pub(super) base: u64,
    pub(super) span: u64,
    pub(super) doc_count: u64,
    pub(super) docno_bits: u32,
}

impl Shape {
    pub(super) fn of(data: &[u8], meta: &Metadata<'_>, path: &Path) -> Result<Self> {
        let header = meta.header;
        let version = header.version.get();
        let nsec = meta.table.nsec;
        let num_bands = header.num_bands.get();
        let (optional, has_filters) = match meta.tail(data) {
            Some(tail) => v3_optional_sections(header, tail, path)?,
            None => {
                check_v2_reserved(header, path)?;
                // Version 2 says it stores shingle sets by the one more section.
                let sets = version == SEGMENT_FORMAT_V2
                    && (num_bands as usize).checked_add(7) == Some(nsec);
                let optional = if sets {
                    vec![KIND_SHINGLES]
                } else {
                    Vec::new()
                };
                (optional, false)
            }
        };
        if meta.footer.reserved.get() != 0 {
            return Err(bad(
                path,
                meta.table.footer_at + 12,
                "non-zero reserved bytes",
            ));
        }
        // Version 1: KEY_BLOB, DOC_TABLE, KEY_INDEX, b × BAND, HOT. Versions 2 and 3 add
        // SIGNATURES and CHECKSUMS after HOT, and the optional sections the flags name
        // (SHINGLES, EXACT_HASH, KEEP, SET_SIZE), then a BAND_FILTER per band, between HOT and SIGNATURES.
        let fixed = match version {
            SEGMENT_FORMAT_V1 => 4,
            _ => {
                let filters = if has_filters { num_bands as usize } else { 0 };
                6 + optional.len() + filters
            }
        };
        if num_bands == 0 || (num_bands as usize).checked_add(fixed) != Some(nsec) {
            return Err(bad(
                path,
                16,
                format!("{num_bands} bands but {nsec} sections"),
            ));
        }
        let (base, span, doc_count) = range_of(header, path)?;
        Ok(Shape {
            version,
            header_len: meta.header_len,
            record_bytes: header.record_bytes.get() as usize,
            num_bands,
            optional,
            has_filters,
            nsec,
            base,
            span,
            doc_count,
            docno_bits: bits_below(span),
        })
    }

    /// Index of the HOT section in the table (after the key sections and the bands).
    pub(super) fn hot_index(&self) -> usize {
        3 + self.num_bands as usize
    }

    /// Index of the first BAND_FILTER section (after HOT and the optional columns).
    pub(super) fn first_filter_index(&self) -> usize {
        self.hot_index() + 1 + self.optional.len()
    }

    /// The band of the `i`-th section if it is a BAND_FILTER.
    pub(super) fn filter_band(&self, i: usize) -> Option<u32> {
        let band = i.checked_sub(self.first_filter_index())?;
        (self.has_filters && band < self.num_bands as usize).then_some(band as u32)
    }

    /// The kind the `i`-th section must have, and its index field (the band, for a BAND or
    /// BAND_FILTER).
    pub(super) fn expected_kind(&self, i: usize) -> (u16, u32) {
        if let Some(band) = self.filter_band(i) {
            return (KIND_BAND_FILTER, band);
        }
        let hot_index = self.hot_index();
        let kind = match i {
            0 => KIND_KEY_BLOB,
            1 => KIND_DOC_TABLE,
            2 => KIND_KEY_INDEX,
            _ if i == hot_index => KIND_HOT,
            _ if i > hot_index && i + 1 == self.nsec => KIND_CHECKSUMS,
            _ if i > hot_index => match self.optional.get(i - hot_index - 1) {
                Some(&kind) => kind,
                None => KIND_SIGNATURES,
            },
            _ => KIND_BAND,
        };
        let index = if kind == KIND_BAND { (i - 3) as u32 } else { 0 };
        (kind, index)
    }
}

/// Versions 1 and 2: no flags, reserved bytes zero, and no signatures in version 1.
fn check_v2_reserved(header: &Header, path: &Path) -> Result<()> {
    let v1 = header.version.get() == SEGMENT_FORMAT_V1;
    if header.flags.get() != 0
        || header.reserved != [0; 12]
        || (v1 && header.record_bytes.get() != 0)
    {
        return Err(bad(path, 12, "unknown flags or non-zero reserved bytes"));
    }
    Ok(())
}

/// Version 3: reserved bytes zero and the flags known; the optional sections the flags name,
/// in file order, and whether BAND_FILTER sections follow them. A flag this build reserves for
/// a later one, or does not know, is refused as unsupported (checked after the metadata
/// checksum, so a damaged flag reads as corruption).
fn v3_optional_sections(
    header: &Header,
    tail: &IdentityTail,
    path: &Path,
) -> Result<(Vec<u16>, bool)> {
    if tail.reserved != [0; 4] {
        return Err(bad(path, IDENTITY_TAIL_OFFSET, "non-zero reserved bytes"));
    }
    if tail.reserved_end != [0; 16] {
        return Err(bad(path, FILE_ID_OFFSET + 8, "non-zero reserved bytes"));
    }
    let flags = header.flags.get();
    let optional = [
        (FLAG_SHINGLES, KIND_SHINGLES),
        (FLAG_EXACT_HASH, KIND_EXACT_HASH),
        (FLAG_KEEP, KIND_KEEP),
        (FLAG_SET_SIZE, KIND_SET_SIZE),
    ];
    let known = optional
        .iter()
        .fold(FLAG_BAND_FILTER, |all, (flag, _)| all | flag);
    let unknown = flags & !known;
    if unknown != 0 {
        let feature = RESERVED_FLAGS
            .iter()
            .find(|(bit, _)| unknown & bit != 0)
            .map_or_else(
                || format!("segment flag bit {}", unknown.trailing_zeros()),
                |(_, feature)| (*feature).to_string(),
            );
        return Err(Error::Unsupported {
            path: path.to_path_buf(),
            feature,
        });
    }
    let kinds = optional
        .iter()
        .filter(|(flag, _)| flags & flag != 0)
        .map(|&(_, kind)| kind)
        .collect();
    Ok((kinds, flags & FLAG_BAND_FILTER != 0))
}

/// The header's docno range and document count, checked against each other.
fn range_of(header: &Header, path: &Path) -> Result<(u64, u64, u64)> {
    let base = header.base_docno.get();
    let span = header.span.get();
    let doc_count = header.doc_count.get();
    if base.checked_add(span).is_none() || doc_count > span || doc_count > u64::from(u32::MAX) {
        return Err(bad(
            path,
            24,
            format!("bad range: base {base} span {span} docs {doc_count}"),
        ));
    }
    Ok((base, span, doc_count))
}
