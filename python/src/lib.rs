//! The Python binding of mhdb: the compiled module `mhdb._mhdb`, re-exported by the `mhdb`
//! package (`python/mhdb/__init__.py`). Built by maturin (`pip install ./python`).
//!
//! Every call that does real work releases the GIL (`Python::detach`) around it; the
//! exceptions are the classes of `mhdb/_errors.py`, built from `mhdb::Error` by [`errors`].

#![deny(unsafe_code)]

pub mod arrow;
pub mod banding;
pub mod bbit;
pub mod convert;
pub mod dedup_table;
pub mod errors;
pub mod hasher;
pub mod index;
pub mod ingest;
pub mod params;
pub mod reads;
pub mod shards;
pub mod tokens;

use pyo3::prelude::*;

/// The compiled part of the `mhdb` package.
#[pymodule]
fn _mhdb(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<hasher::PyMinHasher>()?;
    m.add_function(wrap_pyfunction!(banding::index_params_for, m)?)?;
    m.add_function(wrap_pyfunction!(banding::cap_ranks, m)?)?;
    m.add_function(wrap_pyfunction!(bbit::bbit_pack, m)?)?;
    m.add_function(wrap_pyfunction!(bbit::bbit_estimate, m)?)?;
    m.add_function(wrap_pyfunction!(bbit::bbit_packed_len, m)?)?;
    m.add_class::<index::PyIndex>()?;
    m.add_class::<reads::QueryIterator>()?;
    m.add_class::<shards::PyShards>()?;
    m.add("SPEC_VERSION", mhdb::sketch::SPEC_VERSION)?;
    m.add("MAX_KEY_LEN", mhdb::db::MAX_KEY_LEN)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
