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
#[allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::expect_used)]
mod tests {
    use super::replay::REPLAY_CHUNK;
    use super::*;
    use crate::storage::sim::SimFs;

    fn log(payloads: &[&[u8]]) -> Vec<u8> {
        let mut out = header_bytes(1, None).to_vec();
        for (i, p) in payloads.iter().enumerate() {
            encode_record(&mut out, i as u64 + 1, p, None);
        }
        out
    }

    fn collect(bytes: &[u8]) -> Result<(Vec<Vec<u8>>, Replay)> {
        let mut got = Vec::new();
        let r = WalReader::replay_bytes(bytes, Path::new("wal"), None, &mut |_, _, p| {
            got.push(p.to_vec());
            Ok(())
        })?;
        Ok((got, r))
    }

    #[test]
    fn every_truncation_yields_a_prefix() {
        let payloads: Vec<&[u8]> = vec![b"one", b"", b"three3", &[7u8; 100]];
        let bytes = log(&payloads);
        let mut ends = vec![WAL_HEADER_LEN as usize];
        for p in &payloads {
            ends.push(ends.last().copied().unwrap_or(0) + RECORD_HEADER_LEN + p.len());
        }
        for cut in WAL_HEADER_LEN as usize..=bytes.len() {
            let (got, r) = collect(&bytes[..cut]).unwrap();
            let whole = ends.iter().filter(|&&e| e <= cut).count() - 1;
            assert_eq!(got.len(), whole, "cut at {cut}");
            assert_eq!(r.valid_len as usize, ends[whole]);
            assert_eq!(
                got,
                payloads[..whole]
                    .iter()
                    .map(|p| p.to_vec())
                    .collect::<Vec<_>>()
            );
        }
    }

    #[test]
    fn torn_header_is_an_empty_log_but_damaged_header_before_records_is_corruption() {
        let bytes = log(&[b"a"]);
        for cut in 0..WAL_HEADER_LEN as usize {
            let (got, r) = collect(&bytes[..cut]).unwrap();
            assert!(got.is_empty());
            assert_eq!(r.valid_len, 0);
        }
        let (got, _) = collect(&[0u8; 4096]).unwrap();
        assert!(got.is_empty());
        let mut damaged = bytes.clone();
        damaged[3] ^= 1;
        assert!(collect(&damaged).unwrap_err().is_corruption());
    }

    #[test]
    fn zero_tail_is_torn_and_damage_before_valid_data_is_corruption() {
        let bytes = log(&[b"a", b"bb", b"ccc"]);
        let mut zeros = bytes.clone();
        zeros.extend(std::iter::repeat_n(0u8, 1 << 20));
        let (got, r) = collect(&zeros).unwrap();
        assert_eq!(got.len(), 3);
        assert_eq!(r.torn_tail_bytes, 1 << 20);
        for i in WAL_HEADER_LEN as usize..bytes.len() {
            let mut b = bytes.clone();
            b[i] ^= 0x10;
            match collect(&b) {
                Ok((got, _)) => {
                    // Only damage to the last record may read as a torn tail.
                    assert!(i >= bytes.len() - (RECORD_HEADER_LEN + 3), "byte {i}");
                    assert_eq!(got.len(), 2);
                }
                Err(e) => assert!(e.is_corruption(), "byte {i}: {e}"),
            }
        }
    }

    #[test]
    fn writer_roundtrip_on_simfs_and_version_check() {
        let fs = SimFs::new();
        let p = Path::new("/d/wal");
        let w = WalWriter::create(&fs, p, 1, None).unwrap();
        w.append_all_and_sync([&b"x"[..], b"yy"].into_iter())
            .unwrap();
        w.append_all_and_sync([&b"zzz"[..]].into_iter()).unwrap();
        let mut got = Vec::new();
        let r = WalReader::replay(&fs, p, None, |s, _, b| {
            got.push((s, b.to_vec()));
            Ok(())
        })
        .unwrap();
        assert_eq!(r.records, 3);
        assert_eq!(got[2], (3, b"zzz".to_vec()));
        let mut bytes = fs.read_file(p).unwrap();
        bytes[8] = 9;
        let crc = crc32fast::hash(&bytes[..12]);
        bytes[12..16].copy_from_slice(&crc.to_le_bytes());
        let err = WalReader::replay_bytes(&bytes, p, None, &mut |_, _, _| Ok(())).unwrap_err();
        assert!(
            matches!(err, Error::UnsupportedVersion { found: 9, .. }),
            "{err}"
        );
    }

    /// Records land in zeros written ahead of them (an overwrite, whose sectors may reach the
    /// disk in any order), one record per fsync. A crash at every sync point, with the unsynced
    /// record's sectors landing in any combination, leaves a log that replays without error to
    /// every synced record, plus at most the unsynced one, whole.
    #[test]
    fn preallocated_log_survives_a_crash_at_every_sync() {
        use crate::storage::sim::CrashMode;
        let p = Path::new("/d/wal");
        let payloads: Vec<Vec<u8>> = (0..40u8)
            .map(|i| vec![i; 100 + 37 * usize::from(i)])
            .collect();
        for synced in 0..payloads.len() {
            let fs = SimFs::new();
            let w = WalWriter::create(&fs, p, 1, None).unwrap();
            fs.sync_dir(Path::new("/d")).unwrap();
            // The header's and the directory's syncs, then one per record: the crash comes at
            // the sync of record `synced` (0-based), which is written but not yet durable.
            fs.freeze_after_syncs(2 + synced as u64);
            for payload in &payloads {
                w.append_all_and_sync(std::iter::once(payload.as_slice()))
                    .unwrap();
            }
            assert!(
                fs.read_file(p).unwrap().len() as u64 > w.len(),
                "zeros ahead"
            );
            for seed in 0..20 {
                let image = fs.crash_image(CrashMode::TornUnsynced { seed });
                let mut got = Vec::new();
                let r = WalReader::replay(&image, p, None, |_, _, b| {
                    got.push(b.to_vec());
                    Ok(())
                })
                .unwrap_or_else(|e| panic!("synced {synced}, seed {seed}: {e}"));
                assert!(
                    got.len() == synced || got.len() == synced + 1,
                    "synced {synced}, seed {seed}: {} records",
                    got.len()
                );
                assert_eq!(got[..], payloads[..got.len()]);
                assert_eq!(r.records as usize, got.len());
            }
        }
    }

    /// Replay from a file, read in chunks of any size (records straddling chunk ends, records
    /// longer than a chunk), gives exactly what replay of the same bytes in memory gives: the
    /// same records, the same torn tail, the same errors at the same offsets.
    #[test]
    fn chunked_file_replay_equals_in_memory_replay() {
        let payloads: Vec<&[u8]> = vec![b"one", b"", &[7u8; 300], b"four", &[9u8; 40]];
        let whole = log(&payloads);
        let mut cases: Vec<Vec<u8>> = vec![whole.clone(), Vec::new(), vec![0u8; 100]];
        for cut in [0, 5, 16, 20, 33, 40, whole.len() - 1] {
            cases.push(whole[..cut].to_vec());
        }
        let mut zeros = whole.clone();
        zeros.extend(std::iter::repeat_n(0u8, 5000));
        cases.push(zeros);
        for i in (0..whole.len()).step_by(3) {
            let mut b = whole.clone();
            b[i] ^= 0x04;
            cases.push(b);
        }
        let fs = SimFs::new();
        let p = Path::new("/d/wal");
        type Records = Vec<(u64, u64, Vec<u8>)>;
        let run = |r: Result<(Records, Replay)>| match r {
            Ok((got, replay)) => format!("{got:?} {replay:?}"),
            Err(e) => format!("error: {e}"),
        };
        for (n, bytes) in cases.iter().enumerate() {
            let mut got = Vec::new();
            let expected = run(WalReader::replay_bytes(bytes, p, None, &mut |s, o, b| {
                got.push((s, o, b.to_vec()));
                Ok(())
            })
            .map(|r| (std::mem::take(&mut got), r)));
            let f = fs.open(p, OpenMode::CreateOrTruncate).unwrap();
            f.write_all_at(bytes, 0).unwrap();
            for chunk in [1, 2, 7, 17, 64, 333, REPLAY_CHUNK] {
                let mut got = Vec::new();
                let actual =
                    run(
                        WalReader::replay_in_chunks(&fs, p, None, chunk, &mut |s, o, b| {
                            got.push((s, o, b.to_vec()));
                            Ok(())
                        })
                        .map(|r| (got, r)),
                    );
                assert_eq!(actual, expected, "case {n}, chunk {chunk}");
            }
        }
    }

    /// A creation cut short leaves a file without records, which a new creation replaces; a
    /// file with a record is never overwritten.
    #[test]
    fn create_replaces_a_leftover_without_records_only() {
        let fs = SimFs::new();
        let p = Path::new("/d/wal");
        for leftover in [
            &b""[..],
            &header_bytes(1, None)[..7],
            &header_bytes(1, None),
            &[0u8; 4096][..],
        ] {
            let f = fs.open(p, OpenMode::CreateOrTruncate).unwrap();
            f.write_all_at(leftover, 0).unwrap();
            f.set_len(leftover.len() as u64).unwrap();
            let w = WalWriter::create(&fs, p, 1, None).unwrap();
            w.append_all_and_sync([&b"x"[..]].into_iter()).unwrap();
            let r = WalReader::replay(&fs, p, None, |_, _, _| Ok(())).unwrap();
            assert_eq!(r.records, 1, "leftover of {} bytes", leftover.len());
        }
        // Now the file holds a record: creating it again is refused and changes nothing.
        let before = fs.read_file(p).unwrap();
        let err = WalWriter::create(&fs, p, 1, None).unwrap_err();
        assert!(err.to_string().contains("create WAL"), "{err}");
        assert_eq!(fs.read_file(p).unwrap(), before);
    }

    /// Sealing cuts the zeros off, durably; the records stay.
    #[test]
    fn seal_cuts_the_zeros_ahead() {
        let fs = SimFs::new();
        let p = Path::new("/d/wal");
        let w = WalWriter::create(&fs, p, 1, None).unwrap();
        fs.sync_dir(Path::new("/d")).unwrap();
        w.append_all_and_sync([&b"abc"[..]].into_iter()).unwrap();
        let r = WalReader::replay(&fs, p, None, |_, _, _| Ok(())).unwrap();
        assert_eq!((r.records, r.valid_len), (1, w.len()));
        assert!(r.torn_tail_bytes > 0);
        w.seal().unwrap();
        let image = fs.crash_image(crate::storage::sim::CrashMode::DurableOnly);
        assert_eq!(image.read_file(p).unwrap().len() as u64, w.len());
        let r = WalReader::replay(&image, p, None, |_, _, _| Ok(())).unwrap();
        assert_eq!((r.records, r.torn_tail_bytes, r.sealed), (1, 0, true));
        assert!(w.append_all_and_sync([&b"late"[..]].into_iter()).is_err());
    }

    /// Whatever write, extension or sync fails (a full disk), the file is cut back to the
    /// records acknowledged: the zeros a failed extension wrote ahead do not stay to fill the
    /// disk. And a seal writes no zeros ahead of itself (it fits where they would not).
    #[test]
    fn a_failed_append_or_seal_leaves_only_acknowledged_records() {
        use crate::storage::sim::FaultFs;
        let payloads: Vec<Vec<u8>> = (0..6).map(|i| vec![i as u8; 40_000]).collect();
        let p = Path::new("/d/wal");
        for n in 1.. {
            let sim = std::sync::Arc::new(SimFs::new());
            let fs = FaultFs::new(sim.clone(), n, 28, false);
            let Ok(w) = WalWriter::create(&fs, p, 1, None) else {
                continue;
            };
            let mut failed = None;
            for payload in &payloads {
                if let Err(e) = w.append_all_and_sync([&payload[..]].into_iter()) {
                    failed = Some(e);
                    break;
                }
            }
            if failed.is_none() {
                failed = w.seal().err();
            }
            let len = sim.read_file(p).unwrap().len() as u64;
            if let Some(e) = failed {
                // (Unless the failing call is the cut itself.)
                if !matches!(
                    e,
                    Error::Io {
                        op: "truncate WAL",
                        ..
                    }
                ) {
                    assert_eq!(
                        len,
                        w.len(),
                        "failing call {n} ({e}): the file is not cut back"
                    );
                }
            } else {
                // No call failed any more: the whole run, sealed, with no zeros.
                assert_eq!(len, w.len());
                break;
            }
        }
        // A seal where zeros ahead would not fit: only its own bytes are written.
        let fs = SimFs::new();
        let w = WalWriter::create(&fs, p, 1, None).unwrap();
        w.append_all_and_sync([&b"abc"[..]].into_iter()).unwrap();
        w.seal().unwrap();
        assert_eq!(fs.read_file(p).unwrap().len() as u64, w.len());
    }

    /// In a sealed file no damage reads as a torn tail: a flip anywhere in the last batch
    /// record (which the seal follows) is corruption, and a seal is the end of the file.
    #[test]
    fn sealed_file_damage_is_corruption() {
        let fs = SimFs::new();
        let p = Path::new("/d/wal");
        let w = WalWriter::create(&fs, p, 5, None).unwrap();
        w.append_all_and_sync([&b"first"[..], b"second"].into_iter())
            .unwrap();
        let before_last = WAL_HEADER_LEN as usize + RECORD_HEADER_LEN + 5;
        w.seal().unwrap();
        let bytes = fs.read_file(p).unwrap();
        let r = WalReader::replay_bytes(&bytes, p, None, &mut |_, _, _| Ok(())).unwrap();
        assert_eq!(
            (r.first_seq, r.last_seq, r.records, r.sealed),
            (5, 6, 2, true)
        );
        let seal_at = bytes.len() - RECORD_HEADER_LEN - SEAL_PAYLOAD_LEN;
        for i in before_last..seal_at {
            let mut b = bytes.clone();
            b[i] ^= 0x10;
            let err = WalReader::replay_bytes(&b, p, None, &mut |_, _, _| Ok(())).unwrap_err();
            assert!(err.is_corruption(), "byte {i}: {err}");
        }
        let mut b = bytes.clone();
        b.extend_from_slice(b"junk");
        let err = WalReader::replay_bytes(&b, p, None, &mut |_, _, _| Ok(())).unwrap_err();
        assert!(err.is_corruption(), "{err}");
        let mut b = bytes.clone();
        b.extend_from_slice(&[0; 100]);
        assert!(
            WalReader::replay_bytes(&b, p, None, &mut |_, _, _| Ok(()))
                .unwrap()
                .sealed
        );
    }

    /// Version 2 numbers records +1 from the header's `first_seq`: a record out of place is
    /// corruption, even with an intact checksum.
    #[test]
    fn out_of_sequence_record_is_corruption() {
        let mut bytes = header_bytes(10, None);
        encode_record(&mut bytes, 10, b"a", None);
        encode_record(&mut bytes, 12, b"c", None);
        let err = WalReader::replay_bytes(&bytes, Path::new("w"), None, &mut |_, _, _| Ok(()))
            .unwrap_err();
        assert!(err.is_corruption(), "{err}");
        let mut bytes = header_bytes(10, None);
        encode_record(&mut bytes, 9, b"a", None);
        let err = WalReader::replay_bytes(&bytes, Path::new("w"), None, &mut |_, _, _| Ok(()))
            .unwrap_err();
        assert!(err.is_corruption(), "{err}");
    }

    /// A version-1 log (16-byte header, increasing sequence numbers) still replays.
    #[test]
    fn version_1_log_replays() {
        let mut bytes = v1_header_bytes();
        encode_record(&mut bytes, 3, b"x", None);
        encode_record(&mut bytes, 7, b"y", None);
        let (got, r) = collect(&bytes).unwrap();
        assert_eq!(got, vec![b"x".to_vec(), b"y".to_vec()]);
        assert_eq!((r.version, r.last_seq, r.sealed), (1, 7, false));
    }

    // ---- Version 3 -----------------------------------------------------------------------

    use crate::storage::identity::DbId;

    fn identity(db: u8, file_id: u64) -> FileIdentity {
        FileIdentity {
            db_id: DbId(std::array::from_fn(|i| db ^ i as u8)),
            file_id,
        }
    }

    const ID: FileIdentity = FileIdentity {
        db_id: DbId([7; 16]),
        file_id: 0x12,
    };

    fn v3_log(id: FileIdentity, first_seq: u64, payloads: &[&[u8]]) -> Vec<u8> {
        let mut out = header_bytes(first_seq, Some(id));
        for (i, p) in payloads.iter().enumerate() {
            encode_record(&mut out, first_seq + i as u64, p, Some(&id));
        }
        out
    }

    fn replay_v3(bytes: &[u8], expect: FileIdentity) -> Result<(Vec<Vec<u8>>, Replay)> {
        let mut got = Vec::new();
        let r = WalReader::replay_bytes(bytes, Path::new("wal"), Some(expect), &mut |_, _, p| {
            got.push(p.to_vec());
            Ok(())
        })?;
        Ok((got, r))
    }

    fn corruption_at(err: &Error) -> Option<u64> {
        match err {
            Error::Corruption { offset, .. } => Some(*offset),
            _ => None,
        }
    }

    /// The header's fields sit where `format/wal.md` says; a writer's file replays whole,
    /// sealed, with its identity; every truncation replays a prefix.
    #[test]
    fn v3_header_layout_roundtrip_and_truncations() {
        let fs = SimFs::new();
        let p = Path::new("/d/wal");
        let w = WalWriter::create(&fs, p, 40, Some(ID)).unwrap();
        assert!(w.is_empty());
        w.append_all_and_sync([&b"x"[..], b"yy"].into_iter())
            .unwrap();
        w.seal().unwrap();
        let bytes = fs.read_file(p).unwrap();
        assert_eq!(&bytes[..8], MAGIC);
        assert_eq!(bytes[8..12], WAL_V3.to_le_bytes());
        assert_eq!(bytes[12..16], [0; 4]);
        assert_eq!(bytes[16..32], ID.db_id.0);
        assert_eq!(bytes[32..40], ID.file_id.to_le_bytes());
        assert_eq!(bytes[40..48], 40u64.to_le_bytes());
        assert_eq!(bytes[48..52], crc32fast::hash(&bytes[..48]).to_le_bytes());
        let (got, r) = replay_v3(&bytes, ID).unwrap();
        assert_eq!(got, vec![b"x".to_vec(), b"yy".to_vec()]);
        assert_eq!(
            (r.version, r.first_seq, r.last_seq, r.sealed, r.identity),
            (3, 40, 41, true, Some(ID))
        );
        let payloads: Vec<&[u8]> = vec![b"one", b"", &[7u8; 100]];
        let bytes = v3_log(ID, 1, &payloads);
        let mut ends = vec![WAL_V3_HEADER_LEN as usize];
        for p in &payloads {
            ends.push(ends.last().unwrap() + RECORD_HEADER_LEN + p.len());
        }
        for cut in 0..=bytes.len() {
            let (got, r) = replay_v3(&bytes[..cut], ID).unwrap();
            let whole = ends.iter().filter(|&&e| e <= cut).count().saturating_sub(1);
            assert_eq!(got.len(), whole, "cut at {cut}");
            let valid = if cut < ends[0] { 0 } else { ends[whole] };
            assert_eq!(r.valid_len as usize, valid, "cut at {cut}");
        }
    }

    /// Every single-bit flip of the header, with records after it, is corruption; a flip in a
    /// record is corruption unless it is in the last one, which the rules read as a torn tail.
    #[test]
    fn v3_every_bit_flip_is_corruption_or_a_torn_last_record() {
        let bytes = v3_log(ID, 1, &[b"a", b"bb", b"ccc"]);
        let last = bytes.len() - (RECORD_HEADER_LEN + 3);
        for i in 0..bytes.len() {
            for bit in 0..8 {
                let mut b = bytes.clone();
                b[i] ^= 1 << bit;
                match replay_v3(&b, ID) {
                    Ok((got, r)) => {
                        assert!(i >= last, "byte {i} bit {bit}: accepted");
                        assert_eq!((got.len(), r.valid_len as usize), (2, last));
                    }
                    Err(e) => assert!(e.is_corruption(), "byte {i} bit {bit}: {e}"),
                }
            }
        }
    }

    /// A header of another database or of another file is corruption at that field, and so is
    /// a header of the other version than the database's.
    #[test]
    fn v3_wrong_identity_or_version_is_corruption_at_the_field() {
        for records in [&[][..], &[&b"r"[..]][..]] {
            let bytes = v3_log(ID, 1, records);
            let other_db = FileIdentity {
                db_id: identity(1, 0).db_id,
                ..ID
            };
            let err = replay_v3(&bytes, other_db).unwrap_err();
            assert_eq!(corruption_at(&err), Some(16), "{err}");
            assert!(err.to_string().contains("belongs to database"), "{err}");
            let other_file = FileIdentity {
                file_id: 0x13,
                ..ID
            };
            let err = replay_v3(&bytes, other_file).unwrap_err();
            assert_eq!(corruption_at(&err), Some(32), "{err}");
            let err = WalReader::replay_bytes(&bytes, Path::new("w"), None, &mut |_, _, _| Ok(()))
                .unwrap_err();
            assert_eq!(corruption_at(&err), Some(8), "{err}");
        }
        let v2 = log(&[b"r"]);
        let err = replay_v3(&v2, ID).unwrap_err();
        assert_eq!(corruption_at(&err), Some(8), "{err}");
    }

    /// Records moved from another WAL file (of another database, or another file of this one)
    /// fail their seeded checksum where they land: damage before valid records is corruption.
    #[test]
    fn v3_records_from_another_wal_fail_their_checksum() {
        let payloads: [&[u8]; 3] = [b"first", b"other", b"third"];
        let ours = v3_log(ID, 1, &payloads);
        let second = WAL_V3_HEADER_LEN as usize + RECORD_HEADER_LEN + 5;
        let record = second..second + RECORD_HEADER_LEN + 5;
        for other in [identity(3, ID.file_id), FileIdentity { file_id: 1, ..ID }] {
            let theirs = v3_log(other, 1, &payloads);
            // The same records but for their checksums.
            assert_ne!(theirs[52..], ours[52..]);
            let mut spliced = ours.clone();
            spliced[record.clone()].copy_from_slice(&theirs[record.clone()]);
            let err = replay_v3(&spliced, ID).unwrap_err();
            assert_eq!(corruption_at(&err), Some(second as u64), "{err}");
            // At the end, a foreign record is not replayed (a torn tail).
            let mut appended = v3_log(ID, 1, &payloads[..1]);
            appended.extend_from_slice(&theirs[record.clone()]);
            let (got, r) = replay_v3(&appended, ID).unwrap();
            assert_eq!((got.len(), r.torn_tail_bytes as usize), (1, record.len()));
            assert!(!WalReader::starts_with_record(
                &theirs[record.clone()],
                Some(ID)
            ));
            assert!(WalReader::starts_with_record(
                &ours[record.clone()],
                Some(ID)
            ));
        }
    }

    /// Each unknown header flag, written with the header's CRC recomputed, is unsupported; an
    /// unknown version after a header CRC that matches is an unsupported version.
    #[test]
    fn v3_unknown_flags_and_versions_are_unsupported() {
        let bytes = v3_log(ID, 1, &[b"r"]);
        let recrc = |b: &mut Vec<u8>| {
            let crc = crc32fast::hash(&b[..48]);
            b[48..52].copy_from_slice(&crc.to_le_bytes());
        };
        for bit in 0..32 {
            let mut b = bytes.clone();
            b[12..16].copy_from_slice(&(1u32 << bit).to_le_bytes());
            recrc(&mut b);
            let err = replay_v3(&b, ID).unwrap_err();
            assert!(matches!(err, Error::Unsupported { .. }), "bit {bit}: {err}");
        }
        let mut b = bytes.clone();
        b[8..12].copy_from_slice(&4u32.to_le_bytes());
        recrc(&mut b);
        let err = replay_v3(&b, ID).unwrap_err();
        assert!(
            matches!(
                err,
                Error::UnsupportedVersion {
                    found: 4,
                    supported: 3,
                    ..
                }
            ),
            "{err}"
        );
    }

    /// A header cut off or zeroed with no valid record after it is an empty log; a damaged
    /// header followed by records valid under the expected seed is corruption.
    #[test]
    fn v3_damaged_header_is_empty_without_records_and_corruption_with() {
        let bytes = v3_log(ID, 1, &[b"r"]);
        let mut zeroed = bytes.clone();
        zeroed[..52].fill(0);
        let err = replay_v3(&zeroed, ID).unwrap_err();
        assert_eq!(corruption_at(&err), Some(0), "{err}");
        zeroed.truncate(52);
        zeroed.extend_from_slice(&[0; 100]);
        let (got, r) = replay_v3(&zeroed, ID).unwrap();
        assert_eq!((got.len(), r.valid_len, r.version), (0, 0, 0));
    }

    /// A writer's recovery seals a version-3 file with a seal seeded like its records.
    #[test]
    fn v3_seal_file_seals_with_the_seeded_checksum() {
        let fs = SimFs::new();
        let p = Path::new("/d/wal");
        let w = WalWriter::create(&fs, p, 9, Some(ID)).unwrap();
        w.append_all_and_sync([&b"abc"[..]].into_iter()).unwrap();
        let r = WalReader::replay(&fs, p, Some(ID), |_, _, _| Ok(())).unwrap();
        assert!(!r.sealed && r.torn_tail_bytes > 0);
        WalReader::truncate_torn_tail(&fs, p, r.valid_len).unwrap();
        WalReader::seal_file(&fs, p, &r).unwrap();
        let r = WalReader::replay(&fs, p, Some(ID), |_, _, _| Ok(())).unwrap();
        assert_eq!((r.records, r.last_seq, r.sealed), (1, 9, true));
    }
}
