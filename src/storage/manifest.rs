//! The manifest (one immutable snapshot of which files make up the database) and the CURRENT
//! pointer (which manifest is live). Layouts are in `format/manifest.md`; what version 3 adds
//! (identity, features, the parameters block with bandings, per-file checksums) is placed and
//! checked by [`v3`].

use std::path::Path;

use super::codec::{Decoder, Encoder};
use super::identity::DbId;
use super::segment::{KeepColumn, KeepType};
use crate::{Error, Result};

pub(crate) mod v3;
pub use v3::{BandingV3, Features, ParamsV3};

/// The index parameters a manifest stores. The storage layer only places their fields; their
/// meaning (and their validation, reported as corruption) belongs to the layer that owns them.
pub(crate) trait StoredParams: Sized {
    /// Appends the fields, laid out as manifest version `version` (1 or 2) lays them out.
    fn encode(&self, e: &mut Encoder, version: u32);
    /// Reads and checks the fields of a manifest of version `version` (1 or 2).
    fn decode(d: &mut Decoder<'_>, path: &Path, version: u32) -> Result<Self>;
    /// Whether every document's shingle set is stored (version 3's feature STORE_SETS).
    fn store_sets(&self) -> bool;
    /// The version-3 parameters block of these parameters.
    fn to_v3(&self) -> ParamsV3;
    /// The parameters of a version-3 block that passed the format's checks, with
    /// `store_sets` from the feature bits; what the parameters' owner finds invalid is
    /// corruption (at [`v3::PARAMS_AT`]).
    fn from_v3(block: &ParamsV3, store_sets: bool, path: &Path) -> Result<Self>;
}

fn corruption(path: &Path, offset: u64, detail: impl Into<String>) -> Error {
    Error::corruption(path, offset, detail)
}

const MANIFEST_MAGIC: &[u8; 8] = b"MHDBMANI";
const CURRENT_MAGIC: &[u8; 8] = b"MHDBCURR";
/// Version of the manifest and CURRENT layouts that the database writes: version 3.
pub const MANIFEST_VERSION: u32 = MANIFEST_V3;
/// The first version, still read (version-1 databases open read-only and can be upgraded).
pub const MANIFEST_V1: u32 = 1;
/// Version 2: signatures in the segments, no identity. Read-only, as version 1.
pub const MANIFEST_V2: u32 = 2;
/// Version 3: the database's identity, feature bits, metric, bandings and per-file checksums.
pub const MANIFEST_V3: u32 = 3;
/// Bytes of a version-3 segment entry: id, base, span, docs, file_len, meta_crc.
const SEGMENT_ENTRY_V3_LEN: usize = 44;
/// Offset of a version-3 manifest's `db_id`.
const DB_ID_AT: u64 = 20;
/// Length of the CURRENT file: magic, version, generation, length, checksum, own checksum.
const CURRENT_LEN: usize = 8 + 4 + 8 + 8 + 4 + 4;

/// Checks the CRC-32 that ends every manifest and CURRENT file, over all bytes before it.
/// Done before reading any field, so a damaged version reads as corruption, not as a newer
/// format.
fn check_trailing_crc(bytes: &[u8], path: &Path, what: &str) -> Result<()> {
    let body_len = bytes.len().saturating_sub(4);
    let mut tail = Decoder::with_base(
        bytes.get(body_len..).unwrap_or_default(),
        path,
        body_len as u64,
    );
    let stored = tail.u32("checksum")?;
    let actual = crc32fast::hash(bytes.get(..body_len).unwrap_or_default());
    if stored != actual {
        return Err(corruption(
            path,
            body_len as u64,
            format!("{what} checksum mismatch: stored {stored:#010x}, computed {actual:#010x}"),
        ));
    }
    Ok(())
}

fn check_version(d: &mut Decoder<'_>, path: &Path) -> Result<u32> {
    let version = d.u32("version")?;
    if !matches!(version, MANIFEST_V1 | MANIFEST_V2 | MANIFEST_V3) {
        return Err(Error::UnsupportedVersion {
            path: path.to_path_buf(),
            found: version,
            supported: MANIFEST_V3,
        });
    }
    Ok(version)
}

/// One band-posting segment as the manifest records it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SegmentMeta {
    /// File id: the segment lives in `seg-<id>.seg`.
    pub id: u64,
    /// First document number of the segment's range.
    pub base: u64,
    /// Length of the docno range `[base, base + span)`.
    pub span: u64,
    /// Documents stored in the segment (live at the time it was written).
    pub docs: u64,
    /// Exact file length.
    pub file_len: u64,
    /// Version 1: CRC32 of the signature-log records of `[base, base + span)` (0 after).
    pub siglog_crc: u32,
    /// Version 3: the segment footer's `meta_crc`, the root of the checksums that cover
    /// every byte of the file (0 before).
    pub meta_crc: u32,
}

/// The deletion list as the manifest records it.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct DeletionsMeta {
    /// File id (`del-<id>.del`), 0 when there are no deletions.
    pub id: u64,
    /// Number of deleted document numbers in the file.
    pub count: u64,
    /// Exact file length.
    pub file_len: u64,
    /// Version 3: the list's trailing CRC (0 before, and when there is no list).
    pub crc: u32,
}

/// One committed state of the database.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Manifest<P> {
    /// The layout version of the manifest and of the files it names: [`MANIFEST_VERSION`],
    /// or [`MANIFEST_V1`] or [`MANIFEST_V2`] for a database written before version 3
    /// (read-only).
    pub format_version: u32,
    /// Generation: increases by one with every manifest written.
    pub generation: u64,
    /// Version 3: the database's identity, which every file it names carries ([`DbId::NONE`]
    /// before).
    pub db_id: DbId,
    /// Version 3: the index-wide feature bits ([`Features::NONE`] before). Bit STORE_SETS
    /// is written from the parameters ([`StoredParams::store_sets`]) and read into both.
    pub features: Features,
    /// The parameters the database was created with.
    pub params: P,
    /// Version 3: the KEEP column's type and field (feature KEEP), fixed by the first
    /// `add --keep-field`; `None` without the column. Written into the parameters block.
    pub keep: Option<KeepColumn>,
    /// Document numbers below this are in segments (or deleted); the WAL holds the rest.
    pub next_docno: u64,
    /// Version 1: signature-log records that are committed (= `next_docno`). Version 2 has
    /// no signature log (signatures are in the segments): 0.
    pub siglog_records: u64,
    /// WAL files with id ≥ this are replayed on open.
    pub wal_start: u64,
    /// Version 2: the sequence number that WAL file `wal_start` starts with (its header's
    /// `first_seq`), so that a replay can tell that a WAL file went missing. 0 in version 1.
    pub wal_next_seq: u64,
    /// Next unused file id.
    pub next_file_id: u64,
    /// Deleted document numbers still referenced by segments.
    pub deletions: DeletionsMeta,
    /// Segments, ordered by `base`.
    pub segments: Vec<SegmentMeta>,
}

impl<P: StoredParams> Manifest<P> {
    /// Serializes the manifest, checksum included, in its `format_version`'s layout.
    pub fn encode(&self) -> Vec<u8> {
        let mut e = Encoder::default();
        e.bytes(MANIFEST_MAGIC)
            .u32(self.format_version)
            .u64(self.generation);
        if self.format_version == MANIFEST_V3 {
            self.encode_v3(&mut e);
        } else {
            self.encode_v1_v2(&mut e);
        }
        e.crc();
        e.buf
    }

    fn encode_v1_v2(&self, e: &mut Encoder) {
        let v1 = self.format_version == MANIFEST_V1;
        self.params.encode(e, self.format_version);
        e.u64(self.next_docno);
        if v1 {
            e.u64(self.siglog_records);
        }
        e.u64(self.wal_start);
        if !v1 {
            e.u64(self.wal_next_seq);
        }
        e.u64(self.next_file_id)
            .u64(self.deletions.id)
            .u64(self.deletions.count)
            .u64(self.deletions.file_len)
            .u32(self.segments.len() as u32);
        for s in &self.segments {
            e.u64(s.id)
                .u64(s.base)
                .u64(s.span)
                .u64(s.docs)
                .u64(s.file_len);
            if v1 {
                e.u32(s.siglog_crc);
            }
        }
    }

    fn encode_v3(&self, e: &mut Encoder) {
        let features = self
            .features
            .with(Features::STORE_SETS, self.params.store_sets())
            .with(Features::KEEP, self.keep.is_some());
        e.bytes(&self.db_id.0).u64(features.0);
        let mut block = self.params.to_v3();
        if let Some(keep) = &self.keep {
            block.keep_type = keep.keep_type.code();
            block.keep_field = keep.field.clone();
        }
        block.encode(e);
        e.u64(self.next_docno)
            .u64(self.wal_start)
            .u64(self.wal_next_seq)
            .u64(self.next_file_id)
            .u64(self.deletions.id)
            .u64(self.deletions.count)
            .u64(self.deletions.file_len)
            .u32(self.deletions.crc)
            .u32(self.segments.len() as u32);
        for s in &self.segments {
            e.u64(s.id)
                .u64(s.base)
                .u64(s.span)
                .u64(s.docs)
                .u64(s.file_len)
                .u32(s.meta_crc);
        }
    }

    /// Parses and checks a manifest file's bytes.
    pub fn decode(bytes: &[u8], path: &Path) -> Result<Self> {
        let mut d = Decoder::new(bytes, path);
        if d.take(8, "magic")? != MANIFEST_MAGIC {
            return Err(corruption(path, 0, "not an mhdb manifest (bad magic)"));
        }
        // Every version ends with a CRC32 of all preceding bytes: check it before trusting any
        // field, so that a damaged version field reads as corruption, not as a newer format.
        if bytes.len() < 16 {
            return Err(corruption(path, 0, "manifest too short"));
        }
        check_trailing_crc(bytes, path, "manifest")?;
        let format_version = check_version(&mut d, path)?;
        let generation = d.u64("generation")?;
        let m = if format_version == MANIFEST_V3 {
            Self::decode_v3(&mut d, path, generation)?
        } else {
            Self::decode_v1_v2(&mut d, path, format_version, generation)?
        };
        d.expect_crc()?;
        d.expect_end()?;
        m.check_invariants(path)?;
        Ok(m)
    }

    /// The fields after the generation of a version-1 or version-2 manifest.
    fn decode_v1_v2(
        d: &mut Decoder<'_>,
        path: &Path,
        format_version: u32,
        generation: u64,
    ) -> Result<Self> {
        let v1 = format_version == MANIFEST_V1;
        let params = P::decode(d, path, format_version)?;
        let next_docno = d.u64("next_docno")?;
        let siglog_records = if v1 { d.u64("siglog_records")? } else { 0 };
        let wal_start = d.u64("wal_start")?;
        let wal_next_seq = if v1 { 0 } else { d.u64("wal_next_seq")? };
        let next_file_id = d.u64("next_file_id")?;
        let deletions = DeletionsMeta {
            id: d.u64("deletions id")?,
            count: d.u64("deletions count")?,
            file_len: d.u64("deletions length")?,
            crc: 0,
        };
        let count = d.u32("segment count")? as usize;
        let entry_len = if v1 { 44 } else { 40 };
        let mut segments = Vec::with_capacity(count.min(d.remaining() / entry_len));
        for _ in 0..count {
            segments.push(SegmentMeta {
                id: d.u64("segment id")?,
                base: d.u64("segment base")?,
                span: d.u64("segment span")?,
                docs: d.u64("segment docs")?,
                file_len: d.u64("segment length")?,
                siglog_crc: if v1 { d.u32("segment siglog crc")? } else { 0 },
                meta_crc: 0,
            });
        }
        Ok(Manifest {
            format_version,
            generation,
            db_id: DbId::NONE,
            features: Features::NONE,
            params,
            keep: None,
            next_docno,
            siglog_records,
            wal_start,
            wal_next_seq,
            next_file_id,
            deletions,
            segments,
        })
    }

    /// The fields after the generation of a version-3 manifest: identity, features, the
    /// parameters block, the state and the segment entries.
    fn decode_v3(d: &mut Decoder<'_>, path: &Path, generation: u64) -> Result<Self> {
        let db_id = decode_db_id(d, path)?;
        let features = Features(d.u64("features")?);
        v3::check_features(features, path)?;
        let block = ParamsV3::decode(d, path, features)?;
        v3::check_keyed_sets(features, &block.key_fingerprint, path)?;
        let params = P::from_v3(&block, features.contains(Features::STORE_SETS), path)?;
        let keep = KeepType::from_code(block.keep_type).map(|keep_type| KeepColumn {
            keep_type,
            field: block.keep_field.clone(),
        });
        let next_docno = d.u64("next_docno")?;
        let wal_start = d.u64("wal_start")?;
        let wal_next_seq = d.u64("wal_next_seq")?;
        let next_file_id = d.u64("next_file_id")?;
        let deletions = decode_deletions_v3(d, path)?;
        let count = d.u32("segment count")? as usize;
        let mut segments = Vec::with_capacity(count.min(d.remaining() / SEGMENT_ENTRY_V3_LEN));
        for _ in 0..count {
            segments.push(SegmentMeta {
                id: d.u64("segment id")?,
                base: d.u64("segment base")?,
                span: d.u64("segment span")?,
                docs: d.u64("segment docs")?,
                file_len: d.u64("segment length")?,
                siglog_crc: 0,
                meta_crc: d.u32("segment meta_crc")?,
            });
        }
        Ok(Manifest {
            format_version: MANIFEST_V3,
            generation,
            db_id,
            features,
            params,
            keep,
            next_docno,
            siglog_records: 0,
            wal_start,
            wal_next_seq,
            next_file_id,
            deletions,
            segments,
        })
    }

    fn check_invariants(&self, path: &Path) -> Result<()> {
        let bad = |detail: String| Err(corruption(path, 0, detail));
        if self.format_version == MANIFEST_V1 && self.siglog_records != self.next_docno {
            return bad(format!(
                "siglog_records {} != next_docno {}",
                self.siglog_records, self.next_docno
            ));
        }
        let mut end = 0u64;
        for s in &self.segments {
            if s.base < end
                || s.base
                    .checked_add(s.span)
                    .is_none_or(|e| e > self.next_docno)
            {
                return bad(format!(
                    "segment {} range [{}, +{}) overlaps or exceeds next_docno {}",
                    s.id, s.base, s.span, self.next_docno
                ));
            }
            if s.id >= self.next_file_id || s.docs > s.span {
                return bad(format!("segment {} has inconsistent id or counts", s.id));
            }
            end = s.base + s.span;
        }
        if self.deletions.id >= self.next_file_id && self.deletions.id != 0 {
            return bad("deletion file id beyond next_file_id".into());
        }
        Ok(())
    }
}

/// A version-3 manifest's identity: never all zero (that means "none", versions 1 and 2).
fn decode_db_id(d: &mut Decoder<'_>, path: &Path) -> Result<DbId> {
    let bytes = d.take(16, "db_id")?;
    let id = DbId(
        bytes
            .try_into()
            .map_err(|_| d.corruption("db_id is not 16 bytes"))?,
    );
    if id.is_none() {
        return Err(corruption(
            path,
            DB_ID_AT,
            "a version-3 manifest without a database identity (db_id all zero)",
        ));
    }
    Ok(id)
}

/// A version-3 manifest's deletion-list fields: all zero when it names no list.
fn decode_deletions_v3(d: &mut Decoder<'_>, path: &Path) -> Result<DeletionsMeta> {
    let at = d.offset();
    let deletions = DeletionsMeta {
        id: d.u64("deletions id")?,
        count: d.u64("deletions count")?,
        file_len: d.u64("deletions length")?,
        crc: d.u32("deletions crc")?,
    };
    if deletions.id == 0 && deletions != DeletionsMeta::default() {
        return Err(corruption(
            path,
            at,
            "deletion-list fields set without a deletion list",
        ));
    }
    Ok(deletions)
}

/// The CURRENT file: names the live manifest generation and pins its length and checksum.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Current {
    /// The version field: the live manifest's format version.
    pub version: u32,
    /// Generation of the live manifest (`MANIFEST-<generation>`).
    pub generation: u64,
    /// Its exact length.
    pub manifest_len: u64,
    /// CRC32 of its bytes.
    pub manifest_crc: u32,
}

impl Current {
    /// Serializes CURRENT.
    pub fn encode(&self) -> Vec<u8> {
        let mut e = Encoder::default();
        e.bytes(CURRENT_MAGIC)
            .u32(self.version)
            .u64(self.generation)
            .u64(self.manifest_len)
            .u32(self.manifest_crc)
            .crc();
        e.buf
    }

    /// Parses CURRENT.
    pub fn decode(bytes: &[u8], path: &Path) -> Result<Current> {
        let mut d = Decoder::new(bytes, path);
        if d.take(8, "magic")? != CURRENT_MAGIC {
            return Err(corruption(path, 0, "not an mhdb CURRENT file (bad magic)"));
        }
        if bytes.len() != CURRENT_LEN {
            return Err(corruption(
                path,
                bytes.len().min(CURRENT_LEN) as u64,
                format!("CURRENT is {} bytes, expected {CURRENT_LEN}", bytes.len()),
            ));
        }
        check_trailing_crc(bytes, path, "CURRENT")?;
        let version = check_version(&mut d, path)?;
        let c = Current {
            version,
            generation: d.u64("generation")?,
            manifest_len: d.u64("manifest length")?,
            manifest_crc: d.u32("manifest checksum")?,
        };
        d.expect_crc()?;
        d.expect_end()?;
        Ok(c)
    }

    /// Checks that `manifest` bytes are the ones CURRENT names.
    pub fn check(&self, manifest: &[u8], path: &Path) -> Result<()> {
        if manifest.len() as u64 != self.manifest_len {
            return Err(corruption(
                path,
                manifest.len() as u64,
                format!(
                    "manifest is {} bytes, CURRENT says {}",
                    manifest.len(),
                    self.manifest_len
                ),
            ));
        }
        let crc = crc32fast::hash(manifest);
        if crc != self.manifest_crc {
            return Err(corruption(
                path,
                0,
                format!(
                    "manifest checksum {crc:#010x} differs from CURRENT's {:#010x}",
                    self.manifest_crc
                ),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod v3_tests;

#[cfg(test)]
mod tests {
    use super::*;

    /// Stand-in parameters: the codec only places their fields (versions 1 and 2: the first
    /// two; version 3: the seed, the slots, the stored-sets feature and the key fingerprint).
    #[derive(Clone, Debug, PartialEq)]
    pub(super) struct Params(pub u64, pub u32, pub bool, pub [u8; 32]);

    impl StoredParams for Params {
        fn encode(&self, e: &mut Encoder, _version: u32) {
            e.u64(self.0).u32(self.1);
        }
        fn decode(d: &mut Decoder<'_>, _path: &Path, _version: u32) -> Result<Self> {
            Ok(Params(d.u64("a")?, d.u32("b")?, false, [0; 32]))
        }
        fn store_sets(&self) -> bool {
            self.2
        }
        fn to_v3(&self) -> ParamsV3 {
            ParamsV3 {
                spec_version: 1,
                kind: v3::KIND_MINHASH,
                scheme: 1,
                metric: v3::METRIC_JACCARD,
                bits: 8,
                num_perm: self.1,
                band_slots: self.1,
                seed: self.0,
                shingle_kind: v3::SHINGLE_CHAR,
                shingle_width: 5,
                shingle_flags: v3::SHINGLE_NFKC | v3::SHINGLE_LOWERCASE,
                unicode_version: 0,
                threshold: 0.8,
                bucket_cap: 4,
                max_hamming: 0,
                weighting: 0,
                keep_type: 0,
                key_fingerprint: self.3,
                bandings: vec![BandingV3::covering_all(8, 4)],
                keep_field: String::new(),
            }
        }
        fn from_v3(block: &ParamsV3, store_sets: bool, _path: &Path) -> Result<Self> {
            Ok(Params(
                block.seed,
                block.num_perm,
                store_sets,
                block.key_fingerprint,
            ))
        }
    }

    fn sample() -> Manifest<Params> {
        Manifest {
            format_version: MANIFEST_V2,
            generation: 7,
            db_id: DbId::NONE,
            features: Features::NONE,
            params: Params(0x1234_5678, 42, false, [0; 32]),
            keep: None,
            next_docno: 100,
            siglog_records: 0,
            wal_start: 3,
            wal_next_seq: 17,
            next_file_id: 9,
            deletions: DeletionsMeta {
                id: 8,
                count: 2,
                file_len: 40,
                crc: 0,
            },
            segments: vec![
                SegmentMeta {
                    id: 4,
                    base: 0,
                    span: 60,
                    docs: 58,
                    file_len: 1234,
                    siglog_crc: 0,
                    meta_crc: 0,
                },
                SegmentMeta {
                    id: 6,
                    base: 60,
                    span: 40,
                    docs: 40,
                    file_len: 999,
                    siglog_crc: 0,
                    meta_crc: 0,
                },
            ],
        }
    }

    #[test]
    fn roundtrip() {
        let m = sample();
        let bytes = m.encode();
        assert_eq!(
            Manifest::<Params>::decode(&bytes, Path::new("M")).unwrap(),
            m
        );
        let c = Current {
            version: MANIFEST_V2,
            generation: 7,
            manifest_len: bytes.len() as u64,
            manifest_crc: crc32fast::hash(&bytes),
        };
        let cb = c.encode();
        assert_eq!(Current::decode(&cb, Path::new("C")).unwrap(), c);
        c.check(&bytes, Path::new("M")).unwrap();
    }

    /// Version 1's layout (signature-log fields, no `wal_next_seq`) still reads back.
    #[test]
    fn version_1_roundtrip() {
        let mut m = sample();
        m.format_version = MANIFEST_V1;
        m.siglog_records = 100;
        m.wal_next_seq = 0;
        m.segments[0].siglog_crc = 1;
        m.segments[1].siglog_crc = 2;
        let bytes = m.encode();
        assert_eq!(bytes.len(), sample().encode().len() + 8 - 8 + 2 * 4);
        assert_eq!(
            Manifest::<Params>::decode(&bytes, Path::new("M")).unwrap(),
            m
        );
    }

    #[test]
    fn every_truncation_and_flip_is_detected() {
        let bytes = sample().encode();
        for len in 0..bytes.len() {
            assert!(Manifest::<Params>::decode(&bytes[..len], Path::new("M")).is_err());
        }
        for i in 0..bytes.len() {
            let mut b = bytes.clone();
            b[i] ^= 0x40;
            let err = Manifest::<Params>::decode(&b, Path::new("M")).unwrap_err();
            assert!(err.is_corruption(), "byte {i}: {err}");
        }
    }

    #[test]
    fn overlapping_segments_are_corruption() {
        let mut m = sample();
        m.segments[1].base = 50;
        let err = Manifest::<Params>::decode(&m.encode(), Path::new("M")).unwrap_err();
        assert!(err.is_corruption(), "{err}");
    }
}
