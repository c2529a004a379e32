//! Arrow IPC files and streams out: the same schema (its metadata too) and, for a file, its
//! footer's custom metadata; the kept rows of each record batch, in order, a batch at a time.

use std::fs::File;
use std::io::BufReader;

use arrow_array::RecordBatch;
use arrow_ipc::reader::{FileReader, StreamReader};
use arrow_ipc::writer::{FileWriter, StreamWriter};
use arrow_schema::{ArrowError, SchemaRef};

use super::annotation::{ArrowNotes, field_type};
use super::atomic::Target;
use super::judge::Judge;
use super::parquet::{decide, output_batches};
use super::{ApplyError, Event, FileJob, io_error};
use crate::input::{Columns, Position};

/// The batches of an input, and where they go.
enum Ends {
    File(FileReader<BufReader<File>>, FileWriter<File>),
    Stream(StreamReader<BufReader<File>>, StreamWriter<File>),
}

impl Ends {
    fn next(&mut self) -> Option<Result<RecordBatch, ArrowError>> {
        match self {
            Ends::File(r, _) => r.next(),
            Ends::Stream(r, _) => r.next(),
        }
    }

    fn write(&mut self, batch: &RecordBatch) -> Result<(), ArrowError> {
        match self {
            Ends::File(_, w) => w.write(batch),
            Ends::Stream(_, w) => w.write(batch),
        }
    }

    fn finish(self) -> Result<File, ArrowError> {
        match self {
            Ends::File(_, mut w) => {
                w.finish()?;
                w.into_inner()
            }
            Ends::Stream(_, mut w) => {
                w.finish()?;
                w.into_inner()
            }
        }
    }
}

/// Reads the Arrow IPC file (or `stream`) of `job` and writes its kept (or annotated) rows
/// to `target`.
pub fn apply(
    mut job: FileJob<'_>,
    mut target: Target,
    judge: &mut Judge<'_>,
    stream: bool,
) -> Result<(), ApplyError> {
    let name = job.file.name.clone();
    let kind = if stream { "stream" } else { "file" };
    let corrupt = |e: ArrowError| ApplyError::Corrupt(format!("{name}: Arrow IPC {kind}: {e}"));
    let input =
        BufReader::new(File::open(&job.file.path).map_err(|e| io_error(&name, "open it", e))?);
    let out_name = target.name();
    let write_err = |e: ArrowError| ApplyError::Other(format!("{out_name}: cannot write it: {e}"));
    let output = target.take_file()?;
    let (schema, mut ends, notes) = if stream {
        let reader = StreamReader::try_new(input, None).map_err(corrupt)?;
        let (schema, notes) = out_schema(&job, &reader.schema())?;
        let writer = StreamWriter::try_new(output, &schema).map_err(write_err)?;
        (schema, Ends::Stream(reader, writer), notes)
    } else {
        let reader = FileReader::try_new(input, None).map_err(corrupt)?;
        let (schema, notes) = out_schema(&job, &reader.schema())?;
        let mut writer = FileWriter::try_new(output, &schema).map_err(write_err)?;
        for (k, v) in reader.custom_metadata() {
            writer.write_metadata(k, v);
        }
        (schema, Ends::File(reader, writer), notes)
    };
    let columns = Columns::find(&ends_schema(&ends), &job.opts.fields, &name)
        .map_err(|e| ApplyError::Usage(e.to_string()))?;
    let at = |row| Position::Row {
        row_group: None,
        row,
    };
    let mut row = 0u64;
    while let Some(batch) = ends.next() {
        let batch = batch.map_err(|e| {
            ApplyError::Corrupt(format!(
                "{name}: the record batch from row {row} cannot be read: {e}"
            ))
        })?;
        let decided = decide(&mut job, &columns, &batch, row, &at, judge)?;
        row += batch.num_rows() as u64;
        for b in output_batches(decided, &batch, notes.as_ref(), &schema)? {
            ends.write(&b).map_err(write_err)?;
        }
        (job.events)(Event::Rows(row));
    }
    let file = ends.finish().map_err(write_err)?;
    target.commit(file)
}

fn ends_schema(ends: &Ends) -> SchemaRef {
    match ends {
        Ends::File(r, _) => r.schema(),
        Ends::Stream(r, _) => r.schema(),
    }
}

/// The output's schema: the input's, with the annotation's columns when annotating.
fn out_schema(
    job: &FileJob<'_>,
    schema: &SchemaRef,
) -> Result<(SchemaRef, Option<ArrowNotes>), ApplyError> {
    let Some(annotate) = &job.opts.annotate else {
        return Ok((schema.clone(), None));
    };
    annotate.check(&job.file.name, |c| schema.field_with_name(c).is_ok())?;
    let id_type = job
        .opts
        .fields
        .id
        .field()
        .and_then(|f| field_type(schema, f));
    let notes = ArrowNotes::new(annotate, id_type);
    Ok((notes.schema(schema), Some(notes)))
}
