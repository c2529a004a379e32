//! Index parameters between Python and the crate: the `**params` of `Index.create` /
//! `open_or_create` (and `index_params_for`) read into [`IndexParams`], and parameters given
//! back as a dictionary (`Index.params`, `stats()["params"]`).

use mhdb::db::{IndexOptions, IndexParams};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::errors::OrRaise;

/// Index parameters from `threshold` and the `**params` of `create` / `open_or_create`:
/// `num_perm`, `scheme`, `seed`, `shingle`, `nfkc`, `lowercase`, `collapse_whitespace`,
/// `bits`, `band_slots`, `bands`, `rows`, `bucket_cap`, `store_sets`, `metric`, `kind`,
/// `max_hamming`, `weighting`. An unknown name is an error, not ignored. The rules (defaults, which
/// parameters go with which kind) are the library's ([`IndexOptions::build`]).
pub(crate) fn index_params(
    py: Python<'_>,
    threshold: Option<f64>,
    kwargs: Option<&Bound<'_, PyDict>>,
) -> PyResult<IndexParams> {
    let mut options = IndexOptions {
        threshold,
        ..IndexOptions::default()
    };
    for (name, value) in kwargs.into_iter().flat_map(|d| d.iter()) {
        let name: String = name.extract()?;
        read_option(py, &mut options, &name, &value)?;
    }
    options.build().map_err(mhdb::Error::from).or_raise(py)
}

/// Reads the keyword argument `name` into `options`.
fn read_option(
    py: Python<'_>,
    options: &mut IndexOptions,
    name: &str,
    value: &Bound<'_, PyAny>,
) -> PyResult<()> {
    match name {
        "kind" => options.kind = Some(parsed(py, value)?),
        "max_hamming" => options.max_hamming = value.extract()?,
        "weighting" if value.is_none() => options.weighting = None,
        "weighting" => options.weighting = Some(parsed(py, value)?),
        "num_perm" => options.num_perm = value.extract()?,
        "scheme" => options.scheme = Some(parsed(py, value)?),
        "seed" => options.seed = Some(value.extract()?),
        "shingle" => options.shingle = Some(parsed(py, value)?),
        "nfkc" => options.nfkc = Some(value.extract()?),
        "lowercase" => options.lowercase = Some(value.extract()?),
        "collapse_whitespace" => options.collapse_whitespace = Some(value.extract()?),
        "bits" => options.bits = value.extract()?,
        "band_slots" => options.band_slots = value.extract()?,
        "bands" => options.bands = value.extract()?,
        "rows" => options.rows = value.extract()?,
        // None is unlimited, as 0 is.
        "bucket_cap" => options.bucket_cap = Some(value.extract::<Option<u32>>()?.unwrap_or(0)),
        "store_sets" => options.store_sets = Some(value.extract()?),
        "metric" => options
            .set_metric(&value.extract::<String>()?)
            .or_raise(py)?,
        other => {
            return Err(PyTypeError::new_err(format!(
                "unexpected keyword argument {other:?} (index parameters: kind, num_perm, \
                 scheme, seed, shingle, nfkc, lowercase, collapse_whitespace, bits, \
                 band_slots, bands, rows, bucket_cap, store_sets, metric; for \
                 kind=\"simhash\": max_hamming, weighting)"
            )));
        }
    }
    Ok(())
}

/// A keyword given as a string, parsed as the library parses it (`"oph"`, `"char:5"`, …).
fn parsed<T: std::str::FromStr<Err = mhdb::Error>>(
    py: Python<'_>,
    value: &Bound<'_, PyAny>,
) -> PyResult<T> {
    value.extract::<String>()?.parse::<T>().or_raise(py)
}

/// The parameters as a dictionary.
pub(crate) fn params_dict<'py>(py: Python<'py>, p: &IndexParams) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("scheme", p.sketch.scheme.to_string())?;
    d.set_item("num_perm", p.sketch.num_perm)?;
    d.set_item("seed", p.sketch.seed)?;
    d.set_item("shingle", p.sketch.shingle.kind.to_string())?;
    d.set_item("nfkc", p.sketch.shingle.nfkc)?;
    d.set_item("lowercase", p.sketch.shingle.lowercase)?;
    d.set_item("collapse_whitespace", p.sketch.shingle.collapse_whitespace)?;
    d.set_item("bits", p.bits)?;
    d.set_item("band_slots", p.band_slots)?;
    d.set_item("bands", p.lsh.bands)?;
    d.set_item("rows", p.lsh.rows)?;
    d.set_item("threshold", p.threshold)?;
    d.set_item("bucket_cap", p.bucket_cap)?;
    d.set_item("store_sets", p.store_sets)?;
    d.set_item("kind", p.kind.name())?;
    d.set_item("metric", p.metric().name())?;
    if let Some(sim) = p.sim_params() {
        d.set_item("max_hamming", sim.max_hamming)?;
        d.set_item("weighting", sim.weighting.name())?;
    }
    Ok(d)
}
