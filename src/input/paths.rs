//! Inputs made files, in a stable order: directories walked, glob patterns expanded, each file
//! named as messages name it and relative to its input's root (for ids from paths).

use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use super::Error;

/// One file to read.
#[derive(Debug, PartialEq, Eq)]
pub struct InputFile {
    /// Its path; `-` for standard input.
    pub path: PathBuf,
    /// As messages name it: its path as given or found, or `<stdin>`.
    pub name: String,
    /// Its path relative to the root of the input that named it, with `/` between
    /// components: the directory walked, the fixed part of a glob pattern, or the file's own
    /// directory. `<stdin>` for standard input.
    pub relative: String,
}

/// The name messages give standard input.
pub const STDIN: &str = "<stdin>";

/// True for the path `-`, which means standard input.
pub fn is_stdin(path: &Path) -> bool {
    path.as_os_str() == "-"
}

/// The files `inputs` name, in order (none: standard input), and the entries walking their
/// directories passed over: FIFOs, devices and sockets, since reading one may block for ever
/// (a FIFO no one writes) or never end (`/dev/zero`). One named as an input is taken
/// (`<(zcat x.gz)`).
pub fn expand(inputs: &[PathBuf]) -> Result<(Vec<Arc<InputFile>>, Vec<PathBuf>), Error> {
    let mut files = Vec::new();
    let mut skipped = Vec::new();
    if inputs.is_empty() {
        files.push(stdin());
    }
    for input in inputs {
        if is_stdin(input) {
            files.push(stdin());
        } else if input.is_dir() {
            let mut walked = Walked {
                root: input,
                files: &mut files,
                skipped: &mut skipped,
            };
            walked.walk(input)?;
        } else if is_pattern(input) && !input.exists() {
            glob(input, &mut files)?;
        } else {
            // A missing file is reported when it is opened, in its turn.
            files.push(file(input, input.parent().unwrap_or(Path::new(""))));
        }
    }
    Ok((files.into_iter().map(Arc::new).collect(), skipped))
}

fn stdin() -> InputFile {
    InputFile {
        path: PathBuf::from("-"),
        name: STDIN.to_string(),
        relative: STDIN.to_string(),
    }
}

fn file(path: &Path, root: &Path) -> InputFile {
    let relative = path.strip_prefix(root).unwrap_or(path);
    let relative: Vec<_> = relative
        .components()
        .filter_map(|c| match c {
            Component::Normal(part) => Some(part.to_string_lossy()),
            _ => None,
        })
        .collect();
    InputFile {
        path: path.to_path_buf(),
        name: path.display().to_string(),
        relative: relative.join("/"),
    }
}

/// A directory input being walked: what it holds so far.
struct Walked<'a> {
    root: &'a Path,
    files: &'a mut Vec<InputFile>,
    skipped: &'a mut Vec<PathBuf>,
}

impl Walked<'_> {
    /// Appends the files below `dir` in name order, depth first, passing over hidden entries
    /// and those neither files nor directories.
    fn walk(&mut self, dir: &Path) -> Result<(), Error> {
        let cannot = |e: std::io::Error| Error::new(format!("cannot read {}: {e}", dir.display()));
        let mut entries = Vec::new();
        for entry in std::fs::read_dir(dir).map_err(cannot)? {
            let entry = entry.map_err(cannot)?;
            if !is_hidden(Path::new(&entry.file_name())) {
                entries.push(entry.path());
            }
        }
        entries.sort();
        for path in entries {
            // Links followed, as a named input's are.
            match std::fs::metadata(&path) {
                Ok(meta) if meta.is_dir() => self.walk(&path)?,
                Ok(meta) if !meta.is_file() => self.skipped.push(path),
                // A file, or a broken link: reported when it is opened, in its turn.
                _ => self.files.push(file(&path, self.root)),
            }
        }
        Ok(())
    }
}

/// Names that data tools keep beside their data (`_SUCCESS`, `.part-0.crc`).
fn is_hidden(name: &Path) -> bool {
    let name = name.as_os_str().as_encoded_bytes();
    name.starts_with(b".") || name.starts_with(b"_")
}

fn is_pattern(path: &Path) -> bool {
    path.as_os_str()
        .as_encoded_bytes()
        .iter()
        .any(|b| matches!(b, b'*' | b'?' | b'['))
}

/// Appends the files matching `pattern`, sorted; none is an error.
fn glob(pattern: &Path, out: &mut Vec<InputFile>) -> Result<(), Error> {
    let text = pattern.to_string_lossy();
    let bad = |e: String| Error::new(format!("bad glob pattern {text}: {e}"));
    let options = glob::MatchOptions {
        require_literal_leading_dot: true,
        ..glob::MatchOptions::new()
    };
    let mut found = Vec::new();
    for entry in glob::glob_with(&text, options).map_err(|e| bad(e.to_string()))? {
        let path = entry.map_err(|e| {
            Error::new(format!("cannot read {}: {}", e.path().display(), e.error()))
        })?;
        if !path.is_dir() {
            found.push(path);
        }
    }
    if found.is_empty() {
        return Err(Error::new(format!("no file matches {text}")));
    }
    found.sort();
    let root = fixed_prefix(pattern);
    out.extend(found.iter().map(|path| file(path, &root)));
    Ok(())
}

/// The directories of `pattern` before its first component with a wildcard.
fn fixed_prefix(pattern: &Path) -> PathBuf {
    let mut root = PathBuf::new();
    for c in pattern.components() {
        if is_pattern(Path::new(c.as_os_str())) {
            break;
        }
        root.push(c);
    }
    root
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roots_of_patterns_and_files() {
        assert_eq!(
            fixed_prefix(Path::new("data/x/**/*.parquet")),
            Path::new("data/x")
        );
        assert_eq!(fixed_prefix(Path::new("*.jsonl")), Path::new(""));
        let f = file(Path::new("data/x/sub/a.parquet"), Path::new("data/x"));
        assert_eq!(f.relative, "sub/a.parquet");
        assert_eq!(f.name, "data/x/sub/a.parquet");
        let f = file(Path::new("./a.jsonl"), Path::new("."));
        assert_eq!(f.relative, "a.jsonl");
    }

    #[test]
    fn a_walk_passes_over_fifos_and_sockets_but_takes_them_named() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::create_dir(d.join("sub")).unwrap();
        std::fs::write(d.join("a.jsonl"), "{}\n").unwrap();
        let fifo = d.join("sub/fifo.jsonl");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        let socket = d.join("socket.jsonl");
        let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
        let (files, skipped) = expand(&[d.to_path_buf()]).unwrap();
        let names: Vec<_> = files.iter().map(|f| f.relative.as_str()).collect();
        assert_eq!(names, ["a.jsonl"]);
        assert_eq!(skipped, [socket, fifo.clone()]);
        let (files, skipped) = expand(std::slice::from_ref(&fifo)).unwrap();
        assert_eq!(
            (files[0].path.as_path(), skipped.len()),
            (fifo.as_path(), 0)
        );
    }
}
