//! The write-ahead log: a header, then checksummed records, each holding one write batch or
//! several combined, then (while a writer has it) zeros written ahead of the records.
//! Layout and recovery rules: `format/wal.md`. The payload of a record is a write batch (`batch`).
//! Version 3 ties a file to its database: its header carries the database's identity and the
//! file's number, and every record's checksum is seeded with them; readers and writers take the
//! identity a file must have (`Option<FileIdentity>`, `None` for versions 1 and 2) from the
//! caller, which knows it from the manifest and the file's name.
//!
//! The record parser reads its fields by hand rather than through the codec's `Decoder`: it
//! also runs at every byte offset of a damaged log, looking for a later valid record, where an
//! error value per offset would cost far more than the answer "no record here".

#![deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used)]

pub(crate) mod batch;
mod replay;

pub use replay::{Replay, WalReader};

use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::Mutex;

use super::codec::Encoder;
use super::identity::FileIdentity;
use super::vfs::{OpenMode, Vfs, VfsFile};
use crate::{Error, Result};

const MAGIC: &[u8; 8] = b"MHDBWAL\0";
/// Version of the WAL layout of a version-2 database (written without a file identity).
pub const WAL_VERSION: u32 = 2;
/// The first version (no `first_seq`, no seal), still replayed for version-1 databases.
pub const WAL_V1: u32 = 1;
/// Version 3: the header carries flags and the file's identity, and every record's checksum
/// is seeded with that identity (`format/wal.md`, "Version 3").
pub const WAL_V3: u32 = 3;
/// Bytes of a version-2 file header: magic, version, `first_seq`, crc.
pub const WAL_HEADER_LEN: u64 = 24;
/// Bytes of a version-1 file header: magic, version, crc.
pub const WAL_V1_HEADER_LEN: u64 = 16;
/// Bytes of a version-3 file header: magic, version, flags, `db_id`, `file_id`, `first_seq`,
/// crc.
pub const WAL_V3_HEADER_LEN: u64 = 52;
/// Offsets of the version-3 header's fields that a reader checks.
const V3_FLAGS_AT: usize = 12;
const V3_DB_ID_AT: usize = 16;
const V3_FILE_ID_AT: usize = 32;
const V3_FIRST_SEQ_AT: usize = 40;
/// Bytes of a record header: crc u32, length u32, type u8, sequence u64.
pub const RECORD_HEADER_LEN: usize = 17;
/// Largest payload of one record.
pub const MAX_RECORD_LEN: usize = 64 << 20;
/// Record type of a whole batch (or several combined). Type 0 is reserved (zero-filled space).
const TYPE_BATCH: u8 = 1;
/// Record type of a seal (versions 2 and 3): the file is complete; it ends here.
const TYPE_SEAL: u8 = 2;
/// Bytes of a seal's payload: the number of batch records before it.
const SEAL_PAYLOAD_LEN: usize = 8;

/// The header of a new file: version 3 with `identity`, else version 2.
fn header_bytes(first_seq: u64, identity: Option<FileIdentity>) -> Vec<u8> {
    let mut e = Encoder::default();
    e.bytes(MAGIC);
    match identity {
        None => e.u32(WAL_VERSION).u64(first_seq),
        Some(id) => e
            .u32(WAL_V3)
            .u32(0)
            .bytes(&id.db_id.0)
            .u64(id.file_id)
            .u64(first_seq),
    };
    e.crc();
    e.buf
}

/// Bytes of the header [`header_bytes`] writes.
fn header_len(identity: Option<FileIdentity>) -> u64 {
    match identity {
        None => WAL_HEADER_LEN,
        Some(_) => WAL_V3_HEADER_LEN,
    }
}

/// A version-1 header (tests write version-1 logs to check that they still replay).
#[cfg(test)]
fn v1_header_bytes() -> Vec<u8> {
    let mut e = Encoder::default();
    e.bytes(MAGIC).u32(WAL_V1).crc();
    e.buf
}

/// The checksum of a record whose bytes from its length field on are `covered`: CRC-32 of
/// them, in version 3 after `db_id ‖ LE64(file_id)`, so that a record copied from another
/// WAL file fails it where it lands. The seed comes from the caller (the manifest and the
/// file's name), never from the header, so that records can be judged after a damaged header.
fn record_crc(seed: Option<&FileIdentity>, covered: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    if let Some(id) = seed {
        h.update(&id.db_id.0);
        h.update(&id.file_id.to_le_bytes());
    }
    h.update(covered);
    h.finalize()
}

/// Appends one encoded batch record to `out`.
fn encode_record(out: &mut Vec<u8>, seq: u64, payload: &[u8], seed: Option<&FileIdentity>) {
    encode_typed(out, TYPE_BATCH, seq, payload, seed);
}

/// A seal record: it carries the sequence number of the file's last batch record (the one
/// before the file's `first_seq` when it has none; sequence numbers count batches only) and
/// the file's number of batch records.
fn seal_record(last_seq: u64, records: u64, seed: Option<&FileIdentity>) -> Vec<u8> {
    let mut out = Vec::new();
    encode_typed(&mut out, TYPE_SEAL, last_seq, &records.to_le_bytes(), seed);
    out
}

/// Appends one encoded record of type `kind` to `out`.
fn encode_typed(
    out: &mut Vec<u8>,
    kind: u8,
    seq: u64,
    payload: &[u8],
    seed: Option<&FileIdentity>,
) {
    let start = out.len();
    let mut e = Encoder {
        buf: std::mem::take(out),
    };
    // The checksum comes first but covers what follows it: written as zero, then filled in.
    e.u32(0)
        .u32(payload.len() as u32)
        .u8(kind)
        .u64(seq)
        .bytes(payload);
    *out = e.buf;
    let crc = record_crc(seed, out.get(start + 4..).unwrap_or_default());
    if let Some(slot) = out.get_mut(start..start + 4) {
        slot.copy_from_slice(&crc.to_le_bytes());
    }
}

/// Smallest and largest step by which a writer extends its file with zeros ahead of the
/// records (the step follows the file's size in between, so small logs stay small).
const PREALLOC_MIN: u64 = 64 << 10;
const PREALLOC_MAX: u64 = 8 << 20;
/// Zeros written per call when extending.
static ZEROS: [u8; 64 << 10] = [0u8; 64 << 10];

#[derive(Debug)]
struct WriterInner {
    file: Arc<dyn VfsFile>,
    path: PathBuf,
    /// End of the last record written.
    offset: u64,
    /// Length of the file: the records, then zeros written ahead of them.
    allocated: u64,
    next_seq: u64,
    /// Sequence number of the file's first record (its header's `first_seq`).
    first_seq: u64,
    /// Version 3: the identity its records' checksums are seeded with (`None`: version 2).
    seed: Option<FileIdentity>,
    /// Bytes of its header.
    header_len: u64,
    /// A seal was written: the file takes no more records.
    sealed: bool,
    failed: bool,
}

impl WriterInner {
    fn fail(&mut self, op: &'static str) -> impl FnOnce(std::io::Error) -> Error + '_ {
        self.failed = true;
        Error::io_on(&self.path, op)
    }

    /// Writes one record at the end of the log, extending the file with zeros first when the
    /// record does not fit in what was written ahead (`ahead`; the last record, a seal, is
    /// written without). (An fdatasync after an overwrite of already written blocks need not
    /// commit a new file size or block allocation to the filesystem journal: on this project's
    /// disk it takes about two thirds of the time of one after an append.)
    fn write_record(&mut self, record: &[u8], ahead: bool) -> Result<()> {
        let end = self.offset + record.len() as u64;
        if ahead && end > self.allocated {
            let step = self.allocated.clamp(PREALLOC_MIN, PREALLOC_MAX);
            let target = (end + step).next_multiple_of(4096);
            let mut at = end;
            while at < target {
                let n = (target - at).min(ZEROS.len() as u64) as usize;
                let zeros = ZEROS.get(..n).unwrap_or_default();
                if let Err(e) = self.file.write_all_at(zeros, at) {
                    // A full disk: the zeros written so far are given back.
                    self.cut_unacknowledged();
                    return Err(self.fail("extend WAL")(e));
                }
                at += n as u64;
            }
            self.allocated = target;
        }
        // The checksum, the record's first four bytes, is written last: a process killed while
        // the kernel copies the record (a write of several pages can stop at a page boundary)
        // leaves it zero, so recovery tells an unfinished record from a damaged one.
        let (crc, body) = record.split_at(4.min(record.len()));
        let written = self
            .file
            .write_all_at(body, self.offset + crc.len() as u64)
            .and_then(|()| self.file.write_all_at(crc, self.offset));
        if let Err(e) = written {
            self.cut_unacknowledged();
            return Err(self.fail("write WAL")(e));
        }
        self.offset = end;
        self.allocated = self.allocated.max(end);
        Ok(())
    }

    fn sync(&mut self, from: u64) -> Result<()> {
        if let Err(e) = self.file.sync_data() {
            // Never retry an fsync as if it had succeeded: the durable state is unknown.
            self.offset = from;
            self.cut_unacknowledged();
            return Err(self.fail("fsync WAL")(e));
        }
        Ok(())
    }

    /// After a failed write or fsync (e.g. a full disk), cuts the file back to the end of the
    /// last record it acknowledged, best effort: what a failed write left of its record is
    /// then not there for recovery to find, keep and report as a possibly damaged record.
    /// (Should the cut not reach the disk before a crash, recovery still keeps and reports
    /// it: nothing is lost either way.)
    fn cut_unacknowledged(&mut self) {
        if self.file.set_len(self.offset).is_ok() {
            self.allocated = self.offset;
        }
    }
}

/// Appends records to one WAL file. Clones share the file and its position.
///
/// At most one record is ever written and not yet synced: each record is followed by an
/// fsync before the next is written. A crash can then damage only the last record, whatever
/// order the sectors of an unsynced overwrite reach the disk in, so a damaged record followed
/// by a valid one still means corruption (`format/wal.md`). Group commit stays one fsync per
/// group because the group's batches are combined into one record by the caller.
#[derive(Clone, Debug)]
pub struct WalWriter {
    inner: Arc<Mutex<WriterInner>>,
}

impl WalWriter {
    /// Creates a new WAL file holding only its header, synced (the caller syncs the directory).
    ///
    /// A file already at `path` that holds no valid record is the leftover of a creation cut
    /// short (by a crash or a full disk, before its header was complete or before anything
    /// could be written after it: `format/wal.md`, "Recovery"): it holds nothing and is
    /// replaced. A file that holds a record is never overwritten: that is an error.
    ///
    /// `first_seq` is the sequence number its first record will carry (the header records it,
    /// so that a replay can tell when an earlier WAL file went missing). With `identity` the
    /// file is of version 3 (its database's identity and its own number in the header, and
    /// every record's checksum seeded with them); without, of version 2.
    pub fn create(
        vfs: &dyn Vfs,
        path: &Path,
        first_seq: u64,
        identity: Option<FileIdentity>,
    ) -> Result<WalWriter> {
        let file = match vfs.open(path, OpenMode::CreateNew) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                let holds_records = WalReader::replay(vfs, path, identity, |_, _, _| Ok(()))
                    .map_or(true, |replay| replay.records > 0);
                if holds_records {
                    return Err(Error::io(path, "create WAL", e));
                }
                vfs.open(path, OpenMode::CreateOrTruncate)
                    .map_err(Error::io_on(path, "create WAL"))?
            }
            Err(e) => return Err(Error::io(path, "create WAL", e)),
        };
        let header_len = header_len(identity);
        file.write_all_at(&header_bytes(first_seq, identity), 0)
            .map_err(Error::io_on(path, "write WAL header"))?;
        file.sync_data().map_err(Error::io_on(path, "fsync WAL"))?;
        Ok(WalWriter {
            inner: Arc::new(Mutex::new(WriterInner {
                file,
                path: path.to_path_buf(),
                offset: header_len,
                allocated: header_len,
                next_seq: first_seq,
                first_seq,
                seed: identity,
                header_len,
                sealed: false,
                failed: false,
            })),
        })
    }

    /// The sequence number of the file's first record, as its header records it.
    pub fn first_seq(&self) -> u64 {
        self.inner.lock().first_seq
    }

    /// The sequence number the next record will get.
    pub fn next_seq(&self) -> u64 {
        self.inner.lock().next_seq
    }

    /// Writes each payload as one record and syncs after each, so that everything written is
    /// durable when this returns. After any failure the writer refuses further appends.
    pub fn append_all_and_sync<'a>(&self, payloads: impl Iterator<Item = &'a [u8]>) -> Result<()> {
        let mut inner = self.inner.lock();
        let mut buf = Vec::new();
        for p in payloads {
            if inner.failed {
                return Err(Error::previous_io_unknown());
            }
            if inner.sealed {
                return Err(Error::invalid("wal", "the WAL file is sealed"));
            }
            if p.len() > MAX_RECORD_LEN {
                return Err(Error::invalid(
                    "batch",
                    format!(
                        "encodes to {} bytes, more than the WAL record limit {MAX_RECORD_LEN}",
                        p.len()
                    ),
                ));
            }
            buf.clear();
            encode_record(&mut buf, inner.next_seq, p, inner.seed.as_ref());
            let start = inner.offset;
            inner.write_record(&buf, true)?;
            inner.next_seq += 1;
            inner.sync(start)?;
        }
        if inner.failed {
            return Err(Error::previous_io_unknown());
        }
        Ok(())
    }

    /// Ends the file with a seal record and cuts the zeros written ahead of the records off,
    /// durably: done before the database moves on to a new WAL file and when a handle closes.
    /// In a sealed file every damaged byte is corruption (nothing can be a torn write), and
    /// every WAL file but the newest must be sealed (one that is not lost its end). Sealing
    /// twice is a no-op.
    pub fn seal(&self) -> Result<()> {
        let mut inner = self.inner.lock();
        if inner.failed {
            return Err(Error::previous_io_unknown());
        }
        if inner.sealed {
            return Ok(());
        }
        let records = inner.next_seq - inner.first_seq;
        let record = seal_record(inner.next_seq - 1, records, inner.seed.as_ref());
        let start = inner.offset;
        // No zeros ahead of the seal: they would be cut off at once (and on a nearly full
        // disk, writing them could fail where the seal alone fits).
        inner.write_record(&record, false)?;
        let len = inner.offset;
        if inner.allocated > len {
            if let Err(e) = inner.file.set_len(len) {
                return Err(inner.fail("truncate WAL")(e));
            }
            inner.allocated = len;
        }
        inner.sync(start)?;
        inner.sealed = true;
        Ok(())
    }

    /// Bytes of records so far (header included).
    pub fn len(&self) -> u64 {
        self.inner.lock().offset
    }

    /// True when no record was written.
    pub fn is_empty(&self) -> bool {
        let inner = self.inner.lock();
        inner.offset == inner.header_len
    }
}

#[cfg(test)]
mod tests;
