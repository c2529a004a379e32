//! Everything the commands read besides their arguments: JSON Lines (`add`, `query --jsonl`,
//! `delete --jsonl`), plain key lines (`delete -`, `get -`), whole text files (`add --files`,
//! `query --file`, `demo`) and the directories holding them. Every error names the file, and
//! for lines the line: `corpus.jsonl:17: missing field "text"`.
//!
//! The rules, the same for every command:
//! - `-` is standard input, named `<stdin>` in messages, wherever a file is read (a file
//!   named `-` is `./-`).
//! - Lines end at `\n`; line numbers start at 1 and count every line.
//! - JSON Lines: a line of nothing but ASCII white space is skipped. A line must be UTF-8
//!   (`not UTF-8 (byte N of the line)`) holding one JSON value (`invalid JSON: …`); a value
//!   that is not an object is refused as what it is (`the line holds an array`). Texts must be JSON strings.
//! - Key lines: every line is one key, escaped as `escape` describes (so an empty line is
//!   the empty key).
//! - A key read from JSON (`add`, `delete --jsonl`: [`JsonLine::key`]) is a string or
//!   `{"hex": …}`; a number is refused. These JSON rules, and line reading, are the library's
//!   (`mhdb::input`), which `add` reads every input format through. `query` echoes its id back as given, any JSON value
//!   or null when missing ([`JsonLine::id_as_given`]): it names a query, not a key.
//! - A text without shingles (empty or white space only) is similar to nothing: `query`
//!   answers it with no matches, `add` refuses to store it (the library's rule,
//!   `mhdb::db::ingest::Fault::NoShingles`).
//!
//! Deliberately per command: what a bad line does. `add` stops after committing what came
//! before it, or skips it with `--skip-invalid`; `query` stops after answering the lines before
//! it; `delete` and `get` stop before doing anything.

use std::io::Read;
use std::path::{Path, PathBuf};

pub use mhdb::input::{At, JsonLine, Line};
use mhdb::input::{Lines, Progress};

use super::escape::{parse_key_text, strip_line_end};
use super::output::{CliError, CliResult};

/// True for the path `-`, which means standard input.
pub fn is_stdin(path: &Path) -> bool {
    path.as_os_str() == "-"
}

/// Lines read from a file or standard input (the library's line reader, with the command
/// line's errors).
pub struct Input {
    lines: Lines,
    progress: Progress,
}

impl Input {
    /// Opens `path`, or standard input for `-` (`cannot open P: …` when it cannot be).
    pub fn open(path: &Path) -> CliResult<Input> {
        if is_stdin(path) {
            return Ok(Input::new(
                "<stdin>".to_string(),
                Box::new(std::io::stdin()),
                None,
            ));
        }
        let name = path.display().to_string();
        let cannot = |e| CliError::other(format!("cannot open {name}: {e}"));
        let file = std::fs::File::open(path).map_err(cannot)?;
        let meta = file.metadata().map_err(cannot)?;
        let size = meta.is_file().then_some(meta.len());
        Ok(Input::new(name, Box::new(file), size))
    }

    /// The same input, its lines held to `limit` bytes each (a longer one is an error naming
    /// it and `--max-document-bytes`, which sets the limit).
    pub fn with_limit(self, limit: u64) -> Input {
        Input {
            lines: self
                .lines
                .with_limit(limit)
                .limit_set_by("--max-document-bytes"),
            ..self
        }
    }

    /// The lines of `reader`, of `size` bytes if known.
    fn new(name: String, reader: Box<dyn Read + Send>, size: Option<u64>) -> Input {
        let progress = Progress::new(size);
        Input {
            lines: Lines::new(name, Box::new(progress.counting(reader))),
            progress,
        }
    }

    /// How far the input is read, of its size when it has one (a file; not a pipe).
    pub fn progress(&self) -> Progress {
        self.progress.clone()
    }

    /// The input as messages name it: its path, or `<stdin>`.
    pub fn name(&self) -> &str {
        self.lines.name()
    }

    /// The next line, blank or not, or `None` at the end (`P: read error: …` on failure).
    pub fn next_any_line(&mut self) -> CliResult<Option<Line>> {
        self.lines.next_any_line().map_err(cli_error)
    }

    /// The next non-blank line, or `None` at the end (`P: read error: …` on failure).
    pub fn next_line(&mut self) -> CliResult<Option<Line>> {
        self.lines.next_line().map_err(cli_error)
    }

    /// Appends every remaining line, as an escaped key (see `escape`), to `keys`; stops at the
    /// first line that is not one.
    pub fn read_key_lines(&mut self, keys: &mut Vec<Vec<u8>>) -> CliResult {
        while let Some(line) = self.next_any_line()? {
            let key = parse_key_text(strip_line_end(&line.bytes)).map_err(|e| {
                let at = At {
                    name: self.lines.name(),
                    line: line.no,
                };
                CliError::other(format!("{at}: {e}"))
            })?;
            keys.push(key);
        }
        Ok(())
    }

    /// Appends the key in `field` of every remaining JSON line to `keys`; stops at the first
    /// bad line.
    pub fn read_json_keys(&mut self, field: &str, keys: &mut Vec<Vec<u8>>) -> CliResult {
        while let Some(line) = self.next_line()? {
            let at = At {
                name: self.lines.name(),
                line: line.no,
            };
            let key = JsonLine::parse(&line.bytes, at).and_then(|record| record.key(field));
            keys.push(key.map_err(CliError::other)?);
        }
        Ok(())
    }
}

/// A reading error of the library, worded as it is.
fn cli_error(e: mhdb::input::Error) -> CliError {
    CliError::other(e.to_string())
}

/// Reads a whole file (standard input for `-`) as one text, in memory bounded by `limit`
/// bytes. `Err`: it cannot be read (`cannot read P: …`); `Ok(Err)`: it is longer than `limit`
/// (`P: more than N bytes, …`) or not UTF-8 (`P: not UTF-8 (byte offset N)`), which
/// `add --skip-invalid` skips.
pub fn read_text(path: &Path, limit: u64) -> CliResult<Result<String, String>> {
    let name = if is_stdin(path) {
        "<stdin>".to_string()
    } else {
        path.display().to_string()
    };
    let bytes = match mhdb::input::read_document(path, limit).map_err(cli_error)? {
        Ok(bytes) => bytes,
        Err(why) => return Ok(Err(format!("{why} (--max-document-bytes sets it)"))),
    };
    Ok(String::from_utf8(bytes).map_err(|e| {
        format!(
            "{name}: not UTF-8 (byte offset {})",
            e.utf8_error().valid_up_to()
        )
    }))
}

/// Appends the files at or below `path`, walking directories in name order (`add --files`).
/// `path` itself is taken whatever it is (a FIFO such as `<(zcat x.gz)` is read); a FIFO,
/// device or socket found in a directory is passed over with a warning, since reading it may
/// block forever or never end.
pub fn walk(path: &Path, out: &mut Vec<PathBuf>) -> CliResult {
    walk_found(path, out, false)
}

fn walk_found(path: &Path, out: &mut Vec<PathBuf>, found: bool) -> CliResult {
    let cannot =
        |e: std::io::Error| CliError::other(format!("cannot read {}: {e}", path.display()));
    let meta = std::fs::metadata(path).map_err(cannot)?;
    if meta.is_dir() {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(path)
            .map_err(cannot)?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .collect();
        entries.sort();
        for e in entries {
            walk_found(&e, out, true)?;
        }
    } else if found && !meta.is_file() {
        super::output::warn_not_a_file(path);
    } else {
        out.push(path.to_path_buf());
    }
    Ok(())
}

/// The files directly in `dir`, sorted; subdirectories and unreadable entries are passed over
/// (`demo`).
pub fn files_in(dir: &Path) -> CliResult<Vec<PathBuf>> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| CliError::other(format!("cannot read directory {}: {e}", dir.display())))?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|p| p.is_file())
        .collect();
    paths.sort();
    Ok(paths)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn input(data: &'static [u8]) -> Input {
        Input::new("in.jsonl".to_string(), Box::new(data), None)
    }

    fn line(json: &str) -> JsonLine<'static> {
        let at = At {
            name: "in.jsonl",
            line: 3,
        };
        JsonLine::parse(json.as_bytes(), at).unwrap()
    }

    #[test]
    fn key_lines_are_exact_and_name_bad_lines() {
        let mut inp = input(b"a\n\nb\\\\\r\n x\\n\n\\xff");
        let mut keys = Vec::new();
        inp.read_key_lines(&mut keys).unwrap();
        let want: [&[u8]; 5] = [b"a", b"", b"b\\", b" x\n", b"\xff"];
        assert_eq!(keys, want);
        let mut inp = input(b"ok\nbad\\q\n");
        let e = inp.read_key_lines(&mut keys).unwrap_err();
        assert!(
            e.to_string().starts_with("in.jsonl:2: unknown escape \\q"),
            "{e}"
        );
        let mut inp = input(b"{\"id\": \"k\"}\n\n{\"id\": 5}\n");
        let e = inp.read_json_keys("id", &mut keys).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("in.jsonl:3: field \"id\" must be a string"),
            "{e}"
        );
    }

    #[test]
    fn bad_lines_name_file_and_line() {
        let at = At {
            name: "in.jsonl",
            line: 7,
        };
        let err = |b: &[u8]| JsonLine::parse(b, at).err().unwrap();
        assert_eq!(
            err(b"{\"text\": \"a\xffb\"}\n"),
            "in.jsonl:7: not UTF-8 (byte 11 of the line)"
        );
        assert_eq!(
            err(b"not json\n"),
            "in.jsonl:7: invalid JSON at column 2: expected ident"
        );
        assert_eq!(
            err(b"{\"id\": 1} x"),
            "in.jsonl:7: invalid JSON at column 11: trailing characters"
        );
        // A byte-order mark is skipped on the first line only.
        assert!(err(b"\xEF\xBB\xBF{}").starts_with("in.jsonl:7: invalid JSON at column 1"));
        let first = At { line: 1, ..at };
        assert!(JsonLine::parse(b"\xEF\xBB\xBF{\"id\": \"a\"}", first).is_ok());
        // Any JSON value parses; a non-object has no fields, and is named for what it is.
        let arr = JsonLine::parse(b"[1, 2]", at).unwrap();
        assert_eq!(
            arr.key("id").unwrap_err(),
            "in.jsonl:7: the line holds an array, not a JSON object with the fields asked for"
        );
    }

    #[test]
    fn keys_are_strings_or_hex_never_numbers() {
        assert_eq!(line(r#"{"id": "doc-1"}"#).key("id").unwrap(), b"doc-1");
        assert_eq!(line(r#"{"k": "1"}"#).key("k").unwrap(), b"1");
        assert_eq!(
            line(r#"{"id": "a\nb\u0000"}"#).key("id").unwrap(),
            b"a\nb\0"
        );
        assert_eq!(
            line(r#"{"id": {"hex": "ff00"}}"#).key("id").unwrap(),
            b"\xff\0"
        );
        for json in [r#"{"id": 17}"#, r#"{"id": -2.5}"#, r#"{"id": 1e3}"#] {
            assert_eq!(
                line(json).key("id").unwrap_err(),
                "in.jsonl:3: field \"id\" must be a string, got a number (keys are text: \
                 quote the id, \"17\" rather than 17)"
            );
        }
        for (json, got) in [
            (r#"{"id": true}"#, "true"),
            (r#"{"id": null}"#, "null"),
            (r#"{"id": {"a": 1}}"#, r#"{"a":1}"#),
        ] {
            assert_eq!(
                line(json).key("id").unwrap_err(),
                format!(
                    "in.jsonl:3: field \"id\" must be a string or {{\"hex\": \"…\"}}, got {got}"
                )
            );
        }
        assert_eq!(
            line(r#"{"text": "x"}"#).key("id").unwrap_err(),
            "in.jsonl:3: missing field \"id\""
        );
    }

    #[test]
    fn query_ids_are_echoed_as_given() {
        assert_eq!(
            line(r#"{"id": 17}"#).id_as_given("id"),
            serde_json::json!(17)
        );
        assert_eq!(
            line(r#"{"id": {"a": [1]}}"#).id_as_given("id"),
            serde_json::json!({"a": [1]})
        );
        assert_eq!(line(r#"{"text": "x"}"#).id_as_given("id"), Value::Null);
    }

    #[test]
    fn texts_are_strings() {
        let mut l = line(r#"{"id": 1, "text": "hello"}"#);
        assert_eq!(l.take_text("text").unwrap(), "hello");
        assert_eq!(
            line(r#"{"text": 5}"#).take_text("text").unwrap_err(),
            "in.jsonl:3: field \"text\" must be a string"
        );
        assert_eq!(
            line(r#"{"id": 1}"#).take_text("text").unwrap_err(),
            "in.jsonl:3: missing field \"text\""
        );
        // The id read first is unaffected when it is the text field too.
        let mut l = line(r#"{"t": "same"}"#);
        assert_eq!(l.key("t").unwrap(), b"same");
        assert_eq!(l.take_text("t").unwrap(), "same");
    }

    #[test]
    fn files_name_themselves_in_errors() {
        let dir = tempfile::tempdir().unwrap();
        let bad = dir.path().join("bad.txt");
        std::fs::write(&bad, b"ab\xffc").unwrap();
        assert_eq!(
            read_text(&bad, 100).unwrap().unwrap_err(),
            format!("{}: not UTF-8 (byte offset 2)", bad.display())
        );
        let missing = dir.path().join("missing");
        let e = read_text(&missing, 100).unwrap_err();
        assert!(e.to_string().starts_with("cannot read "), "{e}");
        assert_eq!(e.exit_code(), 1);
        // `-` is standard input.
        assert_eq!(Input::open(Path::new("-")).unwrap().name(), "<stdin>");
        // A directory opens, but reading it fails, naming it.
        let mut d = Input::open(dir.path()).unwrap();
        let e = d.next_line().err().unwrap();
        assert!(
            e.to_string()
                .starts_with(&format!("{}: read error: ", dir.path().display())),
            "{e}"
        );
    }

    #[test]
    fn walk_sorts_and_recurses() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path();
        std::fs::create_dir(p.join("sub")).unwrap();
        for f in ["b.txt", "a.txt", "sub/c.txt"] {
            std::fs::write(p.join(f), "x").unwrap();
        }
        let mut all = Vec::new();
        walk(p, &mut all).unwrap();
        let names: Vec<_> = all.iter().map(|f| f.strip_prefix(p).unwrap()).collect();
        assert_eq!(
            names,
            [
                Path::new("a.txt"),
                Path::new("b.txt"),
                Path::new("sub/c.txt")
            ]
        );
        assert_eq!(files_in(p).unwrap().len(), 2);
    }
}
