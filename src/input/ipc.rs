//! Arrow IPC files and streams, record batch by record batch. A file is read with only the id
//! and text columns; a stream, which has no footer to seek by, is decoded whole batch by batch.
//! Either way a batch is in memory as its writer made it: the bound is the writer's batch size.

use std::fs::File;
use std::io::{BufReader, Seek};
use std::path::Path;

use arrow_array::RecordBatch;
use arrow_ipc::reader::{FileReader, StreamReader};
use arrow_schema::ArrowError;

use super::columns::Columns;
use super::reader::{RowBatch, Rows};
use super::{Error, Fields};
use crate::storage::segment::KeepType;

/// The batches of an Arrow file or stream.
enum Batches {
    File(FileReader<BufReader<File>>),
    Stream(StreamReader<BufReader<File>>),
}

impl Batches {
    /// The place in the file after the batches read so far (a file's footer, read at its
    /// opening, aside).
    fn file_position(&mut self) -> Option<u64> {
        let file = match self {
            Batches::File(r) => r.get_mut(),
            Batches::Stream(r) => r.get_mut(),
        };
        file.stream_position().ok()
    }
}

impl Iterator for Batches {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            Batches::File(r) => r.next(),
            Batches::Stream(r) => r.next(),
        }
    }
}

/// The rows of one Arrow IPC file or stream.
pub struct IpcRows {
    name: String,
    batches: Batches,
    columns: Columns,
    /// The next batch's number.
    batch: usize,
    /// The next row's number in the file.
    row: u64,
}

impl IpcRows {
    /// Opens an Arrow IPC file (`stream` false) or stream, and finds and checks the columns.
    pub fn open(path: &Path, name: &str, fields: &Fields, stream: bool) -> Result<Self, Error> {
        let open = || {
            File::open(path)
                .map(BufReader::new)
                .map_err(|e| Error::new(format!("cannot open {name}: {e}")))
        };
        let kind = if stream { "stream" } else { "file" };
        let unreadable =
            |e: ArrowError| Error::new(format!("{name}: not a readable Arrow IPC {kind}: {e}"));
        let (batches, columns) = if stream {
            let reader = StreamReader::try_new(open()?, None).map_err(unreadable)?;
            let columns = Columns::find(&reader.schema(), fields, name)?;
            (Batches::Stream(reader), columns)
        } else {
            let schema = FileReader::try_new(open()?, None)
                .map_err(unreadable)?
                .schema();
            let columns = Columns::find(&schema, fields, name)?;
            let mut projection: Vec<usize> = columns
                .roots()
                .filter_map(|root| schema.index_of(root).ok())
                .collect();
            projection.sort_unstable();
            projection.dedup();
            let reader = FileReader::try_new(open()?, Some(projection)).map_err(unreadable)?;
            (Batches::File(reader), columns)
        };
        Ok(IpcRows {
            name: name.to_string(),
            batches,
            columns,
            batch: 0,
            row: 0,
        })
    }
}

impl Rows for IpcRows {
    fn keep_type(&self) -> Option<KeepType> {
        self.columns.keep_type()
    }

    fn bytes_read(&mut self, _size: u64) -> Option<u64> {
        self.batches.file_position()
    }

    fn next_batch(&mut self) -> Result<Option<RowBatch>, Error> {
        let Some(batch) = self.batches.next() else {
            return Ok(None);
        };
        let batch = batch.map_err(|e| {
            Error::new(format!(
                "{}: record batch {} (from row {}) cannot be read: {e}",
                self.name, self.batch, self.row
            ))
        })?;
        self.batch += 1;
        let mut values = Vec::with_capacity(batch.num_rows());
        self.columns.rows(&batch, &mut values, &self.name)?;
        let first = self.row;
        self.row += values.len() as u64;
        Ok(Some(RowBatch::numbered(values, first, None)))
    }
}
