//! The columns annotating adds to every row: `cluster` (the kept document the row's document
//! attaches to; itself when kept), `keep`, `best_match` (its most similar kept neighbour, for
//! a dropped row) and `similarity` (with it). Null where not applicable: a row whose id is
//! not in the index has only `keep` (true).

use std::fmt::Write as _;
use std::sync::Arc;

use arrow_array::builder::{BinaryBuilder, BooleanBuilder, Float64Builder, StringBuilder};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use super::ApplyError;

/// Annotate instead of dropping: the added columns' names start with `prefix`.
#[derive(Clone, Debug, Default)]
pub struct Annotate {
    /// Put before each added column's name (empty: `cluster`, `keep`, ...).
    pub prefix: String,
}

impl Annotate {
    /// The added columns' names, in order.
    pub fn names(&self) -> [String; 4] {
        ["cluster", "keep", "best_match", "similarity"].map(|n| format!("{}{n}", self.prefix))
    }

    /// Refuses when one of the names is taken by a column for which `taken` is true.
    pub fn check(&self, file: &str, taken: impl Fn(&str) -> bool) -> Result<(), ApplyError> {
        match self.names().into_iter().find(|n| taken(n)) {
            Some(name) => Err(ApplyError::Usage(format!(
                "{file}: column {name:?} is taken; --annotate-prefix P names the added columns \
                 P{}",
                name.strip_prefix(&self.prefix).unwrap_or(&name)
            ))),
            None => Ok(()),
        }
    }
}

/// What annotating adds to one row.
#[derive(Clone, Debug, PartialEq)]
pub struct Note {
    pub cluster: Option<Vec<u8>>,
    pub keep: bool,
    pub best_match: Option<Vec<u8>>,
    pub similarity: Option<f64>,
    /// The row's id is in the index.
    pub in_index: bool,
}

impl Note {
    /// The added members of a JSON object, each `,"name":value` (`first`: no comma before
    /// the first one).
    pub fn json_members(&self, names: &[String; 4], first: bool) -> String {
        let values = [
            json_key(self.cluster.as_deref()),
            self.keep.to_string(),
            json_key(self.best_match.as_deref()),
            self.similarity
                .map_or_else(|| "null".to_string(), |s| serde_json::json!(s).to_string()),
        ];
        let mut out = String::new();
        for (i, (name, value)) in names.iter().zip(values).enumerate() {
            if i > 0 || !first {
                out.push(',');
            }
            let _ = write!(out, "{}:{value}", serde_json::json!(name));
        }
        out
    }

    /// The added fields of a CSV/TSV record, as bytes (empty for null).
    pub fn fields(&self) -> [Vec<u8>; 4] {
        [
            self.cluster.clone().unwrap_or_default(),
            self.keep.to_string().into_bytes(),
            self.best_match.clone().unwrap_or_default(),
            self.similarity
                .map(|s| s.to_string().into_bytes())
                .unwrap_or_default(),
        ]
    }
}

/// A key as JSON: a string, `{"hex": ...}` for bytes that are not UTF-8 (as `add` reads
/// keys), or null.
fn json_key(key: Option<&[u8]>) -> String {
    let Some(key) = key else {
        return "null".to_string();
    };
    match std::str::from_utf8(key) {
        Ok(s) => serde_json::json!(s).to_string(),
        Err(_) => {
            let hex: String = key.iter().map(|b| format!("{b:02x}")).collect();
            serde_json::json!({ "hex": hex }).to_string()
        }
    }
}

/// The added Arrow columns: keys as strings, or as binary where the ids are binary.
pub struct ArrowNotes {
    names: [String; 4],
    binary_keys: bool,
}

impl ArrowNotes {
    /// For ids read from a column of type `id_type` (`None`: ids from the path, strings).
    pub fn new(annotate: &Annotate, id_type: Option<&DataType>) -> Self {
        let binary = |t: &DataType| {
            matches!(
                t,
                DataType::Binary
                    | DataType::LargeBinary
                    | DataType::BinaryView
                    | DataType::FixedSizeBinary(_)
            )
        };
        let binary_keys = match id_type {
            Some(DataType::Dictionary(_, values)) => binary(values),
            Some(t) => binary(t),
            None => false,
        };
        ArrowNotes {
            names: annotate.names(),
            binary_keys,
        }
    }

    /// `schema` with the added columns after its own (its metadata kept).
    pub fn schema(&self, schema: &Schema) -> SchemaRef {
        let key = if self.binary_keys {
            DataType::Binary
        } else {
            DataType::Utf8
        };
        let types = [key.clone(), DataType::Boolean, key, DataType::Float64];
        let mut fields: Vec<Field> = schema.fields().iter().map(|f| f.as_ref().clone()).collect();
        for (name, t) in self.names.iter().zip(types) {
            fields.push(Field::new(name, t, true));
        }
        Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()))
    }

    /// `batch` with the notes of its rows added as columns of `schema` (from [`Self::schema`]).
    pub fn batch(
        &self,
        batch: &RecordBatch,
        notes: &[Note],
        schema: &SchemaRef,
    ) -> Result<RecordBatch, ApplyError> {
        let mut columns: Vec<ArrayRef> = batch.columns().to_vec();
        columns.push(self.keys(notes.iter().map(|n| n.cluster.as_deref())));
        let mut keep = BooleanBuilder::with_capacity(notes.len());
        notes.iter().for_each(|n| keep.append_value(n.keep));
        columns.push(Arc::new(keep.finish()));
        columns.push(self.keys(notes.iter().map(|n| n.best_match.as_deref())));
        let mut similarity = Float64Builder::with_capacity(notes.len());
        notes
            .iter()
            .for_each(|n| similarity.append_option(n.similarity));
        columns.push(Arc::new(similarity.finish()));
        RecordBatch::try_new(schema.clone(), columns)
            .map_err(|e| ApplyError::Other(format!("cannot add the columns: {e}")))
    }

    fn keys<'k>(&self, keys: impl Iterator<Item = Option<&'k [u8]>>) -> ArrayRef {
        if self.binary_keys {
            let mut b = BinaryBuilder::new();
            keys.for_each(|k| b.append_option(k));
            Arc::new(b.finish())
        } else {
            let mut b = StringBuilder::new();
            // Ids read from strings, integers or paths are UTF-8.
            keys.for_each(|k| b.append_option(k.map(String::from_utf8_lossy)));
            Arc::new(b.finish())
        }
    }
}

/// The type of the column `field` names in `schema` (its exact name, else a dotted path into
/// structs, as ids are found).
pub fn field_type<'s>(schema: &'s Schema, field: &str) -> Option<&'s DataType> {
    if let Ok(f) = schema.field_with_name(field) {
        return Some(f.data_type());
    }
    let mut fields = schema.fields();
    let mut found: Option<&DataType> = None;
    for part in field.split('.') {
        if let Some(DataType::Struct(children)) = found {
            fields = children;
        } else if found.is_some() {
            return None;
        }
        found = Some(fields.find(part)?.1.data_type());
    }
    found
}
