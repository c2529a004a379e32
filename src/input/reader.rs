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
use super::progress::Progress;
use super::{Compression, Error, Fields, Format, Id, InputFile, Limit, Lines};
use crate::db::ingest::{Content, Fault, Record, Rejected, Source};
use crate::storage::segment::{KeepType, KeepValue};

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

    /// How many bytes of the file, `size` bytes long, the rows read so far stand for, for a
    /// reader that does not read the file from start to end (a footer first); `None` for one
    /// that does, whose bytes are counted as they are read.
    fn bytes_read(&mut self, _size: u64) -> Option<u64> {
        None
    }

    /// The type of the keep column's values, for a format whose columns have types.
    fn keep_type(&self) -> Option<KeepType> {
        None
    }
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

/// The file being read.
struct Current {
    file: Arc<InputFile>,
    open: Open,
    /// Its size in bytes (0 when it has none: a pipe).
    size: u64,
}

/// The records of every input, in order: the ingest pipeline's [`Source`].
pub struct Reader {
    files: VecDeque<Arc<InputFile>>,
    /// What walking the directories passed over.
    skipped: Vec<PathBuf>,
    fields: Fields,
    current: Option<Current>,
    /// The longest document: a JSON line, a row's text, a CSV record.
    limit: Limit,
    /// A JSON line longer than `limit` is refused in its place rather than an error.
    skip_too_long: bool,
    progress: Progress,
    /// The bytes of the files read to their end.
    finished: u64,
}

impl Reader {
    /// The type of the keep column of the file being read, when its format types its
    /// columns (Parquet, Arrow).
    pub fn keep_column_type(&self) -> Option<KeepType> {
        match &self.current.as_ref()?.open {
            Open::Rows { rows, .. } => rows.keep_type(),
            Open::Lines(_) => None,
        }
    }

    /// The files `inputs` name ([`expand`]), to be read for `fields`.
    pub fn new(inputs: &[PathBuf], fields: Fields) -> Result<Reader, Error> {
        let (files, skipped) = expand(inputs)?;
        let total = files.iter().map(|file| size_of(file)).sum();
        Ok(Reader {
            files: files.into(),
            skipped,
            fields,
            current: None,
            limit: Limit {
                bytes: super::DEFAULT_MAX_DOCUMENT_BYTES,
                set_by: None,
            },
            skip_too_long: false,
            progress: Progress::new(total),
            finished: 0,
        })
    }

    /// The same reader, holding every document (a JSON line, a row's text, a CSV record) to
    /// `limit` bytes. A longer row's text is refused in its place; a longer JSON line stops
    /// the reading (its end may never come: `/dev/zero`), unless `skip` has it read to its
    /// end, in bounded memory, and refused in its place, for a caller that passes over refused
    /// records; a longer CSV record stops the reading.
    pub fn max_document_bytes(mut self, limit: u64, skip: bool) -> Reader {
        self.limit.bytes = limit;
        self.skip_too_long = skip;
        self
    }

    /// The same reader, a document longer than the limit refused with words saying that `how`
    /// (`--max-document-bytes`) raises the limit.
    pub fn limit_set_by(mut self, how: impl Into<String>) -> Reader {
        self.limit.set_by = Some(how.into());
        self
    }

    /// How far the reading is through the inputs, in bytes of their files, and their total
    /// size when every input has one (standard input and pipes have none): for a progress
    /// display, on any thread.
    pub fn progress(&self) -> Progress {
        self.progress.clone()
    }

    /// What walking the input directories passed over, in order: entries that are neither
    /// files nor directories (FIFOs, devices, sockets), since reading one may block for ever
    /// or never end. One named as an input is read.
    pub fn skipped(&self) -> &[PathBuf] {
        &self.skipped
    }

    /// Up to `max` more items of the current file (opening the next when it is done); none at
    /// the end of the inputs.
    fn read(&mut self, max: usize) -> Result<Vec<Item>, Error> {
        loop {
            let current = match &mut self.current {
                Some(current) => current,
                None => {
                    let Some(file) = self.files.pop_front() else {
                        return Ok(Vec::new());
                    };
                    let (open, size) = self.open(&file)?;
                    self.current.insert(Current { file, open, size })
                }
            };
            let (items, done) = take(&current.file, &mut current.open, max, &self.limit)?;
            if done {
                self.finished += current.size;
                self.progress.set(self.finished);
                self.current = None;
            } else if let Open::Rows { rows, .. } = &mut current.open
                && let Some(read) = rows.bytes_read(current.size)
            {
                self.progress.set(self.finished + read);
            }
            if !items.is_empty() {
                return Ok(items);
            }
        }
    }

    /// Opens `file` in its format, counting the bytes read from it in the progress, and tells
    /// its size.
    fn open(&self, file: &InputFile) -> Result<(Open, u64), Error> {
        let name = &file.name;
        if is_stdin(&file.path) {
            let stdin = Box::new(self.progress.counting(std::io::stdin()));
            return Ok((self.open_reader(file, stdin)?, 0));
        }
        let cannot = |e| Error::new(format!("cannot open {name}: {e}"));
        let handle = File::open(&file.path).map_err(cannot)?;
        let meta = handle.metadata().map_err(cannot)?;
        let size = if meta.is_file() { meta.len() } else { 0 };
        let open = self.open_reader(file, Box::new(self.progress.counting(handle)))?;
        Ok((open, size))
    }

    /// Opens `file`, whose bytes `reader` reads, in its format.
    fn open_reader(&self, file: &InputFile, reader: Box<dyn Read + Send>) -> Result<Open, Error> {
        open_format(file, reader, &self.fields, &self.limit, self.skip_too_long)
    }
}

/// The size of `file`, if it has one: a regular file (named or found), not standard input or
/// a pipe.
fn size_of(file: &InputFile) -> Option<u64> {
    if is_stdin(&file.path) {
        return None;
    }
    let meta = std::fs::metadata(&file.path).ok()?;
    meta.is_file().then_some(meta.len())
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
    limit: &Limit,
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
                if let ItemContent::Row(Ok((_, Content::Text(text), _))) = &row.content
                    && text.len() as u64 > limit.bytes
                {
                    row.content = ItemContent::Refused(format!(
                        "{}: the text is {}",
                        row.origin,
                        limit.exceeded()
                    ));
                }
                row
            });
            Ok((items.collect(), false))
        }
    }
}

/// Opens `file`, whose bytes `reader` reads, in its format.
fn open_format(
    file: &InputFile,
    mut reader: Box<dyn Read + Send>,
    fields: &Fields,
    limit: &Limit,
    skip: bool,
) -> Result<Open, Error> {
    let name = &file.name;
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
                let mut rows = CsvRows::new(bytes, delimiter, name, limit);
                if compression != Compression::None {
                    rows = rows.decompressed();
                }
                Box::new(rows.find_columns(fields)?)
            } else {
                let mut lines = Lines::new(name.clone(), bytes).held_to(limit.clone());
                if skip {
                    lines = lines.skipping_too_long();
                }
                if compression != Compression::None {
                    lines = lines.decompressed();
                }
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

/// A JSON line's key, text or token list, and keep value.
type LineValues = (Vec<u8>, Content<String>, Option<KeepValue>);

impl Fields {
    /// Makes an item a record: its id and text read as these fields say, or the record
    /// refused with a message naming its place.
    pub fn parse(&self, item: Item) -> Result<Record<String, Origin>, Rejected<Origin>> {
        let Item { origin, content } = item;
        let read = match content {
            ItemContent::Line(line, bytes) => self.parse_line(&bytes, line, &origin),
            ItemContent::Row(Ok((key, content, keep))) => {
                Ok((key.unwrap_or_else(|| origin.path_id()), content, keep))
            }
            ItemContent::Row(Err(fault)) => Err(format!("{origin}: {fault}")),
            ItemContent::Refused(why) => Err(why),
        };
        match read {
            Ok((key, content, keep)) => Ok(Record {
                key,
                content,
                keep,
                origin,
            }),
            Err(message) => Err(Rejected {
                origin,
                key: None,
                fault: Fault::Malformed(message),
            }),
        }
    }

    fn parse_line(&self, bytes: &[u8], line: usize, origin: &Origin) -> Result<LineValues, String> {
        let at = At {
            name: &origin.file.name,
            line,
        };
        let mut record = JsonLine::parse(bytes, at)?;
        let key = match &self.id {
            Id::Field(field) => record.key(field)?,
            Id::FromPath => origin.path_id(),
        };
        let keep = match &self.keep {
            Some(field) => record.keep_value(field)?,
            None => None,
        };
        let content = if self.tokens {
            Content::Tokens(record.take_tokens(&self.text)?)
        } else {
            Content::Text(record.take_text(&self.text)?)
        };
        Ok((key, content, keep))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::progress::share;
    use std::io::Write;
    use std::path::Path;

    /// A Parquet file of `rows` rows in row groups of `group_rows`.
    fn write_parquet(path: &Path, rows: usize, group_rows: usize) {
        use arrow_array::{ArrayRef, RecordBatch, StringArray};
        let column = |f: fn(usize) -> String| -> ArrayRef {
            Arc::new(StringArray::from((0..rows).map(f).collect::<Vec<_>>()))
        };
        let batch = RecordBatch::try_from_iter([
            ("id", column(|i| format!("p{i}"))),
            ("text", column(|i| format!("parquet text {i}"))),
        ])
        .unwrap();
        let props = parquet::file::properties::WriterProperties::builder()
            .set_max_row_group_row_count(Some(group_rows))
            .build();
        let file = File::create(path).unwrap();
        let mut w =
            parquet::arrow::ArrowWriter::try_new(file, batch.schema(), Some(props)).unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
    }

    #[test]
    fn progress_goes_through_the_files_as_stored_to_their_total() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let lines: String = (0..100)
            .map(|i| format!("{{\"id\": \"{i}\", \"text\": \"text {i}\"}}\n"))
            .collect();
        std::fs::write(d.join("a.jsonl"), &lines).unwrap();
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(lines.as_bytes()).unwrap();
        std::fs::write(d.join("b.jsonl.gz"), gz.finish().unwrap()).unwrap();
        std::fs::write(d.join("c.csv"), "id,text\n1,one\n2,two\n").unwrap();
        write_parquet(&d.join("d.parquet"), 10_000, 2_500);
        let size = |name: &str| std::fs::metadata(d.join(name)).unwrap().len();
        // Compressed files count as stored: the gzip file's size, not its lines'.
        let before_parquet = size("a.jsonl") + size("b.jsonl.gz") + size("c.csv");
        let total = before_parquet + size("d.parquet");
        let mut reader = Reader::new(&[d.to_path_buf()], Fields::id_and_text()).unwrap();
        let progress = reader.progress();
        assert_eq!((progress.total(), progress.position()), (Some(total), 0));
        let mut positions = Vec::new();
        while !reader.read(1000).unwrap().is_empty() {
            positions.push(progress.position());
        }
        assert!(positions.is_sorted(), "{positions:?}");
        assert_eq!(positions.last(), Some(&total));
        // The Parquet file by its rows, a row group at a time (the footer says how many).
        for rows in [2_500, 5_000, 7_500] {
            let at = before_parquet + share(size("d.parquet"), rows, 10_000);
            assert!(positions.contains(&at), "{at} not in {positions:?}");
        }
        // Standard input has no size: no total.
        let stdin = Reader::new(&[PathBuf::from("-")], Fields::id_and_text()).unwrap();
        assert_eq!(stdin.progress().total(), None);
    }
}
