//! Disk full on a real small filesystem. Every step that writes — `mhdb add`, library writes
//! through the WAL, a flush, `mhdb compact`, `mhdb export` and `mhdb merge` — is run on a
//! filesystem filled up to leave 0, 1, 2, ... free pages, until it succeeds, so that it meets
//! ENOSPC at each of its writes in turn. At every level:
//!
//! - the step succeeds, or fails with exit code 1 and a message that names a file under the
//!   mount point and says "No space left on device"; never a signal or a panic;
//! - while the disk is still full, read-only opens (`mhdb stats`, `mhdb verify`) answer and a
//!   writer open (`mhdb delete` of an absent key) answers or fails as cleanly (a WAL extension
//!   cut short by ENOSPC leaves a hole in the file, and replaying it through a map raised
//!   SIGBUS on a full tmpfs: exit 135 on every open until space was freed);
//! - once space is freed, the database holds every acknowledged write and of the step's
//!   unacknowledged batches all or nothing (checked against a model), `verify` finds nothing,
//!   and the step run again succeeds and leaves the model's final state.
//!
//! The filesystems are a tmpfs and an ext4 image on a loop device, mounted by the test. Run as
//! root (as CI runs), a mount that fails (no loop device, no mkfs.ext4) fails the test; run as
//! another user, who cannot mount, each test prints `SKIPPED: ...` on stderr, uncaptured, and
//! passes. The outcomes are checked the same way
//! whichever of a flush's parallel writes meets the full disk first, so no result depends on
//! timing (and the tests take turns, see `TAKE_TURNS`).
//!
//! Also here: a database copied sparsely (runs of zeros become holes, as
//! `cp --sparse=always`, `rsync -S` or a restore make them) onto a tmpfs that is then filled
//! must be read, never mapped; a create stopped by ENOSPC must run again once space is freed;
//! and an export stopped by ENOSPC must not leave a CURRENT behind.

mod common;

use std::io::Write;
use std::os::unix::fs::FileExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use common::model::{Model, Packer};
use mhdb::db::{Db, Durability, IndexParams, Options, WriteBatch};

const ROLE_ENV: &str = "MHDB_DISK_FULL_ROLE";
const DIR_ENV: &str = "MHDB_DISK_FULL_DIR";
const PAGE: u64 = 4096;
/// No step takes more than a second here; past this it hangs.
const LIMIT: Duration = Duration::from_secs(120);
/// Free-space levels tried per step before giving up on it ever succeeding.
const MAX_LEVELS: u64 = 400;

fn params() -> IndexParams {
    common::params::word_index(32, 16, 0.5)
}

fn options() -> Options {
    Options {
        durability: Durability::Sync,
        ..Options::default()
    }
}

fn text(i: u64, version: u64) -> String {
    (0..30)
        .map(|w| format!("d{}w{w}", (i * 7 + w) % 97))
        .collect::<Vec<_>>()
        .join(" ")
        + &format!(" doc{i} v{version}")
}

/// One change: set a key to a text, or delete it.
type Op = (String, Option<String>);

fn apply(model: &mut Model, packer: &Packer, ops: &[Op]) {
    for (key, value) in ops {
        common::model::apply(model, key, value.as_ref().map(|t| packer.text(t)));
    }
}

/// The library step's batches: upserts and deletes of stored keys, and new keys. Each is over
/// 8 KiB as a WAL record, so that an extension of the log cut short leaves a whole page unwritten.
fn write_batches() -> Vec<Vec<Op>> {
    (0..5u64)
        .map(|b| {
            (0..100u64)
                .map(|i| {
                    let n = b * 100 + i;
                    match n % 10 {
                        0 => (format!("t{}", n % 150), None),
                        1 | 2 => (format!("t{}", n % 150), Some(text(n, b + 1))),
                        _ => (format!("w{n}"), Some(text(n, 0))),
                    }
                })
                .collect()
        })
        .collect()
}

/// What `mhdb add` loads: new keys and replacements of stored ones.
fn add_docs() -> Vec<Op> {
    (0..40u64)
        .map(|i| {
            let key = if i % 4 == 0 {
                format!("t{}", i * 3)
            } else {
                format!("a{i}")
            };
            (key, Some(text(1000 + i, 7)))
        })
        .collect()
}

/// Documents per commit of `mhdb add` (`--commit-every`).
const ADD_BATCH: usize = 10;

/// A database with every file kind: three segments, a deletion list and a WAL tail of inserts,
/// upserts and deletes, in `dir`; returns what it holds.
fn build_template(dir: &Path, packer: &Packer) -> Model {
    let db = Db::create(
        dir,
        params(),
        Options {
            auto_compact: false,
            ..options()
        },
    )
    .unwrap();
    let mut model = Model::new();
    let mut write = |ops: Vec<Op>, flush: bool| {
        let mut batch = WriteBatch::new();
        for (key, value) in &ops {
            match value {
                Some(t) => batch.insert_text(key, t),
                None => batch.delete(key),
            };
        }
        db.write(&batch).unwrap();
        apply(&mut model, packer, &ops);
        if flush {
            db.flush().unwrap();
        }
    };
    for round in 0..2u64 {
        let ops = (0..75u64)
            .map(|i| {
                (
                    format!("t{}", round * 75 + i),
                    Some(text(round * 75 + i, 0)),
                )
            })
            .collect();
        write(ops, true);
    }
    let ops = (0..20u64)
        .map(|i| match i % 2 {
            0 => (format!("t{}", i * 7), None),
            _ => (format!("t{}", i * 7), Some(text(i * 7, 1))),
        })
        .collect();
    write(ops, true);
    let ops = (0..30u64)
        .map(|i| match i % 3 {
            0 => (format!("t{}", 2 + i * 5), None),
            1 => (format!("t{}", 2 + i * 5), Some(text(i, 2))),
            _ => (format!("n{i}"), Some(text(500 + i, 0))),
        })
        .collect();
    write(ops, false);
    drop(db);
    model
}

/// A second database with keys of its own and some of the template's, for `mhdb merge`.
fn build_merge_source(dir: &Path, packer: &Packer) -> Model {
    let db = Db::create(dir, params(), options()).unwrap();
    let mut ops = Vec::new();
    for i in 0..60u64 {
        let key = if i % 5 == 0 {
            format!("t{i}")
        } else {
            format!("m{i}")
        };
        ops.push((key, Some(text(2000 + i, 3))));
    }
    let mut batch = WriteBatch::new();
    for (key, value) in &ops {
        batch.insert_text(key, value.as_deref().unwrap());
    }
    db.write(&batch).unwrap();
    db.flush().unwrap();
    drop(db);
    let mut model = Model::new();
    apply(&mut model, packer, &ops);
    model
}

/// The library steps, run in a child process so that a signal ends the child, not the test:
/// `write` (the batches of [`write_batches`], printing `ack N` once batch N is durable) and
/// `flush`. A failure prints `mhdb-error: ...` and exits with code 1.
#[test]
#[ignore = "child role of the disk-full tests, run by them"]
fn child_role() {
    let (Ok(role), Ok(dir)) = (std::env::var(ROLE_ENV), std::env::var(DIR_ENV)) else {
        eprintln!("child_role: not run by a disk-full test ({ROLE_ENV} unset), nothing to do");
        return;
    };
    let result = Db::open(&dir, options()).and_then(|db| match role.as_str() {
        "write" => {
            for (b, ops) in write_batches().iter().enumerate() {
                let mut batch = WriteBatch::new();
                for (key, value) in ops {
                    match value {
                        Some(t) => batch.insert_text(key, t),
                        None => batch.delete(key),
                    };
                }
                db.write(&batch)?;
                let mut out = std::io::stdout().lock();
                writeln!(out, "ack {b}").unwrap();
                out.flush().unwrap();
            }
            Ok(())
        }
        "flush" => db.flush(),
        other => panic!("unknown role {other}"),
    });
    if let Err(e) = result {
        eprintln!("mhdb-error: {e}");
        std::process::exit(1);
    }
}

/// A filesystem mounted for one test, unmounted when dropped.
struct Mounted {
    point: PathBuf,
    _tmp: tempfile::TempDir,
    _turn: std::sync::MutexGuard<'static, ()>,
}

impl Drop for Mounted {
    fn drop(&mut self) {
        let ok = Command::new("umount")
            .arg(&self.point)
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            let _ = Command::new("umount").arg("-l").arg(&self.point).status();
        }
    }
}

fn run_quiet(program: &str, args: &[&str]) -> Result<(), String> {
    match Command::new(program).args(args).output() {
        Ok(out) if out.status.success() => Ok(()),
        Ok(out) => Err(format!(
            "{program} {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )),
        Err(e) => Err(format!("{program}: {e}")),
    }
}

fn mount(kind: &str, turn: std::sync::MutexGuard<'static, ()>) -> Result<Mounted, String> {
    let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
    let point = tmp.path().join("mnt");
    std::fs::create_dir(&point).map_err(|e| e.to_string())?;
    let p = point.to_str().unwrap();
    match kind {
        "tmpfs" => run_quiet("mount", &["-t", "tmpfs", "-o", "size=4m", "mhdb-test", p])?,
        "ext4" => {
            let image = tmp.path().join("ext4.img");
            std::fs::File::create(&image)
                .and_then(|f| f.set_len(16 << 20))
                .map_err(|e| e.to_string())?;
            let image = image.to_str().unwrap();
            run_quiet("mkfs.ext4", &["-q", "-F", "-b", "4096", "-m", "0", image])?;
            run_quiet("mount", &["-o", "loop", image, p])?;
        }
        _ => unreachable!(),
    }
    Ok(Mounted {
        point,
        _tmp: tmp,
        _turn: turn,
    })
}

/// The tests of this file take turns. A child process started by one test holds every file
/// descriptor of this process from its fork until its exec, and a file another test removes
/// meanwhile keeps its pages until then: the free space the other test counted on would
/// depend on timing.
static TAKE_TURNS: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Whether this process runs as root (effective user id 0, from `/proc/self/status`).
fn running_as_root() -> bool {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let uids = status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .expect("/proc/self/status has a Uid line");
    // Real, effective, saved and filesystem user ids.
    uids.split_whitespace().nth(1) == Some("0")
}

/// Mounts `kind`. As root a failure to mount fails the test; as another user, who cannot
/// mount, it says on stderr (uncaptured) that the test is skipped. Holds this file's turn (see
/// [`TAKE_TURNS`]) as long as the mount.
fn mount_or_skip(kind: &str, test: &str) -> Option<Mounted> {
    let turn = TAKE_TURNS.lock().unwrap_or_else(|e| e.into_inner());
    if !running_as_root() {
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED: {test}: mounting a {kind} needs root (CI runs this test as root)"
        );
        return None;
    }
    match mount(kind, turn) {
        Ok(m) => Some(m),
        Err(why) => panic!("{test}: running as root, yet cannot mount a {kind}: {why}"),
    }
}

/// A file that takes up all the free space of its filesystem but for the pages left free.
struct Filler {
    file: std::fs::File,
    path: PathBuf,
    len: u64,
}

impl Filler {
    /// Fills the filesystem of `dir` up.
    fn fill(dir: &Path) -> Filler {
        let path = dir.join("filler");
        let file = std::fs::File::create(&path).unwrap();
        let mut len = 0u64;
        for step in [64 * PAGE, PAGE] {
            let block = vec![0xA5u8; step as usize];
            loop {
                match file.write_at(&block, len) {
                    Ok(n) if n as u64 == step => len += step,
                    Ok(_) => break,
                    Err(e) if e.raw_os_error() == Some(28) => break,
                    Err(e) => panic!("filling {}: {e}", path.display()),
                }
            }
            file.set_len(len).unwrap();
        }
        Filler { file, path, len }
    }

    /// Frees `pages` pages of the filler (at most all of it).
    fn leave_free(&self, pages: u64) {
        let len = self.len.saturating_sub(pages * PAGE);
        self.file.set_len(len).unwrap();
        // On ext4, blocks freed by a transaction are reused once it commits.
        self.file.sync_all().unwrap();
    }

    /// Removes the filler, and makes the space reusable at once: ext4 reuses the blocks of a
    /// removed file only once the transaction that freed them commits, which an fsync forces.
    fn remove(self) {
        drop(self.file);
        std::fs::remove_file(&self.path).unwrap();
        let dir = self.path.parent().unwrap();
        std::fs::File::open(dir).unwrap().sync_all().unwrap();
    }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
}

fn clear_dir(dir: &Path) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            std::fs::remove_dir_all(&path).unwrap();
        } else {
            std::fs::remove_file(&path).unwrap();
        }
    }
}

fn mhdb(args: &[&Path]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mhdb"));
    cmd.args(args);
    cmd
}

fn role(role: &str, dir: &Path) -> Command {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args([
        "--ignored",
        "--exact",
        "child_role",
        "--nocapture",
        "--test-threads",
        "1",
    ])
    .env(ROLE_ENV, role)
    .env(DIR_ENV, dir);
    cmd
}

fn run(what: &str, cmd: &mut Command) -> Output {
    let out = common::process::output_within(cmd, LIMIT)
        .unwrap_or_else(|| panic!("{what}: no answer after {LIMIT:?} (hang)"));
    if let Some(signal) = out.status.signal() {
        panic!(
            "{what}: killed by signal {signal}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    out
}

/// A failure must be exit code 1 with a message naming a file under `mount` and ENOSPC.
/// Returns the message.
fn expect_clean_enospc(what: &str, out: &Output, mount: &Path) -> String {
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "{what}: {err}");
    assert!(
        err.contains("No space left on device") && err.contains(mount.to_str().unwrap()),
        "{what}: the error does not name a file and ENOSPC: {err}"
    );
    err
}

/// The file an error message names (under `mount`), its id written `*`, for the summary.
fn named_file(err: &str, mount: &Path) -> String {
    let m = mount.to_str().unwrap();
    let Some(at) = err.find(m) else {
        return String::new();
    };
    let path = err[at + m.len()..]
        .split(|c: char| c.is_whitespace() || c == ':')
        .next()
        .unwrap_or("");
    let name = path.rsplit('/').next().unwrap_or("");
    match name.split_once('-') {
        Some((kind, rest)) if rest.len() >= 16 => format!("{kind}-*{}", &rest[16..]),
        _ => name.to_string(),
    }
}

/// The database in `dir` as a model (None when `dir` holds no database), after checking that
/// `verify` finds no problem.
fn stored(dir: &Path) -> Option<Model> {
    if !dir.join("CURRENT").exists() {
        return None;
    }
    let db = Db::open_read_only(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let report = db.verify().unwrap();
    assert!(report.is_ok(), "{}: {:?}", dir.display(), report.problems);
    Some(common::stored(&db))
}

#[derive(Clone, Copy, Debug)]
enum Step {
    Write,
    Flush,
    Add,
    Compact,
    Export,
    Merge,
}

const STEPS: [Step; 6] = [
    Step::Write,
    Step::Flush,
    Step::Add,
    Step::Compact,
    Step::Export,
    Step::Merge,
];

struct Fixture {
    template: PathBuf,
    template_model: Model,
    merge_source: PathBuf,
    merge_model: Model,
    add_input: PathBuf,
    packer: Packer,
    _tmp: tempfile::TempDir,
}

fn fixture() -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let packer = Packer::new(&params());
    let template = tmp.path().join("template");
    let template_model = build_template(&template, &packer);
    let merge_source = tmp.path().join("merge-source");
    let merge_model = build_merge_source(&merge_source, &packer);
    let add_input = tmp.path().join("add.jsonl");
    let mut f = std::fs::File::create(&add_input).unwrap();
    for (key, text) in add_docs() {
        writeln!(f, "{}", serde_json::json!({"id": key, "text": text})).unwrap();
    }
    Fixture {
        template,
        template_model,
        merge_source,
        merge_model,
        add_input,
        packer,
        _tmp: tmp,
    }
}

impl Fixture {
    fn with(&self, ops: &[Op], base: &Model) -> Model {
        let mut m = base.clone();
        apply(&mut m, &self.packer, ops);
        m
    }

    fn command(&self, step: Step, small: &Path) -> Command {
        let db = small.join("db");
        match step {
            Step::Write => role("write", &db),
            Step::Flush => role("flush", &db),
            Step::Add => {
                let mut cmd = mhdb(&[Path::new("add"), &db, &self.add_input]);
                cmd.args(["--json", "--commit-every", &ADD_BATCH.to_string()]);
                cmd
            }
            Step::Compact => mhdb(&[Path::new("compact"), &db]),
            Step::Export => mhdb(&[Path::new("export"), &db, &small.join("export")]),
            Step::Merge => mhdb(&[
                Path::new("merge"),
                &small.join("merged"),
                &self.template,
                &self.merge_source,
            ]),
        }
    }

    /// The directory the step's result is read from, and the states it may be in after the
    /// step's run gave `out` (the first is the one a success must give).
    fn outcomes(&self, step: Step, small: &Path, out: &Output) -> (PathBuf, Vec<Option<Model>>) {
        let stdout = String::from_utf8_lossy(&out.stdout);
        let m0 = &self.template_model;
        match step {
            Step::Write => {
                let batches = write_batches();
                let acked = stdout.lines().filter(|l| l.starts_with("ack ")).count();
                let all: Vec<Op> = batches.concat();
                let prefix = |n: usize| Some(self.with(&batches[..n].concat(), m0));
                let mut states = vec![Some(self.with(&all, m0)), prefix(acked)];
                if acked < batches.len() {
                    states.push(prefix(acked + 1));
                }
                (small.join("db"), states)
            }
            Step::Flush | Step::Compact => (small.join("db"), vec![Some(m0.clone())]),
            Step::Add => {
                let docs = add_docs();
                let committed = stdout
                    .lines()
                    .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
                    .filter_map(|v| v["committed"].as_u64())
                    .max()
                    .unwrap_or(0) as usize;
                let prefix = |n: usize| Some(self.with(&docs[..n.min(docs.len())], m0));
                (
                    small.join("db"),
                    vec![
                        prefix(docs.len()),
                        prefix(committed),
                        prefix(committed + ADD_BATCH),
                    ],
                )
            }
            Step::Export => (small.join("export"), vec![Some(m0.clone()), None]),
            Step::Merge => {
                let mut both = m0.clone();
                both.extend(self.merge_model.clone());
                (
                    small.join("merged"),
                    vec![Some(both), None, Some(Model::new()), Some(m0.clone())],
                )
            }
        }
    }
}

/// What one step met over its levels, for the printed summary.
#[derive(Default)]
struct Tally {
    failures: u64,
    succeeded_at: Option<u64>,
    files: std::collections::BTreeSet<String>,
}

fn sweep(kind: &str, m: &Mounted, fx: &Fixture, step: Step) -> Tally {
    let small = &m.point;
    let mut tally = Tally::default();
    for level in 0..MAX_LEVELS {
        let what = format!("{kind}, {step:?}, {level} free pages");
        clear_dir(small);
        copy_dir(&fx.template, &small.join("db"));
        if matches!(step, Step::Export) {
            // Compacted first, so that the export's own compaction has nothing to do and the
            // full disk meets the copy (a compaction's failures are the Compact step's).
            let out = run(&what, &mut fx.command(Step::Compact, small));
            assert!(out.status.success(), "{what}: compact before the export");
        }
        let filler = Filler::fill(small);
        filler.leave_free(level);
        let out = run(&what, &mut fx.command(step, small));
        let ok = out.status.success();
        if !ok {
            let err = expect_clean_enospc(&what, &out, small);
            tally.failures += 1;
            tally.files.insert(named_file(&err, small));
        }
        let (result_dir, states) = fx.outcomes(step, small, &out);
        // A CURRENT the step left is a whole one (a partial one reads as a damaged database,
        // exit 3, and is checked below like any other: stats, verify and `stored` fail on it).
        if let Ok(meta) = std::fs::metadata(result_dir.join("CURRENT")) {
            assert_eq!(meta.len(), 36, "{what}: the step left a partial CURRENT");
        }

        // Still full: reads answer, a writer opens or fails cleanly.
        for dir in [small.join("db"), result_dir.clone()] {
            if !dir.join("CURRENT").exists() {
                continue;
            }
            for args in [&["stats"][..], &["verify"][..]] {
                let mut cmd = Command::new(env!("CARGO_BIN_EXE_mhdb"));
                cmd.args(args).arg(&dir);
                let out = run(&format!("{what}: {} while full", args[0]), &mut cmd);
                assert!(
                    out.status.success(),
                    "{what}: {} while full: {}",
                    args[0],
                    String::from_utf8_lossy(&out.stderr)
                );
            }
        }
        let out_delete = run(
            &format!("{what}: writer open while full"),
            &mut mhdb(&[Path::new("delete"), &small.join("db"), Path::new("absent")]),
        );
        if !out_delete.status.success() {
            expect_clean_enospc(
                &format!("{what}: writer open while full"),
                &out_delete,
                small,
            );
        }
        filler.remove();

        // Space freed: nothing acknowledged lost, unacknowledged batches all or nothing.
        let found = stored(&result_dir);
        if ok {
            assert!(found == states[0], "{what}: succeeded with the wrong state");
        } else {
            assert!(
                states.contains(&found),
                "{what}: state after the failure is none of those allowed"
            );
        }
        if result_dir != small.join("db") {
            assert_eq!(
                stored(&small.join("db")).as_ref(),
                Some(&fx.template_model),
                "{what}: source changed"
            );
        }

        // And the step, run again as it is, succeeds: a failed export leaves nothing a new
        // one refuses to write into, and a merge runs again into what its failed run left.
        if !ok {
            let again = run(&format!("{what}: again"), &mut fx.command(step, small));
            assert!(
                again.status.success(),
                "{what}: again with space freed: {}",
                String::from_utf8_lossy(&again.stderr)
            );
            assert!(
                stored(&result_dir) == states[0],
                "{what}: again: wrong final state"
            );
        } else {
            tally.succeeded_at = Some(level);
            break;
        }
    }
    assert!(
        tally.succeeded_at.is_some(),
        "{kind}, {step:?}: never succeeded"
    );
    assert!(
        tally.failures > 0,
        "{kind}, {step:?}: never met a full disk"
    );
    tally
}

fn disk_full_on(kind: &str, test: &str) {
    let Some(m) = mount_or_skip(kind, test) else {
        return;
    };
    let fx = fixture();
    let mut summary = String::new();
    for step in STEPS {
        let t = sweep(kind, &m, &fx, step);
        summary += &format!(
            "  {step:?}: ENOSPC at {} levels (in {}), succeeded with {} free pages\n",
            t.failures,
            t.files.into_iter().collect::<Vec<_>>().join(", "),
            t.succeeded_at.unwrap_or(0),
        );
    }
    let _ = write!(std::io::stderr(), "{test}:\n{summary}");
}

#[test]
fn disk_full_on_tmpfs() {
    disk_full_on("tmpfs", "disk_full_on_tmpfs");
}

#[test]
fn disk_full_on_ext4() {
    disk_full_on("ext4", "disk_full_on_ext4");
}

/// Copies `from` into `to` leaving every all-zero page unwritten (a hole).
fn sparse_copy(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let bytes = std::fs::read(entry.path()).unwrap();
        let out = std::fs::File::create(to.join(entry.file_name())).unwrap();
        for (i, page) in bytes.chunks(PAGE as usize).enumerate() {
            if page.iter().any(|&b| b != 0) {
                out.write_all_at(page, i as u64 * PAGE).unwrap();
            }
        }
        out.set_len(bytes.len() as u64).unwrap();
    }
}

/// Documents deleted before their flush leave zero records in the signature log; a sparse copy
/// turns them into holes, and on a full tmpfs reading a hole through a map raises SIGBUS.
/// Every read command answers; `compact` answers or fails cleanly.
#[test]
fn sparse_copy_on_a_full_tmpfs_is_read_without_a_signal() {
    let Some(m) = mount_or_skip(
        "tmpfs",
        "sparse_copy_on_a_full_tmpfs_is_read_without_a_signal",
    ) else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("db");
    let packer = Packer::new(&params());
    let db = Db::create(&src, params(), options()).unwrap();
    let mut batch = WriteBatch::new();
    for i in 0..600u64 {
        batch.insert_text(format!("s{i}"), text(i, 0));
    }
    db.write(&batch).unwrap();
    let mut batch = WriteBatch::new();
    let mut model = Model::new();
    for i in 0..600u64 {
        if i % 40 == 0 {
            model.insert(format!("s{i}"), packer.text(&text(i, 0)));
        } else {
            batch.delete(format!("s{i}"));
        }
    }
    db.write(&batch).unwrap();
    db.flush().unwrap();
    drop(db);

    let dir = m.point.join("db");
    sparse_copy(&src, &dir);
    // (Format version 1's signature log had runs of zeros, so its sparse copy had holes;
    // version 2 keeps signatures in segments, which have none. The copy is read the same way
    // either way, and must not raise a signal when the disk is full.)
    let filler = Filler::fill(&m.point);
    let keys: Vec<String> = model.keys().cloned().collect();
    for args in [
        vec!["verify".to_string()],
        vec!["stats".to_string()],
        vec!["keys".to_string()],
        vec!["dedup".to_string()],
        [vec!["get".to_string(), "--json".to_string()], keys.clone()].concat(),
        vec!["query".to_string(), "--text".to_string(), text(40, 0)],
    ] {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_mhdb"));
        cmd.arg(&args[0]).arg(&dir).args(&args[1..]);
        let out = run(&format!("{} on a full tmpfs", args[0]), &mut cmd);
        assert!(
            out.status.success(),
            "{}: {}",
            args[0],
            String::from_utf8_lossy(&out.stderr)
        );
        if args[0] == "keys" {
            let mut listed: Vec<String> = String::from_utf8(out.stdout)
                .unwrap()
                .lines()
                .map(str::to_string)
                .collect();
            listed.sort();
            assert_eq!(listed, keys);
        }
    }
    let out = run(
        "compact on a full tmpfs",
        &mut mhdb(&[Path::new("compact"), &dir]),
    );
    if !out.status.success() {
        expect_clean_enospc("compact on a full tmpfs", &out, &m.point);
    }
    filler.remove();
    assert_eq!(stored(&dir), Some(model));
}

/// Runs `step_args` (an `mhdb` command line whose target is `target`, under the mount) with
/// 0, 1, 2, ... pages free until it succeeds; after each failure, with space freed, `check`
/// is asked about what the failure left. It must fail at least once (with no page free), or
/// `check` never ran.
fn sweep_until_success(
    m: &Mounted,
    prepare: impl Fn(&Path),
    args: impl Fn(&Path) -> Vec<PathBuf>,
    mut check: impl FnMut(&Path, u64),
) {
    for level in 0..MAX_LEVELS {
        clear_dir(&m.point);
        prepare(&m.point);
        let filler = Filler::fill(&m.point);
        filler.leave_free(level);
        let args = args(&m.point);
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_mhdb"));
        cmd.args(&args);
        let out = run(&format!("{args:?} with {level} free pages"), &mut cmd);
        filler.remove();
        if out.status.success() {
            assert!(level > 0, "{args:?} succeeded on a full disk");
            return;
        }
        expect_clean_enospc(&format!("{args:?}"), &out, &m.point);
        check(&m.point, level);
    }
    panic!("never succeeded");
}

/// An export stopped by a full disk must not leave a CURRENT in the destination: a directory
/// with a CURRENT looks like a database (an empty one reads as a damaged one, exit 3), and a
/// new export refuses to write into it. (An export once wrote the destination's CURRENT in
/// place, so one cut short by ENOSPC left an empty CURRENT; it now builds the copy beside the
/// destination and renames it into place whole.)
#[test]
fn export_cut_short_leaves_no_current() {
    let Some(m) = mount_or_skip("tmpfs", "export_cut_short_leaves_no_current") else {
        return;
    };
    let fx = fixture();
    sweep_until_success(
        &m,
        |small| {
            copy_dir(&fx.template, &small.join("db"));
            let out = run("compact", &mut fx.command(Step::Compact, small));
            assert!(out.status.success());
        },
        |small| vec!["export".into(), small.join("db"), small.join("export")],
        |small, level| {
            let current = small.join("export").join("CURRENT");
            assert!(
                !current.exists() || stored(&small.join("export")).is_some(),
                "{level} free pages: the failed export left a CURRENT of {} bytes",
                std::fs::metadata(&current).unwrap().len()
            );
        },
    );
}

/// `mhdb create` (and `mhdb merge`, which creates its destination) stopped by a full disk
/// must be able to run again once space is freed. `Db::create` replaces the leftovers of an
/// interrupted create (no CURRENT yet); its first WAL file, created with `CreateNew`, made
/// every later create fail with "File exists" until `WalWriter::create` learnt to replace a
/// leftover WAL file that holds no record.
#[test]
fn interrupted_create_can_be_run_again() {
    let Some(m) = mount_or_skip("tmpfs", "interrupted_create_can_be_run_again") else {
        return;
    };
    sweep_until_success(
        &m,
        |_| {},
        |small| vec!["create".into(), small.join("db")],
        |small, level| {
            let again = run(
                "create again",
                &mut mhdb(&[Path::new("create"), &small.join("db")]),
            );
            assert!(
                again.status.success(),
                "{level} free pages: create again with space freed: {}",
                String::from_utf8_lossy(&again.stderr)
            );
        },
    );
}

/// `mhdb upgrade` checks the free space before it writes: on a filesystem with less room than
/// the database's size it is refused (exit 1, the space needed and free named) with nothing
/// written, and once there is room the same command upgrades.
#[test]
fn upgrade_without_room_for_its_copy_is_refused_before_writing() {
    let test = "upgrade_without_room_for_its_copy_is_refused_before_writing";
    let Some(m) = mount_or_skip("tmpfs", test) else {
        return;
    };
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/db-v2");
    let dir = m.point.join("db");
    copy_dir(&fixture, &dir);
    let before = common::golden::snapshot(&dir);
    let filler = Filler::fill(&m.point);
    filler.leave_free(2);
    let out = run(
        "upgrade on a full tmpfs",
        mhdb(&[Path::new("upgrade"), &dir]).env("LANG", "C"),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("needs about") && err.contains("nothing was written"),
        "{err}"
    );
    assert_eq!(
        common::golden::snapshot(&dir),
        before,
        "the refused upgrade changed files"
    );
    let names: Vec<String> = std::fs::read_dir(&m.point)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        names.len(),
        2,
        "the refused upgrade left files beside: {names:?}"
    );

    filler.remove();
    let out = run(
        "upgrade with room",
        &mut mhdb(&[Path::new("upgrade"), &dir]),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("needs about") && err.contains("free"), "{err}");
    assert!(err.contains("have no exact hash"), "{err}");
    let db = Db::open(&dir, Options::default()).unwrap();
    assert!(db.verify().unwrap().is_ok());
}
