//! `mhdb.Shards`: indexes opened read-only as one (`Index.open_many`), answering the reads
//! `mhdb.Index` answers through the same code (`reads.rs`).

use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

use mhdb::db::{ReadIndex, Shards, ShardsStats};
use numpy::PyArray1;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString, PyTuple};

use crate::errors::{self, OrRaise};
use crate::index::{options_with_key, stats_dict};
use crate::params::params_dict;
use crate::reads::{self, QueryIterator};

/// Indexes opened read-only as one, in the order given (:meth:`Index.open_many`): the shards
/// of an index built in parallel, queried side by side instead of merged first.
///
/// They answer as the index ``Index.merge`` would make of them: a key stored in two shards
/// answers from the later one, and "first" (the older document of a pair, the document a
/// cluster keeps) means shard order, then insertion order. Opening reads no document.
/// Refused at open: no path, a shard given twice (however named), and shards whose
/// parameters do not let one query mean the same thing in each (:class:`InvalidParameterError`
/// naming the parameter and both shards).
///
/// ``len()`` is the shards' counts summed: a key stored in two shards counts in both (telling
/// takes reading every key). The write methods raise :class:`ReadOnlyError`. Every method
/// that does real work releases the GIL.
#[pyclass(module = "mhdb", name = "Shards", frozen)]
pub struct PyShards {
    shards: Mutex<Option<Arc<Shards>>>,
    paths: Vec<PathBuf>,
}

impl PyShards {
    /// `Index.open_many(paths, key_file=)`.
    pub fn open(
        py: Python<'_>,
        paths: &Bound<'_, PyAny>,
        key_file: Option<PathBuf>,
    ) -> PyResult<PyShards> {
        if paths.is_instance_of::<PyString>() || paths.is_instance_of::<PyBytes>() {
            return Err(PyTypeError::new_err(
                "paths must be an iterable of paths, not one path: give [path]",
            ));
        }
        let paths = paths
            .try_iter()?
            .map(|p| p.and_then(|p| p.extract::<PathBuf>()))
            .collect::<PyResult<Vec<_>>>()?;
        let opts = options_with_key(py, key_file)?;
        let shards = py
            .detach(|| Shards::open_many_with_options(&paths, &opts))
            .or_raise(py)?;
        Ok(PyShards {
            shards: Mutex::new(Some(Arc::new(shards))),
            paths,
        })
    }

    fn lock(&self) -> MutexGuard<'_, Option<Arc<Shards>>> {
        self.shards
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The open shards, or the "closed" error.
    fn shards(&self, py: Python<'_>) -> PyResult<Arc<Shards>> {
        self.lock().clone().ok_or_else(|| errors::closed(py))
    }

    /// The open shards as the reads see them, or the "closed" error.
    fn index(&self, py: Python<'_>) -> PyResult<Arc<dyn ReadIndex>> {
        Ok(self.shards(py)?)
    }
}

/// What every write method raises.
fn read_only(py: Python<'_>) -> PyErr {
    errors::simple(
        py,
        "ReadOnlyError",
        "shards opened with Index.open_many are read-only: write to one shard with \
         Index.open(path), then call refresh() here to see it",
    )
}

/// `stats()` of shards: each shard's statistics (as `Index.stats` gives them, with their
/// `path`) and their totals, in the shape `mhdb stats --json` prints for shards.
fn shards_stats_dict<'py>(py: Python<'py>, all: &ShardsStats) -> PyResult<Bound<'py, PyDict>> {
    let shards = PyList::empty(py);
    for (path, s) in &all.shards {
        let d = stats_dict(py, s)?;
        d.set_item("path", path.to_string_lossy())?;
        shards.append(d)?;
    }
    let total = PyDict::new(py);
    total.set_item("shards", all.shards.len())?;
    total.set_item("live_docs", all.live_docs)?;
    total.set_item("deleted_docs", all.deleted_docs)?;
    total.set_item("memtable_docs", all.memtable_docs)?;
    total.set_item("segments", all.segments)?;
    let bytes = PyDict::new(py);
    for (k, v) in &all.bytes {
        bytes.set_item(*k, *v)?;
    }
    total.set_item("bytes", bytes)?;
    total.set_item("hot_buckets", all.hot_buckets)?;
    total.set_item("torn_tails", all.torn_tails)?;
    let d = PyDict::new(py);
    d.set_item("shards", shards)?;
    d.set_item("total", total)?;
    Ok(d)
}

#[pymethods]
impl PyShards {
    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, py: Python<'_>, _args: &Bound<'_, PyTuple>) -> bool {
        self.close(py);
        false
    }

    /// Closes every shard; later calls raise :class:`Error`. Calling it twice does nothing.
    fn close(&self, py: Python<'_>) {
        let shards = self.lock().take();
        py.detach(move || drop(shards));
    }

    /// Whether :meth:`close` was called.
    #[getter]
    fn closed(&self) -> bool {
        self.lock().is_none()
    }

    /// The shards' directories, in order.
    #[getter]
    fn paths(&self) -> Vec<String> {
        self.paths
            .iter()
            .map(|p| p.to_string_lossy().into_owned())
            .collect()
    }

    /// Always ``True``: shards are opened read-only.
    #[getter]
    fn read_only(&self) -> bool {
        true
    }

    /// The parameters queries are answered with: the first shard's.
    #[getter]
    fn params<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        params_dict(py, self.shards(py)?.params())
    }

    /// Documents similar to ``text`` (or to a ``signature``) over every shard, best first,
    /// as :meth:`Index.query` answers on the merged index (``top`` runs across shards).
    #[pyo3(signature = (text = None, signature = None, threshold = None, limit = None, exact = true, top = None, *, containment = None, recall = None, set_size = None))]
    #[allow(clippy::too_many_arguments)] // Python's keyword arguments
    fn query<'py>(
        &self,
        py: Python<'py>,
        text: Option<&Bound<'py, PyAny>>,
        signature: Option<&Bound<'py, PyAny>>,
        threshold: Option<f64>,
        limit: Option<&Bound<'py, PyAny>>,
        exact: bool,
        top: Option<&Bound<'py, PyAny>>,
        containment: Option<f64>,
        recall: Option<f64>,
        set_size: Option<u64>,
    ) -> PyResult<Bound<'py, PyList>> {
        let index = || self.index(py);
        let opts =
            reads::one_query_options(py, threshold, limit, exact, top, (containment, recall))?;
        reads::query(py, &index, (text, signature, set_size), &opts)
    }

    /// Many queries, streamed, as :meth:`Index.query_many` answers them.
    #[pyo3(signature = (texts = None, signatures = None, threshold = None, limit = None, batch_size = 1024, top = None, *, containment = None, recall = None))]
    #[allow(clippy::too_many_arguments)] // Python's keyword arguments
    fn query_many(
        &self,
        py: Python<'_>,
        texts: Option<&Bound<'_, PyAny>>,
        signatures: Option<&Bound<'_, PyAny>>,
        threshold: Option<f64>,
        limit: Option<&Bound<'_, PyAny>>,
        batch_size: usize,
        top: Option<&Bound<'_, PyAny>>,
        containment: Option<f64>,
        recall: Option<f64>,
    ) -> PyResult<QueryIterator> {
        let index = || self.index(py);
        let opts = crate::index::query_options(py, threshold, limit, top, (containment, recall))?;
        reads::query_many(py, &index, texts, signatures, opts, batch_size)
    }

    /// The stored signature of ``key`` in the last shard that holds it, or ``None``.
    fn get<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
    ) -> PyResult<Option<Bound<'py, PyArray1<u64>>>> {
        reads::get(py, &|| self.index(py), key)
    }

    fn __contains__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        reads::contains(py, &|| self.index(py), key)
    }

    /// Live documents over all shards: their counts summed (a key stored in two shards
    /// counts in both).
    fn __len__(&self, py: Python<'_>) -> PyResult<usize> {
        let shards = self.shards(py)?;
        Ok(py.detach(|| shards.len()) as usize)
    }

    /// Near-duplicates across the shards, as :meth:`Index.dedup` finds them in the merged
    /// index (without merging).
    #[pyo3(signature = (threshold = None, format = "pairs"))]
    fn dedup<'py>(
        &self,
        py: Python<'py>,
        threshold: Option<f64>,
        format: &str,
    ) -> PyResult<Bound<'py, PyAny>> {
        reads::dedup(py, &|| self.index(py), threshold, format)
    }

    /// Each shard's statistics and their totals: ``{"shards": [{"path", ...as
    /// Index.stats...}], "total": {"shards", "live_docs", "deleted_docs", "memtable_docs",
    /// "segments", "bytes", "hot_buckets", "torn_tails"}}``.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let shards = self.shards(py)?;
        let stats = py.detach(|| shards.stats()).or_raise(py)?;
        shards_stats_dict(py, &stats)
    }

    /// Every shard verified, as :meth:`Index.verify` reports (each problem names its file).
    fn verify<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        reads::verify(py, &|| self.index(py))
    }

    /// Moves every shard to its newest committed state (what writers have committed since).
    fn refresh(&self, py: Python<'_>) -> PyResult<()> {
        let index = self.index(py)?;
        py.detach(|| index.refresh()).or_raise(py)
    }

    /// Raises :class:`ReadOnlyError`: shards are read-only.
    #[pyo3(signature = (*args, **kwargs))]
    fn insert(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<()> {
        let _ = (args, kwargs);
        Err(read_only(py))
    }

    /// Raises :class:`ReadOnlyError`: shards are read-only.
    #[pyo3(signature = (*args, **kwargs))]
    fn insert_if_novel(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<()> {
        let _ = (args, kwargs);
        Err(read_only(py))
    }

    /// Raises :class:`ReadOnlyError`: shards are read-only.
    #[pyo3(signature = (*args, **kwargs))]
    fn insert_many(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<()> {
        let _ = (args, kwargs);
        Err(read_only(py))
    }

    /// Raises :class:`ReadOnlyError`: shards are read-only.
    #[pyo3(signature = (*args, **kwargs))]
    fn delete(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<()> {
        let _ = (args, kwargs);
        Err(read_only(py))
    }

    /// Raises :class:`ReadOnlyError`: shards are read-only.
    #[pyo3(signature = (*args, **kwargs))]
    fn merge(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<()> {
        let _ = (args, kwargs);
        Err(read_only(py))
    }

    /// Raises :class:`ReadOnlyError`: shards are read-only.
    fn commit(&self, py: Python<'_>) -> PyResult<()> {
        Err(read_only(py))
    }

    /// Raises :class:`ReadOnlyError`: shards are read-only.
    fn flush(&self, py: Python<'_>) -> PyResult<()> {
        Err(read_only(py))
    }

    /// Raises :class:`ReadOnlyError`: shards are read-only.
    fn compact(&self, py: Python<'_>) -> PyResult<()> {
        Err(read_only(py))
    }

    fn __repr__(&self) -> String {
        let state = if self.closed() { "closed" } else { "read-only" };
        format!("Shards({:?}, {state})", self.paths())
    }
}
