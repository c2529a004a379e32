//! The reads `mhdb.Index` and `mhdb.Shards` share, made through `mhdb::db::ReadIndex`: one
//! database or shards answer the same calls the same way, and each call's arguments are
//! checked once, here. Every call releases the GIL around the work.

use std::collections::VecDeque;
use std::sync::Arc;

use mhdb::db::{DedupOptions, DedupPair, Match, QueryOptions, QueryResult, ReadIndex};
use numpy::{IntoPyArray, PyArray1};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};
use rayon::prelude::*;

use crate::convert::{Doc, key_from_py, key_to_py, signature_from_py, text_from_py};
use crate::errors::{self, OrRaise, invalid};
use crate::index::{matches_to_py, query_options};
use crate::ingest::located;

/// The index a call reads, or the error its handle raises (closed): asked for once the
/// call's arguments are checked, so that a bad argument is reported first.
pub type Opened<'a> = &'a dyn Fn() -> PyResult<Arc<dyn ReadIndex>>;

/// `query(text=, signature=, ...)` with its options `opts` ([`one_query_options`]): the
/// arguments are checked before the handle is asked for its index.
pub fn query<'py>(
    py: Python<'py>,
    index: Opened<'_>,
    (text, signature, set_size): (
        Option<&Bound<'py, PyAny>>,
        Option<&Bound<'py, PyAny>>,
        Option<u64>,
    ),
    opts: &QueryOptions,
) -> PyResult<Bound<'py, PyList>> {
    let doc = crate::convert::sized_doc_one_of(py, text, signature, set_size)?;
    let index = index()?;
    let result = py.detach(|| query_doc(&*index, &doc, opts)).or_raise(py)?;
    matches_to_py(py, &result.matches)
}

/// The options of one query (`query`, `query_tokens`): those `query_options` reads, and
/// `exact=False` deciding by the signature estimate alone.
pub fn one_query_options(
    py: Python<'_>,
    threshold: Option<f64>,
    limit: Option<&Bound<'_, PyAny>>,
    exact: bool,
    top: Option<&Bound<'_, PyAny>>,
    containment: (Option<f64>, Option<f64>),
) -> PyResult<QueryOptions> {
    Ok(QueryOptions {
        estimate_only: !exact,
        ..query_options(py, threshold, limit, top, containment)?
    })
}

/// Documents similar to one query document: a text or a given signature. Token-list queries
/// go to a database (`Index.query_tokens`), not through here; one is refused rather than
/// answered wrongly.
fn query_doc(index: &dyn ReadIndex, doc: &Doc, opts: &QueryOptions) -> mhdb::Result<QueryResult> {
    match doc {
        Doc::Text(t) => index.query_text(t, opts),
        Doc::Signature(s) => index.query(s, opts),
        Doc::Tokens(_) => Err(mhdb::Error::invalid(
            "tokens",
            "a token list is queried with `Index.query_tokens`",
        )),
    }
}

/// `query_many(texts=, signatures=, batch_size=, ...)` with its options `opts`
/// (`index::query_options`).
pub fn query_many(
    py: Python<'_>,
    index: Opened<'_>,
    texts: Option<&Bound<'_, PyAny>>,
    signatures: Option<&Bound<'_, PyAny>>,
    opts: QueryOptions,
    batch_size: usize,
) -> PyResult<QueryIterator> {
    let (source, by_text) = match (texts, signatures) {
        (Some(t), None) => (t.try_iter()?, true),
        (None, Some(s)) => (s.try_iter()?, false),
        _ => {
            return Err(invalid(
                py,
                "texts",
                "give exactly one of texts= and signatures=",
            ));
        }
    };
    Ok(QueryIterator {
        index: index()?,
        source: Some(source.unbind()),
        by_text,
        opts,
        batch_size: batch_size.max(1),
        read: 0,
        ready: VecDeque::new(),
    })
}

/// `get(key)`: the stored signature's slots, or `None`.
pub fn get<'py>(
    py: Python<'py>,
    index: Opened<'_>,
    key: &Bound<'py, PyAny>,
) -> PyResult<Option<Bound<'py, PyArray1<u64>>>> {
    let key = key_from_py(key)?;
    let index = index()?;
    let stored = py
        .detach(|| {
            index
                .get(&key)
                .and_then(|s| s.map(|s| s.slots()).transpose())
        })
        .or_raise(py)?;
    Ok(stored.map(|slots| slots.into_pyarray(py)))
}

/// `key in index`: a value that is not a key is in no index.
pub fn contains(py: Python<'_>, index: Opened<'_>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
    let Ok(key) = key_from_py(key) else {
        return Ok(false);
    };
    let index = index()?;
    py.detach(|| index.contains(&key)).or_raise(py)
}

/// `dedup(threshold=, format=)`: computed now, without the GIL, then iterated.
pub fn dedup<'py>(
    py: Python<'py>,
    index: Opened<'_>,
    threshold: Option<f64>,
    format: &str,
) -> PyResult<Bound<'py, PyAny>> {
    let index = index()?;
    let index = index.as_ref();
    let t = crate::convert::threshold(py, threshold)?.unwrap_or(index.params().threshold);
    let items: Vec<Bound<'py, PyAny>> = match format {
        "pairs" => {
            let pairs = py.detach(|| dedup_pairs(index, t)).or_raise(py)?;
            pairs
                .iter()
                .map(|p| pair_to_py(py, p))
                .collect::<PyResult<_>>()?
        }
        "clusters" | "drop" => {
            let clusters = py.detach(|| dedup_clusters(index, t)).or_raise(py)?;
            if format == "clusters" {
                clusters
                    .iter()
                    .map(|c| Ok(PyList::new(py, c.iter().map(|k| key_to_py(py, k)))?.into_any()))
                    .collect::<PyResult<_>>()?
            } else {
                clusters
                    .iter()
                    .flat_map(|c| c.iter().skip(1))
                    .map(|k| key_to_py(py, k))
                    .collect()
            }
        }
        other => {
            return Err(invalid(
                py,
                "format",
                format!("{other:?} is not one of \"pairs\", \"clusters\", \"drop\""),
            ));
        }
    };
    Ok(PyList::new(py, items)?.try_iter()?.into_any())
}

fn dedup_pairs(index: &dyn ReadIndex, t: f64) -> mhdb::Result<Vec<DedupPair>> {
    let mut pairs = Vec::new();
    index.dedup_pairs_with_options(
        t,
        DedupOptions::default(),
        &mut |p| {
            pairs.push(p);
            Ok(())
        },
        &mut |_, _| {},
    )?;
    Ok(pairs)
}

fn dedup_clusters(index: &dyn ReadIndex, t: f64) -> mhdb::Result<Vec<Vec<Vec<u8>>>> {
    let mut clusters = Vec::new();
    index.for_each_dedup_cluster_with_options(t, DedupOptions::default(), &mut |c| {
        clusters.push(c);
        Ok(())
    })?;
    Ok(clusters)
}

/// `(a, b, jaccard)`, or a SimHash index's `(a, b, distance, cosine)`.
fn pair_to_py<'py>(py: Python<'py>, p: &DedupPair) -> PyResult<Bound<'py, PyAny>> {
    let mut items = vec![key_to_py(py, &p.a), key_to_py(py, &p.b)];
    if let Some(d) = p.distance {
        items.push(d.into_pyobject(py)?.into_any());
    }
    items.push(p.similarity.into_pyobject(py)?.into_any());
    Ok(PyTuple::new(py, items)?.into_any())
}

/// `verify()`: `{"ok", "files_checked", "problems"}`, the problems as exceptions (damage is
/// reported, not raised).
pub fn verify<'py>(py: Python<'py>, index: Opened<'_>) -> PyResult<Bound<'py, PyDict>> {
    let index = index()?;
    let report = py.detach(|| index.verify()).or_raise(py)?;
    let d = PyDict::new(py);
    d.set_item("ok", report.is_ok())?;
    d.set_item("files_checked", report.files_checked)?;
    let problems = PyList::empty(py);
    for p in report.problems {
        problems.append(errors::to_py(py, p).into_value(py))?;
    }
    d.set_item("problems", problems)?;
    Ok(d)
}

/// The iterator :meth:`Index.query_many` returns: yields one list of ``(key, jaccard)``
/// per input, in input order.
#[pyclass(module = "mhdb", name = "QueryIterator")]
pub struct QueryIterator {
    index: Arc<dyn ReadIndex>,
    source: Option<Py<pyo3::types::PyIterator>>,
    by_text: bool,
    opts: QueryOptions,
    batch_size: usize,
    /// How many inputs were read: the position of the next one.
    read: usize,
    ready: VecDeque<Vec<Match>>,
}

#[pymethods]
impl QueryIterator {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__<'py>(&mut self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyList>>> {
        if self.ready.is_empty() {
            self.fill(py)?;
        }
        match self.ready.pop_front() {
            Some(m) => Ok(Some(matches_to_py(py, &m)?)),
            None => Ok(None),
        }
    }
}

impl QueryIterator {
    /// Reads the next batch of inputs and answers it on every core, without the GIL.
    fn fill(&mut self, py: Python<'_>) -> PyResult<()> {
        let Some(source) = &self.source else {
            return Ok(());
        };
        let mut source = source.bind(py).clone();
        let mut docs = Vec::with_capacity(self.batch_size);
        while docs.len() < self.batch_size {
            match source.next() {
                Some(item) => {
                    let item = item?;
                    let at = self.read;
                    docs.push(if self.by_text {
                        Doc::Text(text_from_py(&item, &format!("texts[{at}]"))?)
                    } else {
                        Doc::Signature(
                            signature_from_py(&item)
                                .map_err(|e| located(py, e, format!("signatures[{at}]")))?,
                        )
                    });
                    self.read += 1;
                }
                None => {
                    self.source = None;
                    break;
                }
            }
        }
        let index = &self.index;
        let opts = self.opts;
        let results = py
            .detach(|| {
                docs.par_iter()
                    .map(|d| query_doc(&**index, d, &opts))
                    .collect::<mhdb::Result<Vec<_>>>()
            })
            .or_raise(py)?;
        self.ready.extend(results.into_iter().map(|r| r.matches));
        Ok(())
    }
}
