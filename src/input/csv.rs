//! CSV and TSV with a header line (RFC 4180 quoting, with `,` or a tab between fields): the id
//! and text columns are named by the header, exactly. A record is placed by the line it starts
//! on; a record with more or fewer fields than the header is refused in its place.

use std::io::Read;

use csv::{ByteRecord, ErrorKind, ReaderBuilder};

use super::reader::{RowBatch, Rows};
use super::within_key_limit;
use super::{BATCH_ROWS, Error, Fields, Id, Position};

/// The records of one CSV or TSV input.
pub struct CsvRows {
    name: String,
    reader: csv::Reader<Box<dyn Read + Send>>,
    /// The id's field number (none: the id comes from the record's place) and name.
    id: Option<(usize, String)>,
    /// The text's field number and name.
    text: (usize, String),
}

impl CsvRows {
    /// Reads the header of `reader`, named `name`, and finds the columns.
    pub fn open(
        reader: Box<dyn Read + Send>,
        delimiter: u8,
        name: &str,
        fields: &Fields,
    ) -> Result<Self, Error> {
        let mut reader = ReaderBuilder::new()
            .delimiter(delimiter)
            .has_headers(true)
            .from_reader(reader);
        let header = reader
            .byte_headers()
            .map_err(|e| Error::new(format!("{name}: read error: {e}")))?
            .clone();
        let find = |field: &str| {
            let index = header.iter().position(|h| h == field.as_bytes());
            index.map(|i| (i, field.to_string())).ok_or_else(|| {
                let names: Vec<_> = header.iter().map(String::from_utf8_lossy).collect();
                Error::new(format!(
                    "{name}: no column {field:?} in its header (its columns: {})",
                    names.join(", ")
                ))
            })
        };
        let id = match &fields.id {
            Id::Field(f) => Some(find(f)?),
            Id::FromPath => None,
        };
        let text = find(&fields.text)?;
        Ok(CsvRows {
            name: name.to_string(),
            reader,
            id,
            text,
        })
    }

    /// The id and text of a record.
    fn values(&self, record: &ByteRecord) -> Result<(Option<Vec<u8>>, String), String> {
        let key = match &self.id {
            Some((i, field)) => Some(
                within_key_limit(record.get(*i).unwrap_or_default().to_vec())
                    .map_err(|e| format!("column {field:?} {e}"))?,
            ),
            None => None,
        };
        let (i, field) = &self.text;
        let text = std::str::from_utf8(record.get(*i).unwrap_or_default()).map_err(|e| {
            format!(
                "column {field:?} is not UTF-8 (byte {} of the value)",
                e.valid_up_to()
            )
        })?;
        Ok((key, text.to_string()))
    }
}

impl Rows for CsvRows {
    fn next_batch(&mut self) -> Result<Option<RowBatch>, Error> {
        let mut rows = Vec::new();
        let mut record = ByteRecord::new();
        while rows.len() < BATCH_ROWS {
            match self.reader.read_byte_record(&mut record) {
                Ok(false) => break,
                Ok(true) => {
                    let line = record.position().map_or(0, |p| p.line()) as usize;
                    rows.push((Position::Line(line), self.values(&record)));
                }
                Err(e) => match e.kind() {
                    ErrorKind::UnequalLengths {
                        pos,
                        expected_len,
                        len,
                    } => {
                        let line = pos.as_ref().map_or(0, |p| p.line()) as usize;
                        let fault = format!("{len} fields where the header has {expected_len}");
                        rows.push((Position::Line(line), Err(fault)));
                    }
                    _ => return Err(Error::new(format!("{}: read error: {e}", self.name))),
                },
            }
        }
        Ok((!rows.is_empty()).then_some(RowBatch { rows }))
    }
}
