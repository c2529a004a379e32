//! `mhdb serve` as a client sees it: the server runs as a child process on a free loopback
//! port (it prints the address it bound first thing, which the test reads: no sleeping until
//! it is up), and the test speaks HTTP/1.1 over a plain TCP stream. Every endpoint answers in
//! the shape the CLI prints; bad requests get JSON errors; the bounds hold; a read-only
//! server follows a writer process; shards served as one index answer as `mhdb query` over
//! them answers, and follow writers shard by shard; concurrent insert-if-novel clients never
//! store two near-duplicates; SIGTERM finishes what was acknowledged. Nothing asserts on timing: where
//! the test waits for the server to do something, it polls with a generous deadline.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::cli::{database_of, family_docs, family_text, mhdb, ok, s, write_corpus};
use mhdb::db::Db;
use serde_json::{Value, json};

/// How long the test waits for the server to do what it must (it normally takes
/// milliseconds; this only bounds a hang).
const PATIENCE: Duration = Duration::from_secs(60);

/// A running `mhdb serve`, killed when dropped.
struct Server {
    child: Child,
    addr: String,
}

impl Server {
    fn start(db: &Path, flags: &[&str]) -> Server {
        Self::start_with(db, flags, |_| {})
    }

    fn start_with(
        db: &Path,
        flags: &[&str],
        env: impl FnOnce(&mut std::process::Command),
    ) -> Server {
        Self::launch(&[db], flags, env)
    }

    /// A server over every path of `dbs` (one database, shards, or glob patterns).
    fn launch(
        dbs: &[&Path],
        flags: &[&str],
        env: impl FnOnce(&mut std::process::Command),
    ) -> Server {
        let mut cmd = mhdb(&["serve", "--listen", "127.0.0.1:0"]);
        cmd.args(dbs)
            .args(flags)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        env(&mut cmd);
        let mut child = cmd.spawn().expect("start mhdb serve");
        let mut first = String::new();
        BufReader::new(child.stdout.as_mut().unwrap())
            .read_line(&mut first)
            .unwrap();
        let addr = first
            .trim()
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("the server's first line: {first:?}"))
            .to_string();
        Server { child, addr }
    }

    fn request(&self, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Reply {
        request(&self.addr, method, path, headers, body)
    }

    fn post(&self, path: &str, body: &Value) -> Reply {
        self.request("POST", path, &[], body.to_string().as_bytes())
    }

    fn get(&self, path: &str) -> Reply {
        self.request("GET", path, &[], b"")
    }

    /// Sends SIGTERM and waits for the server to end: its exit status and stderr.
    fn terminate(mut self) -> (std::process::ExitStatus, String) {
        signal_term(self.child.id());
        let status = self.child.wait().unwrap();
        let mut err = String::new();
        self.child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut err)
            .unwrap();
        (status, err)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn signal_term(pid: u32) {
    let status = std::process::Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

/// An HTTP answer.
#[derive(Debug)]
struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Reply {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!("{e}: {}", String::from_utf8_lossy(&self.body));
        })
    }

    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// Asserts an error answer: its status and kind; its message.
    fn error(&self, status: u16, kind: &str) -> String {
        assert_eq!(
            self.status,
            status,
            "{}",
            String::from_utf8_lossy(&self.body)
        );
        let v = self.json();
        assert_eq!(v["kind"], kind, "{v}");
        v["error"].as_str().unwrap().to_string()
    }
}

/// One request on its own connection (`Connection: close`); the whole answer.
fn request(addr: &str, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Reply {
    let mut stream = TcpStream::connect(addr).unwrap();
    send_head(&mut stream, method, path, headers, body.len());
    stream.write_all(body).unwrap();
    read_reply(stream)
}

fn send_head(
    stream: &mut TcpStream,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    len: usize,
) {
    stream
        .write_all(head(method, path, headers, len).as_bytes())
        .unwrap();
}

/// A request's head, for a body of `len` bytes.
fn head(method: &str, path: &str, headers: &[(&str, &str)], len: usize) -> String {
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: test\r\nConnection: close\r\nContent-Length: {len}\r\n"
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    head
}

fn read_reply(mut stream: TcpStream) -> Reply {
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).unwrap();
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a full head");
    let head = String::from_utf8(raw[..split].to_vec()).unwrap();
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers: Vec<(String, String)> = lines
        .map(|l| {
            let (n, v) = l.split_once(':').unwrap();
            (n.trim().to_string(), v.trim().to_string())
        })
        .collect();
    let mut body = raw[split + 4..].to_vec();
    let chunked = headers
        .iter()
        .any(|(n, v)| n.eq_ignore_ascii_case("transfer-encoding") && v.contains("chunked"));
    if chunked {
        body = dechunk(&body);
    }
    Reply {
        status,
        headers,
        body,
    }
}

/// A chunked body's data.
fn dechunk(mut raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let eol = raw.windows(2).position(|w| w == b"\r\n").unwrap();
        let size =
            usize::from_str_radix(std::str::from_utf8(&raw[..eol]).unwrap().trim(), 16).unwrap();
        if size == 0 {
            return out;
        }
        out.extend_from_slice(&raw[eol + 2..eol + 2 + size]);
        raw = &raw[eol + 4 + size..];
    }
}

/// Whether the server has answered (or closed) `stream` yet, without waiting.
fn answered(stream: &TcpStream) -> bool {
    stream.set_nonblocking(true).unwrap();
    let peeked = stream.peek(&mut [0u8; 1]);
    stream.set_nonblocking(false).unwrap();
    match peeked {
        Ok(_) => true,
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => false,
        Err(e) => panic!("{e}"),
    }
}

fn json_lines(bytes: &[u8]) -> Vec<Value> {
    common::cli::json_lines(bytes)
}

/// A database of 60 documents in families of ten near-duplicates.
fn family_db(dir: &Path) -> PathBuf {
    database_of(dir, &family_docs(60))
}

#[test]
fn read_endpoints_answer_as_the_cli_prints() {
    let dir = tempfile::tempdir().unwrap();
    let db = family_db(dir.path());
    let server = Server::start(&db, &[]);
    assert_eq!(server.get("/health").json(), json!({"ok": true}));

    let text = family_text(13);
    let cli: Value =
        serde_json::from_str(&ok(&["query", s(&db), "--text", &text, "--json"])).unwrap();
    let answer = server.post("/query", &json!({"text": text}));
    assert_eq!(answer.status, 200);
    assert_eq!(answer.header("content-type"), Some("application/json"));
    assert_eq!(answer.json(), cli);
    assert_eq!(cli["matches"].as_array().unwrap().len(), 10, "{cli}");

    // Top-k and a limit, as the flags give them; a query by signature as by its text.
    let top = ok(&["query", s(&db), "--text", &text, "--top", "3", "--json"]);
    let top: Value = serde_json::from_str(&top).unwrap();
    assert_eq!(
        server
            .post("/query", &json!({"text": text, "top": 3}))
            .json(),
        top
    );
    let limited = server
        .post("/query", &json!({"id": "q", "text": text, "limit": 2}))
        .json();
    assert_eq!(limited["id"], "q");
    assert_eq!(
        limited["matches"],
        json!(cli["matches"].as_array().unwrap()[..2])
    );
    let sig = Db::open_read_only(&db).unwrap().sketch_text(&text).unwrap();
    let by_sig = server
        .post("/query", &json!({"signature": sig.slots()}))
        .json();
    assert_eq!(by_sig, cli);

    // A batch: the answers `query --jsonl` prints, in input order (blank lines skipped).
    let queries: Vec<Value> = (0..150)
        .map(|i| json!({"id": format!("q{i}"), "text": family_text(i * 7 % 60)}))
        .collect();
    let mut jsonl = String::new();
    for q in &queries {
        jsonl.push_str(&format!("{q}\n\n"));
    }
    let file = dir.path().join("queries.jsonl");
    std::fs::write(&file, &jsonl).unwrap();
    let expected = json_lines(ok(&["query", s(&db), "--jsonl", s(&file)]).as_bytes());
    let batch = server.request("POST", "/query_batch", &[], jsonl.as_bytes());
    assert_eq!(batch.status, 200);
    assert_eq!(batch.header("content-type"), Some("application/x-ndjson"));
    assert_eq!(json_lines(&batch.body), expected);
    assert_eq!(expected.len(), 150);

    let stats: Value = serde_json::from_str(&ok(&["stats", s(&db), "--json"])).unwrap();
    assert_eq!(server.get("/stats").json(), stats);

    let metrics = String::from_utf8(server.get("/metrics").body).unwrap();
    for line in [
        "mhdb_requests_total{endpoint=\"/query\",status=\"200\"} 4",
        "mhdb_requests_total{endpoint=\"/query_batch\",status=\"200\"} 1",
        "mhdb_queries_total 154",
        "mhdb_live_documents 60",
        "mhdb_request_duration_seconds_count{endpoint=\"/query\"} 4",
    ] {
        assert!(
            metrics.lines().any(|l| l == line),
            "{line} not in\n{metrics}"
        );
    }
    let candidates = metrics
        .lines()
        .find_map(|l| l.strip_prefix("mhdb_query_candidates_total "))
        .unwrap();
    assert!(candidates.parse::<u64>().unwrap() >= 154 * 10, "{metrics}");
}

/// A containment index is served as the CLI answers it: a paragraph's containing documents
/// with their containment and Jaccard, one query and a batch.
#[test]
fn containment_queries_answer_as_the_cli_prints() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("idx");
    let data = dir.path().join("corpus.jsonl");
    let docs: Vec<(Vec<u8>, String)> = family_docs(40)
        .into_iter()
        .map(|(k, t)| (k, format!("{t} {}", family_text(100 + t.len() as u64 % 7))))
        .collect();
    write_corpus(&data, &docs);
    ok(&[
        "create",
        s(&db),
        "--metric",
        "containment",
        "--threshold",
        "0.7",
    ]);
    ok(&["add", s(&db), s(&data)]);
    let server = Server::start(&db, &[]);
    let paragraph: String = family_text(13)
        .split(' ')
        .take(30)
        .collect::<Vec<_>>()
        .join(" ");
    // The CLI's JSON answer to the paragraph at containment 0.8, with `more` flags.
    let cli_answer = |more: &[&str]| -> Value {
        let mut args = vec![
            "query",
            s(&db),
            "--text",
            &paragraph,
            "--containment",
            "0.8",
        ];
        args.extend_from_slice(more);
        args.push("--json");
        serde_json::from_str(&ok(&args)).unwrap()
    };
    let cli = cli_answer(&[]);
    assert!(!cli["matches"].as_array().unwrap().is_empty(), "{cli}");
    assert!(
        cli["matches"][0]["containment"].as_f64().unwrap() >= 0.8,
        "{cli}"
    );
    let answer = server.post("/query", &json!({"text": paragraph, "containment": 0.8}));
    assert_eq!(answer.json(), cli);
    let line = json!({"id": "p", "text": paragraph, "containment": 0.8}).to_string();
    let batch = server.request("POST", "/query_batch", &[], line.as_bytes());
    let mut expected = cli.clone();
    expected["id"] = json!("p");
    assert_eq!(json_lines(&batch.body), vec![expected]);
    // A wanted recall is served as the CLI answers it too.
    let cli_wide = cli_answer(&["--recall", "0.95"]);
    let wide = server.post(
        "/query",
        &json!({"text": paragraph, "containment": 0.8, "recall": 0.95}),
    );
    assert_eq!(wide.json(), cli_wide);
    assert!(
        cli_wide["matches"].as_array().unwrap().len() >= cli["matches"].as_array().unwrap().len()
    );
}

/// The durations of a `Server-Timing` header, by name, in milliseconds.
fn server_timing(reply: &Reply) -> BTreeMap<String, f64> {
    let header = reply
        .header("server-timing")
        .expect("a Server-Timing header");
    header
        .split(',')
        .map(|part| {
            let (name, dur) = part.trim().split_once(";dur=").unwrap();
            (name.to_string(), dur.parse().unwrap())
        })
        .collect()
}

#[test]
fn queries_answer_alike_in_place_and_on_the_pool_and_say_where_their_time_went() {
    let dir = tempfile::tempdir().unwrap();
    let db = family_db(dir.path());
    let server = Server::start(&db, &[]);
    // A short text is answered in place; one over 64 KiB is signed and answered on the
    // blocking pool.
    let long = vec![family_text(13); 150].join(" ");
    assert!(long.len() > 64 << 10);
    for text in [family_text(13), long] {
        let cli: Value =
            serde_json::from_str(&ok(&["query", s(&db), "--text", &text, "--json"])).unwrap();
        let answer = server.post("/query", &json!({"text": text}));
        assert_eq!(answer.json(), cli, "{} bytes", text.len());
        assert!(!cli["matches"].as_array().unwrap().is_empty(), "{cli}");
        let timing = server_timing(&answer);
        assert_eq!(timing.len(), 2, "{timing:?}");
        assert!(timing["lib"] <= timing["total"], "{timing:?}");
    }
    let health = server_timing(&server.get("/health"));
    assert_eq!(health.keys().collect::<Vec<_>>(), ["total"]);
}

#[test]
fn a_query_past_its_deadline_is_a_504_as_a_timeout_is_and_health_still_answers() {
    let dir = tempfile::tempdir().unwrap();
    let db = family_db(dir.path());
    // The body of the guard's own timeout: a request whose body never comes.
    let plain = Server::start(&db, &["--timeout-ms", "1000"]);
    let mut holder = TcpStream::connect(&plain.addr).unwrap();
    send_head(&mut holder, "POST", "/query", &[], 100);
    let timed_out = read_reply(holder);
    assert!(timed_out.error(504, "timeout").contains("--timeout-ms"));
    drop(plain);

    // Every /query finds its deadline passed, as a query that ends after its timeout does:
    // in place (a short text, a signature, top-k) and on the pool (a long text).
    let server = Server::start_with(&db, &["--timeout-ms", "1000"], |cmd| {
        cmd.env("MHDB_TEST_EXPIRED_DEADLINES", "1");
    });
    let text = family_text(13);
    let sig = Db::open_read_only(&db).unwrap().sketch_text(&text).unwrap();
    let long = vec![text.clone(); 150].join(" ");
    for body in [
        json!({"text": text}),
        json!({"text": text, "top": 3}),
        json!({"signature": sig.slots()}),
        json!({"text": long}),
    ] {
        let late = server.post("/query", &body);
        assert_eq!(late.status, 504, "{}", String::from_utf8_lossy(&late.body));
        assert_eq!(late.json(), timed_out.json());
    }
    assert_eq!(server.get("/health").json(), json!({"ok": true}));
    // The server answers everything else as usual.
    assert_eq!(server.get("/stats").status, 200);
    let metrics = String::from_utf8(server.get("/metrics").body).unwrap();
    assert!(
        metrics
            .lines()
            .any(|l| l == "mhdb_requests_total{endpoint=\"/query\",status=\"504\"} 4"),
        "{metrics}"
    );
}

#[test]
fn bad_requests_get_json_errors_saying_what_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let db = family_db(dir.path());
    let server = Server::start(&db, &["--max-body-bytes", "2000", "--max-batch", "3"]);
    let malformed = server.request("POST", "/query", &[], b"{\n\"text\": nope}");
    assert!(malformed.error(400, "usage").contains("line 2 column"));
    let bad_line = server.request(
        "POST",
        "/query_batch",
        &[],
        b"{\"text\": \"a b\"}\n{\"text\"\n",
    );
    let message = bad_line.error(400, "usage");
    assert!(message.starts_with("line 2: malformed JSON"), "{message}");
    for (body, says) in [
        (json!({"txt": "a"}), "unknown field \"txt\""),
        (json!({"text": "a", "threshold": 1.5}), "(0, 1]"),
        (json!({"text": "a", "top": 0}), "at least 1"),
        (json!({"text": "a", "top": 2, "limit": 2}), "not both"),
        (
            json!({"text": "a", "containment": 0.5, "threshold": 0.5}),
            "not both",
        ),
        (json!({"text": "a", "containment": 1.5}), "(0, 1]"),
        (json!({"text": "a", "recall": 1.0}), "(0, 1)"),
        (
            json!({"text": "a", "recall": "high"}),
            "\"recall\" must be a number",
        ),
        (
            json!({"text": "a b c d e f", "containment": 0.5}),
            "not a containment index",
        ),
        (json!({"signature": [1, 2, 3]}), "3 slots"),
        (json!({}), "give \"text\" or \"signature\""),
    ] {
        let message = server.post("/query", &body).error(400, "usage");
        assert!(message.contains(says), "{body}: {message}");
    }
    let long = json!({"text": "x".repeat(3000)});
    let message = server.post("/query", &long).error(413, "too_large");
    assert!(message.contains("2000 bytes"), "{message}");
    let batch = "{\"text\": \"a b\"}\n".repeat(4);
    let message = server
        .request("POST", "/query_batch", &[], batch.as_bytes())
        .error(413, "too_large");
    assert!(message.contains("more than 3 queries"), "{message}");
    let message = server
        .post("/insert", &json!({"id": "a", "text": "a b"}))
        .error(403, "read_only");
    assert!(message.contains("--writer"), "{message}");
    server.get("/nowhere").error(404, "not_found");
    server.get("/query").error(405, "usage");
}

#[test]
fn the_token_guards_every_endpoint_but_health() {
    let dir = tempfile::tempdir().unwrap();
    let db = family_db(dir.path());
    let token_file = dir.path().join("token");
    std::fs::write(&token_file, "s3cret-token\n").unwrap();
    let server = Server::start(&db, &["--token-file", s(&token_file)]);
    assert_eq!(server.get("/health").status, 200);
    let query = br#"{"text": "a b c d e f"}"#;
    for (path, method) in [("/query", "POST"), ("/stats", "GET"), ("/metrics", "GET")] {
        let none = server.request(method, path, &[], query);
        assert!(none.error(401, "unauthorized").contains("Bearer"));
        let wrong = [("Authorization", "Bearer s3cret-tokem")];
        server
            .request(method, path, &wrong, query)
            .error(401, "unauthorized");
        let right = [("Authorization", "Bearer s3cret-token")];
        assert_eq!(
            server.request(method, path, &right, query).status,
            200,
            "{path}"
        );
    }
    let (status, stderr) = server.terminate();
    assert!(status.success(), "{stderr}");
    assert!(!stderr.contains("warning"), "{stderr}");
}

#[test]
fn listening_beyond_loopback_without_a_token_warns() {
    let dir = tempfile::tempdir().unwrap();
    let db = family_db(dir.path());
    let mut child = mhdb(&["serve", s(&db), "--listen", "0.0.0.0:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.as_mut().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert!(first.starts_with("listening on 0.0.0.0:"), "{first}");
    signal_term(child.id());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("warning: listening on 0.0.0.0:") && stderr.contains("--token-file"),
        "{stderr}"
    );
}

#[test]
fn a_keyed_index_without_its_key_does_not_start() {
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("key");
    std::fs::write(&key, "ab".repeat(32)).unwrap();
    let db = dir.path().join("keyed");
    ok(&["create", s(&db), "--key-file", s(&key)]);
    let out = mhdb(&["serve", s(&db), "--listen", "127.0.0.1:0"])
        .env_remove("MHDB_KEY_FILE")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty(), "it never listened");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("cannot serve") && stderr.contains("MHDB_KEY_FILE"),
        "{stderr}"
    );
    // With its key it serves.
    let server = Server::start_with(&db, &[], |c| {
        c.env("MHDB_KEY_FILE", &key);
    });
    assert_eq!(
        server
            .post("/query", &json!({"text": "a b c d e f"}))
            .status,
        200
    );
}

#[test]
fn writes_answer_in_the_cli_shapes() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("idx");
    ok(&["create", s(&db), "--threshold", "0.7"]);
    let server = Server::start(&db, &["--writer"]);
    let docs: Vec<Value> = (0..20)
        .map(|i| json!({"id": format!("d{i}"), "text": family_text(i * 10)}))
        .collect();
    assert_eq!(
        server.post("/insert", &json!(docs)).json(),
        json!({"committed": 20})
    );
    assert_eq!(
        server
            .post(
                "/insert",
                &json!({"id": {"hex": "ff00"}, "text": family_text(900)})
            )
            .json(),
        json!({"committed": 1})
    );
    let empty = server.post(
        "/insert",
        &json!([{"id": "e1", "text": "x y z w v u"}, {"id": "e", "text": "  "}]),
    );
    assert!(
        empty
            .error(400, "usage")
            .starts_with("document 1: the text has no shingles")
    );
    let dup = server
        .post(
            "/insert_if_novel",
            &json!({"id": "n", "text": family_text(31)}),
        )
        .json();
    assert_eq!(dup["inserted"], false);
    assert_eq!(dup["matches"][0]["id"], "d3", "{dup}");
    assert!(dup["matches"][0]["jaccard"].as_f64().unwrap() >= 0.7);
    let many = server.post(
        "/insert_if_novel",
        &json!([{"id": "n1", "text": family_text(2000)}, {"id": "n2", "text": family_text(2001)}]),
    );
    let many = many.json();
    assert_eq!(many[0], json!({"inserted": true}));
    assert_eq!(many[1]["inserted"], false);
    assert_eq!(many[1]["matches"][0]["id"], "n1");
    let mixed = server.post("/insert_if_novel", &json!([{"id": "a", "text": "p q r s t u v", "threshold": 0.9}, {"id": "b", "text": "p q r s t u w"}]));
    assert!(mixed.error(400, "usage").contains("checked alike"));
    let deleted = server.post(
        "/delete",
        &json!([{"id": "d0"}, {"id": "d0"}, {"id": "absent"}]),
    );
    assert_eq!(deleted.json(), json!({"deleted": 1, "requested": 2}));
    let stats = server.get("/stats").json();
    assert_eq!(stats["live_docs"], 21, "{stats}");
    let metrics = String::from_utf8(server.get("/metrics").body).unwrap();
    for line in [
        "mhdb_commits_total 5",
        "mhdb_documents_inserted_total 22",
        "mhdb_duplicates_skipped_total 2",
        "mhdb_documents_deleted_total 1",
    ] {
        assert!(
            metrics.lines().any(|l| l == line),
            "{line} not in\n{metrics}"
        );
    }
}

/// Variant `v` of cluster `c`: 200 words, of which variant v ≥ 1 changes word 7v. Any two
/// variants of a cluster are near-duplicates (word 2-gram Jaccard ≥ 0.96); two clusters
/// share nothing.
fn variant(c: u64, v: u64) -> String {
    (0..200)
        .map(|w| {
            if v > 0 && w == v * 7 {
                format!("changed{c}x{v}")
            } else {
                format!("c{c}w{w}")
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn concurrent_insert_if_novel_clients_never_store_two_near_duplicates() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("idx");
    ok(&[
        "create",
        s(&db),
        "--shingle",
        "word:2",
        "--threshold",
        "0.8",
    ]);
    let server = Arc::new(Server::start(&db, &["--writer"]));
    const CLUSTERS: u64 = 12;
    const CLIENTS: u64 = 6;
    // Client t inserts variant t of every cluster, in its own order.
    let outcomes: Arc<Mutex<Vec<(String, Value)>>> = Arc::default();
    let threads: Vec<_> = (0..CLIENTS)
        .map(|t| {
            let (server, outcomes) = (server.clone(), outcomes.clone());
            std::thread::spawn(move || {
                for i in 0..CLUSTERS {
                    // A permutation of the clusters per client: multipliers prime to 12.
                    let c = (i * [1, 5, 7, 11][t as usize % 4] + t) % CLUSTERS;
                    let key = format!("c{c}v{t}");
                    let answer = server.post(
                        "/insert_if_novel",
                        &json!({"id": key, "text": variant(c, t)}),
                    );
                    assert_eq!(
                        answer.status,
                        200,
                        "{:?}",
                        String::from_utf8_lossy(&answer.body)
                    );
                    outcomes.lock().unwrap().push((key, answer.json()));
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let server = Arc::into_inner(server).unwrap();
    let (status, stderr) = server.terminate();
    assert!(status.success(), "{stderr}");
    let db = Db::open_read_only(&db).unwrap();
    let stored: BTreeSet<String> = db
        .keys()
        .unwrap()
        .into_iter()
        .map(|k| String::from_utf8(k).unwrap())
        .collect();
    let cluster_of = |key: &str| key[1..key.find('v').unwrap()].to_string();
    let mut per_cluster: BTreeMap<String, usize> = BTreeMap::new();
    for key in &stored {
        *per_cluster.entry(cluster_of(key)).or_default() += 1;
    }
    // Every cluster stored exactly once: its variants are duplicates of each other.
    assert_eq!(per_cluster.len(), CLUSTERS as usize, "{stored:?}");
    assert!(per_cluster.values().all(|n| *n == 1), "{per_cluster:?}");
    for (key, answer) in outcomes.lock().unwrap().iter() {
        if answer["inserted"] == true {
            assert!(stored.contains(key), "{key} acknowledged but not stored");
            continue;
        }
        assert!(!stored.contains(key), "{key} skipped but stored");
        // A skip names a stored document of its own cluster.
        let named = answer["matches"][0]["id"].as_str().unwrap();
        assert!(
            stored.contains(named) && cluster_of(named) == cluster_of(key),
            "{key}: {answer}"
        );
    }
}

#[test]
fn a_read_only_server_follows_a_writer_process() {
    let dir = tempfile::tempdir().unwrap();
    let db = family_db(dir.path());
    let server = Server::start(&db, &["--refresh-ms", "20"]);
    let text = family_text(1234);
    assert_eq!(
        server.post("/query", &json!({"text": text})).json()["matches"],
        json!([])
    );
    let more = dir.path().join("more.jsonl");
    write_corpus(&more, &[(b"late".to_vec(), text.clone())]);
    ok(&["add", s(&db), s(&more)]);
    let deadline = Instant::now() + PATIENCE;
    loop {
        let stats = server.get("/stats");
        if stats.status == 200 && stats.json()["live_docs"] == 61 {
            break;
        }
        if Instant::now() >= deadline {
            let last = String::from_utf8_lossy(&stats.body).into_owned();
            let (_, stderr) = server.terminate();
            panic!("the server never saw the writer's commit; last /stats: {last}; {stderr}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    // Its answers now equal those of a fresh reader.
    let cli: Value =
        serde_json::from_str(&ok(&["query", s(&db), "--text", &text, "--json"])).unwrap();
    assert_eq!(server.post("/query", &json!({"text": text})).json(), cli);
    assert_eq!(cli["matches"][0]["id"], "late");
}

#[test]
fn sigterm_finishes_the_writes_under_way_and_keeps_every_acknowledged_one() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("idx");
    ok(&["create", s(&db), "--threshold", "0.7"]);
    let server = Server::start(&db, &["--writer"]);
    let addr = server.addr.clone();
    let acknowledged: Arc<Mutex<Vec<String>>> = Arc::default();
    let sent = Arc::new(AtomicUsize::new(0));
    let clients: Vec<_> = (0..8)
        .map(|t| {
            let (addr, acknowledged, sent) = (addr.clone(), acknowledged.clone(), sent.clone());
            std::thread::spawn(move || {
                for i in 0.. {
                    let key = format!("t{t}-{i}");
                    let body = json!({"id": key, "text": family_text(t * 100_000 + i)}).to_string();
                    // After SIGTERM the server stops accepting: the client's work ends there.
                    let Ok(mut stream) = TcpStream::connect(&addr) else {
                        return;
                    };
                    sent.fetch_add(1, Ordering::SeqCst);
                    // A connection accepted just as the server stopped is reset.
                    let request = head("POST", "/insert", &[], body.len()) + &body;
                    if stream.write_all(request.as_bytes()).is_err() {
                        return;
                    }
                    let mut raw = Vec::new();
                    if stream.read_to_end(&mut raw).is_err() || !raw.starts_with(b"HTTP/1.1 200") {
                        return;
                    }
                    acknowledged.lock().unwrap().push(key);
                }
            })
        })
        .collect();
    // Let the clients get going, then stop the server while they are sending.
    let deadline = Instant::now() + PATIENCE;
    while acknowledged.lock().unwrap().len() < 40 {
        assert!(Instant::now() < deadline, "no writes were acknowledged");
        std::thread::sleep(Duration::from_millis(1));
    }
    let (status, stderr) = server.terminate();
    for c in clients {
        c.join().unwrap();
    }
    assert!(status.success(), "{stderr}");
    assert!(
        stderr.contains("stopped: every request under way was finished"),
        "{stderr}"
    );
    let acknowledged = acknowledged.lock().unwrap();
    let db = Db::open_read_only(&db).unwrap();
    for key in acknowledged.iter() {
        assert!(
            db.contains(key).unwrap(),
            "{key} was acknowledged but is not stored"
        );
    }
    assert!(sent.load(Ordering::SeqCst) >= acknowledged.len());
}

#[test]
fn a_full_server_answers_503_and_a_slow_request_times_out() {
    let dir = tempfile::tempdir().unwrap();
    let db = family_db(dir.path());
    let server = Server::start(&db, &["--max-concurrent", "1", "--timeout-ms", "3000"]);
    // A request whose body never comes holds the one place until its timeout. It may come
    // while a probe holds the place, and be refused itself: then another is sent.
    let hold = || {
        let mut holder = TcpStream::connect(&server.addr).unwrap();
        send_head(&mut holder, "POST", "/query", &[], 100);
        holder
    };
    let mut holder = hold();
    let deadline = Instant::now() + PATIENCE;
    let full = loop {
        let r = server.post("/query", &json!({"text": "a b c d e f"}));
        if r.status == 503 {
            break r;
        }
        assert_eq!(r.status, 200);
        if answered(&holder) {
            holder = hold();
        }
        assert!(Instant::now() < deadline, "the server never filled up");
    };
    assert!(full.error(503, "overload").contains("--max-concurrent"));
    assert_eq!(full.header("retry-after"), Some("1"));
    assert_eq!(server.get("/health").status, 200, "/health is not counted");
    let timed_out = read_reply(holder);
    assert!(timed_out.error(504, "timeout").contains("--timeout-ms"));
    // The place is free again.
    assert_eq!(
        server
            .post("/query", &json!({"text": "a b c d e f"}))
            .status,
        200
    );
    let metrics = String::from_utf8(server.get("/metrics").body).unwrap();
    assert!(
        metrics.contains("mhdb_requests_total{endpoint=\"/query\",status=\"503\"}"),
        "{metrics}"
    );
}

#[test]
fn damage_is_a_500_naming_the_file_and_offset() {
    let dir = tempfile::tempdir().unwrap();
    let db = family_db(dir.path());
    common::cli::damage_a_segment(&db);
    let server = Server::start(&db, &[]);
    let answer = server.post("/query", &json!({"text": family_text(3)}));
    let message = answer.error(500, "corruption");
    assert!(message.contains(".seg at byte offset"), "{message}");
    assert_eq!(server.get("/health").status, 200);
}

/// Three shards (`dir/shard-N/idx`) of the family corpus, dealt out round-robin; the last
/// also stores `doc-0` with another family's text, so that it answers for that key.
fn family_shards(dir: &Path) -> Vec<PathBuf> {
    let docs = family_docs(60);
    (0..3)
        .map(|i| {
            let mut part: Vec<_> = docs.iter().skip(i).step_by(3).cloned().collect();
            if i == 2 {
                part.push((b"doc-0".to_vec(), family_text(45)));
            }
            let shard = dir.join(format!("shard-{i}"));
            std::fs::create_dir(&shard).unwrap();
            database_of(&shard, &part)
        })
        .collect()
}

#[test]
fn shards_are_served_as_the_cli_answers_over_them_and_followed_one_by_one() {
    let dir = tempfile::tempdir().unwrap();
    let shards = family_shards(dir.path());
    let args: Vec<&str> = shards.iter().map(|p| s(p)).collect();
    let pattern = dir.path().join("shard-*").join("idx");
    // Quoted (no shell here), the pattern reaches the server, which expands it.
    let server = Server::launch(&[&pattern], &["--refresh-ms", "20"], |_| {});
    let cli_json = |extra: &[&str]| -> Value {
        let mut argv = vec!["query"];
        argv.extend(&args);
        argv.extend(extra);
        argv.push("--json");
        serde_json::from_str(&ok(&argv)).unwrap()
    };
    for i in [0, 13, 45, 58] {
        let text = family_text(i);
        let cli = cli_json(&["--text", &text]);
        assert!(!cli["matches"].as_array().unwrap().is_empty(), "{cli}");
        assert_eq!(server.post("/query", &json!({"text": text})).json(), cli);
        assert_eq!(
            server
                .post("/query", &json!({"text": text, "top": 4}))
                .json(),
            cli_json(&["--text", &text, "--top", "4"])
        );
        assert_eq!(
            server
                .post("/query", &json!({"text": text, "limit": 2}))
                .json(),
            cli_json(&["--text", &text, "--limit", "2"])
        );
    }
    // `doc-0` answers from the last shard, with family 45's text.
    let ids = |v: &Value| -> Vec<String> {
        v["matches"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["id"].as_str().unwrap().to_string())
            .collect()
    };
    let family_45 = server
        .post("/query", &json!({"text": family_text(45)}))
        .json();
    assert!(
        ids(&family_45).contains(&"doc-0".to_string()),
        "{family_45}"
    );
    let family_0 = server
        .post("/query", &json!({"text": family_text(0)}))
        .json();
    assert!(!ids(&family_0).contains(&"doc-0".to_string()), "{family_0}");

    let queries: String = (0..40)
        .map(|i| format!("{}\n", json!({"id": i, "text": family_text(i * 7 % 60)})))
        .collect();
    let file = dir.path().join("queries.jsonl");
    std::fs::write(&file, &queries).unwrap();
    let mut argv = vec!["query"];
    argv.extend(&args);
    argv.extend(["--jsonl", s(&file)]);
    let expected = json_lines(ok(&argv).as_bytes());
    let batch = server.request("POST", "/query_batch", &[], queries.as_bytes());
    assert_eq!(json_lines(&batch.body), expected);
    assert_eq!(expected.len(), 40);

    let mut argv = vec!["stats"];
    argv.extend(&args);
    argv.push("--json");
    let stats: Value = serde_json::from_str(&ok(&argv)).unwrap();
    assert_eq!(server.get("/stats").json(), stats);
    assert_eq!(stats["total"]["live_docs"], 61);

    // A writer commits to the middle shard: the server moves that shard on.
    let text = family_text(1234);
    let more = dir.path().join("more.jsonl");
    write_corpus(&more, &[(b"late".to_vec(), text.clone())]);
    ok(&["add", args[1], s(&more)]);
    let deadline = Instant::now() + PATIENCE;
    while server.get("/stats").json()["total"]["live_docs"] != 62 {
        assert!(
            Instant::now() < deadline,
            "the server never saw the writer's commit to a shard"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let cli = cli_json(&["--text", &text]);
    assert_eq!(cli["matches"][0]["id"], "late");
    assert_eq!(server.post("/query", &json!({"text": text})).json(), cli);
    let metrics = String::from_utf8(server.get("/metrics").body).unwrap();
    assert!(
        metrics.lines().any(|l| l == "mhdb_live_documents 62"),
        "{metrics}"
    );
}

#[test]
fn a_writer_takes_one_database_and_refuses_shards() {
    let dir = tempfile::tempdir().unwrap();
    let shards = family_shards(dir.path());
    let out = common::cli::run(&[
        "serve",
        s(&shards[0]),
        s(&shards[1]),
        "--writer",
        "--listen",
        "127.0.0.1:0",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--writer serves one database"), "{err}");
    assert!(out.stdout.is_empty(), "it never listened");
    // Nor does a pattern that names several.
    let pattern = dir.path().join("shard-*").join("idx");
    let out = common::cli::run(&["serve", s(&pattern), "--writer", "--listen", "127.0.0.1:0"]);
    assert_eq!(out.status.code(), Some(2));
    // The shards are left without a writer's lock: one opens for writing.
    Db::open(&shards[0], mhdb::db::Options::default()).unwrap();
}
