//! Ids and texts (or token lists) out of Arrow columns, for Parquet files and Arrow IPC alike:
//! a field found in a schema (by its exact name, else as a path into struct columns) and
//! checked for a type that can be an id, a text or a token list, then read row by row from
//! each batch.

use std::borrow::Cow;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Int8Type, Int16Type, Int32Type, Int64Type, UInt8Type, UInt16Type, UInt32Type, UInt64Type,
};
use arrow_array::{Array, ArrayRef, ArrowPrimitiveType, RecordBatch};
use arrow_schema::{DataType, Fields as SchemaFields, Schema};

use super::keep::{KeepGetter, keep_getter, keep_readable, keep_type_of_column};
use super::{Error, Fields, Id, within_key_limit};
use crate::db::ingest::Content;
use crate::sketch::OwnedToken;
use crate::storage::segment::{KeepType, KeepValue};

/// What a column holds for a record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    Id,
    Text,
    Tokens,
    Keep,
}

/// A field found in a file's schema.
#[derive(Clone, Debug)]
pub struct ColumnPath {
    /// As the user named it.
    field: String,
    /// The names from the top-level column down.
    pub parts: Vec<String>,
}

/// The id and text (or token list) columns of one file.
#[derive(Clone, Debug)]
pub struct Columns {
    id: Option<ColumnPath>,
    text: ColumnPath,
    /// The text column holds token lists.
    tokens: bool,
    /// The keep value's column, when one is captured.
    keep: Option<ColumnPath>,
    /// The keep type the keep column's values have.
    keep_type: Option<KeepType>,
}

/// A record's values as read from a row: its key (none when it comes from its place), its
/// text or token list, and its keep value when one is captured; `Err` says why the row is
/// refused.
pub type RowValues = Result<(Option<Vec<u8>>, Content<String>, Option<KeepValue>), String>;

impl Columns {
    /// Finds the fields in `schema` and checks their types; `file` names the file in errors.
    pub fn find(schema: &Schema, fields: &Fields, file: &str) -> Result<Columns, Error> {
        let id = match &fields.id {
            Id::Field(f) => Some(find(schema, f, Role::Id, file)?.0),
            Id::FromPath => None,
        };
        let role = if fields.tokens {
            Role::Tokens
        } else {
            Role::Text
        };
        let (text, _) = find(schema, &fields.text, role, file)?;
        let keep = fields.keep.as_ref();
        let keep = keep
            .map(|f| find(schema, f, Role::Keep, file))
            .transpose()?;
        Ok(Columns {
            id,
            text,
            tokens: fields.tokens,
            keep_type: keep.as_ref().and_then(|(_, t)| keep_type_of_column(t)),
            keep: keep.map(|(path, _)| path),
        })
    }

    /// The type of the keep column's values, for an index whose keep type is not fixed yet:
    /// `None` when no keep field is read.
    pub fn keep_type(&self) -> Option<KeepType> {
        self.keep_type
    }

    /// The top-level columns read, for a projection.
    pub fn roots(&self) -> impl Iterator<Item = &str> {
        self.paths().map(|c| c.parts[0].as_str())
    }

    /// The paths read, for a projection.
    pub fn paths(&self) -> impl Iterator<Item = &ColumnPath> {
        self.id.iter().chain([&self.text]).chain(&self.keep)
    }

    /// Every row of `batch`, in order, appended to `out`; `file` names the file (or whatever
    /// the batch came from) in errors.
    pub fn rows(
        &self,
        batch: &RecordBatch,
        out: &mut Vec<RowValues>,
        file: &str,
    ) -> Result<(), Error> {
        let id = self
            .id
            .as_ref()
            .map(|c| Values::of(batch, c, file, false))
            .transpose()?;
        let text = Values::of(batch, &self.text, file, self.tokens)?;
        let keep = self
            .keep
            .as_ref()
            .map(|c| KeepValues::of(batch, c, file))
            .transpose()?;
        for row in 0..batch.num_rows() {
            let key = match &id {
                Some(id) => match id.key(row) {
                    Ok(key) => Some(key),
                    Err(e) => {
                        out.push(Err(e));
                        continue;
                    }
                },
                None => None,
            };
            let keep = match &keep {
                Some(keep) => match keep.value(row) {
                    Ok(value) => value,
                    Err(e) => {
                        out.push(Err(e));
                        continue;
                    }
                },
                None => None,
            };
            out.push(text.content(row).map(|content| (key, content, keep)));
        }
        Ok(())
    }
}

/// Finds `field` in `schema`: its exact top-level name, else a dotted path into structs; with
/// its type.
fn find(
    schema: &Schema,
    field: &str,
    role: Role,
    file: &str,
) -> Result<(ColumnPath, DataType), Error> {
    let exact = schema
        .fields()
        .find(field)
        .map(|(_, f)| (vec![field.to_string()], f.data_type()));
    let found = exact.or_else(|| {
        let mut fields: &SchemaFields = schema.fields();
        let mut data_type: Option<&DataType> = None;
        for part in field.split('.') {
            match data_type {
                None => {}
                Some(DataType::Struct(children)) => fields = children,
                Some(_) => return None,
            }
            data_type = Some(fields.find(part)?.1.data_type());
        }
        Some((field.split('.').map(String::from).collect(), data_type?))
    });
    let Some((parts, data_type)) = found else {
        let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
        return Err(Error::new(format!(
            "{file}: no column {field:?} (its columns: {})",
            names.join(", ")
        )));
    };
    if !readable(data_type, role) {
        let wanted = match role {
            Role::Id => "an id column must hold strings, binary or integers",
            Role::Text => "a text column must hold strings or binary",
            Role::Tokens => "a token-list column must be a list of strings or of int32/int64",
            Role::Keep => "a keep column must hold numbers, strings or binary",
        };
        return Err(Error::new(format!(
            "{file}: column {field:?} is of type {data_type}; {wanted}"
        )));
    }
    let path = ColumnPath {
        field: field.to_string(),
        parts,
    };
    Ok((path, data_type.clone()))
}

fn readable(data_type: &DataType, role: Role) -> bool {
    use DataType as D;
    if role == Role::Keep {
        return keep_readable(data_type);
    }
    if role == Role::Tokens {
        return match data_type {
            D::List(item) | D::LargeList(item) => token_element(item.data_type()),
            _ => false,
        };
    }
    if let D::Dictionary(_, values) = data_type {
        return readable(values, role);
    }
    let bytes = matches!(
        data_type,
        D::Utf8 | D::LargeUtf8 | D::Utf8View | D::Binary | D::LargeBinary | D::BinaryView
    ) || matches!(data_type, D::FixedSizeBinary(_));
    bytes || (role == Role::Id && data_type.is_integer())
}

/// Whether a list of `data_type` holds tokens: strings, or 32- or 64-bit integers.
fn token_element(data_type: &DataType) -> bool {
    use DataType as D;
    matches!(
        data_type,
        D::Utf8 | D::LargeUtf8 | D::Utf8View | D::Int32 | D::Int64
    )
}

/// A keep column of a batch, read row by row.
struct KeepValues<'b> {
    field: &'b str,
    /// The column and the structs above it: a row is null if any of them is.
    levels: Vec<&'b ArrayRef>,
    get: KeepGetter<'b>,
}

impl<'b> KeepValues<'b> {
    fn of(batch: &'b RecordBatch, path: &'b ColumnPath, file: &str) -> Result<Self, Error> {
        let levels = column_levels(batch, path, file)?;
        let column = levels[levels.len() - 1];
        let get = keep_getter(column).ok_or_else(|| changed_type(file, path, column))?;
        Ok(KeepValues {
            field: &path.field,
            levels,
            get,
        })
    }

    /// The row's keep value: none when it is null.
    fn value(&self, row: usize) -> Result<Option<KeepValue>, String> {
        if self.levels.iter().any(|a| a.is_null(row)) {
            return Ok(None);
        }
        (self.get)(row)
            .map(Some)
            .map_err(|why| format!("column {:?} {why}", self.field))
    }
}

/// The column at `path` in `batch` and the structs above it, top first.
fn column_levels<'b>(
    batch: &'b RecordBatch,
    path: &ColumnPath,
    file: &str,
) -> Result<Vec<&'b ArrayRef>, Error> {
    let missing = || Error::new(format!("{file}: no column {:?} in a batch", path.field));
    let mut column = batch.column_by_name(&path.parts[0]).ok_or_else(missing)?;
    let mut levels = vec![column];
    for part in &path.parts[1..] {
        let parent = column.as_struct_opt().ok_or_else(missing)?;
        column = parent.column_by_name(part).ok_or_else(missing)?;
        levels.push(column);
    }
    Ok(levels)
}

fn changed_type(file: &str, path: &ColumnPath, column: &ArrayRef) -> Error {
    Error::new(format!(
        "{file}: column {:?} changed type to {} within the file",
        path.field,
        column.data_type()
    ))
}

/// Reads one row of a column as bytes.
pub(super) type Getter<'b> = Box<dyn Fn(usize) -> Cow<'b, [u8]> + 'b>;

/// How one column of a batch is read.
enum Reading<'b> {
    Bytes(Getter<'b>),
    Tokens(&'b ArrayRef),
}

/// One column of a batch, read row by row.
struct Values<'b> {
    field: &'b str,
    /// The column and the structs above it: a row is null if any of them is.
    levels: Vec<&'b ArrayRef>,
    get: Reading<'b>,
}

impl<'b> Values<'b> {
    fn of(
        batch: &'b RecordBatch,
        path: &'b ColumnPath,
        file: &str,
        tokens: bool,
    ) -> Result<Self, Error> {
        let levels = column_levels(batch, path, file)?;
        let column = levels[levels.len() - 1];
        let readable = if tokens {
            readable(column.data_type(), Role::Tokens).then_some(Reading::Tokens(column))
        } else {
            getter(column).map(Reading::Bytes)
        };
        let get = readable.ok_or_else(|| changed_type(file, path, column))?;
        Ok(Values {
            field: &path.field,
            levels,
            get,
        })
    }

    fn value(&self, row: usize) -> Result<Cow<'b, [u8]>, String> {
        self.check_not_null(row)?;
        match &self.get {
            Reading::Bytes(get) => Ok(get(row)),
            Reading::Tokens(_) => Err(format!("column {:?} holds lists", self.field)),
        }
    }

    fn check_not_null(&self, row: usize) -> Result<(), String> {
        if self.levels.iter().any(|a| a.is_null(row)) {
            return Err(format!("column {:?} is null", self.field));
        }
        Ok(())
    }

    /// The row's text, or its token list.
    fn content(&self, row: usize) -> Result<Content<String>, String> {
        match &self.get {
            Reading::Bytes(_) => self.text(row).map(Content::Text),
            Reading::Tokens(column) => {
                self.check_not_null(row)?;
                let list = match column.data_type() {
                    DataType::LargeList(_) => column.as_list::<i64>().value(row),
                    _ => column.as_list::<i32>().value(row),
                };
                list_tokens(&list)
                    .map(Content::Tokens)
                    .map_err(|(i, why)| format!("column {:?} element {i} {why}", self.field))
            }
        }
    }

    fn key(&self, row: usize) -> Result<Vec<u8>, String> {
        within_key_limit(self.value(row)?.into_owned())
            .map_err(|e| format!("column {:?} {e}", self.field))
    }

    fn text(&self, row: usize) -> Result<String, String> {
        let bytes = self.value(row)?;
        match bytes {
            Cow::Borrowed(b) => std::str::from_utf8(b).map(str::to_string),
            Cow::Owned(b) => String::from_utf8(b).map_err(|e| e.utf8_error()),
        }
        .map_err(|e| {
            format!(
                "column {:?} is not UTF-8 (byte {} of the value)",
                self.field,
                e.valid_up_to()
            )
        })
    }
}

/// The tokens of one list value; `Err`: the element refused and why.
fn list_tokens(list: &ArrayRef) -> Result<Vec<OwnedToken>, (usize, &'static str)> {
    if let Some(i) = (0..list.len()).find(|&i| list.is_null(i)) {
        return Err((i, "is null; tokens are strings or integers"));
    }
    // Nulls are refused above, so every element has a value.
    let strings = |values: &mut dyn Iterator<Item = Option<&str>>| {
        values
            .map(|v| OwnedToken::Str(v.unwrap_or_default().to_string()))
            .collect()
    };
    Ok(match list.data_type() {
        DataType::Utf8 => strings(&mut list.as_string::<i32>().iter()),
        DataType::LargeUtf8 => strings(&mut list.as_string::<i64>().iter()),
        DataType::Utf8View => strings(&mut list.as_string_view().iter()),
        DataType::Int32 => list
            .as_primitive::<Int32Type>()
            .values()
            .iter()
            .map(|&v| OwnedToken::Int(i64::from(v)))
            .collect(),
        _ => list
            .as_primitive::<Int64Type>()
            .values()
            .iter()
            .map(|&v| OwnedToken::Int(v))
            .collect(),
    })
}

/// Reads a row of `column` as bytes: strings and binary as they are, integers as their
/// decimal digits, dictionary-encoded columns as their values.
pub(super) fn getter<'b>(column: &'b ArrayRef) -> Option<Getter<'b>> {
    use DataType as D;
    fn int<'b, T: ArrowPrimitiveType>(c: &'b ArrayRef) -> Getter<'b>
    where
        T::Native: ToString,
    {
        let a = c.as_primitive::<T>();
        Box::new(move |i| Cow::Owned(a.value(i).to_string().into_bytes()))
    }
    Some(match column.data_type() {
        D::Utf8 => {
            let a = column.as_string::<i32>();
            Box::new(move |i| Cow::Borrowed(a.value(i).as_bytes()))
        }
        D::LargeUtf8 => {
            let a = column.as_string::<i64>();
            Box::new(move |i| Cow::Borrowed(a.value(i).as_bytes()))
        }
        D::Utf8View => {
            let a = column.as_string_view();
            Box::new(move |i| Cow::Borrowed(a.value(i).as_bytes()))
        }
        D::Binary => {
            let a = column.as_binary::<i32>();
            Box::new(move |i| Cow::Borrowed(a.value(i)))
        }
        D::LargeBinary => {
            let a = column.as_binary::<i64>();
            Box::new(move |i| Cow::Borrowed(a.value(i)))
        }
        D::BinaryView => {
            let a = column.as_binary_view();
            Box::new(move |i| Cow::Borrowed(a.value(i)))
        }
        D::FixedSizeBinary(_) => {
            let a = column.as_fixed_size_binary();
            Box::new(move |i| Cow::Borrowed(a.value(i)))
        }
        D::Dictionary(..) => {
            // Each row is the value its key points at (pandas categoricals, for one).
            let dictionary = column.as_any_dictionary();
            let keys = dictionary.normalized_keys();
            let values = getter(dictionary.values())?;
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
        _ => return None,
    })
}
