//! Deduplicated files out: a dedup decision of the index applied to the files the index was
//! loaded from. Each input file becomes an output file at the same relative path under the
//! output directory, in the same format and compression, holding the kept rows (or, when
//! annotating, every row with `cluster`, `keep`, `best_match` and `similarity` added).
//!
//! Each row's id is read as `mhdb add` read it from the same inputs and fields
//! ([`crate::input`]). A row whose id is not in the index (or that `add` could not read) is
//! kept and counted; an id met twice in the inputs is an error unless [`OnRepeat`] says
//! otherwise.
//!
//! The verdict of each stored id is [`crate::decisions`]'s. A containment index's needs each
//! document's full signature, which the index does not keep: its inputs are read twice, once
//! to decide and once to write.
//!
//! | module | owns |
//! | --- | --- |
//! | `judge` | each input row's outcome: its verdict, ids met twice, the counts |
//! | `annotation` | the added columns: their names, types and values |
//! | `atomic` | the output directory: its checks, and files written whole or not at all |
//! | `contained` | a containment index's decision, from the inputs read a first time |
//! | `jsonl`, `delimited`, `parquet`, `ipc` | each format read and written row by row |

mod annotation;
mod atomic;
mod contained;
mod delimited;
mod ipc;
mod jsonl;
mod judge;
mod parquet;

use std::fmt;
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use crate::decisions::{Decision, Decisions, Keep, Verdict};
pub use annotation::Annotate;
pub use judge::{OnRepeat, Summary};

use crate::db::{DedupOptions, Metric, ReadIndex};
use crate::input::{Fields, Format, InputFile, MAGIC_LEN, decompressed, detect, expand};
use atomic::{OutputDir, Target};
use judge::Judge;

/// How the decision is taken and applied.
#[derive(Clone, Debug)]
pub struct ApplyOptions {
    /// The similarity at or above which two documents are near-duplicates.
    pub threshold: f64,
    /// How the dedup pass decides similarity.
    pub dedup: DedupOptions,
    /// Which copy stays.
    pub keep: Keep,
    /// Where the ids (and texts, which must be there as `add` needed them) are.
    pub fields: Fields,
    /// Keep every row and add the decision as columns, instead of dropping rows.
    pub annotate: Option<Annotate>,
    /// What an id met twice in the inputs does.
    pub on_repeat: OnRepeat,
    /// Replace output files that exist (otherwise their presence is refused before anything
    /// is written).
    pub overwrite: bool,
    /// The longest JSON line read, as `add --max-document-bytes`.
    pub max_document_bytes: u64,
}

/// Why applying stopped.
#[derive(Debug)]
pub enum ApplyError {
    /// The request cannot be done as asked (an output inside an input, a taken column name,
    /// an output file that exists): nothing was written.
    Usage(String),
    /// An input cannot be decoded (a corrupt compressed stream, Parquet page or Arrow batch).
    Corrupt(String),
    /// Any other failure: reading or writing files, an id met twice.
    Other(String),
    /// The index failed.
    Index(crate::Error),
}

impl fmt::Display for ApplyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ApplyError::Usage(m) | ApplyError::Corrupt(m) | ApplyError::Other(m) => f.write_str(m),
            ApplyError::Index(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for ApplyError {}

impl From<crate::Error> for ApplyError {
    fn from(e: crate::Error) -> Self {
        ApplyError::Index(e)
    }
}

/// What the caller is told as the work goes.
pub enum Event<'a> {
    /// The dedup pass reached a band.
    Band {
        /// Bands done.
        done: usize,
        /// Bands in all.
        bands: usize,
    },
    /// An input file is being written.
    File {
        /// As messages name it.
        name: &'a str,
        /// Its number among the inputs, from 1.
        number: usize,
        /// Input files in all.
        files: usize,
        /// Its size in bytes.
        bytes: u64,
    },
    /// A containment index's pass, which reads the inputs once before writing them: the
    /// documents answered so far.
    Queried(u64),
    /// Rows of the current file done so far.
    Rows(u64),
    /// A FIFO, device or socket found walking a directory, passed over as `add` passes
    /// over it.
    NotAFile(&'a Path),
}

/// A failure to read or write `name`, worded with the operation.
pub(crate) fn io_error(name: impl fmt::Display, op: &str, e: std::io::Error) -> ApplyError {
    ApplyError::Other(format!("{name}: cannot {op}: {e}"))
}

/// A reading failure of the library's input layer: a stream or file that cannot be decoded.
pub(crate) fn input_error(e: crate::input::Error) -> ApplyError {
    ApplyError::Corrupt(e.to_string())
}

/// Refuses, before anything is read or written, what [`apply`] would refuse of `out` given
/// these inputs (an output inside an input, an output file that exists without `overwrite`):
/// for a caller with work to do before applying, such as building the index.
pub fn check_output(inputs: &[PathBuf], out: &Path, overwrite: bool) -> Result<(), ApplyError> {
    let (files, _) = expand(inputs).map_err(|e| ApplyError::Usage(e.to_string()))?;
    OutputDir::check(out, inputs, &files, overwrite).map(|_| ())
}

/// The decision of a containment index, its documents read again from `inputs` as `opts`
/// says (`add` read them so): for a caller that writes it otherwise than [`apply`] does, as
/// clusters or a list of the dropped keys. Rows that cannot be read as `add` reads them are
/// passed over; what cannot be read at all is the error.
pub fn containment_decisions(
    index: &dyn ReadIndex,
    inputs: &[PathBuf],
    opts: &ApplyOptions,
    events: &mut dyn FnMut(Event<'_>),
) -> Result<Decisions, ApplyError> {
    contained::decisions(index, inputs, opts, events)
}

/// Decides every document of `index` and writes the files `inputs` name, each under `out`
/// at its relative path. Nothing is written when the request is refused (an output inside an
/// input, an output file that exists without `overwrite`).
pub fn apply(
    index: &dyn ReadIndex,
    inputs: &[PathBuf],
    out: &Path,
    opts: &ApplyOptions,
    events: &mut dyn FnMut(Event<'_>),
) -> Result<Summary, ApplyError> {
    if inputs.is_empty() || inputs.iter().any(|p| p.as_os_str() == "-") {
        return Err(ApplyError::Usage(
            "--apply needs input files, directories or patterns (not standard input): each \
             output file is named after its input"
                .to_string(),
        ));
    }
    let (files, skipped) = expand(inputs).map_err(|e| ApplyError::Usage(e.to_string()))?;
    for path in &skipped {
        events(Event::NotAFile(path));
    }
    let dir = OutputDir::check(out, inputs, &files, opts.overwrite)?;
    let decisions = match index.params().metric() {
        Metric::Containment => contained::decisions(index, inputs, opts, events)?,
        _ => Decisions::compute(
            index,
            opts.threshold,
            opts.dedup,
            &opts.keep,
            &mut |done, bands| events(Event::Band { done, bands }),
        )?,
    };
    let mut judge = Judge::new(index, &decisions, opts.on_repeat);
    for (i, file) in files.iter().enumerate() {
        let bytes = std::fs::metadata(&file.path).map_or(0, |m| m.len());
        events(Event::File {
            name: &file.name,
            number: i + 1,
            files: files.len(),
            bytes,
        });
        let target = dir.target(file)?;
        apply_file(file, target, &mut judge, opts, events)?;
    }
    let mut summary = judge.summary();
    summary.files = files.len() as u64;
    Ok(summary)
}

/// One input file, read in its format and written to `target`.
fn apply_file(
    file: &Arc<InputFile>,
    target: Target,
    judge: &mut Judge<'_>,
    opts: &ApplyOptions,
    events: &mut dyn FnMut(Event<'_>),
) -> Result<(), ApplyError> {
    let name = &file.name;
    let mut f = File::open(&file.path).map_err(|e| io_error(name, "open it", e))?;
    let mut head = Vec::new();
    (&mut f)
        .take(MAGIC_LEN as u64)
        .read_to_end(&mut head)
        .map_err(|e| io_error(name, "read it", e))?;
    let (format, compression) = detect(&head, &file.path);
    let job = FileJob { file, opts, events };
    match format {
        Format::Parquet => parquet::apply(job, target, judge),
        Format::ArrowFile => ipc::apply(job, target, judge, false),
        Format::ArrowStream => ipc::apply(job, target, judge, true),
        Format::JsonLines | Format::Delimited(_) => {
            let whole = Box::new(std::io::Cursor::new(head).chain(f));
            let bytes =
                decompressed(whole, compression).map_err(|e| io_error(&file.name, "read it", e))?;
            let out = target.compressed(compression)?;
            match format {
                Format::Delimited(delimiter) => delimited::apply(job, bytes, delimiter, out, judge),
                _ => jsonl::apply(job, bytes, out, judge),
            }
        }
    }
}

/// What a format's writer is given for one file.
pub(crate) struct FileJob<'a> {
    file: &'a Arc<InputFile>,
    opts: &'a ApplyOptions,
    events: &'a mut dyn FnMut(Event<'_>),
}
