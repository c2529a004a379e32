//! The engine's b-bit signatures for Python (`mhdb::sketch::bbit`): packing slots at `bits`
//! bits each, and the Jaccard estimate between packed signatures, so that `mhdb.spark`
//! stores and verifies signatures exactly as an index does instead of re-deriving both.

use std::borrow::Cow;

use mhdb::sketch::bbit;
use numpy::ndarray::{Array2, ArrayView2};
use numpy::{IntoPyArray, PyArray1, PyArrayDyn, PyReadonlyArray2, PyReadonlyArrayDyn};
use pyo3::prelude::*;

use crate::errors::{OrRaise, invalid};

/// The rows of a 2-D array as one row-major slice: borrowed when the array is C-contiguous,
/// else copied.
fn row_major<'a, T: Copy>(view: &'a ArrayView2<'_, T>) -> Cow<'a, [T]> {
    match view.as_slice() {
        Some(s) => Cow::Borrowed(s),
        None => Cow::Owned(view.iter().copied().collect()),
    }
}

fn shape_error(e: impl std::fmt::Display) -> PyErr {
    pyo3::exceptions::PyRuntimeError::new_err(e.to_string())
}

/// Bytes that ``num_perm`` slots take packed at ``bits`` bits each (``bits`` one of 1, 2, 4,
/// 8, 16, 32, 64): ``ceil(num_perm * bits / 8)``.
#[pyfunction]
pub fn bbit_packed_len(py: Python<'_>, num_perm: usize, bits: u32) -> PyResult<usize> {
    bbit::validate_bits(bits).or_raise(py)?;
    Ok(bbit::packed_len(num_perm, bits))
}

/// The lowest ``bits`` bits of every slot, packed as an index stores a signature
/// (``format/hashing.md`` §7: slot ``i`` at bits ``i*bits ..`` of a little-endian bit string).
/// ``signatures`` is one ``uint64`` signature (1-D: the result is its packed bytes) or an
/// ``(n, k)`` matrix of them (the result is ``(n, bbit_packed_len(k, bits))`` ``uint8``).
/// Runs without the GIL.
#[pyfunction]
pub fn bbit_pack<'py>(
    py: Python<'py>,
    signatures: PyReadonlyArrayDyn<'py, u64>,
    bits: u32,
) -> PyResult<Bound<'py, PyArrayDyn<u8>>> {
    bbit::validate_bits(bits).or_raise(py)?;
    let view = signatures.as_array();
    let one = view.ndim() == 1;
    let matrix = match view.ndim() {
        1 => view.insert_axis(numpy::ndarray::Axis(0)),
        2 => view,
        d => {
            return Err(invalid(
                py,
                "signatures",
                format!("must be 1-D (one signature) or 2-D (one per row), not {d}-D"),
            ));
        }
    };
    let matrix = matrix
        .into_dimensionality::<numpy::ndarray::Ix2>()
        .map_err(shape_error)?;
    let (n, k) = matrix.dim();
    let width = bbit::packed_len(k, bits);
    let slots = row_major(&matrix);
    let packed = py.detach(|| {
        let mut out = vec![0u8; n * width];
        for (row, sig) in out
            .chunks_exact_mut(width.max(1))
            .zip(slots.chunks(k.max(1)))
        {
            bbit::pack_into(sig, bits, row)?;
        }
        Ok(out)
    });
    let packed = packed.or_raise(py)?;
    let array = Array2::from_shape_vec((n, width), packed).map_err(shape_error)?;
    let array = if one {
        array
            .into_shape_with_order(width)
            .map_err(shape_error)?
            .into_dyn()
    } else {
        array.into_dyn()
    };
    Ok(array.into_pyarray(py))
}

/// The index's Jaccard estimate between packed signatures, row by row: ``a`` and ``b`` are
/// ``(n, bbit_packed_len(num_perm, bits))`` ``uint8`` matrices (as :func:`bbit_pack` makes
/// them); row ``i`` of the result is the estimate of ``a[i]`` against ``b[i]`` from their
/// equal ``bits``-bit slots (the Li & König correction below 64 bits), in the engine's
/// float operations, so that a comparison with a threshold decides as the engine's does.
/// Runs without the GIL.
#[pyfunction]
pub fn bbit_estimate<'py>(
    py: Python<'py>,
    a: PyReadonlyArray2<'py, u8>,
    b: PyReadonlyArray2<'py, u8>,
    num_perm: usize,
    bits: u32,
) -> PyResult<Bound<'py, PyArray1<f64>>> {
    bbit::validate_bits(bits).or_raise(py)?;
    let (a, b) = (a.as_array(), b.as_array());
    let width = bbit::packed_len(num_perm, bits);
    if a.dim() != b.dim() || a.ncols() != width {
        return Err(invalid(
            py,
            "signatures",
            format!(
                "a is {:?} and b {:?}; both must be (n, {width}) for {num_perm} slots of {bits} bits",
                a.dim(),
                b.dim()
            ),
        ));
    }
    let n = a.nrows();
    let (rows_a, rows_b) = (row_major(&a), row_major(&b));
    let estimates = py.detach(|| {
        (0..n)
            .map(|i| {
                let row = i * width..(i + 1) * width;
                let (x, y) = (&rows_a[row.clone()], &rows_b[row]);
                bbit::estimate_packed(x, y, num_perm, bits)
            })
            .collect::<mhdb::Result<Vec<f64>>>()
    });
    Ok(estimates.or_raise(py)?.into_pyarray(py))
}
