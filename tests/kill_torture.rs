//! kill -9 torture: cycle after cycle, one process writes to a database and is killed with
//! SIGKILL at a random point, and the parent checks what survived against a model of what was
//! acknowledged. The victim of a cycle is one of
//!
//! - a library writer (this test binary in a child role) with two threads on keyspaces of
//!   their own, batches of inserts, upserts and deletes, under `Durability::Sync` (each write
//!   acknowledged when it returns) or `Durability::None` (acknowledged by `commit()` every few
//!   batches), with a small in-memory table so that flushes and compactions run often; half
//!   the time a second process starts `mhdb compact` at some acknowledgement, which must find
//!   the database locked (or, once the writer is dead, compact it) and is killed in turn;
//! - `mhdb add --json --commit-every K` (acknowledged by its JSON lines), upserting;
//! - `mhdb add --novel-only --json --commit-every K` over clusters of near-duplicates: what it
//!   may store is worked out by running the same documents through [`Db::insert_text_if_novel`]
//!   on a copy of the database as the cycle found it;
//! - `mhdb serve --writer`, sent inserts, deletes and inserts-if-novel by four concurrent
//!   clients, each on a keyspace of its own and one request at a time (acknowledged by its
//!   answer), or killed while it opens; which near-duplicates it may store is worked out as
//!   for `add --novel-only`, each client's clusters being its own; an insert-if-novel stores
//!   its documents one by one, so of one in flight a prefix may be durable;
//! - `mhdb delete` (acknowledged by its exit);
//! - `mhdb upgrade` of a copy of a version-1 or version-2 fixture (`tests/golden/`) beside the
//!   database: killed anywhere, the copy opens with the fixture's documents or is between the
//!   two renames of its swap, and a second upgrade finishes it with the same documents;
//! - `mhdb compact` (changes nothing a reader sees).
//!
//! The kill lands after a random number of acknowledgements, or after a random delay (which
//! also kills opens in the middle of recovery). After every cycle a read-only open must hold
//! every acknowledged write exactly, and of the writes in flight at the kill whole batches in
//! order only (for each writer, or each client of the server, a prefix of its batches at
//! least as long as what it acknowledged, and no longer than what it started), and `verify`
//! must find nothing; the
//! model then takes the state found, and the next cycle's writer recovers from it.
//!
//! Every allowed outcome is allowed whatever the timing, so no result depends on a race: the
//! timing only decides where the kill lands. The suite runs 100 cycles (about 15 s);
//! `tools/reliability/torture.sh CYCLES [SEED [VICTIM]]` runs more by hand, with the same code
//! (`MHDB_TORTURE_CYCLES`, `MHDB_TORTURE_SEED`, and `MHDB_TORTURE_VICTIM` to make every cycle's
//! victim the one named, e.g. `serve`). It prints `kills survived / kills` and the losses.

mod common;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use common::model::{Model, Packer};
use common::rng::SplitMix64;
use mhdb::db::{Db, Durability, IndexParams, Novelty, NoveltyOptions, Options, WriteBatch};

const ROLE_ENV: &str = "MHDB_TORTURE_ROLE";
/// Starts every line the library writer prints (the test harness prints lines of its own, and
/// starts the first without ending it).
const MARK: &str = "torture: ";
const THREADS: u64 = 2;
/// Keys per library-writer thread, and in the CLI's keyspace: bounded, so that upserts and
/// deletes keep meeting stored documents and the database stays small over any number of
/// cycles.
const LIB_KEYS: u64 = 150;
const CLI_KEYS: u64 = 300;

fn params() -> IndexParams {
    common::params::word_index(32, 16, 0.5)
}

fn text(key: &str, version: u64) -> String {
    let h = key
        .bytes()
        .fold(7u64, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(b)));
    (0..24)
        .map(|w| format!("w{}", (h.wrapping_add(w * 13)) % 89))
        .collect::<Vec<_>>()
        .join(" ")
        + &format!(" {key} v{version}")
}

/// One change: set a key to a text, or delete it.
type Op = (String, Option<String>);

fn mix(parts: &[u64]) -> u64 {
    let mut r = SplitMix64(0x5EED);
    for p in parts {
        r.0 ^= *p;
        r.next_u64();
    }
    r.next_u64()
}

/// Batch `b` of library-writer thread `t` in cycle `cycle`: a few inserts, upserts and deletes
/// of the thread's own keys. The child writes it and the parent recomputes it.
fn lib_batch(seed: u64, cycle: u64, t: u64, b: u64) -> Vec<Op> {
    let mut r = SplitMix64(mix(&[seed, cycle, t, b]));
    (0..1 + r.below(6))
        .map(|_| {
            let key = format!("lw{t}-{}", r.below(LIB_KEYS));
            if r.below(4) == 0 {
                (key, None)
            } else {
                let t = text(&key, r.below(1000));
                (key, Some(t))
            }
        })
        .collect()
}

/// How a library writer commits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LibMode {
    /// `Durability::Sync`: each batch acknowledged when `write` returns.
    Sync,
    /// `Durability::None`: `commit()` after every `COMMIT_EVERY` batches of a thread
    /// acknowledges them.
    Deferred,
}

const COMMIT_EVERY: u64 = 4;

fn lib_options(mode: LibMode) -> Options {
    Options {
        durability: match mode {
            LibMode::Sync => Durability::Sync,
            LibMode::Deferred => Durability::None,
        },
        // Small, so that flushes and compactions run (and are killed) often.
        memtable_bytes: 48 << 10,
        ..Options::default()
    }
}

/// The library writer, run by the parent in a child process. Thread `t` prints `w t b` when
/// `write` of its batch `b` returned and `a t b` once batches up to `b` are acknowledged
/// (durable). It writes until it is killed.
#[test]
#[ignore = "child role of kill_nine_torture, run by it"]
fn torture_child() {
    let Ok(role) = std::env::var(ROLE_ENV) else {
        eprintln!("torture_child: not run by kill_nine_torture ({ROLE_ENV} unset), nothing to do");
        return;
    };
    let args: Vec<String> = role.split(',').map(str::to_string).collect();
    let dir = PathBuf::from(&args[0]);
    let seed: u64 = args[1].parse().unwrap();
    let cycle: u64 = args[2].parse().unwrap();
    let mode = if args[3] == "sync" {
        LibMode::Sync
    } else {
        LibMode::Deferred
    };
    let db = match Db::open(&dir, lib_options(mode)) {
        Ok(db) => db,
        Err(e) => {
            eprintln!("torture_child: open: {e}");
            std::process::exit(1);
        }
    };
    let out = std::sync::Mutex::new(std::io::stdout());
    let say = |line: String| {
        let mut out = out.lock().unwrap();
        writeln!(out, "{line}").unwrap();
        out.flush().unwrap();
    };
    std::thread::scope(|scope| {
        for t in 0..THREADS {
            let (db, say) = (&db, &say);
            scope.spawn(move || {
                for b in 0..1_000_000 {
                    let mut batch = WriteBatch::new();
                    for (key, value) in lib_batch(seed, cycle, t, b) {
                        match value {
                            Some(text) => batch.insert_text(key, text),
                            None => batch.delete(key),
                        };
                    }
                    let done = db.write(&batch).and_then(|()| match mode {
                        LibMode::Sync => Ok(true),
                        LibMode::Deferred if (b + 1) % COMMIT_EVERY == 0 => {
                            db.commit().map(|()| true)
                        }
                        LibMode::Deferred => Ok(false),
                    });
                    match done {
                        Ok(true) => say(format!("{MARK}a {t} {b}")),
                        Ok(false) => say(format!("{MARK}w {t} {b}")),
                        Err(e) => {
                            eprintln!("torture_child: thread {t}, batch {b}: {e}");
                            std::process::exit(1);
                        }
                    }
                }
            });
        }
    });
}

/// When the parent kills a victim.
#[derive(Clone, Copy, Debug)]
enum Kill {
    /// Once this many lines (acknowledgements) have been read.
    AfterLines(usize),
    /// After this long.
    After(Duration),
}

/// A victim's end: every line it finished printing, and how it ended.
struct Ended {
    lines: Vec<String>,
    status: ExitStatus,
    stderr: String,
}

impl Ended {
    fn killed(&self) -> bool {
        self.status.signal() == Some(9)
    }
}

/// Reads `reader` to its end, line by line; a last line without its newline was cut short by
/// the kill (its writer had not finished acknowledging it) and is dropped.
fn read_lines(reader: impl std::io::Read) -> Vec<String> {
    let mut reader = BufReader::new(reader);
    let mut lines = Vec::new();
    let mut buf = Vec::new();
    loop {
        buf.clear();
        reader.read_until(b'\n', &mut buf).unwrap();
        if buf.pop_if(|b| *b == b'\n').is_none() {
            return lines;
        }
        lines.push(String::from_utf8_lossy(&buf).into_owned());
    }
}

/// Runs `cmd` and kills it with SIGKILL as `kill` says, counting the lines that contain
/// `mark` (`on_line(n)` runs when the n-th arrives); reads its output to the end, keeping
/// what follows `mark` in each line, and reaps it.
fn run_victim(cmd: &mut Command, kill: Kill, mark: &str, mut on_line: impl FnMut(usize)) -> Ended {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut BufReader::new(stderr), &mut s);
        s
    });
    let mut lines = Vec::new();
    match kill {
        Kill::AfterLines(n) => {
            common::process::read_then_kill(&mut child, |line| {
                if let Some(at) = line.find(mark) {
                    lines.push(line[at + mark.len()..].to_string());
                    on_line(lines.len());
                }
                lines.len() < n
            });
        }
        Kill::After(d) => {
            let start = Instant::now();
            while start.elapsed() < d && child.try_wait().unwrap().is_none() {
                std::thread::sleep(Duration::from_millis(1));
            }
            let _ = child.kill();
            lines = read_lines(child.stdout.take().unwrap())
                .into_iter()
                .filter_map(|l| l.find(mark).map(|at| l[at + mark.len()..].to_string()))
                .collect();
        }
    }
    let status = child.wait().unwrap();
    Ended {
        lines,
        status,
        stderr: err_reader.join().unwrap(),
    }
}

/// Document `i` of cluster `g` for the novelty victim: 24 words of the cluster's own
/// vocabulary, of which document `i` changes one, so that two documents of a cluster are
/// near-duplicates at the index's threshold and two clusters (or any other keyspace's
/// texts) share no word.
fn cluster_text(g: u64, i: u64) -> String {
    (0..24u64)
        .map(|w| {
            if w == i % 24 && i > 0 {
                format!("g{g}x{w}v{i}")
            } else {
                format!("g{g}x{w}")
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Copies the files of database directory `from` into a new directory `to`.
fn copy_db(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_file() {
            std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
        }
    }
}

/// One `Connection: close` request to a server on loopback; its status code, or the error of
/// a server that died under it.
fn http_post(addr: &str, path: &str, body: &str) -> std::io::Result<u16> {
    let mut stream = TcpStream::connect(addr)?;
    stream.set_read_timeout(Some(Duration::from_secs(60)))?;
    write!(
        stream,
        "POST {path} HTTP/1.1\r\nHost: torture\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )?;
    let mut reply = Vec::new();
    stream.read_to_end(&mut reply)?;
    let head = String::from_utf8_lossy(&reply);
    head.split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .ok_or_else(|| std::io::Error::other(format!("no status line in {head:?}")))
}

/// The server victim's concurrent clients; each writes keys `sv{t}-*` of its own, so that
/// each one's requests, sent one at a time, are a sequence the model checks alone.
const SERVE_CLIENTS: u64 = 4;
/// Most requests a client of the server victim sends in a cycle.
const SERVE_REQUESTS: u64 = 30;

/// A request of a server client: its endpoint and documents (ids alone for a delete).
struct ServeRequest {
    path: &'static str,
    ops: Vec<Op>,
}

/// Request `i` of client `t` of the server victim in cycle `c`: inserts (upserts) of a few of
/// the client's keys, deletes of a few, or a few new documents to insert if novel, drawn from
/// clusters of near-duplicates that are the client's alone in this cycle (no word in common
/// with any other document, so whether one is novel depends on its own client's only).
fn serve_request(seed: u64, c: u64, t: u64, i: u64) -> ServeRequest {
    let mut r = SplitMix64(mix(&[seed, c, t, i, 0x5E4E]));
    let n = 1 + r.below(4);
    if r.below(3) == 0 {
        let first_cluster = 1_000_000 + (c * SERVE_CLIENTS + t) * 4;
        let ops = (0..n)
            .map(|j| {
                let text = cluster_text(first_cluster + r.below(4), r.below(6));
                (format!("sv{t}-n{c}-{i}-{j}"), Some(text))
            })
            .collect();
        return ServeRequest {
            path: "/insert_if_novel",
            ops,
        };
    }
    let mut keys: Vec<String> = (0..n)
        .map(|_| format!("sv{t}-{}", r.below(CLI_KEYS / SERVE_CLIENTS)))
        .collect();
    keys.sort();
    keys.dedup();
    let delete = r.below(4) == 0;
    let ops = keys
        .into_iter()
        .map(|key| {
            let value = (!delete).then(|| text(&key, r.below(1000)));
            (key, value)
        })
        .collect();
    let path = if delete { "/delete" } else { "/insert" };
    ServeRequest { path, ops }
}

impl ServeRequest {
    fn body(&self) -> String {
        let docs: Vec<serde_json::Value> = self
            .ops
            .iter()
            .map(|(key, value)| match value {
                Some(t) => serde_json::json!({"id": key, "text": t}),
                None => serde_json::json!({"id": key}),
            })
            .collect();
        serde_json::Value::from(docs).to_string()
    }

    /// What the request changes once committed; an insert-if-novel stores the documents
    /// `novel` says are.
    fn applied(&self, novel: &BTreeMap<String, bool>) -> Vec<Op> {
        if self.path != "/insert_if_novel" {
            return self.ops.clone();
        }
        self.ops
            .iter()
            .filter(|(key, _)| novel[key])
            .cloned()
            .collect()
    }
}

/// Waits for the server to listen (`None` if it never does), then sends each client's
/// `requests` from a thread of its own until `kill_after` are acknowledged in all, and kills
/// the server; returns each client's (acknowledged, started) requests. A client's request in
/// flight when the server dies may or may not have been committed.
fn serve_requests(
    child: &mut Child,
    c: u64,
    requests: &[Vec<ServeRequest>],
    kill_after: usize,
) -> Option<Vec<(usize, usize)>> {
    let mut first = String::new();
    BufReader::new(child.stdout.as_mut().unwrap())
        .read_line(&mut first)
        .unwrap();
    let addr = first.trim().strip_prefix("listening on ")?;
    let acked_in_all = AtomicUsize::new(0);
    let counts: Vec<(AtomicUsize, AtomicUsize)> = requests
        .iter()
        .map(|_| (AtomicUsize::new(0), AtomicUsize::new(0)))
        .collect();
    std::thread::scope(|s| {
        let clients: Vec<_> = requests
            .iter()
            .zip(&counts)
            .enumerate()
            .map(|(t, (mine, (acked, started)))| {
                let acked_in_all = &acked_in_all;
                s.spawn(move || {
                    for (i, request) in mine.iter().enumerate() {
                        started.store(i + 1, Ordering::SeqCst);
                        match http_post(addr, request.path, &request.body()) {
                            Ok(200) => {
                                acked.store(i + 1, Ordering::SeqCst);
                                acked_in_all.fetch_add(1, Ordering::SeqCst);
                            }
                            Ok(code) => panic!("cycle {c}: client {t}: request {i}: status {code}"),
                            Err(_) => return, // the server is gone
                        }
                    }
                })
            })
            .collect();
        while acked_in_all.load(Ordering::SeqCst) < kill_after
            && !clients.iter().all(|h| h.is_finished())
        {
            std::thread::sleep(Duration::from_micros(200));
        }
        let _ = child.kill();
    });
    // Acknowledgements read after the kill were committed before it.
    Some(
        counts
            .iter()
            .map(|(a, s)| (a.load(Ordering::SeqCst), s.load(Ordering::SeqCst)))
            .collect(),
    )
}

/// When a loader of `n` documents committing `every` at a time is killed: after a random
/// delay, or after some of its commit lines.
fn load_kill(r: &mut SplitMix64, n: usize, every: usize) -> Kill {
    if r.below(5) == 0 {
        Kill::After(Duration::from_millis(r.below(40)))
    } else {
        Kill::AfterLines(1 + r.below((n / every) as u64 + 1) as usize)
    }
}

fn mhdb() -> Command {
    Command::new(env!("CARGO_BIN_EXE_mhdb"))
}

/// The keys of `model` that start with `prefix`.
fn part(model: &Model, prefix: &str) -> Model {
    model
        .iter()
        .filter(|(k, _)| k.starts_with(prefix))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

fn apply(model: &mut Model, packer: &Packer, ops: &[Op]) {
    for (key, value) in ops {
        common::model::apply(model, key, value.as_ref().map(|t| packer.text(t)));
    }
}

/// The writes a cycle may have left: for each keyspace (key prefix) the states it may be in.
/// Keys outside every listed keyspace must be as they were.
struct Allowed(Vec<(String, Vec<Model>)>);

#[derive(Default)]
struct Tally {
    cycles: u64,
    kills: u64,
    survived: u64,
    /// Victims that ended before their kill (a load finished, a compaction was quick).
    ended_first: u64,
    /// Acknowledged writes checked: library batches, documents `mhdb add` committed,
    /// `mhdb delete` runs that ended.
    acked: u64,
    /// Cycles whose state was none of the allowed ones, and the acknowledged keys they lost.
    losses: u64,
    lost_keys: u64,
    /// Per victim kind: cycles and kills.
    victims: BTreeMap<&'static str, (u64, u64)>,
    /// The novelty victims' documents (sent or not) the copy stored and skipped as
    /// near-duplicates.
    novel: (u64, u64),
    /// The second process's `mhdb compact`: locked out, ran to its end, killed.
    second: (u64, u64, u64),
    problems: Vec<String>,
}

impl Tally {
    fn report(&self) -> String {
        let victims: Vec<String> = self
            .victims
            .iter()
            .map(|(k, (c, n))| format!("{k} {n}/{c}"))
            .collect();
        format!(
            "kills survived / kills: {} / {}\nlosses: {} cycles, {} acknowledged keys\ncycles: {} ({} victims ended before the kill), {} acknowledged writes checked\nkilled/cycles per victim: {}\nsecond-process compact: {} locked out, {} ran, {} killed\ndocuments to insert if novel (add --novel-only, serve): {} novel, {} near-duplicates\n",
            self.survived,
            self.kills,
            self.losses,
            self.lost_keys,
            self.cycles,
            self.ended_first,
            self.acked,
            victims.join(", "),
            self.second.0,
            self.second.1,
            self.second.2,
            self.novel.0,
            self.novel.1,
        )
    }
}

struct Torture {
    dir: PathBuf,
    work: PathBuf,
    seed: u64,
    packer: Packer,
    model: Model,
    tally: Tally,
    /// Every cycle's victim, if one was chosen (`MHDB_TORTURE_VICTIM`).
    only: Option<&'static str>,
}

impl Torture {
    /// A library writer, with a second process trying `mhdb compact` meanwhile.
    fn lib_cycle(&mut self, c: u64, r: &mut SplitMix64, mode: LibMode) -> (Ended, Allowed) {
        let kill = if r.below(5) == 0 {
            Kill::After(Duration::from_millis(r.below(40)))
        } else {
            Kill::AfterLines(1 + r.below(80) as usize)
        };
        let role = format!(
            "{},{},{c},{}",
            self.dir.display(),
            self.seed,
            if mode == LibMode::Sync {
                "sync"
            } else {
                "none"
            }
        );
        let mut cmd = Command::new(std::env::current_exe().unwrap());
        cmd.args([
            "--ignored",
            "--exact",
            "torture_child",
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env(ROLE_ENV, role);
        // Half the time a second process runs `mhdb compact` from the n-th acknowledgement on
        // (some n up to the kill's): locked out while the writer lives, it may get the lock
        // as the writer dies, and is killed in turn a little later.
        let mut second: Option<Child> = None;
        let second_at = match (r.below(2), kill) {
            (0, Kill::AfterLines(n)) => 1 + r.below(n as u64) as usize,
            (0, Kill::After(_)) => 1,
            _ => 0,
        };
        let second_grace = Duration::from_millis(r.below(30));
        let ended = run_victim(&mut cmd, kill, MARK, |n| {
            if n == second_at {
                second = Some(
                    mhdb()
                        .arg("compact")
                        .arg(&self.dir)
                        .stdout(Stdio::null())
                        .stderr(Stdio::piped())
                        .spawn()
                        .unwrap(),
                );
            }
        });
        if let Some(mut child) = second {
            std::thread::sleep(second_grace);
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            match (out.status.code(), out.status.signal()) {
                (_, Some(9)) => self.tally.second.2 += 1,
                (Some(0), _) => self.tally.second.1 += 1,
                (Some(1), _) if err.contains("locked") => self.tally.second.0 += 1,
                _ => self.tally.problems.push(format!(
                    "cycle {c}: second-process compact: {:?}: {err}",
                    out.status
                )),
            }
        }
        let mut allowed = Vec::new();
        for t in 0..THREADS {
            let (mut acked, mut issued) = (0u64, 0u64);
            for line in &ended.lines {
                let f: Vec<&str> = line.split(' ').collect();
                if f.len() == 3 && f[1] == t.to_string() {
                    let b: u64 = f[2].parse().unwrap();
                    if f[0] == "a" {
                        acked = acked.max(b + 1);
                    }
                    issued = issued.max(b + 1);
                }
            }
            self.tally.acked += acked;
            // Acknowledged batches are there; of the rest, a prefix of those started: the
            // ones whose `write` returned, and the one in flight at the kill.
            let prefix = format!("lw{t}-");
            let mut state = part(&self.model, &prefix);
            let mut states = Vec::new();
            for len in 0..=issued + 1 {
                if len >= acked {
                    states.push(state.clone());
                }
                apply(&mut state, &self.packer, &lib_batch(self.seed, c, t, len));
            }
            allowed.push((prefix, states));
        }
        (ended, Allowed(allowed))
    }

    /// `docs` as a JSON Lines file named `name` in the work directory.
    fn write_input(&self, name: &str, docs: &[Op]) -> PathBuf {
        let input = self.work.join(name);
        let mut f = std::fs::File::create(&input).unwrap();
        for (key, value) in docs {
            writeln!(f, "{}", serde_json::json!({"id": key, "text": value})).unwrap();
        }
        input
    }

    /// `mhdb add --json --commit-every K`.
    fn add_cycle(&mut self, c: u64, r: &mut SplitMix64) -> (Ended, Allowed) {
        let n = 20 + r.below(150) as usize;
        let every = 3 + r.below(15) as usize;
        let docs: Vec<Op> = (0..n)
            .map(|_| {
                let key = format!("ca-{}", r.below(CLI_KEYS));
                let t = text(&key, r.below(1000));
                (key, Some(t))
            })
            .collect();
        let input = self.write_input(&format!("add-{c}.jsonl"), &docs);
        let kill = load_kill(r, n, every);
        let ended = run_victim(
            mhdb().arg("add").arg(&self.dir).arg(&input).args([
                "--json",
                "--commit-every",
                &every.to_string(),
            ]),
            kill,
            "",
            |_| {},
        );
        std::fs::remove_file(&input).unwrap();
        let committed = ended
            .lines
            .iter()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter_map(|v| v["committed"].as_u64())
            .max()
            .unwrap_or(0) as usize;
        self.tally.acked += committed as u64;
        let prefix = |k: usize| {
            let mut m = part(&self.model, "ca-");
            apply(&mut m, &self.packer, &docs[..k.min(n)]);
            m
        };
        // The commit whose JSON line the kill cut off may have been durable already.
        let states = vec![prefix(committed), prefix(committed + every)];
        (ended, Allowed(vec![("ca-".to_string(), states)]))
    }

    /// `mhdb add --novel-only --json --commit-every K` over clusters of near-duplicates, new
    /// keys every cycle. Which documents it may store is what a copy of the database, as the
    /// cycle found it, stores when given the same documents one by one.
    fn novel_cycle(&mut self, c: u64, r: &mut SplitMix64) -> (Ended, Allowed) {
        let n = 10 + r.below(60) as usize;
        let every = 2 + r.below(8) as usize;
        let docs: Vec<Op> = (0..n as u64)
            .map(|i| {
                let g = r.below(300);
                (format!("cn-{c}-{i}"), Some(cluster_text(g, r.below(6))))
            })
            .collect();
        let stored = self.novel_outcomes(c, &docs);
        let novel = stored.iter().filter(|s| **s).count() as u64;
        self.tally.novel.0 += novel;
        self.tally.novel.1 += n as u64 - novel;
        let input = self.write_input(&format!("novel-{c}.jsonl"), &docs);
        let kill = load_kill(r, n, every);
        let ended = run_victim(
            mhdb().arg("add").arg(&self.dir).arg(&input).args([
                "--novel-only",
                "--json",
                "--commit-every",
                &every.to_string(),
            ]),
            kill,
            "",
            |_| {},
        );
        std::fs::remove_file(&input).unwrap();
        // Each line names the last input document of its batch, stored or skipped.
        let covered = ended
            .lines
            .iter()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter_map(|v| v["last_id"].as_str().map(str::to_string))
            .filter_map(|id| docs.iter().position(|(k, _)| *k == id))
            .map(|at| at + 1)
            .max()
            .unwrap_or(0);
        self.tally.acked += covered as u64;
        let prefix = |k: usize| {
            let mut m = part(&self.model, "cn-");
            let kept: Vec<Op> = docs[..k.min(n)]
                .iter()
                .zip(&stored)
                .filter(|(_, s)| **s)
                .map(|(d, _)| d.clone())
                .collect();
            apply(&mut m, &self.packer, &kept);
            m
        };
        let states = vec![prefix(covered), prefix(covered + every)];
        (ended, Allowed(vec![("cn-".to_string(), states)]))
    }

    /// Whether each of `docs`, given in order to `insert_text_if_novel` on a copy of the
    /// database, is stored.
    fn novel_outcomes(&self, c: u64, docs: &[Op]) -> Vec<bool> {
        let copy = self.work.join(format!("novel-copy-{c}"));
        copy_db(&self.dir, &copy);
        // A copy thrown away after: what it stores does not depend on fsyncs, skipped.
        let options = Options {
            durability: Durability::None,
            ..Options::default()
        };
        let db = Db::open(&copy, options).unwrap();
        let stored = docs
            .iter()
            .map(|(key, text)| {
                let text = text.as_deref().unwrap();
                match db.insert_text_if_novel(key, text, &NoveltyOptions::default()) {
                    Ok(Novelty::Inserted) => true,
                    Ok(Novelty::Duplicate(_)) => false,
                    Err(e) => panic!("cycle {c}: the copy's insert_text_if_novel: {e}"),
                }
            })
            .collect();
        drop(db);
        std::fs::remove_dir_all(&copy).unwrap();
        stored
    }

    /// `mhdb serve --writer`: [`SERVE_CLIENTS`] client threads sending requests at once, each
    /// one at a time, each acknowledged by its 200; killed after some acknowledgements, or
    /// while it opens. For each client, the requests it had acknowledged are there, and of
    /// the one it had in flight, all or nothing (an insert-if-novel: a prefix of what it
    /// stores).
    fn serve_cycle(&mut self, c: u64, r: &mut SplitMix64) -> (Ended, Allowed) {
        let requests: Vec<Vec<ServeRequest>> = (0..SERVE_CLIENTS)
            .map(|t| {
                (0..SERVE_REQUESTS)
                    .map(|i| serve_request(self.seed, c, t, i))
                    .collect()
            })
            .collect();
        let novel = self.serve_novelty(c, &requests);
        let mut child = mhdb()
            .arg("serve")
            .arg(&self.dir)
            .args(["--writer", "--listen", "127.0.0.1:0"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let clients = vec![(0, 0); SERVE_CLIENTS as usize];
        let clients = if r.below(6) == 0 {
            std::thread::sleep(Duration::from_millis(r.below(30)));
            clients
        } else {
            serve_requests(&mut child, c, &requests, 1 + r.below(40) as usize).unwrap_or(clients)
        };
        let _ = child.kill();
        let out = child.wait_with_output().unwrap();
        let mut allowed = Vec::new();
        for (t, (acked, started)) in clients.into_iter().enumerate() {
            self.tally.acked += acked as u64;
            let prefix = format!("sv{t}-");
            let mut state = part(&self.model, &prefix);
            let mut states = Vec::new();
            for i in 0..=started {
                if i >= acked {
                    states.push(state.clone());
                }
                let Some(request) = requests[t].get(i) else {
                    continue;
                };
                let ops = request.applied(&novel);
                // An insert-if-novel stores its documents one by one, each atomically (an
                // insert or a delete is one write): of the one in flight, any prefix of the
                // documents it stores may be durable.
                if i >= acked && i < started && request.path == "/insert_if_novel" {
                    for k in 1..ops.len() {
                        let mut partial = state.clone();
                        apply(&mut partial, &self.packer, &ops[..k]);
                        states.push(partial);
                    }
                }
                apply(&mut state, &self.packer, &ops);
            }
            allowed.push((prefix, states));
        }
        let ended = Ended {
            lines: Vec::new(),
            status: out.status,
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        };
        (ended, Allowed(allowed))
    }

    /// Whether each insert-if-novel document of the server's clients is stored when sent: as
    /// a copy of the database stores them one by one (each client's clusters being its own,
    /// the order between clients changes nothing).
    fn serve_novelty(&mut self, c: u64, requests: &[Vec<ServeRequest>]) -> BTreeMap<String, bool> {
        let docs: Vec<Op> = requests
            .iter()
            .flatten()
            .filter(|q| q.path == "/insert_if_novel")
            .flat_map(|q| q.ops.iter().cloned())
            .collect();
        let stored = self.novel_outcomes(c, &docs);
        let novel = stored.iter().filter(|s| **s).count() as u64;
        self.tally.novel.0 += novel;
        self.tally.novel.1 += docs.len() as u64 - novel;
        docs.into_iter().map(|(k, _)| k).zip(stored).collect()
    }

    /// `mhdb delete` of a few keys, some absent.
    fn delete_cycle(&mut self, r: &mut SplitMix64) -> (Ended, Allowed) {
        let keys: Vec<String> = (0..1 + r.below(5))
            .map(|_| format!("ca-{}", r.below(CLI_KEYS)))
            .collect();
        let ended = run_victim(
            mhdb().arg("delete").arg(&self.dir).args(&keys),
            Kill::After(Duration::from_millis(r.below(12))),
            "",
            |_| {},
        );
        let before = part(&self.model, "ca-");
        let mut after = before.clone();
        for k in &keys {
            after.remove(k);
        }
        let states = if ended.status.success() {
            self.tally.acked += 1;
            vec![after]
        } else {
            vec![before, after]
        };
        (ended, Allowed(vec![("ca-".to_string(), states)]))
    }

    /// `mhdb compact`: nothing a reader sees changes. The victim that ends before its kill is
    /// reaped at once: a long delay is only an upper bound.
    fn compact_cycle(&mut self, r: &mut SplitMix64) -> (Ended, Allowed) {
        let ended = run_victim(
            mhdb().arg("compact").arg(&self.dir),
            // A third of them run to their end (so that the segments do get merged).
            Kill::After(Duration::from_millis(match r.below(3) {
                0 => 10_000,
                _ => r.below(25),
            })),
            "",
            |_| {},
        );
        (ended, Allowed(Vec::new()))
    }

    /// `mhdb upgrade` of a fresh copy of a version-1 or version-2 fixture beside the cycle's
    /// database, killed at a random time (the upgrade takes about 10 ms, so some end first). It writes nothing a
    /// reader of the cycle's database sees; what it must leave is [`check_upgrade`]'s.
    fn upgrade_cycle(&mut self, c: u64, r: &mut SplitMix64) -> (Ended, Allowed) {
        let name = UPGRADE_FIXTURES[r.below(UPGRADE_FIXTURES.len() as u64) as usize];
        let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/golden")
            .join(name);
        let parent = self.work.join(format!("upgrade-{c}"));
        std::fs::create_dir(&parent).unwrap();
        let dir = parent.join("db");
        copy_db(&fixture, &dir);
        let ended = run_victim(
            mhdb().arg("upgrade").arg(&dir),
            Kill::After(Duration::from_millis(r.below(20))),
            "",
            |_| {},
        );
        if ended.status.success() {
            self.tally.acked += 1;
        }
        if let Err(e) = check_upgrade(&fixture, &dir) {
            self.tally
                .problems
                .push(format!("cycle {c}: mhdb upgrade of {name}: {e}"));
            self.tally.losses += 1;
        }
        std::fs::remove_dir_all(&parent).unwrap();
        (ended, Allowed(Vec::new()))
    }

    /// One cycle; an error is a database that no longer opens or verifies (the run stops).
    fn cycle(&mut self, c: u64) -> Result<(), String> {
        let mut r = SplitMix64(mix(&[self.seed, c, 0xC1C1E]));
        let name = self.only.unwrap_or_else(|| pick_victim(r.below(100)));
        let (ended, allowed) = match name {
            "library sync" => self.lib_cycle(c, &mut r, LibMode::Sync),
            "library commit" => self.lib_cycle(c, &mut r, LibMode::Deferred),
            "mhdb add" => self.add_cycle(c, &mut r),
            "mhdb add --novel-only" => self.novel_cycle(c, &mut r),
            "mhdb serve --writer" => self.serve_cycle(c, &mut r),
            "mhdb delete" => self.delete_cycle(&mut r),
            "mhdb upgrade" => self.upgrade_cycle(c, &mut r),
            _ => self.compact_cycle(&mut r),
        };
        let t = &mut self.tally;
        t.cycles += 1;
        let v = t.victims.entry(name).or_default();
        v.0 += 1;
        if ended.killed() {
            t.kills += 1;
            v.1 += 1;
        } else if ended.status.success() {
            t.ended_first += 1;
        } else {
            return Err(format!(
                "cycle {c}: {name} failed ({:?}): {}",
                ended.status, ended.stderr
            ));
        }

        let db = Db::open_read_only(&self.dir).map_err(|e| format!("cycle {c}: open: {e}"))?;
        let report = db.verify().map_err(|e| format!("cycle {c}: verify: {e}"))?;
        if !report.is_ok() {
            return Err(format!("cycle {c}: verify: {:?}", report.problems));
        }
        let stored = common::stored(&db);
        drop(db);
        let mut ok = true;
        let mut lost = 0u64;
        let mut rest_found = stored.clone();
        let mut rest_model = self.model.clone();
        for (prefix, states) in &allowed.0 {
            let found = part(&stored, prefix);
            rest_found.retain(|k, _| !k.starts_with(prefix.as_str()));
            rest_model.retain(|k, _| !k.starts_with(prefix.as_str()));
            if !states.contains(&found) {
                ok = false;
                // The acknowledged state is the first allowed one.
                let acked = &states[0];
                lost += acked
                    .iter()
                    .filter(|(k, v)| found.get(*k) != Some(v))
                    .count() as u64;
                self.tally.problems.push(format!(
                    "cycle {c}: {name}: keys {prefix}*: state is none of the {} allowed; \
                     beside the acknowledged one it {}",
                    states.len(),
                    differences(acked, &found)
                ));
            }
        }
        if rest_found != rest_model {
            ok = false;
            lost += rest_model
                .iter()
                .filter(|(k, v)| rest_found.get(*k) != Some(v))
                .count() as u64;
            self.tally
                .problems
                .push(format!("cycle {c}: {name}: keys it did not write changed"));
        }
        if ok {
            if ended.killed() {
                self.tally.survived += 1;
            }
        } else {
            self.tally.losses += 1;
            self.tally.lost_keys += lost;
        }
        // Go on from what is there (a loss is counted once).
        self.model = stored;
        Ok(())
    }
}

/// The fixtures an upgrade victim converts.
const UPGRADE_FIXTURES: [&str; 3] = ["db-v1", "db-v2", "db-v2-sets"];

/// What an upgrade of `dir` (a copy of `fixture`) killed at any point must leave: the
/// directory opens read-only with the fixture's documents (in the old format or the new), or
/// is missing while the swap is half done; and a second `mhdb upgrade` runs to its end, after
/// which the directory is version 3 with the same documents, verifies clean, and has nothing
/// left beside it.
fn check_upgrade(fixture: &std::path::Path, dir: &std::path::Path) -> Result<(), String> {
    let documents = |d: &std::path::Path| -> Result<(u32, Model), String> {
        let db = Db::open_read_only(d).map_err(|e| format!("open: {e}"))?;
        let report = db.verify().map_err(|e| format!("verify: {e}"))?;
        if !report.is_ok() {
            return Err(format!("verify: {:?}", report.problems));
        }
        let version = db
            .stats()
            .map_err(|e| format!("stats: {e}"))?
            .format_version;
        Ok((version, common::stored(&db)))
    };
    let (_, expected) = documents(fixture)?;
    if dir.join("CURRENT").exists() {
        let (version, found) = documents(dir).map_err(|e| format!("after the kill: {e}"))?;
        if found != expected {
            return Err(format!(
                "after the kill (version {version}) it {}",
                differences(&expected, &found)
            ));
        }
    }
    let again = mhdb().arg("upgrade").arg(dir).output().unwrap();
    if !again.status.success() {
        return Err(format!(
            "the upgrade run again failed: {}",
            String::from_utf8_lossy(&again.stderr)
        ));
    }
    let (version, found) = documents(dir).map_err(|e| format!("upgraded: {e}"))?;
    if version != 3 || found != expected {
        return Err(format!(
            "upgraded to version {version}, it {}",
            differences(&expected, &found)
        ));
    }
    let beside: Vec<String> = std::fs::read_dir(dir.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n != "db")
        .collect();
    if beside.is_empty() {
        Ok(())
    } else {
        Err(format!("the upgrade left {beside:?} beside the database"))
    }
}

/// The victims, each with its share of the cycles in percent.
const VICTIMS: [(&str, u64); 8] = [
    ("library sync", 25),
    ("mhdb upgrade", 5),
    ("library commit", 15),
    ("mhdb add", 20),
    ("mhdb add --novel-only", 8),
    ("mhdb serve --writer", 8),
    ("mhdb delete", 9),
    ("mhdb compact", 10),
];

/// The victim whose share of 0..100 holds `pick`.
fn pick_victim(mut pick: u64) -> &'static str {
    for (name, share) in VICTIMS {
        if pick < share {
            return name;
        }
        pick -= share;
    }
    unreachable!("the shares add up to 100")
}

/// `MHDB_TORTURE_VICTIM`: the one victim every cycle runs, when set (a run by hand that
/// tortures one writer many times); the first whose name contains it.
fn only_victim() -> Option<&'static str> {
    let wanted = std::env::var("MHDB_TORTURE_VICTIM").ok()?;
    let name = VICTIMS
        .iter()
        .map(|(name, _)| *name)
        .find(|name| name.contains(wanted.as_str()));
    Some(name.unwrap_or_else(|| panic!("MHDB_TORTURE_VICTIM={wanted:?} names no victim")))
}

/// How `found` differs from `expected`: the keys it lacks, has in more, and holds otherwise
/// (a few of each).
fn differences(expected: &Model, found: &Model) -> String {
    let few = |keys: Vec<&String>| {
        let n = keys.len();
        let shown: Vec<&str> = keys.into_iter().take(8).map(String::as_str).collect();
        format!("{n} {shown:?}")
    };
    let lacks = expected
        .keys()
        .filter(|k| !found.contains_key(*k))
        .collect();
    let more = found
        .keys()
        .filter(|k| !expected.contains_key(*k))
        .collect();
    let changed = found
        .iter()
        .filter(|(k, v)| expected.get(*k).is_some_and(|e| e != *v))
        .map(|(k, _)| k)
        .collect();
    format!(
        "lacks {}, has in more {}, holds otherwise {}",
        few(lacks),
        few(more),
        few(changed)
    )
}

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[test]
fn kill_nine_torture() {
    let cycles = env_u64("MHDB_TORTURE_CYCLES", 100);
    let seed = env_u64("MHDB_TORTURE_SEED", 1);
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    drop(Db::create(&dir, params(), Options::default()).unwrap());
    let mut torture = Torture {
        dir,
        work: tmp.path().to_path_buf(),
        seed,
        packer: Packer::new(&params()),
        model: Model::new(),
        tally: Tally::default(),
        only: only_victim(),
    };
    let start = Instant::now();
    let mut stopped = None;
    for c in 0..cycles {
        if let Err(e) = torture.cycle(c) {
            stopped = Some(e);
            break;
        }
    }
    let db = Db::open_read_only(&torture.dir).unwrap();
    let stats = db.stats().unwrap();
    drop(db);
    let report = format!(
        "kill_nine_torture, seed {seed}, {:.1} s:\n{}at the end: {} live documents, {} deleted, {} segments\n",
        start.elapsed().as_secs_f64(),
        torture.tally.report(),
        stats.live_docs,
        stats.deleted_docs,
        stats.segments,
    );
    // On stderr itself, not the captured test output: the figures are the point of a run.
    let _ = write!(std::io::stderr(), "{report}");
    let t = &torture.tally;
    assert!(stopped.is_none(), "{}\n{report}", stopped.unwrap());
    assert!(t.problems.is_empty(), "{}\n{report}", t.problems.join("\n"));
    assert_eq!(t.survived, t.kills, "{report}");
    assert!(
        t.kills * 2 >= t.cycles,
        "fewer than half of the cycles killed their victim: the torture tortures little\n{report}"
    );
}
