//! The write-ahead log: a header, then checksummed records, each holding one write batch.
//! Layout and recovery rules: `format/wal.md`.

#![deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::Mutex;

use super::vfs::{OpenMode, Prefetch, Vfs, VfsFile};
use crate::{Error, Result};

const MAGIC: &[u8; 8] = b"MHDBWAL\0";
/// Version of the WAL layout.
pub const WAL_VERSION: u32 = 1;
/// Bytes of the file header.
pub const WAL_HEADER_LEN: u64 = 16;
/// Bytes of a record header: crc u32, length u32, type u8, sequence u64.
pub const RECORD_HEADER_LEN: usize = 17;
/// Largest payload of one record.
pub const MAX_RECORD_LEN: usize = 64 << 20;
/// The only record type of version 1: a whole batch. Type 0 is reserved (zero-filled space).
const TYPE_BATCH: u8 = 1;

fn io(path: &Path, op: &'static str) -> impl FnOnce(std::io::Error) -> Error {
    let path = path.to_path_buf();
    move |source| Error::Io {
        path: Some(path),
        op,
        source,
    }
}

fn corruption(path: &Path, offset: u64, detail: impl Into<String>) -> Error {
    Error::Corruption {
        path: path.to_path_buf(),
        offset,
        detail: detail.into(),
    }
}

fn header_bytes() -> [u8; WAL_HEADER_LEN as usize] {
    let mut h = [0u8; WAL_HEADER_LEN as usize];
    let (head, crc) = h.split_at_mut(12);
    let (magic, version) = head.split_at_mut(8);
    magic.copy_from_slice(MAGIC);
    version.copy_from_slice(&WAL_VERSION.to_le_bytes());
    crc.copy_from_slice(
        &crc32fast::hash(&{
            let mut b = [0u8; 12];
            let (m, v) = b.split_at_mut(8);
            m.copy_from_slice(MAGIC);
            v.copy_from_slice(&WAL_VERSION.to_le_bytes());
            b
        })
        .to_le_bytes(),
    );
    h
}

/// Appends one encoded record to `out`.
fn encode_record(out: &mut Vec<u8>, seq: u64, payload: &[u8]) {
    let start = out.len();
    out.extend_from_slice(&[0u8; 4]);
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    out.push(TYPE_BATCH);
    out.extend_from_slice(&seq.to_le_bytes());
    out.extend_from_slice(payload);
    let crc = crc32fast::hash(out.get(start + 4..).unwrap_or_default());
    if let Some(slot) = out.get_mut(start..start + 4) {
        slot.copy_from_slice(&crc.to_le_bytes());
    }
}

#[derive(Debug)]
struct WriterInner {
    file: Arc<dyn VfsFile>,
    path: PathBuf,
    offset: u64,
    next_seq: u64,
    failed: bool,
}

/// Appends records to one WAL file. Clones share the file and its position.
#[derive(Clone, Debug)]
pub struct WalWriter {
    inner: Arc<Mutex<WriterInner>>,
}

impl WalWriter {
    /// Creates a new WAL file holding only its header, synced (the caller syncs the directory).
    pub fn create(vfs: &dyn Vfs, path: &Path) -> Result<WalWriter> {
        let file = vfs
            .open(path, OpenMode::CreateNew)
            .map_err(io(path, "create WAL"))?;
        file.write_all_at(&header_bytes(), 0)
            .map_err(io(path, "write WAL header"))?;
        file.sync_data().map_err(io(path, "fsync WAL"))?;
        Ok(WalWriter {
            inner: Arc::new(Mutex::new(WriterInner {
                file,
                path: path.to_path_buf(),
                offset: WAL_HEADER_LEN,
                next_seq: 1,
                failed: false,
            })),
        })
    }

    /// Sets the sequence number of the next record.
    pub fn set_next_seq(&self, seq: u64) {
        self.inner.lock().next_seq = seq;
    }

    /// Writes records (no fsync). After any failure the writer refuses further appends.
    pub fn append_all<'a>(&self, payloads: impl Iterator<Item = &'a [u8]>) -> Result<()> {
        let mut inner = self.inner.lock();
        Self::append_locked(&mut inner, payloads)
    }

    fn append_locked<'a>(
        inner: &mut WriterInner,
        payloads: impl Iterator<Item = &'a [u8]>,
    ) -> Result<()> {
        if inner.failed {
            return Err(Error::PreviousIo);
        }
        let mut buf = Vec::new();
        for p in payloads {
            if p.len() > MAX_RECORD_LEN {
                return Err(Error::invalid(
                    "batch",
                    format!(
                        "encodes to {} bytes, more than the WAL record limit {MAX_RECORD_LEN}",
                        p.len()
                    ),
                ));
            }
            encode_record(&mut buf, inner.next_seq, p);
            inner.next_seq += 1;
        }
        if buf.is_empty() {
            return Ok(());
        }
        if let Err(e) = inner.file.write_all_at(&buf, inner.offset) {
            inner.failed = true;
            return Err(io(&inner.path, "write WAL")(e));
        }
        inner.offset += buf.len() as u64;
        Ok(())
    }

    /// Writes records and makes everything written so far durable with one fsync.
    pub fn append_all_and_sync<'a>(&self, payloads: impl Iterator<Item = &'a [u8]>) -> Result<()> {
        let mut inner = self.inner.lock();
        Self::append_locked(&mut inner, payloads)?;
        if let Err(e) = inner.file.sync_data() {
            // Never retry an fsync as if it had succeeded: the durable state is unknown.
            inner.failed = true;
            return Err(io(&inner.path, "fsync WAL")(e));
        }
        Ok(())
    }

    /// Bytes written so far (header included).
    pub fn len(&self) -> u64 {
        self.inner.lock().offset
    }

    /// True when no record was written.
    pub fn is_empty(&self) -> bool {
        self.len() == WAL_HEADER_LEN
    }
}

/// What a replay found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Replay {
    /// Records delivered.
    pub records: u64,
    /// Length of the valid prefix (header + whole valid records).
    pub valid_len: u64,
    /// Bytes after the valid prefix (a torn tail, zeros or garbage with nothing valid after).
    pub torn_tail_bytes: u64,
    /// Sequence number of the last record (0 if none).
    pub last_seq: u64,
}

/// Reads WAL files.
pub struct WalReader;

/// A record parsed at some offset: (sequence, payload range, total length).
fn parse_at(bytes: &[u8], pos: usize) -> Option<(u64, std::ops::Range<usize>, usize)> {
    let header = bytes.get(pos..pos.checked_add(RECORD_HEADER_LEN)?)?;
    let (crc, rest) = header.split_first_chunk::<4>()?;
    let (len, rest) = rest.split_first_chunk::<4>()?;
    let (kind, seq) = rest.split_first()?;
    let len = u32::from_le_bytes(*len) as usize;
    if *kind != TYPE_BATCH || len > MAX_RECORD_LEN {
        return None;
    }
    let seq = u64::from_le_bytes(seq.try_into().ok()?);
    let payload_start = pos + RECORD_HEADER_LEN;
    let end = payload_start.checked_add(len)?;
    let covered = bytes.get(pos + 4..end)?;
    if crc32fast::hash(covered) != u32::from_le_bytes(*crc) {
        return None;
    }
    Some((seq, payload_start..end, RECORD_HEADER_LEN + len))
}

impl WalReader {
    /// Calls `apply(seq, offset, payload)` for every valid record in order. A damaged or
    /// incomplete record with nothing valid after it ends the log (a torn tail, reported in
    /// [`Replay`]); one followed by a valid record is [`Error::Corruption`].
    pub fn replay(
        vfs: &dyn Vfs,
        path: &Path,
        mut apply: impl FnMut(u64, u64, &[u8]) -> Result<()>,
    ) -> Result<Replay> {
        // Mapped rather than read: no copy of the whole log into a fresh buffer. The log is
        // not written while it is replayed (the database lock is held and new writes go to a
        // new file), and a torn tail is cut only after this map is dropped.
        let bytes = vfs.map_readonly(path).map_err(io(path, "map WAL"))?;
        bytes.prefetch(0, bytes.len());
        Self::replay_bytes(&bytes, path, &mut apply)
    }

    /// [`WalReader::replay`] over bytes already in memory.
    pub fn replay_bytes(
        bytes: &[u8],
        path: &Path,
        apply: &mut impl FnMut(u64, u64, &[u8]) -> Result<()>,
    ) -> Result<Replay> {
        let header = bytes.get(..WAL_HEADER_LEN as usize);
        if header != Some(&header_bytes()[..]) {
            // A header is written and synced before any record can be acknowledged, so a file
            // whose header is incomplete or damaged and that holds no valid record was cut off
            // while being created: it is empty (a torn tail from byte 0).
            let any_record =
                (WAL_HEADER_LEN as usize..bytes.len()).any(|p| parse_at(bytes, p).is_some());
            if let Some(h) = header.filter(|_| any_record) {
                let version = h
                    .get(8..12)
                    .and_then(|v| <[u8; 4]>::try_from(v).ok())
                    .map(u32::from_le_bytes);
                let crc_ok = h
                    .get(12..16)
                    .zip(h.get(..12))
                    .is_some_and(|(c, b)| c == crc32fast::hash(b).to_le_bytes());
                if h.get(..8) == Some(&MAGIC[..])
                    && crc_ok
                    && let Some(found) = version.filter(|v| *v != WAL_VERSION)
                {
                    return Err(Error::UnsupportedVersion {
                        path: path.to_path_buf(),
                        found,
                        supported: WAL_VERSION,
                    });
                }
                return Err(corruption(
                    path,
                    0,
                    "bad WAL header followed by valid records",
                ));
            }
            if !any_record {
                return Ok(Replay {
                    records: 0,
                    valid_len: 0,
                    torn_tail_bytes: bytes.len() as u64,
                    last_seq: 0,
                });
            }
        }
        let mut pos = WAL_HEADER_LEN as usize;
        let mut records = 0u64;
        let mut last_seq = 0u64;
        while pos < bytes.len() {
            match parse_at(bytes, pos) {
                Some((seq, payload, total)) if seq > last_seq => {
                    apply(seq, pos as u64, bytes.get(payload).unwrap_or_default())?;
                    records += 1;
                    last_seq = seq;
                    pos += total;
                }
                _ => {
                    // Not a valid next record. If any valid record follows, the log is damaged
                    // in the middle; otherwise this is a torn tail.
                    if let Some(later) = (pos + 1..bytes.len())
                        .find(|&p| parse_at(bytes, p).is_some_and(|(s, _, _)| s > last_seq))
                    {
                        return Err(corruption(
                            path,
                            pos as u64,
                            format!(
                                "damaged WAL record followed by a valid record at offset {later}"
                            ),
                        ));
                    }
                    break;
                }
            }
        }
        Ok(Replay {
            records,
            valid_len: pos as u64,
            torn_tail_bytes: (bytes.len() - pos) as u64,
            last_seq,
        })
    }

    /// Cuts a torn tail off (writers only), durably. A file without a valid header is removed
    /// (the caller syncs the directory).
    pub fn truncate_torn_tail(vfs: &dyn Vfs, path: &Path, valid_len: u64) -> Result<()> {
        if valid_len < WAL_HEADER_LEN {
            return vfs.remove_file(path).map_err(io(path, "remove torn WAL"));
        }
        let file = vfs
            .open(path, OpenMode::ReadWrite)
            .map_err(io(path, "open WAL"))?;
        file.set_len(valid_len).map_err(io(path, "truncate WAL"))?;
        file.sync_data().map_err(io(path, "fsync WAL"))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::storage::simfs::SimFs;

    fn log(payloads: &[&[u8]]) -> Vec<u8> {
        let mut out = header_bytes().to_vec();
        for (i, p) in payloads.iter().enumerate() {
            encode_record(&mut out, i as u64 + 1, p);
        }
        out
    }

    fn collect(bytes: &[u8]) -> Result<(Vec<Vec<u8>>, Replay)> {
        let mut got = Vec::new();
        let r = WalReader::replay_bytes(bytes, Path::new("wal"), &mut |_, _, p| {
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
        let w = WalWriter::create(&fs, p).unwrap();
        w.append_all_and_sync([&b"x"[..], b"yy"].into_iter())
            .unwrap();
        w.append_all([&b"zzz"[..]].into_iter()).unwrap();
        let mut got = Vec::new();
        let r = WalReader::replay(&fs, p, |s, _, b| {
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
        let err = WalReader::replay_bytes(&bytes, p, &mut |_, _, _| Ok(())).unwrap_err();
        assert!(
            matches!(err, Error::UnsupportedVersion { found: 9, .. }),
            "{err}"
        );
    }
}
