//! Reading a WAL: every valid record in order, then what ends the log — a torn tail, or
//! corruption when a valid record follows damage (`format/wal.md`, "Recovery").

use std::path::Path;

use super::{
    MAGIC, MAX_RECORD_LEN, RECORD_HEADER_LEN, SEAL_PAYLOAD_LEN, TYPE_BATCH, TYPE_SEAL, V3_DB_ID_AT,
    V3_FILE_ID_AT, V3_FIRST_SEQ_AT, V3_FLAGS_AT, WAL_HEADER_LEN, WAL_V1, WAL_V1_HEADER_LEN, WAL_V3,
    WAL_V3_HEADER_LEN, WAL_VERSION, record_crc, seal_record,
};
use crate::storage::identity::{DbId, FileIdentity};
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
    /// Sequence number of the last batch record (versions 2 and 3: `first_seq − 1` if none;
    /// version 1: 0 if none).
    pub last_seq: u64,
    /// The file's layout version (1, 2 or 3; 0 for a file cut off while being created).
    pub version: u32,
    /// Versions 2 and 3: the sequence number the header says the first record carries.
    pub first_seq: u64,
    /// Versions 2 and 3: the file ends with a seal record (it is complete).
    pub sealed: bool,
    /// Version 3: the identity its header carries and its records' checksums are seeded
    /// with (the one the caller expected); `None` for earlier versions.
    pub identity: Option<FileIdentity>,
}

/// Reads WAL files.
pub struct WalReader;

/// A record parsed at some offset: (type, sequence, payload range, total length).
fn parse_at(
    bytes: &[u8],
    pos: usize,
    seed: Option<&FileIdentity>,
) -> Option<(u8, u64, std::ops::Range<usize>, usize)> {
    let header = bytes.get(pos..pos.checked_add(RECORD_HEADER_LEN)?)?;
    let total = record_len(header)?;
    let (crc, rest) = header.split_first_chunk::<4>()?;
    let kind = *rest.get(4)?;
    let seq = u64::from_le_bytes(rest.get(5..13)?.try_into().ok()?);
    let payload_start = pos + RECORD_HEADER_LEN;
    let end = pos.checked_add(total)?;
    let covered = bytes.get(pos + 4..end)?;
    if record_crc(seed, covered) != u32::from_le_bytes(*crc) {
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

impl<'a> FileChunks<'a> {
    /// The chunks of `file` (at `path`), `chunk` bytes at a time, from its start.
    fn of(file: &'a dyn VfsFile, path: &'a Path, chunk: usize) -> Result<Self> {
        let len = file.len().map_err(Error::io_on(path, "stat WAL"))?;
        Ok(FileChunks {
            file,
            path,
            len,
            chunk,
            start: 0,
            buf: Vec::new(),
        })
    }
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

/// The first offset in `from ..= last` where a valid record (its checksum seeded with `seed`)
/// starts whose sequence number `accept`s.
fn find_record(
    src: &mut impl Source,
    from: u64,
    last: u64,
    seed: Option<&FileIdentity>,
    accept: impl Fn(u64) -> bool,
) -> Result<Option<u64>> {
    let mut p = from;
    while p <= last {
        if let Some(total) = record_len(src.get(p, RECORD_HEADER_LEN)?)
            && let Some((_, seq, _, _)) = parse_at(src.get(p, total)?, 0, seed)
            && accept(seq)
        {
            return Ok(Some(p));
        }
        p += 1;
    }
    Ok(None)
}

impl WalReader {
    /// Whether `bytes` begins with one whole record whose checksum holds (seeded with
    /// `identity` in a version-3 file). (A reader that found a torn tail while a writer in
    /// another process appends may find the record finished when it looks again.)
    pub fn starts_with_record(bytes: &[u8], identity: Option<FileIdentity>) -> bool {
        parse_at(bytes, 0, identity.as_ref()).is_some()
    }

    /// Calls `apply(seq, offset, payload)` for every valid record in order. A damaged or
    /// incomplete record with nothing valid after it ends the log (a torn tail, reported in
    /// [`Replay`]); one followed by a valid record is [`Error::Corruption`].
    ///
    /// `identity` is what a version-3 file must carry (`None` in a database of version 1 or
    /// 2, whose files must not be of version 3): taken from the manifest and the file's name,
    /// it seeds the record checksums, so records are judged with it even after a damaged
    /// header. An intact header of the other kind, or one naming another database or file,
    /// is corruption at the field that disagrees; unknown header flags are
    /// [`Error::Unsupported`].
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
        identity: Option<FileIdentity>,
        mut apply: impl FnMut(u64, u64, &[u8]) -> Result<()>,
    ) -> Result<Replay> {
        Self::replay_in_chunks(vfs, path, identity, REPLAY_CHUNK, &mut apply)
    }

    pub(super) fn replay_in_chunks(
        vfs: &dyn Vfs,
        path: &Path,
        identity: Option<FileIdentity>,
        chunk: usize,
        apply: &mut impl FnMut(u64, u64, &[u8]) -> Result<()>,
    ) -> Result<Replay> {
        let file = vfs
            .open(path, OpenMode::Read)
            .map_err(Error::io_on(path, "open WAL"))?;
        let mut src = FileChunks::of(file.as_ref(), path, chunk.max(1))?;
        replay_source(&mut src, path, identity.as_ref(), chunk.max(1), apply)
    }

    /// The header check of [`WalReader::replay`] alone: an intact header that is not what
    /// `identity` says the file must carry is an error; a missing, short or damaged header is
    /// not (the file then holds no record a header vouches for). For a WAL file the manifest
    /// no longer replays, whose records are not read.
    pub fn check_header(vfs: &dyn Vfs, path: &Path, identity: Option<FileIdentity>) -> Result<()> {
        let file = vfs
            .open(path, OpenMode::Read)
            .map_err(Error::io_on(path, "open WAL"))?;
        let mut src = FileChunks::of(file.as_ref(), path, REPLAY_CHUNK)?;
        parse_header(&mut src, path, identity.as_ref()).map(|_| ())
    }

    /// [`WalReader::replay`] over bytes already in memory.
    pub fn replay_bytes(
        bytes: &[u8],
        path: &Path,
        identity: Option<FileIdentity>,
        apply: &mut impl FnMut(u64, u64, &[u8]) -> Result<()>,
    ) -> Result<Replay> {
        let seed = identity.as_ref();
        replay_source(&mut InMemory(bytes), path, seed, REPLAY_CHUNK, apply)
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

/// A whole, intact header of a known version.
struct Header {
    version: u32,
    len: u64,
    first_seq: u64,
}

fn u32_at(bytes: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(bytes.get(at..at + 4)?.try_into().ok()?))
}

fn u64_at(bytes: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(bytes.get(at..at + 8)?.try_into().ok()?))
}

/// Whether the header's CRC, were the header `len` bytes before it, matches.
fn header_crc_matches(header: &[u8], len: usize) -> bool {
    header
        .get(..len)
        .zip(u32_at(header, len))
        .is_some_and(|(body, crc)| crc32fast::hash(body) == crc)
}

/// A file's header, or `None` when it is not a whole, intact header of a known version. An
/// intact header that is not what `expect` says the file must be (version 3 with that
/// identity, or an earlier version when `expect` is `None`) is an error.
fn parse_header(
    src: &mut impl Source,
    path: &Path,
    expect: Option<&FileIdentity>,
) -> Result<Option<Header>> {
    let header = src.get(0, WAL_V3_HEADER_LEN as usize)?.to_vec();
    if header.get(..8) != Some(&MAGIC[..]) {
        return Ok(None);
    }
    let (version, len, first_seq) = match u32_at(&header, 8) {
        Some(WAL_V1) if header_crc_matches(&header, 12) => (WAL_V1, WAL_V1_HEADER_LEN, Some(0)),
        Some(WAL_VERSION) if header_crc_matches(&header, 20) => {
            (WAL_VERSION, WAL_HEADER_LEN, u64_at(&header, 12))
        }
        Some(WAL_V3) if header_crc_matches(&header, 48) => {
            (WAL_V3, WAL_V3_HEADER_LEN, u64_at(&header, V3_FIRST_SEQ_AT))
        }
        _ => return Ok(None),
    };
    let Some(first_seq) = first_seq else {
        return Ok(None);
    };
    match expect {
        Some(expect) if version == WAL_V3 => check_v3_header(&header, path, expect)?,
        Some(_) => {
            return Err(Error::corruption(
                path,
                8,
                format!("a version-{version} WAL file where version 3 is expected"),
            ));
        }
        None if version == WAL_V3 => {
            return Err(Error::corruption(
                path,
                8,
                "a version-3 WAL file in a database of version 1 or 2",
            ));
        }
        None => {}
    }
    Ok(Some(Header {
        version,
        len,
        first_seq,
    }))
}

/// Checks an intact version-3 header's flags and identity against `expect`.
fn check_v3_header(header: &[u8], path: &Path, expect: &FileIdentity) -> Result<()> {
    let flags = u32_at(header, V3_FLAGS_AT).unwrap_or_default();
    if flags != 0 {
        return Err(Error::Unsupported {
            path: path.to_path_buf(),
            feature: format!("WAL header flags {flags:#x}"),
        });
    }
    let db_id = header
        .get(V3_DB_ID_AT..V3_FILE_ID_AT)
        .and_then(|b| <[u8; 16]>::try_from(b).ok())
        .map(DbId)
        .unwrap_or_default();
    if db_id != expect.db_id {
        return Err(Error::corruption(
            path,
            V3_DB_ID_AT as u64,
            format!(
                "belongs to database {db_id}, not to this database ({})",
                expect.db_id
            ),
        ));
    }
    let file_id = u64_at(header, V3_FILE_ID_AT).unwrap_or_default();
    if file_id != expect.file_id {
        return Err(Error::corruption(
            path,
            V3_FILE_ID_AT as u64,
            format!(
                "the header names WAL file {file_id:016x}, not {:016x} (its name)",
                expect.file_id
            ),
        ));
    }
    Ok(())
}

/// The replay of [`WalReader::replay`] and [`WalReader::replay_bytes`], over either source.
fn replay_source(
    src: &mut impl Source,
    path: &Path,
    seed: Option<&FileIdentity>,
    chunk: usize,
    apply: &mut impl FnMut(u64, u64, &[u8]) -> Result<()>,
) -> Result<Replay> {
    let len = src.len();
    let Some(Header {
        version,
        len: header_len,
        first_seq,
    }) = parse_header(src, path, seed)?
    else {
        return bad_header(src, path, chunk, seed);
    };
    let numbered = version != WAL_V1;
    let identity = if version == WAL_V3 {
        seed.copied()
    } else {
        None
    };
    let mut walk = Walk {
        numbered,
        seed: identity,
        pos: header_len,
        records: 0,
        // Versions 2 and 3 number batch records +1 from `first_seq`; version 1 only increasing.
        last_seq: if numbered {
            first_seq.wrapping_sub(1)
        } else {
            0
        },
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
        identity,
    })
}

/// A replay under way: the offset of the next record and what the records before it said.
struct Walk {
    /// Versions 2 and 3: records numbered exactly +1, and a seal.
    numbered: bool,
    /// Version 3: the identity record checksums are seeded with.
    seed: Option<FileIdentity>,
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
    /// (nothing but zeros may follow it); an intact record of version 2 or 3 out of place is
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
        let Some((kind, seq, payload, total)) = parse_at(record, 0, self.seed.as_ref()) else {
            return Ok(Next::Invalid);
        };
        let body = record.get(payload).unwrap_or_default();
        let next_batch = if self.numbered {
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
        if self.numbered
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
        if self.numbered {
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
        let (numbered, last_seq) = (self.numbered, self.last_seq);
        if let Some(last) = src.last_nonzero(self.pos + 1, chunk)?
            && let Some(later) = find_record(src, self.pos + 1, last, self.seed.as_ref(), |s| {
                if numbered {
                    s >= last_seq
                } else {
                    s > last_seq
                }
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
/// all zeros (its type byte is not 0): none starts after the last non-zero byte. Records are
/// judged with the checksum seed the caller gives (a version-3 file's, which its damaged
/// header cannot be trusted for), after where its header would end.
fn bad_header(
    src: &mut impl Source,
    path: &Path,
    chunk: usize,
    seed: Option<&FileIdentity>,
) -> Result<Replay> {
    let len = src.len();
    let records_from = match seed {
        Some(_) => WAL_V3_HEADER_LEN,
        None => WAL_V1_HEADER_LEN,
    };
    let any_record = match src.last_nonzero(records_from, chunk)? {
        Some(last) => find_record(src, records_from, last, seed, |_| true)?.is_some(),
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
            identity: None,
        });
    }
    let header = src.get(0, WAL_V3_HEADER_LEN as usize)?.to_vec();
    // The version is believed only when the header's CRC (after a header shaped as version
    // 1's, 2's or 3's) matches: a flipped bit in it is damage, not a newer format.
    if header.get(..8) == Some(&MAGIC[..])
        && let Some(found) = u32_at(&header, 8).filter(|v| *v > WAL_V3)
        && [12, 20, 48]
            .iter()
            .any(|&at| header_crc_matches(&header, at))
    {
        return Err(Error::UnsupportedVersion {
            path: path.to_path_buf(),
            found,
            supported: WAL_V3,
        });
    }
    Err(Error::corruption(
        path,
        0,
        "bad WAL header followed by valid records",
    ))
}

impl WalReader {
    /// Ends a replayed file of version 2 or 3 with a seal (writers only, after cutting any
    /// torn tail at `replay.valid_len`), durably: it is about to become an older WAL file, and
    /// every older file must be sealed.
    pub fn seal_file(vfs: &dyn Vfs, path: &Path, replay: &Replay) -> Result<()> {
        if replay.sealed || replay.version < WAL_VERSION {
            return Ok(());
        }
        let file = vfs
            .open(path, OpenMode::ReadWrite)
            .map_err(Error::io_on(path, "open WAL"))?;
        let seal = seal_record(replay.last_seq, replay.records, replay.identity.as_ref());
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
