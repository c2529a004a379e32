//! How the tool reports: failures and the exit code each maps to (0 success, 1 I/O and other
//! failures, 2 usage errors, 3 corruption), writing to stdout so that a reader who closes it
//! early (`mhdb keys idx | head`) ends the command quietly, and what goes to stderr instead:
//! messages, warnings and progress bars (on a terminal only).

use std::fmt;
use std::io::IsTerminal;
use std::process::ExitCode;

use indicatif::{ProgressBar, ProgressStyle};

/// A failure with the exit code it maps to.
#[derive(Debug)]
pub struct CliError {
    msg: String,
    code: u8,
    /// The reader of our output went away (`mhdb keys idx | head`): not worth a message.
    broken_pipe: bool,
}

impl CliError {
    /// A usage error: exit code 2.
    pub fn usage(msg: impl Into<String>) -> Self {
        CliError {
            msg: msg.into(),
            code: 2,
            broken_pipe: false,
        }
    }

    /// Damaged data (here: an input that cannot be decoded): exit code 3.
    pub fn corrupt(msg: impl Into<String>) -> Self {
        CliError {
            msg: msg.into(),
            code: 3,
            broken_pipe: false,
        }
    }

    /// Any other failure: exit code 1.
    pub fn other(msg: impl Into<String>) -> Self {
        CliError {
            msg: msg.into(),
            code: 1,
            broken_pipe: false,
        }
    }

    /// A failure to write standard output (exit code 1; a closed pipe ends the command
    /// quietly). What the command wrote to the database before it is committed.
    pub fn stdout(e: std::io::Error) -> Self {
        CliError {
            broken_pipe: e.kind() == std::io::ErrorKind::BrokenPipe,
            ..CliError::other(format!(
                "cannot write to standard output: {e} (the output failed, not the database: \
                 what the command committed stays committed)"
            ))
        }
    }

    /// The same failure, its message prefixed with where it happened (`q.jsonl:7`).
    pub fn at(self, origin: impl fmt::Display) -> Self {
        CliError {
            msg: format!("{origin}: {}", self.msg),
            ..self
        }
    }

    /// The same failure, followed by a line saying what the command did before it (printed
    /// after the cause, which is what a reader looks for first).
    pub fn then_note(self, note: impl fmt::Display) -> Self {
        CliError {
            msg: format!("{}\nmhdb: {note}", self.msg),
            ..self
        }
    }

    /// The process exit code this failure ends the command with.
    pub fn exit_code(&self) -> u8 {
        self.code
    }

    /// True when stdout's reader closed it early, which ends the command quietly.
    pub fn is_broken_pipe(&self) -> bool {
        self.broken_pipe
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.msg)
    }
}

impl From<mhdb::Error> for CliError {
    fn from(e: mhdb::Error) -> Self {
        let code = match &e {
            mhdb::Error::Corruption { .. } => 3,
            mhdb::Error::InvalidParameter { .. } | mhdb::Error::ParameterMismatch { .. } => 2,
            // I/O, not found, locked, read-only, unsupported version; a passed deadline, which
            // no command sets.
            _ => 1,
        };
        let broken_pipe = matches!(&e, mhdb::Error::Io { source, .. }
            if source.kind() == std::io::ErrorKind::BrokenPipe);
        let msg = match &e {
            // "not an mhdb database (no CURRENT file)" misleads when nothing is there at all.
            mhdb::Error::NotFound { path } if !path.exists() => {
                format!(
                    "{}: no such database (the directory does not exist)",
                    path.display()
                )
            }
            // Each command opens its own handle, and a failure of one of its writes ends it:
            // a refusal for an earlier failure means the upkeep after one of its commits.
            mhdb::Error::PreviousIo { cause } if !cause.is_empty() => format!(
                "stopped: the upkeep after this command's last commit (a flush or a compaction) \
                 failed, and the database takes no more writes until it is reopened (everything \
                 committed is kept): {cause}"
            ),
            _ => e.to_string(),
        };
        CliError {
            msg,
            code,
            broken_pipe,
        }
    }
}

impl From<std::io::Error> for CliError {
    fn from(e: std::io::Error) -> Self {
        let broken_pipe = e.kind() == std::io::ErrorKind::BrokenPipe;
        CliError {
            broken_pipe,
            ..CliError::other(e.to_string())
        }
    }
}

/// What every command returns: its exit code, or the failure that ends it.
pub type CliResult<T = ()> = Result<T, CliError>;

/// Ends the process: a command's own exit code, or a failure printed as `mhdb: message` with
/// its exit code; a closed stdout ends it quietly with success.
pub fn exit(result: CliResult<ExitCode>) -> ExitCode {
    match result {
        Ok(code) => code,
        // Whoever read our output stopped early (`mhdb keys idx | head`): that is their
        // choice, not an error to report.
        Err(e) if e.is_broken_pipe() => ExitCode::SUCCESS,
        Err(e) => {
            to_stderr(format_args!("mhdb: {e}"));
            ExitCode::from(e.exit_code())
        }
    }
}

/// `println!` that returns an error (instead of panicking) when stdout is closed early or
/// cannot be written (the error then says it was the output, not the database, that failed).
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        writeln!(std::io::stdout().lock(), $($arg)*)
            .map_err(crate::cli::output::CliError::stdout)?
    }};
}
pub(crate) use outln;

/// A progress bar on stderr drawn with `template`, when stderr is a terminal: a bar of `len`
/// steps, or a spinner when `len` is `None` (see also [`InputProgress`]).
pub fn progress(len: Option<u64>, template: &str) -> Option<ProgressBar> {
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let (bar, fallback) = match len {
        Some(n) => (ProgressBar::new(n), ProgressStyle::default_bar()),
        None => (ProgressBar::new_spinner(), ProgressStyle::default_spinner()),
    };
    bar.set_style(ProgressStyle::with_template(template).unwrap_or(fallback));
    Some(bar)
}

/// Progress through inputs, on stderr when it is a terminal: with the inputs' total size
/// known, a bar of the bytes read with its percent, an estimate of the time left and the count
/// of what is done; without it (standard input, a pipe), a spinner counting what is done.
pub struct InputProgress {
    bar: ProgressBar,
    input: mhdb::input::Progress,
    /// What is counted: `documents`, `queries`.
    unit: &'static str,
}

impl InputProgress {
    /// Progress through `input`, counting `unit`s done; none when stderr is not a terminal.
    pub fn new(input: mhdb::input::Progress, unit: &'static str) -> Option<InputProgress> {
        let bar = match input.total() {
            Some(total) => progress(
                Some(total),
                "{bar:40} {percent:>3}%  {bytes}/{total_bytes}  {msg}  eta {eta}",
            ),
            None => progress(
                None,
                &format!("{{spinner}} {{pos}} {unit}  {{per_sec}}  {{elapsed}}"),
            ),
        }?;
        Some(InputProgress { bar, input, unit })
    }

    /// Shows `done` units done, and how far the input is read.
    pub fn show(&self, done: u64) {
        if self.input.total().is_some() {
            self.bar.set_position(self.input.position());
            self.bar.set_message(format!("{done} {}", self.unit));
        } else {
            self.bar.set_position(done);
        }
    }

    /// Takes the display off the terminal.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

/// A line on stderr. Unlike the `eprintln` macro, a stderr that cannot be written (a full
/// disk behind a redirection, a closed pipe) does not panic: the command's outcome and exit
/// code stand.
pub fn to_stderr(line: impl fmt::Display) {
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

/// A message for whoever watches: `mhdb: …` on stderr.
pub fn message(msg: impl fmt::Display) {
    to_stderr(format_args!("mhdb: {msg}"));
}

/// A warning: `mhdb: warning: …` on stderr; the command goes on.
pub fn warn(msg: impl fmt::Display) {
    to_stderr(format_args!("mhdb: warning: {msg}"));
}

/// The warning for an entry found walking an input directory that is neither a file nor a
/// directory (a FIFO, device or socket), passed over since reading it may block for ever or
/// never end.
pub fn warn_not_a_file(path: &std::path::Path) {
    warn(format_args!(
        "skipped {}: not a regular file (a FIFO, device or socket), read only when named",
        path.display()
    ));
}

/// For the commands that write: everything they report done is committed, but the upkeep
/// after the last commit (a flush, removing obsolete files, an automatic compaction) may have
/// failed, a full disk say; the user should hear of it (`Db::write_failure`).
pub fn warn_write_failure(db: &mhdb::db::Db) {
    if let Some(cause) = db.write_failure() {
        warn(format_args!(
            "what is reported done is committed, but the upkeep after it (a flush or a \
             compaction) failed: {cause}; nothing committed is lost, and later writes flush and \
             compact as usual"
        ));
    }
}

/// For the commands that write, at their successful end: closes `db`, sealing its WAL, and
/// warns when the upkeep after the last commit or the close failed. Neither undoes a commit,
/// so the command still succeeds.
pub fn close_after_commit(db: mhdb::db::Db) {
    if db.write_failure().is_some() {
        // The close would fail for the same cause, said once.
        warn_write_failure(&db);
        return;
    }
    if let Err(e) = db.close() {
        warn(format_args!(
            "what is reported done is committed, but closing the database after it failed: \
             {e}; nothing committed is lost (the next open cuts the write-ahead log's \
             unfinished end)"
        ));
    }
}

/// For the commands that sign text: a key file named in the environment for an index that is
/// not keyed is not used, which the user who set it should hear (not an error: the variable
/// may be set for other indexes).
pub fn warn_unused_key(db: &mhdb::db::Db) {
    if db.params().key_fingerprint.is_unkeyed()
        && std::env::var_os(mhdb::sketch::keyed::KEY_FILE_ENV).is_some()
    {
        warn(format_args!(
            "{} is set, but this index is not keyed: the key is not used",
            mhdb::sketch::keyed::KEY_FILE_ENV
        ));
    }
}

/// Tells the user what opening `db` as a writer cut from its WAL and kept aside: the last
/// write before a crash may have been lost or damaged (`Db::cut_tails`).
pub fn report_recovery(db: &mhdb::db::Db) {
    if db.is_read_only() {
        for cut in db.cut_tails() {
            warn(format_args!(
                "{} ends in {} bytes at offset {} that are not a whole record (a write torn by \
                 a crash, or damage to the last one); read without them (`mhdb verify` reports them)",
                cut.wal.display(),
                cut.bytes,
                cut.offset
            ));
        }
        return;
    }
    for cut in db.cut_tails() {
        message(format_args!(
            "recovery cut {} bytes that were not a whole record from {} at offset {} (a write \
             torn by a crash, or damage to the last one); they are kept in {}",
            cut.bytes,
            cut.wal.display(),
            cut.offset,
            cut.kept_in.display()
        ));
    }
}
