//! Lines read from a file or a stream, numbered. Lines end at `\n`; line numbers start at 1 and
//! count every line; a line of nothing but ASCII white space is blank.

use std::io::{BufRead, BufReader, Read};

use super::Error;

/// Numbered lines from one input.
pub struct Lines {
    name: String,
    reader: BufReader<Box<dyn Read + Send>>,
    line_no: usize,
}

/// One line with its number; `bytes` ends with the `\n` unless it was the last line.
pub struct Line {
    /// 1-based, blank lines included.
    pub no: usize,
    /// The line as read.
    pub bytes: Vec<u8>,
}

impl Lines {
    /// The lines of `reader`, which messages call `name`.
    pub fn new(name: String, reader: Box<dyn Read + Send>) -> Lines {
        Lines {
            name,
            reader: BufReader::with_capacity(1 << 20, reader),
            line_no: 0,
        }
    }

    /// The input as messages name it.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The next line, blank or not, or `None` at the end (`NAME: read error: …` on failure).
    pub fn next_any_line(&mut self) -> Result<Option<Line>, Error> {
        let mut bytes = Vec::new();
        let n = self
            .reader
            .read_until(b'\n', &mut bytes)
            .map_err(|e| Error::new(format!("{}: read error: {e}", self.name)))?;
        if n == 0 {
            return Ok(None);
        }
        self.line_no += 1;
        Ok(Some(Line {
            no: self.line_no,
            bytes,
        }))
    }

    /// The next non-blank line, or `None` at the end.
    pub fn next_line(&mut self) -> Result<Option<Line>, Error> {
        while let Some(line) = self.next_any_line()? {
            if !line.bytes.iter().all(u8::is_ascii_whitespace) {
                return Ok(Some(line));
            }
        }
        Ok(None)
    }

    /// Up to `max` more non-blank lines, and `true` once the input is exhausted.
    pub fn read_lines(&mut self, max: usize) -> Result<(Vec<Line>, bool), Error> {
        let mut lines = Vec::with_capacity(max.min(1 << 16));
        while lines.len() < max {
            match self.next_line()? {
                Some(line) => lines.push(line),
                None => return Ok((lines, true)),
            }
        }
        Ok((lines, false))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(data: &'static [u8]) -> Lines {
        Lines::new("in.jsonl".to_string(), Box::new(data))
    }

    #[test]
    fn blank_lines_are_skipped_but_counted() {
        let mut inp = input(b"\n{\"a\": 1}\n  \t\r\n\x0c\n{\"b\": 2}\r\n{\"c\": 3}");
        let (lines, done) = inp.read_lines(usize::MAX).unwrap();
        assert!(done);
        let got: Vec<(usize, &[u8])> = lines.iter().map(|l| (l.no, &l.bytes[..])).collect();
        assert_eq!(
            got,
            [
                (2, &b"{\"a\": 1}\n"[..]),
                (5, b"{\"b\": 2}\r\n"),
                (6, b"{\"c\": 3}")
            ]
        );
        assert!(inp.next_line().unwrap().is_none());
    }

    #[test]
    fn chunks_end_when_full_or_exhausted() {
        let mut inp = input(b"1\n2\n\n3\n");
        let (a, done) = inp.read_lines(2).unwrap();
        assert_eq!((a.len(), done), (2, false));
        let (b, done) = inp.read_lines(2).unwrap();
        assert_eq!((b.len(), b[0].no, done), (1, 4, true));
        let (c, done) = inp.read_lines(2).unwrap();
        assert!(c.is_empty() && done);
    }
}
