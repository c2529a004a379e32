//! Lines read from a file or a stream, numbered. Lines end at `\n`; line numbers start at 1 and
//! count every line; a line of nothing but ASCII white space is blank. A line is one document,
//! so it is held to the per-document limit: a longer one is read no further than the limit
//! and is an error, or, when asked, passed over to its end in bounded memory (an input that is
//! one endless line is then read for ever, as `wc -l` would).

use std::io::{BufRead, BufReader, Read};

use super::{DEFAULT_MAX_DOCUMENT_BYTES, Error, Limit};

/// Numbered lines from one input.
pub struct Lines {
    name: String,
    reader: BufReader<Box<dyn Read + Send>>,
    line_no: usize,
    /// Bytes consumed so far: where the next line starts.
    offset: u64,
    /// The longest line, in bytes, without its `\n`.
    limit: Limit,
    /// A longer line is passed over rather than an error.
    skip_too_long: bool,
    /// The lines are decompressed from the file: their byte offsets are not the file's.
    decompressed: bool,
}

/// One line with its number; `bytes` ends with the `\n` unless it was the last line.
pub struct Line {
    /// 1-based, blank lines included.
    pub no: usize,
    /// The line as read (empty for a line too long to hold).
    pub bytes: Vec<u8>,
    /// For a line longer than the limit, which was passed over: why, naming the line and its
    /// byte offset.
    pub too_long: Option<String>,
}

impl Lines {
    /// The lines of `reader`, which messages call `name`.
    pub fn new(name: String, reader: Box<dyn Read + Send>) -> Lines {
        Lines {
            name,
            reader: BufReader::with_capacity(1 << 20, reader),
            line_no: 0,
            offset: 0,
            limit: Limit {
                bytes: DEFAULT_MAX_DOCUMENT_BYTES,
                set_by: None,
            },
            skip_too_long: false,
            decompressed: false,
        }
    }

    /// The same lines, a line longer than the limit refused with words saying that `how`
    /// (`--max-document-bytes`) raises the limit.
    pub fn limit_set_by(mut self, how: impl Into<String>) -> Lines {
        self.limit.set_by = Some(how.into());
        self
    }

    /// The same lines, held to `limit`.
    pub(super) fn held_to(mut self, limit: Limit) -> Lines {
        self.limit = limit;
        self
    }

    /// The same lines, read from a decompressed stream: the byte offsets messages give are
    /// said to be of the decompressed data.
    pub fn decompressed(mut self) -> Lines {
        self.decompressed = true;
        self
    }

    /// The same lines, a line longer than the limit passed over to its end and handed out
    /// marked [`Line::too_long`] by [`Lines::read_lines`] (still an error for
    /// [`Lines::next_line`]).
    pub fn skipping_too_long(mut self) -> Lines {
        self.skip_too_long = true;
        self
    }

    /// The same lines, each at most `limit` bytes long (without its `\n`).
    pub fn with_limit(mut self, limit: u64) -> Lines {
        self.limit.bytes = limit;
        self
    }

    /// The input as messages name it.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The next line, blank or not, or `None` at the end (`NAME: read error: …` on failure;
    /// `NAME:LINE: …` for a line longer than the limit).
    pub fn next_any_line(&mut self) -> Result<Option<Line>, Error> {
        refuse_too_long(self.next_any_or_too_long())
    }

    /// The next non-blank line, or `None` at the end (an error for a line longer than the
    /// limit).
    pub fn next_line(&mut self) -> Result<Option<Line>, Error> {
        refuse_too_long(self.next_or_too_long())
    }

    /// The next line, blank or not, with a line longer than the limit passed over and marked
    /// [`Line::too_long`].
    fn next_any_or_too_long(&mut self) -> Result<Option<Line>, Error> {
        let name = self.name.clone();
        let read_error = |e| Error::new(format!("{name}: read error: {e}"));
        let start = self.offset;
        let mut bytes = Vec::new();
        let take = self.limit.bytes.saturating_add(1);
        let n = (&mut self.reader)
            .take(take)
            .read_until(b'\n', &mut bytes)
            .map_err(read_error)?;
        if n == 0 {
            return Ok(None);
        }
        self.offset += n as u64;
        self.line_no += 1;
        let mut too_long = None;
        if bytes.len() as u64 > self.limit.bytes && bytes.last() != Some(&b'\n') {
            let of = if self.decompressed {
                " of the decompressed data"
            } else {
                ""
            };
            let why = format!(
                "{name}:{}: the line (from byte offset {start}{of}) is {}",
                self.line_no,
                self.limit.exceeded()
            );
            if !self.skip_too_long {
                return Err(Error::new(why));
            }
            self.skip_rest_of_line().map_err(read_error)?;
            bytes = Vec::new();
            too_long = Some(why);
        }
        Ok(Some(Line {
            no: self.line_no,
            bytes,
            too_long,
        }))
    }

    /// Consumes the input up to and including the next `\n`, holding none of it.
    fn skip_rest_of_line(&mut self) -> std::io::Result<()> {
        loop {
            let buf = self.reader.fill_buf()?;
            if buf.is_empty() {
                return Ok(());
            }
            let (n, end) = match buf.iter().position(|&b| b == b'\n') {
                Some(i) => (i + 1, true),
                None => (buf.len(), false),
            };
            self.reader.consume(n);
            self.offset += n as u64;
            if end {
                return Ok(());
            }
        }
    }

    /// The next non-blank line (or one too long to hold), or `None` at the end.
    fn next_or_too_long(&mut self) -> Result<Option<Line>, Error> {
        while let Some(line) = self.next_any_or_too_long()? {
            if line.too_long.is_some() || !line.bytes.iter().all(u8::is_ascii_whitespace) {
                return Ok(Some(line));
            }
        }
        Ok(None)
    }

    /// Up to `max` more non-blank lines, and `true` once the input is exhausted. A line longer
    /// than the limit is among them, marked [`Line::too_long`], for the caller to refuse in
    /// its place.
    pub fn read_lines(&mut self, max: usize) -> Result<(Vec<Line>, bool), Error> {
        let mut lines = Vec::with_capacity(max.min(1 << 16));
        while lines.len() < max {
            match self.next_or_too_long()? {
                Some(line) => lines.push(line),
                None => return Ok((lines, true)),
            }
        }
        Ok((lines, false))
    }
}

/// A line too long to hold made the error that stops whoever reads lines one by one.
fn refuse_too_long(line: Result<Option<Line>, Error>) -> Result<Option<Line>, Error> {
    match line? {
        Some(Line {
            too_long: Some(why),
            ..
        }) => Err(Error::new(why)),
        line => Ok(line),
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

#[cfg(test)]
mod limit_tests {
    use super::*;

    #[test]
    fn a_line_over_the_limit_is_passed_over_naming_its_offset() {
        let data: &'static [u8] = b"12345\n123456\n1234567890\nab\n123456";
        let mut inp = Lines::new("in.jsonl".to_string(), Box::new(data))
            .with_limit(6)
            .skipping_too_long();
        let (lines, done) = inp.read_lines(usize::MAX).unwrap();
        assert!(done);
        let got: Vec<_> = lines
            .iter()
            .map(|l| (l.no, &l.bytes[..], l.too_long.as_deref()))
            .collect();
        let why = "in.jsonl:3: the line (from byte offset 13) is longer than 6 bytes, the limit \
                   for one document";
        assert_eq!(
            got,
            [
                (1, &b"12345\n"[..], None),
                (2, b"123456\n", None),
                (3, b"", Some(why)),
                (4, b"ab\n", None),
                (5, b"123456", None),
            ]
        );
        let mut inp = Lines::new("in.jsonl".to_string(), Box::new(data)).with_limit(5);
        assert!(inp.next_line().unwrap().is_some());
        let e = inp.next_line().err().unwrap();
        assert!(
            e.to_string()
                .starts_with("in.jsonl:2: the line (from byte offset 6)")
        );
        // What raises the limit is named when the caller said; offsets in decompressed data
        // are said to be so.
        let mut inp = Lines::new("in.jsonl.gz".to_string(), Box::new(data))
            .with_limit(5)
            .limit_set_by("--max-document-bytes")
            .decompressed();
        assert!(inp.next_line().unwrap().is_some());
        assert_eq!(
            inp.next_line().err().unwrap().to_string(),
            "in.jsonl.gz:2: the line (from byte offset 6 of the decompressed data) is longer than \
             5 bytes, the limit for one document (--max-document-bytes sets it)"
        );
        // Not asked to pass over it, a chunk stops at it: its end may never come.
        let mut inp = Lines::new("in.jsonl".to_string(), Box::new(data)).with_limit(6);
        let e = inp.read_lines(usize::MAX).err().unwrap();
        assert!(
            e.to_string()
                .starts_with("in.jsonl:3: the line (from byte offset 13)")
        );
    }
}
