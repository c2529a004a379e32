//! Parquet out: the same Arrow schema, key-value metadata and compression codec; the kept
//! rows in order, read and written row group by row group, a batch at a time (each input row
//! group ends an output row group), so memory is bounded by a row group's encoded pages and
//! a batch, whatever the size of the file.

use std::fs::File;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use parquet::arrow::ArrowWriter;
use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReaderBuilder,
};
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;

use super::annotation::{ArrowNotes, field_type};
use super::atomic::Target;
use super::judge::{Judge, Outcome};
use super::{ApplyError, Event, FileJob, io_error};
use crate::input::{BATCH_ROWS, Columns, Origin, Position};

/// Key-value metadata the Arrow writer writes itself.
const ARROW_SCHEMA_KEY: &str = "ARROW:schema";

/// Reads the Parquet file of `job` and writes its kept (or annotated) rows to `target`.
pub fn apply(
    mut job: FileJob<'_>,
    mut target: Target,
    judge: &mut Judge<'_>,
) -> Result<(), ApplyError> {
    let name = job.file.name.clone();
    let corrupt = |e: &dyn std::fmt::Display| ApplyError::Corrupt(format!("{name}: {e}"));
    let input = File::open(&job.file.path).map_err(|e| io_error(&name, "open it", e))?;
    let metadata = ArrowReaderMetadata::load(&input, ArrowReaderOptions::new())
        .map_err(|e| corrupt(&format!("not a readable Parquet file (its footer): {e}")))?;
    let columns = Columns::find(metadata.schema(), &job.opts.fields, &name)
        .map_err(|e| ApplyError::Usage(e.to_string()))?;
    let notes = job.opts.annotate.as_ref().map(|a| {
        let id_type = job
            .opts
            .fields
            .id
            .field()
            .and_then(|f| field_type(metadata.schema(), f));
        (a, ArrowNotes::new(a, id_type))
    });
    if let Some((annotate, _)) = &notes {
        annotate.check(&name, |c| metadata.schema().field_with_name(c).is_ok())?;
    }
    let schema = match &notes {
        Some((_, n)) => n.schema(metadata.schema()),
        None => metadata.schema().clone(),
    };
    let file = target.take_file()?;
    let out_name = target.name();
    let write_err = |e: parquet::errors::ParquetError| {
        ApplyError::Other(format!("{out_name}: cannot write it: {e}"))
    };
    let props = properties(metadata.metadata());
    let mut writer = ArrowWriter::try_new(file, schema.clone(), Some(props)).map_err(write_err)?;
    let mut row = 0u64;
    for group in 0..metadata.metadata().num_row_groups() {
        let reader = ParquetRecordBatchReaderBuilder::new_with_metadata(
            input
                .try_clone()
                .map_err(|e| io_error(&name, "open it", e))?,
            metadata.clone(),
        )
        .with_row_groups(vec![group])
        .with_batch_size(BATCH_ROWS)
        .build()
        .map_err(|e| corrupt(&format!("row group {group} cannot be read: {e}")))?;
        for batch in reader {
            let batch = batch.map_err(|e| {
                corrupt(&format!(
                    "row group {group} cannot be read from row {row}: {e}"
                ))
            })?;
            let at = |row| Position::Row {
                row_group: Some(group),
                row,
            };
            let decided = decide(&mut job, &columns, &batch, row, &at, judge)?;
            row += batch.num_rows() as u64;
            let notes = notes.as_ref().map(|(_, n)| n);
            for b in output_batches(decided, &batch, notes, &schema)? {
                writer.write(&b).map_err(write_err)?;
            }
            (job.events)(Event::Rows(row));
        }
        writer.flush().map_err(write_err)?;
    }
    let file = writer.into_inner().map_err(write_err)?;
    target.commit(file)
}

/// The outcome of every row of `batch`, whose first row is row `first` of the file.
pub(super) fn decide(
    job: &mut FileJob<'_>,
    columns: &Columns,
    batch: &RecordBatch,
    first: u64,
    at: &dyn Fn(u64) -> Position,
    judge: &mut Judge<'_>,
) -> Result<Vec<Outcome>, ApplyError> {
    let mut values = Vec::with_capacity(batch.num_rows());
    columns
        .rows(batch, &mut values, &job.file.name)
        .map_err(|e| ApplyError::Corrupt(e.to_string()))?;
    let mut out = Vec::with_capacity(values.len());
    for (value, row) in values.into_iter().zip(first..) {
        let origin = Origin {
            file: job.file.clone(),
            at: at(row),
        };
        let key = value.map(|(key, _, _)| key.unwrap_or_else(|| origin.path_id()));
        out.push(judge.judge(key, &origin)?);
    }
    Ok(out)
}

/// What `batch` becomes given its rows' outcomes: one batch with the notes added as columns
/// of `schema` when annotating, else its runs of kept rows.
pub(super) fn output_batches(
    decided: Vec<Outcome>,
    batch: &RecordBatch,
    notes: Option<&ArrowNotes>,
    schema: &SchemaRef,
) -> Result<Vec<RecordBatch>, ApplyError> {
    if let Some(n) = notes {
        let notes: Vec<_> = decided.into_iter().map(|o| o.note).collect();
        return Ok(vec![n.batch(batch, &notes, schema)?]);
    }
    let keep: Vec<bool> = decided.iter().map(|o| o.keep).collect();
    Ok(runs(&keep)
        .into_iter()
        .map(|(start, len)| batch.slice(start, len))
        .collect())
}

/// The runs of true values: (start, length) each.
fn runs(keep: &[bool]) -> Vec<(usize, usize)> {
    let mut out: Vec<(usize, usize)> = Vec::new();
    for (i, &k) in keep.iter().enumerate() {
        if !k {
            continue;
        }
        match out.last_mut() {
            Some((start, len)) if *start + *len == i => *len += 1,
            _ => out.push((i, 1)),
        }
    }
    out
}

/// The writer's properties: the input's key-value metadata (the Arrow schema is written by
/// the writer) and the compression codec of its first column chunk.
fn properties(metadata: &parquet::file::metadata::ParquetMetaData) -> WriterProperties {
    let kv = metadata.file_metadata().key_value_metadata().map(|kv| {
        kv.iter()
            .filter(|e| e.key != ARROW_SCHEMA_KEY)
            .cloned()
            .collect::<Vec<_>>()
    });
    let codec = metadata
        .row_groups()
        .first()
        .and_then(|g| g.columns().first())
        .map_or(Compression::UNCOMPRESSED, |c| c.compression());
    WriterProperties::builder()
        .set_key_value_metadata(kv.filter(|kv| !kv.is_empty()))
        .set_compression(codec)
        .build()
}
