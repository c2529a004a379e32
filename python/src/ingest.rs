//! Documents coming in from Python: any iterable read into the library's ingest records
//! (`mhdb::db::ingest`), which signs them on every core and commits them without the GIL;
//! and the library's refusals worded with the documents' positions.

use mhdb::db::ingest::{self, Fault, Ingest, Mode, Record, Rejected, Stop};
use mhdb::db::{Db, MAX_KEY_LEN, Match, Novelty, NoveltyOptions};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedStr;
use pyo3::types::{PyIterator, PyTuple};

use crate::convert::{Doc, doc_from_py, key_from_py};
use crate::errors::{invalid, to_py};

/// Where a document comes from, for the error that refuses it.
#[derive(Clone, Copy, Debug)]
pub enum Origin {
    /// `insert(key, text)`.
    Insert,
    /// `insert_many`: position `at` of the input named `param` (`items`, or `texts` beside
    /// keys).
    Many { param: &'static str, at: usize },
    /// `insert_arrow`: row `at` of the data, counted from 0 as dataframes index rows.
    Row { at: u64 },
}

/// A document as the binding hands it to the library.
type PyRecord = Record<PyBackedStr, Origin>;

/// Signs one document and commits it atomically and durably, without the GIL. The record is
/// dropped here, where the GIL is held.
pub fn insert(py: Python<'_>, db: &Db, key: Vec<u8>, doc: Doc) -> PyResult<()> {
    let records = [Record {
        key,
        content: doc,
        keep: None,
        origin: Origin::Insert,
    }];
    py.detach(|| ingest::commit_batch::<PyErr, _, _>(db, &records))
        .map_err(|stop| stopped(py, stop))
}

/// Signs one document and stores it unless a stored document is similar
/// ([`Db::insert_many_if_novel`]), durably, without the GIL.
pub fn insert_if_novel(
    py: Python<'_>,
    db: &Db,
    key: Vec<u8>,
    doc: Doc,
    opts: &NoveltyOptions,
) -> PyResult<Novelty> {
    let records = [Record {
        key,
        content: doc,
        keep: None,
        origin: Origin::Insert,
    }];
    let outcomes = py
        .detach(|| ingest::commit_batch_if_novel::<PyErr, _, _>(db, &records, opts))
        .map_err(|stop| stopped(py, stop))?;
    outcomes
        .into_iter()
        .next()
        .ok_or_else(|| invalid(py, "key", "one document gave no outcome"))
}

/// The documents `insert_many(novel_only=True)` did not store, with their matches, in input
/// order.
pub type NearDuplicates = Vec<(Vec<u8>, Vec<Match>)>;

/// `insert_many`: reads `commit_every` documents at a time from `source` and hands each batch
/// to the library's pipeline in its batch-atomic mode: while the next batch's Python objects
/// are read (with the GIL, on one core), the batch before is signed on every core and the one
/// before that committed, each commit only once `on_commit(total)` acknowledged the batch
/// before. After an error nothing later is committed. Returns the number of documents
/// committed.
pub fn insert_many(
    py: Python<'_>,
    db: &Db,
    source: &mut Source<'_>,
    commit_every: usize,
    on_commit: Option<&Bound<'_, PyAny>>,
    novelty: Option<NoveltyOptions>,
) -> PyResult<(u64, NearDuplicates)> {
    let identity = |record: PyRecord| Ok(record);
    load(py, db, source, &identity, commit_every, on_commit, novelty)
}

/// [`insert_many`] from any source, its items made records by `parse` (on any core): the
/// batch-atomic load that `insert_many` and `insert_arrow` share.
pub fn load<S, P, T>(
    py: Python<'_>,
    db: &Db,
    source: &mut S,
    parse: &P,
    commit_every: usize,
    on_commit: Option<&Bound<'_, PyAny>>,
    novelty: Option<NoveltyOptions>,
) -> PyResult<(u64, NearDuplicates)>
where
    S: ingest::Source<Error = PyErr>,
    P: Fn(S::Item) -> Result<Record<T, Origin>, Rejected<Origin>> + Sync,
    T: AsRef<str> + Send,
{
    let mut ingest = Ingest::new(db, Mode::Atomic { commit_every });
    if let Some(opts) = novelty {
        ingest = ingest.novel_only(opts);
    }
    let mut sink = OnCommit {
        callback: on_commit,
        near_duplicates: Vec::new(),
    };
    ingest
        .run(source, parse, &mut sink)
        .map_err(|stop| stopped(py, stop))?;
    Ok((ingest.counts().committed, sink.near_duplicates))
}

/// The Python exception for why a load stopped.
fn stopped(py: Python<'_>, stop: Stop<PyErr, Origin>) -> PyErr {
    match stop {
        Stop::Caller(e) => e,
        Stop::Db(e) => to_py(py, e),
        // No acknowledgement hook is set: `on_commit` is the sink's, called with the GIL.
        Stop::Acknowledge(e) => PyErr::from(e),
        Stop::Rejected(rejected) => to_py(py, refusal(rejected)),
    }
}

/// A refused document's error, naming it by position and key (`items[7] (key "a")`; for
/// `insert`, the parameter and the key); the words are those of `mhdb add`.
fn refusal(rejected: Rejected<Origin>) -> mhdb::Error {
    let key = String::from_utf8_lossy(rejected.key.as_deref().unwrap_or_default()).into_owned();
    let (param, doc) = match rejected.origin {
        Origin::Insert => (None, format!("key {key:?}")),
        Origin::Many { param, at } => (Some(param), format!("{param}[{at}] (key {key:?})")),
        // A row whose values could not be read has no key to name.
        Origin::Row { at } if rejected.key.is_none() => (Some("data"), format!("row {at}")),
        Origin::Row { at } => (Some("data"), format!("row {at} (key {key:?})")),
    };
    match rejected.fault {
        Fault::Signature(mhdb::Error::InvalidParameter { name, reason }) => {
            mhdb::Error::invalid(name, format!("{doc}: {reason}"))
        }
        Fault::Signature(e) => e,
        fault => mhdb::Error::invalid(param.unwrap_or("text"), format!("{doc}: {fault}")),
    }
}

/// Tells `on_commit(total)` of each durable batch, and keeps the near duplicates skipped.
struct OnCommit<'a, 'py> {
    callback: Option<&'a Bound<'py, PyAny>>,
    near_duplicates: NearDuplicates,
}

impl ingest::Sink<Origin> for OnCommit<'_, '_> {
    type Error = PyErr;

    fn committed(&mut self, total: u64, _last_key: &[u8]) -> PyResult<()> {
        if let Some(callback) = self.callback {
            callback.call1((total,))?;
        }
        Ok(())
    }

    fn near_duplicate(&mut self, key: &[u8], matches: &[Match]) -> PyResult<()> {
        self.near_duplicates.push((key.to_vec(), matches.to_vec()));
        Ok(())
    }
}

/// The documents of `insert_many`: `(key, value)` pairs from one iterable, or keys and values
/// from two consumed in step.
pub struct Source<'py> {
    py: Python<'py>,
    items: Bound<'py, PyIterator>,
    values: Option<Bound<'py, PyIterator>>,
    exhausted: bool,
    /// How many documents were read: the position of the next one.
    read: usize,
}

impl<'py> Source<'py> {
    pub fn new(items: &Bound<'py, PyAny>, values: Option<&Bound<'py, PyAny>>) -> PyResult<Self> {
        Ok(Source {
            py: items.py(),
            items: items.try_iter()?,
            values: values.map(|v| v.try_iter()).transpose()?,
            exhausted: false,
            read: 0,
        })
    }

    /// The name of the input the texts (or signatures) come from.
    fn values_param(&self) -> &'static str {
        if self.values.is_some() {
            "texts"
        } else {
            "items"
        }
    }

    /// The next (key, value) pair, or `None` at the end (and after it: the iterables are not
    /// asked again once one has ended).
    fn next_pair(&mut self) -> PyResult<Option<(Bound<'py, PyAny>, Bound<'py, PyAny>)>> {
        if self.exhausted {
            return Ok(None);
        }
        let next_key = self.items.next().transpose()?;
        let pair = match (&mut self.values, next_key) {
            (Some(values), key) => match (key, values.next().transpose()?) {
                (Some(k), Some(v)) => Some((k, v)),
                (None, None) => None,
                _ => {
                    return Err(invalid(
                        self.py,
                        "texts",
                        "the keys and the texts have different lengths",
                    ));
                }
            },
            (None, Some(item)) => {
                let pair = item.cast::<PyTuple>().ok().filter(|t| t.len() == 2);
                let Some(pair) = pair else {
                    return Err(PyTypeError::new_err(format!(
                        "items[{}]: expected a (key, text) or (key, signature) tuple, not {}",
                        self.read,
                        describe(&item)?
                    )));
                };
                Some((pair.get_item(0)?, pair.get_item(1)?))
            }
            (None, None) => None,
        };
        self.exhausted = pair.is_none();
        Ok(pair)
    }

    /// The document of a (key, value) pair read at position `at`.
    fn record(
        &self,
        at: usize,
        key: &Bound<'py, PyAny>,
        value: &Bound<'py, PyAny>,
    ) -> PyResult<PyRecord> {
        let py = self.py;
        let key = key_from_py(key).map_err(|e| located(py, e, format!("items[{at}]")))?;
        // Checked here, where its position is known; the commit would refuse it too, but
        // only as one of a batch.
        if key.len() > MAX_KEY_LEN {
            return Err(invalid(
                py,
                "key",
                format!(
                    "items[{at}]: is {} bytes long, at most {MAX_KEY_LEN} allowed",
                    key.len()
                ),
            ));
        }
        let param = self.values_param();
        let content = doc_from_py(value).map_err(|e| {
            let key = String::from_utf8_lossy(&key);
            located(py, e, format!("{param}[{at}] (key {key:?})"))
        })?;
        Ok(Record {
            key,
            content,
            keep: None,
            origin: Origin::Many { param, at },
        })
    }
}

impl ingest::Source for Source<'_> {
    type Item = PyRecord;
    type Error = PyErr;

    /// Up to `max` documents; fewer only at the end.
    fn next_chunk(&mut self, max: usize) -> PyResult<Vec<PyRecord>> {
        let mut records = Vec::with_capacity(max.min(1 << 16));
        while records.len() < max {
            let Some((key, value)) = self.next_pair()? else {
                break;
            };
            records.push(self.record(self.read, &key, &value)?);
            self.read += 1;
        }
        Ok(records)
    }

    /// Waits without the GIL, so that other Python threads run meanwhile.
    fn wait<R: Send>(&mut self, job: impl FnOnce() -> R + Send) -> R {
        self.py.detach(job)
    }
}

/// A value's type for an error, with its length for a tuple (`tuple of 3`).
fn describe(value: &Bound<'_, PyAny>) -> PyResult<String> {
    let name = value.get_type().name()?;
    Ok(match value.cast::<PyTuple>() {
        Ok(t) => format!("{name} of {}", t.len()),
        Err(_) => name.to_string(),
    })
}

/// A `TypeError` about one input, prefixed with where it is (`items[3] (key "a")`); other
/// errors are passed on as they are.
pub fn located(py: Python<'_>, e: PyErr, place: String) -> PyErr {
    if !e.is_instance_of::<PyTypeError>(py) {
        return e;
    }
    let err = PyTypeError::new_err(format!("{place}: {}", e.value(py)));
    err.set_cause(py, Some(e));
    err
}
