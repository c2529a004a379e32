//! Statistics and full verification of a database.

use std::collections::BTreeMap;

use super::{Db, IndexParams};
use crate::sketch::SetDerivation;
use crate::storage::manifest::Features;
use crate::storage::names::{self, FileKind};
use crate::storage::segment::BucketStats;
use crate::{Error, Result};

/// Bucket sizes of one band, over all segments.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BandStats {
    /// Number of distinct buckets.
    pub buckets: u64,
    /// Median bucket size.
    pub p50: u64,
    /// 99th percentile bucket size.
    pub p99: u64,
    /// Largest bucket.
    pub max: u64,
    /// Buckets that hit the cap.
    pub hot: u64,
}

/// A summary of the database.
#[derive(Clone, Debug, PartialEq)]
pub struct Stats {
    /// The stored parameters.
    pub params: IndexParams,
    /// Live documents.
    pub live_docs: u64,
    /// Deleted documents still occupying space in segments (until compaction drops them).
    pub deleted_docs: u64,
    /// Documents in the in-memory table (not yet flushed).
    pub memtable_docs: u64,
    /// Segment files.
    pub segments: usize,
    /// Bytes per file kind: `wal`, `signatures`, `segments`, `deletions`, `manifest`.
    pub bytes: BTreeMap<&'static str, u64>,
    /// Bucket-size distribution per band.
    pub bands: Vec<BandStats>,
    /// Capped buckets over all bands.
    pub hot_buckets: u64,
    /// Probability that a pair at the threshold becomes a candidate.
    pub expected_recall_at_threshold: f64,
    /// Torn WAL tails that recovery cut and kept aside (`wal-<id>.log.torn-<offset>` files;
    /// see [`CutTail`](super::CutTail)): each may be a lost or damaged last write.
    pub torn_tails: usize,
    /// The database's format version (`format/README.md`): 1 opens read-only until
    /// `mhdb upgrade`.
    pub format_version: u32,
    /// The database's identity (`None` for format versions 1 and 2, which have none).
    pub identity: Option<super::DbId>,
    /// This database is, or descends from, an export that passed over damage its source
    /// reported ([`Db::export_past_damage`], `export --allow-damaged`): documents the damage
    /// held may be missing.
    pub copied_past_damage: bool,
    /// How the stored shingle sets were derived (`None`: the index stores none);
    /// [`SetDerivation::KeyedV2Leaking`] is a keyed index whose sets leak its keyed hashes.
    pub sets_derivation: Option<SetDerivation>,
    /// Live documents with an exact hash and without one (`format/hashing.md` §17); `None`
    /// for an index without the EXACT_HASH column.
    pub exact_hashes: Option<super::ExactHashCounts>,
    /// Live documents with a set size and without one; `None` for an index without the
    /// SET_SIZE column.
    pub set_sizes: Option<super::ColumnCounts>,
    /// The KEEP column's type and field; `None` for an index without it.
    pub keep_column: Option<crate::storage::segment::KeepColumn>,
    /// Live documents with a keep value and without one; `None` without the KEEP column.
    pub keep_values: Option<super::ColumnCounts>,
}

/// What [`Db::verify`] checked and found.
#[derive(Debug, Default)]
pub struct VerifyReport {
    /// Files checked.
    pub files_checked: usize,
    /// Every problem found (corruption names file and offset).
    pub problems: Vec<crate::Error>,
}

impl VerifyReport {
    /// True when no problem was found.
    pub fn is_ok(&self) -> bool {
        self.problems.is_empty()
    }
}

impl Db {
    /// Counts, sizes and distributions.
    pub fn stats(&self) -> Result<Stats> {
        // Read under one short hold of the state lock, never held across the I/O below (a
        // refresh or a commit waits for it) and never taken twice (a second read waits behind
        // a waiting writer: a deadlock).
        let (version, live, stored, memtable_docs) = {
            let state = self.state.read();
            let counts = (state.live_count(), state.stored_count(), state.mem.len());
            (state.version.clone(), counts.0, counts.1, counts.2 as u64)
        };
        let bands = self.params.lsh.bands;
        let mut per_band: Vec<BucketStats> = vec![BucketStats::default(); bands];
        for seg in &version.segments {
            for (band, acc) in per_band.iter_mut().enumerate() {
                acc.add(&seg.seg.bucket_stats(band)?);
            }
        }
        let band_stats = per_band
            .iter()
            .map(|b| BandStats {
                buckets: b.buckets,
                p50: b.quantile(0.5),
                p99: b.quantile(0.99),
                max: b.max(),
                hot: b.hot,
            })
            .collect::<Vec<_>>();
        let mut bytes = BTreeMap::new();
        let mut torn_tails = 0;
        for name in self
            .vfs
            .list_dir(&self.dir)
            .map_err(Error::io_on(&self.dir, "list directory"))?
        {
            let kind = match names::classify(&name) {
                Some(FileKind::TornTail(..)) => {
                    torn_tails += 1;
                    continue;
                }
                Some(FileKind::Wal(_)) => "wal",
                Some(FileKind::Segment(_)) => "segments",
                Some(FileKind::Deletions(_)) => "deletions",
                Some(FileKind::Manifest(_)) => "manifest",
                _ if name == names::SIGLOG => "signatures",
                _ => continue,
            };
            let path = self.dir.join(&name);
            let len = match self
                .vfs
                .open(&path, crate::storage::vfs::OpenMode::Read)
                .and_then(|f| f.len())
            {
                Ok(len) => len,
                // A writer in another process removed it after the listing (an obsolete file).
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(Error::io(&path, "stat", e)),
            };
            *bytes.entry(kind).or_insert(0) += len;
        }
        let [exact_hashes, keep_values, set_sizes] = self.column_counts()?;
        let keep_column = self.keep_column();
        Ok(Stats {
            format_version: version.manifest.format_version,
            identity: self.identity(),
            copied_past_damage: version
                .manifest
                .features
                .contains(Features::COPIED_PAST_DAMAGE),
            sets_derivation: super::rerank::set_derivation(&version.manifest),
            exact_hashes,
            set_sizes,
            keep_column,
            keep_values,
            params: self.params,
            live_docs: live,
            deleted_docs: stored.saturating_sub(live),
            memtable_docs,
            segments: version.segments.len(),
            bytes,
            hot_buckets: band_stats.iter().map(|b| b.hot).sum(),
            bands: band_stats,
            expected_recall_at_threshold: self.params.lsh.probability(self.params.threshold),
            torn_tails,
        })
    }

    /// How this index's stored shingle sets were derived (`format/hashing.md` §14); `None`
    /// for an index that stores none.
    pub fn sets_derivation(&self) -> Option<SetDerivation> {
        super::rerank::set_derivation(&self.state.read().version.manifest)
    }

    /// Checks every checksum and cross-file invariant of the committed files.
    pub fn verify(&self) -> Result<VerifyReport> {
        let version = self.state.read().version.clone();
        let mut report = VerifyReport::default();
        let record_bytes = self.params.sig_bytes();
        let siglog_path = self.dir.join(names::SIGLOG);
        for seg in &version.segments {
            report.files_checked += 1;
            if let Err(e) = seg.seg.verify() {
                report.problems.push(e);
            }
            if let Err(e) = version.checked_records(&seg.meta, record_bytes, &siglog_path) {
                report.problems.push(e);
            }
            for doc in seg.seg.docs() {
                let Ok((docno, _)) = doc else {
                    break; // reported by verify() above
                };
                if docno < seg.meta.base || docno >= seg.meta.base + seg.meta.span {
                    report.problems.push(Error::corruption(
                        &seg.path,
                        0,
                        format!("document {docno} outside the manifest's range"),
                    ));
                    break;
                }
            }
        }
        report.files_checked += 1; // signature log
        report.problems.extend(self.torn_tails_reported()?);
        Ok(report)
    }

    /// The torn WAL tails this database reports as damage: those a read-only open found and
    /// left in place, and those recovery kept aside. Each may have held acknowledged writes
    /// (a deletion, say) that no reader of the database sees.
    pub(super) fn torn_tails_reported(&self) -> Result<Vec<Error>> {
        let mut problems = Vec::new();
        // A reader's open leaves a torn tail in place (a writer's would keep it aside).
        if self.read_only {
            for cut in &self.cut_tails {
                problems.push(Error::corruption(
                    &cut.wal,
                    cut.offset,
                    format!(
                        "{} bytes that are not a whole record end this WAL file: a write torn by \
                         a crash, never acknowledged, or damage to the last acknowledged one (a \
                         writer's open keeps them in {})",
                        cut.bytes,
                        cut.kept_in.display()
                    ),
                ));
            }
        }
        // What recovery cut from a WAL and could not tell from damage stays reported until a
        // person removes the kept bytes.
        for name in self
            .vfs
            .list_dir(&self.dir)
            .map_err(Error::io_on(&self.dir, "list directory"))?
        {
            if let Some(FileKind::TornTail(id, offset)) = names::classify(&name) {
                problems.push(Error::corruption(
                    &self.dir.join(names::wal_name(id)),
                    offset,
                    format!(
                        "recovery cut bytes that were not a whole record from the end of this WAL \
                         file (kept in {name}): a write torn by a crash, never acknowledged, or \
                         damage to the last acknowledged one; remove {name} once checked"
                    ),
                ));
            }
        }
        Ok(problems)
    }
}
