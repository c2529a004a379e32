//! `Index.dedup_table`: the decision of `mhdb dedup --apply --annotate` for every stored
//! document, as a pyarrow Table. The decision is the core's ([`mhdb::decisions`]); this
//! module only lays it out as Arrow columns, built in Rust and handed to pyarrow through the
//! Arrow C stream interface (a capsule named `arrow_array_stream`), so no Python object is
//! made per row.

use std::sync::{Arc, Mutex};

use arrow_array::builder::{BinaryBuilder, BooleanBuilder, Float64Builder, StringBuilder};
use arrow_array::ffi_stream::FFI_ArrowArrayStream;
use arrow_array::{ArrayRef, RecordBatch, RecordBatchIterator};
use mhdb::db::ingest::Content;
use mhdb::db::{Db, DedupOptions, ReadIndex};
use mhdb::decisions::{Decision, Decisions, Document, Keep};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyIterator};

use crate::errors::OrRaise;

/// The name the Arrow PyCapsule interface gives a stream's capsule.
const STREAM_CAPSULE: &std::ffi::CStr = c"arrow_array_stream";

/// Documents read from the Python iterable at a time, the GIL held, for a containment index.
const DOCUMENT_CHUNK: usize = 1024;

/// The table of `db`'s decision at `threshold` (the index's by default) keeping `keep`
/// (`"first"`, `"last"`, `"longest"`, `"shortest"`, `"max:FIELD"` or `"min:FIELD"`, parsed by
/// the core as `dedup --keep` names them). A containment index decides from `documents`,
/// `(id, text)` pairs read again ([`Decisions::compute_containment`]); another index takes
/// none.
pub fn dedup_table<'py>(
    py: Python<'py>,
    db: Arc<Db>,
    threshold: Option<f64>,
    keep: &str,
    documents: Option<Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let keep: Keep = keep.parse().or_raise(py)?;
    let threshold = crate::convert::threshold(py, threshold)?;
    // The core refuses documents for an index other than a containment one, and a
    // containment index's decision without them.
    let documents = documents
        .map(|d| d.try_iter().map(Bound::unbind))
        .transpose()?;
    let pyarrow = py.import("pyarrow")?;
    let failure: Mutex<Option<PyErr>> = Mutex::new(None);
    let batch = py
        .detach(|| {
            let t = threshold.unwrap_or(db.params().threshold);
            let index: &dyn ReadIndex = db.as_ref();
            let decisions = match &documents {
                Some(docs) => {
                    let mut next = || Python::attach(|py| next_documents(py, docs, &failure));
                    Decisions::compute_containment(index, &mut next, t, false, &keep, &mut |_| {})?
                }
                None => {
                    Decisions::compute(index, t, DedupOptions::default(), &keep, &mut |_, _| {})?
                }
            };
            // Keys read after the pass: one stored since has no near-duplicate in it and is
            // kept alone, as `dedup --apply` keeps a row the pass did not see.
            let mut keys = db.keys()?;
            keys.sort_unstable();
            Ok(table_batch(&decisions, &keys))
        })
        .or_raise(py)?;
    if let Some(e) = failure.into_inner().unwrap_or_else(|p| p.into_inner()) {
        return Err(e);
    }
    let batch = batch.map_err(|e| PyValueError::new_err(format!("cannot build the table: {e}")))?;
    let stream = ArrowStream(Mutex::new(Some(stream_of(batch))));
    pyarrow.call_method1("table", (stream,))
}

/// Up to [`DOCUMENT_CHUNK`] more `(id, text)` pairs of `docs`; none at its end, or after an
/// item that is not one, whose error is left in `failure`.
fn next_documents(
    py: Python<'_>,
    docs: &Py<PyIterator>,
    failure: &Mutex<Option<PyErr>>,
) -> Vec<Document> {
    let mut out = Vec::new();
    let mut docs = docs.bind(py).clone();
    while out.len() < DOCUMENT_CHUNK {
        let item = match docs.next() {
            None => break,
            Some(item) => item.and_then(|item| {
                let (key, text): (Bound<'_, PyAny>, String) = item.extract()?;
                Ok((crate::convert::key_from_py(&key)?, Content::Text(text)))
            }),
        };
        match item {
            Ok(doc) => out.push(doc),
            Err(e) => {
                let e = PyValueError::new_err(format!(
                    "documents: each item must be an (id, text) pair: {e}"
                ));
                *failure.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
                return Vec::new();
            }
        }
    }
    out
}

/// One row per key, in the order of `keys`: `id`, `cluster`, `keep`, `best_match`,
/// `similarity`. Keys are strings when every one is UTF-8, else all are binary (one column
/// type for the whole table, as a Parquet column of ids has one).
fn table_batch(decisions: &Decisions, keys: &[Vec<u8>]) -> Result<RecordBatch, String> {
    let rows: Vec<Decision<'_>> = keys.iter().map(|k| decisions.decision(k)).collect();
    let utf8 = keys.iter().all(|k| std::str::from_utf8(k).is_ok());
    let id = key_column(utf8, keys.iter().map(|k| Some(k.as_slice())));
    let cluster = key_column(utf8, rows.iter().map(|d| Some(d.cluster)));
    let mut keep = BooleanBuilder::with_capacity(rows.len());
    rows.iter().for_each(|d| keep.append_value(d.keep));
    let best_match = key_column(utf8, rows.iter().map(|d| d.best_match.map(|(k, _)| k)));
    let mut similarity = Float64Builder::with_capacity(rows.len());
    rows.iter()
        .for_each(|d| similarity.append_option(d.best_match.map(|(_, s)| s)));
    RecordBatch::try_from_iter_with_nullable([
        ("id", id, false),
        ("cluster", cluster, false),
        ("keep", Arc::new(keep.finish()) as ArrayRef, false),
        ("best_match", best_match, true),
        (
            "similarity",
            Arc::new(similarity.finish()) as ArrayRef,
            true,
        ),
    ])
    .map_err(|e| e.to_string())
}

/// A column of keys: `utf8` (every key of the table is UTF-8) as strings, else as binary.
fn key_column<'k>(utf8: bool, keys: impl Iterator<Item = Option<&'k [u8]>>) -> ArrayRef {
    if utf8 {
        let mut b = StringBuilder::new();
        keys.for_each(|k| b.append_option(k.map(|k| String::from_utf8_lossy(k))));
        Arc::new(b.finish())
    } else {
        let mut b = BinaryBuilder::new();
        keys.for_each(|k| b.append_option(k));
        Arc::new(b.finish())
    }
}

/// `batch` as an Arrow C stream of one batch (an empty table keeps its schema).
fn stream_of(batch: RecordBatch) -> FFI_ArrowArrayStream {
    let schema = batch.schema();
    FFI_ArrowArrayStream::new(Box::new(RecordBatchIterator::new([Ok(batch)], schema)))
}

/// The table on its way to pyarrow: an object exporting the Arrow C stream interface once
/// (`pyarrow.table(obj)` imports it).
#[pyclass(module = "mhdb", frozen)]
struct ArrowStream(Mutex<Option<FFI_ArrowArrayStream>>);

#[pymethods]
impl ArrowStream {
    /// The stream as the capsule the Arrow PyCapsule interface names `arrow_array_stream`;
    /// the consumer moves it out, and an unconsumed one is released with the capsule.
    #[pyo3(signature = (requested_schema = None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        // The schema is fixed; a consumer asking for another one casts it itself.
        let _ = requested_schema;
        let stream = self
            .0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .take()
            .ok_or_else(|| PyValueError::new_err("the Arrow stream was already exported"))?;
        PyCapsule::new_with_value(py, stream, STREAM_CAPSULE)
    }
}
