//! CSV and TSV with a header line (RFC 4180 quoting, with `,` or a tab between fields): the id
//! and text columns are named by the header, exactly. A record is placed by the line it starts
//! on; a record with more or fewer fields than the header is refused in its place. A record
//! longer than the per-document limit stops the reading, naming its line and byte offset,
//! after no more than the limit is read of it (passing over it would mean parsing its quoting
//! without the CSV reader, which holds a record whole).

use std::io::{self, Read};

use csv::{ByteRecord, ErrorKind, ReaderBuilder};

use super::keep::keep_from_field;
use super::reader::{RowBatch, Rows};
use super::{BATCH_ROWS, Error, Fields, Id, Position};
use super::{Limit, RowValues, within_key_limit};
use crate::db::ingest::Content;

/// The bytes under the CSV reader, given out no further than a bound past the start of the
/// record being read: the reader holds a record whole, so a field of gigabytes would otherwise
/// be held whole before any check of its length.
struct RecordBounded {
    inner: Box<dyn Read + Send>,
    /// Bytes given out so far.
    given: u64,
    /// Given out up to here, the record being read is too long.
    bound: u64,
    /// A read was refused at the bound.
    refused: bool,
}

impl Read for RecordBounded {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let room = self.bound.saturating_sub(self.given);
        if room == 0 {
            self.refused = true;
            return Err(io::Error::other("a record longer than the limit"));
        }
        let len = buf.len().min(usize::try_from(room).unwrap_or(usize::MAX));
        let n = self.inner.read(&mut buf[..len])?;
        self.given += n as u64;
        Ok(n)
    }
}

/// The records of one CSV or TSV input.
pub struct CsvRows {
    name: String,
    reader: csv::Reader<RecordBounded>,
    /// The longest record, in bytes.
    limit: Limit,
    /// The records are decompressed from the file: their byte offsets are not the file's.
    decompressed: bool,
    /// The id's field number (none: the id comes from the record's place) and name.
    id: Option<(usize, String)>,
    /// The text's field number and name.
    text: (usize, String),
    /// The keep value's field number, when one is captured.
    keep: Option<usize>,
}

impl CsvRows {
    /// The records of `reader`, named `name`, its fields separated by `delimiter`; a record
    /// longer than `limit` (the header too) will stop the reading. Nothing is read before
    /// [`CsvRows::find_columns`].
    pub(super) fn new(
        reader: Box<dyn Read + Send>,
        delimiter: u8,
        name: &str,
        limit: &Limit,
    ) -> Self {
        let bounded = RecordBounded {
            inner: reader,
            given: 0,
            bound: 0,
            refused: false,
        };
        CsvRows {
            name: name.to_string(),
            reader: ReaderBuilder::new()
                .delimiter(delimiter)
                .has_headers(true)
                .from_reader(bounded),
            limit: limit.clone(),
            decompressed: false,
            id: None,
            text: (0, String::new()),
            keep: None,
        }
    }

    /// Reads the header and finds the columns of `fields` in it.
    pub(super) fn find_columns(mut self, fields: &Fields) -> Result<Self, Error> {
        let name = self.name.clone();
        self.bound_next_record();
        let start = self.reader.position().clone();
        let header = match self.reader.byte_headers() {
            Ok(header) => header.clone(),
            Err(e) => return Err(self.read_error(&start, e)),
        };
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
        self.id = match &fields.id {
            Id::Field(f) => Some(find(f)?),
            Id::FromPath => None,
        };
        if fields.tokens {
            return Err(Error::new(format!(
                "{name}: a CSV/TSV field holds no list; read token lists from JSON Lines, Parquet \
                 or Arrow"
            )));
        }
        self.text = find(&fields.text)?;
        self.keep = fields
            .keep
            .as_deref()
            .map(find)
            .transpose()?
            .map(|(i, _)| i);
        Ok(self)
    }

    /// The same records, read from a decompressed stream: the byte offsets messages give are
    /// said to be of the decompressed data.
    pub(super) fn decompressed(mut self) -> Self {
        self.decompressed = true;
        self
    }

    /// Lets the reader read the next record up to the limit past its start: its bytes and
    /// its line end, and one more to look at after a closing quote.
    fn bound_next_record(&mut self) {
        let start = self.reader.position().byte();
        self.reader.get_mut().bound = start.saturating_add(self.limit.bytes).saturating_add(2);
    }

    /// The error that stops the reading at the record starting at `start`.
    fn read_error(&self, start: &csv::Position, e: csv::Error) -> Error {
        if !self.reader.get_ref().refused {
            return Error::new(format!("{}: read error: {e}", self.name));
        }
        let of = if self.decompressed {
            " of the decompressed data"
        } else {
            ""
        };
        Error::new(format!(
            "{}:{}: the record (from byte offset {}{of}) is {}",
            self.name,
            start.line(),
            start.byte(),
            self.limit.exceeded()
        ))
    }

    /// The id and text of a record.
    fn values(&self, record: &ByteRecord) -> RowValues {
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
        let keep = self
            .keep
            .and_then(|i| keep_from_field(record.get(i).unwrap_or_default()));
        Ok((key, Content::Text(text.to_string()), keep))
    }
}

impl Rows for CsvRows {
    fn next_batch(&mut self) -> Result<Option<RowBatch>, Error> {
        let mut rows = Vec::new();
        let mut record = ByteRecord::new();
        while rows.len() < BATCH_ROWS {
            self.bound_next_record();
            let start = self.reader.position().clone();
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
                    _ => return Err(self.read_error(&start, e)),
                },
            }
        }
        Ok((!rows.is_empty()).then_some(RowBatch { rows }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::Progress;
    use std::io::Cursor;

    fn limit(bytes: u64) -> Limit {
        Limit {
            bytes,
            set_by: Some("--max-document-bytes".to_string()),
        }
    }

    #[test]
    fn a_record_over_the_limit_stops_the_reading_having_read_little_of_it() {
        // After a short record, a quoted field spanning lines that goes on for a mebibyte.
        let head = "id,text\n1,short\n2,\"a\nb";
        let pulled = Progress::new(None);
        let data = Cursor::new(head).chain(io::repeat(b'x').take(1 << 20));
        let data = Box::new(pulled.counting(data));
        let mut rows = CsvRows::new(data, b',', "big.csv", &limit(1000))
            .find_columns(&Fields::id_and_text())
            .unwrap();
        let e = rows.next_batch().err().unwrap();
        assert_eq!(
            e.to_string(),
            "big.csv:3: the record (from byte offset 16) is longer than 1000 bytes, the limit \
             for one document (--max-document-bytes sets it)"
        );
        // The record is read up to the limit, and the reader's buffer beyond: not whole.
        assert!(
            pulled.position() < 1000 + (64 << 10),
            "{}",
            pulled.position()
        );
    }

    #[test]
    fn records_up_to_the_limit_are_read() {
        // Each record is 11 bytes without its line end.
        let data = "id,text\n1,ten bytes\n2,\"ten\"\"by\"\n";
        let mut rows = CsvRows::new(Box::new(Cursor::new(data)), b',', "ok.csv", &limit(11))
            .find_columns(&Fields::id_and_text())
            .unwrap();
        let batch = rows.next_batch().unwrap().unwrap();
        let texts: Vec<_> = batch
            .rows
            .into_iter()
            .map(|(_, row)| match row.unwrap().1 {
                Content::Text(text) => text,
                other => panic!("a CSV field is a text, got {other:?}"),
            })
            .collect();
        assert_eq!(texts, ["ten bytes", "ten\"by"]);
        let header = "id,".to_string() + &"t".repeat(20) + "\n";
        let e = CsvRows::new(Box::new(Cursor::new(header)), b',', "h.csv.gz", &limit(10))
            .decompressed()
            .find_columns(&Fields::id_and_text())
            .err()
            .unwrap();
        assert!(
            e.to_string().starts_with(
                "h.csv.gz:1: the record (from byte offset 0 of the decompressed data) is longer \
                 than 10 bytes"
            ),
            "{e}"
        );
    }
}
