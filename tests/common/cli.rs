//! Driving the `mhdb` binary the way a user does: arguments, standard input, shell pipes; the
//! corpus the CLI tests load; and an independent reader and writer of the documented key
//! escaping (README "Keys in text and JSON"), so that the tests check the binary against the
//! documentation rather than against its own code.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::Value;

/// The `mhdb` binary Cargo built for the integration tests (looked up at run time, so that
/// the test files that do not run it compile without it).
pub fn bin_path() -> &'static str {
    match option_env!("CARGO_BIN_EXE_mhdb") {
        Some(path) => path,
        None => panic!("the mhdb binary was not built for these tests"),
    }
}

/// `mhdb` with `args`.
pub fn mhdb(args: &[&str]) -> Command {
    let mut c = Command::new(bin_path());
    c.args(args);
    c
}

/// Runs `mhdb args`, standard input empty.
pub fn run(args: &[&str]) -> Output {
    run_with_stdin(args, b"")
}

/// Runs `mhdb args` with `stdin` as its standard input.
pub fn run_with_stdin(args: &[&str], stdin: &[u8]) -> Output {
    let mut child = mhdb(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run mhdb");
    let mut pipe = child.stdin.take().unwrap();
    // Written from another thread: a child that answers as it reads fills its stdout pipe
    // while we are still writing.
    let input = stdin.to_vec();
    let writer = std::thread::spawn(move || {
        // A child that stops reading early (an error) closes the pipe: not our failure.
        let _ = pipe.write_all(&input);
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    out
}

/// Asserts that `out` succeeded and returns its stdout.
pub fn success(out: Output, what: &str) -> Vec<u8> {
    assert!(
        out.status.success(),
        "{what} failed ({:?}): {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// Runs `mhdb args`, asserts success, returns stdout as text.
pub fn ok(args: &[&str]) -> String {
    String::from_utf8(success(run(args), &format!("mhdb {args:?}"))).unwrap()
}

/// Runs `script` in bash with `set -o pipefail`, `$MHDB` naming the binary and `$1`, `$2`, …
/// the `args`.
pub fn shell(script: &str, args: &[&str]) -> Output {
    Command::new("bash")
        .arg("-c")
        .arg(format!("set -euo pipefail\n{script}"))
        .arg("bash")
        .args(args)
        .env("MHDB", bin_path())
        .output()
        .expect("run bash")
}

/// Every line of `stdout` parsed as JSON (panics on a line that is not).
pub fn json_lines(stdout: &[u8]) -> Vec<Value> {
    String::from_utf8(stdout.to_vec())
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l:?}")))
        .collect()
}

/// `p` as an argument.
pub fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Texts in families of ten near-duplicates: the family (`i / 10`) decides every word but one.
pub fn family_text(i: u64) -> String {
    let family = i / 10;
    (0..60)
        .map(|w| {
            if w == (i % 10) as usize * 6 {
                format!("edit{i}")
            } else {
                format!("fam{family}w{w}")
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// `n` documents keyed `doc-0`, `doc-1`, … with [`family_text`]s.
pub fn family_docs(n: u64) -> Vec<(Vec<u8>, String)> {
    (0..n)
        .map(|i| (format!("doc-{i}").into_bytes(), family_text(i)))
        .collect()
}

/// A database `dir/idx` at threshold 0.7 holding `docs`, loaded by `mhdb add` from
/// `dir/corpus.jsonl`.
pub fn database_of(dir: &Path, docs: &[(Vec<u8>, String)]) -> std::path::PathBuf {
    let db = dir.join("idx");
    let data = dir.join("corpus.jsonl");
    write_corpus(&data, docs);
    ok(&["create", s(&db), "--threshold", "0.7"]);
    ok(&["add", s(&db), s(&data)]);
    db
}

/// Flips a byte of one of `db`'s segment files, as a disk might.
pub fn damage_a_segment(db: &Path) {
    let seg = std::fs::read_dir(db)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "seg"))
        .expect("a segment file");
    let mut bytes = std::fs::read(&seg).unwrap();
    bytes[200] ^= 0xFF;
    std::fs::write(&seg, bytes).unwrap();
}

/// Keys that break line formats, and ordinary ones that must print unchanged.
pub fn odd_keys() -> Vec<Vec<u8>> {
    let keys: [&[u8]; 16] = [
        b"two\nlines",
        b"nul\0byte",
        b"cr\r and tab\t",
        b"back\\slash",
        b"\\n is not a newline",
        b"trailing backslash\\",
        b"\xff\xfe not UTF-8",
        b"cut \xe6\x9d",
        b"\x1b[31mred\x7f",
        b"-",
        b" ",
        b"",
        b"\r\n",
        "naïve café 東京".as_bytes(),
        b"1",
        b"{\"hex\": \"00\"}",
    ];
    keys.iter().map(|k| k.to_vec()).collect()
}

/// `key` as README says JSON carries it: a string if UTF-8, else `{"hex": …}`.
pub fn key_json(key: &[u8]) -> Value {
    match std::str::from_utf8(key) {
        Ok(s) => Value::String(s.to_string()),
        Err(_) => {
            let hex: String = key.iter().map(|b| format!("{b:02x}")).collect();
            serde_json::json!({ "hex": hex })
        }
    }
}

/// A key read back from its JSON form.
pub fn key_from_json(v: &Value) -> Vec<u8> {
    match v {
        Value::String(s) => s.as_bytes().to_vec(),
        Value::Object(o) => {
            let hex = o["hex"].as_str().unwrap();
            (0..hex.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
                .collect()
        }
        other => panic!("not a key: {other}"),
    }
}

/// One line of text output read back as README documents the escaping.
pub fn unescape(line: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < line.len() {
        if line[i] != b'\\' {
            out.push(line[i]);
            i += 1;
            continue;
        }
        let (byte, len) = match line[i + 1] {
            b'\\' => (b'\\', 2),
            b'n' => (b'\n', 2),
            b'r' => (b'\r', 2),
            b't' => (b'\t', 2),
            b'0' => (0, 2),
            b'x' => {
                let hex = std::str::from_utf8(&line[i + 2..i + 4]).unwrap();
                (u8::from_str_radix(hex, 16).unwrap(), 4)
            }
            e => panic!("undocumented escape \\{}", e as char),
        };
        out.push(byte);
        i += len;
    }
    out
}

/// The keys of line-oriented text output (one escaped key per line).
pub fn key_lines(stdout: &[u8]) -> Vec<Vec<u8>> {
    let mut lines: Vec<&[u8]> = stdout.split(|&b| b == b'\n').collect();
    // The last line ends with a newline: nothing follows it.
    assert_eq!(
        lines.pop(),
        Some(&b""[..]),
        "output must end with a newline"
    );
    lines.into_iter().map(unescape).collect()
}

/// Writes a JSON Lines corpus of `(key, text)` records with ids in their JSON form.
pub fn write_corpus(path: &Path, docs: &[(Vec<u8>, String)]) {
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    for (key, text) in docs {
        let line = serde_json::json!({"id": key_json(key), "text": text});
        writeln!(f, "{line}").unwrap();
    }
    f.flush().unwrap();
}
