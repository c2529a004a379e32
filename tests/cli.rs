//! End-to-end tests of the `mhdb` binary: every command, its JSON output, its exit codes
//! (0 ok, 1 failure, 2 usage, 3 corruption), bad inputs reported with file and line, and a
//! kill -9 during `mhdb add --json` after which a second `add --on-duplicate skip` completes
//! the load with every document present exactly once.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Output, Stdio};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_mhdb"))
}

fn run(args: &[&str]) -> Output {
    bin().args(args).output().expect("run mhdb")
}

fn ok(args: &[&str]) -> String {
    let out = run(args);
    assert!(
        out.status.success(),
        "mhdb {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Families of ten near-duplicates: the family decides most words.
fn text(i: u64) -> String {
    common::cli::family_text(i)
}

fn corpus(path: &Path, n: u64) {
    let mut f = std::fs::File::create(path).unwrap();
    for i in 0..n {
        writeln!(f, "{}", serde_json::json!({"id": key(i), "text": text(i)})).unwrap();
    }
}

fn key(i: u64) -> String {
    if i.is_multiple_of(2) {
        i.to_string()
    } else {
        format!("doc-{i}")
    }
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn create_add_query_dedup_delete_compact_stats_verify() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("idx");
    let data = dir.path().join("corpus.jsonl");
    corpus(&data, 200);
    ok(&["create", s(&db), "--threshold", "0.7"]);
    let out = ok(&["add", s(&db), s(&data), "--json", "--commit-every", "50"]);
    let lines: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 4, "{out}");
    assert_eq!(lines[3]["committed"], 200);
    assert_eq!(lines[3]["last_id"], "doc-199");

    // Query by text: the family of document 42 (40..50) comes back, 42 itself first.
    let out = ok(&["query", s(&db), "--text", &text(42), "--json"]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let ids: Vec<&str> = v["matches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids[0], "42");
    assert!(ids.len() >= 5 && ids.len() <= 10, "{ids:?}");
    assert!(ids.iter().all(|id| {
        let n: u64 = id.trim_start_matches("doc-").parse().unwrap();
        (40..50).contains(&n)
    }));

    // JSONL queries: one result line per query line, in order.
    let queries = dir.path().join("q.jsonl");
    std::fs::write(
        &queries,
        format!(
            "{}\n{}\n",
            serde_json::json!({"id": "q1", "text": text(7)}),
            serde_json::json!({"id": "q2", "text": "nothing like the corpus at all"})
        ),
    )
    .unwrap();
    let out = ok(&["query", s(&db), "--jsonl", s(&queries), "--limit", "3"]);
    let res: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(res.len(), 2);
    assert_eq!(res[0]["id"], "q1");
    assert_eq!(res[0]["matches"].as_array().unwrap().len(), 3);
    assert!(res[1]["matches"].as_array().unwrap().is_empty());

    // get / keys.
    // A missing key: reported, and the exit code is 1 (like grep finding nothing).
    let out = run(&["get", s(&db), "7", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["present"], false); // 7 is odd: its key is doc-7
    let out = ok(&["get", s(&db), "doc-7", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["signature"].as_array().unwrap().len(), 512);
    assert_eq!(ok(&["keys", s(&db)]).lines().count(), 200);

    // dedup: pairs are within families, each unordered pair once.
    let out = ok(&["dedup", s(&db)]);
    let mut pairs = std::collections::HashSet::new();
    for l in out.lines() {
        let v: serde_json::Value = serde_json::from_str(l).unwrap();
        let a = v["a"]
            .as_str()
            .unwrap()
            .trim_start_matches("doc-")
            .parse::<u64>()
            .unwrap();
        let b = v["b"]
            .as_str()
            .unwrap()
            .trim_start_matches("doc-")
            .parse::<u64>()
            .unwrap();
        assert_eq!(a / 10, b / 10, "pair across families: {l}");
        assert!(pairs.insert((a.min(b), a.max(b))), "pair twice: {l}");
        assert!(v["jaccard"].as_f64().unwrap() >= 0.7);
    }
    assert!(
        pairs.len() >= 200,
        "expected most in-family pairs, got {}",
        pairs.len()
    );
    let out = ok(&["dedup", s(&db), "--format", "clusters"]);
    assert_eq!(out.lines().count(), 20, "{out}");
    let drop = ok(&["dedup", s(&db), "--format", "drop"]);
    assert_eq!(drop.lines().count(), 180);

    // delete by key and by JSONL.
    ok(&["delete", s(&db), "0", "doc-1"]);
    let gone = dir.path().join("gone.jsonl");
    std::fs::write(&gone, "{\"id\": \"2\"}\n{\"id\": \"doc-3\"}\n").unwrap();
    ok(&["delete", s(&db), "--jsonl", s(&gone)]);
    assert_eq!(ok(&["keys", s(&db)]).lines().count(), 196);

    ok(&["compact", s(&db)]);
    let st: serde_json::Value = serde_json::from_str(&ok(&["stats", s(&db), "--json"])).unwrap();
    assert_eq!(st["live_docs"], 196);
    assert_eq!(st["segments"], 1);
    // The default shape: 512 slots of 4 bits, bands over the first 128.
    assert_eq!(st["params"]["perms"], 512);
    assert_eq!(st["params"]["bits"], 4);
    assert_eq!(st["params"]["band_slots"], 128);
    assert!(st["expected_recall_at_threshold"].as_f64().unwrap() >= 0.95);
    assert!(ok(&["stats", s(&db)]).contains("documents"));
    assert!(ok(&["verify", s(&db)]).starts_with("ok"));

    // Damage a segment byte: verify exits 3 and names the file.
    common::cli::damage_a_segment(&db);
    let out = run(&["verify", s(&db)]);
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains(".seg"));
}

#[test]
fn export_and_merge() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b, m, e) = (
        dir.path().join("a"),
        dir.path().join("b"),
        dir.path().join("m"),
        dir.path().join("exported"),
    );
    let (da, db) = (dir.path().join("a.jsonl"), dir.path().join("b.jsonl"));
    corpus(&da, 60);
    // Shard b: other documents, plus one key also in a (the later source wins).
    let mut f = std::fs::File::create(&db).unwrap();
    for i in 100..140u64 {
        writeln!(
            f,
            "{}",
            serde_json::json!({"id": format!("b{i}"), "text": text(i)})
        )
        .unwrap();
    }
    writeln!(f, "{}", serde_json::json!({"id": "0", "text": text(130)})).unwrap();
    drop(f);
    for (d, data) in [(&a, &da), (&b, &db)] {
        ok(&["create", s(d)]);
        ok(&["add", s(d), s(data)]);
    }
    ok(&["merge", s(&m), s(&a), s(&b)]);
    assert_eq!(ok(&["keys", s(&m)]).lines().count(), 100);
    let out = ok(&["query", s(&m), "--text", &text(130), "--json"]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let ids: Vec<&str> = v["matches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert!(ids.contains(&"0") && ids.contains(&"b130"), "{ids:?}");
    // Mismatched parameters are refused.
    let c = dir.path().join("c");
    ok(&["create", s(&c), "--perms", "64"]);
    let out = run(&["merge", s(&m), s(&c)]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("num_perm"));
    // A mismatched later source is found before anything is merged: a new DEST is not even
    // created, an existing one is unchanged, and the message names the source.
    let fresh = dir.path().join("fresh");
    let out = run(&["merge", s(&fresh), s(&a), s(&c)]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("cannot merge {}", c.display()))
            && err.contains("num_perm")
            && err.contains("nothing was merged"),
        "{err}"
    );
    assert!(!fresh.exists());
    let before = ok(&["stats", s(&m), "--json"]);
    let out = run(&["merge", s(&m), s(&a), s(&c)]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert_eq!(ok(&["stats", s(&m), "--json"]), before);

    ok(&["export", s(&m), s(&e)]);
    let st: serde_json::Value = serde_json::from_str(&ok(&["stats", s(&e), "--json"])).unwrap();
    assert_eq!(st["live_docs"], 100);
    assert!(ok(&["verify", s(&e)]).starts_with("ok"));
    let names: Vec<String> = std::fs::read_dir(&e)
        .unwrap()
        .map(|x| x.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(!names.iter().any(|n| n.starts_with("wal-")), "{names:?}");
}

#[test]
fn bad_inputs_give_clear_errors_and_exit_codes() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("idx");
    // Missing database: not found, exit code 1 (as documented; it used to be 2).
    let out = run(&["stats", s(&db)]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("no such database (the directory does not exist)")
    );
    // A directory that holds no database is named as such.
    std::fs::create_dir(&db).unwrap();
    let out = run(&["stats", s(&db)]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not an mhdb database"));
    std::fs::remove_dir(&db).unwrap();
    // Wrong parameters.
    let out = run(&["create", s(&db), "--bits", "3"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("bits"));
    let out = run(&["create", s(&db), "--threshold", "1.5"]);
    assert_eq!(out.status.code(), Some(2));
    let out = run(&["create", s(&db), "--bands", "40", "--rows", "4"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("bands"));
    ok(&["create", s(&db)]);
    let out = run(&["create", s(&db)]);
    assert!(!out.status.success());
    // Unknown flag: usage error, no panic.
    let out = run(&["query", s(&db), "--bogus"]);
    assert_eq!(out.status.code(), Some(2));
    // A recall outside (0, 1), or on an index that is not a containment index.
    for (recall, says) in [("1.0", "(0, 1)"), ("0.9", "not a containment index")] {
        let out = run(&["query", s(&db), "--text", "a text", "--recall", recall]);
        assert_eq!(out.status.code(), Some(2), "--recall {recall}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(says), "{err}");
    }

    // Malformed JSONL: the bad line is named; lines before it stay committed.
    let data = dir.path().join("bad.jsonl");
    std::fs::write(
        &data,
        "{\"id\": \"1\", \"text\": \"alpha beta gamma\"}\n{\"id\": \"2\", \"text\": \"delta\"}\nnot json\n{\"id\": \"4\"}\n{\"id\": \"5\", \"text\": \"epsilon\"}\n",
    )
    .unwrap();
    let out = run(&["add", s(&db), s(&data)]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad.jsonl:3"), "{err}");
    assert_eq!(ok(&["keys", s(&db)]).lines().count(), 2);
    let out = run(&["add", s(&db), s(&data), "--skip-invalid"]);
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("bad.jsonl:4") && err.contains("missing field"),
        "{err}"
    );
    assert_eq!(ok(&["keys", s(&db)]).lines().count(), 3);
    // The JSON parser's position is a column of the named line (its own "line 1" is not).
    assert!(
        err.contains("bad.jsonl:3: invalid JSON at column 2:"),
        "{err}"
    );
    assert!(!err.contains("at line 1"), "{err}");
    // A key longer than a database holds is an invalid line like any other: named, the lines
    // before it committed, skipped with --skip-invalid.
    let long = dir.path().join("long.jsonl");
    std::fs::write(
        &long,
        format!(
            "{{\"id\": \"ok1\", \"text\": \"zeta eta theta\"}}\n{{\"id\": \"{}\", \"text\": \"iota\"}}\n{{\"id\": \"ok3\", \"text\": \"kappa lambda\"}}\n",
            "k".repeat(mhdb::db::MAX_KEY_LEN + 1)
        ),
    )
    .unwrap();
    let out = run(&["add", s(&db), s(&long)]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!(
            "long.jsonl:2: field \"id\" is {} bytes long, at most {} allowed",
            mhdb::db::MAX_KEY_LEN + 1,
            mhdb::db::MAX_KEY_LEN
        )),
        "{err}"
    );
    assert_eq!(ok(&["keys", s(&db)]).lines().count(), 4);
    let out = run(&["add", s(&db), s(&long), "--skip-invalid"]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(ok(&["keys", s(&db)]).lines().count(), 5);
    // A UTF-8 byte-order mark before the first line is not part of the record.
    let bom = dir.path().join("bom.jsonl");
    std::fs::write(
        &bom,
        b"\xEF\xBB\xBF{\"id\": \"b1\", \"text\": \"mu nu xi omicron\"}\r\n",
    )
    .unwrap();
    ok(&["add", s(&db), s(&bom)]);
    assert!(ok(&["keys", s(&db)]).lines().any(|k| k == "b1"));
    // Non-UTF-8 line.
    std::fs::write(&data, b"{\"id\": 9, \"text\": \"\xff\xfe\"}\n").unwrap();
    let out = run(&["add", s(&db), s(&data)]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("not UTF-8"));
    // --on-duplicate error names the line.
    std::fs::write(&data, "{\"id\": \"1\", \"text\": \"again\"}\n").unwrap();
    let out = run(&["add", s(&db), s(&data), "--on-duplicate", "error"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("bad.jsonl:1"));

    // A locked database.
    let held = mhdb::db::Db::open(&db, mhdb::db::Options::default()).unwrap();
    let out = run(&["add", s(&db), s(&data)]);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("locked"),
        "{out:?}"
    );
    drop(held);

    // A database written by a newer format version.
    let current = std::fs::read(db.join("CURRENT")).unwrap();
    let generation = u64::from_le_bytes(current[12..20].try_into().unwrap());
    let man_path = db.join(format!("MANIFEST-{generation:016x}"));
    let mut man = std::fs::read(&man_path).unwrap();
    man[8..12].copy_from_slice(&99u32.to_le_bytes());
    let n = man.len();
    let crc = crc32fast::hash(&man[..n - 4]);
    man[n - 4..].copy_from_slice(&crc.to_le_bytes());
    std::fs::write(&man_path, &man).unwrap();
    let mut cur = current.clone();
    cur[28..32].copy_from_slice(&crc32fast::hash(&man).to_le_bytes());
    let c = crc32fast::hash(&cur[..32]);
    cur[32..36].copy_from_slice(&c.to_le_bytes());
    std::fs::write(db.join("CURRENT"), &cur).unwrap();
    let out = run(&["stats", s(&db)]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("version 99"), "{err}");
    assert!(!err.contains("panicked"));
}

#[test]
fn every_command_has_help_with_an_example() {
    for cmd in [
        "create", "add", "query", "get", "keys", "dedup", "delete", "compact", "stats", "verify",
        "export", "merge", "tune", "demo",
    ] {
        let out = ok(&[cmd, "--help"]);
        assert!(out.contains("Example"), "{cmd} --help lacks an example");
    }
    let out = ok(&["tune", "--threshold", "0.8"]);
    assert!(out.contains("S-curve") && out.contains("bands"));
}

#[test]
fn kill_during_add_then_resume_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("idx");
    let data = dir.path().join("big.jsonl");
    let n = 60_000u64;
    corpus(&data, n);
    ok(&["create", s(&db)]);
    let mut child = bin()
        .args(["add", s(&db), s(&data), "--json", "--commit-every", "500"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Kill once 3000 documents are acknowledged; a progress line printed before the kill
    // acknowledges its commit even if it was still in the pipe.
    let mut acknowledged = 0u64;
    common::process::read_then_kill(&mut child, |line| {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        acknowledged = v["committed"].as_u64().unwrap();
        acknowledged < 3000
    });
    assert!(
        acknowledged >= 500,
        "no commit was acknowledged before the kill"
    );
    // Every acknowledged document is there.
    let keys: std::collections::HashSet<String> =
        ok(&["keys", s(&db)]).lines().map(String::from).collect();
    for i in 0..acknowledged {
        assert!(
            keys.contains(&key(i)),
            "acknowledged document {} lost",
            key(i)
        );
    }
    // Resume: skip what is present; at the end every document is present exactly once.
    ok(&["add", s(&db), s(&data), "--on-duplicate", "skip"]);
    let all = ok(&["keys", s(&db)]);
    let keys: Vec<&str> = all.lines().collect();
    assert_eq!(keys.len() as u64, n);
    let unique: std::collections::HashSet<&str> = keys.iter().copied().collect();
    assert_eq!(unique.len() as u64, n);
    assert!(ok(&["verify", s(&db)]).starts_with("ok"));
}

/// A reader that stops early (`mhdb keys idx | head`) ends the command quietly: exit 0, no
/// panic, no "Broken pipe" message. (`mhdb stats` used to panic there.)
#[test]
fn closed_stdout_ends_quietly() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let data = dir.path().join("docs.jsonl");
    let mut f = std::fs::File::create(&data).unwrap();
    for i in 0..20_000u64 {
        writeln!(
            f,
            "{{\"id\": \"key-{i}\", \"text\": \"document {i} {}\"}}",
            text(i)
        )
        .unwrap();
    }
    drop(f);
    let db_s = db.to_str().unwrap();
    ok(&["create", db_s]);
    ok(&["add", db_s, data.to_str().unwrap()]);
    for args in [
        vec!["keys", db_s],
        vec!["stats", db_s],
        vec!["stats", db_s, "--json"],
        vec!["dedup", db_s],
        vec!["tune", "--threshold", "0.8"],
    ] {
        // Read one line (or none: the pipe is closed at once), then close the pipe.
        let mut child = bin()
            .args(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        if args[0] == "keys" {
            let mut first = String::new();
            BufReader::new(stdout).read_line(&mut first).unwrap();
            assert!(first.starts_with("key-"), "{first:?}");
        } else {
            drop(stdout);
        }
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "mhdb {args:?}: {stderr}");
        assert!(
            !stderr.contains("panicked") && !stderr.contains("Broken pipe"),
            "mhdb {args:?}: {stderr}"
        );
    }
}

/// Output that cannot be written (standard output or standard error on a full disk:
/// `/dev/full`) is not taken for a database failure: a full stdout is exit 1 with a message
/// that says the output failed and the committed write stays, a full stderr changes nothing
/// (no panic, exit code 101); either way the write is committed.
#[test]
fn full_output_is_not_a_database_failure() {
    if !Path::new("/dev/full").exists() {
        eprintln!("SKIPPED: no /dev/full");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let data = dir.path().join("docs.jsonl");
    corpus(&data, 50);
    let db_s = db.to_str().unwrap();
    ok(&["create", db_s]);
    ok(&["add", db_s, data.to_str().unwrap()]);
    let full = || std::fs::OpenOptions::new().write(true).open("/dev/full");
    // stdout full: the delete is done, the output is what failed.
    let out = bin()
        .args(["delete", db_s, &key(1), "--json"])
        .stdout(full().unwrap())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("cannot write to standard output: No space left on device")
            && stderr.contains("what the command committed stays committed"),
        "{stderr}"
    );
    // stderr full: success, as if it were not there.
    let out = bin()
        .args(["delete", db_s, &key(2)])
        .stderr(full().unwrap())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let more = dir.path().join("more.jsonl");
    std::fs::write(
        &more,
        "{\"id\": \"new-1\", \"text\": \"a new text of a few words\"}\n",
    )
    .unwrap();
    let out = bin()
        .args(["add", db_s, more.to_str().unwrap()])
        .stdout(full().unwrap())
        .stderr(full().unwrap())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    for k in [key(1), key(2)] {
        let out = run(&["get", db_s, &k]);
        assert_eq!(out.status.code(), Some(1), "{k} should be deleted");
    }
    assert_eq!(run(&["get", db_s, "new-1"]).status.code(), Some(0));
}

/// A query or dedup threshold below the one the bands were tuned for is answered, with a
/// warning that pairs there are found only with the bands' chance; top-k (which probes
/// further) and higher thresholds are not warned about.
#[test]
fn a_threshold_below_the_tuning_is_warned() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("idx");
    ok(&["create", s(&db)]);
    let stderr = |args: &[&str]| {
        let out = run(args);
        assert!(out.status.success(), "{args:?}: {out:?}");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let warned = "were tuned for J ≥ 0.8: a pair at J = 0.5 becomes a candidate with probability";
    assert!(
        stderr(&[
            "query",
            s(&db),
            "--text",
            "some words",
            "--threshold",
            "0.5"
        ])
        .contains(warned)
    );
    assert!(stderr(&["dedup", s(&db), "--threshold", "0.5"]).contains(warned));
    let quiet = [
        "query",
        s(&db),
        "--text",
        "some words",
        "--threshold",
        "0.9",
    ];
    assert!(stderr(&quiet).is_empty());
    let top = [
        "query",
        s(&db),
        "--text",
        "w",
        "--top",
        "3",
        "--threshold",
        "0.5",
    ];
    assert!(!stderr(&top).contains("tuned for"));
    // tune checks the slots as create does.
    let out = run(&["tune", "--threshold", "0.8", "--perms", "100000"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("must be in 1..=8192"));
    // --store-sets bands short of P(t) >= 0.99 are said at create.
    let sets = dir.path().join("sets");
    let out = run(&["create", s(&sets), "--store-sets", "--threshold", "0.01"]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("with --store-sets the bands"));
    // Zero matches asked for is a usage error, not an empty answer.
    for flag in ["--top", "--limit"] {
        let out = run(&["query", s(&db), "--text", "w", flag, "0"]);
        assert_eq!(out.status.code(), Some(2), "{flag}: {out:?}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("at least 1"));
    }
}
