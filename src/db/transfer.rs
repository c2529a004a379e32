//! Export (a compacted, self-contained copy to ship to servers) and merge (combining databases
//! built in parallel from disjoint shards).

use std::path::Path;

use super::Db;
use super::commit::{Records, write_new_file};
use crate::storage::names;
use crate::storage::segment::band_key32;
use crate::storage::siglog;
use crate::storage::vfs::OpenMode;
use crate::storage::vfs::read_file;
use crate::{Error, Result};

impl Db {
    /// Compacts this database fully and copies its committed files to the new directory
    /// `dest`, which then opens read-only (or read-write) on its own. Every file is synced
    /// before CURRENT is written, so an interrupted export never looks like a database.
    pub fn export(&self, dest: impl AsRef<Path>) -> Result<()> {
        let dest = dest.as_ref();
        if self
            .vfs
            .exists(&dest.join(names::CURRENT))
            .map_err(Error::io_on(dest, "stat"))?
        {
            return Err(Error::invalid(
                "dest",
                format!("{} already holds an mhdb database", dest.display()),
            ));
        }
        if !self.read_only {
            self.compact_full()?;
        }
        let _maint = self.maintenance.lock();
        let version = self.state.read().version.clone();
        let vfs = self.vfs.as_ref();
        vfs.create_dir_all(dest)
            .map_err(Error::io_on(dest, "create directory"))?;
        // Damage is refused, not shipped: the copies keep their checksums, but a copy that
        // verifies only at its destination has already spread.
        let siglog_path = self.dir.join(names::SIGLOG);
        for seg in &version.segments {
            seg.seg.verify_checksums()?;
            version.checked_records(&seg.meta, self.params.sig_bytes(), &siglog_path)?;
        }
        let mut files: Vec<String> = version
            .manifest
            .segments
            .iter()
            .map(|s| names::segment_name(s.id))
            .collect();
        if version.manifest.deletions.id != 0 {
            files.push(names::deletions_name(version.manifest.deletions.id));
        }
        files.push(names::manifest_name(version.manifest.generation));
        for name in &files {
            let bytes = read_file(vfs, &self.dir.join(name))?;
            write_new_file(vfs, &dest.join(name), &bytes, OpenMode::CreateNew)?;
        }
        // Only the committed part of the signature log.
        let siglog = read_file(vfs, &self.dir.join(names::SIGLOG))?;
        let committed =
            siglog::offset(version.manifest.siglog_records, self.params.sig_bytes()) as usize;
        let part = siglog.get(..committed).ok_or_else(|| {
            Error::corruption(
                &self.dir.join(names::SIGLOG),
                siglog.len() as u64,
                "signature log shorter than committed",
            )
        })?;
        write_new_file(vfs, &dest.join(names::SIGLOG), part, OpenMode::CreateNew)?;
        vfs.sync_dir(dest)
            .map_err(Error::io_on(dest, "fsync directory"))?;
        let current = read_file(vfs, &self.dir.join(names::CURRENT))?;
        write_new_file(
            vfs,
            &dest.join(names::CURRENT),
            &current,
            OpenMode::CreateNew,
        )?;
        vfs.sync_dir(dest)
            .map_err(Error::io_on(dest, "fsync directory"))
    }

    /// Adds every live document of `src` (same parameters, else [`Error::ParameterMismatch`]).
    /// Keys already present here are replaced by `src`'s copy (merging shards in order makes
    /// the last shard win). Durable when this returns. Returns the number of documents added.
    pub fn merge_from(&self, src: &Db) -> Result<u64> {
        let (a, b) = (&self.params, &src.params);
        self.params.check_compatible(&src.params.sketch)?;
        let mismatch = |name: &'static str, x: String, y: String| Error::ParameterMismatch {
            name,
            stored: x,
            requested: y,
        };
        if a.bits != b.bits {
            return Err(mismatch("bits", a.bits.to_string(), b.bits.to_string()));
        }
        if a.lsh != b.lsh {
            return Err(mismatch(
                "bands/rows",
                format!("{}×{}", a.lsh.bands, a.lsh.rows),
                format!("{}×{}", b.lsh.bands, b.lsh.rows),
            ));
        }
        let bands = self.params.lsh.bands;
        let record_bytes = self.params.sig_bytes();
        let mut keys: Vec<Vec<u8>> = Vec::new();
        let mut band_keys: Vec<u64> = Vec::new();
        let mut records: Vec<u8> = Vec::new();
        {
            let state = src.state.read();
            for seg in &state.version.segments {
                // Band keys per document from the band tables (segments store the top 32 bits,
                // which is all a segment ever needs: `key32 << 32` stores the same bits).
                let base = seg.seg.base_docno();
                let span = (seg.seg.end_docno() - base) as usize;
                let mut per_doc = vec![0u64; span * bands];
                for band in 0..bands {
                    seg.seg.for_each_posting(band, |k, d| {
                        if let Some(slot) = per_doc.get_mut((d - base) as usize * bands + band) {
                            *slot = u64::from(k) << 32;
                        }
                        Ok(())
                    })?;
                }
                for doc in seg.seg.docs() {
                    let (d, key) = doc?;
                    if state.is_deleted(d) {
                        continue;
                    }
                    let sig = state.signature_bytes(d, record_bytes).ok_or_else(|| {
                        Error::corruption(&seg.path, 0, format!("no signature for {d}"))
                    })?;
                    let rel = (d - base) as usize;
                    keys.push(key.to_vec());
                    band_keys.extend_from_slice(
                        per_doc
                            .get(rel * bands..(rel + 1) * bands)
                            .unwrap_or_default(),
                    );
                    records.extend_from_slice(sig);
                }
            }
            for table in state.imm.iter().map(|t| t.as_ref()).chain([&state.mem]) {
                for (d, doc) in table.live_docs() {
                    if state.is_deleted(d) {
                        continue;
                    }
                    keys.push(doc.key.to_vec());
                    band_keys.extend(
                        doc.band_keys
                            .iter()
                            .map(|&k| u64::from(band_key32(k)) << 32),
                    );
                    records.extend_from_slice(doc.sig);
                }
            }
        }
        let n = keys.len() as u64;
        if n == 0 {
            return Ok(0);
        }
        let refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
        self.bulk_insert_prepared(&refs, &band_keys, Records::Packed(records))?;
        Ok(n)
    }
}
