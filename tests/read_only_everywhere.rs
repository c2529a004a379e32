//! A shipped index is read where it is shipped: every read command of the CLI (`keys`, `get`,
//! `query`, `dedup`, `stats`, `verify`, `export`) works on a database that the user may only
//! read — root-owned files of mode 444 in a directory of mode 555, opened as an unprivileged
//! user — and on a read-only bind mount, and changes no byte, no modification time and no
//! name in the directory.
//!
//! Dropping privileges and mounting need root (CI runs as root). Run as root, a step that is
//! refused (no `setpriv`, no mount namespace, a bind mount refused) fails the test; run as
//! another user the test says `SKIPPED` and why, instead of passing silently.

mod common;

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::SystemTime;

use mhdb::db::{Db, Durability, IndexParams, Options};

const NOBODY: &str = "65534";

fn text(i: u64) -> String {
    format!(
        "shipped document {i}: {} with words of its own {}",
        "the same boilerplate sentence repeated ".repeat((i % 4 + 1) as usize),
        i * 104_729
    )
}

/// A database with two segments, a deletion list and a WAL tail.
fn build(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let opts = Options {
        durability: Durability::Sync,
        auto_compact: false,
        ..Options::default()
    };
    let db = Db::create(dir, IndexParams::default(), opts).unwrap();
    for i in 0..40 {
        db.insert_text(format!("doc-{i}"), &text(i)).unwrap();
        if i == 19 {
            db.flush().unwrap();
        }
    }
    db.flush().unwrap();
    db.delete("doc-3").unwrap();
    db.flush().unwrap();
    db.insert_text("doc-3", &text(3)).unwrap(); // in the WAL only
    db.insert_text("tail", &text(99)).unwrap();
    common::stored(&db)
}

type Listing = BTreeMap<String, (Vec<u8>, SystemTime)>;

/// Every name in the directory with its bytes and modification time, and the directory's own.
fn listing(dir: &Path) -> (Listing, SystemTime) {
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let meta = entry.metadata().unwrap();
        out.insert(
            entry.file_name().to_string_lossy().into_owned(),
            (
                std::fs::read(entry.path()).unwrap(),
                meta.modified().unwrap(),
            ),
        );
    }
    (out, std::fs::metadata(dir).unwrap().modified().unwrap())
}

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// The read commands, as one shell script over `$DB` and `$OUT` run by `sh -e`: each line must
/// succeed; the outputs a test checks go to files under `$OUT`.
fn read_commands(mhdb: &Path) -> String {
    let m = mhdb.display();
    let probe = text(7).replace('\'', "");
    format!(
        "{m} keys \"$DB\" > \"$OUT/keys\"\n\
         {m} get \"$DB\" doc-7 tail > \"$OUT/get\"\n\
         {m} query \"$DB\" --text '{probe}' --json > \"$OUT/query\"\n\
         printf '%s\\n' '{{\"id\": \"q\", \"text\": \"{probe}\"}}' > \"$OUT/q.jsonl\"\n\
         {m} query \"$DB\" --jsonl \"$OUT/q.jsonl\" > \"$OUT/query-jsonl\"\n\
         {m} dedup \"$DB\" > \"$OUT/pairs\"\n\
         {m} dedup \"$DB\" --format clusters > \"$OUT/clusters\"\n\
         {m} dedup \"$DB\" --format drop > \"$OUT/drop\"\n\
         {m} stats \"$DB\" --json > \"$OUT/stats\"\n\
         {m} verify \"$DB\" > \"$OUT/verify\"\n\
         {m} export \"$DB\" \"$OUT/export\" > /dev/null\n\
         {m} keys \"$OUT/export\" > \"$OUT/export-keys\"\n"
    )
}

/// A scratch area that the unprivileged user can enter: the binary, the database (root's,
/// read-only) and an output directory it may write to.
struct Setup {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    db: PathBuf,
    out: PathBuf,
    mhdb: PathBuf,
    stored: BTreeMap<String, Vec<u8>>,
}

fn setup() -> Setup {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().to_path_buf();
    chmod(&root, 0o755);
    let db = root.join("db");
    let stored = build(&db);
    // The writer's lock file is not part of what is shipped.
    let _ = std::fs::remove_file(db.join("LOCK"));
    for entry in std::fs::read_dir(&db).unwrap() {
        chmod(&entry.unwrap().path(), 0o444);
    }
    chmod(&db, 0o555);
    let out = root.join("out");
    std::fs::create_dir(&out).unwrap();
    chmod(&out, 0o777);
    let mhdb = root.join("mhdb");
    std::fs::copy(env!("CARGO_BIN_EXE_mhdb"), &mhdb).unwrap();
    chmod(&mhdb, 0o755);
    Setup {
        _tmp: tmp,
        root,
        db,
        out,
        mhdb,
        stored,
    }
}

fn skip(why: &str) {
    println!("SKIPPED: {why}");
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// Checks what the commands wrote, and that the database did not change.
fn check(s: &Setup, before: &(Listing, SystemTime), run: &Output) {
    assert!(
        run.status.success(),
        "a read command failed: {}{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
    let read = |name: &str| std::fs::read_to_string(s.out.join(name)).unwrap();
    let mut keys: Vec<String> = read("keys").lines().map(str::to_owned).collect();
    keys.sort();
    let expected: Vec<String> = s.stored.keys().cloned().collect();
    assert_eq!(keys, expected);
    let mut exported: Vec<String> = read("export-keys").lines().map(str::to_owned).collect();
    exported.sort();
    assert_eq!(exported, expected, "the export holds the live documents");
    assert!(read("query").contains("doc-7"), "{}", read("query"));
    assert!(read("query-jsonl").contains("doc-7"));
    assert!(read("verify").starts_with("ok"), "{}", read("verify"));
    let stats: serde_json::Value = serde_json::from_str(&read("stats")).unwrap();
    assert_eq!(stats["live_docs"], s.stored.len());
    assert_eq!(&listing(&s.db), before, "the database directory changed");
}

#[test]
fn read_commands_work_as_an_unprivileged_user_and_change_nothing() {
    if !is_root() {
        return skip("not root: cannot make a root-owned copy and drop to another user");
    }
    let s = setup();
    let before = listing(&s.db);
    let run = Command::new("setpriv")
        .args([
            "--reuid",
            NOBODY,
            "--regid",
            NOBODY,
            "--clear-groups",
            "sh",
            "-e",
            "-c",
        ])
        .arg(read_commands(&s.mhdb))
        .env("DB", &s.db)
        .env("OUT", &s.out)
        .output();
    let run = match run {
        Ok(out) => out,
        Err(e) => panic!("running as root, yet setpriv could not run: {e}"),
    };
    // The user really could not write there (else this test proves nothing).
    let probe = Command::new("setpriv")
        .args([
            "--reuid",
            NOBODY,
            "--regid",
            NOBODY,
            "--clear-groups",
            "touch",
        ])
        .arg(s.db.join("probe"))
        .output()
        .unwrap();
    assert!(
        !probe.status.success(),
        "the unprivileged user can write the database"
    );
    check(&s, &before, &run);
}

#[test]
fn read_commands_work_on_a_read_only_mount_and_change_nothing() {
    if !is_root() {
        return skip("not root: cannot mount");
    }
    let s = setup();
    let mount = s.root.join("mnt");
    std::fs::create_dir(&mount).unwrap();
    let before = listing(&s.db);
    // A private mount namespace: the bind mount vanishes with the shell.
    let script = format!(
        "mount --bind \"$SRC\" \"$DB\" && mount -o remount,bind,ro \"$DB\" || exit 97\n\
         touch \"$DB/probe\" 2>/dev/null && exit 98\n\
         exec setpriv --reuid {NOBODY} --regid {NOBODY} --clear-groups sh -e -c '{}'",
        read_commands(&s.mhdb).replace('\'', "'\\''")
    );
    let run = Command::new("unshare")
        .args(["--mount", "--propagation", "private", "sh", "-c"])
        .arg(script)
        .env("SRC", &s.db)
        .env("DB", &mount)
        .env("OUT", &s.out)
        .output()
        .unwrap();
    match run.status.code() {
        Some(97) => panic!(
            "running as root, yet bind-mounting read-only was refused: {}",
            String::from_utf8_lossy(&run.stderr).trim()
        ),
        Some(98) => panic!("the read-only mount is writable"),
        _ if String::from_utf8_lossy(&run.stderr).contains("unshare failed") => panic!(
            "running as root, yet no mount namespace: {}",
            String::from_utf8_lossy(&run.stderr).trim()
        ),
        _ => {}
    }
    check(&s, &before, &run);
}
