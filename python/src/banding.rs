//! What a distributed dedup needs to reproduce `Index.dedup` outside an index: the resolved
//! index parameters (bands × rows tuned for a threshold, exactly as `Index.create` tunes
//! them) and the band keys of many signatures (spec §8), so that `mhdb.spark` buckets
//! documents as the engine does.

use mhdb::sketch::{Banding, LshParams, MinHasher};
use numpy::ndarray::Array2;
use numpy::{IntoPyArray, PyArray1, PyArray2, PyReadonlyArray2};
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedStr;
use pyo3::types::PyDict;
use rayon::prelude::*;

use crate::errors::{OrRaise, invalid};
use crate::params::{index_params, params_dict};

/// The parameters ``Index.create(path, threshold, **params)`` would store, as the dictionary
/// ``Index.params`` returns (bands and rows tuned for ``threshold`` unless both are given).
#[pyfunction]
#[pyo3(signature = (threshold = None, **params))]
pub fn index_params_for<'py>(
    py: Python<'py>,
    threshold: Option<f64>,
    params: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyDict>> {
    let p = index_params(py, threshold, params)?;
    params_dict(py, &p)
}

/// `MinHasher.band_keys`: the band keys of each row of `signatures` made by `hasher`.
pub fn band_keys<'py>(
    hasher: &MinHasher,
    py: Python<'py>,
    signatures: PyReadonlyArray2<'py, u64>,
    bands: usize,
    rows: usize,
) -> PyResult<Bound<'py, PyArray2<u64>>> {
    let k = hasher.num_perm();
    let lsh = LshParams::new(bands, rows, k).or_raise(py)?;
    let banding = Banding::new(hasher.params(), lsh).or_raise(py)?;
    let sigs = signatures.as_array();
    let (n, width) = sigs.dim();
    if width != k {
        return Err(invalid(
            py,
            "signatures",
            format!("have {width} slots per row, this MinHasher makes {k}"),
        ));
    }
    let flat: Vec<u64> = match sigs.as_slice() {
        Some(s) => s.to_vec(),
        None => sigs.iter().copied().collect(),
    };
    let keys = py.detach(|| {
        let mut keys = vec![0u64; n * bands];
        keys.par_chunks_mut(bands)
            .zip(flat.par_chunks(k.max(1)))
            .try_for_each(|(out, sig)| banding.band_keys_to_slice(sig, out))
            .map(|()| keys)
    });
    let keys = keys.or_raise(py)?;
    let array = Array2::from_shape_vec((n, bands), keys)
        .map_err(|e| pyo3::exceptions::PyRuntimeError::new_err(e.to_string()))?;
    Ok(array.into_pyarray(py))
}

/// What a bucket cap ranks each key by (the engine's `cap_rank`: xxh3-64 of the key's UTF-8
/// bytes; a bucket over the cap keeps its lowest), so that `mhdb.spark` caps the buckets the
/// engine caps with the same documents.
#[pyfunction]
pub fn cap_ranks<'py>(py: Python<'py>, keys: Vec<PyBackedStr>) -> Bound<'py, PyArray1<u64>> {
    let ranks: Vec<u64> = py.detach(|| {
        keys.iter()
            .map(|k| mhdb::storage::segment::cap_rank(k.as_bytes()))
            .collect()
    });
    ranks.into_pyarray(py)
}
