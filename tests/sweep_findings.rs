//! Damage that `tools/reliability/corruption_sweep.py` found answered with anything but a
//! corruption error (exit 3 naming the file), each reduced to the smallest case.

mod common;

use std::path::{Path, PathBuf};

use mhdb::Error;
use mhdb::db::{Db, Durability, IndexParams, Options};

fn options() -> Options {
    Options {
        durability: Durability::Sync,
        ..Options::default()
    }
}

/// Opens `dir` read-only or as a writer.
fn open_as(dir: &Path, read_only: bool) -> mhdb::Result<Db> {
    if read_only {
        Db::open_read_only(dir)
    } else {
        Db::open(dir, options())
    }
}

/// A database closed cleanly after a few acknowledged writes: its newest WAL file holds them
/// and its seal. Returns that file.
fn closed_with_wal(dir: &Path) -> PathBuf {
    let db = Db::create(dir, IndexParams::default(), options()).unwrap();
    for i in 0..3 {
        db.insert_text(
            format!("k{i}"),
            &format!("text number {i} with a few words"),
        )
        .unwrap();
    }
    drop(db);
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        .max()
        .unwrap()
}

/// A bit flipped in a WAL header's version field is damage (the header CRC does not match),
/// not a file written by a newer mhdb: the open fails with corruption naming the file, as in
/// every other file kind (it used to be `UnsupportedVersion`, exit 1).
#[test]
fn a_flipped_wal_version_is_corruption() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let wal = closed_with_wal(&dir);
    let mut bytes = std::fs::read(&wal).unwrap();
    bytes[8] ^= 0x04; // version 3 -> 7
    std::fs::write(&wal, &bytes).unwrap();
    for read_only in [true, false] {
        let opened = open_as(&dir, read_only);
        match opened {
            Err(Error::Corruption { path, .. }) => assert_eq!(path, wal),
            Err(other) => panic!("read_only {read_only}: {other:?}"),
            Ok(_) => panic!("read_only {read_only}: opened a damaged WAL"),
        }
    }
}

/// The newest WAL cut inside its last acknowledged record (here: its seal and half of that
/// record gone) reads as a torn tail. A writer's open keeps and reports it; a read-only
/// `verify` used to say "ok" (the reader ignored the tail in case a writer was writing it).
/// A live writer never shows such a tail (zeros ahead, the checksum written last), so the
/// reader reports it too, and changes no byte.
#[test]
fn a_read_only_verify_reports_a_damaged_last_wal_record() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let wal = closed_with_wal(&dir);
    let bytes = std::fs::read(&wal).unwrap();
    // Records: 24-byte header, batches, then a 25-byte seal; cut 30 bytes into the last batch.
    let cut = &bytes[..bytes.len() - 25 - 30];
    std::fs::write(&wal, cut).unwrap();

    let reader = Db::open_read_only(&dir).unwrap();
    assert_eq!(
        common::stored(&reader).len(),
        2,
        "the torn record is not read"
    );
    assert_eq!(reader.cut_tails().len(), 1, "{:?}", reader.cut_tails());
    let report = reader.verify().unwrap();
    assert!(
        report.problems.iter().any(|p| matches!(
            p,
            Error::Corruption { path, .. } if *path == wal
        )),
        "{:?}",
        report.problems
    );
    drop(reader);
    assert_eq!(
        std::fs::read(&wal).unwrap(),
        cut,
        "a reader changed the WAL"
    );
}

/// A crash leaves zeros written ahead (and at most an unfinished record whose checksum is
/// still zero): no reader reports anything.
#[test]
fn a_read_only_verify_is_quiet_about_zeros_after_a_crash() {
    let tmp = tempfile::tempdir().unwrap();
    let live = tmp.path().join("live");
    let db = Db::create(&live, IndexParams::default(), options()).unwrap();
    db.insert_text("k", "a text with a few words in it")
        .unwrap();
    std::mem::forget(db); // a crash: the WAL still ends in the zeros written ahead
    let dir = tmp.path().join("db");
    std::fs::create_dir(&dir).unwrap();
    for entry in std::fs::read_dir(&live).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), dir.join(entry.file_name())).unwrap();
    }
    let reader = Db::open_read_only(&dir).unwrap();
    assert!(reader.cut_tails().is_empty(), "{:?}", reader.cut_tails());
    assert!(reader.verify().unwrap().is_ok());
    assert_eq!(common::stored(&reader).len(), 1);
}

/// Recomputes a version-2 segment's block CRCs, section CRCs and `meta_crc`
/// (`format/segment.md`), so that only the content rules can tell a change.
fn reseal_segment(b: &mut [u8]) {
    let u64_at =
        |b: &[u8], at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap()) as usize;
    let n = b.len();
    let table = u64_at(b, n - 32);
    let count = u32::from_le_bytes(b[n - 24..n - 20].try_into().unwrap()) as usize;
    let entries: Vec<(usize, usize, usize)> = (0..count)
        .map(|i| {
            (
                table + 40 * i,
                u64_at(b, table + 40 * i + 8),
                u64_at(b, table + 40 * i + 16),
            )
        })
        .collect();
    let (_, sums, sums_len) = *entries.last().unwrap();
    for j in 0..sums_len / 4 {
        let crc = crc32fast::hash(&b[(4096 * j).max(64)..(4096 * (j + 1)).min(sums)]);
        b[sums + 4 * j..sums + 4 * j + 4].copy_from_slice(&crc.to_le_bytes());
    }
    for &(e, off, len) in &entries {
        let crc = crc32fast::hash(&b[off..off + len]);
        b[e + 32..e + 36].copy_from_slice(&crc.to_le_bytes());
    }
    let mut meta = b[..64].to_vec();
    meta.extend_from_slice(&b[table..n - 32]);
    meta.extend_from_slice(&b[n - 32..n - 8]);
    let crc = crc32fast::hash(&meta);
    b[n - 8..n - 4].copy_from_slice(&crc.to_le_bytes());
}

/// A stored shingle set whose bytes match every checksum but break the coding (its count one
/// more than its values) is refused by export, like a damaged signature: it used to copy the
/// bytes into a new segment under fresh checksums, exit 0, and leave a result whose reads
/// failed naming the new file (the sweep's `reseal` mutations). (Made in a copy of the
/// version-2 fixture, whose manifest pins no segment checksum; a version-3 manifest's
/// `meta_crc` refuses such a segment at open, before any compaction.)
#[test]
fn compaction_and_export_refuse_a_stored_set_that_does_not_decode() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    std::fs::create_dir(&dir).unwrap();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/db-v2-sets");
    for e in std::fs::read_dir(fixture).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), dir.join(e.file_name())).unwrap();
    }
    // Every set of the flushed segment whose count can take one more in its first byte.
    let seg = dir.join("seg-000000000000000a.seg");
    let mut b = std::fs::read(&seg).unwrap();
    let sets = common::segment_section(&b, 7).unwrap();
    let docs = u64::from_le_bytes(b[40..48].try_into().unwrap()) as usize;
    let offset = |b: &[u8], i: usize| {
        u64::from_le_bytes(
            b[sets.start + 8 * i..sets.start + 8 * i + 8]
                .try_into()
                .unwrap(),
        ) as usize
    };
    let coded = sets.start + 8 * (docs + 1);
    let mut broken = 0;
    for i in 0..docs {
        let at = coded + offset(&b, i);
        if b[at] & 0x7f < 0x7f {
            b[at] += 1;
            broken += 1;
        }
    }
    assert!(broken > docs / 2, "{broken} of {docs}");
    reseal_segment(&mut b);
    std::fs::write(&seg, &b).unwrap();

    let db = Db::open_read_only(&dir).unwrap();
    let refused = |r: mhdb::Result<()>, what: &str| match r {
        Err(Error::Corruption { path, .. }) => assert_eq!(path, seg, "{what}"),
        other => panic!("{what}: {other:?}"),
    };
    refused(db.export(tmp.path().join("export")), "export");
    assert!(!db.verify().unwrap().is_ok());
    drop(db);

    // A query whose exact re-rank meets such a set reports corruption at the set's own bytes
    // in the SHINGLES section (it used to say offset 0). Top-k computes the exact similarity
    // of its best candidates, each text's own document first.
    let reader = Db::open_read_only(&dir).unwrap();
    let expected: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/db-v2-sets.expected.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let mut located = 0;
    for doc in expected["live"].as_array().unwrap() {
        let options = mhdb::db::QueryOptions {
            top: Some(3),
            ..Default::default()
        };
        match reader.query_text(doc["text"].as_str().unwrap(), &options) {
            Ok(_) => {}
            Err(Error::Corruption { path, offset, .. }) => {
                assert_eq!(path, seg);
                let offset = offset as usize;
                assert!(
                    coded <= offset && offset < sets.end,
                    "{offset} not in {coded}..{}",
                    sets.end
                );
                located += 1;
            }
            Err(other) => panic!("{other}"),
        }
    }
    assert!(located > 0, "no query met a broken set");
}

/// The live manifest of the database in `dir` (the file CURRENT names).
fn live_manifest(dir: &Path) -> PathBuf {
    let current = std::fs::read(dir.join("CURRENT")).unwrap();
    let generation = u64::from_le_bytes(current[12..20].try_into().unwrap());
    dir.join(format!("MANIFEST-{generation:016x}"))
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

/// Changes the live manifest of `dir` with `edit`, then recomputes its CRC and CURRENT's pin
/// of its length and CRC (and CURRENT's own), as a forger would: only the cross-checks of what
/// the manifest says can tell. Returns the manifest's path.
fn forge_manifest(dir: &Path, edit: impl FnOnce(&mut Vec<u8>)) -> PathBuf {
    let path = live_manifest(dir);
    let mut b = std::fs::read(&path).unwrap();
    edit(&mut b);
    let n = b.len();
    let crc = crc32fast::hash(&b[..n - 4]);
    b[n - 4..].copy_from_slice(&crc.to_le_bytes());
    std::fs::write(&path, &b).unwrap();
    // CURRENT: magic, version, generation, manifest length (20), manifest CRC (28), own CRC.
    let current_path = dir.join("CURRENT");
    let mut c = std::fs::read(&current_path).unwrap();
    c[20..28].copy_from_slice(&(n as u64).to_le_bytes());
    c[28..32].copy_from_slice(&crc32fast::hash(&b).to_le_bytes());
    let own = crc32fast::hash(&c[..32]);
    c[32..36].copy_from_slice(&own.to_le_bytes());
    std::fs::write(&current_path, &c).unwrap();
    path
}

/// Opening `dir`, read-only and as a writer, fails with corruption of `path` at `offset`.
fn assert_refused(dir: &Path, path: &Path, offset: u64) {
    for read_only in [true, false] {
        let opened = open_as(dir, read_only);
        match opened {
            Err(Error::Corruption {
                path: p, offset: o, ..
            }) => assert_eq!((p.as_path(), o), (path, offset), "read_only {read_only}"),
            Err(other) => panic!("read_only {read_only}: {other:?}"),
            Ok(_) => panic!("read_only {read_only}: opened a forged database"),
        }
    }
}

// Offsets in a version-3 manifest of the default parameters (`format/manifest.md`): the
// header and parameters take bytes 0..126, one banding 24 bytes, no keep field; then (P = 150)
// next_docno, wal_start, wal_next_seq, next_file_id, the deletion list's four fields, the
// segment count, and 44-byte segment entries.
const SHINGLE_FLAGS_AT: usize = 70;
const WAL_START_AT: usize = 158;
const NEXT_FILE_ID_AT: usize = 174;
const FIRST_SEGMENT_DOCS_AT: usize = 150 + 64 + 24;

/// A manifest whose `wal_start` is past every WAL file (its counter moved with it) used to
/// open with no document at all, and the next writer deleted the WAL that held them: the WAL
/// files below `wal_start` must hold only records the manifest folded in.
#[test]
fn a_manifest_whose_wal_start_skips_unfolded_records_is_corruption() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let wal = closed_with_wal(&dir);
    let wal_id = u64::from_str_radix(&wal.file_stem().unwrap().to_str().unwrap()[4..], 16).unwrap();
    let manifest = forge_manifest(&dir, |b| {
        assert!(u64_at(b, WAL_START_AT) <= wal_id);
        b[WAL_START_AT..WAL_START_AT + 8].copy_from_slice(&(wal_id + 1).to_le_bytes());
        let next = u64_at(b, NEXT_FILE_ID_AT).max(wal_id + 1);
        b[NEXT_FILE_ID_AT..NEXT_FILE_ID_AT + 8].copy_from_slice(&next.to_le_bytes());
    });
    assert_refused(&dir, &manifest, WAL_START_AT as u64);
    assert!(wal.exists(), "the WAL was removed");
}

/// `wal_start` past `next_file_id` names a WAL file never made.
#[test]
fn a_manifest_whose_wal_start_is_past_its_counter_is_corruption() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    closed_with_wal(&dir);
    let manifest = forge_manifest(&dir, |b| {
        let past = u64_at(b, NEXT_FILE_ID_AT) + 1;
        b[WAL_START_AT..WAL_START_AT + 8].copy_from_slice(&past.to_le_bytes());
    });
    assert_refused(&dir, &manifest, WAL_START_AT as u64);
}

/// A `shingle_flags` bit this build does not define (it used to be ignored, and text signed
/// as if it were not there) is refused: in a version-3 manifest, whose CRC matched, as a
/// newer writer's feature (unsupported), never read past.
#[test]
fn unknown_shingle_flags_in_a_manifest_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    closed_with_wal(&dir);
    forge_manifest(&dir, |b| {
        assert_eq!(b[SHINGLE_FLAGS_AT] & !0x07, 0);
        b[SHINGLE_FLAGS_AT] |= 0x40;
    });
    for read_only in [true, false] {
        let opened = open_as(&dir, read_only);
        match opened {
            Err(Error::Unsupported { feature, .. }) => assert!(feature.contains("shingle")),
            Err(other) => panic!("read_only {read_only}: {other:?}"),
            Ok(_) => panic!("read_only {read_only}: opened a forged database"),
        }
    }
}

/// A segment entry's `docs` must be the count its segment holds (it used to be checked only
/// against the span, so a count one short passed).
#[test]
fn a_manifest_with_a_wrong_segment_doc_count_is_corruption() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let db = Db::create(&dir, IndexParams::default(), options()).unwrap();
    for i in 0..3 {
        db.insert_text(
            format!("k{i}"),
            &format!("text number {i} with a few words"),
        )
        .unwrap();
    }
    db.flush().unwrap();
    drop(db);
    let manifest = forge_manifest(&dir, |b| {
        assert_eq!(u64_at(b, FIRST_SEGMENT_DOCS_AT), 3);
        b[FIRST_SEGMENT_DOCS_AT..FIRST_SEGMENT_DOCS_AT + 8].copy_from_slice(&2u64.to_le_bytes());
    });
    assert_refused(&dir, &manifest, FIRST_SEGMENT_DOCS_AT as u64);
}

/// The offsets of the WAL batch records of `wal` that hold one delete and nothing else.
fn lone_deletes(wal: &[u8]) -> Vec<usize> {
    // Header 52 bytes (version 3); a record is crc, length, type, sequence (17 bytes), then
    // its payload: a lone delete is count 1, tag 2, docno.
    let mut found = Vec::new();
    let mut at = 52;
    while at + 17 <= wal.len() {
        let len = u32::from_le_bytes(wal[at + 4..at + 8].try_into().unwrap()) as usize;
        if len == 0 {
            break;
        }
        if wal[at + 8] == 1 && len == 13 && wal[at + 17..at + 22] == [1, 0, 0, 0, 2] {
            found.push(at);
        }
        at += 17 + len;
    }
    found
}

/// Sets the docno of the lone delete in the record at `at` to `docno` and recomputes the
/// record's CRC (seeded, in version 3, with the header's db_id and file_id, bytes 16..40).
fn set_deleted_docno(wal: &mut [u8], at: usize, docno: u64) {
    wal[at + 22..at + 30].copy_from_slice(&docno.to_le_bytes());
    let mut seeded = wal[16..40].to_vec();
    seeded.extend_from_slice(&wal[at + 4..at + 30]);
    let crc = crc32fast::hash(&seeded);
    wal[at..at + 4].copy_from_slice(&crc.to_le_bytes());
}

/// A database whose WAL holds inserts of `k0`..`k2` (docnos 0..3), then one batch deleting
/// `k1` and one deleting `k2`. Returns the WAL and the offsets of the two deletes.
fn wal_with_two_deletes(dir: &Path) -> (PathBuf, Vec<usize>) {
    let db = Db::create(dir, IndexParams::default(), options()).unwrap();
    for i in 0..3 {
        db.insert_text(
            format!("k{i}"),
            &format!("text number {i} with a few words"),
        )
        .unwrap();
    }
    assert!(db.delete("k1").unwrap());
    assert!(db.delete("k2").unwrap());
    drop(db);
    let wal = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        .max()
        .unwrap();
    let deletes = lone_deletes(&std::fs::read(&wal).unwrap());
    assert_eq!(deletes.len(), 2);
    (wal, deletes)
}

/// A WAL delete must name a document live at that point of the replay. A delete of a docno
/// never inserted, or of one deleted already, used to replay as nothing (in the second case
/// leaving the document the writer deleted live).
#[test]
fn a_wal_delete_of_a_document_not_live_is_corruption() {
    for (what, docno, which) in [("never inserted", 3, 0), ("deleted twice", 1, 1)] {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("db");
        let (wal, deletes) = wal_with_two_deletes(&dir);
        let mut b = std::fs::read(&wal).unwrap();
        set_deleted_docno(&mut b, deletes[which], docno);
        std::fs::write(&wal, &b).unwrap();
        for read_only in [true, false] {
            let opened = if read_only {
                Db::open_read_only(&dir)
            } else {
                Db::open(&dir, options())
            };
            match opened {
                Err(Error::Corruption { path, offset, .. }) => {
                    assert_eq!(
                        (path, offset),
                        (wal.clone(), deletes[which] as u64),
                        "{what}"
                    )
                }
                Err(other) => panic!("{what}, read_only {read_only}: {other:?}"),
                Ok(_) => panic!("{what}, read_only {read_only}: opened"),
            }
        }
    }
}

/// Every delete a writer logs names a live document, whatever the batch does with the key
/// (deleted twice, upserted then deleted, inserted and deleted, put twice), of documents in a
/// segment and in the WAL: all of it replays, and the result is what was written.
#[test]
fn the_deletes_a_writer_logs_all_replay() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let db = Db::create(&dir, IndexParams::default(), options()).unwrap();
    let text = |i: u32| format!("text number {i} with a few words");
    for i in 0..6 {
        db.insert_text(format!("k{i}"), &text(i)).unwrap();
    }
    db.flush().unwrap();
    db.insert_text("k6", &text(6)).unwrap();
    let mut batch = mhdb::db::WriteBatch::new();
    batch
        .delete("k0")
        .delete("k0")
        .insert_text("k1", text(11))
        .delete("k1")
        .insert_text("k7", text(7))
        .delete("k7")
        .insert_text("k2", text(12))
        .insert_text("k2", text(22))
        .delete("k6")
        .delete("k6")
        .delete("absent");
    db.write(&batch).unwrap();
    assert!(db.delete("k3").unwrap());
    assert!(!db.delete("k3").unwrap());
    let written = common::stored(&db);
    drop(db);
    let keys: Vec<&str> = written.keys().map(String::as_str).collect();
    assert_eq!(keys, ["k2", "k4", "k5"]);
    let reader = Db::open_read_only(&dir).unwrap();
    assert_eq!(common::stored(&reader), written);
    drop(reader);
    let db = Db::open(&dir, options()).unwrap();
    assert_eq!(common::stored(&db), written);
}
