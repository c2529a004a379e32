//! Index parameters between Python and the crate: the `**params` of `Index.create` /
//! `open_or_create` (and `index_params_for`) read into [`IndexParams`], and parameters given
//! back as a dictionary (`Index.params`, `stats()["params"]`).

use mhdb::db::IndexParams;
use mhdb::sketch::LshParams;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::convert::SketchArgs;
use crate::errors::{OrRaise, invalid};

/// Index parameters from `threshold` and the `**params` of `create` / `open_or_create`:
/// `num_perm`, `scheme`, `seed`, `shingle`, `nfkc`, `lowercase`, `collapse_whitespace`,
/// `bits`, `band_slots`, `bands`, `rows`, `bucket_cap`, `store_sets`. An unknown name is an
/// error, not ignored.
pub(crate) fn index_params(
    py: Python<'_>,
    threshold: f64,
    kwargs: Option<&Bound<'_, PyDict>>,
) -> PyResult<IndexParams> {
    let mut sketch = SketchArgs::default();
    let mut num_perm: Option<usize> = None;
    let mut bits: Option<u32> = None;
    let mut band_slots: Option<usize> = None;
    let (mut bands, mut rows): (Option<usize>, Option<usize>) = (None, None);
    let mut bucket_cap = Some(mhdb::db::DEFAULT_BUCKET_CAP);
    let mut store_sets = false;
    let mut kind = String::from("minhash");
    let (mut max_hamming, mut weighting): (Option<u32>, Option<String>) = (None, None);
    // MinHash-only names given, to refuse for a SimHash index.
    let mut minhash_only = Vec::new();
    for (name, value) in kwargs.into_iter().flat_map(|d| d.iter()) {
        let name: String = name.extract()?;
        if matches!(
            name.as_str(),
            "num_perm" | "scheme" | "bits" | "bands" | "rows" | "store_sets"
        ) {
            minhash_only.push(name.clone());
        }
        match name.as_str() {
            "kind" => kind = value.extract()?,
            "max_hamming" => max_hamming = value.extract()?,
            "weighting" => weighting = value.extract()?,
            "num_perm" => num_perm = value.extract()?,
            "scheme" => sketch.scheme = value.extract()?,
            "seed" => sketch.seed = value.extract()?,
            "shingle" => sketch.shingle = value.extract()?,
            "nfkc" => sketch.nfkc = value.extract()?,
            "lowercase" => sketch.lowercase = value.extract()?,
            "collapse_whitespace" => sketch.collapse_whitespace = value.extract()?,
            "bits" => bits = value.extract()?,
            "band_slots" => band_slots = value.extract()?,
            "bands" => bands = value.extract()?,
            "rows" => rows = value.extract()?,
            "bucket_cap" => bucket_cap = value.extract()?,
            "store_sets" => store_sets = value.extract()?,
            other => {
                return Err(PyTypeError::new_err(format!(
                    "unexpected keyword argument {other:?} (index parameters: kind, num_perm, \
                     scheme, seed, shingle, nfkc, lowercase, collapse_whitespace, bits, \
                     band_slots, bands, rows, bucket_cap, store_sets; for kind=\"simhash\": \
                     max_hamming, weighting)"
                )));
            }
        }
    }
    match kind.as_str() {
        "minhash" => {
            if max_hamming.is_some() || weighting.is_some() {
                return Err(invalid(
                    py,
                    "kind",
                    "max_hamming and weighting are parameters of kind=\"simhash\"",
                ));
            }
        }
        "simhash" => {
            if let Some(name) = minhash_only.first() {
                return Err(invalid(
                    py,
                    "kind",
                    format!(
                        "{name} is a MinHash parameter; a simhash index takes max_hamming, weighting, seed and the shingling"
                    ),
                ));
            }
            // The default threshold cannot be told from an explicit 0.8: only other values
            // are refused.
            if threshold != 0.8 {
                return Err(invalid(
                    py,
                    "threshold",
                    "a simhash index's threshold follows from max_hamming; give max_hamming",
                ));
            }
            let sketch = sketch.params(py)?;
            let weighting = match weighting {
                Some(w) => w.parse().or_raise(py)?,
                None => mhdb::sketch::SimWeighting::default(),
            };
            let mut params = IndexParams::simhash(mhdb::sketch::SimParams {
                seed: sketch.seed,
                shingle: sketch.shingle,
                weighting,
                max_hamming: max_hamming.unwrap_or(3),
            })
            .or_raise(py)?;
            params.bucket_cap = bucket_cap.filter(|&c| c != 0);
            params.validate().or_raise(py)?;
            return Ok(params);
        }
        other => {
            return Err(invalid(
                py,
                "kind",
                format!("unknown index kind {other:?}; expected \"minhash\" or \"simhash\""),
            ));
        }
    }
    // Not given: the engine's defaults for the scheme (512 OPH slots at 4 bits, bands over
    // the first 128), as `mhdb create` chooses them.
    let scheme: mhdb::sketch::Scheme = sketch.scheme.parse().or_raise(py)?;
    sketch.num_perm = num_perm.unwrap_or_else(|| mhdb::db::default_slots(scheme));
    let sketch = sketch.params(py)?;
    let mut params = IndexParams::with_shape(sketch, bits, band_slots, threshold).or_raise(py)?;
    if store_sets {
        params = params.with_stored_sets().or_raise(py)?;
    }
    match (bands, rows) {
        (Some(b), Some(r)) => params.lsh = LshParams::new(b, r, params.band_slots).or_raise(py)?,
        (None, None) => {}
        _ => {
            return Err(invalid(
                py,
                "bands",
                "give both bands and rows, or neither (then they are tuned for the threshold)",
            ));
        }
    }
    params.bucket_cap = bucket_cap.filter(|&c| c != 0);
    params.validate().or_raise(py)?;
    Ok(params)
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
    if let Some(sim) = p.sim_params() {
        d.set_item("max_hamming", sim.max_hamming)?;
        d.set_item("weighting", sim.weighting.name())?;
    }
    Ok(d)
}
