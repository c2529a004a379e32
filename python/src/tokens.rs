//! Token lists and precomputed element hashes from Python, for `MinHasher.sketch_tokens`,
//! `sketch_hashes` and their batch forms (`format/hashing.md` §15): the Python objects read
//! with the GIL, the signing done without it, a batch on every core.

use mhdb::sketch::{MinHasher, OwnedToken, Signature, Token};
use numpy::ndarray::Array2;
use numpy::{IntoPyArray, PyArray2, PyReadonlyArray1};
use pyo3::exceptions::{PyOverflowError, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedStr;
use pyo3::types::{PyBool, PyBytes, PyString};
use rayon::prelude::*;

use crate::errors::to_py;

/// A token as read from Python: a `str` (kept as Python's UTF-8) or an `int`.
pub enum PyToken {
    Str(PyBackedStr),
    Int(i64),
}

/// The tokens of one list, as the core hashes them.
pub fn as_tokens(tokens: &[PyToken]) -> Vec<Token<'_>> {
    tokens
        .iter()
        .map(|t| match t {
            PyToken::Str(s) => Token::Str(s),
            PyToken::Int(v) => Token::Int(*v),
        })
        .collect()
}

/// The tokens of one list, owned, as a document of the ingest pipeline holds them.
pub fn owned_tokens(tokens: &[PyToken]) -> Vec<OwnedToken> {
    tokens
        .iter()
        .map(|t| match t {
            PyToken::Str(s) => OwnedToken::Str(s.to_string()),
            PyToken::Int(v) => OwnedToken::Int(*v),
        })
        .collect()
}

/// Reads a token list: any iterable of `str` and `int` (a 1-D `int64` numpy array directly).
/// `place` names the list in errors (`tokens`, `token_lists[3]`).
pub fn tokens_from_py(tokens: &Bound<'_, PyAny>, place: &str) -> PyResult<Vec<PyToken>> {
    if tokens.is_instance_of::<PyString>() || tokens.is_instance_of::<PyBytes>() {
        return Err(PyTypeError::new_err(format!(
            "{place}: expected an iterable of tokens (str or int), not a single {}; sketch a \
             text with sketch()",
            tokens.get_type().name()?
        )));
    }
    if let Ok(array) = tokens.extract::<PyReadonlyArray1<'_, i64>>() {
        return Ok(array.as_array().iter().map(|&v| PyToken::Int(v)).collect());
    }
    tokens
        .try_iter()?
        .enumerate()
        .map(|(i, item)| token_from_py(&item?, &format!("{place}[{i}]")))
        .collect()
}

fn token_from_py(item: &Bound<'_, PyAny>, place: &str) -> PyResult<PyToken> {
    if let Ok(s) = item.extract::<PyBackedStr>() {
        return Ok(PyToken::Str(s));
    }
    // `True` is an `int` to Python, but hardly meant as the token 1.
    let is_bool = item.is_instance_of::<PyBool>();
    if !is_bool && let Ok(v) = item.extract::<i64>() {
        return Ok(PyToken::Int(v));
    }
    let py = item.py();
    match item.extract::<i64>() {
        Err(e) if !is_bool && e.is_instance_of::<PyOverflowError>(py) => {
            Err(PyValueError::new_err(format!(
                "{place}: {item} does not fit a signed 64-bit integer token"
            )))
        }
        _ => Err(PyTypeError::new_err(format!(
            "{place}: a token is a str or an int, not {}",
            item.get_type().name()?
        ))),
    }
}

/// Reads precomputed element hashes: a 1-D `uint64` numpy array, or a sequence of ints.
pub fn hashes_from_py(hashes: &Bound<'_, PyAny>, place: &str) -> PyResult<Vec<u64>> {
    if let Ok(array) = hashes.extract::<PyReadonlyArray1<'_, u64>>() {
        return Ok(array.as_array().to_vec());
    }
    hashes.extract::<Vec<u64>>().map_err(|_| {
        PyTypeError::new_err(format!(
            "{place}: expected a 1-D numpy uint64 array of element hashes (or a sequence of \
             ints in [0, 2**64)); an int64 array converts with .view(numpy.uint64)"
        ))
    })
}

/// The signatures of `n` inputs as an `(n, k)` array, row `i` being `sign(i)`, computed on
/// every core without the GIL; the first error, if any, is raised.
pub fn signatures_matrix<'py>(
    py: Python<'py>,
    hasher: &MinHasher,
    n: usize,
    sign: impl Fn(usize) -> mhdb::Result<Signature> + Sync,
) -> PyResult<Bound<'py, PyArray2<u64>>> {
    let k = hasher.num_perm();
    let flat = py
        .detach(|| {
            let mut flat = vec![0u64; n * k];
            flat.par_chunks_mut(k.max(1))
                .enumerate()
                .try_for_each(|(i, row)| {
                    row.copy_from_slice(sign(i)?.slots());
                    Ok(())
                })
                .map(|()| flat)
        })
        .map_err(|e| to_py(py, e))?;
    let array =
        Array2::from_shape_vec((n, k), flat).map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
    Ok(array.into_pyarray(py))
}
