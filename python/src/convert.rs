//! Conversions between Python values and mhdb's: keys, documents (texts or signatures),
//! sketch parameters.

use mhdb::db::ingest::Content;
use mhdb::sketch::{Scheme, ShingleConfig, ShingleKind, Signature, SketchParams};
use numpy::{PyReadonlyArray1, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedStr;
use pyo3::types::{PyBytes, PyInt, PySequence, PyString};

use crate::errors::{OrRaise, invalid};

/// A key given by Python: `str` (stored as its UTF-8 bytes) or `bytes` (stored as is).
pub fn key_from_py(obj: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
    if let Ok(s) = obj.cast::<PyString>() {
        let s: PyBackedStr = s.extract()?;
        return Ok(s.as_bytes().to_vec());
    }
    if let Ok(b) = obj.cast::<PyBytes>() {
        return Ok(b.as_bytes().to_vec());
    }
    Err(PyTypeError::new_err(format!(
        "a key must be str or bytes, not {}",
        obj.get_type().name()?
    )))
}

/// A stored key as Python sees it: `str` when the bytes are valid UTF-8, else `bytes`.
pub fn key_to_py<'py>(py: Python<'py>, key: &[u8]) -> Bound<'py, PyAny> {
    match std::str::from_utf8(key) {
        Ok(s) => PyString::new(py, s).into_any(),
        Err(_) => PyBytes::new(py, key).into_any(),
    }
}

/// A signature given by Python: a 1-D numpy array of unsigned integers (uint64 or uint32,
/// e.g. datasketch's `hashvalues`) or any sequence of non-negative ints.
pub fn signature_from_py(obj: &Bound<'_, PyAny>) -> PyResult<Signature> {
    if let Ok(a) = obj.extract::<PyReadonlyArray1<'_, u64>>() {
        let slots = match a.as_slice() {
            Ok(s) => s.to_vec(),
            Err(_) => a.as_array().iter().copied().collect(),
        };
        return Ok(Signature::from_slots(slots));
    }
    if let Ok(a) = obj.extract::<PyReadonlyArray1<'_, u32>>() {
        return Ok(Signature::from_slots(
            a.as_array()
                .iter()
                .map(|&v| u64::from(v))
                .collect::<Vec<u64>>(),
        ));
    }
    if let Ok(a) = obj.cast::<PyUntypedArray>() {
        return Err(PyTypeError::new_err(format!(
            "a signature array must be 1-D uint64 or uint32, not {}-D {}",
            a.ndim(),
            a.dtype()
        )));
    }
    if obj.is_instance_of::<PyString>() || obj.is_instance_of::<PyBytes>() {
        return Err(PyTypeError::new_err(
            "a signature must be a numpy array or a sequence of ints, not str or bytes",
        ));
    }
    let slots: Vec<u64> = obj.extract().map_err(|_| {
        PyTypeError::new_err(
            "a signature must be a 1-D numpy uint64/uint32 array or a sequence of non-negative ints",
        )
    })?;
    Ok(Signature::from_slots(slots))
}

/// The signature parameters of `MinHasher(...)` and `Index.create(..., **params)`.
pub struct SketchArgs {
    /// Number of slots k.
    pub num_perm: usize,
    /// `"oph"` or `"kperm"`.
    pub scheme: String,
    /// The user seed.
    pub seed: u64,
    /// `"char:N"`, `"word:N"`, `"unicode-word:N"` or `"tokens:N"`.
    pub shingle: String,
    /// NFKC first (`None`: the shingle scheme's default).
    pub nfkc: Option<bool>,
    /// Lowercase (`None`: the shingle scheme's default).
    pub lowercase: Option<bool>,
    /// Collapse white space (`None`: the shingle scheme's default).
    pub collapse_whitespace: Option<bool>,
}

impl Default for SketchArgs {
    fn default() -> Self {
        SketchArgs {
            num_perm: 128,
            scheme: "oph".into(),
            seed: 0,
            shingle: "char:5".into(),
            nfkc: None,
            lowercase: None,
            collapse_whitespace: None,
        }
    }
}

impl SketchArgs {
    /// Parsed and validated.
    pub fn params(&self, py: Python<'_>) -> PyResult<SketchParams> {
        let scheme: Scheme = self.scheme.parse().or_raise(py)?;
        let kind: ShingleKind = self.shingle.parse().or_raise(py)?;
        let params = SketchParams {
            scheme,
            num_perm: self.num_perm,
            seed: self.seed,
            shingle: ShingleConfig::with_normalization(
                kind,
                self.nfkc,
                self.lowercase,
                self.collapse_whitespace,
            ),
        };
        params.validate().or_raise(py)?;
        Ok(params)
    }
}

/// A query threshold: `None` (the index's) or a number in (0, 1], as everywhere else
/// (`Index.create`, the command-line tool), with the same message.
pub fn threshold(py: Python<'_>, t: Option<f64>) -> PyResult<Option<f64>> {
    match t {
        Some(t) if !(t > 0.0 && t <= 1.0) => Err(invalid(
            py,
            "threshold",
            format!("must be in (0, 1], got {t}"),
        )),
        _ => Ok(t),
    }
}

/// A count given as `name` (`limit=`, `top=`): `None`, or a positive int. Zero or a negative
/// int is an `InvalidParameterError` naming the parameter (not Python's `OverflowError`; zero
/// asks for nothing, surely a mistake, and `mhdb query` refuses it too).
pub fn count(
    py: Python<'_>,
    name: &'static str,
    value: Option<&Bound<'_, PyAny>>,
) -> PyResult<Option<usize>> {
    let Some(value) = value.filter(|v| !v.is_none()) else {
        return Ok(None);
    };
    if !value.is_instance_of::<PyInt>() {
        return Err(PyTypeError::new_err(format!(
            "{name} must be an int, not {}",
            value.get_type().name()?
        )));
    }
    match value.extract::<usize>() {
        Ok(n) if n > 0 => Ok(Some(n)),
        Err(_) if value.gt(0).unwrap_or(false) => {
            Err(invalid(py, name, format!("{value} is too large")))
        }
        _ => Err(invalid(
            py,
            name,
            format!("must be a positive integer (None for no bound), got {value}"),
        )),
    }
}

/// A text given as `name` (`text=` of `insert` and `query`, an item of `texts=`): a `str`.
pub fn text_from_py(value: &Bound<'_, PyAny>, name: &str) -> PyResult<PyBackedStr> {
    match value.cast::<PyString>() {
        Ok(s) => s.extract(),
        Err(_) => Err(PyTypeError::new_err(format!(
            "{name} must be a str, not {}",
            value.get_type().name()?
        ))),
    }
}

/// A document as Python gives it: a text or a signature.
pub type Doc = Content<PyBackedStr>;

/// The document of `text=` or `signature=` (exactly one must be given).
pub fn doc_one_of(
    py: Python<'_>,
    text: Option<&Bound<'_, PyAny>>,
    signature: Option<&Bound<'_, PyAny>>,
) -> PyResult<Doc> {
    match (text, signature) {
        (Some(t), None) => Ok(Doc::Text(text_from_py(t, "text")?)),
        (None, Some(s)) => Ok(Doc::Signature(signature_from_py(s)?)),
        _ => Err(invalid(
            py,
            "text",
            "give exactly one of text= and signature=",
        )),
    }
}

/// [`doc_one_of`], a given signature carrying `set_size` (the number of distinct shingles it
/// was made from, which a containment index needs); a text's set size is counted, never given.
pub fn sized_doc_one_of(
    py: Python<'_>,
    text: Option<&Bound<'_, PyAny>>,
    signature: Option<&Bound<'_, PyAny>>,
    set_size: Option<u64>,
) -> PyResult<Doc> {
    match (doc_one_of(py, text, signature)?, set_size) {
        (Doc::Signature(s), Some(n)) => {
            let n = u32::try_from(n)
                .map_err(|_| invalid(py, "set_size", format!("{n} is more than 2**32 - 1")))?;
            Ok(Doc::Signature(s.with_set_size(n)))
        }
        (_, Some(_)) => Err(invalid(
            py,
            "set_size",
            "is for signatures: a text's set size is counted from its shingles",
        )),
        (doc, None) => Ok(doc),
    }
}

/// A `str` is a text, an array or a sequence a signature; anything else is neither (and the
/// error says both were possible).
pub fn doc_from_py(value: &Bound<'_, PyAny>) -> PyResult<Doc> {
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
    Ok(Doc::Signature(signature_from_py(value)?))
}
