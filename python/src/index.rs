//! `mhdb.Index`: the persistent index and its dictionaries (the reads it shares with
//! `mhdb.Shards`, and its query iterator, are in `reads.rs`).

use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

use mhdb::db::{
    Db, IndexParams, Match, Novelty, NoveltyOptions, Options, QueryOptions, ReadIndex, Stats,
};
use mhdb::storage::segment::{KeepColumn, KeepType};
use numpy::PyArray1;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};

use crate::convert::{Doc, count, doc_one_of, key_from_py, key_to_py};
use crate::errors::{self, OrRaise, invalid};
use crate::ingest::{self, Source};
use crate::params::{index_params, params_dict};
use crate::reads::{self, QueryIterator};
use crate::shards::PyShards;

/// A persistent, crash-safe MinHash-LSH index in a directory.
///
/// Open one with :meth:`Index.create`, :meth:`Index.open` or :meth:`Index.open_or_create`;
/// use it as a context manager (``with Index.open(path) as idx: ...``) or call
/// :meth:`close`. One process at a time may open an index for writing (others get
/// :class:`LockedError`); any number may open it read-only beside it.
///
/// Keys are ``str`` or ``bytes``; a ``str`` key is stored as its UTF-8 bytes. Keys come back
/// as ``str`` when their bytes are valid UTF-8 and as ``bytes`` otherwise, so ``"a"`` and
/// ``b"a"`` name the same document.
///
/// Every method that does real work releases the GIL while it runs, so other Python
/// threads (queries, inserts, anything else) go on meanwhile. An ``Index`` may be shared by
/// threads.
#[pyclass(module = "mhdb", name = "Index", frozen)]
pub struct PyIndex {
    db: Mutex<Option<Arc<Db>>>,
    path: PathBuf,
    read_only: bool,
}

impl PyIndex {
    fn wrap(db: Db, read_only: bool) -> PyIndex {
        PyIndex {
            path: db.path().to_path_buf(),
            db: Mutex::new(Some(Arc::new(db))),
            read_only,
        }
    }

    /// `create` and `open_or_create`: `make(path, params, options)` without the GIL.
    fn make(
        py: Python<'_>,
        path: PathBuf,
        threshold: Option<f64>,
        params: Option<&Bound<'_, PyDict>>,
        make: fn(&std::path::Path, IndexParams, Options) -> mhdb::Result<Db>,
    ) -> PyResult<PyIndex> {
        // `key_file` is an option of the handle, not a stored parameter.
        let params = params.map(|d| d.copy()).transpose()?;
        let mut key_file = None;
        if let Some(d) = &params
            && let Some(v) = d.get_item("key_file")?
        {
            key_file = v.extract::<Option<PathBuf>>()?;
            d.del_item("key_file")?;
        }
        let opts = options_with_key(py, key_file)?;
        let index = index_params(py, threshold, params.as_ref())?;
        let db = py.detach(|| make(&path, index, opts)).or_raise(py)?;
        Ok(PyIndex::wrap(db, false))
    }

    fn lock(&self) -> MutexGuard<'_, Option<Arc<Db>>> {
        self.db
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Checks that the index keeps `field`, or makes it its keep field, of type `keep_type`
    /// (f64 when the column's type gives none), as the first `mhdb add --keep-field` does.
    fn fix_keep_column(
        &self,
        py: Python<'_>,
        field: &str,
        keep_type: Option<KeepType>,
    ) -> PyResult<()> {
        let mut guard = self.lock();
        let arc = guard.as_mut().ok_or_else(|| errors::closed(py))?;
        if let Some(have) = arc.keep_column() {
            return match have.field == field {
                true => Ok(()),
                false => Err(invalid(
                    py,
                    "keep",
                    format!("this index keeps the field {:?}, not {field:?}", have.field),
                )),
            };
        }
        let db = Arc::get_mut(arc).ok_or_else(|| {
            errors::invalid(
                py,
                "keep",
                "the index's keep field is fixed by its first load with keep=, which must not \
                 run beside another call on the same handle",
            )
        })?;
        let column = KeepColumn {
            keep_type: keep_type.unwrap_or(KeepType::F64),
            field: field.to_string(),
        };
        db.fix_keep_column(&column).or_raise(py)
    }

    /// The open database, or the "closed" error.
    fn db(&self, py: Python<'_>) -> PyResult<Arc<Db>> {
        self.lock().clone().ok_or_else(|| errors::closed(py))
    }

    /// The open database as the reads see it ([`reads`]), or the "closed" error.
    fn index(&self, py: Python<'_>) -> PyResult<Arc<dyn ReadIndex>> {
        Ok(self.db(py)?)
    }
}

/// Handle options with the secret key read from `key_file` (keyed hashing), if given.
pub(crate) fn options_with_key(py: Python<'_>, key_file: Option<PathBuf>) -> PyResult<Options> {
    let key = match key_file {
        Some(path) => Some(mhdb::sketch::SecretKey::from_file(&path).or_raise(py)?),
        None => None,
    };
    Ok(Options {
        key,
        ..Options::default()
    })
}

pub(crate) fn stats_dict<'py>(py: Python<'py>, s: &Stats) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("params", params_dict(py, &s.params)?)?;
    d.set_item("live_docs", s.live_docs)?;
    d.set_item("deleted_docs", s.deleted_docs)?;
    d.set_item("memtable_docs", s.memtable_docs)?;
    d.set_item("segments", s.segments)?;
    let bytes = PyDict::new(py);
    for (k, v) in &s.bytes {
        bytes.set_item(*k, *v)?;
    }
    d.set_item("bytes", bytes)?;
    let bands = PyList::empty(py);
    for b in &s.bands {
        let bd = PyDict::new(py);
        bd.set_item("buckets", b.buckets)?;
        bd.set_item("p50", b.p50)?;
        bd.set_item("p99", b.p99)?;
        bd.set_item("max", b.max)?;
        bd.set_item("hot", b.hot)?;
        bands.append(bd)?;
    }
    d.set_item("bands", bands)?;
    d.set_item("hot_buckets", s.hot_buckets)?;
    d.set_item(
        "expected_recall_at_threshold",
        s.expected_recall_at_threshold,
    )?;
    d.set_item("torn_tails", s.torn_tails)?;
    d.set_item("identity", s.identity.map(|id| id.to_string()))?;
    d.set_item("copied_past_damage", s.copied_past_damage)?;
    d.set_item("sets_derivation", s.sets_derivation.map(|d| d.name()))?;
    let keep = match (&s.keep_column, s.keep_values) {
        (Some(k), Some(c)) => {
            let keep = PyDict::new(py);
            keep.set_item("field", &k.field)?;
            keep.set_item("type", k.keep_type.name())?;
            keep.set_item("with", c.with)?;
            keep.set_item("without", c.without)?;
            Some(keep)
        }
        _ => None,
    };
    d.set_item("keep", keep)?;
    Ok(d)
}

/// The options of `query` and `query_many`, checked as the command-line tool checks them: a
/// threshold in (0, 1], counts that are positive ints, and `top` or `limit`, not both.
pub(crate) fn query_options(
    py: Python<'_>,
    threshold: Option<f64>,
    limit: Option<&Bound<'_, PyAny>>,
    top: Option<&Bound<'_, PyAny>>,
    (containment, recall): (Option<f64>, Option<f64>),
) -> PyResult<QueryOptions> {
    let threshold = crate::convert::threshold(py, threshold)?;
    let containment = crate::convert::threshold(py, containment)?;
    if containment.is_some() && threshold.is_some() {
        return Err(invalid(
            py,
            "containment",
            "a containment query takes no threshold= (with top=, containment= is the floor)",
        ));
    }
    let limit = count(py, "limit", limit)?;
    let top = count(py, "top", top)?;
    if let (Some(limit), Some(top)) = (limit, top) {
        return Err(invalid(
            py,
            "limit",
            format!(
                "limit={limit} cannot be used with top={top}: they exclude each other (top=K \
                 is at most K matches already)"
            ),
        ));
    }
    Ok(QueryOptions {
        threshold,
        limit,
        top,
        containment,
        containment_recall: recall,
        ..QueryOptions::default()
    })
}

pub(crate) fn matches_to_py<'py>(
    py: Python<'py>,
    matches: &[Match],
) -> PyResult<Bound<'py, PyList>> {
    let items = matches
        .iter()
        .map(|m| match (m.distance, m.jaccard) {
            // A SimHash index: (key, distance, cosine).
            (Some(d), _) => PyTuple::new(
                py,
                [
                    key_to_py(py, &m.key),
                    d.into_pyobject(py)?.into_any(),
                    m.similarity.into_pyobject(py)?.into_any(),
                ],
            ),
            // A containment query: (key, containment, jaccard).
            (None, Some(j)) => PyTuple::new(
                py,
                [
                    key_to_py(py, &m.key),
                    m.similarity.into_pyobject(py)?.into_any(),
                    j.into_pyobject(py)?.into_any(),
                ],
            ),
            (None, None) => PyTuple::new(
                py,
                [
                    key_to_py(py, &m.key),
                    m.similarity.into_pyobject(py)?.into_any(),
                ],
            ),
        })
        .collect::<PyResult<Vec<_>>>()?;
    PyList::new(py, items)
}

/// The novelty options of `insert_many` and `insert_arrow`, their arguments checked.
fn load_options(
    py: Python<'_>,
    commit_every: usize,
    novel_only: bool,
    threshold: Option<f64>,
) -> PyResult<Option<NoveltyOptions>> {
    if commit_every == 0 {
        return Err(invalid(py, "commit_every", "must be at least 1"));
    }
    if threshold.is_some() && !novel_only {
        return Err(invalid(py, "threshold", "is for novel_only=True"));
    }
    Ok(novel_only.then_some(NoveltyOptions {
        threshold,
        ..NoveltyOptions::default()
    }))
}

/// What `insert_many` and `insert_arrow` return: the number of documents committed; with
/// `novel_only`, the documents not stored, with their matches.
fn load_result<'py>(
    py: Python<'py>,
    novel_only: bool,
    (committed, skipped): (u64, ingest::NearDuplicates),
) -> PyResult<Bound<'py, PyAny>> {
    if !novel_only {
        return Ok(committed.into_pyobject(py)?.into_any());
    }
    let skipped = skipped
        .iter()
        .map(|(key, matches)| {
            PyTuple::new(
                py,
                [key_to_py(py, key), matches_to_py(py, matches)?.into_any()],
            )
        })
        .collect::<PyResult<Vec<_>>>()?;
    Ok(PyList::new(py, skipped)?.into_any())
}

#[pymethods]
impl PyIndex {
    /// Creates a new index in ``path`` (a directory that must not hold one already).
    ///
    /// Args:
    ///     path: the directory (created if missing).
    ///     threshold: the default query threshold; bands × rows are tuned for it (default
    ///         0.8; a simhash index takes none: its threshold follows from ``max_hamming``).
    ///     **params: ``num_perm``, ``scheme``, ``seed``, ``shingle``, ``nfkc``,
    ///         ``lowercase``, ``collapse_whitespace``: how signatures are computed (see
    ///         :class:`MinHasher`; the same defaults except ``num_perm``: 512 slots, or 128
    ///         with ``scheme="kperm"``). ``shingle="tokens"`` or ``"tokens:N"`` makes an
    ///         index of token lists (:meth:`insert_tokens`, :meth:`query_tokens`,
    ///         ``insert_arrow(tokens=...)``), which takes no normalization; and:
    ///     bits: bits per slot of the stored signatures (1, 2, 4, 8, 16, 32 or 64; default:
    ///         the width that makes a signature 256 bytes, 4 to 32, so 4 at 512 slots).
    ///     band_slots: bands cover only the first ``band_slots`` of the ``num_perm`` slots;
    ///         verification compares all of them (default: 128, or every slot if fewer).
    ///     bands, rows: override the tuned LSH bands × rows (give both).
    ///     bucket_cap: largest bucket kept by compaction (``None`` or 0: unlimited).
    ///     key_file: keyed hashing: shingles are hashed under the secret key in this file (32
    ///         raw bytes or 64 hex digits); the index keeps only its fingerprint, and signing
    ///         text later needs the key (``key_file`` of :meth:`open`, or ``MHDB_KEY_FILE``).
    ///     kind: ``"minhash"`` (the default) or ``"simhash"``: 64-bit SimHash fingerprints of
    ///         term-frequency-weighted shingles, matched by Hamming distance (``num_perm``,
    ///         ``scheme``, ``bits``, ``bands``, ``rows`` and ``threshold`` are then refused).
    ///         Queries return ``(key, distance, cosine)`` and ``dedup`` pairs
    ///         ``(a, b, distance, cosine)``; a query ``threshold`` is a minimum cosine.
    ///     max_hamming: simhash: the largest Hamming distance of a match, 0 to 15 (default 3).
    ///     weighting: simhash: ``"tf"`` (default) or ``"logtf"`` (1 + log2 tf).
    ///
    /// Raises:
    ///     InvalidParameterError: a parameter is out of range.
    ///     IoError: the directory cannot be written.
    #[staticmethod]
    #[pyo3(signature = (path, threshold = None, **params))]
    fn create(
        py: Python<'_>,
        path: PathBuf,
        threshold: Option<f64>,
        params: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<PyIndex> {
        PyIndex::make(py, path, threshold, params, |p, i, o| Db::create(p, i, o))
    }

    /// Opens an existing index.
    ///
    /// With ``read_only=True`` nothing on disk is modified and no lock is taken: any number
    /// of processes may read beside one writer. A read-only handle sees the state committed
    /// when it opened, until :meth:`refresh`.
    ///
    /// Raises:
    ///     NotFoundError: ``path`` holds no index.
    ///     LockedError: another process has it open for writing.
    ///     CorruptionError: its files are damaged.
    ///
    /// ``key_file`` is the secret key of a keyed index (else ``MHDB_KEY_FILE`` is read): a
    /// keyed index opened without it answers signature queries and refuses text.
    #[staticmethod]
    #[pyo3(signature = (path, read_only = false, key_file = None))]
    fn open(
        py: Python<'_>,
        path: PathBuf,
        read_only: bool,
        key_file: Option<PathBuf>,
    ) -> PyResult<PyIndex> {
        let opts = options_with_key(py, key_file)?;
        let db = py
            .detach(|| {
                Db::open_with_vfs(Arc::new(mhdb::storage::vfs::StdFs), &path, opts, read_only)
            })
            .or_raise(py)?;
        Ok(PyIndex::wrap(db, read_only))
    }

    /// Opens the indexes at ``paths`` (an iterable of paths), read-only, as one index: a
    /// :class:`Shards`. See :class:`Shards` for what it answers and what is refused.
    /// ``key_file`` is a keyed index's secret key, as for :meth:`open`.
    #[staticmethod]
    #[pyo3(signature = (paths, *, key_file = None))]
    fn open_many(
        py: Python<'_>,
        paths: &Bound<'_, PyAny>,
        key_file: Option<PathBuf>,
    ) -> PyResult<PyShards> {
        PyShards::open(py, paths, key_file)
    }

    /// Converts an index written in format version 1 or 2 (which opens read-only) to the current
    /// format in place, as ``mhdb upgrade`` does; returns ``False`` when it was already current.
    /// With ``keep_old=True`` the old files stay in ``.<name>.mhdb-v<N>`` beside it. A keyed
    /// index's stored sets of version 2 are kept (``stats()["sets_derivation"]`` is then
    /// ``"keyed-v2-leaking"``: they leak its keyed hashes); ``drop_sets=True`` writes the copy
    /// without stored sets, and removes them from an index already current.
    ///
    /// Raises:
    ///     CorruptionError: the old files are damaged (nothing is changed).
    ///     LockedError: a writer holds the index.
    #[staticmethod]
    #[pyo3(signature = (path, keep_old = false, drop_sets = false))]
    fn upgrade(py: Python<'_>, path: PathBuf, keep_old: bool, drop_sets: bool) -> PyResult<bool> {
        let opts = mhdb::db::UpgradeOptions {
            keep_old,
            drop_sets,
        };
        let done = py.detach(|| Db::upgrade_with(&path, opts)).or_raise(py)?;
        Ok(matches!(done, mhdb::db::Upgraded::Converted { .. }))
    }

    /// Opens the index in ``path``, or creates it with the given parameters if there is
    /// none. An existing index keeps its stored parameters (the arguments are then not
    /// consulted). Arguments as for :meth:`create`.
    #[staticmethod]
    #[pyo3(signature = (path, threshold = None, **params))]
    fn open_or_create(
        py: Python<'_>,
        path: PathBuf,
        threshold: Option<f64>,
        params: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<PyIndex> {
        PyIndex::make(py, path, threshold, params, |p, i, o| {
            Db::open_or_create(p, i, o)
        })
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, py: Python<'_>, _args: &Bound<'_, PyTuple>) -> bool {
        self.close(py);
        false
    }

    /// Closes the index: its lock is released and later calls raise :class:`Error`.
    /// Everything acknowledged before is durable. Calling it twice does nothing.
    fn close(&self, py: Python<'_>) {
        let db = self.lock().take();
        // Dropping the database seals the WAL (a write): do it without the GIL.
        py.detach(move || drop(db));
    }

    /// Whether :meth:`close` was called.
    #[getter]
    fn closed(&self) -> bool {
        self.lock().is_none()
    }

    /// The directory of the index.
    #[getter]
    fn path(&self) -> String {
        self.path.to_string_lossy().into_owned()
    }

    /// Whether the index was opened read-only.
    #[getter]
    fn read_only(&self) -> bool {
        self.read_only
    }

    /// ``None`` while the index may write; else the message of the I/O failure that made it
    /// refuse writes until it is reopened. A write that committed returns normally even if the
    /// upkeep after it (a flush, an automatic compaction) failed: that failure is kept here,
    /// and the next write raises :class:`IoError` with it as ``cause``.
    #[getter]
    fn write_failure(&self, py: Python<'_>) -> PyResult<Option<String>> {
        Ok(self.db(py)?.write_failure())
    }

    /// The stored parameters (scheme, num_perm, seed, shingle, nfkc, lowercase,
    /// collapse_whitespace, bits, bands, rows, threshold, bucket_cap) as a dictionary.
    #[getter]
    fn params<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let db = self.db(py)?;
        params_dict(py, db.params())
    }

    /// A :class:`MinHasher` with this index's signature parameters, and the key of a keyed
    /// index (raises :class:`SchemeMismatchError` for an index of datasketch signatures, and
    /// an error saying so for a keyed index opened without its key).
    #[getter]
    fn hasher(&self, py: Python<'_>) -> PyResult<crate::hasher::PyMinHasher> {
        let db = self.db(py)?;
        // The open database's signer: with a keyed index's key, as the index signs text.
        let inner = db.hasher().or_raise(py)?.clone();
        Ok(crate::hasher::PyMinHasher { inner })
    }

    /// Inserts (or replaces) one document, given by ``text`` or by a precomputed
    /// ``signature`` (a 1-D ``uint64`` array of ``num_perm`` slots, e.g. from
    /// :meth:`MinHasher.sketch` with the index's parameters). Durable when it returns.
    ///
    /// A text without shingles (empty, or white space only) is refused, as ``mhdb add``
    /// refuses it: it is similar to nothing, so no query could ever find it.
    ///
    /// Raises:
    ///     InvalidParameterError: neither or both of ``text`` and ``signature``, a text
    ///         without shingles (the error names the key), a key longer than the maximum, or
    ///         a signature of the wrong length.
    ///     TypeError: ``text`` is not a ``str``.
    ///     ReadOnlyError: the index is open read-only.
    #[pyo3(signature = (key, text = None, signature = None, *, set_size = None))]
    fn insert(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        text: Option<&Bound<'_, PyAny>>,
        signature: Option<&Bound<'_, PyAny>>,
        set_size: Option<u64>,
    ) -> PyResult<()> {
        let key = key_from_py(key)?;
        let doc = crate::convert::sized_doc_one_of(py, text, signature, set_size)?;
        let db = self.db(py)?;
        ingest::insert(py, &db, key, doc)
    }

    /// Inserts one document, given by ``text`` or ``signature``, unless a stored document is
    /// similar to it at ``threshold`` (the index's by default): "have I seen something like
    /// this before? If not, remember it", as one step. The check and the insert are one
    /// step for every thread writing this index, so two callers never both store
    /// near-duplicates of each other. Durable when it returns (and so are the documents a
    /// duplicate names).
    ///
    /// Returns:
    ///     the matches that made it a duplicate, best first, as :meth:`query` reports them
    ///     (nothing was stored); an empty list when it was stored.
    ///
    /// Raises:
    ///     as :meth:`insert`, and InvalidParameterError for a threshold outside [0, 1].
    #[pyo3(signature = (key, text = None, signature = None, *, threshold = None))]
    fn insert_if_novel<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
        text: Option<&Bound<'py, PyAny>>,
        signature: Option<&Bound<'py, PyAny>>,
        threshold: Option<f64>,
    ) -> PyResult<Bound<'py, PyList>> {
        let key = key_from_py(key)?;
        let doc = doc_one_of(py, text, signature)?;
        let db = self.db(py)?;
        let opts = NoveltyOptions {
            threshold,
            ..NoveltyOptions::default()
        };
        match ingest::insert_if_novel(py, &db, key, doc, &opts)? {
            Novelty::Inserted => Ok(PyList::empty(py)),
            Novelty::Duplicate(matches) => matches_to_py(py, &matches),
        }
    }

    /// Inserts (or replaces) many documents, streaming from any iterable in bounded memory.
    ///
    /// ``items`` is an iterable of ``(key, text)`` pairs (or ``(key, signature)`` pairs);
    /// or, with ``texts`` given, ``items`` is an iterable of keys and ``texts`` one of texts
    /// (or signatures), consumed in step (they must have the same length).
    ///
    /// Documents are read ``commit_every`` at a time; each batch is signed on every core and
    /// written as one atomic, durable commit without the GIL, while the next batch is read
    /// (so at most three batches are held at once). A batch of 1,024 documents or more is
    /// written straight to a new segment, as ``mhdb add`` does; a smaller one goes through
    /// the write-ahead log. After each commit, ``on_commit(n)`` (if given) is called with the
    /// number of documents committed so far: those are durable, whatever happens next.
    /// Batches are committed in order, each only after the ``on_commit`` of the one before
    /// returned. If an error interrupts the call (from the iterable, a bad document, a commit
    /// or ``on_commit``), the batches committed before it stay and nothing later is
    /// committed: the batch holding a bad document is not committed, not even the documents
    /// before it in that batch (``on_commit`` has reported exactly how many are durable).
    ///
    /// A text without shingles (empty, or white space only) is a bad document, refused as
    /// ``mhdb add`` refuses it: it is similar to nothing, so no query could ever find it.
    ///
    /// With ``novel_only=True``, a document is stored only when no stored document, nor an
    /// earlier document of the call, is similar to it at ``threshold`` (the index's by
    /// default), as :meth:`insert_if_novel` checks; each is checked and stored in turn, so a
    /// batch is durable when ``on_commit`` reports it, but a crash inside a batch may keep
    /// the documents before the crash.
    ///
    /// Returns:
    ///     the number of documents inserted; with ``novel_only=True``, the documents not
    ///     stored, in input order: ``(key, matches)``, the matches best first as
    ///     :meth:`query` reports them.
    ///
    /// Raises:
    ///     InvalidParameterError: a text without shingles or a signature of the wrong
    ///         length (named by its position in the input and its key: ``items[7] (key
    ///         "a")``, or ``texts[7] (key "a")`` with ``texts``), a key longer than the
    ///         maximum (named by its position).
    ///     TypeError: an item is not a ``(key, text)`` or ``(key, signature)`` tuple, a key
    ///         is not ``str`` or ``bytes``, or a value is neither a text (``str``) nor a
    ///         signature (named by position, and key when it was read).
    #[pyo3(signature = (
        items, texts = None, *, commit_every = 10_000, on_commit = None, novel_only = false,
        threshold = None
    ))]
    #[allow(clippy::too_many_arguments)] // Python's keyword arguments
    fn insert_many<'py>(
        &self,
        py: Python<'py>,
        items: &Bound<'py, PyAny>,
        texts: Option<&Bound<'py, PyAny>>,
        commit_every: usize,
        on_commit: Option<&Bound<'py, PyAny>>,
        novel_only: bool,
        threshold: Option<f64>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let novelty = load_options(py, commit_every, novel_only, threshold)?;
        let db = self.db(py)?;
        let mut source = Source::new(items, texts)?;
        let loaded = ingest::insert_many(py, &db, &mut source, commit_every, on_commit, novelty)?;
        load_result(py, novel_only, loaded)
    }

    /// Inserts (or replaces) the rows of an Arrow table or stream as documents: ``data`` is
    /// any object exporting the Arrow C stream interface (``__arrow_c_stream__``): a pyarrow
    /// ``Table`` or ``RecordBatchReader``, a Polars ``DataFrame``, a DuckDB result, or a
    /// pandas ``DataFrame`` through ``pyarrow.Table.from_pandas``.
    ///
    /// ``id`` names the key column and ``text`` the text column (or a dotted path into struct
    /// columns, ``"meta.url"``), read as ``mhdb add`` reads Parquet and Arrow files: a key
    /// column holds strings (``large_string`` and string views too), binary, or integers
    /// (the key is the decimal digits, so ``17`` is the key ``"17"``); a text column holds
    /// strings, or binary that is UTF-8; dictionary-encoded columns are read as their values.
    /// In an index of token lists (``shingle="tokens"``), ``tokens`` names a list column of
    /// strings or integers instead, read as ``mhdb add --tokens-field`` reads it: give
    /// exactly one of ``text`` and ``tokens``.
    /// ``keep`` names a column whose value each document keeps (integers, floats, strings;
    /// null is none), which ``dedup_table(keep="max:COLUMN")`` ranks by, as ``mhdb add
    /// --keep-field`` captures it: the first load with ``keep`` fixes the index's keep field
    /// and its type (the column's), before the index has segments.
    /// The columns are read in Rust, without a Python object per row and without the GIL.
    ///
    /// Rows are loaded exactly as :meth:`insert_many` loads its items: ``commit_every`` at a
    /// time, each batch signed on every core and committed atomically and durably, then
    /// ``on_commit(n)``; ``novel_only`` and ``threshold`` as there, and so is the result.
    ///
    /// Raises:
    ///     InvalidParameterError: neither or both of ``text`` and ``tokens``; a column is
    ///         missing or of a type that cannot be a key, a text or a token list
    ///         (``parameter`` is ``"data"``); a row with a null key or text, a text that
    ///         is not UTF-8 or has no shingles, or a key longer than the maximum, named by
    ///         its row (counted from 0) and column: ``row 7: column "text" is null``. As in
    ///         :meth:`insert_many`, the batch holding the bad row is not committed.
    ///     TypeError: ``data`` does not export an Arrow stream.
    ///     Error: the stream failed while it was read (the producer's message).
    #[pyo3(signature = (
        data, *, id, text = None, tokens = None, keep = None, commit_every = 10_000,
        on_commit = None, novel_only = false, threshold = None
    ))]
    #[allow(clippy::too_many_arguments)] // Python's keyword arguments
    fn insert_arrow<'py>(
        &self,
        py: Python<'py>,
        data: &Bound<'py, PyAny>,
        id: &str,
        text: Option<&str>,
        tokens: Option<&str>,
        keep: Option<&str>,
        commit_every: usize,
        on_commit: Option<&Bound<'py, PyAny>>,
        novel_only: bool,
        threshold: Option<f64>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let novelty = load_options(py, commit_every, novel_only, threshold)?;
        let names = crate::arrow::Names::new(py, id, text, tokens)?.keeping(keep);
        let opened = crate::arrow::open(py, data, &names)?;
        if let Some(field) = keep {
            self.fix_keep_column(py, field, opened.keep_type())?;
        }
        let db = self.db(py)?;
        let loaded = crate::arrow::insert_arrow(py, &db, opened, commit_every, on_commit, novelty)?;
        load_result(py, novel_only, loaded)
    }

    /// Deletes ``key``. Returns whether it was present.
    fn delete(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        let key = key_from_py(key)?;
        let db = self.db(py)?;
        py.detach(|| db.delete(&key)).or_raise(py)
    }

    /// The stored signature of ``key`` (``uint64`` array; each slot holds the low ``bits``
    /// bits of the full signature's slot), or ``None`` if the key is absent.
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

    /// The number of live documents.
    fn __len__(&self, py: Python<'_>) -> PyResult<usize> {
        let db = self.db(py)?;
        Ok(py.detach(|| db.len()) as usize)
    }

    /// Every live key, in no particular order.
    fn keys<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let db = self.db(py)?;
        let keys = py.detach(|| db.keys()).or_raise(py)?;
        PyList::new(py, keys.iter().map(|k| key_to_py(py, k)))
    }

    fn __iter__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        Ok(self.keys(py)?.try_iter()?.into_any())
    }

    /// Documents similar to ``text`` (or to a precomputed ``signature``), best first.
    ///
    /// Args:
    ///     threshold: minimum estimated Jaccard, in (0, 1] (default: the index's).
    ///     limit: keep only the best ``limit`` matches.
    ///     top: top-k instead: the ``top`` most similar documents without a threshold (down
    ///         to similarity 0.3, or to ``threshold`` when given), probing beyond the bands
    ///         when they cannot be trusted for ``top``. ``top`` and ``limit`` exclude each
    ///         other.
    ///
    /// In an index created with ``store_sets=True``, a query by text reports the exact
    /// Jaccard similarity (candidates near the threshold are re-ranked from the stored
    /// shingle sets); ``exact=False`` decides by the signature estimate alone.
    ///
    /// Returns:
    ///     a list of ``(key, jaccard)`` tuples, by decreasing similarity (ties by key).
    #[pyo3(signature = (text = None, signature = None, threshold = None, limit = None, exact = true, top = None, *, containment = None, recall = None, set_size = None))]
    // (Python's keyword arguments, one parameter each.)
    #[allow(clippy::too_many_arguments)]
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

    /// Inserts (or replaces) one document given as a token list, in an index created with
    /// ``shingle="tokens"`` or ``"tokens:N"``: ``tokens`` is an iterable of ``str`` and
    /// ``int`` tokens (or a 1-D ``int64`` numpy array), signed as
    /// :meth:`MinHasher.sketch_tokens` signs them with the index's parameters (a stored set
    /// too with ``store_sets=True``). Durable when it returns.
    ///
    /// Raises:
    ///     InvalidParameterError: an empty list (similar to nothing), or an index of texts
    ///         (the library's message); a key longer than the maximum.
    ///     TypeError: a token is neither ``str`` nor ``int``, or ``tokens`` is a ``str``.
    ///     ValueError: an ``int`` outside the signed 64-bit range.
    ///     ReadOnlyError: the index is open read-only.
    fn insert_tokens(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        tokens: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let key = key_from_py(key)?;
        let tokens = crate::tokens::tokens_from_py(tokens, "tokens")?;
        let doc = Doc::Tokens(crate::tokens::owned_tokens(&tokens));
        let db = self.db(py)?;
        ingest::insert(py, &db, key, doc)
    }

    /// Documents similar to a token list, in an index of token lists: ``tokens`` as
    /// :meth:`insert_tokens` takes it; ``threshold``, ``limit``, ``exact`` and ``top`` as in
    /// :meth:`query`, and so is the result.
    ///
    /// Raises:
    ///     InvalidParameterError: an index of texts (the library's message), or an option
    ///         refused as :meth:`query` refuses it.
    ///     TypeError, ValueError: a token as :meth:`insert_tokens` refuses it.
    #[pyo3(signature = (tokens, threshold = None, limit = None, exact = true, top = None, *, containment = None, recall = None))]
    #[allow(clippy::too_many_arguments)] // Python's keyword arguments
    fn query_tokens<'py>(
        &self,
        py: Python<'py>,
        tokens: &Bound<'py, PyAny>,
        threshold: Option<f64>,
        limit: Option<&Bound<'py, PyAny>>,
        exact: bool,
        top: Option<&Bound<'py, PyAny>>,
        containment: Option<f64>,
        recall: Option<f64>,
    ) -> PyResult<Bound<'py, PyList>> {
        let opts =
            reads::one_query_options(py, threshold, limit, exact, top, (containment, recall))?;
        let tokens = crate::tokens::tokens_from_py(tokens, "tokens")?;
        let db = self.db(py)?;
        let result = py
            .detach(|| db.query_tokens(&crate::tokens::as_tokens(&tokens), &opts))
            .or_raise(py)?;
        matches_to_py(py, &result.matches)
    }

    /// Answers many queries, streaming: returns an iterator that yields, for each input in
    /// order, the list :meth:`query` would return.
    ///
    /// Give ``texts`` (an iterable of ``str``) or ``signatures`` (an iterable of signatures,
    /// e.g. a 2-D ``uint64`` array). Inputs are read ``batch_size`` at a time and each batch
    /// is answered on every core with the GIL released. ``threshold``, ``limit`` and ``top``
    /// are those of :meth:`query`.
    #[pyo3(signature = (texts = None, signatures = None, threshold = None, limit = None, batch_size = 1024, top = None, *, containment = None, recall = None))]
    #[allow(clippy::too_many_arguments)]
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
        let opts = query_options(py, threshold, limit, top, (containment, recall))?;
        reads::query_many(py, &index, texts, signatures, opts, batch_size)
    }

    /// Near-duplicates inside the index, as an iterator.
    ///
    /// Args:
    ///     threshold: minimum estimated Jaccard (default: the index's).
    ///     format: ``"pairs"`` yields ``(key_a, key_b, jaccard)`` for each near-duplicate
    ///         pair (``key_a`` the older document); ``"clusters"`` yields lists of keys,
    ///         the document to keep first (each member is within the threshold of that
    ///         first document); ``"drop"`` yields the keys to drop to keep one document of
    ///         each cluster.
    ///
    /// The pass reads a snapshot (writers go on meanwhile) and runs with the GIL released;
    /// its results are computed when this is called and then iterated.
    #[pyo3(signature = (threshold = None, format = "pairs"))]
    fn dedup<'py>(
        &self,
        py: Python<'py>,
        threshold: Option<f64>,
        format: &str,
    ) -> PyResult<Bound<'py, PyAny>> {
        reads::dedup(py, &|| self.index(py), threshold, format)
    }

    /// The decision of ``mhdb dedup --apply --annotate`` for every stored document, as a
    /// ``pyarrow.Table`` (pyarrow must be installed): one row per document, sorted by id.
    ///
    /// Columns: ``id``; ``cluster``, the id of the kept document it attaches to (its own when
    /// kept); ``keep`` (bool); ``best_match``, its most similar kept neighbour (null when
    /// kept); ``similarity`` with it (float64, null when kept). ``id``, ``cluster`` and
    /// ``best_match`` are ``string`` when every stored key is valid UTF-8, else all three are
    /// ``binary``. ``threshold`` is :meth:`dedup`'s; ``keep`` is ``"first"`` or ``"last"``,
    /// as ``mhdb dedup --keep`` (else :class:`InvalidParameterError`, a ``ValueError``). A
    /// containment index drops each document that another, ahead of it in the ``keep`` order,
    /// holds at least ``threshold`` of, read again from ``documents`` (``(id, text)`` pairs,
    /// as inserted); another index takes none. The pass runs with the GIL released.
    #[pyo3(signature = (threshold = None, keep = "first", *, documents = None))]
    fn dedup_table<'py>(
        &self,
        py: Python<'py>,
        threshold: Option<f64>,
        keep: &str,
        documents: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        crate::dedup_table::dedup_table(py, self.db(py)?, threshold, keep, documents)
    }

    /// Makes every write before this call durable (writes through this API already are
    /// when they return; this exists for symmetry with the Rust API).
    fn commit(&self, py: Python<'_>) -> PyResult<()> {
        let db = self.db(py)?;
        py.detach(|| db.commit()).or_raise(py)
    }

    /// Writes the in-memory table to a segment.
    fn flush(&self, py: Python<'_>) -> PyResult<()> {
        let db = self.db(py)?;
        py.detach(|| db.flush()).or_raise(py)
    }

    /// Flushes, then merges every segment into one and drops deleted documents.
    fn compact(&self, py: Python<'_>) -> PyResult<()> {
        let db = self.db(py)?;
        py.detach(|| db.compact_full()).or_raise(py)
    }

    /// Counts, sizes and bucket distributions, as a dictionary (``live_docs``,
    /// ``deleted_docs``, ``memtable_docs``, ``segments``, ``bytes`` per file kind,
    /// ``bands``, ``hot_buckets``, ``expected_recall_at_threshold``, ``torn_tails``,
    /// ``params``).
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let db = self.db(py)?;
        let stats = py.detach(|| db.stats()).or_raise(py)?;
        stats_dict(py, &stats)
    }

    /// Checks every checksum and cross-file invariant of the committed files.
    ///
    /// Returns:
    ///     a dictionary: ``ok`` (bool), ``files_checked`` (int) and ``problems``, a list of
    ///     exceptions (mostly :class:`CorruptionError`, with ``path`` and ``offset``).
    ///     Use ``if not idx.verify()["ok"]: ...``; nothing is raised for damage found.
    fn verify<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        reads::verify(py, &|| self.index(py))
    }

    /// Writes the live documents as a new, fully compacted index in ``dest`` (which must
    /// not exist or be empty): a read-only copy to ship. Works on a read-only handle.
    fn export(&self, py: Python<'_>, dest: PathBuf) -> PyResult<()> {
        let db = self.db(py)?;
        py.detach(|| db.export(&dest)).or_raise(py)
    }

    /// Adds every live document of the indexes at ``sources`` (a path or an iterable of
    /// paths; same parameters, else :class:`ParameterMismatchError`). Keys present in
    /// several are taken from the last. Each source is merged atomically.
    ///
    /// Returns:
    ///     the number of documents added.
    fn merge(&self, py: Python<'_>, sources: &Bound<'_, PyAny>) -> PyResult<u64> {
        let paths: Vec<PathBuf> = match sources.extract::<PathBuf>() {
            Ok(p) if !sources.is_instance_of::<pyo3::types::PyList>() => vec![p],
            _ => sources
                .try_iter()?
                .map(|p| p.and_then(|p| p.extract::<PathBuf>()))
                .collect::<PyResult<_>>()?,
        };
        let db = self.db(py)?;
        py.detach(|| {
            mhdb::db::check_merge_sources(db.path(), &paths)?;
            let mut added = 0;
            for p in &paths {
                let src = Db::open_read_only(p)?;
                added += db.merge_from(&src)?;
            }
            Ok(added)
        })
        .or_raise(py)
    }

    /// Moves a read-only handle to the newest committed state (what a writer has committed
    /// since it opened or last refreshed). Does nothing on a writer's handle.
    fn refresh(&self, py: Python<'_>) -> PyResult<()> {
        let db = self.db(py)?;
        py.detach(|| db.refresh()).or_raise(py)
    }

    fn __repr__(&self) -> String {
        let state = if self.closed() {
            "closed"
        } else if self.read_only {
            "read-only"
        } else {
            "read-write"
        };
        format!("Index({:?}, {state})", self.path.to_string_lossy())
    }
}
