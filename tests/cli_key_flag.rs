//! `add` and `query` take a keyed index's key from `--key-file`, as `create` does; the file
//! `MHDB_KEY_FILE` names is still read without the flag, and given both, the flag is used.

mod common;

use std::path::Path;
use std::process::Output;

use common::cli::{mhdb, s};

/// `mhdb args` with `MHDB_KEY_FILE` set to `env_key` (or unset).
fn run_keyed(args: &[&str], env_key: Option<&Path>) -> Output {
    let mut command = mhdb(args);
    match env_key {
        Some(path) => command.env("MHDB_KEY_FILE", path),
        None => command.env_remove("MHDB_KEY_FILE"),
    };
    command.output().unwrap()
}

fn succeeded(out: Output, what: &str) -> String {
    assert!(
        out.status.success(),
        "{what}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn add_and_query_take_the_key_from_the_flag() {
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("key");
    std::fs::write(&key, format!("{}\n", "ab".repeat(32))).unwrap();
    let other = dir.path().join("other");
    std::fs::write(&other, "cd".repeat(32)).unwrap();
    let db = dir.path().join("db");
    let data = dir.path().join("d.jsonl");
    let text = "the keyed index signs this text under its secret key only";
    std::fs::write(&data, format!("{{\"id\": \"k1\", \"text\": \"{text}\"}}\n")).unwrap();
    let create = ["create", s(&db), "--key-file", s(&key)];
    succeeded(run_keyed(&create, None), "create");

    // Without any key, signing text is refused.
    let add = ["add", s(&db), s(&data)];
    let out = run_keyed(&add, None);
    assert!(!out.status.success(), "add without a key succeeded");

    let add_keyed = ["add", s(&db), s(&data), "--key-file", s(&key)];
    succeeded(run_keyed(&add_keyed, None), "add --key-file");
    let query = ["query", s(&db), "--text", text, "--key-file", s(&key)];
    let answer = succeeded(run_keyed(&query, None), "query --key-file");
    assert!(answer.ends_with("\tk1\n"), "{answer:?}");

    // The flag is used over the environment's key; the environment's alone still works.
    let answer = succeeded(
        run_keyed(&query, Some(&other)),
        "query --key-file, env other",
    );
    assert!(answer.ends_with("\tk1\n"), "{answer:?}");
    let out = run_keyed(&query[..4], Some(&other));
    assert!(
        !out.status.success(),
        "the wrong key from MHDB_KEY_FILE was accepted"
    );
    let answer = succeeded(run_keyed(&query[..4], Some(&key)), "query, MHDB_KEY_FILE");
    assert!(answer.ends_with("\tk1\n"), "{answer:?}");
}
