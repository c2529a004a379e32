//! A whole file as one document (`mhdb add --files`, `mhdb query --file`), read in memory
//! bounded by the per-document limit: a file larger than the limit is refused by its size
//! when it has one, or once the limit is passed when it has none (a FIFO, a device), never
//! read whole.

use std::fs::File;
use std::io::Read;
use std::path::Path;

use super::Error;
use super::paths::{STDIN, is_stdin};

/// The bytes of the file at `path` (standard input for `-`), at most `limit` of them.
/// `Err`: it cannot be read (`cannot read P: …`); `Ok(Err)`: it is longer than `limit`
/// (`P: more than N bytes, …`), a fault of this one document.
pub fn read_document(path: &Path, limit: u64) -> Result<Result<Vec<u8>, String>, Error> {
    let name = if is_stdin(path) {
        STDIN.to_string()
    } else {
        path.display().to_string()
    };
    let too_long = || format!("{name}: more than {limit} bytes, the limit for one document");
    let cannot = |e: std::io::Error| Error::new(format!("cannot read {name}: {e}"));
    let reader: Box<dyn Read> = if is_stdin(path) {
        Box::new(std::io::stdin())
    } else {
        let file = File::open(path).map_err(cannot)?;
        // A regular file's size settles it without a read (a sparse file of terabytes).
        let meta = file.metadata().map_err(cannot)?;
        if meta.is_file() && meta.len() > limit {
            return Ok(Err(too_long()));
        }
        Box::new(file)
    };
    let mut bytes = Vec::new();
    reader
        .take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(cannot)?;
    if bytes.len() as u64 > limit {
        return Ok(Err(too_long()));
    }
    Ok(Ok(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_are_held_to_the_limit() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("doc.txt");
        std::fs::write(&path, b"12345").unwrap();
        assert_eq!(read_document(&path, 5).unwrap().unwrap(), b"12345");
        assert_eq!(
            read_document(&path, 4).unwrap().unwrap_err(),
            format!(
                "{}: more than 4 bytes, the limit for one document",
                path.display()
            )
        );
        let missing = dir.path().join("missing");
        let e = read_document(&missing, 4).unwrap_err();
        assert!(e.to_string().starts_with("cannot read "), "{e}");
    }

    #[test]
    fn a_file_without_a_size_is_read_no_further_than_the_limit() {
        let zero = Path::new("/dev/zero");
        let why = read_document(zero, 1 << 10).unwrap().unwrap_err();
        assert_eq!(
            why,
            "/dev/zero: more than 1024 bytes, the limit for one document"
        );
    }
}
