//! The optional per-document columns of a database (EXACT_HASH, SET_SIZE): which ones an
//! index has (its manifest features), and the values of its live documents, read from the
//! segments' column sections and the in-memory tables. `stats` counts them; the keep
//! policies of `dedup` rank by them.

use super::Db;
use super::state::State;
use crate::Result;
use crate::storage::manifest::Features;
use crate::storage::segment::{ColumnSet, DocColumns, KeepColumn, KeepType};

/// The columns an index with `features` (and `keep`, its KEEP column if any) has.
pub(super) fn column_set(features: Features, keep: Option<&KeepColumn>) -> ColumnSet {
    ColumnSet {
        exact: features.contains(Features::EXACT_HASH),
        keep: keep.map(|k| k.keep_type),
        set_size: features.contains(Features::SET_SIZE),
    }
}

/// `features` with exactly the column bits of `columns`.
pub(super) fn with_columns(features: Features, columns: ColumnSet) -> Features {
    features
        .with(Features::EXACT_HASH, columns.exact)
        .with(Features::SET_SIZE, columns.set_size)
        .with(Features::KEEP, columns.keep.is_some())
}

/// Calls `f(docno, values)` for every live document of `state`, in docno order per segment
/// and then the in-memory tables. Segment rows are read checked against their block
/// checksums, so damage is an error, not a wrong answer.
pub(super) fn for_each_live_columns(
    state: &State,
    mut f: impl FnMut(u64, DocColumns),
) -> Result<()> {
    for seg in &state.version.segments {
        for (row, doc) in seg.seg.docs().enumerate() {
            let (docno, _) = doc?;
            if !state.is_deleted(docno) {
                f(docno, seg.seg.columns_at(row as u64)?);
            }
        }
    }
    for table in state.imm.iter().map(|t| t.as_ref()).chain([&state.mem]) {
        for (docno, doc) in table.live_docs() {
            if !state.is_deleted(docno) {
                f(docno, doc.columns);
            }
        }
    }
    Ok(())
}

/// An index's keep column `have` and the one an add asks for must agree.
fn check_same_keep_column(have: &KeepColumn, want: &KeepColumn) -> Result<()> {
    if have.field != want.field {
        return Err(crate::Error::invalid(
            "keep field",
            format!(
                "this index keeps the field {:?}, not {:?} (the first add --keep-field fixed it)",
                have.field, want.field
            ),
        ));
    }
    let converts = have.keep_type == KeepType::F64 && want.keep_type == KeepType::I64;
    if have.keep_type != want.keep_type && !converts {
        return Err(crate::Error::invalid(
            "keep field",
            format!(
                "the field {:?} holds {} values in this index, not {}",
                have.field,
                have.keep_type.name(),
                want.keep_type.name()
            ),
        ));
    }
    Ok(())
}

/// A keep field's name is 1 to 255 bytes (the manifest stores its length in a byte).
fn check_keep_field_name(field: &str) -> Result<()> {
    match field.len() {
        1..=255 => Ok(()),
        n => Err(crate::Error::invalid(
            "keep field",
            format!("a field name of {n} bytes (1 to 255)"),
        )),
    }
}

/// How many live documents have a value in one column and how many lack one (inserted by
/// signature, or carried over by an upgrade).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ColumnCounts {
    /// Live documents with a value.
    pub with: u64,
    /// Live documents without one.
    pub without: u64,
}

impl ColumnCounts {
    fn count(&mut self, present: bool) {
        match present {
            true => self.with += 1,
            false => self.without += 1,
        }
    }
}

impl Db {
    /// The per-document columns this index has (manifest features).
    pub fn columns(&self) -> ColumnSet {
        self.columns
    }

    /// Per column (EXACT_HASH, KEEP, SET_SIZE), how many live documents have a value and how
    /// many do not: `None` for a column the index lacks. Reads every live document's rows
    /// once.
    pub(super) fn column_counts(&self) -> Result<[Option<ColumnCounts>; 3]> {
        if !self.columns.any() {
            return Ok([None; 3]);
        }
        let state = self.state.read().snapshot();
        let mut counts = [ColumnCounts::default(); 3];
        for_each_live_columns(&state, |_, v| {
            counts[0].count(v.exact.is_some());
            counts[1].count(v.keep.is_some());
            counts[2].count(v.set_size.is_some());
        })?;
        let [exact, keep, set_size] = counts;
        Ok([
            Some(exact).filter(|_| self.columns.exact),
            Some(keep).filter(|_| self.columns.keep.is_some()),
            Some(set_size).filter(|_| self.columns.set_size),
        ])
    }

    /// The index's KEEP column (its type and field), if it has one.
    pub fn keep_column(&self) -> Option<KeepColumn> {
        self.state.read().version.manifest.keep.clone()
    }

    /// Fixes the index's KEEP column as `column` if it has none, or checks that it has that
    /// one: the field must be the same, and so must the type, except that integer values go
    /// into an f64 column ([`KeepValue::into_type`](crate::storage::segment::KeepValue)).
    /// Every segment must have the column, so it is fixed only while the index has none.
    pub fn fix_keep_column(&mut self, column: &KeepColumn) -> Result<()> {
        self.check_writable()?;
        let _maint = self.maintenance.lock();
        if let Some(have) = self.keep_column() {
            return check_same_keep_column(&have, column);
        }
        check_keep_field_name(&column.field)?;
        let old = self.state.read().version.clone();
        if !old.segments.is_empty() || self.state.read().imm.is_some() {
            return Err(crate::Error::invalid(
                "keep field",
                format!(
                    "{} has documents in segments without a keep value: the keep field is \
                     fixed by the first add --keep-field, before the index is flushed",
                    self.dir.display()
                ),
            ));
        }
        let mut manifest = old.manifest.clone();
        manifest.generation += 1;
        manifest.keep = Some(column.clone());
        manifest.features = with_columns(manifest.features, self.columns);
        manifest.features = manifest.features.with(Features::KEEP, true);
        let version = old.successor(self.vfs.as_ref(), &self.dir, manifest, None)?;
        super::commit::write_manifest(self.vfs.as_ref(), &self.dir, &version.manifest)?;
        self.state.write().version = std::sync::Arc::new(version);
        self.columns.keep = Some(column.keep_type);
        self.remove_obsolete_files();
        Ok(())
    }

    /// The column values of the live document `key`: all absent when the key is absent.
    pub fn columns_of(&self, key: impl AsRef<[u8]>) -> Result<DocColumns> {
        match self.docno_of(key)? {
            Some(docno) => self.columns_of_docno(docno),
            None => Ok(DocColumns::default()),
        }
    }

    /// The column values of document `docno` (as [`Db::docno_of`] gives it): all absent when
    /// no table or segment holds it.
    pub fn columns_of_docno(&self, docno: u64) -> Result<DocColumns> {
        let state = self.state.read();
        for table in state.imm.iter().map(|t| t.as_ref()).chain([&state.mem]) {
            if let Some(doc) = table.doc(docno) {
                return Ok(doc.columns);
            }
        }
        match state.version.segment_of(docno) {
            Some(seg) => seg.seg.columns_of(docno),
            None => Ok(DocColumns::default()),
        }
    }

    /// The set size of the live document `key`: `None` when the key is absent, the document
    /// has none, or the index has no SET_SIZE column.
    pub fn set_size_of(&self, key: impl AsRef<[u8]>) -> Result<Option<u32>> {
        Ok(self.columns_of(key)?.set_size)
    }

    /// Whether this index has the SET_SIZE column (manifest feature): documents inserted as
    /// text or tokens carry the number of their distinct shingle hashes.
    pub fn has_set_sizes(&self) -> bool {
        self.columns.set_size
    }
}
