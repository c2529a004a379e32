//! Documents read where users keep them, for the library's one ingest pipeline
//! ([`crate::db::ingest`]): JSON Lines (plain, gzip or zstd), Parquet, Arrow IPC files and
//! streams, CSV and TSV; files, directories, glob patterns and standard input. A [`Reader`] is
//! the pipeline's [`Source`](crate::db::ingest::Source); [`Fields::parse`] makes each of its
//! items a [`Record`](crate::db::ingest::Record) (on any core). `mhdb add` is built on it, and
//! so can any front end that loads files; one that holds Arrow batches of its own (a binding
//! handed an Arrow stream) reads their ids and texts with [`Columns`], by the same rules.
//!
//! The rules:
//! - **Inputs** are taken in the order given; `-` (or no input) is standard input, read as JSON
//!   Lines, plain or compressed. A directory is walked in name order, depth first, passing over
//!   entries whose names start with `.` or `_` (`_SUCCESS`, `.part-0.crc`: the files that Spark
//!   and Hadoop leave beside their data, skipped as pyarrow's datasets skip them), and over
//!   entries that are neither files nor directories (FIFOs, devices, sockets: reading one may
//!   block for ever or never end), which [`Reader::skipped`] lists for a warning; one named as
//!   an input is read (`<(zcat x.gz)`). A path that does not exist and holds `*`, `?` or `[` is
//!   a glob pattern (`data/**/*.parquet`); its matches are taken sorted, and a pattern that
//!   matches no file is an error.
//! - **Formats** ([`Format`]) are recognized by their first bytes, then by extension: gzip
//!   (`1f 8b`) and zstd (`28 b5 2f fd`) streams are decompressed (a multi-member gzip or
//!   multi-frame zstd file whole) and read as JSON Lines, or as CSV/TSV when the name ends in
//!   `.csv.gz`, `.tsv.zst` and so on; `PAR1` is Parquet, `ARROW1` an Arrow IPC file, `ff ff ff
//!   ff` an Arrow IPC stream. Otherwise `.parquet`/`.pq` is Parquet, `.arrow`/`.feather`/`.ipc`
//!   an Arrow file, `.arrows` an Arrow stream, `.csv` CSV, `.tsv`/`.tab` TSV, and anything else
//!   JSON Lines.
//! - **Fields** ([`Fields`]) name the id and the text. A name is first looked up as it is; if
//!   no field or column has that exact name and it holds dots, it is a path into nested JSON
//!   objects or Arrow/Parquet struct columns (`meta.url`). CSV/TSV columns are named by their
//!   header, exactly.
//! - **Ids**: in JSON, a string or `{"hex": "…"}` ([`key_from_json`]). In Parquet and Arrow, a
//!   string or binary column (its bytes; dictionary-encoded too), or an integer column (its
//!   decimal digits: 17 is the key `17`, as the JSON id `"17"`). In CSV/TSV, the field's
//!   bytes. With [`Id::FromPath`], the id is the file's path relative to its input root, a
//!   colon and the record's number as messages name it ([`Origin::path_id`]):
//!   `sub/part-0001.parquet:17`.
//! - **Texts** are JSON strings; string columns, or binary columns holding UTF-8; CSV fields
//!   that are UTF-8.
//! - **Keep values** ([`Fields::keep`], `add --keep-field`): JSON numbers (integers as
//!   integers) and strings; integer, float, string and binary columns; a CSV field that parses
//!   as an integer or a float is one, else a string. A null, a missing JSON field or an empty
//!   CSV field is no value; a boolean, an array or an object refuses the record.
//! - **Token lists** ([`Fields::tokens`]) are JSON arrays of strings and integers (in the
//!   signed 64-bit range); list columns of strings or of 32- or 64-bit integers. A null, a
//!   float, a nested array or any other element refuses the record naming the element. CSV has
//!   no lists.
//! - **Places** ([`Origin`]): JSON Lines and CSV/TSV records by their line, counted from 1 (a CSV
//!   record spanning lines by the line it starts on; the header is line 1); Parquet and Arrow
//!   rows by their row in the file, counted from 0 as dataframes index them, and in Parquet
//!   also by their row group.
//! - **Size**: a document (a JSON line, a row's text, a CSV/TSV record, a whole file where a
//!   file is a document) is held to a limit, [`DEFAULT_MAX_DOCUMENT_BYTES`] unless set
//!   otherwise; a longer one is refused naming its place (its line and byte offset, in the
//!   decompressed data for a compressed file) after reading no more than the limit of it. A
//!   longer JSON line or CSV record stops the reading, since its end may never come; a longer
//!   row's text is refused in its place. Files and streams holding many documents are not
//!   limited in size.
//! - **Progress** ([`Progress`]): how far the reading is, in bytes of the files as stored (a
//!   compressed file's compressed bytes; a Parquet file's share of its rows read, an Arrow
//!   file's place after its batches read), against their total size when every input has one.
//! - **Errors**: a record that cannot be stored (a bad JSON line, a null or missing value, a
//!   text that is not UTF-8, a CSV row of the wrong width) is refused in its place, and
//!   `mhdb add --skip-invalid` passes over it. What cannot be read at all stops the load
//!   ([`Error`], naming the file and the row group, rows or byte offset): a file that cannot be
//!   opened, a truncated or corrupt compressed stream, a Parquet footer or row group that cannot
//!   be decoded, a missing column or one of the wrong type. Those are not skipped, because the
//!   rows they hide cannot be told apart or counted: skipping would drop an unknown part of the
//!   input silently.
//!
//! | module | owns |
//! | --- | --- |
//! | `paths` | inputs made files, in order: directories walked, globs expanded, names relative to their root |
//! | `document` | a whole file as one document, in memory bounded by the per-document limit |
//! | `detect` | a file's format and compression, from its first bytes and its name |
//! | `decompress` | gzip and zstd streams, failing with the byte offset |
//! | `lines` | reading lines, numbered |
//! | `json` | a JSON line's id and text, and the JSON key rules |
//! | `columns` | ids and texts out of Arrow columns (Parquet and Arrow IPC) |
//! | `keep` | keep values out of JSON, CSV fields and Arrow columns |
//! | `parquet`, `ipc`, `csv` | each format's reader, in bounded memory |
//! | `reader` | the files in turn as one source; items, places and records |
//! | `progress` | how far a reader is through its inputs, in bytes, against their total size |

// Feature `arrow-input` builds only what reads Arrow batches a front end holds ([`Columns`]);
// `input` adds the files, formats and compression, with their crates (Parquet, zstd, ...).
// The rules above name the readers of `input`, which are not there without it.
#![cfg_attr(not(feature = "input"), allow(rustdoc::broken_intra_doc_links))]

mod columns;
#[cfg(feature = "input")]
mod csv;
#[cfg(feature = "input")]
mod decompress;
#[cfg(feature = "input")]
mod detect;
#[cfg(feature = "input")]
mod document;
#[cfg(feature = "input")]
mod ipc;
#[cfg(feature = "input")]
mod json;
mod keep;
#[cfg(feature = "input")]
mod lines;
#[cfg(feature = "input")]
mod parquet;
#[cfg(feature = "input")]
mod paths;
#[cfg(feature = "input")]
mod progress;
#[cfg(feature = "input")]
mod reader;

use std::fmt;

use crate::db::MAX_KEY_LEN;

pub use columns::{ColumnPath, Columns, RowValues};
#[cfg(feature = "input")]
pub use decompress::decompressed;
#[cfg(feature = "input")]
pub use detect::{Compression, Format, MAGIC_LEN, detect};
#[cfg(feature = "input")]
pub use document::read_document;
#[cfg(feature = "input")]
pub use json::{At, JsonLine, key_from_json, tokens_from_json};
#[cfg(feature = "input")]
pub use lines::{Line, Lines};
#[cfg(feature = "input")]
pub use paths::{InputFile, expand};
#[cfg(feature = "input")]
pub use progress::{Counting, Progress};
#[cfg(feature = "input")]
pub use reader::{Item, Origin, Position, Reader};

/// The default limit on one document's bytes: a whole file where a file is a document, a
/// JSON line, a text column's value. Far above any text worth indexing as one document (a
/// long book is a few megabytes), and low enough that a file that is not a document
/// (`/dev/zero`, a disk image, a sparse file) is refused at once, in that much memory, rather
/// than read whole.
pub const DEFAULT_MAX_DOCUMENT_BYTES: u64 = 64 << 20;

/// The per-document limit as the readers hold documents to it.
#[cfg(feature = "input")]
#[derive(Clone, Debug)]
struct Limit {
    /// The most bytes one document may have.
    bytes: u64,
    /// What raises the limit, when the caller said (`--max-document-bytes`).
    set_by: Option<String>,
}

#[cfg(feature = "input")]
impl Limit {
    /// How a longer document is refused, after the words naming it: `longer than N bytes, the
    /// limit for one document (--max-document-bytes sets it)`.
    fn exceeded(&self) -> String {
        let hint = self
            .set_by
            .as_ref()
            .map_or_else(String::new, |how| format!(" ({how} sets it)"));
        format!(
            "longer than {} bytes, the limit for one document{hint}",
            self.bytes
        )
    }
}

/// Rows read from a Parquet or Arrow file at a time: a bound on the memory a file takes.
pub const BATCH_ROWS: usize = 4096;

/// Which fields of a record hold its id and its text (or its token list).
#[derive(Clone, Debug)]
pub struct Fields {
    /// Where the id comes from.
    pub id: Id,
    /// The field (or column, or path) holding the text, or the token list with `tokens`.
    pub text: String,
    /// The `text` field holds a token list (a JSON array, an Arrow or Parquet list column of
    /// strings or integers), for an index of token lists.
    pub tokens: bool,
    /// The field (or column, or path) holding each record's keep value, if one is captured.
    pub keep: Option<String>,
}

/// Where a record's id comes from.
#[derive(Clone, Debug)]
pub enum Id {
    /// A field, column or path.
    Field(String),
    /// The file's path relative to its input root and the record's place in it
    /// ([`Origin::path_id`]), for data without ids.
    FromPath,
}

#[cfg(all(test, feature = "input"))]
impl Fields {
    /// The id in `id`, the text in `text`.
    fn id_and_text() -> Fields {
        Fields {
            id: Id::Field("id".to_string()),
            text: "text".to_string(),
            tokens: false,
            keep: None,
        }
    }
}

impl Id {
    /// The field to read, if any.
    pub fn field(&self) -> Option<&str> {
        match self {
            Id::Field(f) => Some(f),
            Id::FromPath => None,
        }
    }
}

/// Why reading stopped: a whole message naming the file and where in it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    message: String,
}

impl Error {
    /// An error with this message.
    pub fn new(message: impl Into<String>) -> Self {
        Error {
            message: message.into(),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

/// `key` if a database can hold it (at most [`MAX_KEY_LEN`] bytes), else why not, so that it
/// is refused as the input record it came from (file and line), not later as a whole
/// command's parameter.
pub fn within_key_limit(key: Vec<u8>) -> Result<Vec<u8>, String> {
    if key.len() > MAX_KEY_LEN {
        return Err(format!(
            "is {} bytes long, at most {MAX_KEY_LEN} allowed",
            key.len()
        ));
    }
    Ok(key)
}
