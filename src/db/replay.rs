//! WAL replay on open (`format/commit.md`, "Open"): the WAL files the manifest does not cover
//! are read in order into a fresh in-memory table, under the rules of the database's format
//! version; a writer cuts a torn tail (keeping its bytes aside when they are not all zeros) and
//! seals each replayed file, a reader only reports what it found.

use std::path::{Path, PathBuf};

use super::memtable::MemTable;
use super::version::{Manifest, Version};
use crate::storage::identity::FileIdentity;
use crate::storage::manifest::MANIFEST_V1;
use crate::storage::names::{self, FileKind};
use crate::storage::vfs::{OpenMode, Vfs};
use crate::storage::wal::batch::{OpRef, OpsLayout, OpsVersion, band_keys_le, decode_ops};
use crate::storage::wal::{Replay, WAL_V1_HEADER_LEN, WalReader};
use crate::{Error, Result};

/// What replaying the WAL gives: the in-memory table of the documents and deletions the
/// manifest does not cover, the last record's sequence number, and the torn tails cut (a
/// writer) or found (a reader).
pub(super) struct Replayed {
    pub(super) mem: MemTable,
    pub(super) last_seq: u64,
    pub(super) cut_tails: Vec<CutTail>,
}

/// Replays the WAL files the manifest does not cover, in order, into a fresh in-memory table.
pub(super) fn replay_wal(
    vfs: &dyn Vfs,
    dir: &Path,
    listing: &[String],
    version: &Version,
    read_only: bool,
) -> Result<Replayed> {
    let wal_files = wal_files(dir, listing, version.manifest.wal_start);
    let rules = WalRules::of(&version.manifest);
    let mut replay = WalReplay {
        vfs,
        dir,
        version,
        rules,
        read_only,
        mem: memtable_for(vfs, &wal_files, version)?,
        last_seq: rules.last_seq_before(&version.manifest),
        cut_tails: Vec::new(),
    };
    for (i, (id, path)) in wal_files.iter().enumerate() {
        replay.file(*id, path, i + 1 == wal_files.len())?;
    }
    replay.mem.build_deferred_buckets();
    Ok(Replayed {
        mem: replay.mem,
        last_seq: replay.last_seq,
        cut_tails: replay.cut_tails,
    })
}

/// The WAL files from id `wal_start` on, as (id, path), oldest first.
pub(super) fn wal_files(dir: &Path, listing: &[String], wal_start: u64) -> Vec<(u64, PathBuf)> {
    let mut files: Vec<(u64, PathBuf)> = listing
        .iter()
        .filter_map(|n| match names::classify(n) {
            Some(FileKind::Wal(id)) if id >= wal_start => Some((id, dir.join(names::wal_name(id)))),
            _ => None,
        })
        .collect();
    files.sort_unstable();
    files
}

/// A fresh in-memory table for the documents of `wal_files`: sized for the WAL's inserts (each
/// logs at least its band keys and signature), its band buckets built once at the end.
fn memtable_for(
    vfs: &dyn Vfs,
    wal_files: &[(u64, PathBuf)],
    version: &Version,
) -> Result<MemTable> {
    let params = &version.manifest.params;
    let (bands, record_bytes) = (params.lsh.bands, params.sig_bytes());
    let mut mem = MemTable::new(version.manifest.next_docno, bands, record_bytes);
    let mut wal_bytes = 0u64;
    for (_, path) in wal_files {
        let file = vfs
            .open(path, OpenMode::Read)
            .map_err(Error::io_on(path, "open"))?;
        wal_bytes += file.len().map_err(Error::io_on(path, "stat"))?;
    }
    let min_insert_bytes = (record_bytes + bands * 8) as u64;
    mem.reserve(usize::try_from(wal_bytes / min_insert_bytes).unwrap_or(0));
    mem.defer_buckets();
    Ok(mem)
}

/// How a database's format version numbers WAL records across files, and what it requires
/// of a file that is not the newest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum WalRules {
    /// Version 1: a file that follows one with records continues its numbering; files have no
    /// header numbering and no seal.
    V1,
    /// Version 2: numbers run on across files from the manifest's `wal_next_seq`: the first
    /// WAL file starts there, each next one where the previous ended (its header says where
    /// it starts), and every file but the newest ends with a seal.
    V2,
}

impl WalRules {
    fn of(manifest: &Manifest) -> Self {
        if manifest.format_version == MANIFEST_V1 {
            WalRules::V1
        } else {
            WalRules::V2
        }
    }

    /// The sequence number the first WAL file's records follow.
    fn last_seq_before(self, manifest: &Manifest) -> u64 {
        match self {
            WalRules::V1 => 0,
            WalRules::V2 => manifest.wal_next_seq.saturating_sub(1),
        }
    }

    /// Checks the first record of a file (number `seq`, at `offset`) against `last_seq`, where
    /// the files before it ended. Sequence numbers continue from one WAL file to the next: a
    /// gap means an older file lost its end (e.g. was truncated at a record boundary).
    fn check_first_record(self, path: &Path, offset: u64, seq: u64, last_seq: u64) -> Result<()> {
        match self {
            WalRules::V2 if seq != last_seq + 1 => Err(wal_gap(path, offset, seq, last_seq + 1)),
            WalRules::V1 if last_seq > 0 && seq != last_seq + 1 => Err(Error::corruption(
                path,
                offset,
                format!(
                    "WAL starts at record {seq}, but the previous WAL file ended at {last_seq}"
                ),
            )),
            _ => Ok(()),
        }
    }

    /// Where the numbering stands after record `seq` (version 2 takes it from the file once
    /// the file is replayed: [`WalRules::after_file`]).
    fn after_record(self, last_seq: u64, seq: u64) -> u64 {
        match self {
            WalRules::V1 => last_seq.max(seq),
            WalRules::V2 => last_seq,
        }
    }

    /// Checks a replayed file's header and end against the numbering (`last_seq` where the
    /// files before it ended); returns where the numbering stands after it.
    fn after_file(
        self,
        path: &Path,
        replay: &Replay,
        last_seq: u64,
        is_newest: bool,
    ) -> Result<u64> {
        // (A version-2 file cut off while its header was being written has no numbering.)
        if self == WalRules::V1 || replay.version == 0 {
            return Ok(last_seq);
        }
        if replay.version == 1 {
            return Err(Error::corruption(
                path,
                8,
                "a version-1 WAL file in a version-2 database",
            ));
        }
        if replay.first_seq != last_seq + 1 {
            // (A file without records; one with records was judged at its first record.)
            return Err(wal_gap(path, 12, replay.first_seq, last_seq + 1));
        }
        if !is_newest && !replay.sealed {
            return Err(Error::corruption(
                path,
                replay.valid_len,
                "a WAL file that is not the newest ends without its seal (its end was lost)",
            ));
        }
        Ok(replay.last_seq)
    }
}

/// The WAL replay in progress: the table it fills and where the numbering stands.
struct WalReplay<'a> {
    vfs: &'a dyn Vfs,
    dir: &'a Path,
    version: &'a Version,
    rules: WalRules,
    read_only: bool,
    mem: MemTable,
    /// Sequence number of the last record replayed.
    last_seq: u64,
    cut_tails: Vec<CutTail>,
}

impl WalReplay<'_> {
    /// Replays WAL file `id` at `path` (the newest one when `is_newest`), checks its end, and
    /// settles its torn tail.
    fn file(&mut self, id: u64, path: &Path, is_newest: bool) -> Result<()> {
        let replay = self.records(id, path)?;
        self.last_seq = self
            .rules
            .after_file(path, &replay, self.last_seq, is_newest)?;
        if replay.torn_tail_bytes > 0 && !is_newest {
            let what = if replay.sealed {
                "bytes after the seal of a WAL file that is not the newest"
            } else {
                "torn record in a WAL file that is not the newest"
            };
            return Err(Error::corruption(path, replay.valid_len, what));
        }
        if !self.read_only {
            let identity = self.version.manifest.db_id.file(id);
            let cut = settle_replayed_wal(self.vfs, self.dir, (id, identity), path, &replay)?;
            self.cut_tails.extend(cut);
        } else if replay.torn_tail_bytes > 0 {
            // Readers change no byte, but a torn tail that a writer's open would keep aside is
            // reported all the same: a live writer never shows one (it writes zeros ahead of a
            // record and the record's checksum last), so it is a crash's or damage.
            let identity = self.version.manifest.db_id.file(id);
            if let Some(kept) = torn_tail_to_keep(self.vfs, path, replay.valid_len, identity)? {
                self.cut_tails.push(CutTail {
                    wal: path.to_path_buf(),
                    offset: replay.valid_len,
                    bytes: kept.len() as u64,
                    kept_in: self.dir.join(names::torn_tail_name(id, replay.valid_len)),
                });
            }
        }
        Ok(())
    }

    /// Applies the records of WAL file `id` at `path` to the table.
    fn records(&mut self, id: u64, path: &Path) -> Result<Replay> {
        let (rules, version) = (self.rules, self.version);
        let (mem, last_seq) = (&mut self.mem, &mut self.last_seq);
        let mut first_in_file = true;
        let identity = version.manifest.db_id.file(id);
        WalReader::replay(self.vfs, path, identity, |seq, offset, payload| {
            if first_in_file {
                rules.check_first_record(path, offset, seq, *last_seq)?;
                first_in_file = false;
            }
            let at = RecordAt { path, offset };
            apply_record(mem, version, rules, at, payload)?;
            *last_seq = rules.after_record(*last_seq, seq);
            Ok(())
        })
    }
}

/// Where a WAL record lies: its file and the offset of its header.
#[derive(Clone, Copy)]
struct RecordAt<'a> {
    path: &'a Path,
    offset: u64,
}

/// Applies the operations of the WAL record at `at` (its payload `payload`) to `mem`, which
/// holds the replay so far on top of `version`.
fn apply_record(
    mem: &mut MemTable,
    version: &Version,
    rules: WalRules,
    at: RecordAt<'_>,
    payload: &[u8],
) -> Result<()> {
    let RecordAt { path, offset } = at;
    let params = &version.manifest.params;
    // `offset` is the record's; its payload (what the decoder's errors locate within) starts
    // after the record header.
    let payload_offset = offset + crate::storage::wal::RECORD_HEADER_LEN as u64;
    let layout = OpsLayout {
        version: if version.manifest.db_id.is_none() {
            OpsVersion::V2
        } else {
            OpsVersion::V3
        },
        bands: params.lsh.bands,
        sig_bytes: params.sig_bytes(),
        store_sets: params.store_sets,
        columns: super::columns::column_set(
            version.manifest.features,
            version.manifest.keep.as_ref(),
        ),
    };
    decode_ops(payload, &layout, path, payload_offset, |op| match op {
        OpRef::Insert {
            docno,
            key,
            band_keys,
            sig,
            set,
            columns,
        } => {
            if mem.insert(docno, key, band_keys_le(band_keys), sig, (set, columns)) {
                Ok(())
            } else {
                Err(Error::corruption(
                    path,
                    offset,
                    format!(
                        "WAL insert of document {docno} does not continue the numbering at {}",
                        mem.next_docno()
                    ),
                ))
            }
        }
        OpRef::Delete { docno } => {
            // Version 1's writers are not known to have kept this rule; its databases are
            // only read.
            if rules == WalRules::V2 && !is_live_in_replay(mem, version, docno)? {
                return Err(Error::corruption(
                    path,
                    offset,
                    format!(
                        "WAL delete of document {docno}, which is not live at this point \
                         (never inserted, or deleted already)"
                    ),
                ));
            }
            mem.mark_deleted(docno);
            Ok(())
        }
    })
}

/// Whether document `docno` is live at this point of the replay (`mem` on top of `version`):
/// numbered, held by a segment or inserted earlier in the replay, and deleted neither by the
/// deletion list nor by an earlier replayed delete. A writer resolves every delete it logs to
/// a live document under the sequencer, so a WAL delete of anything else is damage.
fn is_live_in_replay(mem: &MemTable, version: &Version, docno: u64) -> Result<bool> {
    if docno >= mem.next_docno() {
        return Ok(false);
    }
    if let Some(doc) = mem.doc(docno) {
        return Ok(doc.live);
    }
    if mem.deleted_older.contains(&docno) || version.deletions.contains(docno) {
        return Ok(false);
    }
    match version.segment_of(docno) {
        Some(seg) => Ok(seg.seg.key_of(docno)?.is_some()),
        None => Ok(false),
    }
}

/// A WAL file that does not start where the numbering says the next one must: an earlier
/// file, or its end, is missing.
fn wal_gap(path: &Path, offset: u64, found: u64, expected: u64) -> Error {
    Error::corruption(
        path,
        offset,
        format!(
            "WAL file starts at record {found}, but record {expected} comes next \
             (a WAL file is missing, or its end was lost)"
        ),
    )
}

/// A writer leaves a replayed WAL file as an older WAL may be: whole records only, durable.
/// A torn tail that is not all zeros is kept aside before it is cut, and returned.
/// `file` is the file's number and the identity its records are checked with.
fn settle_replayed_wal(
    vfs: &dyn Vfs,
    dir: &Path,
    file: (u64, Option<FileIdentity>),
    path: &Path,
    replay: &Replay,
) -> Result<Option<CutTail>> {
    let kept = if replay.torn_tail_bytes > 0 {
        keep_torn_tail(vfs, dir, file, path, replay.valid_len)?
    } else {
        None
    };
    if replay.records == 0 {
        // A WAL holding no record carries nothing (whatever zeros or torn bytes follow its
        // header); without this, every open that writes nothing would leave one more file
        // behind until the next flush. Its tail is cut durably first: the removal is durable
        // only with the directory fsync that also makes this handle's new WAL durable, and
        // should the creation survive a crash without the removal, this file must not be an
        // older WAL with a torn tail.
        if replay.torn_tail_bytes > 0 {
            WalReader::truncate_torn_tail(vfs, path, replay.valid_len)?;
        }
        if vfs.exists(path).map_err(Error::io_on(path, "stat WAL"))? {
            vfs.remove_file(path)
                .map_err(Error::io_on(path, "remove empty WAL"))?;
        }
    } else if replay.torn_tail_bytes > 0 {
        WalReader::truncate_torn_tail(vfs, path, replay.valid_len)?;
        WalReader::seal_file(vfs, path, replay)?;
    } else if !replay.sealed {
        // Left by a crash: sealed now, since it becomes an older WAL file (which must be).
        WalReader::seal_file(vfs, path, replay)?;
    } else {
        // The file becomes an older WAL once this handle creates its own: it must be durable
        // exactly as replayed (an earlier handle may have written or cut it without a
        // successful fsync), or a power loss could bring back a tail that only the newest file
        // may have.
        WalReader::sync_file(vfs, path)?;
    }
    Ok(kept)
}

/// Bytes cut from the end of a WAL file by a writer's recovery that were not all zeros.
///
/// Zeros after the last whole record are the space a writer writes ahead of its records, and a
/// record whose checksum (written last) is still zero was never finished: both are cut
/// silently. Anything else is a record torn by a power loss (never acknowledged) or damage to
/// the last record (acknowledged), and the bytes cannot tell which: they are kept in a file beside the WAL, this handle reports them
/// ([`Db::cut_tails`](super::Db::cut_tails)), and `verify` reports them as corruption until
/// the file is removed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CutTail {
    /// The WAL file that was cut.
    pub wal: PathBuf,
    /// Where it was cut: the end of its last whole record.
    pub offset: u64,
    /// How many bytes were cut, up to the last non-zero one.
    pub bytes: u64,
    /// The file that keeps them.
    pub kept_in: PathBuf,
}

/// The bytes of a torn tail from `valid_len` that must be kept and reported, up to the last
/// non-zero one; `None` when it goes silently. `identity` is the one the file's records are
/// checked with.
pub(super) fn torn_tail_to_keep(
    vfs: &dyn Vfs,
    path: &Path,
    valid_len: u64,
    identity: Option<FileIdentity>,
) -> Result<Option<Vec<u8>>> {
    let file = vfs
        .open(path, OpenMode::Read)
        .map_err(Error::io_on(path, "open WAL"))?;
    let mut len = file.len().map_err(Error::io_on(path, "stat WAL"))?;
    let mut tail = Vec::new();
    loop {
        tail.resize(len.saturating_sub(valid_len) as usize, 0);
        match file.read_exact_at(&mut tail, valid_len) {
            Ok(()) => break,
            // Only a reader meets this: a writer in another process cut the file meanwhile
            // (the zeros it wrote ahead, when it seals the file). The tail ends where the file
            // now ends.
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                let now = file.len().map_err(Error::io_on(path, "stat WAL"))?;
                if now >= len {
                    return Err(Error::io(path, "read WAL", e));
                }
                len = now;
            }
            Err(e) => return Err(Error::io(path, "read WAL", e)),
        }
    }
    let Some(last) = tail.iter().rposition(|&b| b != 0) else {
        return Ok(None);
    };
    // A record's checksum is written after the rest of it: still zero, the record was never
    // finished, so never acknowledged (a process killed mid-write), and it goes silently.
    if valid_len >= WAL_V1_HEADER_LEN && tail.get(..4) == Some(&[0; 4]) {
        return Ok(None);
    }
    // Whole and intact now: a live writer (seen only by a reader) finished it after the
    // replay read it unfinished. (With the database locked the bytes cannot have changed
    // since the replay, which found no record here.)
    if WalReader::starts_with_record(&tail, identity) {
        return Ok(None);
    }
    tail.truncate(last + 1);
    Ok(Some(tail))
}

fn keep_torn_tail(
    vfs: &dyn Vfs,
    dir: &Path,
    (id, identity): (u64, Option<FileIdentity>),
    path: &Path,
    valid_len: u64,
) -> Result<Option<CutTail>> {
    let Some(kept) = torn_tail_to_keep(vfs, path, valid_len, identity)? else {
        return Ok(None);
    };
    let kept = kept.as_slice();
    let kept_in = dir.join(names::torn_tail_name(id, valid_len));
    super::commit::write_new_file(vfs, &kept_in, kept, OpenMode::CreateOrTruncate)?;
    vfs.sync_dir(dir)
        .map_err(Error::io_on(dir, "fsync directory"))?;
    Ok(Some(CutTail {
        wal: path.to_path_buf(),
        offset: valid_len,
        bytes: kept.len() as u64,
        kept_in,
    }))
}
