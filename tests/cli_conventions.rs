//! Every `mhdb` command follows one convention: `--json` on every command that prints a result,
//! with one shape per kind of result (`query --text --json` prints what each line of `query
//! --jsonl` prints, `keys --json` what `dedup --format drop --json` prints, `create --json`
//! the `params` of `stats --json`); results on stdout and messages on stderr; exit codes 0, 1,
//! 2, 3 as `mhdb --help` lists them (`get` exits 1 for an absent key in text and JSON mode
//! alike); one validator per parameter (thresholds in (0, 1] for every command); `create`
//! refuses a non-empty directory and warns about a banding with P(threshold) < 0.5; `stats`
//! names parameters as the flags do; numeric JSON ids are refused naming file and line; a
//! text without shingles is similar to nothing. Bad input is a clear error, never a panic.

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use common::cli::{
    damage_a_segment, database_of, family_docs, family_text, json_lines, ok, run, run_with_stdin,
    s, success, write_corpus,
};
use serde_json::Value;

/// A database of 100 documents in families of ten, keyed `doc-N`, at threshold 0.7.
fn families(dir: &Path) -> PathBuf {
    database_of(dir, &family_docs(100))
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Runs a command with --json: it succeeds and prints JSON lines only.
fn json(args: &[&str]) -> Vec<Value> {
    let mut all = args.to_vec();
    all.push("--json");
    json_lines(&success(run(&all), &format!("mhdb {all:?}")))
}

#[test]
fn every_result_has_json_and_one_shape_per_kind() {
    let dir = tempfile::tempdir().unwrap();
    let db = families(dir.path());
    let p = dir.path();

    // Parameters: `create --json` prints the `params` of `stats --json`.
    let fresh = p.join("fresh");
    let created = json(&["create", s(&fresh), "--threshold", "0.7"]);
    assert_eq!(created.len(), 1);
    let stats = json(&["stats", s(&fresh)]);
    assert_eq!(created[0]["params"], stats[0]["params"]);
    assert_eq!(created[0]["created"], s(&fresh));
    assert!(created[0]["probability_at_threshold"].as_f64().unwrap() >= 0.95);

    // A query's answer: the same object from --text --json, --file --json and --jsonl, up to
    // the query's own id.
    let text = family_text(42);
    let by_text = json(&["query", s(&db), "--text", &text])[0].clone();
    assert_eq!(by_text["id"], Value::Null);
    let file = p.join("q.txt");
    std::fs::write(&file, &text).unwrap();
    let by_file = json(&["query", s(&db), "--file", s(&file)])[0].clone();
    assert_eq!(by_file["id"], s(&file));
    let jsonl = p.join("q.jsonl");
    let line = serde_json::json!({"id": {"any": ["json"]}, "text": text});
    std::fs::write(&jsonl, format!("{line}\n")).unwrap();
    let by_jsonl = json_lines(&success(
        run(&["query", s(&db), "--jsonl", s(&jsonl)]),
        "query --jsonl",
    ));
    assert_eq!(by_jsonl[0]["id"], serde_json::json!({"any": ["json"]}));
    for mut other in [by_file, by_jsonl[0].clone()] {
        other["id"] = Value::Null;
        assert_eq!(other, by_text);
    }
    let keys_of =
        |v: &Value| -> BTreeSet<String> { v.as_object().unwrap().keys().cloned().collect() };
    assert_eq!(
        keys_of(&by_text),
        ["candidates", "hot_buckets", "id", "matches", "verified"]
            .map(String::from)
            .into()
    );
    assert_eq!(
        by_text["matches"][0],
        serde_json::json!({"id": "doc-42", "jaccard": 1.0})
    );
    // --json with --jsonl changes nothing.
    assert_eq!(json(&["query", s(&db), "--jsonl", s(&jsonl)]), by_jsonl);

    // A key list: `keys --json` and `dedup --format drop --json` print {"id"} per line.
    for v in json(&["keys", s(&db)]) {
        assert_eq!(keys_of(&v), ["id".to_string()].into());
    }
    let drop = json(&["dedup", s(&db), "--format", "drop"]);
    assert_eq!(drop.len(), 90);
    for v in &drop {
        assert_eq!(keys_of(v), ["id".to_string()].into());
    }
    // Pairs and clusters are JSON Lines with or without --json.
    let pairs = json(&["dedup", s(&db)]);
    assert_eq!(
        pairs,
        json_lines(&success(run(&["dedup", s(&db)]), "dedup"))
    );
    assert_eq!(
        keys_of(&pairs[0]),
        ["a", "b", "jaccard"].map(String::from).into()
    );
    let clusters = json(&["dedup", s(&db), "--format", "clusters"]);
    assert_eq!(clusters.len(), 10);
    assert_eq!(
        keys_of(&clusters[0]),
        ["duplicates", "keep"].map(String::from).into()
    );
    // `demo --json` pairs have the pair shape.
    let texts = p.join("texts");
    std::fs::create_dir(&texts).unwrap();
    for i in [0u64, 1, 50] {
        std::fs::write(texts.join(format!("t{i}.txt")), family_text(i)).unwrap();
    }
    let demo = json(&["demo", s(&texts), "--threshold", "0.7"]);
    assert_eq!(demo[0]["documents"], 3);
    let demo_pairs = demo[0]["pairs"].as_array().unwrap();
    assert_eq!(demo_pairs.len(), 1);
    assert_eq!(keys_of(&demo_pairs[0]), keys_of(&pairs[0]));
    assert_eq!(demo_pairs[0]["a"], "t0.txt");

    // Every other command that prints a result.
    let get = json(&["get", s(&db), "doc-1"]);
    assert_eq!(get[0]["id"], "doc-1");
    assert_eq!(get[0]["present"], true);
    assert_eq!(get[0]["signature"].as_array().unwrap().len(), 512);
    let tune = json(&["tune", "--threshold", "0.8"]);
    assert_eq!(tune[0]["choices"].as_array().unwrap().len(), 5);
    assert_eq!(tune[0]["s_curve"].as_array().unwrap().len(), 19);
    // Six decimals at most, the similarities too (0.15, not 0.15000000000000002).
    for point in tune[0]["s_curve"].as_array().unwrap() {
        let j = point["jaccard"].as_f64().unwrap();
        assert!(point["jaccard"].to_string().len() <= 8, "{point}");
        assert_eq!(j, (j * 1e6).round() / 1e6);
    }
    let verify = json(&["verify", s(&db)]);
    assert_eq!(verify[0]["ok"], true);
    assert_eq!(verify[0]["problems"], serde_json::json!([]));
    let deleted = json(&["delete", s(&db), "doc-1", "doc-1", "no-such-key"]);
    assert_eq!(deleted, [serde_json::json!({"deleted": 1, "requested": 2})]);
    let compacted = json(&["compact", s(&db)]);
    assert_eq!(
        compacted,
        [serde_json::json!({"live_docs": 99, "segments": 1})]
    );
    let shipped = p.join("shipped");
    let exported = json(&["export", s(&db), s(&shipped)]);
    assert_eq!(exported, [serde_json::json!({"exported": s(&shipped)})]);
    let merged = json(&["merge", s(&p.join("merged")), s(&db)]);
    assert_eq!(merged[0]["merged"], 99);
    assert_eq!(merged[0]["sources"][0]["documents"], 99);
    let added = run_with_stdin(
        &["add", s(&db), "-", "--json"],
        b"{\"id\": \"new\", \"text\": \"a new document\"}\n",
    );
    assert_eq!(
        json_lines(&success(added, "add --json")),
        [serde_json::json!({"committed": 1, "last_id": "new"})]
    );
}

#[test]
fn results_on_stdout_messages_on_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let db = families(dir.path());
    let p = dir.path();
    // Write commands print no result without --json: what they did goes to stderr.
    let data = p.join("more.jsonl");
    write_corpus(&data, &[(b"more".to_vec(), family_text(500))]);
    let checks: [(Vec<String>, &str); 6] = [
        (vec!["create".into(), s(&p.join("new")).into()], "created"),
        (
            vec!["add".into(), s(&db).into(), s(&data).into()],
            "added 1",
        ),
        (
            vec!["delete".into(), s(&db).into(), "more".into()],
            "deleted 1 of 1",
        ),
        (vec!["compact".into(), s(&db).into()], "compacted"),
        (
            vec!["export".into(), s(&db).into(), s(&p.join("e")).into()],
            "exported",
        ),
        (
            vec!["merge".into(), s(&p.join("m")).into(), s(&db).into()],
            "merged 100",
        ),
    ];
    for (args, said) in checks {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = run(&args);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        assert!(out.stdout.is_empty(), "{args:?} printed on stdout");
        assert!(stderr(&out).contains(said), "{args:?}: {}", stderr(&out));
    }
    // Read commands print their result on stdout and, off a terminal, nothing on stderr
    // (summaries of dedup aside).
    for args in [
        vec!["keys", s(&db)],
        vec!["stats", s(&db)],
        vec!["verify", s(&db)],
        vec!["get", s(&db), "doc-3"],
        vec!["query", s(&db), "--text", "fam3w1 fam3w2 fam3w3"],
        vec!["tune", "--threshold", "0.8"],
    ] {
        let out = run(&args);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        assert!(out.stderr.is_empty(), "{args:?}: {}", stderr(&out));
    }
    let out = run(&["dedup", s(&db), "--format", "drop"]);
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 90);
    assert_eq!(stderr(&out), "mhdb: 10 clusters at J ≥ 0.7\n");
}

#[test]
fn exit_codes_are_documented_and_kept() {
    let help = ok(&["--help"]);
    for line in [
        "Exit codes:",
        "  0  success",
        "  1  failure",
        "  2  usage",
        "  3  corruption",
    ] {
        assert!(help.contains(line), "mhdb --help lacks {line:?}");
    }
    for cmd in ["create", "add", "query", "get", "delete", "merge", "verify"] {
        assert!(
            ok(&[cmd, "--help"]).contains("Exit codes:"),
            "{cmd} --help lists no exit codes"
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let db = families(dir.path());
    // get: 1 for an absent key in text and JSON mode alike, with a message; 0 when all are
    // present.
    for json in [false, true] {
        let mut args = vec!["get", s(&db), "doc-1", "nope"];
        if json {
            args.push("--json");
        }
        let out = run(&args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert_eq!(stderr(&out), "mhdb: 1 of 2 keys absent\n");
        assert_eq!(String::from_utf8(out.stdout).unwrap().lines().count(), 2);
        args.retain(|a| *a != "nope");
        assert_eq!(run(&args).status.code(), Some(0), "{args:?}");
    }
    // 1: a missing database, a bad input line; 2: usage.
    let missing = dir.path().join("missing");
    assert_eq!(run(&["stats", s(&missing)]).status.code(), Some(1));
    assert_eq!(run(&["keys", s(&missing)]).status.code(), Some(1));
    assert_eq!(run(&["query", s(&db), "--bogus"]).status.code(), Some(2));
    assert_eq!(run(&["query", s(&db)]).status.code(), Some(2));
    assert_eq!(run(&["delete", s(&db)]).status.code(), Some(2));
    assert_eq!(run(&["get", s(&db), "bad\\escape"]).status.code(), Some(2));
    // A bad query line: the lines before it are answered, the error names file and line.
    let q = dir.path().join("q.jsonl");
    let good = serde_json::json!({"id": "q", "text": family_text(3)});
    std::fs::write(&q, format!("{good}\n\n{good}\n{{\"id\": \"x\"}}\n{good}\n")).unwrap();
    let out = run(&["query", s(&db), "--jsonl", s(&q)]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(json_lines(&out.stdout).len(), 2);
    assert_eq!(
        stderr(&out),
        format!("mhdb: {}:4: missing field \"text\"\n", s(&q))
    );
    std::fs::write(&q, b"{\"id\": 1, \"text\": \"\xff\"}\n").unwrap();
    let out = run(&["query", s(&db), "--jsonl", s(&q)]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains(":1: not UTF-8"), "{}", stderr(&out));
    assert!(!stderr(&out).contains("panicked"));
    // 3: corruption.
    damage_a_segment(&db);
    let out = run(&["verify", s(&db), "--json"]);
    assert_eq!(out.status.code(), Some(3));
    let report = &json_lines(&out.stdout)[0];
    assert_eq!(report["ok"], false);
    assert_eq!(report["problems"][0]["corruption"], true);
}

#[test]
fn thresholds_are_validated_alike_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    let db = families(dir.path());
    let texts = dir.path().join("texts");
    std::fs::create_dir(&texts).unwrap();
    let fresh = dir.path().join("fresh");
    let commands: [Vec<&str>; 5] = [
        vec!["query", s(&db), "--text", "x"],
        vec!["dedup", s(&db)],
        vec!["create", s(&fresh)],
        vec!["tune"],
        vec!["demo", s(&texts)],
    ];
    for cmd in &commands {
        for bad in ["0", "1.5", "-0.2", "NaN", "inf", "high"] {
            let mut args = cmd.clone();
            args.extend(["--threshold", bad]);
            let out = run(&args);
            assert_eq!(out.status.code(), Some(2), "{args:?}");
            assert!(
                stderr(&out).contains("must be") && stderr(&out).contains("(0, 1]"),
                "{args:?}: {}",
                stderr(&out)
            );
        }
        let mut args = cmd.clone();
        args.extend(["--threshold", "1"]);
        let out = run(&args);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    }
}

#[test]
fn create_refuses_non_empty_directories_and_warns_about_weak_bandings() {
    let dir = tempfile::tempdir().unwrap();
    let full = dir.path().join("full");
    std::fs::create_dir(&full).unwrap();
    std::fs::write(full.join("notes.txt"), "keep me").unwrap();
    let out = run(&["create", s(&full)]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("is not empty"), "{}", stderr(&out));
    let names: Vec<_> = std::fs::read_dir(&full).unwrap().collect();
    assert_eq!(names.len(), 1, "create touched a non-empty directory");
    // An existing database is refused the same way; an empty directory is fine.
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    ok(&["create", s(&empty)]);
    let out = run(&["create", s(&empty)]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("already holds an mhdb database"));

    // The tuned banding: no warning. 2 bands × 60 rows at 0.8: P = 0.0000, accepted with one.
    let out = run(&["create", s(&dir.path().join("tuned"))]);
    assert!(!stderr(&out).contains("warning"), "{}", stderr(&out));
    let weak = dir.path().join("weak");
    for args in [
        vec!["create", s(&weak), "--bands", "2", "--rows", "60"],
        vec!["tune", "--threshold", "0.8", "--bands", "2", "--rows", "60"],
    ] {
        let out = run(&args);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(
            err.contains("mhdb: warning: 2 bands × 60 rows") && err.contains("P(0.8) = 0.0000"),
            "{args:?}: {err}"
        );
    }
    assert_eq!(json(&["stats", s(&weak)])[0]["params"]["bands"], 2);
    let out = run(&["tune", "--threshold", "0.8"]);
    assert!(out.stderr.is_empty(), "{}", stderr(&out));
}

#[test]
fn stats_names_parameters_as_the_flags_do() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("idx");
    ok(&[
        "create",
        s(&db),
        "--perms",
        "64",
        "--bits",
        "16",
        "--shingle",
        "word:3",
        "--seed",
        "7",
        "--scheme",
        "kperm",
        "--nfkc",
        "--bucket-cap",
        "500",
        "--threshold",
        "0.6",
    ]);
    let params = json(&["stats", s(&db)])[0]["params"].clone();
    let create_help = ok(&["create", "--help"]);
    for (name, _) in params.as_object().unwrap() {
        if name == "spec_version" {
            continue;
        }
        let flag = format!("--{}", name.replace('_', "-"));
        assert!(
            create_help.contains(&flag),
            "stats names {name}, create has no {flag}"
        );
    }
    assert_eq!(params["perms"], 64);
    assert_eq!(params["seed"], 7);
    assert_eq!(params["shingle"], "word:3");
    assert_eq!(params["bucket_cap"], 500);
    // The text form is the flags themselves: they make the same database again.
    let text = ok(&["stats", s(&db)]);
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix("parameters"))
        .unwrap()
        .trim();
    let again = dir.path().join("again");
    let mut args = vec!["create", s(&again)];
    args.extend(line.split(' '));
    ok(&args);
    assert_eq!(json(&["stats", s(&again)])[0]["params"], params);
}

#[test]
fn ids_are_strings_and_empty_texts_match_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("idx");
    ok(&["create", s(&db)]);
    let data = dir.path().join("ids.jsonl");
    // Numbers are refused, naming file and line: `1` and `"1"` never become one key, and
    // `1e3` never becomes "1000.0".
    for number in ["1", "1e3", "-0", "1.0", "18446744073709551616"] {
        std::fs::write(
            &data,
            format!("{{\"id\": \"fine\", \"text\": \"one document\"}}\n{{\"id\": {number}, \"text\": \"another document\"}}\n"),
        )
        .unwrap();
        let out = run(&["add", s(&db), s(&data), "--on-duplicate", "skip"]);
        assert_eq!(out.status.code(), Some(1), "{number}");
        let err = stderr(&out);
        let (cause, note) = err.split_once('\n').unwrap();
        assert_eq!(
            cause,
            format!(
                "mhdb: {}:2: field \"id\" must be a string, got a number (keys are text: quote \
                 the id, \"17\" rather than 17)",
                s(&data)
            )
        );
        // Then what was added before it.
        assert!(note.starts_with("mhdb: added "), "{err}");
        assert!(note.contains(" before stopping"), "{err}");
        let gone = run_with_stdin(
            &["delete", s(&db), "--jsonl", "-"],
            format!("{{\"id\": {number}}}\n").as_bytes(),
        );
        assert_eq!(gone.status.code(), Some(1));
        assert!(stderr(&gone).contains("<stdin>:1: field \"id\" must be a string"));
    }
    assert_eq!(ok(&["keys", s(&db)]), "fine\n");
    // Strings and {"hex"} are keys.
    std::fs::write(
        &data,
        "{\"id\": \"1\", \"text\": \"the string one\"}\n{\"id\": {\"hex\": \"31ff\"}, \"text\": \"hex bytes\"}\n",
    )
    .unwrap();
    ok(&["add", s(&db), s(&data)]);
    let mut keys: Vec<String> = ok(&["keys", s(&db)]).lines().map(String::from).collect();
    keys.sort();
    assert_eq!(keys, ["1", "1\\xff", "fine"]);

    // Empty texts: `add` refuses them as invalid lines (skipped with --skip-invalid), a query
    // for one finds nothing, demo pairs no empty file.
    let texts = [("e1", ""), ("e2", "   \t\n "), ("real", "a real text")];
    let lines: String = texts
        .iter()
        .map(|(id, t)| format!("{}\n", serde_json::json!({"id": id, "text": t})))
        .collect();
    std::fs::write(&data, &lines).unwrap();
    let out = run(&["add", s(&db), s(&data)]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains(&format!("{}:1: the text has no shingles", s(&data))),
        "{}",
        stderr(&out)
    );
    let out = run(&["add", s(&db), s(&data), "--skip-invalid"]);
    assert!(out.status.success());
    assert!(stderr(&out).contains(":2: the text has no shingles"));
    assert!(stderr(&out).contains("added 1 document (2 invalid skipped"));
    let files = dir.path().join("files");
    std::fs::create_dir(&files).unwrap();
    std::fs::write(files.join("empty.txt"), "").unwrap();
    std::fs::write(files.join("blank.txt"), "\n\n").unwrap();
    let out = run(&["add", s(&db), "--files", s(&files)]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("blank.txt: the text has no shingles"));
    for q in ["", "  \n"] {
        let answer = json(&["query", s(&db), "--text", q, "--threshold", "1"]);
        assert_eq!(answer[0]["matches"], serde_json::json!([]));
    }
    let answer = run_with_stdin(
        &["query", s(&db), "--jsonl", "-"],
        b"{\"id\": 1, \"text\": \"\"}\n{\"id\": 2, \"text\": \"a real text\"}\n",
    );
    let answer = json_lines(&success(answer, "query --jsonl - with an empty text"));
    assert_eq!(answer[0]["matches"], serde_json::json!([]));
    assert_eq!(answer[1]["matches"][0]["id"], "real");
    let demo = json(&["demo", s(&files), "--threshold", "0.5"]);
    assert_eq!(demo[0]["documents"], 2);
    assert_eq!(demo[0]["pairs"], serde_json::json!([]));
}

/// `add`'s words for what went wrong: a non-hex `{"hex": …}` id is blamed on its digits, a
/// JSON array line on being an array, `--commit-every 0` is refused, one document is one
/// document, and the summary of what was added comes after the cause.
#[test]
fn add_names_what_went_wrong_before_what_it_did() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    let db = db.to_str().unwrap();
    common::cli::ok(&["create", db]);
    let add = |stdin: &str, extra: &[&str]| {
        let mut args = vec!["add", db, "-"];
        args.extend_from_slice(extra);
        let out = common::cli::run_with_stdin(&args, stdin.as_bytes());
        (out.status.code(), String::from_utf8(out.stderr).unwrap())
    };
    let (code, err) = add(
        "{\"id\": {\"hex\": \"zz\"}, \"text\": \"some words here\"}\n",
        &[],
    );
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("must hold only hex digits"), "{err}");
    assert!(!err.contains("even number"), "{err}");
    let (code, err) = add("[\"id\", \"text\"]\n", &[]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("<stdin>:1: the line holds an array"), "{err}");
    let (code, err) = add("", &["--commit-every", "0"]);
    assert_eq!(code, Some(2), "{err}");
    let (code, err) = add("{\"id\": \"a\", \"text\": \"one short document\"}\n", &[]);
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("added 1 document ("), "{err}");
    let two = "{\"id\": \"b\", \"text\": \"another document\"}\n{\"id\": 7, \"text\": \"x\"}\n";
    let (code, err) = add(two, &[]);
    assert_eq!(code, Some(1), "{err}");
    let lines: Vec<&str> = err.lines().collect();
    let cause = lines
        .iter()
        .position(|l| l.contains("must be a string, got a number"));
    let summary = lines
        .iter()
        .position(|l| l.contains("added 1 document before stopping"));
    assert!(
        matches!((cause, summary), (Some(c), Some(s)) if c < s),
        "{err}"
    );
}

/// `tune` names and defaults its slot flags as `create` does: `--perms` is all the slots
/// (512 by default), the bands cover `--band-slots` (128 by default, or fewer for fewer
/// slots), and its first choice is the banding `create` picks for the same flags.
#[test]
fn tune_takes_the_slot_flags_of_create() {
    let dir = tempfile::tempdir().unwrap();
    for (flags, band_slots) in [
        (vec![], 128),
        (vec!["--perms", "512"], 128),
        (vec!["--perms", "64"], 64),
        (vec!["--perms", "256", "--band-slots", "256"], 256),
    ] {
        let mut args = vec!["tune", "--threshold", "0.7"];
        args.extend(&flags);
        let tune = json(&args);
        assert_eq!(tune[0]["band_slots"], band_slots, "{flags:?}");
        let db = dir.path().join(format!("db{}", flags.join("")));
        let mut create = vec!["create", s(&db), "--threshold", "0.7"];
        create.extend(&flags);
        ok(&create);
        let params = &json(&["stats", s(&db)])[0]["params"];
        assert_eq!(params["band_slots"], band_slots, "{flags:?}");
        let first = &tune[0]["choices"][0];
        assert_eq!(
            (&first["bands"], &first["rows"]),
            (&params["bands"], &params["rows"]),
            "{flags:?}"
        );
    }
}
