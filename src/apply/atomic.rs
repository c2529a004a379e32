//! The output directory: checked before anything is written (it must not be, hold or lie in
//! an input; two inputs must not have one relative path; a file there is replaced only when
//! asked), and each file written whole or not at all: under a temporary name beside its
//! final one (a leftover of a killed run is overwritten), flushed to disk, renamed, and the
//! directory flushed, so a final name never holds a partial file.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{ApplyError, io_error};
use crate::input::{Compression, InputFile};

/// The checked output directory and each input's output file.
pub struct OutputDir {
    targets: HashMap<PathBuf, PathBuf>,
}

impl OutputDir {
    /// Checks `out` against the `inputs` (as given) and their `files`.
    pub fn check(
        out: &Path,
        inputs: &[PathBuf],
        files: &[Arc<InputFile>],
        overwrite: bool,
    ) -> Result<OutputDir, ApplyError> {
        let out_real = resolved(out);
        let given = inputs.iter().filter(|p| p.exists());
        for input in given.chain(files.iter().map(|f| &f.path)) {
            let real = resolved(input);
            if real == out_real || real.starts_with(&out_real) || out_real.starts_with(&real) {
                return Err(ApplyError::Usage(format!(
                    "the output directory {} is, holds or lies in the input {}: an input is \
                     never overwritten, nor an output read as an input; choose another --out",
                    out.display(),
                    input.display()
                )));
            }
        }
        let mut targets = HashMap::new();
        let mut by_target: HashMap<PathBuf, &str> = HashMap::new();
        for f in files {
            let target = out.join(&f.relative);
            if let Some(other) = by_target.insert(target.clone(), &f.name) {
                return Err(ApplyError::Usage(format!(
                    "{} and {other} would both be written to {}: give inputs whose paths \
                     below their roots differ",
                    f.name,
                    target.display()
                )));
            }
            if !overwrite && target.exists() {
                return Err(ApplyError::Usage(format!(
                    "{} exists (from an earlier run?); --overwrite replaces it",
                    target.display()
                )));
            }
            targets.insert(f.path.clone(), target);
        }
        Ok(OutputDir { targets })
    }

    /// The output file of `file`, opened under its temporary name.
    pub fn target(&self, file: &InputFile) -> Result<Target, ApplyError> {
        let path = self.targets.get(&file.path).cloned().unwrap_or_default();
        Target::create(path)
    }
}

/// `path` made absolute with its symbolic links resolved, as far as it exists.
fn resolved(path: &Path) -> PathBuf {
    let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut existing = abs.as_path();
    let mut rest = Vec::new();
    while !existing.exists() {
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_os_string());
                existing = parent;
            }
            _ => break,
        }
    }
    let mut real = existing
        .canonicalize()
        .unwrap_or_else(|_| existing.to_path_buf());
    real.extend(rest.iter().rev());
    real
}

/// One output file being written under its temporary name; removed unless committed.
pub struct Target {
    path: PathBuf,
    temp: PathBuf,
    file: Option<File>,
    committed: bool,
}

impl Target {
    fn create(path: PathBuf) -> Result<Target, ApplyError> {
        let dir = path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).map_err(|e| io_error(dir.display(), "create it", e))?;
        // A dot name: readers of datasets pass over it, as `mhdb add` does.
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        let temp = dir.join(format!(".{name}.mhdb-partial"));
        let file = File::create(&temp).map_err(|e| io_error(temp.display(), "create it", e))?;
        Ok(Target {
            path,
            temp,
            file: Some(file),
            committed: false,
        })
    }

    /// The temporary file, to write (once).
    pub fn take_file(&mut self) -> Result<File, ApplyError> {
        self.file
            .take()
            .ok_or_else(|| ApplyError::Other(format!("{} opened twice", self.temp.display())))
    }

    /// As messages name it.
    pub fn name(&self) -> String {
        self.path.display().to_string()
    }

    /// The file written: flushed to disk, renamed to its final name, the directory flushed.
    pub fn commit(mut self, file: File) -> Result<(), ApplyError> {
        let name = self.name();
        file.sync_all()
            .map_err(|e| io_error(&name, "flush it to disk", e))?;
        drop(file);
        std::fs::rename(&self.temp, &self.path).map_err(|e| io_error(&name, "rename it", e))?;
        self.committed = true;
        let dir = self.path.parent().unwrap_or(Path::new("."));
        File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| io_error(dir.display(), "flush the directory", e))
    }

    /// A writer compressing as `compression` says.
    pub fn compressed(mut self, compression: Compression) -> Result<Compressed, ApplyError> {
        let file = BufWriter::with_capacity(1 << 20, self.take_file()?);
        let encoder = match compression {
            Compression::None => Encoder::Plain(file),
            Compression::Gzip => Encoder::Gzip(flate2::write::GzEncoder::new(
                file,
                flate2::Compression::default(),
            )),
            Compression::Zstd => Encoder::Zstd(
                zstd::Encoder::new(file, 0).map_err(|e| io_error(self.name(), "compress", e))?,
            ),
        };
        Ok(Compressed {
            target: self,
            encoder,
        })
    }
}

impl Drop for Target {
    fn drop(&mut self) {
        if !self.committed {
            // Best effort: a leftover is overwritten by the next run anyway.
            let _ = std::fs::remove_file(&self.temp);
        }
    }
}

enum Encoder {
    Plain(BufWriter<File>),
    Gzip(flate2::write::GzEncoder<BufWriter<File>>),
    Zstd(zstd::Encoder<'static, BufWriter<File>>),
}

/// An output file of a line format, compressed as its input was.
pub struct Compressed {
    target: Target,
    encoder: Encoder,
}

impl Compressed {
    /// Writes `bytes`.
    pub fn write(&mut self, bytes: &[u8]) -> Result<(), ApplyError> {
        let written = match &mut self.encoder {
            Encoder::Plain(w) => w.write_all(bytes),
            Encoder::Gzip(w) => w.write_all(bytes),
            Encoder::Zstd(w) => w.write_all(bytes),
        };
        written.map_err(|e| io_error(self.target.name(), "write it", e))
    }

    /// Ends the stream and commits the file.
    pub fn finish(self) -> Result<(), ApplyError> {
        let name = self.target.name();
        let err = |e| io_error(&name, "write it", e);
        let buffered = match self.encoder {
            Encoder::Plain(w) => w,
            Encoder::Gzip(w) => w.finish().map_err(err)?,
            Encoder::Zstd(w) => w.finish().map_err(err)?,
        };
        let file = buffered.into_inner().map_err(|e| err(e.into_error()))?;
        self.target.commit(file)
    }
}
