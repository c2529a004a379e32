//! A file's format and compression: its first bytes decide where they are known, its name
//! where they are not (see the rules in [`crate::input`]).

use std::path::Path;

/// How a file's records are laid out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// One JSON value per line.
    JsonLines,
    /// Delimited text with a header line: `,` for CSV, a tab for TSV.
    Delimited(u8),
    /// Apache Parquet.
    Parquet,
    /// An Arrow IPC file (random access; Feather v2).
    ArrowFile,
    /// An Arrow IPC stream.
    ArrowStream,
}

/// How a file's bytes are compressed as a whole.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compression {
    /// Not compressed.
    None,
    /// gzip (RFC 1952), one member or several.
    Gzip,
    /// Zstandard, one frame or several.
    Zstd,
}

/// The magic bytes of a gzip member.
const GZIP: &[u8] = b"\x1f\x8b";
/// The magic bytes of a zstd frame.
const ZSTD: &[u8] = b"\x28\xb5\x2f\xfd";
/// The magic bytes of a Parquet file.
const PARQUET: &[u8] = b"PAR1";
/// The magic bytes of an Arrow IPC file.
const ARROW_FILE: &[u8] = b"ARROW1";
/// An Arrow IPC stream's first message starts with the continuation marker.
const ARROW_STREAM: &[u8] = b"\xff\xff\xff\xff";

/// The longest magic number looked at.
pub const MAGIC_LEN: usize = 6;

/// The format and compression of a file that starts with `head` (its first [`MAGIC_LEN`]
/// bytes, or all of a shorter file) and is named `path`.
pub fn detect(head: &[u8], path: &Path) -> (Format, Compression) {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    let (stem, named_compression) = strip_compression(&name);
    let compression = if head.starts_with(GZIP) {
        Compression::Gzip
    } else if head.starts_with(ZSTD) {
        Compression::Zstd
    } else {
        Compression::None
    };
    if compression != Compression::None {
        // Inside a compressed stream only the line formats are read.
        return (line_format(stem), compression);
    }
    let format = if head.starts_with(PARQUET) {
        Format::Parquet
    } else if head.starts_with(ARROW_FILE) {
        Format::ArrowFile
    } else if head.starts_with(ARROW_STREAM) {
        Format::ArrowStream
    } else if named_compression {
        // Named compressed but not compressed: its bytes are read as they are.
        line_format(stem)
    } else {
        by_extension(stem)
    };
    (format, Compression::None)
}

/// The name without a compression extension, and whether it had one.
fn strip_compression(name: &str) -> (&str, bool) {
    for ext in [".gz", ".gzip", ".zst", ".zstd"] {
        if let Some(stem) = name.strip_suffix(ext) {
            return (stem, true);
        }
    }
    (name, false)
}

/// The format a name's extension says, for a file whose first bytes say none.
fn by_extension(name: &str) -> Format {
    match extension(name) {
        "parquet" | "pq" => Format::Parquet,
        "arrow" | "feather" | "ipc" => Format::ArrowFile,
        "arrows" => Format::ArrowStream,
        _ => line_format(name),
    }
}

/// CSV, TSV or (anything else) JSON Lines, by extension.
fn line_format(name: &str) -> Format {
    match extension(name) {
        "csv" => Format::Delimited(b','),
        "tsv" | "tab" => Format::Delimited(b'\t'),
        _ => Format::JsonLines,
    }
}

fn extension(name: &str) -> &str {
    name.rsplit_once('.').map_or("", |(_, ext)| ext)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(head: &[u8], name: &str) -> (Format, Compression) {
        detect(head, Path::new(name))
    }

    #[test]
    fn magic_first_then_extension() {
        use Compression as C;
        use Format as F;
        assert_eq!(of(b"\x1f\x8b\x08\0", "x"), (F::JsonLines, C::Gzip));
        assert_eq!(
            of(b"\x1f\x8b\x08\0", "x.CSV.GZ"),
            (F::Delimited(b','), C::Gzip)
        );
        assert_eq!(
            of(b"\x28\xb5\x2f\xfd", "x.tsv.zst"),
            (F::Delimited(b'\t'), C::Zstd)
        );
        assert_eq!(
            of(b"\x28\xb5\x2f\xfd", "x.parquet"),
            (F::JsonLines, C::Zstd)
        );
        assert_eq!(of(b"PAR1\x15", "data.jsonl"), (F::Parquet, C::None));
        assert_eq!(of(b"ARROW1", "t"), (F::ArrowFile, C::None));
        assert_eq!(of(b"\xff\xff\xff\xff\x10", "t"), (F::ArrowStream, C::None));
        assert_eq!(of(b"{\"id\"", "a.jsonl.gz"), (F::JsonLines, C::None));
        assert_eq!(of(b"id,text", "a.csv"), (F::Delimited(b','), C::None));
        assert_eq!(of(b"", "empty.parquet"), (F::Parquet, C::None));
        assert_eq!(of(b"x", "t.arrows"), (F::ArrowStream, C::None));
        assert_eq!(of(b"{}", "noext"), (F::JsonLines, C::None));
    }
}
