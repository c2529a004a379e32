//! A reader looks at the newest WAL file while a writer in another process appends to it
//! and seals it: what it finds after the replay must not turn into an error or a report.

use std::io;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::db::replay::{torn_tail_to_keep, wal_files};
use crate::storage::vfs::{LockMode, Mapped, OpenMode, StdFs, Vfs, VfsFile, VfsLock};
use crate::storage::wal::{WalReader, WalWriter};

/// The real filesystem, where the first read of any file first cuts it to `cut_to`: what
/// a writer's seal does between a reader's stat and its read.
#[derive(Debug)]
struct CutBeforeFirstRead {
    cut_to: u64,
    done: Arc<AtomicBool>,
}

#[derive(Debug)]
struct CutFile {
    file: Arc<dyn VfsFile>,
    cut_to: u64,
    done: Arc<AtomicBool>,
}

impl VfsFile for CutFile {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        if !self.done.swap(true, Ordering::SeqCst) {
            self.file.set_len(self.cut_to)?;
        }
        self.file.read_exact_at(buf, offset)
    }
    fn write_all_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        self.file.write_all_at(buf, offset)
    }
    fn len(&self) -> io::Result<u64> {
        self.file.len()
    }
    fn set_len(&self, len: u64) -> io::Result<()> {
        self.file.set_len(len)
    }
    fn sync_data(&self) -> io::Result<()> {
        self.file.sync_data()
    }
}

impl Vfs for CutBeforeFirstRead {
    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        StdFs.create_dir_all(path)
    }
    fn open(&self, path: &Path, _mode: OpenMode) -> io::Result<Arc<dyn VfsFile>> {
        // Opened for writing underneath, so that the cut can happen through this handle.
        Ok(Arc::new(CutFile {
            file: StdFs.open(path, OpenMode::ReadWrite)?,
            cut_to: self.cut_to,
            done: self.done.clone(),
        }))
    }
    fn list_dir(&self, dir: &Path) -> io::Result<Vec<String>> {
        StdFs.list_dir(dir)
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        StdFs.rename(from, to)
    }
    fn remove_file(&self, path: &Path) -> io::Result<()> {
        StdFs.remove_file(path)
    }
    fn remove_dir(&self, path: &Path) -> io::Result<()> {
        StdFs.remove_dir(path)
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        StdFs.sync_dir(dir)
    }
    fn exists(&self, path: &Path) -> io::Result<bool> {
        StdFs.exists(path)
    }
    fn lock(&self, path: &Path, mode: LockMode) -> io::Result<Box<dyn VfsLock>> {
        StdFs.lock(path, mode)
    }
    fn map_readonly(&self, path: &Path) -> io::Result<Mapped> {
        StdFs.map_readonly(path)
    }
}

/// A live writer's WAL: two records, then the zeros it wrote ahead of them. Returns the
/// path, the end of the first record and the end of the second.
fn live_wal(dir: &Path) -> (std::path::PathBuf, u64, u64) {
    let path = dir.join("wal.log");
    let writer = WalWriter::create(&StdFs, &path, 1, None).unwrap();
    writer
        .append_all_and_sync([&b"first"[..]].into_iter())
        .unwrap();
    let first_end = writer.len();
    writer
        .append_all_and_sync([&b"second"[..]].into_iter())
        .unwrap();
    let second_end = writer.len();
    assert!(
        std::fs::metadata(&path).unwrap().len() > second_end,
        "zeros ahead"
    );
    (path, first_end, second_end)
}

#[test]
fn a_wal_cut_by_its_writer_while_a_reader_reads_its_tail_ends_where_it_now_ends() {
    let tmp = tempfile::tempdir().unwrap();
    let (path, _, end) = live_wal(tmp.path());
    let vfs = CutBeforeFirstRead {
        cut_to: end,
        done: Arc::new(AtomicBool::new(false)),
    };
    assert_eq!(torn_tail_to_keep(&vfs, &path, end, None).unwrap(), None);
    assert_eq!(
        std::fs::metadata(&path).unwrap().len(),
        end,
        "the cut happened"
    );
}

#[test]
fn a_record_finished_after_the_replay_is_no_torn_tail() {
    let tmp = tempfile::tempdir().unwrap();
    let (path, first_end, _) = live_wal(tmp.path());
    // The replay stopped after the first record (the second was unfinished then); by the
    // time the tail is read the second record is whole.
    assert_eq!(
        torn_tail_to_keep(&StdFs, &path, first_end, None).unwrap(),
        None
    );
    // Damage to that record is still kept and reported.
    let mut bytes = std::fs::read(&path).unwrap();
    let at = usize::try_from(first_end).unwrap() + 20;
    bytes[at] ^= 1;
    std::fs::write(&path, &bytes).unwrap();
    let kept = torn_tail_to_keep(&StdFs, &path, first_end, None).unwrap();
    assert!(kept.is_some_and(|k| !k.is_empty()));
}

/// A version-2 database whose writes went to two WAL files (one per writer's open, each
/// sealed when its handle closed): the older holds record 1, the newer record 2. Returns the
/// directory's path and the two files, oldest first.
fn two_wal_files(tmp: &Path) -> (std::path::PathBuf, Vec<std::path::PathBuf>) {
    use crate::db::{Db, IndexParams, Options};
    let dir = tmp.join("db");
    let db = Db::create(&dir, IndexParams::default(), Options::default()).unwrap();
    db.insert_text("a", "the first document").unwrap();
    drop(db);
    let db = Db::open(&dir, Options::default()).unwrap();
    db.insert_text("b", "the second document").unwrap();
    drop(db);
    let listing = StdFs.list_dir(&dir).unwrap();
    let wals = wal_files(&dir, &listing, 0);
    assert_eq!(wals.len(), 2, "{listing:?}");
    (dir, wals.into_iter().map(|(_, path)| path).collect())
}

fn open_error(dir: &Path) -> String {
    crate::db::Db::open_read_only(dir).unwrap_err().to_string()
}

/// Versions 2 and 3 number records across WAL files: a missing older file is a gap, found at the
/// newer file's first record.
#[test]
fn a_missing_older_wal_file_is_a_gap_in_the_numbering() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, wals) = two_wal_files(tmp.path());
    assert!(crate::db::Db::open_read_only(&dir).is_ok());
    std::fs::remove_file(&wals[0]).unwrap();
    let e = open_error(&dir);
    assert!(
        e.contains("starts at record 2, but record 1 comes next"),
        "{e}"
    );
}

/// Versions 2 and 3: every WAL file but the newest ends with its seal.
#[test]
fn an_older_wal_file_without_its_seal_lost_its_end() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, wals) = two_wal_files(tmp.path());
    // The identity the files carry (version 3: `db_id` at 16, `file_id` at 32).
    let header = std::fs::read(&wals[0]).unwrap();
    let identity = Some(crate::storage::identity::FileIdentity {
        db_id: crate::storage::identity::DbId(header[16..32].try_into().unwrap()),
        file_id: u64::from_le_bytes(header[32..40].try_into().unwrap()),
    });
    let replayed =
        |path: &Path| WalReader::replay(&StdFs, path, identity, |_, _, _| Ok(())).unwrap();
    assert!(replayed(&wals[0]).sealed);
    // A seal is a record header and the file's 8-byte record count.
    let seal_len = crate::storage::wal::RECORD_HEADER_LEN as u64 + 8;
    let len = std::fs::metadata(&wals[0]).unwrap().len();
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(&wals[0])
        .unwrap();
    file.set_len(len - seal_len).unwrap();
    let cut = replayed(&wals[0]);
    assert!(!cut.sealed && cut.records == 1 && cut.torn_tail_bytes == 0);
    let e = open_error(&dir);
    assert!(e.contains("not the newest ends without its seal"), "{e}");
}
