//! Keep values (`add --keep-field`) out of each format, by one rule: numbers are numbers
//! (integers as integers, others as floats), strings are strings, and a null, a missing field
//! or an empty CSV field is no value. A value of any other kind (a boolean, an array, an
//! object) refuses the record naming the field. Whether the value fits the index's KEEP
//! column (a NaN, a float in an integer column) is the ingest's rule, checked when signing.

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Float16Type, Float32Type, Float64Type, Int8Type, Int16Type, Int32Type, Int64Type, UInt8Type,
    UInt16Type, UInt32Type, UInt64Type,
};
use arrow_array::{Array, ArrayRef, ArrowPrimitiveType};
use arrow_schema::DataType;

use super::columns::getter;
use crate::storage::segment::KeepValue;

/// A JSON value as a keep value; `Err`: why it cannot be one, for the caller to prefix with
/// the field and line.
#[cfg(feature = "input")]
pub(super) fn keep_from_json(value: &serde_json::Value) -> Result<Option<KeepValue>, String> {
    use serde_json::Value;
    match value {
        Value::Null => Ok(None),
        Value::Number(n) => Ok(Some(match n.as_i64() {
            Some(i) => KeepValue::Int(i),
            None => KeepValue::Float(n.as_f64().unwrap_or(f64::NAN)),
        })),
        Value::String(s) => Ok(Some(KeepValue::Str(s.as_bytes().into()))),
        Value::Bool(_) => Err("is a boolean: a keep value is a number or a string".into()),
        Value::Array(_) => Err("is an array: a keep value is a number or a string".into()),
        Value::Object(_) => Err("is an object: a keep value is a number or a string".into()),
    }
}

/// A CSV/TSV field as a keep value: empty is none; what parses as an integer or a float is
/// one; anything else is a string.
#[cfg(feature = "input")]
pub(super) fn keep_from_field(bytes: &[u8]) -> Option<KeepValue> {
    if bytes.is_empty() {
        return None;
    }
    let text = std::str::from_utf8(bytes).ok();
    let int = text.and_then(|t| t.parse::<i64>().ok()).map(KeepValue::Int);
    let float = || {
        text.and_then(|t| t.parse::<f64>().ok())
            .filter(|f| f.is_finite())
            .map(KeepValue::Float)
    };
    Some(
        int.or_else(float)
            .unwrap_or_else(|| KeepValue::Str(bytes.into())),
    )
}

/// Reads one row of a column as a keep value (the row is not null).
pub(super) type KeepGetter<'b> = Box<dyn Fn(usize) -> Result<KeepValue, String> + 'b>;

/// Whether a column of `data_type` can hold keep values.
pub(super) fn keep_readable(data_type: &DataType) -> bool {
    use DataType as D;
    match data_type {
        D::Dictionary(_, values) => keep_readable(values),
        D::Utf8 | D::LargeUtf8 | D::Utf8View | D::Binary | D::LargeBinary | D::BinaryView => true,
        d => d.is_integer() || d.is_floating(),
    }
}

/// Reads `column`'s rows as keep values: integers, floats, strings and binary (its bytes),
/// dictionary-encoded too.
pub(super) fn keep_getter<'b>(column: &'b ArrayRef) -> Option<KeepGetter<'b>> {
    use DataType as D;
    fn int<'b, T: ArrowPrimitiveType>(c: &'b ArrayRef) -> KeepGetter<'b>
    where
        T::Native: TryInto<i64>,
    {
        let a = c.as_primitive::<T>();
        Box::new(move |i| {
            a.value(i)
                .try_into()
                .map(KeepValue::Int)
                .map_err(|_| "is past the signed 64-bit range".to_string())
        })
    }
    fn float<'b, T: ArrowPrimitiveType>(c: &'b ArrayRef) -> KeepGetter<'b>
    where
        T::Native: Into<f64>,
    {
        let a = c.as_primitive::<T>();
        Box::new(move |i| Ok(KeepValue::Float(a.value(i).into())))
    }
    Some(match column.data_type() {
        D::Dictionary(..) => {
            let dictionary = column.as_any_dictionary();
            let keys = dictionary.normalized_keys();
            let values = keep_getter(dictionary.values())?;
            Box::new(move |i| values(keys[i]))
        }
        D::Int8 => int::<Int8Type>(column),
        D::Int16 => int::<Int16Type>(column),
        D::Int32 => int::<Int32Type>(column),
        D::Int64 => int::<Int64Type>(column),
        D::UInt8 => int::<UInt8Type>(column),
        D::UInt16 => int::<UInt16Type>(column),
        D::UInt32 => int::<UInt32Type>(column),
        D::UInt64 => int::<UInt64Type>(column),
        D::Float16 => {
            let a = column.as_primitive::<Float16Type>();
            Box::new(move |i| Ok(KeepValue::Float(a.value(i).to_f64())))
        }
        D::Float32 => float::<Float32Type>(column),
        D::Float64 => float::<Float64Type>(column),
        // Strings and binary: their bytes, read as ids and texts are.
        _ => {
            let get = getter(column)?;
            Box::new(move |i| Ok(KeepValue::Str(get(i).into_owned().into())))
        }
    })
}

/// The keep type a column of `data_type` gives an index that has none yet: integers i64,
/// floats f64, strings and binary string.
pub(super) fn keep_type_of_column(
    data_type: &DataType,
) -> Option<crate::storage::segment::KeepType> {
    use crate::storage::segment::KeepType;
    match data_type {
        DataType::Dictionary(_, values) => keep_type_of_column(values),
        d if d.is_integer() => Some(KeepType::I64),
        d if d.is_floating() => Some(KeepType::F64),
        d if keep_readable(d) => Some(KeepType::Str),
        _ => None,
    }
}

#[cfg(all(test, feature = "input"))]
mod tests {
    use super::*;

    #[test]
    fn json_numbers_and_strings_are_values_null_is_none() {
        let v = |s: &str| keep_from_json(&serde_json::from_str(s).unwrap());
        assert_eq!(v("3").unwrap(), Some(KeepValue::Int(3)));
        assert_eq!(v("-2.5").unwrap(), Some(KeepValue::Float(-2.5)));
        assert_eq!(
            v("18446744073709551615").unwrap(),
            Some(KeepValue::Float(1.8446744073709552e19))
        );
        assert_eq!(v("\"b\"").unwrap(), Some(KeepValue::Str(b"b"[..].into())));
        assert_eq!(v("null").unwrap(), None);
        assert!(v("true").unwrap_err().contains("boolean"));
        assert!(v("[1]").unwrap_err().contains("array"));
    }

    #[test]
    fn csv_fields_are_numbers_when_they_parse() {
        assert_eq!(keep_from_field(b""), None);
        assert_eq!(keep_from_field(b"42"), Some(KeepValue::Int(42)));
        assert_eq!(keep_from_field(b"0.25"), Some(KeepValue::Float(0.25)));
        assert_eq!(
            keep_from_field(b"NaN"),
            Some(KeepValue::Str(b"NaN"[..].into()))
        );
        assert_eq!(
            keep_from_field(b"en"),
            Some(KeepValue::Str(b"en"[..].into()))
        );
    }
}
