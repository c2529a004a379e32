//! `mhdb query`: one text, one file, one token list, or one query per JSONL line (a text, or a
//! token list in an index of token lists), streamed: answered on every core a window at a time
//! and written in input order as they come. Several databases (or a
//! glob pattern naming them) are shards answering as one index (`databases.rs`).

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Mutex;

use mhdb::db::ingest::Content;
use mhdb::db::{Db, QueryOptions, QueryResult};
use mhdb::input::tokens_from_json;
use mhdb::sketch::OwnedToken;
use serde_json::Value;

use super::args::QueryArgs;
use super::databases::Databases;
use super::escape::key_text;
use super::input::{At, Input, JsonLine, is_stdin, read_text};
use super::output::{CliError, CliResult, InputProgress};
use super::shapes;
use mhdb::sketch::containment::EstimateRule;

/// Queries answered at once by `--jsonl` (and as many read ahead meanwhile): enough to keep
/// every core busy, few enough that memory stays a few megabytes whatever the input's length.
const WINDOW: usize = 2048;

/// `mhdb query`.
pub fn query(args: &QueryArgs) -> CliResult<ExitCode> {
    let source = Databases::open_keyed(&args.dbs, args.key.key()?)?;
    let db = source.first();
    super::output::warn_unused_key(db);
    let opts = QueryOptions {
        threshold: threshold_arg(db, args.threshold, args.max_distance)?,
        limit: args.limit,
        estimate_only: args.no_exact,
        top: args.top,
        deadline: None,
        containment: args.containment,
        containment_recall: args.recall,
    };
    if let Some(recall) = args.recall {
        EstimateRule::for_recall(recall)?;
    }
    if args.top.is_none() {
        warn_below_tuning(db, opts.threshold);
    }
    // A keyed index without its key cannot sign any document: refused as a whole here, not
    // as the first input line's fault.
    if db.takes_tokens() {
        db.hasher()?;
    } else if args.tokens_json.is_none() {
        db.sketch_text("")?;
    }
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    if let Some(path) = &args.jsonl {
        return query_jsonl(&source, &opts, args, path, &mut out);
    }
    if let Some(json) = &args.tokens_json {
        let tokens = tokens_arg(json)?;
        let r = source.query(&db.sketch_tokens(&OwnedToken::borrow_all(&tokens))?, &opts)?;
        return write_answer(&mut out, args, Value::Null, &r);
    }
    let (id, text) = match (&args.text, &args.file) {
        (Some(t), _) => (Value::Null, t.clone()),
        (None, Some(f)) => (
            Value::String(f.to_string_lossy().into_owned()),
            read_text(f, args.size.max_document_bytes)?.map_err(CliError::other)?,
        ),
        (None, None) => {
            return Err(CliError::usage(
                "give --text, --file, --tokens-json or --jsonl",
            ));
        }
    };
    let r = source.query_text(&text, &opts)?;
    write_answer(&mut out, args, id, &r)
}

/// `--tokens-json`'s token list.
fn tokens_arg(json: &str) -> CliResult<Vec<OwnedToken>> {
    let bad = |why: String| CliError::usage(format!("--tokens-json: {why}"));
    match serde_json::from_str(json).map_err(|e| bad(format!("invalid JSON: {e}")))? {
        Value::Array(elements) => tokens_from_json(elements).map_err(bad),
        _ => Err(bad("must be a JSON array of strings and integers".into())),
    }
}

/// Writes one query's answer: a JSON line, or a line per match.
fn write_answer(
    out: &mut impl Write,
    args: &QueryArgs,
    id: Value,
    r: &QueryResult,
) -> CliResult<ExitCode> {
    if args.json {
        writeln!(out, "{}", shapes::answer(id, r))?;
    } else {
        for m in &r.matches {
            match m.distance {
                // SimHash: "DISTANCE<TAB>COSINE<TAB>KEY".
                Some(d) => writeln!(out, "{d}\t{:.4}\t{}", m.similarity, key_text(&m.key))?,
                // A containment query's match: containment, then Jaccard.
                None => match m.jaccard {
                    Some(j) => writeln!(out, "{:.4}\t{j:.4}\t{}", m.similarity, key_text(&m.key))?,
                    None => writeln!(out, "{:.4}\t{}", m.similarity, key_text(&m.key))?,
                },
            }
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// An answer of `--jsonl`: its query's line and id, and the result.
type LineAnswer = ((usize, Value), mhdb::Result<QueryResult>);

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

/// A query of `--jsonl`: its line and id, and its text or token list.
type LineQuery = ((usize, Value), Content<String>);

/// The queries of a JSONL input, for [`Databases`]' `query_document_stream`. A bad line ends
/// them; its error is left in `failure`.
struct JsonlQueries<'a> {
    input: Input,
    id_field: &'a str,
    text_field: &'a str,
    tokens_field: &'a str,
    /// The index's documents are token lists.
    takes_tokens: bool,
    failure: &'a Mutex<Option<CliError>>,
}

impl JsonlQueries<'_> {
    fn read(&mut self) -> CliResult<Option<LineQuery>> {
        let Some(line) = self.input.next_line()? else {
            return Ok(None);
        };
        let at = At {
            name: self.input.name(),
            line: line.no,
        };
        let mut record = JsonLine::parse(&line.bytes, at).map_err(CliError::other)?;
        let id = record.id_as_given(self.id_field);
        let query = self.query(&mut record).map_err(CliError::other)?;
        Ok(Some(((line.no, id), query)))
    }

    /// A line's query: the kind of document the index takes when the line has its field (or
    /// has neither field: the error names the one missing); a line holding only the other
    /// kind queries by that, which the index refuses naming the line.
    fn query(&self, record: &mut JsonLine<'_>) -> Result<Content<String>, String> {
        let (own, other) = if self.takes_tokens {
            (self.tokens_field, self.text_field)
        } else {
            (self.text_field, self.tokens_field)
        };
        let by_own_field = record.has(own) || !record.has(other);
        if by_own_field == self.takes_tokens {
            record.take_tokens(self.tokens_field).map(Content::Tokens)
        } else {
            record.take_text(self.text_field).map(Content::Text)
        }
    }
}

impl Iterator for JsonlQueries<'_> {
    type Item = LineQuery;

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
    source: &Databases,
    opts: &QueryOptions,
    args: &QueryArgs,
    path: &Path,
    out: &mut impl Write,
) -> CliResult<ExitCode> {
    let input = Input::open(path)?.with_limit(args.size.max_document_bytes);
    let name = input.name().to_string();
    let bar = InputProgress::new(input.progress(), "queries");
    let failure = Mutex::new(None);
    let queries = JsonlQueries {
        input,
        id_field: &args.id_field,
        text_field: &args.text_field,
        tokens_field: &args.tokens_field,
        takes_tokens: source.first().takes_tokens(),
        failure: &failure,
    };
    let mut answers = Answers {
        out,
        name: &name,
        bar,
        answered: 0,
    };
    let written = if arrives_as_written(path) {
        answer_as_read(source, queries, opts, &mut answers)
    } else {
        answers.write(source.query_document_stream(queries, opts, WINDOW))
    };
    if let Some(bar) = &answers.bar {
        bar.finish();
    }
    out.flush()?;
    written?;
    match failure.into_inner().unwrap_or_else(|p| p.into_inner()) {
        Some(e) => Err(e),
        None => Ok(ExitCode::SUCCESS),
    }
}

/// True when `path` (standard input for `-`) is a pipe or a terminal, whose lines may come one
/// at a time, each awaiting the answer to the one before; false for a regular file.
fn arrives_as_written(path: &Path) -> bool {
    let path = if is_stdin(path) {
        Path::new("/dev/stdin")
    } else {
        path
    };
    !std::fs::metadata(path).is_ok_and(|m| m.is_file())
}

/// Answers the queries of a pipe or terminal as they come: a thread reads them, and each
/// round answers (on every core) all that have been read by then, at least one and at most a
/// window, then flushes their answers. A line written alone is answered at once; a fast
/// producer still fills whole windows.
fn answer_as_read(
    source: &Databases,
    queries: JsonlQueries<'_>,
    opts: &QueryOptions,
    answers: &mut Answers<'_, impl Write>,
) -> CliResult {
    let (tx, rx) = std::sync::mpsc::sync_channel(WINDOW);
    std::thread::scope(|scope| {
        scope.spawn(move || {
            for query in queries {
                if tx.send(query).is_err() {
                    return;
                }
            }
        });
        let written = (|| -> CliResult {
            while let Ok(first) = rx.recv() {
                let mut round = vec![first];
                round.extend(rx.try_iter().take(WINDOW - 1));
                let size = round.len();
                answers.write(source.query_document_stream(round, opts, size))?;
                answers.flush()?;
            }
            Ok(())
        })();
        // On an error, the reading thread stops at its next line instead of waiting for room.
        drop(rx);
        written
    })
}

/// Where `--jsonl`'s answers go, and how many have gone.
struct Answers<'a, W: Write> {
    out: &'a mut W,
    /// The input as messages name it.
    name: &'a str,
    bar: Option<InputProgress>,
    answered: usize,
}

impl<W: Write> Answers<'_, W> {
    /// Writes `answers` in order, flushing after each full window; stops at the first failed
    /// query.
    fn write(&mut self, answers: impl Iterator<Item = LineAnswer>) -> CliResult {
        for ((line, id), result) in answers {
            let at = At {
                name: self.name,
                line,
            };
            let r = result.map_err(|e| CliError::from(e).at(at))?;
            shapes::write_answer(self.out, &id, &r)?;
            self.out.write_all(b"\n")?;
            self.answered += 1;
            // A window's answers are complete: let whoever reads them have them now.
            if self.answered.is_multiple_of(WINDOW) {
                self.flush()?;
            }
        }
        Ok(())
    }

    fn flush(&mut self) -> CliResult {
        self.out.flush()?;
        if let Some(bar) = &self.bar {
            bar.show(self.answered as u64);
        }
        Ok(())
    }
}
