//! JSON Lines out: each kept line's bytes as they were read (blank lines too, as they are not
//! rows); annotating appends the added members inside each line's object, its bytes
//! otherwise unchanged.

use std::io::Read;

use super::atomic::Compressed;
use super::judge::Judge;
use super::{ApplyError, Event, FileJob, input_error};
use crate::input::{At, Id, JsonLine, Lines, Origin, Position};

/// Rows between two progress events.
const PROGRESS_EVERY: u64 = 4096;

/// Reads the lines of `bytes` (decompressed) and writes the kept (or annotated) ones to `out`.
pub fn apply(
    job: FileJob<'_>,
    bytes: Box<dyn Read + Send>,
    mut out: Compressed,
    judge: &mut Judge<'_>,
) -> Result<(), ApplyError> {
    let file = job.file;
    let mut lines = Lines::new(file.name.clone(), bytes).with_limit(job.opts.max_document_bytes);
    let names = job.opts.annotate.as_ref().map(|a| (a, a.names()));
    let mut rows = 0u64;
    while let Some(line) = lines.next_any_line().map_err(input_error)? {
        if line.bytes.iter().all(u8::is_ascii_whitespace) {
            out.write(&line.bytes)?;
            continue;
        }
        let origin = Origin {
            file: file.clone(),
            at: Position::Line(line.no),
        };
        let at = At {
            name: &file.name,
            line: line.no,
        };
        let key = JsonLine::parse(&line.bytes, at).and_then(|record| match &job.opts.fields.id {
            Id::Field(field) => record.key(field),
            Id::FromPath => Ok(origin.path_id()),
        });
        let outcome = judge.judge(key, &origin)?;
        match &names {
            Some((annotate, names)) => {
                let members = |first| outcome.note.json_members(names, first);
                let annotated = annotated(&line.bytes, &members, |n| {
                    annotate.check(&origin.to_string(), |c| n.contains_key(c))
                })?;
                out.write(&annotated)?;
            }
            None if outcome.keep => out.write(&line.bytes)?,
            None => {}
        }
        rows += 1;
        if rows.is_multiple_of(PROGRESS_EVERY) {
            (job.events)(Event::Rows(rows));
        }
    }
    (job.events)(Event::Rows(rows));
    out.finish()
}

/// `line` with `members(first)` inserted before the closing brace of its object (`first`:
/// the object is empty), after `check` has seen the object's own members.
fn annotated(
    line: &[u8],
    members: &dyn Fn(bool) -> String,
    check: impl Fn(&serde_json::Map<String, serde_json::Value>) -> Result<(), ApplyError>,
) -> Result<Vec<u8>, ApplyError> {
    let body_end = line
        .iter()
        .rposition(|b| !b.is_ascii_whitespace())
        .map_or(0, |i| i + 1);
    let object: Option<serde_json::Map<String, serde_json::Value>> =
        serde_json::from_slice(&line[..body_end]).ok();
    let Some(object) = object.filter(|_| line[..body_end].ends_with(b"}")) else {
        // Not an object (`add` refused it): there is nowhere to add members.
        return Ok(line.to_vec());
    };
    check(&object)?;
    let close = body_end - 1;
    let mut out = Vec::with_capacity(line.len() + 96);
    out.extend_from_slice(&line[..close]);
    out.extend_from_slice(members(object.is_empty()).as_bytes());
    out.extend_from_slice(&line[close..]);
    Ok(out)
}
