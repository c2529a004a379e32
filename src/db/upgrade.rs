//! `Db::upgrade`: converts a database of format version 1 or 2 to version 3 in place. The old
//! files are read as a snapshot (segments, signature log and WAL tail, every checksum checked)
//! and written as a new version-3 database beside them by the export path (live documents
//! only, compacted, under a new identity); then the two directories trade places by renames
//! and a sync of the parent.
//!
//! Crash safety: until the swap, the old database is untouched and the new one sits in
//! `.<name>.mhdb-upgrade`, which the next attempt removes. The swap is two renames (`dir` →
//! `.<name>.mhdb-v<N>-discarded`, N the old version, or `.<name>.mhdb-v<N>` when the old
//! files are to be kept; then `.<name>.mhdb-upgrade` → `dir`); interrupted between them, `dir`
//! is missing, and the next attempt finishes it. A discarded copy is removed once the swap is
//! durable, and by the next upgrade if a kill came first: set aside under the name it ends
//! with, it is never taken for a copy kept on purpose.
//!
//! Stored shingle sets are copied as they are (the texts they came from are not stored): a
//! keyed index's sets of version 2's derivation stay so, marked SETS_KEYED_V2
//! (`format/hashing.md` §14), unless the upgrade is asked to drop the sets. Dropping them is
//! also what an upgrade of a version-3 database does when asked (the same copy and swap,
//! `N` = 3): that is how an index already upgraded with its leaking sets sheds them.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::Db;
use super::open::lock_writer;
use super::transfer::{parent_dir, remove_dir_best_effort};
use crate::storage::manifest::{MANIFEST_V1, MANIFEST_V2, MANIFEST_VERSION};
use crate::storage::names;
use crate::storage::vfs::{StdFs, Vfs};
use crate::{Error, Result};

/// What [`Db::upgrade`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Upgraded {
    /// The database was already in the current format: nothing changed.
    AlreadyCurrent,
    /// The database was converted; `kept` is where the old files were kept, if asked.
    Converted {
        /// The old version's directory, when kept.
        kept: Option<PathBuf>,
    },
}

/// How [`Db::upgrade_with`] upgrades.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UpgradeOptions {
    /// Keep the old files in `.<name>.mhdb-v<N>` beside the database.
    pub keep_old: bool,
    /// Write the copy without stored shingle sets (exact re-rank off): for a keyed index
    /// whose sets are of version 2's derivation, which leaks its keyed hashes. A database of
    /// the current version that stores sets is rewritten without them.
    pub drop_sets: bool,
}

/// What an upgrade of a database would do and need, from [`Db::upgrade_plan`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct UpgradePlan {
    /// The database's format version now.
    pub from_version: u32,
    /// Its live documents, all of which the upgrade copies. None of them will have format 3's
    /// per-document columns (exact hash, keep value, set size): those are computed from a
    /// document's text, which an index does not store, so only adding the text again fills them.
    pub documents: u64,
    /// Free bytes the upgrade needs: the new copy is written beside the old files before the
    /// two trade places, and holds at most what they hold, so about the database's size (the
    /// disk holds about twice the database meanwhile).
    pub bytes_needed: u64,
    /// Free bytes on the database's filesystem, where the system says.
    pub bytes_available: Option<u64>,
}

/// The suffix of the copy of the version-`version` files, kept or being set aside.
fn old_suffix(version: u32) -> String {
    format!(".mhdb-v{version}")
}

/// The suffix of the old copy being removed after a swap.
fn discarded_suffix(version: u32) -> String {
    format!(".mhdb-v{version}-discarded")
}

/// `dir`'s sibling named `.<name><suffix>` (same filesystem, so renames are atomic).
fn sibling(dir: &Path, suffix: &str) -> Result<PathBuf> {
    let name = dir.file_name().ok_or_else(|| {
        Error::invalid(
            "path",
            format!("{} does not name a directory", dir.display()),
        )
    })?;
    let mut hidden = OsString::from(".");
    hidden.push(name);
    hidden.push(suffix);
    Ok(dir.with_file_name(hidden))
}

impl Db {
    /// Converts the database in `dir` to the current format version (see the module docs);
    /// keeps the old files in `.<name>.mhdb-v<N>` beside it when `keep_old`. A database
    /// already current is left alone. No writer may hold it (a running older `mhdb` would be
    /// refused its lock, and so is this while one runs). The new database's identity is
    /// drawn as [`Db::create`] draws one.
    pub fn upgrade(dir: impl AsRef<Path>, keep_old: bool) -> Result<Upgraded> {
        Self::upgrade_with(
            dir,
            UpgradeOptions {
                keep_old,
                ..UpgradeOptions::default()
            },
        )
    }

    /// [`Db::upgrade`] with options: also to drop the stored sets ([`UpgradeOptions`]).
    pub fn upgrade_with(dir: impl AsRef<Path>, opts: UpgradeOptions) -> Result<Upgraded> {
        Self::upgrade_on(Arc::new(StdFs), dir.as_ref(), opts)
    }

    /// [`Db::upgrade`] on any [`Vfs`].
    pub fn upgrade_with_vfs(vfs: Arc<dyn Vfs>, dir: &Path, keep_old: bool) -> Result<Upgraded> {
        let opts = UpgradeOptions {
            keep_old,
            ..UpgradeOptions::default()
        };
        Self::upgrade_on(vfs, dir, opts)
    }

    /// What [`Db::upgrade_with`] would do to the database in `dir` and the space it needs;
    /// `None` when there is nothing to convert (already current, and no sets to drop).
    pub fn upgrade_plan(
        dir: impl AsRef<Path>,
        opts: UpgradeOptions,
    ) -> Result<Option<UpgradePlan>> {
        let vfs: Arc<dyn Vfs> = Arc::new(StdFs);
        plan_on(vfs.as_ref(), vfs.clone(), dir.as_ref(), opts.drop_sets)
    }

    /// [`Db::upgrade_with`] on any [`Vfs`].
    pub fn upgrade_on(vfs: Arc<dyn Vfs>, dir: &Path, opts: UpgradeOptions) -> Result<Upgraded> {
        let UpgradeOptions {
            keep_old,
            drop_sets,
        } = opts;
        let fs = vfs.as_ref();
        let new = sibling(dir, ".mhdb-upgrade")?;
        let has_db = |d: &Path| fs.exists(&d.join(names::CURRENT)).unwrap_or(false);
        let exists = |d: &Path| fs.exists(d).map_err(Error::io_on(d, "stat"));
        for version in [MANIFEST_V1, MANIFEST_V2, MANIFEST_VERSION] {
            // The old files set aside under the name of a kept copy or of one to remove.
            for suffix in [old_suffix(version), discarded_suffix(version)] {
                let aside = sibling(dir, &suffix)?;
                if !exists(dir)? && exists(&aside)? {
                    // Interrupted between the two renames of the swap, or an upgrade
                    // running now and between them: its lock, still on the set-aside
                    // directory, tells.
                    let _locks = lock_writer(fs, &aside)?;
                    if has_db(&new) {
                        return finish_swap(fs, dir, &new, (&aside, version), keep_old);
                    }
                    fs.rename(&aside, dir)
                        .map_err(Error::io_on(dir, "rename back"))?;
                }
            }
            // What an upgrade stopped before or while removing its old copy left.
            let discarded = sibling(dir, &discarded_suffix(version))?;
            if exists(dir)? && exists(&discarded)? {
                remove_dir_best_effort(fs, &discarded);
            }
        }
        let Some(plan) = plan_on(fs, vfs.clone(), dir, drop_sets)? else {
            return Ok(Upgraded::AlreadyCurrent);
        };
        check_space(dir, &plan)?;
        let version = plan.from_version;
        let old = sibling(dir, &old_suffix(version))?;
        if exists(&old)? {
            return Err(Error::invalid(
                "path",
                format!(
                    "{} exists (a kept version-{version} copy?): move it away first",
                    old.display()
                ),
            ));
        }
        // Held until the swap is done: no older writer may change the source meanwhile, and
        // another upgrade of it must not take this one's copy for a leftover. The lock stays
        // with the directory when it is renamed aside.
        let _locks = lock_writer(fs, dir)?;
        // An earlier attempt that did not reach the swap: its copy, or the export's building
        // directory for it.
        let building = sibling(&new, ".mhdb-export")?;
        for leftover in [&new, &building] {
            if exists(leftover)? {
                remove_dir_best_effort(fs, leftover);
            }
        }
        let src = Db::open_with_vfs(vfs.clone(), dir, super::Options::default(), true)?;
        src.export_whole(&new, false, drop_sets)?;
        drop(src);
        // Set aside under the name it ends with: a kill after the swap then leaves a copy to
        // remove under a name the next upgrade removes, never one it takes for a kept copy.
        let aside = if keep_old {
            old
        } else {
            sibling(dir, &discarded_suffix(version))?
        };
        fs.rename(dir, &aside)
            .map_err(Error::io_on(dir, "rename the old database aside"))?;
        finish_swap(fs, dir, &new, (&aside, version), keep_old)
    }
}

/// [`Db::upgrade_plan`] on `fs` (`vfs` is the same filesystem, to open the database with).
fn plan_on(
    fs: &dyn Vfs,
    vfs: Arc<dyn Vfs>,
    dir: &Path,
    drop_sets: bool,
) -> Result<Option<UpgradePlan>> {
    let probe = Db::open_with_vfs(vfs, dir, super::Options::default(), true)?;
    let from_version = probe.state.read().version.manifest.format_version;
    if from_version == MANIFEST_VERSION && !(drop_sets && probe.params.store_sets) {
        return Ok(None);
    }
    // Not `stats()`: it scans every band, and the plan is made before every upgrade.
    let documents = probe.len();
    drop(probe);
    let mut bytes_needed = 0u64;
    for name in fs
        .list_dir(dir)
        .map_err(Error::io_on(dir, "list directory"))?
    {
        let path = dir.join(&name);
        let file = fs.open(&path, crate::storage::vfs::OpenMode::Read);
        // Subdirectories and files that vanish meanwhile hold nothing the copy takes.
        if let Ok(len) = file.and_then(|f| f.len()) {
            bytes_needed = bytes_needed.saturating_add(len);
        }
    }
    let parent = parent_dir(dir);
    let bytes_available = fs
        .available_space(&parent)
        .map_err(Error::io_on(&parent, "statvfs"))?;
    Ok(Some(UpgradePlan {
        from_version,
        documents,
        bytes_needed,
        bytes_available,
    }))
}

/// Refuses an upgrade the filesystem has no room for, before anything is written (a copy cut
/// short by a full disk would be removed again, but only after filling the disk).
fn check_space(dir: &Path, plan: &UpgradePlan) -> Result<()> {
    match plan.bytes_available {
        Some(free) if free < plan.bytes_needed => {
            Err(Error::io_on(dir, "upgrade")(std::io::Error::new(
                std::io::ErrorKind::StorageFull,
                format!(
                    "the upgrade writes a copy of the database beside it and needs about {} \
                     bytes free; the filesystem has {free}: nothing was written",
                    plan.bytes_needed
                ),
            )))
        }
        _ => Ok(()),
    }
}

/// The second rename of the swap, made durable, then the old copy (`aside`, of format
/// version `version`) kept under its kept name or removed.
fn finish_swap(
    fs: &dyn Vfs,
    dir: &Path,
    new: &Path,
    (aside, version): (&Path, u32),
    keep_old: bool,
) -> Result<Upgraded> {
    fs.rename(new, dir)
        .map_err(Error::io_on(dir, "rename the upgraded database into place"))?;
    let parent = parent_dir(dir);
    fs.sync_dir(&parent)
        .map_err(Error::io_on(&parent, "fsync directory"))?;
    let name = |suffix: String| sibling(dir, &suffix);
    let target = if keep_old {
        name(old_suffix(version))?
    } else {
        name(discarded_suffix(version))?
    };
    if aside != target {
        fs.rename(aside, &target)
            .map_err(Error::io_on(aside, "rename the old copy"))?;
    }
    if keep_old {
        return Ok(Upgraded::Converted { kept: Some(target) });
    }
    remove_dir_best_effort(fs, &target);
    Ok(Upgraded::Converted { kept: None })
}
