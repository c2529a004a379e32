//! The bodies of mhdb's fuzz targets: one function per decoder, each taking arbitrary bytes.
//! None may panic, crash or hang on any input; where a decoder accepts its input, the
//! function checks what must then hold (a replay from a file equals one from memory, a
//! segment that verifies answers its own keys and combines into one that verifies too).
//!
//! The cargo-fuzz binaries in `fuzz_targets/` call these, and so does the test suite:
//! `tests/fuzz_seeds.rs` includes this file and replays every committed seed in `seeds/`.
//! Every decoder is reached through mhdb's public API: the segment and WAL decoders
//! directly, the others by opening a copy of `tests/golden/db-v1` (in a simulated
//! filesystem) in which one file is replaced by the input.

use std::path::Path;
use std::sync::Arc;

use mhdb::db::{Db, Options, QueryOptions};
use mhdb::storage::segment::{Segment, SegmentOptions, combine_segments};
use mhdb::storage::sim::SimFs;
use mhdb::storage::vfs::{OpenMode, Vfs};
use mhdb::storage::wal::WalReader;

/// The golden format-v1 database, byte for byte.
const GOLDEN: &[(&str, &[u8])] = &[
    (
        "CURRENT",
        include_bytes!("../../tests/golden/db-v1/CURRENT"),
    ),
    ("LOCK", b""),
    (
        MANIFEST,
        include_bytes!("../../tests/golden/db-v1/MANIFEST-0000000000000005"),
    ),
    (
        DELETIONS,
        include_bytes!("../../tests/golden/db-v1/del-000000000000000b.del"),
    ),
    (
        "seg-0000000000000008.seg",
        include_bytes!("../../tests/golden/db-v1/seg-0000000000000008.seg"),
    ),
    (
        "seg-000000000000000a.seg",
        include_bytes!("../../tests/golden/db-v1/seg-000000000000000a.seg"),
    ),
    (
        SIGLOG,
        include_bytes!("../../tests/golden/db-v1/signatures.log"),
    ),
    (
        WAL,
        include_bytes!("../../tests/golden/db-v1/wal-0000000000000009.log"),
    ),
];
const MANIFEST: &str = "MANIFEST-0000000000000005";
const DELETIONS: &str = "del-000000000000000b.del";
const SIGLOG: &str = "signatures.log";
const WAL: &str = "wal-0000000000000009.log";
const DIR: &str = "/db";

fn golden(name: &str) -> &'static [u8] {
    GOLDEN
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, b)| *b)
        .unwrap_or_default()
}

fn crc(bytes: &[u8]) -> [u8; 4] {
    crc32fast::hash(bytes).to_le_bytes()
}

/// A copy of the golden database in a simulated filesystem, with `replaced` files' bytes.
fn golden_fs(replaced: &[(&str, Vec<u8>)]) -> SimFs {
    let fs = SimFs::new();
    let dir = Path::new(DIR);
    fs.create_dir_all(dir).expect("directory");
    for (name, bytes) in GOLDEN {
        let bytes = replaced
            .iter()
            .find(|(n, _)| n == name)
            .map_or(*bytes, |(_, b)| b.as_slice());
        let file = fs
            .open(&dir.join(name), OpenMode::CreateNew)
            .expect("create");
        file.write_all_at(bytes, 0).expect("write");
    }
    fs
}

/// Opens `fs`'s database read-only and runs every read on it; errors are fine, panics not.
fn exercise(fs: SimFs) {
    let Ok(db) = Db::open_with_vfs(Arc::new(fs), DIR, Options::default(), true) else {
        return;
    };
    let _ = db.verify();
    let _ = db.stats();
    if let Ok(keys) = db.keys() {
        for key in keys.iter().take(64) {
            let _ = db.get(key);
        }
    }
    let _ = db.get("absent");
    let _ = db.query_text(
        "A family bakery in Ashford held a public meeting about the north quay on Tuesday.",
        &QueryOptions::default(),
    );
    let _ = db.dedup_pairs(0.5, |_| Ok(()), |_, _| {});
}

/// A manifest whose CRC and CURRENT pin are made to match `manifest`'s bytes (when `fix`),
/// so that the fields themselves are decoded.
fn pinned(mut manifest: Vec<u8>, fix: bool) -> Vec<(&'static str, Vec<u8>)> {
    let n = manifest.len();
    if fix && n >= 4 {
        let c = crc(&manifest[..n - 4]);
        manifest[n - 4..].copy_from_slice(&c);
    }
    let mut current = golden("CURRENT").to_vec();
    if fix {
        current[20..28].copy_from_slice(&(n as u64).to_le_bytes());
        current[28..32].copy_from_slice(&crc(&manifest));
        let c = crc(&current[..32]);
        current[32..36].copy_from_slice(&c);
    }
    vec![("CURRENT", current), (MANIFEST, manifest)]
}

/// CURRENT: the input is the file (its first byte's low bit set: its CRC made to match).
pub fn current(data: &[u8]) {
    let mut current = data.get(1..).unwrap_or_default().to_vec();
    if data.first().is_some_and(|b| b & 1 == 1) && current.len() >= 36 {
        let c = crc(&current[..32]);
        current[32..36].copy_from_slice(&c);
    }
    exercise(golden_fs(&[("CURRENT", current)]));
}

/// The manifest: the input is the file (first byte's low bit set: its CRC and CURRENT's pin
/// made to match, so that every field is decoded and checked).
pub fn manifest(data: &[u8]) {
    let fix = data.first().is_some_and(|b| b & 1 == 1);
    let manifest = data.get(1..).unwrap_or_default().to_vec();
    exercise(golden_fs(&pinned(manifest, fix)));
}

/// The deletion list: the input is the file; the manifest's count and length are set to
/// match it (count from the input's own count field), with fresh checksums when the first
/// byte's low bit is set.
pub fn deletions(data: &[u8]) {
    let fix = data.first().is_some_and(|b| b & 1 == 1);
    let mut del = data.get(1..).unwrap_or_default().to_vec();
    if fix && del.len() >= 4 {
        let n = del.len();
        let c = crc(&del[..n - 4]);
        del[n - 4..].copy_from_slice(&c);
    }
    let mut manifest = golden(MANIFEST).to_vec();
    let count = del
        .get(12..20)
        .and_then(|b| <[u8; 8]>::try_from(b).ok())
        .map_or(0, u64::from_le_bytes);
    manifest[101..109].copy_from_slice(&count.to_le_bytes());
    manifest[109..117].copy_from_slice(&(del.len() as u64).to_le_bytes());
    let mut files = pinned(manifest, true);
    files.push((DELETIONS, del));
    exercise(golden_fs(&files));
}

/// The signature log's header: the input overwrites the start of the golden log (the
/// records after it stay).
pub fn siglog_header(data: &[u8]) {
    let original = golden(SIGLOG);
    let mut log = data.to_vec();
    log.extend_from_slice(original.get(data.len()..).unwrap_or_default());
    exercise(golden_fs(&[(SIGLOG, log)]));
}

type Replayed = Vec<(u64, u64, Vec<u8>)>;

fn replay_both(bytes: &[u8]) -> (String, String) {
    let show = |r: mhdb::Result<mhdb::storage::wal::Replay>, got: Replayed| match r {
        Ok(replay) => format!("{got:?} {replay:?}"),
        Err(e) => format!("error: {e}"),
    };
    let path = Path::new("/d/wal");
    let mut got = Vec::new();
    let in_memory = WalReader::replay_bytes(bytes, path, None, &mut |s, o, p| {
        got.push((s, o, p.to_vec()));
        Ok(())
    });
    let in_memory = show(in_memory, got);
    let fs = SimFs::new();
    let file = fs.open(path, OpenMode::CreateNew).expect("create");
    file.write_all_at(bytes, 0).expect("write");
    let mut got = Vec::new();
    let from_file = WalReader::replay(&fs, path, None, |s, o, p| {
        got.push((s, o, p.to_vec()));
        Ok(())
    });
    (in_memory, show(from_file, got))
}

/// WAL replay: the input is a WAL file. Replay from memory and from a file must agree.
pub fn wal_replay(data: &[u8]) {
    let (in_memory, from_file) = replay_both(data);
    assert_eq!(
        in_memory, from_file,
        "replay from a file differs from memory"
    );
}

/// A WAL record's payload (a write batch): the input is wrapped in one valid record after a
/// valid header and replayed into the golden database by an open.
pub fn wal_batch(data: &[u8]) {
    let wal = golden(WAL);
    let mut log = wal.get(..16).unwrap_or_default().to_vec();
    let start = log.len();
    log.extend_from_slice(&[0; 4]);
    log.extend_from_slice(&(data.len() as u32).to_le_bytes());
    log.push(1);
    log.extend_from_slice(&1u64.to_le_bytes());
    log.extend_from_slice(data);
    let c = crc(&log[start + 4..]);
    log[start..start + 4].copy_from_slice(&c);
    exercise(golden_fs(&[(WAL, log)]));
}

/// A segment: opened, checked, read in every way; one that verifies must find each of its
/// keys and combine into a segment that verifies too.
pub fn segment(data: &[u8]) {
    let Ok(seg) = Segment::open(data.to_vec(), "/fuzz.seg") else {
        return;
    };
    let verified = seg.verify().is_ok();
    let _ = seg.verify_checksums();
    let mut keys = Vec::new();
    for doc in seg.docs().take(1000) {
        match doc {
            Ok((docno, key)) => keys.push((docno, key.to_vec())),
            Err(_) => break,
        }
    }
    for band in 0..seg.num_bands().min(64) {
        let _ = seg.bucket_stats(band);
        let mut n = 0usize;
        let _ = seg.for_each_posting(band, |key32, _| {
            n += 1;
            if n < 50 {
                let _ = seg.postings(band, u64::from(key32) << 32);
                let _ = seg.hot_bucket(band, u64::from(key32) << 32);
            }
            Ok(())
        });
    }
    for hot in seg.hot_buckets().take(100) {
        let _ = hot;
    }
    for (docno, key) in &keys {
        let found = seg.find_key(key);
        let back = seg.key_of(*docno);
        if verified {
            assert!(
                matches!(found, Ok(Some(d)) if d >= *docno),
                "a verified segment does not find its key"
            );
            assert!(
                matches!(back, Ok(Some(k)) if k == key.as_slice()),
                "a verified segment does not give a document's key back"
            );
        }
    }
    let _ = seg.find_key(b"absent");
    let _ = seg.key_of(seg.end_docno());
    if verified {
        let opts = SegmentOptions {
            bucket_cap: seg.bucket_cap(),
            ..SegmentOptions::default()
        };
        let merged =
            combine_segments(&[&seg], |d| d % 3 != 1, &opts).expect("a verified segment combines");
        let out = Segment::open(merged, "/combined.seg").expect("the combined segment opens");
        out.verify().expect("the combined segment verifies");
    }
}

/// The model-based target: the input is a program run on a database in a simulated
/// filesystem. Operations: write batches (inserts, upserts and deletes of a few keys), flush,
/// compaction, a crash (the image of only what was synced, or with unsynced writes torn in
/// any way) followed by a reopen, and a clean reopen. Every write is acknowledged
/// (`Durability::Sync`), so after every crash and reopen, and at the end, the database must
/// hold exactly the model (key → the text it was last set to), and `verify` must pass.
pub fn model(data: &[u8]) {
    use mhdb::db::{Durability, IndexParams, WriteBatch};
    use mhdb::sketch::{ShingleConfig, SketchParams, bbit};
    use mhdb::storage::sim::CrashMode;
    use std::collections::BTreeMap;

    let sketch = SketchParams {
        num_perm: 16,
        shingle: ShingleConfig::words(1),
        ..SketchParams::default()
    };
    let params = IndexParams::for_threshold(sketch, 8, 0.5).expect("parameters");
    let opts = Options {
        durability: Durability::Sync,
        memtable_bytes: 2048,
        merge_factor: 2,
        ..Options::default()
    };
    let text = |key: &str, v: u8| format!("{key} version {v} of some words {}", v % 7);
    let open =
        |fs: &Arc<SimFs>| Db::open_with_vfs(fs.clone(), DIR, opts.clone(), false).expect("reopen");
    let check = |db: &Db, model: &BTreeMap<String, u8>, what: &str| {
        let report = db.verify().expect("verify runs");
        assert!(report.is_ok(), "{what}: verify: {:?}", report.problems);
        let mut keys: Vec<String> = db
            .keys()
            .expect("keys")
            .into_iter()
            .map(|k| String::from_utf8(k).expect("utf-8 key"))
            .collect();
        keys.sort();
        let expected: Vec<&String> = model.keys().collect();
        assert_eq!(keys.iter().collect::<Vec<_>>(), expected, "{what}: keys");
        for (key, v) in model {
            let sig = db.sketch_text(&text(key, *v)).expect("sketch");
            let packed = bbit::pack(sig.slots(), db.params().bits).expect("pack");
            let stored = db.get(key).expect("get").expect("present");
            assert_eq!(
                stored.packed, packed,
                "{what}: {key} has the wrong signature"
            );
        }
    };

    let mut fs = Arc::new(SimFs::new());
    let mut db = Db::create_with_vfs(fs.clone(), DIR, params, opts.clone()).expect("create");
    let mut model: BTreeMap<String, u8> = BTreeMap::new();
    let mut input = data.iter().copied();
    for step in 0..48 {
        let Some(op) = input.next() else { break };
        match op % 8 {
            0..=2 => {
                let mut batch = WriteBatch::new();
                let mut changes = Vec::new();
                for _ in 0..1 + (op >> 3) % 4 {
                    let Some(k) = input.next() else { break };
                    let key = format!("k{}", (k & 0x7f) % 24);
                    if k & 0x80 != 0 {
                        batch.delete(&key);
                        changes.push((key, None));
                    } else {
                        let v = input.next().unwrap_or(0);
                        batch.insert_text(&key, text(&key, v));
                        changes.push((key, Some(v)));
                    }
                }
                db.write(&batch).expect("write");
                for (key, v) in changes {
                    match v {
                        Some(v) => model.insert(key, v),
                        None => model.remove(&key),
                    };
                }
            }
            3 => db.flush().expect("flush"),
            4 => db.compact().expect("compact"),
            5 => {
                let mode = if op & 8 != 0 {
                    CrashMode::TornUnsynced {
                        seed: u64::from(input.next().unwrap_or(0)),
                    }
                } else {
                    CrashMode::DurableOnly
                };
                let image = Arc::new(fs.crash_image(mode));
                drop(db);
                fs = image;
                db = open(&fs);
                check(
                    &db,
                    &model,
                    &format!("step {step}: after a crash ({mode:?})"),
                );
            }
            6 => {
                drop(db);
                db = open(&fs);
                check(&db, &model, &format!("step {step}: after a reopen"));
            }
            _ => {
                let _ = db.query_text("k1 version 3 of some words", &QueryOptions::default());
                let _ = db.stats().expect("stats");
            }
        }
    }
    check(&db, &model, "at the end");
}
