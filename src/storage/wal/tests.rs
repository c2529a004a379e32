//! Unit tests of the WAL codec and writer: headers, records, seals, replay and recovery
//! rules of every version.

#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::expect_used)]

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
            let actual = run(
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
    let err =
        WalReader::replay_bytes(&bytes, Path::new("w"), None, &mut |_, _, _| Ok(())).unwrap_err();
    assert!(err.is_corruption(), "{err}");
    let mut bytes = header_bytes(10, None);
    encode_record(&mut bytes, 9, b"a", None);
    let err =
        WalReader::replay_bytes(&bytes, Path::new("w"), None, &mut |_, _, _| Ok(())).unwrap_err();
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
