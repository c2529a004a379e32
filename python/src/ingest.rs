//! Documents coming in from Python: read a batch at a time from any iterable, signed on every
//! core and committed without the GIL; `Index.insert_many` commits one batch on a worker
//! thread while it reads the next.

use std::sync::mpsc::sync_channel;
use std::thread::ScopedJoinHandle;

use mhdb::db::{Db, MAX_KEY_LEN, WriteBatch};
use mhdb::sketch::Signature;
use numpy::PyUntypedArray;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedStr;
use pyo3::types::{PyIterator, PySequence, PyString, PyTuple};
use rayon::prelude::*;

use crate::convert::{key_from_py, signature_from_py, text_from_py};
use crate::errors::{OrRaise, invalid};

/// A batch of at least this many documents is committed as a bulk insert: written straight
/// to a new segment and the signature log (as `mhdb add` does), with no WAL record to encode,
/// write and replay and no in-memory table to build. Below it the WAL is cheaper than a
/// segment per commit.
pub const BULK_MIN: usize = 1024;

/// What one document is given with.
pub enum Doc {
    Text(PyBackedStr),
    Sig(Signature),
}

impl Doc {
    /// The document of `text=` or `signature=` (exactly one must be given).
    pub fn one_of(
        py: Python<'_>,
        text: Option<&Bound<'_, PyAny>>,
        signature: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Doc> {
        match (text, signature) {
            (Some(t), None) => Ok(Doc::Text(text_from_py(t, "text")?)),
            (None, Some(s)) => Ok(Doc::Sig(signature_from_py(s)?)),
            _ => Err(invalid(
                py,
                "text",
                "give exactly one of text= and signature=",
            )),
        }
    }

    /// A `str` is a text, an array or a sequence a signature; anything else is neither (and
    /// the error says both were possible).
    pub fn from_py(value: &Bound<'_, PyAny>) -> PyResult<Doc> {
        if value.is_instance_of::<PyString>() {
            return Ok(Doc::Text(value.extract()?));
        }
        if value.cast::<PyUntypedArray>().is_err() && value.cast::<PySequence>().is_err() {
            return Err(PyTypeError::new_err(format!(
                "expected a text (str) or a signature (a 1-D numpy uint64/uint32 array or a \
                 sequence of non-negative ints), not {}",
                value.get_type().name()?
            )));
        }
        Ok(Doc::Sig(signature_from_py(value)?))
    }

    /// The signature: computed for a text, copied for a given one.
    fn signature(&self, db: &Db) -> mhdb::Result<Signature> {
        match self {
            Doc::Text(text) => db.sketch_text(text),
            Doc::Sig(sig) => Ok(sig.clone()),
        }
    }
}

/// Keyed documents. The texts are Python objects: a batch is dropped where the GIL is held
/// (a worker hands its batch back), not on a thread without it.
pub type Docs = Vec<(Vec<u8>, Doc)>;

/// Where documents come from, for the error that refuses one of them.
#[derive(Clone, Copy)]
pub enum Origin {
    /// `insert(key, text)`.
    Insert,
    /// `insert_many`: the input named `param` (`items`, or `texts` beside keys), the batch's
    /// first document at position `first` in it.
    Many { param: &'static str, first: usize },
}

/// Signs `docs` (on every core when there are several: for one document, handing it to the
/// thread pool would cost more than it saves). A text without shingles is refused, as
/// `mhdb add` refuses it and by the same rule ([`mhdb::db::IndexParams::has_no_shingles`]): it
/// could never be found. The error names the first such document by key (and position).
fn sign<'a>(db: &Db, docs: &'a Docs, origin: Origin) -> mhdb::Result<Vec<(&'a [u8], Signature)>> {
    // A given signature of the wrong shape is named by its position (the commit would refuse
    // it too, but only as one of the batch).
    for (i, (key, doc)) in docs.iter().enumerate() {
        if let Doc::Sig(sig) = doc
            && let Err(e) = db.check_signature(sig)
        {
            return Err(match e {
                mhdb::Error::InvalidParameter { name, reason } => mhdb::Error::invalid(
                    name,
                    format!("{}: {reason}", place(key, origin, i, "signature").1),
                ),
                e => e,
            });
        }
    }
    let one = |(key, doc): &'a (Vec<u8>, Doc)| Ok((key.as_slice(), doc.signature(db)?));
    let signed: Vec<_> = if docs.len() > 1 {
        docs.par_iter().map(one).collect::<mhdb::Result<_>>()?
    } else {
        docs.iter().map(one).collect::<mhdb::Result<_>>()?
    };
    let shingleless = docs.iter().zip(&signed).position(|((_, doc), (_, sig))| {
        matches!(doc, Doc::Text(_)) && db.params().has_no_shingles(sig)
    });
    match shingleless {
        Some(i) => Err(no_shingles(docs[i].0.as_slice(), origin, i)),
        None => Ok(signed),
    }
}

/// The error for the `i`-th of a batch's documents, a text without shingles with `key`; the
/// words are those of `mhdb add`.
fn no_shingles(key: &[u8], origin: Origin, i: usize) -> mhdb::Error {
    let (param, doc) = place(key, origin, i, "text");
    mhdb::Error::invalid(
        param,
        format!(
            "{doc}: the text has no shingles (it is empty or white space only); such a text is \
             similar to nothing, so it is not stored"
        ),
    )
}

/// The parameter that held a batch's `i`-th document with `key`, and the document named by
/// its position and key (`items[7] (key "a")`; for `insert`, `single` names the parameter).
fn place(key: &[u8], origin: Origin, i: usize, single: &'static str) -> (&'static str, String) {
    let key = String::from_utf8_lossy(key);
    match origin {
        Origin::Insert => (single, format!("key {key:?}")),
        Origin::Many { param, first } => (param, format!("{param}[{}] (key {key:?})", first + i)),
    }
}

/// Commits signed documents atomically and durably.
fn write(db: &Db, signed: Vec<(&[u8], Signature)>) -> mhdb::Result<()> {
    if signed.len() >= BULK_MIN {
        db.bulk_insert(&signed)
    } else {
        let mut batch = WriteBatch::new();
        for (key, sig) in signed {
            batch.insert(key, sig);
        }
        db.write(&batch)
    }
}

/// Signs `docs` and commits them atomically and durably.
pub fn commit(db: &Db, docs: &Docs, origin: Origin) -> mhdb::Result<()> {
    write(db, sign(db, docs, origin)?)
}

/// The documents of `insert_many`: `(key, value)` pairs from one iterable, or keys and values
/// from two consumed in step.
pub struct Source<'py> {
    items: Bound<'py, PyIterator>,
    values: Option<Bound<'py, PyIterator>>,
    exhausted: bool,
    /// How many documents were read: the position of the next one.
    read: usize,
}

impl<'py> Source<'py> {
    pub fn new(items: &Bound<'py, PyAny>, values: Option<&Bound<'py, PyAny>>) -> PyResult<Self> {
        Ok(Source {
            items: items.try_iter()?,
            values: values.map(|v| v.try_iter()).transpose()?,
            exhausted: false,
            read: 0,
        })
    }

    /// Where the documents of the batch just read (`n` of them) come from.
    pub fn origin(&self, n: usize) -> Origin {
        Origin::Many {
            param: self.values_param(),
            first: self.read - n,
        }
    }

    /// The name of the input the texts (or signatures) come from.
    fn values_param(&self) -> &'static str {
        if self.values.is_some() {
            "texts"
        } else {
            "items"
        }
    }

    /// Up to `n` documents; fewer only at the end (and none after it: the iterables are not
    /// asked again once one has ended).
    pub fn next_batch(&mut self, py: Python<'py>, n: usize) -> PyResult<Docs> {
        let mut docs = Vec::with_capacity(n.min(1 << 16));
        while docs.len() < n && !self.exhausted {
            let next_key = self.items.next().transpose()?;
            let (key, value) = match (&mut self.values, next_key) {
                (Some(values), key) => match (key, values.next().transpose()?) {
                    (Some(k), Some(v)) => (k, v),
                    (None, None) => {
                        self.exhausted = true;
                        break;
                    }
                    _ => {
                        return Err(invalid(
                            py,
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
                    (pair.get_item(0)?, pair.get_item(1)?)
                }
                (None, None) => {
                    self.exhausted = true;
                    break;
                }
            };
            let at = self.read;
            let key = key_from_py(&key).map_err(|e| located(py, e, format!("items[{at}]")))?;
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
            let doc = Doc::from_py(&value).map_err(|e| {
                let key = String::from_utf8_lossy(&key);
                located(
                    py,
                    e,
                    format!("{}[{at}] (key {key:?})", self.values_param()),
                )
            })?;
            docs.push((key, doc));
            self.read += 1;
        }
        Ok(docs)
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

/// What a batch's worker hands back: the batch (to be dropped where the GIL is held) and the
/// outcome of its commit, `None` if it was called off because the batch before failed.
type Settled = (Docs, Option<mhdb::Result<()>>);

/// `insert_many`: reads `commit_every` documents at a time from `source` and hands each batch
/// to a worker thread, which signs it on every core at once and commits it when told to: once
/// the batch before is committed and acknowledged (`on_commit(total)` returned). So three
/// things overlap: converting a batch's Python objects (which needs the GIL, on one core),
/// signing the batch before, and writing the one before that (mostly waiting for the disk),
/// while commits and their acknowledgements keep the input order. After an error nothing
/// later is committed. Returns the number of documents committed.
pub fn insert_many<'py>(
    py: Python<'py>,
    db: &Db,
    source: &mut Source<'py>,
    commit_every: usize,
    on_commit: Option<&Bound<'_, PyAny>>,
) -> PyResult<u64> {
    std::thread::scope(|scope| {
        let mut total = 0u64;
        // The newest batch handed out, already told to commit.
        let mut newest: Option<ScopedJoinHandle<'_, Settled>> = None;
        loop {
            let docs = match source.next_batch(py, commit_every) {
                Ok(docs) if !docs.is_empty() => docs,
                end_or_error => {
                    // The batch before was read whole: it is committed whatever this is.
                    if let Some(before) = newest.take() {
                        settle(py, before, &mut total, on_commit)?;
                    }
                    return end_or_error.map(|_| total);
                }
            };
            let origin = source.origin(docs.len());
            let (go, wait) = sync_channel::<()>(1);
            let worker = scope.spawn(move || {
                let signed = sign(db, &docs, origin);
                // `go` is dropped unsent if the batch before failed.
                let committed = wait.recv().ok().map(|()| signed.and_then(|s| write(db, s)));
                (docs, committed)
            });
            if let Some(before) = newest.take()
                && let Err(e) = settle(py, before, &mut total, on_commit)
            {
                drop(go);
                drop(join(py, worker));
                return Err(e);
            }
            // The worker may have returned already (a signing error): then nobody listens.
            let _ = go.send(());
            newest = Some(worker);
        }
    })
}

/// Waits for a worker without the GIL and takes back what it hands back.
fn join(py: Python<'_>, worker: ScopedJoinHandle<'_, Settled>) -> Settled {
    py.detach(|| worker.join())
        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
}

/// Waits for a batch's commit; then counts it and acknowledges it with `on_commit(total)`.
fn settle(
    py: Python<'_>,
    worker: ScopedJoinHandle<'_, Settled>,
    total: &mut u64,
    on_commit: Option<&Bound<'_, PyAny>>,
) -> PyResult<()> {
    let (docs, committed) = join(py, worker);
    let n = docs.len() as u64;
    drop(docs);
    match committed {
        Some(result) => result.or_raise(py)?,
        None => return Ok(()),
    }
    *total += n;
    if let Some(callback) = on_commit {
        callback.call1((*total,))?;
    }
    Ok(())
}
