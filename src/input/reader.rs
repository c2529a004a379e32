//! The files of the inputs in turn, as one [`Source`] for the ingest pipeline: each file opened
//! in its format, its records handed out as [`Item`]s (a line, or a row's values), which
//! [`Fields::parse`] makes records on any core.

use std::collections::VecDeque;
use std::fmt;
use std::fs::File;
use std::io::{Cursor, Read};
use std::path::PathBuf;
use std::sync::Arc;

use super::columns::RowValues;
use super::csv::CsvRows;
use super::decompress::decompressed;
use super::detect::{MAGIC_LEN, detect};
use super::ipc::IpcRows;
use super::json::{At, JsonLine};
use super::parquet::ParquetRows;
use super::paths::{expand, is_stdin};
use super::{Compression, Error, Fields, Format, Id, InputFile, Lines};
use crate::db::ingest::{Content, Fault, Record, Rejected, Source};

/// Where a record is in its file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Position {
    /// A line (JSON Lines, CSV/TSV), from 1.
    Line(usize),
    /// A row (Parquet, Arrow), from 0, and its Parquet row group.
    Row {
        /// The Parquet row group holding it.
        row_group: Option<usize>,
        /// Its row in the file.
        row: u64,
    },
}

/// Where a record came from: its file and its place there.
#[derive(Clone, Debug)]
pub struct Origin {
    /// The file.
    pub file: Arc<InputFile>,
    /// The place.
    pub at: Position,
}

impl Origin {
    /// The id of a record without one: its file's path relative to its input root, a colon,
    /// and its line or row number (`sub/part-0001.parquet:17`).
    pub fn path_id(&self) -> Vec<u8> {
        let n = match self.at {
            Position::Line(line) => line as u64,
            Position::Row { row, .. } => row,
        };
        format!("{}:{n}", self.file.relative).into_bytes()
    }
}

impl fmt::Display for Origin {
    /// `corpus.jsonl:17`, `data.parquet: row group 2, row 9000`, `t.arrow: row 17`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = &self.file.name;
        match self.at {
            Position::Line(line) => write!(f, "{name}:{line}"),
            Position::Row {
                row_group: Some(group),
                row,
            } => write!(f, "{name}: row group {group}, row {row}"),
            Position::Row {
                row_group: None,
                row,
            } => write!(f, "{name}: row {row}"),
        }
    }
}

/// A record as read, before it is parsed.
pub struct Item {
    origin: Origin,
    content: ItemContent,
}

enum ItemContent {
    /// A JSON line, as read, and its number.
    Line(usize, Vec<u8>),
    /// A row's values.
    Row(RowValues),
    /// A record refused as read (a line or text longer than the limit), and why.
    Refused(String),
}

/// Rows read a batch at a time (Parquet, Arrow, CSV/TSV).
pub(super) trait Rows {
    /// The next batch of rows, none at the end.
    fn next_batch(&mut self) -> Result<Option<RowBatch>, Error>;
}

/// Rows, each with its place.
pub(super) struct RowBatch {
    pub rows: Vec<(Position, RowValues)>,
}

impl RowBatch {
    /// Rows numbered from `first`, in `row_group`.
    pub fn numbered(values: Vec<RowValues>, first: u64, row_group: Option<usize>) -> Self {
        let rows = values.into_iter().zip(first..);
        RowBatch {
            rows: rows
                .map(|(v, row)| (Position::Row { row_group, row }, v))
                .collect(),
        }
    }
}

/// An open file.
enum Open {
    Lines(Lines),
    Rows {
        rows: Box<dyn Rows>,
        pending: VecDeque<(Position, RowValues)>,
    },
}

/// The records of every input, in order: the ingest pipeline's [`Source`].
pub struct Reader {
    files: VecDeque<Arc<InputFile>>,
    fields: Fields,
    current: Option<(Arc<InputFile>, Open)>,
    /// The longest document, in bytes: a JSON line, a row's text.
    limit: u64,
    /// A JSON line longer than `limit` is refused in its place rather than an error.
    skip_too_long: bool,
}

impl Reader {
    /// The files `inputs` name ([`expand`]), to be read for `fields`.
    pub fn new(inputs: &[PathBuf], fields: Fields) -> Result<Reader, Error> {
        Ok(Reader {
            files: expand(inputs)?.into(),
            fields,
            current: None,
            limit: super::DEFAULT_MAX_DOCUMENT_BYTES,
            skip_too_long: false,
        })
    }

    /// The same reader, holding every document (a JSON line, a row's text) to `limit` bytes.
    /// A longer row's text is refused in its place; a longer JSON line stops the reading
    /// (its end may never come: `/dev/zero`), unless `skip` has it read to its end, in bounded
    /// memory, and refused in its place, for a caller that passes over refused records.
    pub fn max_document_bytes(mut self, limit: u64, skip: bool) -> Reader {
        self.limit = limit;
        self.skip_too_long = skip;
        self
    }

    /// Up to `max` more items of the current file (opening the next when it is done); none at
    /// the end of the inputs.
    fn read(&mut self, max: usize) -> Result<Vec<Item>, Error> {
        loop {
            let (file, open) = match &mut self.current {
                Some(current) => current,
                None => {
                    let Some(file) = self.files.pop_front() else {
                        return Ok(Vec::new());
                    };
                    let open = open(&file, &self.fields, self.limit, self.skip_too_long)?;
                    self.current.insert((file, open))
                }
            };
            let (items, done) = take(file, open, max, self.limit)?;
            if done {
                self.current = None;
            }
            if !items.is_empty() {
                return Ok(items);
            }
        }
    }
}

impl Source for Reader {
    type Item = Item;
    type Error = Error;

    fn next_chunk(&mut self, max: usize) -> Result<Vec<Item>, Error> {
        self.read(max)
    }
}

/// Up to `max` items of an open file, and whether it is done; a row whose text is longer than
/// `limit` is refused in its place.
fn take(
    file: &Arc<InputFile>,
    open: &mut Open,
    max: usize,
    limit: u64,
) -> Result<(Vec<Item>, bool), Error> {
    let item = |at, content| Item {
        origin: Origin {
            file: file.clone(),
            at,
        },
        content,
    };
    match open {
        Open::Lines(lines) => {
            let (lines, done) = lines.read_lines(max)?;
            let items = lines.into_iter().map(|l| {
                let content = match l.too_long {
                    Some(why) => ItemContent::Refused(why),
                    None => ItemContent::Line(l.no, l.bytes),
                };
                item(Position::Line(l.no), content)
            });
            Ok((items.collect(), done))
        }
        Open::Rows { rows, pending } => {
            if pending.is_empty() {
                match rows.next_batch()? {
                    Some(batch) => pending.extend(batch.rows),
                    None => return Ok((Vec::new(), true)),
                }
            }
            let n = max.min(pending.len());
            let items = pending.drain(..n).map(|(at, values)| {
                let mut row = item(at, ItemContent::Row(values));
                if let ItemContent::Row(Ok((_, text))) = &row.content
                    && text.len() as u64 > limit
                {
                    row.content = ItemContent::Refused(format!(
                        "{}: the text is longer than {limit} bytes, the limit for one document",
                        row.origin
                    ));
                }
                row
            });
            Ok((items.collect(), false))
        }
    }
}

/// Opens `file` in its format.
fn open(file: &InputFile, fields: &Fields, limit: u64, skip: bool) -> Result<Open, Error> {
    let name = &file.name;
    let mut reader: Box<dyn Read + Send> = if is_stdin(&file.path) {
        Box::new(std::io::stdin())
    } else {
        Box::new(
            File::open(&file.path).map_err(|e| Error::new(format!("cannot open {name}: {e}")))?,
        )
    };
    let head =
        read_head(&mut reader).map_err(|e| Error::new(format!("{name}: read error: {e}")))?;
    let (format, compression) = detect(&head, &file.path);
    let stdin = is_stdin(&file.path);
    let rows: Box<dyn Rows> = match format {
        _ if stdin && compression == Compression::None && format != Format::JsonLines => {
            return Err(Error::new(format!(
                "{name}: standard input is read as JSON Lines (plain, gzip or zstd); give \
                 Parquet, Arrow and CSV data as files"
            )));
        }
        Format::Parquet => Box::new(ParquetRows::open(&file.path, name, fields)?),
        Format::ArrowFile => Box::new(IpcRows::open(&file.path, name, fields, false)?),
        Format::ArrowStream => Box::new(IpcRows::open(&file.path, name, fields, true)?),
        Format::JsonLines | Format::Delimited(_) => {
            let whole = Box::new(Cursor::new(head).chain(reader));
            let bytes = decompressed(whole, compression)
                .map_err(|e| Error::new(format!("{name}: read error: {e}")))?;
            if let Format::Delimited(delimiter) = format {
                Box::new(CsvRows::open(bytes, delimiter, name, fields)?)
            } else {
                let lines = Lines::new(name.clone(), bytes).with_limit(limit);
                let lines = if skip {
                    lines.skipping_too_long()
                } else {
                    lines
                };
                return Ok(Open::Lines(lines));
            }
        }
    };
    Ok(Open::Rows {
        rows,
        pending: VecDeque::new(),
    })
}

/// The first [`MAGIC_LEN`] bytes (fewer in a shorter input), read from `reader`.
fn read_head(reader: &mut impl Read) -> std::io::Result<Vec<u8>> {
    let mut head = Vec::with_capacity(MAGIC_LEN);
    reader.take(MAGIC_LEN as u64).read_to_end(&mut head)?;
    Ok(head)
}

impl Fields {
    /// Makes an item a record: its id and text read as these fields say, or the record
    /// refused with a message naming its place.
    pub fn parse(&self, item: Item) -> Result<Record<String, Origin>, Rejected<Origin>> {
        let Item { origin, content } = item;
        let read = match content {
            ItemContent::Line(line, bytes) => self.parse_line(&bytes, line, &origin),
            ItemContent::Row(Ok((key, text))) => {
                Ok((key.unwrap_or_else(|| origin.path_id()), text))
            }
            ItemContent::Row(Err(fault)) => Err(format!("{origin}: {fault}")),
            ItemContent::Refused(why) => Err(why),
        };
        match read {
            Ok((key, text)) => Ok(Record {
                key,
                content: Content::Text(text),
                origin,
            }),
            Err(message) => Err(Rejected {
                origin,
                key: None,
                fault: Fault::Malformed(message),
            }),
        }
    }

    fn parse_line(
        &self,
        bytes: &[u8],
        line: usize,
        origin: &Origin,
    ) -> Result<(Vec<u8>, String), String> {
        let at = At {
            name: &origin.file.name,
            line,
        };
        let mut record = JsonLine::parse(bytes, at)?;
        let key = match &self.id {
            Id::Field(field) => record.key(field)?,
            Id::FromPath => origin.path_id(),
        };
        Ok((key, record.take_text(&self.text)?))
    }
}
