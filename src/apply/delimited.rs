//! CSV and TSV out: the header and each kept record's bytes as they were read (and whatever
//! lies between records), found by the byte positions the CSV reader reports over a copy of
//! the bytes it has read but not yet handed out. Annotating appends fields to the header and
//! to every record, before its line end.

use std::io::Read;

use csv::{ByteRecord, ReaderBuilder};

use super::atomic::Compressed;
use super::judge::Judge;
use super::{ApplyError, Event, FileJob};
use crate::input::{Id, Origin, Position, within_key_limit};

/// The bytes read through it, from offset `base` on, kept until they are written out.
struct Tee {
    inner: Box<dyn Read + Send>,
    kept: Vec<u8>,
    base: u64,
}

impl Read for Tee {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.kept.extend_from_slice(&buf[..n]);
        Ok(n)
    }
}

impl Tee {
    /// The kept bytes up to offset `end`, handed out and forgotten.
    fn take_to(&mut self, end: u64) -> Vec<u8> {
        let n = ((end.saturating_sub(self.base)) as usize).min(self.kept.len());
        self.base += n as u64;
        self.kept.drain(..n).collect()
    }
}

/// Reads the records of `bytes` and writes the kept (or annotated) ones to `out`.
pub fn apply(
    job: FileJob<'_>,
    bytes: Box<dyn Read + Send>,
    delimiter: u8,
    mut out: Compressed,
    judge: &mut Judge<'_>,
) -> Result<(), ApplyError> {
    let name = &job.file.name;
    let bad = |e: csv::Error| ApplyError::Corrupt(format!("{name}: read error: {e}"));
    let tee = Tee {
        inner: bytes,
        kept: Vec::new(),
        base: 0,
    };
    let mut reader = ReaderBuilder::new()
        .delimiter(delimiter)
        .has_headers(true)
        .flexible(true)
        .from_reader(tee);
    let header = reader.byte_headers().map_err(bad)?.clone();
    let column = |field: &str| {
        let found = header.iter().position(|h| h == field.as_bytes());
        found.ok_or_else(|| ApplyError::Usage(format!("{name}: no column {field:?} in its header")))
    };
    let id = job.opts.fields.id.field().map(column).transpose()?;
    column(&job.opts.fields.text)?;
    let header_end = reader.position().byte();
    let header_bytes = reader.get_mut().take_to(header_end);
    let names = job.opts.annotate.as_ref().map(|a| (a, a.names()));
    match &names {
        Some((annotate, names)) => {
            annotate.check(name, |c| header.iter().any(|h| h == c.as_bytes()))?;
            let fields = names.clone().map(String::into_bytes);
            out.write(&with_fields(&header_bytes, &fields, delimiter))?;
        }
        None => out.write(&header_bytes)?,
    }
    let mut record = ByteRecord::new();
    let mut rows = 0u64;
    while reader.read_byte_record(&mut record).map_err(bad)? {
        let (start, end) = (
            record.position().map_or(0, |p| p.byte()),
            reader.position().byte(),
        );
        let between = reader.get_mut().take_to(start);
        out.write(&between)?;
        let bytes = reader.get_mut().take_to(end);
        let origin = Origin {
            file: job.file.clone(),
            at: Position::Line(record.position().map_or(0, |p| p.line()) as usize),
        };
        let key = match (&job.opts.fields.id, id) {
            (Id::Field(field), Some(i)) => match record.get(i) {
                Some(value) => {
                    within_key_limit(value.to_vec()).map_err(|e| format!("column {field:?} {e}"))
                }
                None => Err(format!("no field {field:?} in a short record")),
            },
            _ => Ok(origin.path_id()),
        };
        let outcome = judge.judge(key, &origin)?;
        if names.is_some() {
            out.write(&with_fields(&bytes, &outcome.note.fields(), delimiter))?;
        } else if outcome.keep {
            out.write(&bytes)?;
        }
        rows += 1;
        if rows.is_multiple_of(4096) {
            (job.events)(Event::Rows(rows));
        }
    }
    (job.events)(Event::Rows(rows));
    let rest = reader.get_mut().take_to(u64::MAX);
    out.write(&rest)?;
    out.finish()
}

/// `record` (its bytes, with their line end) with `fields` appended before the line end.
fn with_fields(record: &[u8], fields: &[Vec<u8>; 4], delimiter: u8) -> Vec<u8> {
    let body = record
        .iter()
        .rposition(|&b| b != b'\n' && b != b'\r')
        .map_or(0, |i| i + 1);
    let mut out = Vec::with_capacity(record.len() + 64);
    out.extend_from_slice(&record[..body]);
    for f in fields {
        out.push(delimiter);
        let quote = f
            .iter()
            .any(|&b| b == delimiter || matches!(b, b'"' | b'\n' | b'\r'));
        if quote {
            out.push(b'"');
            for &b in f {
                if b == b'"' {
                    out.push(b'"');
                }
                out.push(b);
            }
            out.push(b'"');
        } else {
            out.extend_from_slice(f);
        }
    }
    out.extend_from_slice(&record[body..]);
    out
}
