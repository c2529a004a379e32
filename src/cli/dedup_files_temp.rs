//! The temporary index of `mhdb dedup-files`: a directory `mhdb-dedup-files-XXXXXX` in the
//! temporary directory, locked by its owner for the whole run (an flock'd `LOCK` file at its
//! top, which the kernel releases when the owner dies), and removed at the end. A process
//! killed by SIGKILL cannot remove it, so each run first removes the ones whose owner is gone:
//! the owner's lock is free, and so is the lock of the database in it.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

use tempfile::TempDir;

/// The prefix of the temporary directories (tempfile adds a random suffix).
const PREFIX: &str = "mhdb-dedup-files-";
/// The random suffix's length, as tempfile makes it by default.
const SUFFIX_LEN: usize = 6;
/// The owner's lock file, at the top of the directory.
const OWNER_LOCK: &str = "LOCK";
/// The index, in the directory.
pub(super) const INDEX: &str = "index";

/// A temporary directory for the index, locked until dropped, then removed.
pub(super) struct TempIndex {
    // Dropped in this order: the lock is released only once the directory is gone.
    dir: TempDir,
    _lock: File,
}

impl TempIndex {
    /// Removes the stale temporary indexes of `parent` (the temporary directory), then makes
    /// and locks a new one there.
    pub(super) fn create_in(parent: &Path) -> io::Result<TempIndex> {
        remove_stale(parent);
        let dir = tempfile::Builder::new()
            .prefix(PREFIX)
            .rand_bytes(SUFFIX_LEN)
            .tempdir_in(parent)?;
        let lock = File::create(dir.path().join(OWNER_LOCK))?;
        lock.lock()?;
        Ok(TempIndex { dir, _lock: lock })
    }

    /// Where the index goes.
    pub(super) fn index(&self) -> PathBuf {
        self.dir.path().join(INDEX)
    }
}

/// Whether `name` is one of our temporary directories' names: the prefix and tempfile's
/// random suffix of ASCII letters and digits, nothing else.
fn is_ours(name: &str) -> bool {
    name.strip_prefix(PREFIX).is_some_and(|suffix| {
        suffix.len() == SUFFIX_LEN && suffix.bytes().all(|b| b.is_ascii_alphanumeric())
    })
}

/// Removes every directory of `parent` named as ours whose owner lock is free and whose index
/// (if any) no process holds open for writing. A directory without the owner lock file is
/// left alone: its owner may be creating it this instant. Failures are ignored: this is
/// cleaning up after others, and must never stop the run.
fn remove_stale(parent: &Path) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
        if !is_dir || !name.to_str().is_some_and(is_ours) {
            continue;
        }
        let path = entry.path();
        // Held while the directory is removed, so no owner can appear meanwhile.
        let Some(_locks) = free_locks(&path) else {
            continue;
        };
        _ = std::fs::remove_dir_all(&path);
    }
}

/// The owner lock of `dir` and the writer locks of its index (the index directory and its
/// `LOCK` file, as a database takes them), all taken; `None` when one is held or the owner
/// lock file is missing.
fn free_locks(dir: &Path) -> Option<Vec<File>> {
    let mut locks = vec![File::open(dir.join(OWNER_LOCK)).ok()?];
    let index = dir.join(INDEX);
    if index.is_dir() {
        locks.push(File::open(&index).ok()?);
        if let Ok(f) = File::open(index.join("LOCK")) {
            locks.push(f);
        }
    }
    for lock in &locks {
        lock.try_lock().ok()?;
    }
    Some(locks)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_our_exact_names_are_ours() {
        assert!(is_ours("mhdb-dedup-files-a1B2c3"));
        for other in [
            "mhdb-dedup-files-",
            "mhdb-dedup-files-a1B2c",
            "mhdb-dedup-files-a1B2c3d",
            "mhdb-dedup-files-a1.2c3",
            "xmhdb-dedup-files-a1B2c3",
            "mhdb-dedup-file-a1B2c3",
        ] {
            assert!(!is_ours(other), "{other}");
        }
    }

    /// A stale directory (owner lock and index free) is removed; one whose owner holds its
    /// lock, one whose index a database holds open, one without the owner lock and one not
    /// named as ours are left alone.
    #[test]
    fn only_directories_whose_owner_is_gone_are_removed() {
        let tmp = tempfile::tempdir().unwrap();
        let parent = tmp.path();
        let make = |name: &str, owner_lock: bool| {
            let dir = parent.join(name);
            let index = dir.join(INDEX);
            let params = mhdb::db::IndexParams::default();
            drop(mhdb::db::Db::create(&index, params, Default::default()).unwrap());
            if owner_lock {
                File::create(dir.join(OWNER_LOCK)).unwrap();
            }
            dir
        };
        let stale = make("mhdb-dedup-files-stale1", true);
        let owned = make("mhdb-dedup-files-owned1", true);
        let owner = File::open(owned.join(OWNER_LOCK)).unwrap();
        owner.lock().unwrap();
        let open = make("mhdb-dedup-files-open01", true);
        let db = mhdb::db::Db::open(open.join(INDEX), Default::default()).unwrap();
        let unlocked = make("mhdb-dedup-files-nolock", false);
        let foreign = make("mhdb-dedup-files-foreign", true);
        let new = TempIndex::create_in(parent).unwrap();
        assert!(!stale.exists());
        for kept in [&owned, &open, &unlocked, &foreign] {
            assert!(kept.join(INDEX).is_dir(), "{}", kept.display());
        }
        // The new directory is locked by its owner: another run leaves it alone.
        remove_stale(parent);
        assert!(new.dir.path().join(OWNER_LOCK).exists());
        drop((db, owner));
        remove_stale(parent);
        assert!(!owned.exists() && !open.exists());
        assert!(new.index().parent().is_some_and(Path::exists));
    }
}
