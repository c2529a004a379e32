//! `Index.insert_arrow`: documents from any object exporting the Arrow C stream interface
//! (`__arrow_c_stream__`: a pyarrow Table or RecordBatchReader, a Polars DataFrame, pandas
//! through pyarrow, a DuckDB result). The stream is imported with arrow-rs's own FFI
//! (`arrow_array::ffi_stream`), its id and text (or token-list) columns are read by the core's rules
//! (`mhdb::input::Columns`, as `mhdb add` reads Parquet and Arrow files), and the rows are
//! loaded by `insert_many`'s batch-atomic pipeline. Batches are read and made records without
//! the GIL, and no Python object is made per row.

use arrow_array::ffi_stream::{FFI_ArrowArrayStream, RecordBatchStreamReader};
use arrow_array::{RecordBatch, RecordBatchReader};
use mhdb::db::ingest::{self as core_ingest, Fault, Record, Rejected};
use mhdb::db::{Db, NoveltyOptions};
use mhdb::input::{Columns, Fields, Id, RowValues};
use mhdb::storage::segment::KeepType;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::PyCapsule;

use crate::errors::{invalid, simple};
use crate::ingest::{NearDuplicates, Origin, load};

/// What errors about the stream as a whole call it.
const STREAM: &str = "the Arrow stream";

/// The name the Arrow PyCapsule interface gives a stream's capsule.
const STREAM_CAPSULE: &std::ffi::CStr = c"arrow_array_stream";

/// Where the documents' ids and texts (or token lists) are.
pub struct Names<'a> {
    /// The id column (or a dotted path into struct columns).
    id: &'a str,
    /// The text column, or the token-list column with `tokens`.
    column: &'a str,
    /// `column` is a list column of tokens, for an index of token lists.
    tokens: bool,
    /// The column holding each document's keep value, if one is captured.
    keep: Option<&'a str>,
}

impl<'a> Names<'a> {
    /// The id column and exactly one of a text column and a token-list column.
    pub fn new(
        py: Python<'_>,
        id: &'a str,
        text: Option<&'a str>,
        tokens: Option<&'a str>,
    ) -> PyResult<Self> {
        let (column, tokens) = match (text, tokens) {
            (Some(text), None) => (text, false),
            (None, Some(tokens)) => (tokens, true),
            _ => return Err(invalid(py, "text", "give exactly one of text= and tokens=")),
        };
        Ok(Names {
            id,
            column,
            tokens,
            keep: None,
        })
    }

    /// These names, capturing each row's keep value from `keep`.
    pub fn keeping(self, keep: Option<&'a str>) -> Self {
        Names { keep, ..self }
    }
}

/// A stream whose schema is read and whose columns are found, not yet loaded.
pub struct Opened {
    reader: RecordBatchStreamReader,
    columns: Columns,
}

impl Opened {
    /// The type of the keep column's values (`None` when no keep column is read).
    pub fn keep_type(&self) -> Option<KeepType> {
        self.columns.keep_type()
    }
}

/// Takes over `data`'s Arrow stream and finds the columns `names` names in its schema.
pub fn open(py: Python<'_>, data: &Bound<'_, PyAny>, names: &Names<'_>) -> PyResult<Opened> {
    let stream = export_stream(data)?;
    let reader = py
        .detach(|| RecordBatchStreamReader::try_new(stream))
        .map_err(|e| {
            simple(
                py,
                "Error",
                &format!("{STREAM} has no readable schema: {e}"),
            )
        })?;
    let fields = Fields {
        id: Id::Field(names.id.to_string()),
        text: names.column.to_string(),
        tokens: names.tokens,
        keep: names.keep.map(str::to_string),
    };
    let columns = Columns::find(&reader.schema(), &fields, STREAM)
        .map_err(|e| invalid(py, "data", e.to_string()))?;
    Ok(Opened { reader, columns })
}

/// Loads the rows of an opened Arrow stream as `insert_many` loads its items: `commit_every`
/// rows a batch, each committed atomically, `on_commit(total)` after each. Returns the number
/// of documents committed, and with `novelty` the rows not stored.
pub fn insert_arrow(
    py: Python<'_>,
    db: &Db,
    opened: Opened,
    commit_every: usize,
    on_commit: Option<&Bound<'_, PyAny>>,
    novelty: Option<NoveltyOptions>,
) -> PyResult<(u64, NearDuplicates)> {
    let Opened { reader, columns } = opened;
    let mut source = Source {
        py,
        rows: StreamRows {
            reader,
            columns,
            batch: None,
            batches: 0,
            next_row: 0,
        },
    };
    load(
        py,
        db,
        &mut source,
        &record,
        commit_every,
        on_commit,
        novelty,
    )
}

/// The stream `data.__arrow_c_stream__()` exports, taken over from its capsule.
fn export_stream(data: &Bound<'_, PyAny>) -> PyResult<FFI_ArrowArrayStream> {
    if !data.hasattr("__arrow_c_stream__")? {
        return Err(PyTypeError::new_err(format!(
            "data: expected an object exporting the Arrow C stream interface \
             (__arrow_c_stream__: a pyarrow Table or RecordBatchReader, a Polars DataFrame, a \
             DuckDB result, pyarrow.Table.from_pandas(df)), not {}",
            data.get_type().name()?
        )));
    }
    let exported = data.call_method0("__arrow_c_stream__")?;
    let capsule = exported.cast::<PyCapsule>().map_err(|_| {
        PyTypeError::new_err("data: __arrow_c_stream__() did not return a PyCapsule")
    })?;
    take_stream(capsule)
}

/// Moves the stream out of its capsule, as the Arrow PyCapsule interface has a consumer do:
/// the capsule keeps a released stream, which its destructor then leaves alone.
#[allow(unsafe_code)]
fn take_stream(capsule: &Bound<'_, PyCapsule>) -> PyResult<FFI_ArrowArrayStream> {
    // Checks the capsule's name: a capsule of another kind is refused here.
    let pointer = capsule.pointer_checked(Some(STREAM_CAPSULE))?;
    // SAFETY: a capsule named "arrow_array_stream" holds a pointer to a valid `struct
    // ArrowArrayStream` of the Arrow C stream interface (the Arrow PyCapsule interface), whose
    // layout `FFI_ArrowArrayStream` is (`repr(C)`); it lives as long as the capsule, which
    // `capsule` keeps alive across this call. `from_raw` moves the struct out and leaves a
    // released one (null `release`) in its place, so the stream is released once, by us.
    Ok(unsafe { FFI_ArrowArrayStream::from_raw(pointer.as_ptr().cast()) })
}

/// A row's values with its number in the stream.
type Row = (u64, RowValues);

/// Makes a row a record (on any core), or refuses it naming its column (the row is named by
/// its origin).
fn record((at, values): Row) -> Result<Record<String, Origin>, Rejected<Origin>> {
    let origin = Origin::Row { at };
    let refused = |message: String| Rejected {
        origin,
        key: None,
        fault: Fault::Malformed(message),
    };
    match values {
        Ok((Some(key), content, keep)) => Ok(Record {
            key,
            content,
            keep,
            origin,
        }),
        // Not reached: `Id::Field` always reads a key.
        Ok((None, ..)) => Err(refused("no id column".to_string())),
        Err(fault) => Err(refused(fault)),
    }
}

/// The pipeline's source: rows of the stream, read without the GIL.
struct Source<'py> {
    py: Python<'py>,
    rows: StreamRows,
}

impl core_ingest::Source for Source<'_> {
    type Item = Row;
    type Error = PyErr;

    fn next_chunk(&mut self, max: usize) -> PyResult<Vec<Row>> {
        let rows = &mut self.rows;
        self.py
            .detach(|| rows.take(max))
            .map_err(|e| simple(self.py, "Error", &e.to_string()))
    }

    /// Waits without the GIL, so that other Python threads run meanwhile.
    fn wait<R: Send>(&mut self, job: impl FnOnce() -> R + Send) -> R {
        self.py.detach(job)
    }
}

/// The stream's rows in order, a slice of a batch at a time: a batch as large as a whole
/// table is made records a chunk at a time, not copied whole.
struct StreamRows {
    reader: RecordBatchStreamReader,
    columns: Columns,
    /// The batch being read and the first of its rows not taken yet.
    batch: Option<(RecordBatch, usize)>,
    /// Batches read so far.
    batches: usize,
    /// The number of the next row in the stream.
    next_row: u64,
}

impl StreamRows {
    /// Up to `max` more rows; fewer only at the end of the stream.
    fn take(&mut self, max: usize) -> Result<Vec<Row>, mhdb::input::Error> {
        let mut out: Vec<Row> = Vec::with_capacity(max.min(1 << 16));
        while out.len() < max {
            let Some((batch, offset)) = self.current()? else {
                break;
            };
            let n = (max - out.len()).min(batch.num_rows() - offset);
            let mut values = Vec::with_capacity(n);
            self.columns
                .rows(&batch.slice(offset, n), &mut values, STREAM)?;
            out.extend((self.next_row..).zip(values));
            self.next_row += n as u64;
            self.batch = Some((batch, offset + n));
        }
        Ok(out)
    }

    /// The batch with rows left and its first such row (the next batch once one is done;
    /// empty batches are passed over), or none at the end.
    fn current(&mut self) -> Result<Option<(RecordBatch, usize)>, mhdb::input::Error> {
        loop {
            if let Some((batch, offset)) = self.batch.take()
                && offset < batch.num_rows()
            {
                return Ok(Some((batch, offset)));
            }
            let Some(next) = self.reader.next() else {
                return Ok(None);
            };
            let batch = next.map_err(|e| {
                mhdb::input::Error::new(format!(
                    "{STREAM}: record batch {} (from row {}) cannot be read: {e}",
                    self.batches, self.next_row
                ))
            })?;
            self.batches += 1;
            self.batch = Some((batch, 0));
        }
    }
}
