//! `mhdb::Error` → the Python exception classes of `mhdb/_errors.py`, with the Rust error's
//! details (path, offset, detail, parameter, …) as attributes.

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

/// Builds the Python exception for `e`. The classes live in `mhdb._errors` (Python, so that
/// `InvalidParameterError` can also be a `ValueError` and `IoError` an `OSError`).
pub fn to_py(py: Python<'_>, e: mhdb::Error) -> PyErr {
    match build(py, &e) {
        Ok(err) => err,
        // The error module could not be imported (a broken install): still say what failed.
        Err(import_failure) => {
            let err = PyRuntimeError::new_err(e.to_string());
            err.set_cause(py, Some(import_failure));
            err
        }
    }
}

/// The exception for "this handle was closed".
pub fn closed(py: Python<'_>) -> PyErr {
    simple(py, "Error", "the index is closed")
}

/// An exception of class `class` (from `mhdb._errors`) with a message and no details.
pub fn simple(py: Python<'_>, class: &str, message: &str) -> PyErr {
    let made = || -> PyResult<PyErr> {
        let cls = py.import("mhdb._errors")?.getattr(class)?;
        Ok(PyErr::from_value(cls.call1((message,))?))
    };
    made().unwrap_or_else(|e| e)
}

/// An `InvalidParameterError` naming `parameter`.
pub fn invalid(py: Python<'_>, parameter: &'static str, reason: impl Into<String>) -> PyErr {
    to_py(py, mhdb::Error::invalid(parameter, reason))
}

fn build(py: Python<'_>, e: &mhdb::Error) -> PyResult<PyErr> {
    use mhdb::Error as E;
    let module = py.import("mhdb._errors")?;
    let class = match e {
        E::InvalidParameter { .. } => "InvalidParameterError",
        E::ParameterMismatch { name: "scheme", .. } => "SchemeMismatchError",
        E::ParameterMismatch { .. } => "ParameterMismatchError",
        E::Io { .. } | E::PreviousIo { .. } => "IoError",
        E::Corruption { .. } => "CorruptionError",
        E::UnsupportedVersion { .. } => "UnsupportedVersionError",
        E::NotFound { .. } => "NotFoundError",
        E::Locked { .. } => "LockedError",
        E::ReadOnly => "ReadOnlyError",
        _ => "Error",
    };
    let exc = module.getattr(class)?.call1((e.to_string(),))?;
    let set = |name: &str, value: Bound<'_, PyAny>| exc.setattr(name, value);
    let path = |p: &std::path::Path| p.to_string_lossy().into_owned();
    match e {
        E::InvalidParameter { name, reason } => {
            set("parameter", name.into_pyobject(py)?.into_any())?;
            set("detail", reason.into_pyobject(py)?.into_any())?;
        }
        E::ParameterMismatch {
            name,
            stored,
            requested,
        } => {
            set("parameter", name.into_pyobject(py)?.into_any())?;
            set("stored", stored.into_pyobject(py)?.into_any())?;
            set("requested", requested.into_pyobject(py)?.into_any())?;
            set(
                "detail",
                format!("stored {stored}, requested {requested}")
                    .into_pyobject(py)?
                    .into_any(),
            )?;
        }
        E::Io {
            path: p,
            op,
            source,
        } => {
            if let Some(p) = p {
                set("path", path(p).into_pyobject(py)?.into_any())?;
                set("filename", path(p).into_pyobject(py)?.into_any())?;
            }
            set("op", op.into_pyobject(py)?.into_any())?;
            set("detail", source.to_string().into_pyobject(py)?.into_any())?;
            set("strerror", source.to_string().into_pyobject(py)?.into_any())?;
            if let Some(errno) = source.raw_os_error() {
                set("errno", errno.into_pyobject(py)?.into_any())?;
            }
        }
        E::PreviousIo { cause } => {
            set("detail", e.to_string().into_pyobject(py)?.into_any())?;
            if !cause.is_empty() {
                set("cause", cause.into_pyobject(py)?.into_any())?;
            }
        }
        E::Corruption {
            path: p,
            offset,
            detail,
        } => {
            set("path", path(p).into_pyobject(py)?.into_any())?;
            set("offset", offset.into_pyobject(py)?.into_any())?;
            set("detail", detail.into_pyobject(py)?.into_any())?;
        }
        E::UnsupportedVersion {
            path: p,
            found,
            supported,
        } => {
            set("path", path(p).into_pyobject(py)?.into_any())?;
            set("found", found.into_pyobject(py)?.into_any())?;
            set("supported", supported.into_pyobject(py)?.into_any())?;
            set("detail", e.to_string().into_pyobject(py)?.into_any())?;
        }
        E::NotFound { path: p } | E::Locked { path: p, .. } => {
            set("path", path(p).into_pyobject(py)?.into_any())?;
            set("detail", e.to_string().into_pyobject(py)?.into_any())?;
        }
        _ => {
            set("detail", e.to_string().into_pyobject(py)?.into_any())?;
        }
    }
    Ok(PyErr::from_value(exc))
}

/// `.map_err` adapter: `result.or_raise(py)?`.
pub trait OrRaise<T> {
    /// Converts an `mhdb::Error` into the matching Python exception.
    fn or_raise(self, py: Python<'_>) -> PyResult<T>;
}

impl<T> OrRaise<T> for mhdb::Result<T> {
    fn or_raise(self, py: Python<'_>) -> PyResult<T> {
        self.map_err(|e| to_py(py, e))
    }
}
