//! `mhdb query`: one text, one file, or one query per JSONL line, streamed: answered on every
//! core a window at a time and written in input order as they come. Several databases (or a
//! glob pattern naming them) are shards answering as one index ([`Shards`]).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Mutex;

use mhdb::db::{Db, QueryOptions, QueryResult, Shards};
use serde_json::Value;

use super::args::QueryArgs;
use super::escape::key_text;
use super::input::{At, Input, JsonLine, read_text};
use super::output::{CliError, CliResult, progress};
use super::shapes;

/// Queries answered at once by `--jsonl` (and as many read ahead meanwhile): enough to keep
/// every core busy, few enough that memory stays a few megabytes whatever the input's length.
const WINDOW: usize = 2048;

/// What a command reads: one database, or shards answering as one index.
pub enum Source {
    One(Box<Db>),
    Many(Shards),
}

impl Source {
    /// Opens the databases `args` name ([`database_args`]) read-only: one as it always
    /// opened, several as [`Shards`].
    pub fn open(args: &[PathBuf]) -> CliResult<Source> {
        let source = Self::open_quietly(args)?;
        for db in source.dbs() {
            super::output::report_recovery(db);
        }
        Ok(source)
    }

    /// [`Source::open`] without the warnings about torn WAL tails (`verify` reports them).
    pub fn open_quietly(args: &[PathBuf]) -> CliResult<Source> {
        let mut paths = database_args(args)?;
        let source = if paths.len() == 1 {
            Source::One(Box::new(Db::open_read_only(paths.remove(0))?))
        } else {
            Source::Many(Shards::open_many(&paths)?)
        };
        Ok(source)
    }

    /// The database whose parameters answer (a shard set's first).
    pub fn first(&self) -> &Db {
        match self {
            Source::One(db) => db.as_ref(),
            Source::Many(shards) => &shards.shards()[0],
        }
    }

    /// Every database read.
    pub fn dbs(&self) -> &[Db] {
        match self {
            Source::One(db) => std::slice::from_ref(db.as_ref()),
            Source::Many(shards) => shards.shards(),
        }
    }

    fn query_text(&self, text: &str, opts: &QueryOptions) -> mhdb::Result<QueryResult> {
        match self {
            Source::One(db) => db.query_text(text, opts),
            Source::Many(shards) => shards.query_text(text, opts),
        }
    }

    fn query_text_stream<'s>(
        &'s self,
        queries: JsonlQueries<'s>,
        opts: &'s QueryOptions,
    ) -> Box<dyn Iterator<Item = ((usize, Value), mhdb::Result<QueryResult>)> + 's> {
        match self {
            Source::One(db) => Box::new(db.query_text_stream(queries, opts, WINDOW)),
            Source::Many(shards) => Box::new(shards.query_text_stream(queries, opts, WINDOW)),
        }
    }
}

/// `mhdb query`.
pub fn query(args: &QueryArgs) -> CliResult<ExitCode> {
    let source = Source::open(&args.dbs)?;
    let db = source.first();
    super::output::warn_unused_key(db);
    let opts = QueryOptions {
        threshold: threshold_arg(db, args.threshold, args.max_distance)?,
        limit: args.limit,
        estimate_only: args.no_exact,
        top: args.top,
    };
    if args.top.is_none() {
        warn_below_tuning(db, opts.threshold);
    }
    // A keyed index without its key cannot sign any text: refused as a whole here, not as
    // the first input line's fault.
    db.sketch_text("")?;
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    if let Some(path) = &args.jsonl {
        return query_jsonl(&source, &opts, args, path, &mut out);
    }
    let (id, text) = match (&args.text, &args.file) {
        (Some(t), _) => (Value::Null, t.clone()),
        (None, Some(f)) => (
            Value::String(f.to_string_lossy().into_owned()),
            read_text(f)?.map_err(CliError::other)?,
        ),
        (None, None) => return Err(CliError::usage("give --text, --file or --jsonl")),
    };
    let r = source.query_text(&text, &opts)?;
    if args.json {
        writeln!(out, "{}", shapes::answer(id, &r))?;
    } else {
        for m in &r.matches {
            match m.distance {
                // SimHash: "DISTANCE<TAB>COSINE<TAB>KEY".
                Some(d) => writeln!(out, "{d}\t{:.4}\t{}", m.similarity, key_text(&m.key))?,
                None => writeln!(out, "{:.4}\t{}", m.similarity, key_text(&m.key))?,
            }
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// The databases the command line names: each argument as given, or, when no file has that
/// name and it holds a wildcard (`*`, `?`, `[…]`) that the shell left unexpanded (quoted, or
/// a shell that does not expand), the paths it matches, sorted by name. A pattern that
/// matches nothing is an error naming it.
pub fn database_args(args: &[PathBuf]) -> CliResult<Vec<PathBuf>> {
    let mut out = Vec::with_capacity(args.len());
    for arg in args {
        let text = arg.to_string_lossy();
        if arg.exists() || !text.contains(['*', '?', '[']) {
            out.push(arg.clone());
            continue;
        }
        let mut matched = glob(&text);
        if matched.is_empty() {
            return Err(CliError::other(format!("no database matches {text}")));
        }
        matched.sort();
        out.extend(matched);
    }
    Ok(out)
}

/// The directories `pattern` matches (databases are directories), one component at a time; a component with a wildcard lists
/// its directory (names starting with `.` only when the component does too, as shells do).
fn glob(pattern: &str) -> Vec<PathBuf> {
    let absolute = pattern.starts_with('/');
    let mut found = vec![if absolute {
        PathBuf::from("/")
    } else {
        PathBuf::new()
    }];
    for part in pattern.split('/').filter(|p| !p.is_empty()) {
        if !part.contains(['*', '?', '[']) {
            found = found.into_iter().map(|dir| dir.join(part)).collect();
            continue;
        }
        let pattern: Vec<char> = part.chars().collect();
        let mut next = Vec::new();
        for dir in &found {
            let listed = if dir.as_os_str().is_empty() {
                Path::new(".")
            } else {
                dir.as_path()
            };
            let Ok(entries) = std::fs::read_dir(listed) else {
                continue;
            };
            for entry in entries.flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                if name.starts_with('.') && !part.starts_with('.') {
                    continue;
                }
                let name_chars: Vec<char> = name.chars().collect();
                if wildcard_match(&pattern, &name_chars) {
                    next.push(dir.join(&name));
                }
            }
        }
        found = next;
    }
    found.retain(|p| p.is_dir());
    found
}

/// Whether `name` matches `pattern`: `*` any run of characters, `?` one character, `[…]` one
/// character of a set (ranges `a-z`, negated by a leading `!` or `^`); anything else itself.
fn wildcard_match(pattern: &[char], name: &[char]) -> bool {
    match pattern.split_first() {
        None => name.is_empty(),
        Some(('*', rest)) => (0..=name.len()).any(|skip| wildcard_match(rest, &name[skip..])),
        Some(('?', rest)) => !name.is_empty() && wildcard_match(rest, &name[1..]),
        Some(('[', rest)) => match (name.split_first(), rest.iter().position(|&c| c == ']')) {
            (Some((&c, tail)), Some(end)) if end > 0 => {
                set_matches(&rest[..end], c) && wildcard_match(&rest[end + 1..], tail)
            }
            // No closing bracket: `[` is itself.
            (Some((&c, tail)), _) => c == '[' && wildcard_match(rest, tail),
            (None, _) => false,
        },
        Some((&p, rest)) => name.first() == Some(&p) && wildcard_match(rest, &name[1..]),
    }
}

/// Whether `c` is in the bracket set `set` (its text between `[` and `]`).
fn set_matches(set: &[char], c: char) -> bool {
    let (negated, set) = match set.split_first() {
        Some(('!' | '^', rest)) if !rest.is_empty() => (true, rest),
        _ => (false, set),
    };
    let mut i = 0;
    let mut found = false;
    while i < set.len() {
        if i + 2 < set.len() && set[i + 1] == '-' {
            found |= set[i] <= c && c <= set[i + 2];
            i += 3;
        } else {
            found |= set[i] == c;
            i += 1;
        }
    }
    found != negated
}

/// The query threshold `--threshold` or `--max-distance` select (`None`: the database's).
/// `--max-distance` is a simhash index's, at most its `--max-hamming`; it becomes the cosine
/// estimate at that distance, which admits exactly the distances up to it.
pub fn threshold_arg(
    db: &Db,
    threshold: Option<f64>,
    max_distance: Option<u32>,
) -> CliResult<Option<f64>> {
    let Some(d) = max_distance else {
        return Ok(threshold);
    };
    let p = db.params();
    // The library decides; the words name the command's flags.
    p.threshold_for_distance(d)
        .map(Some)
        .map_err(|_| match p.sim_params() {
            None => CliError::usage(format!(
                "--max-distance is for simhash indexes; {} is a minhash index (use --threshold)",
                db.path().display()
            )),
            Some(sim) => CliError::usage(format!(
                "--max-distance {d} is more than the index's --max-hamming {}: its blocks find \
                 only documents within {} bits",
                sim.max_hamming, sim.max_hamming
            )),
        })
}

/// A MinHash threshold below the one the bands were tuned for finds its pairs only with the
/// bands' chance at it, which may be small: said once, since the answer looks complete.
pub fn warn_below_tuning(db: &Db, t: Option<f64>) {
    let Some(t) = t else {
        return;
    };
    let p = db.params();
    let Some(chance) = p.candidate_probability(t).filter(|_| t < p.threshold) else {
        return;
    };
    if chance < 0.9 {
        super::output::warn(format_args!(
            "the index's bands ({} × {}) were tuned for J ≥ {}: a pair at J = {t} becomes a \
             candidate with probability {chance:.2} only, so matches below {} may be missed \
             (an index created with --threshold {t} finds them; --top K probes further)",
            p.lsh.bands, p.lsh.rows, p.threshold, p.threshold
        ));
    }
}

/// The queries of a JSONL input as `((line, id), text)`, for [`Db::query_text_stream`]. A bad
/// line ends them; its error is left in `failure`.
struct JsonlQueries<'a> {
    input: Input,
    id_field: &'a str,
    text_field: &'a str,
    failure: &'a Mutex<Option<CliError>>,
}

impl JsonlQueries<'_> {
    fn read(&mut self) -> CliResult<Option<((usize, Value), String)>> {
        let Some(line) = self.input.next_line()? else {
            return Ok(None);
        };
        let at = At {
            name: self.input.name(),
            line: line.no,
        };
        let mut record = JsonLine::parse(&line.bytes, at).map_err(CliError::other)?;
        let id = record.id_as_given(self.id_field);
        let text = record.take_text(self.text_field).map_err(CliError::other)?;
        Ok(Some(((line.no, id), text)))
    }
}

impl Iterator for JsonlQueries<'_> {
    type Item = ((usize, Value), String);

    fn next(&mut self) -> Option<Self::Item> {
        match self.read() {
            Ok(query) => query,
            Err(e) => {
                // Taken by the loop in `query_jsonl` once the lines before are written.
                *self.failure.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
                None
            }
        }
    }
}

/// `mhdb query --jsonl`: one answer line per query line, in input order, written as they are
/// ready; a bad line ends the command after the answers to the lines before it.
fn query_jsonl(
    source: &Source,
    opts: &QueryOptions,
    args: &QueryArgs,
    path: &Path,
    out: &mut impl Write,
) -> CliResult<ExitCode> {
    let input = Input::open(path)?;
    let name = input.name().to_string();
    let failure = Mutex::new(None);
    let queries = JsonlQueries {
        input,
        id_field: &args.id_field,
        text_field: &args.text_field,
        failure: &failure,
    };
    let bar = progress(None, "{spinner} {pos} queries  {per_sec}  {elapsed}");
    let mut answered = 0usize;
    let written = (|| -> CliResult {
        for ((line, id), result) in source.query_text_stream(queries, opts) {
            let r = result.map_err(|e| CliError::from(e).at(At { name: &name, line }))?;
            shapes::write_answer(out, &id, &r)?;
            out.write_all(b"\n")?;
            answered += 1;
            // A window's answers are complete: let whoever reads them have them now.
            if answered.is_multiple_of(WINDOW) {
                out.flush()?;
                if let Some(bar) = &bar {
                    bar.set_position(answered as u64);
                }
            }
        }
        Ok(())
    })();
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    out.flush()?;
    written?;
    match failure.into_inner().unwrap_or_else(|p| p.into_inner()) {
        Some(e) => Err(e),
        None => Ok(ExitCode::SUCCESS),
    }
}
