//! Reading a WAL: every valid record in order, then what ends the log — a torn tail, or
//! corruption when a valid record follows damage (`format/wal.md`, "Recovery").

use std::path::Path;

use super::{
    MAGIC, MAX_RECORD_LEN, RECORD_HEADER_LEN, SEAL_PAYLOAD_LEN, TYPE_BATCH, TYPE_SEAL,
    WAL_HEADER_LEN, WAL_V1, WAL_V1_HEADER_LEN, WAL_VERSION, seal_record,
};
use crate::storage::vfs::{OpenMode, Vfs, VfsFile};
use crate::{Error, Result};

/// What a replay found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Replay {
    /// Records delivered.
    pub records: u64,
    /// Length of the valid prefix (header + whole valid records).
    pub valid_len: u64,
    /// Bytes after the valid prefix (a torn tail, zeros or garbage with nothing valid after).
    pub torn_tail_bytes: u64,
    /// Sequence number of the last batch record (version 2: `first_seq − 1` if none;
    /// version 1: 0 if none).
    pub last_seq: u64,
    /// The file's layout version (1 or 2; 0 for a file cut off while being created).
    pub version: u32,
    /// Version 2: the sequence number the header says the first record carries.
    pub first_seq: u64,
    /// Version 2: the file ends with a seal record (it is complete).
    pub sealed: bool,
}

/// Reads WAL files.
pub struct WalReader;

/// A record parsed at some offset: (type, sequence, payload range, total length).
fn parse_at(bytes: &[u8], pos: usize) -> Option<(u8, u64, std::ops::Range<usize>, usize)> {
    let header = bytes.get(pos..pos.checked_add(RECORD_HEADER_LEN)?)?;
    let total = record_len(header)?;
    let (crc, rest) = header.split_first_chunk::<4>()?;
    let kind = *rest.get(4)?;
    let seq = u64::from_le_bytes(rest.get(5..13)?.try_into().ok()?);
    let payload_start = pos + RECORD_HEADER_LEN;
    let end = pos.checked_add(total)?;
    let covered = bytes.get(pos + 4..end)?;
    if crc32fast::hash(covered) != u32::from_le_bytes(*crc) {
        return None;
    }
    Some((kind, seq, payload_start..end, total))
}

/// The length of the record whose header starts `bytes` (header included), if the header can
/// start one: a batch of at most [`MAX_RECORD_LEN`] bytes, or a seal. Its checksum is not
/// checked.
fn record_len(bytes: &[u8]) -> Option<usize> {
    let header = bytes.get(..RECORD_HEADER_LEN)?;
    let len = u32::from_le_bytes(header.get(4..8)?.try_into().ok()?) as usize;
    let ok = match header.get(8) {
        Some(&TYPE_BATCH) => len <= MAX_RECORD_LEN,
        Some(&TYPE_SEAL) => len == SEAL_PAYLOAD_LEN,
        _ => false,
    };
    if !ok {
        return None;
    }
    Some(RECORD_HEADER_LEN + len)
}

/// Bytes of a WAL file read per `pread` during replay (a record longer than this is read
/// whole).
pub(super) const REPLAY_CHUNK: usize = 1 << 20;

/// Where a replay reads the log from: bytes already in memory, or a file read in chunks.
trait Source {
    /// Length of the log.
    fn len(&self) -> u64;
    /// Bytes `at .. at + n`, fewer (maybe none) where the log ends first.
    fn get(&mut self, at: u64, n: usize) -> Result<&[u8]>;

    /// Offset of the last non-zero byte at or after `from`.
    fn last_nonzero(&mut self, from: u64, chunk: usize) -> Result<Option<u64>> {
        let mut end = self.len();
        while end > from {
            let at = end.saturating_sub(chunk as u64).max(from);
            let bytes = self.get(at, (end - at) as usize)?;
            if let Some(i) = bytes.iter().rposition(|&b| b != 0) {
                return Ok(Some(at + i as u64));
            }
            end = at;
        }
        Ok(None)
    }
}

struct InMemory<'a>(&'a [u8]);

impl Source for InMemory<'_> {
    fn len(&self) -> u64 {
        self.0.len() as u64
    }

    fn get(&mut self, at: u64, n: usize) -> Result<&[u8]> {
        let len = self.0.len();
        let start = usize::try_from(at).unwrap_or(usize::MAX).min(len);
        Ok(self
            .0
            .get(start..start.saturating_add(n).min(len))
            .unwrap_or_default())
    }
}

/// A WAL file read with `pread` into one buffer that slides along it.
///
/// Read rather than mapped: the zeros a writer writes ahead of its records may not all have
/// reached the disk. A write that failed with ENOSPC can leave a hole in the file, and on a
/// full tmpfs touching a hole through a mapping allocates a page, fails and raises SIGBUS,
/// killing the process on every open until space is freed. `pread` reads a hole as zeros (a
/// torn tail) without allocating anything, and a failed read is an error, not a signal.
struct FileChunks<'a> {
    file: &'a dyn VfsFile,
    path: &'a Path,
    len: u64,
    chunk: usize,
    /// File offset of `buf[0]`.
    start: u64,
    buf: Vec<u8>,
}

impl Source for FileChunks<'_> {
    fn len(&self) -> u64 {
        self.len
    }

    fn get(&mut self, at: u64, n: usize) -> Result<&[u8]> {
        let end = at.saturating_add(n as u64).min(self.len);
        let at = at.min(end);
        if at < self.start || end > self.start + self.buf.len() as u64 {
            let stop = at.saturating_add(self.chunk as u64).max(end).min(self.len);
            let want = usize::try_from(stop - at)
                .map_err(|_| Error::corruption(self.path, at, "WAL read too large"))?;
            self.buf.resize(want, 0);
            self.start = at;
            if let Err(e) = self.file.read_exact_at(&mut self.buf, at) {
                // A writer in another process may cut the file meanwhile (the zeros written
                // ahead, when it closes or moves to a new file; a torn tail, when it opens):
                // the log then ends where the file now ends.
                let now = self
                    .file
                    .len()
                    .map_err(Error::io_on(self.path, "stat WAL"))?;
                if e.kind() != std::io::ErrorKind::UnexpectedEof || now >= self.len {
                    return Err(Error::io(self.path, "read WAL", e));
                }
                self.len = now;
                self.buf.clear();
                return self.get(at, n);
            }
        }
        let lo = (at - self.start) as usize;
        let hi = (end - self.start) as usize;
        Ok(self.buf.get(lo..hi).unwrap_or_default())
    }
}

/// The first offset in `from ..= last` where a valid record starts whose sequence number
/// `accept`s.
fn find_record(
    src: &mut impl Source,
    from: u64,
    last: u64,
    accept: impl Fn(u64) -> bool,
) -> Result<Option<u64>> {
    let mut p = from;
    while p <= last {
        if let Some(total) = record_len(src.get(p, RECORD_HEADER_LEN)?)
            && let Some((_, seq, _, _)) = parse_at(src.get(p, total)?, 0)
            && accept(seq)
        {
            return Ok(Some(p));
        }
        p += 1;
    }
    Ok(None)
}

impl WalReader {
    /// Whether `bytes` begins with one whole record whose checksum holds. (A reader that
    /// found a torn tail while a writer in another process appends may find the record
    /// finished when it looks again.)
    pub fn starts_with_record(bytes: &[u8]) -> bool {
        parse_at(bytes, 0).is_some()
    }

    /// Calls `apply(seq, offset, payload)` for every valid record in order. A damaged or
    /// incomplete record with nothing valid after it ends the log (a torn tail, reported in
    /// [`Replay`]); one followed by a valid record is [`Error::Corruption`].
    ///
    /// The file is read in chunks of 1 MiB with `pread`, never mapped: a write cut short by a
    /// full disk can leave a hole in it, which a mapped read on a full tmpfs turns into SIGBUS
    /// (a `pread` reads it as zeros: a torn tail). A writer's recovery replays it with the
    /// database locked; a reader may replay it while a writer in another process appends to
    /// it (a partly written last record is a torn tail) or cuts it (the log then ends where
    /// the file ends).
    pub fn replay(
        vfs: &dyn Vfs,
        path: &Path,
        mut apply: impl FnMut(u64, u64, &[u8]) -> Result<()>,
    ) -> Result<Replay> {
        Self::replay_in_chunks(vfs, path, REPLAY_CHUNK, &mut apply)
    }

    pub(super) fn replay_in_chunks(
        vfs: &dyn Vfs,
        path: &Path,
        chunk: usize,
        apply: &mut impl FnMut(u64, u64, &[u8]) -> Result<()>,
    ) -> Result<Replay> {
        let file = vfs
            .open(path, OpenMode::Read)
            .map_err(Error::io_on(path, "open WAL"))?;
        let len = file.len().map_err(Error::io_on(path, "stat WAL"))?;
        let mut src = FileChunks {
            file: file.as_ref(),
            path,
            len,
            chunk: chunk.max(1),
            start: 0,
            buf: Vec::new(),
        };
        replay_source(&mut src, path, chunk.max(1), apply)
    }

    /// [`WalReader::replay`] over bytes already in memory.
    pub fn replay_bytes(
        bytes: &[u8],
        path: &Path,
        apply: &mut impl FnMut(u64, u64, &[u8]) -> Result<()>,
    ) -> Result<Replay> {
        replay_source(&mut InMemory(bytes), path, REPLAY_CHUNK, apply)
    }

    /// Makes a WAL file durable as it is now (writers only).
    pub fn sync_file(vfs: &dyn Vfs, path: &Path) -> Result<()> {
        let file = vfs
            .open(path, OpenMode::ReadWrite)
            .map_err(Error::io_on(path, "open WAL"))?;
        file.sync_data().map_err(Error::io_on(path, "fsync WAL"))
    }

    /// Cuts a torn tail off (writers only), durably. A file without a valid header is removed
    /// (the caller syncs the directory).
    pub fn truncate_torn_tail(vfs: &dyn Vfs, path: &Path, valid_len: u64) -> Result<()> {
        if valid_len == 0 {
            return vfs
                .remove_file(path)
                .map_err(Error::io_on(path, "remove torn WAL"));
        }
        let file = vfs
            .open(path, OpenMode::ReadWrite)
            .map_err(Error::io_on(path, "open WAL"))?;
        file.set_len(valid_len)
            .map_err(Error::io_on(path, "truncate WAL"))?;
        file.sync_data().map_err(Error::io_on(path, "fsync WAL"))
    }
}

/// A file's header: (version, header length, first_seq), or `None` when it is not a whole,
/// intact header of a known version.
fn parse_header(src: &mut impl Source) -> Result<Option<(u32, u64, u64)>> {
    let header = src.get(0, WAL_HEADER_LEN as usize)?.to_vec();
    let field = |at: usize| -> Option<u32> {
        Some(u32::from_le_bytes(header.get(at..at + 4)?.try_into().ok()?))
    };
    let crc_ok = |len: usize| {
        header
            .get(..len)
            .zip(field(len))
            .is_some_and(|(body, crc)| crc32fast::hash(body) == crc)
    };
    if header.get(..8) != Some(&MAGIC[..]) {
        return Ok(None);
    }
    Ok(match field(8) {
        Some(WAL_V1) if crc_ok(12) => Some((WAL_V1, WAL_V1_HEADER_LEN, 0)),
        Some(WAL_VERSION) if crc_ok(20) => header
            .get(12..20)
            .and_then(|b| <[u8; 8]>::try_from(b).ok())
            .map(|b| (WAL_VERSION, WAL_HEADER_LEN, u64::from_le_bytes(b))),
        _ => None,
    })
}

/// The replay of [`WalReader::replay`] and [`WalReader::replay_bytes`], over either source.
fn replay_source(
    src: &mut impl Source,
    path: &Path,
    chunk: usize,
    apply: &mut impl FnMut(u64, u64, &[u8]) -> Result<()>,
) -> Result<Replay> {
    let len = src.len();
    let Some((version, header_len, first_seq)) = parse_header(src)? else {
        return bad_header(src, path, chunk);
    };
    let v2 = version == WAL_VERSION;
    let mut walk = Walk {
        v2,
        pos: header_len,
        records: 0,
        // Version 2 numbers batch records +1 from `first_seq`; version 1 only increasing.
        last_seq: if v2 { first_seq.wrapping_sub(1) } else { 0 },
        sealed: false,
    };
    while walk.pos < len {
        match walk.step(src, path, chunk, apply)? {
            Next::Applied => {}
            Next::Sealed => break,
            Next::Invalid => {
                walk.check_torn(src, path, chunk)?;
                break;
            }
        }
    }
    Ok(Replay {
        records: walk.records,
        valid_len: walk.pos,
        torn_tail_bytes: len - walk.pos,
        last_seq: walk.last_seq,
        version,
        first_seq,
        sealed: walk.sealed,
    })
}

/// A replay under way: the offset of the next record and what the records before it said.
struct Walk {
    v2: bool,
    pos: u64,
    records: u64,
    last_seq: u64,
    sealed: bool,
}

/// What [`Walk::step`] found at the walk's offset.
enum Next {
    /// The next batch record, applied.
    Applied,
    /// The seal: the log ends there.
    Sealed,
    /// No valid next record: a torn tail or damage ([`Walk::check_torn`] tells which).
    Invalid,
}

impl Walk {
    /// Reads the record at the walk's offset: applies the next batch, or takes the seal
    /// (nothing but zeros may follow it); an intact version-2 record out of place is
    /// corruption, never a torn write.
    fn step(
        &mut self,
        src: &mut impl Source,
        path: &Path,
        chunk: usize,
        apply: &mut impl FnMut(u64, u64, &[u8]) -> Result<()>,
    ) -> Result<Next> {
        let pos = self.pos;
        let Some(total) = record_len(src.get(pos, RECORD_HEADER_LEN)?) else {
            return Ok(Next::Invalid);
        };
        let record = src.get(pos, total)?;
        let Some((kind, seq, payload, total)) = parse_at(record, 0) else {
            return Ok(Next::Invalid);
        };
        let body = record.get(payload).unwrap_or_default();
        let next_batch = if self.v2 {
            seq == self.last_seq.wrapping_add(1)
        } else {
            seq > self.last_seq
        };
        if kind == TYPE_BATCH && next_batch {
            apply(seq, pos, body)?;
            self.records += 1;
            self.last_seq = seq;
            self.pos += total as u64;
            return Ok(Next::Applied);
        }
        if self.v2
            && kind == TYPE_SEAL
            && seq == self.last_seq
            && body == self.records.to_le_bytes()
        {
            self.pos += total as u64;
            self.sealed = true;
            // A seal ends the file: only zeros (space written ahead and not yet cut) may
            // follow it.
            if let Some(last) = src.last_nonzero(self.pos, chunk)? {
                return Err(Error::corruption(
                    path,
                    self.pos,
                    format!("bytes after the WAL's seal (up to offset {last})"),
                ));
            }
            return Ok(Next::Sealed);
        }
        if self.v2 {
            return Err(Error::corruption(
                path,
                pos,
                format!(
                    "WAL record {seq} (type {kind}) where record {} was expected",
                    self.last_seq.wrapping_add(1)
                ),
            ));
        }
        Ok(Next::Invalid)
    }

    /// At an offset without a valid next record: if any valid record follows, the log is
    /// damaged in the middle; otherwise this is a torn tail. Only offsets up to the last
    /// non-zero byte can start a record, so the zeros that end a preallocated file are not
    /// tried.
    fn check_torn(&self, src: &mut impl Source, path: &Path, chunk: usize) -> Result<()> {
        let (v2, last_seq) = (self.v2, self.last_seq);
        if let Some(last) = src.last_nonzero(self.pos + 1, chunk)?
            && let Some(later) = find_record(src, self.pos + 1, last, |s| {
                if v2 { s >= last_seq } else { s > last_seq }
            })?
        {
            return Err(Error::corruption(
                path,
                self.pos,
                format!("damaged WAL record followed by a valid record at offset {later}"),
            ));
        }
        Ok(())
    }
}

/// A file whose header is not a whole, intact header of a known version. A header is written
/// and synced before any record can be acknowledged, so if the file holds no valid record it
/// was cut off while being created: it is empty (a torn tail from byte 0). A record is never
/// all zeros (its type byte is not 0): none starts after the last non-zero byte.
fn bad_header(src: &mut impl Source, path: &Path, chunk: usize) -> Result<Replay> {
    let len = src.len();
    let any_record = match src.last_nonzero(WAL_V1_HEADER_LEN, chunk)? {
        Some(last) => find_record(src, WAL_V1_HEADER_LEN, last, |_| true)?.is_some(),
        None => false,
    };
    if !any_record {
        return Ok(Replay {
            records: 0,
            valid_len: 0,
            torn_tail_bytes: len,
            last_seq: 0,
            version: 0,
            first_seq: 0,
            sealed: false,
        });
    }
    let header = src.get(0, WAL_HEADER_LEN as usize)?.to_vec();
    let u32_at = |at: usize| {
        header
            .get(at..at + 4)
            .and_then(|v| <[u8; 4]>::try_from(v).ok())
            .map(u32::from_le_bytes)
    };
    // The version is believed only when the header's CRC (after a version-1 or a version-2
    // shaped header) matches: a flipped bit in it is damage, not a newer format.
    let crc_matches = |len: usize| {
        header
            .get(..len)
            .zip(u32_at(len))
            .is_some_and(|(body, crc)| crc32fast::hash(body) == crc)
    };
    if header.get(..8) == Some(&MAGIC[..])
        && let Some(found) = u32_at(8).filter(|v| *v > WAL_VERSION)
        && (crc_matches(12) || crc_matches(20))
    {
        return Err(Error::UnsupportedVersion {
            path: path.to_path_buf(),
            found,
            supported: WAL_VERSION,
        });
    }
    Err(Error::corruption(
        path,
        0,
        "bad WAL header followed by valid records",
    ))
}

impl WalReader {
    /// Ends a replayed version-2 file with a seal (writers only, after cutting any torn tail
    /// at `replay.valid_len`), durably: it is about to become an older WAL file, and every
    /// older file must be sealed.
    pub fn seal_file(vfs: &dyn Vfs, path: &Path, replay: &Replay) -> Result<()> {
        if replay.sealed || replay.version != WAL_VERSION {
            return Ok(());
        }
        let file = vfs
            .open(path, OpenMode::ReadWrite)
            .map_err(Error::io_on(path, "open WAL"))?;
        let seal = seal_record(replay.last_seq, replay.records);
        // The checksum last, as every record: a kill between the writes leaves a record whose
        // checksum is zero, which the next recovery cuts silently (never a false report).
        let (crc, body) = seal.split_at(4);
        file.write_all_at(body, replay.valid_len + 4)
            .and_then(|()| file.write_all_at(crc, replay.valid_len))
            .map_err(Error::io_on(path, "seal WAL"))?;
        file.set_len(replay.valid_len + seal.len() as u64)
            .map_err(Error::io_on(path, "truncate WAL"))?;
        file.sync_data().map_err(Error::io_on(path, "fsync WAL"))
    }
}
