//! Parquet files, read row group by row group, only the id and text columns, [`BATCH_ROWS`]
//! rows at a time: the memory a file takes is bounded by a batch of its two columns, whatever
//! the size of the file or of its row groups.

use std::fs::File;
use std::path::Path;

use parquet::arrow::ProjectionMask;
use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReader,
    ParquetRecordBatchReaderBuilder,
};

use super::columns::Columns;
use super::progress::share;
use super::reader::{RowBatch, Rows};
use super::{BATCH_ROWS, Error, Fields};
use crate::storage::segment::KeepType;

/// The rows of one Parquet file.
pub struct ParquetRows {
    name: String,
    file: File,
    metadata: ArrowReaderMetadata,
    columns: Columns,
    mask: ProjectionMask,
    /// The row group being read, its first row in the file, and its reader.
    current: Option<(usize, u64, ParquetRecordBatchReader)>,
    /// The next row group to open.
    next_group: usize,
    /// The next row's number in the file.
    row: u64,
}

impl ParquetRows {
    /// Opens the file and reads its footer; finds and checks the columns.
    pub fn open(path: &Path, name: &str, fields: &Fields) -> Result<Self, Error> {
        let file = File::open(path).map_err(|e| Error::new(format!("cannot open {name}: {e}")))?;
        let metadata =
            ArrowReaderMetadata::load(&file, ArrowReaderOptions::new()).map_err(|e| {
                Error::new(format!(
                    "{name}: not a readable Parquet file (its footer): {e}"
                ))
            })?;
        let columns = Columns::find(metadata.schema(), fields, name)?;
        let schema = metadata.parquet_schema();
        let leaves = schema.columns().iter().enumerate().filter_map(|(i, leaf)| {
            let parts = leaf.path().parts();
            columns
                .paths()
                .any(|p| parts.len() >= p.parts.len() && parts[..p.parts.len()] == p.parts[..])
                .then_some(i)
        });
        let mask = ProjectionMask::leaves(schema, leaves);
        Ok(ParquetRows {
            name: name.to_string(),
            file,
            metadata,
            columns,
            mask,
            current: None,
            next_group: 0,
            row: 0,
        })
    }

    /// Opens the next row group; `false` after the last.
    fn open_group(&mut self) -> Result<bool, Error> {
        let group = self.next_group;
        if group >= self.metadata.metadata().num_row_groups() {
            return Ok(false);
        }
        self.next_group += 1;
        let file = self
            .file
            .try_clone()
            .map_err(|e| Error::new(format!("cannot open {}: {e}", self.name)))?;
        let reader =
            ParquetRecordBatchReaderBuilder::new_with_metadata(file, self.metadata.clone())
                .with_projection(self.mask.clone())
                .with_row_groups(vec![group])
                .with_batch_size(BATCH_ROWS)
                .build()
                .map_err(|e| self.bad_group(group, self.row, self.row, e))?;
        self.current = Some((group, self.row, reader));
        Ok(true)
    }

    /// Row group `group`, whose first row is `first`, fails at row `at`.
    fn bad_group(&self, group: usize, first: u64, at: u64, e: impl std::fmt::Display) -> Error {
        let end = first + self.metadata.metadata().row_group(group).num_rows().max(0) as u64;
        Error::new(format!(
            "{}: row group {group} (rows {first}..{end}) cannot be read from row {at}: {e}",
            self.name,
        ))
    }
}

impl Rows for ParquetRows {
    fn keep_type(&self) -> Option<KeepType> {
        self.columns.keep_type()
    }

    /// The share of the file's bytes its rows read so far are of all its rows (the footer,
    /// read first, says how many).
    fn bytes_read(&mut self, size: u64) -> Option<u64> {
        let rows = self.metadata.metadata().file_metadata().num_rows();
        Some(share(size, self.row, u64::try_from(rows).unwrap_or(0)))
    }

    fn next_batch(&mut self) -> Result<Option<RowBatch>, Error> {
        loop {
            let Some((group, first, reader)) = &mut self.current else {
                if !self.open_group()? {
                    return Ok(None);
                }
                continue;
            };
            let (group, first) = (*group, *first);
            match reader.next() {
                None => self.current = None,
                Some(Err(e)) => return Err(self.bad_group(group, first, self.row, e)),
                Some(Ok(batch)) => {
                    let mut values = Vec::with_capacity(batch.num_rows());
                    self.columns.rows(&batch, &mut values, &self.name)?;
                    let first = self.row;
                    self.row += values.len() as u64;
                    return Ok(Some(RowBatch::numbered(values, first, Some(group))));
                }
            }
        }
    }
}
