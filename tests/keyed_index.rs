//! A keyed index (`format/hashing.md` §12) hashes shingles under its secret key and keeps only
//! the key's fingerprint: text is signed only with the right key (given, or named by
//! `MHDB_KEY_FILE`); a wrong key is refused naming fingerprints, never the key; without a key
//! the index still answers signature queries; exports and reopens keep the fingerprint.

mod common;

use std::process::Command;

use mhdb::db::{Db, IndexParams, Options, QueryOptions};
use mhdb::sketch::SecretKey;

fn key(byte: u8) -> SecretKey {
    SecretKey::from_bytes([byte; 32])
}

fn with_key(k: Option<SecretKey>) -> Options {
    Options {
        key: k,
        ..Options::default()
    }
}

const TEXTS: [&str; 3] = [
    "The quick brown fox jumps over the lazy dog while the cat sleeps on the warm mat.",
    "A completely different sentence about databases, write-ahead logs and checksums.",
    "Near-duplicate detection finds documents that share most of their shingles.",
];

#[test]
fn text_and_stored_signatures_need_the_right_key_and_queries_need_none() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let db = Db::create(&dir, IndexParams::default(), with_key(Some(key(7)))).unwrap();
    assert!(!db.params().key_fingerprint.is_unkeyed());
    for (i, t) in TEXTS.iter().enumerate() {
        db.insert_text(format!("doc{i}"), t).unwrap();
    }
    let hit = db.query_text(TEXTS[0], &QueryOptions::default()).unwrap();
    assert_eq!(hit.matches[0].key, b"doc0");
    // Keyed signatures differ from the public seed's.
    let unkeyed = IndexParams::default()
        .hasher()
        .unwrap()
        .sketch_text(TEXTS[0]);
    let keyed = db.hasher().unwrap().sketch_text(TEXTS[0]);
    assert_ne!(unkeyed, keyed);
    let stored = db.get("doc0").unwrap().unwrap();
    db.flush().unwrap();
    drop(db);

    // Without a key: signature queries work, text is refused with a message naming the key.
    let db = Db::open(&dir, with_key(None)).unwrap();
    let err = db
        .query_text(TEXTS[0], &QueryOptions::default())
        .unwrap_err();
    assert!(
        matches!(err, mhdb::Error::ParameterMismatch { name: "key", .. }),
        "{err}"
    );
    assert!(err.to_string().contains("MHDB_KEY_FILE"), "{err}");
    assert!(db.insert_text("doc9", TEXTS[1]).is_err());
    let by_signature = db.query(&keyed, &QueryOptions::default()).unwrap();
    assert_eq!(by_signature.matches[0].key, b"doc0");
    assert_eq!(db.get("doc0").unwrap().unwrap(), stored);
    // Storing a signature needs the key too: without it the handle cannot tell a keyed
    // signature from a meaningless one.
    for refused in [
        db.insert("doc9", &keyed),
        db.bulk_insert(&[("doc9", keyed.clone())]),
        db.insert_if_novel("doc9", &keyed, &Default::default())
            .map(drop),
    ] {
        let err = refused.unwrap_err();
        assert!(err.to_string().contains("MHDB_KEY_FILE"), "{err}");
    }
    assert!(!db.contains("doc9").unwrap());
    drop(db);

    // A different key is refused at open, naming fingerprints only.
    let err = Db::open(&dir, with_key(Some(key(8)))).unwrap_err();
    assert!(
        matches!(err, mhdb::Error::ParameterMismatch { name: "key", .. }),
        "{err}"
    );
    assert!(!err.to_string().contains("0808080808080808"), "{err}");

    // The right key again; an export keeps the fingerprint and answers the same.
    let db = Db::open(&dir, with_key(Some(key(7)))).unwrap();
    db.export(tmp.path().join("copy")).unwrap();
    drop(db);
    let copy = Db::open(tmp.path().join("copy"), with_key(Some(key(7)))).unwrap();
    let hit = copy.query_text(TEXTS[2], &QueryOptions::default()).unwrap();
    assert_eq!(hit.matches[0].key, b"doc2");
    assert!(Db::open(tmp.path().join("copy"), with_key(Some(key(1)))).is_err());
}

#[test]
fn a_key_for_an_unkeyed_index_and_a_merge_across_keys_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let plain = tmp.path().join("plain");
    drop(Db::create(&plain, IndexParams::default(), Options::default()).unwrap());
    let err = Db::open(&plain, with_key(Some(key(7)))).unwrap_err();
    assert!(
        matches!(err, mhdb::Error::ParameterMismatch { name: "key", .. }),
        "{err}"
    );
    let keyed = tmp.path().join("keyed");
    let k = Db::create(&keyed, IndexParams::default(), with_key(Some(key(7)))).unwrap();
    k.insert_text("a", TEXTS[0]).unwrap();
    let p = Db::open(&plain, Options::default()).unwrap();
    let err = p.merge_from(&k).unwrap_err();
    assert!(
        matches!(err, mhdb::Error::ParameterMismatch { name: "key", .. }),
        "{err}"
    );
    // Named by fingerprint, as `stats` names it, never the key's bytes.
    let fp = mhdb::sketch::KeyFingerprint::of(Some(&key(7))).short();
    assert!(
        err.to_string().contains(&format!(
            "database has unkeyed, caller asked for keyed (key fingerprint {fp})"
        )),
        "{err}"
    );
}

#[test]
fn the_cli_takes_the_key_file_at_create_and_from_the_environment_after() {
    let tmp = tempfile::tempdir().unwrap();
    let keyfile = tmp.path().join("key.hex");
    std::fs::write(&keyfile, format!("{}\n", "ab".repeat(32))).unwrap();
    let db = tmp.path().join("idx");
    let docs = tmp.path().join("docs.jsonl");
    let lines: Vec<String> = TEXTS
        .iter()
        .enumerate()
        .map(|(i, t)| serde_json::json!({"id": format!("d{i}"), "text": t}).to_string())
        .collect();
    std::fs::write(&docs, lines.join("\n") + "\n").unwrap();
    let mhdb = env!("CARGO_BIN_EXE_mhdb");
    let run = |args: &[&str], key: bool| {
        let mut c = Command::new(mhdb);
        c.args(args).env_remove("MHDB_KEY_FILE");
        if key {
            c.env("MHDB_KEY_FILE", &keyfile);
        }
        c.output().unwrap()
    };
    let db_s = db.to_str().unwrap();
    let out = run(
        &["create", db_s, "--key-file", keyfile.to_str().unwrap()],
        false,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = run(&["add", db_s, docs.to_str().unwrap()], true);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = run(&["query", db_s, "--text", TEXTS[1]], true);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("d1"));
    // Without the key: a clear refusal (exit 2, parameter mismatch), no answer; for a file
    // of queries too, without blaming its first line.
    let out = run(&["query", db_s, "--text", TEXTS[1]], false);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("key"));
    assert!(out.stdout.is_empty());
    let out = run(&["query", db_s, "--jsonl", docs.to_str().unwrap()], false);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("MHDB_KEY_FILE") && !err.contains("docs.jsonl:1"),
        "{err}"
    );
    assert!(out.stdout.is_empty());
    // Reads that need no signing work without it.
    let out = run(&["keys", db_s], false);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 3);
    // A key file named in the environment where it is not used is said, not silently
    // ignored: create takes a key only from --key-file, and an unkeyed index signs without.
    let plain = tmp.path().join("plain");
    let plain_s = plain.to_str().unwrap();
    let out = run(&["create", plain_s], true);
    assert!(out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("MHDB_KEY_FILE is set, but create takes a key only from --key-file"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for args in [
        &["add", plain_s, docs.to_str().unwrap()][..],
        &["query", plain_s, "--text", TEXTS[1]],
    ] {
        let out = run(args, true);
        assert!(out.status.success());
        assert!(
            String::from_utf8_lossy(&out.stderr)
                .contains("MHDB_KEY_FILE is set, but this index is not keyed"),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let out = run(&["query", plain_s, "--text", TEXTS[1]], false);
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
