//! `mhdb.MinHasher`: text → signature, bit-identical to the Rust crate (`format/hashing.md`).

use mhdb::sketch::{ExactHasher, MinHasher};
use numpy::ndarray::Array2;
use numpy::{IntoPyArray, PyArray1, PyArray2, PyReadonlyArray2};
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedStr;
use rayon::prelude::*;

use crate::convert::SketchArgs;
use crate::tokens::{PyToken, as_tokens, hashes_from_py, signatures_matrix, tokens_from_py};

/// Computes MinHash signatures of texts exactly as ``format/hashing.md`` specifies.
///
/// Args:
///     num_perm: number of slots k (1 ..= 8192). The default, 128, is datasketch's
///         ``MinHash(num_perm=128)``, so that ``mhdb.datasketch`` users get the signatures they
///         had; an index created with the defaults has 512 slots, and the hasher that signs
///         for an index is its own, ``Index.hasher`` (a signature of another length is refused,
///         saying so).
///     scheme: ``"oph"`` (one-permutation hashing with optimal densification, the default)
///         or ``"kperm"`` (classic k-permutation MinHash).
///     seed: the user seed (any unsigned 64-bit integer).
///     shingle: ``"char:N"`` (N consecutive characters), ``"word:N"`` (N consecutive words
///         split at white space) or ``"unicode-word:N"`` (N consecutive Unicode words: UAX #29
///         word boundaries, each CJK ideograph and each Thai, Lao, Khmer or Myanmar letter one
///         word), the last with options ``+fold-punctuation`` and ``+fold-digits``
///         (``format/hashing.md`` §16), or ``"tokens"`` / ``"tokens:N"`` (token lists, signed
///         with :meth:`sketch_tokens` as an index created with that ``shingle`` signs them).
///     nfkc: apply Unicode NFKC normalization first (default off).
///     lowercase: lowercase the text (Unicode full mapping; default on).
///     collapse_whitespace: collapse runs of white space to one space and trim (default on).
///
/// The three normalization flags default to ``None``: the scheme's default, which for token
/// lists is no normalization (tokens are taken as given; a flag set to ``True`` with a token
/// scheme is refused).
///
/// A signature is a ``numpy.ndarray`` of ``uint64`` of length ``num_perm``; equal parameters
/// give equal signatures on every machine and in every later version (for one hash spec).
#[pyclass(module = "mhdb", name = "MinHasher", frozen)]
pub struct PyMinHasher {
    pub(crate) inner: MinHasher,
}

#[pymethods]
impl PyMinHasher {
    #[new]
    #[pyo3(signature = (num_perm = 128, scheme = "oph", seed = 0, shingle = "char:5", nfkc = None, lowercase = None, collapse_whitespace = None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        num_perm: usize,
        scheme: &str,
        seed: u64,
        shingle: &str,
        nfkc: Option<bool>,
        lowercase: Option<bool>,
        collapse_whitespace: Option<bool>,
    ) -> PyResult<Self> {
        let params = SketchArgs {
            num_perm,
            scheme: scheme.into(),
            seed,
            shingle: shingle.into(),
            nfkc,
            lowercase,
            collapse_whitespace,
        }
        .params(py)?;
        let inner = MinHasher::new(params).map_err(|e| crate::errors::to_py(py, e))?;
        Ok(PyMinHasher { inner })
    }

    /// Number of slots k of every signature.
    #[getter]
    fn num_perm(&self) -> usize {
        self.inner.num_perm()
    }

    /// The signature scheme: ``"oph"`` or ``"kperm"``.
    #[getter]
    fn scheme(&self) -> String {
        self.inner.params().scheme.to_string()
    }

    /// The user seed.
    #[getter]
    fn seed(&self) -> u64 {
        self.inner.params().seed
    }

    /// The shingling, as ``"char:N"``, ``"word:N"`` or ``"unicode-word:N"`` with its options.
    #[getter]
    fn shingle(&self) -> String {
        self.inner.params().shingle.kind.to_string()
    }

    /// Whether NFKC normalization is applied.
    #[getter]
    fn nfkc(&self) -> bool {
        self.inner.params().shingle.nfkc
    }

    /// Whether text is lowercased.
    #[getter]
    fn lowercase(&self) -> bool {
        self.inner.params().shingle.lowercase
    }

    /// Whether white space runs are collapsed.
    #[getter]
    fn collapse_whitespace(&self) -> bool {
        self.inner.params().shingle.collapse_whitespace
    }

    /// The signature of ``text``: a ``uint64`` array of length ``num_perm``.
    fn sketch<'py>(&self, py: Python<'py>, text: PyBackedStr) -> Bound<'py, PyArray1<u64>> {
        let sig = py.detach(|| self.inner.sketch_text(&text));
        sig.slots().to_vec().into_pyarray(py)
    }

    /// Signatures of many texts, as a ``uint64`` array of shape ``(len(texts), num_perm)``.
    ///
    /// ``texts`` is any iterable of ``str``. The texts are read first; the signing then runs
    /// on every core with the GIL released, so other Python threads go on meanwhile.
    fn sketch_many<'py>(
        &self,
        py: Python<'py>,
        texts: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyArray2<u64>>> {
        let texts = texts_from_py(texts)?;
        rows_of_texts(py, &texts, self.inner.num_perm(), |text, row| {
            row.copy_from_slice(self.inner.sketch_text(text).slots());
        })
    }

    /// The exact hashes of many texts (``format/hashing.md`` §17: XXH3-128 of the normalized
    /// text, never 0), as an index with this hasher's parameters stores them, shape
    /// ``(n, 2)``, ``uint64``: the low then the high 64 bits. Texts that normalize to the same
    /// bytes, and only those (but for a 2⁻¹²⁸ chance), get equal hashes. Runs on every core
    /// without the GIL.
    ///
    /// Raises:
    ///     InvalidParameterError: a keyed hasher (a keyed index hashes under a key of its
    ///         own, which stays inside the index) or a token scheme.
    fn exact_hashes<'py>(
        &self,
        py: Python<'py>,
        texts: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyArray2<u64>>> {
        let p = self.inner.params();
        if !self.inner.key_fingerprint().is_unkeyed() || p.shingle.kind.is_tokens() {
            return Err(crate::errors::invalid(
                py,
                "exact_hashes",
                "exact hashes are computed here for unkeyed text hashers only",
            ));
        }
        let texts = texts_from_py(texts)?;
        let exact = ExactHasher::new(p.scheme.name(), p.seed, None);
        rows_of_texts(py, &texts, 2, |text, row| {
            let h = exact.hash_text(&p.shingle, text);
            row.copy_from_slice(&[h as u64, (h >> 64) as u64]);
        })
    }

    /// The set sizes of many texts: each one's number of distinct shingle hashes, as an
    /// index with the SET_SIZE column stores it (``dedup --keep longest`` ranks by it, so
    /// boilerplate repeated inside one text counts once), a ``uint32`` array of length
    /// ``n``. Runs on every core without the GIL.
    fn set_sizes<'py>(
        &self,
        py: Python<'py>,
        texts: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyArray1<u32>>> {
        let texts = texts_from_py(texts)?;
        let sizes = py
            .detach(|| {
                texts
                    .par_iter()
                    .map(|text| self.inner.set_size_of_text(text))
                    .collect::<mhdb::Result<Vec<u32>>>()
            })
            .map_err(|e| crate::errors::to_py(py, e))?;
        Ok(sizes.into_pyarray(py))
    }

    /// The LSH band keys of full-precision signatures (``sketch_many``'s output), shape
    /// ``(n, bands)``, ``uint64``: key ``j`` hashes slots ``j*rows .. (j+1)*rows`` with band
    /// ``j``'s seed, as an index with these signature parameters computes them when it
    /// inserts. Runs without the GIL.
    fn band_keys<'py>(
        &self,
        py: Python<'py>,
        signatures: PyReadonlyArray2<'py, u64>,
        bands: usize,
        rows: usize,
    ) -> PyResult<Bound<'py, PyArray2<u64>>> {
        crate::banding::band_keys(&self.inner, py, signatures, bands, rows)
    }

    /// The estimated Jaccard similarity of two signatures: the fraction of equal slots.
    #[staticmethod]
    fn jaccard(py: Python<'_>, a: &Bound<'_, PyAny>, b: &Bound<'_, PyAny>) -> PyResult<f64> {
        let a = crate::convert::signature_from_py(a)?;
        let b = crate::convert::signature_from_py(b)?;
        a.jaccard(&b).map_err(|e| crate::errors::to_py(py, e))
    }

    /// The signature of a token list (``format/hashing.md`` §15): ``tokens`` is an iterable
    /// of ``str`` and ``int`` (signed 64-bit) tokens, or a 1-D ``int64`` numpy array.
    ///
    /// With ``width=1`` each token is one set element, so order and repeats do not matter;
    /// with ``width=N`` each run of N consecutive tokens is one element. The default width is
    /// the hasher's for ``shingle="tokens:N"`` (so the signature is the one an index created
    /// with that ``shingle`` stores; another width is refused), 1 otherwise. A string
    /// token is hashed as its UTF-8 bytes and an integer as a type byte and its 8 bytes, so
    /// ``"1"`` and ``1`` differ. Tokens are not normalized: this hasher's ``shingle``,
    /// ``nfkc``, ``lowercase`` and ``collapse_whitespace`` do not apply; its scheme, seed and
    /// key (an index's :attr:`Index.hasher`) do. Insert the result with
    /// ``Index.insert(key, signature=...)`` into an index of the same scheme, seed and
    /// ``num_perm``.
    ///
    /// Raises:
    ///     TypeError: a token is neither ``str`` nor ``int`` (``bool`` is refused too).
    ///     ValueError: an ``int`` outside the signed 64-bit range.
    ///     InvalidParameterError: ``width`` outside 1..=64, or not the token scheme's.
    #[pyo3(signature = (tokens, width = None))]
    fn sketch_tokens<'py>(
        &self,
        py: Python<'py>,
        tokens: &Bound<'py, PyAny>,
        width: Option<usize>,
    ) -> PyResult<Bound<'py, PyArray1<u64>>> {
        let width = self.token_width(py, width)?;
        let tokens = tokens_from_py(tokens, "tokens")?;
        let sig = py
            .detach(|| self.inner.sketch_tokens(&as_tokens(&tokens), width))
            .map_err(|e| crate::errors::to_py(py, e))?;
        Ok(sig.slots().to_vec().into_pyarray(py))
    }

    /// Signatures of many token lists (each as :meth:`sketch_tokens` takes it), shape
    /// ``(n, num_perm)``; the lists are read first, then signed on every core without the GIL.
    #[pyo3(signature = (token_lists, width = None))]
    fn sketch_tokens_many<'py>(
        &self,
        py: Python<'py>,
        token_lists: &Bound<'py, PyAny>,
        width: Option<usize>,
    ) -> PyResult<Bound<'py, PyArray2<u64>>> {
        let width = self.token_width(py, width)?;
        let lists: Vec<Vec<PyToken>> = token_lists
            .try_iter()?
            .enumerate()
            .map(|(i, list)| tokens_from_py(&list?, &format!("token_lists[{i}]")))
            .collect::<PyResult<_>>()?;
        signatures_matrix(py, &self.inner, lists.len(), |i| {
            self.inner.sketch_tokens(&as_tokens(&lists[i]), width)
        })
    }

    /// The signature of a set given by its 64-bit element hashes (a 1-D ``uint64`` array, or
    /// a sequence of ints), which skip the hashing step (``format/hashing.md`` §15): they go
    /// straight to MinHash. They must be uniformly random over all 64 bits (a 64-bit hash
    /// such as XXH3-64): ``oph`` bins an element by its high 32 bits, so small ints (ids)
    /// would all share one bin; give those to :meth:`sketch_tokens`. A keyed hasher's key is
    /// not applied to them.
    fn sketch_hashes<'py>(
        &self,
        py: Python<'py>,
        hashes: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyArray1<u64>>> {
        let hashes = hashes_from_py(hashes, "hashes")?;
        let sig = py.detach(|| self.inner.sketch_hashes(&hashes));
        Ok(sig.slots().to_vec().into_pyarray(py))
    }

    /// Signatures of many element-hash sets (each as :meth:`sketch_hashes` takes it), shape
    /// ``(n, num_perm)``, signed on every core without the GIL.
    fn sketch_hashes_many<'py>(
        &self,
        py: Python<'py>,
        hash_sets: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyArray2<u64>>> {
        let sets: Vec<Vec<u64>> = hash_sets
            .try_iter()?
            .enumerate()
            .map(|(i, set)| hashes_from_py(&set?, &format!("hash_sets[{i}]")))
            .collect::<PyResult<_>>()?;
        signatures_matrix(py, &self.inner, sets.len(), |i| {
            Ok(self.inner.sketch_hashes(&sets[i]))
        })
    }

    fn __repr__(&self) -> String {
        let p = self.inner.params();
        format!(
            "MinHasher(num_perm={}, scheme={:?}, seed={}, shingle={:?}, nfkc={}, lowercase={}, collapse_whitespace={})",
            p.num_perm,
            p.scheme.to_string(),
            p.seed,
            p.shingle.kind.to_string(),
            py_bool(p.shingle.nfkc),
            py_bool(p.shingle.lowercase),
            py_bool(p.shingle.collapse_whitespace)
        )
    }
}

impl PyMinHasher {
    /// The width token lists are signed at: the token scheme's (another is refused, so the
    /// signature stays the one an index of that scheme stores), else `width` or 1.
    fn token_width(&self, py: Python<'_>, width: Option<usize>) -> PyResult<usize> {
        let kind = self.inner.params().shingle.kind;
        match (kind.is_tokens(), width) {
            (true, Some(w)) if w != kind.width() => Err(crate::errors::invalid(
                py,
                "width",
                format!("this hasher signs {kind} token lists: width={w} contradicts it"),
            )),
            (true, _) => Ok(kind.width()),
            (false, w) => Ok(w.unwrap_or(1)),
        }
    }
}

/// The `str` items of an iterable, read before any work leaves the GIL.
fn texts_from_py(texts: &Bound<'_, PyAny>) -> PyResult<Vec<PyBackedStr>> {
    texts
        .try_iter()?
        .map(|t| t.and_then(|t| t.extract::<PyBackedStr>()))
        .collect()
}

/// An `(n, width)` `uint64` array whose row `i` `fill` writes from `texts[i]`, on every core
/// without the GIL.
fn rows_of_texts<'py>(
    py: Python<'py>,
    texts: &[PyBackedStr],
    width: usize,
    fill: impl Fn(&str, &mut [u64]) + Sync,
) -> PyResult<Bound<'py, PyArray2<u64>>> {
    let n = texts.len();
    let flat = py.detach(|| {
        let mut flat = vec![0u64; n * width];
        flat.par_chunks_mut(width.max(1))
            .zip(texts.par_iter())
            .for_each(|(row, text)| fill(text, row));
        flat
    });
    let array = Array2::from_shape_vec((n, width), flat)
        .map_err(|e| pyo3::exceptions::PyRuntimeError::new_err(e.to_string()))?;
    Ok(array.into_pyarray(py))
}

fn py_bool(b: bool) -> &'static str {
    if b { "True" } else { "False" }
}
