//! `mhdb upgrade` says, before it writes, what it will convert and the free space it needs
//! (about the database's size: the copy is written beside the old files), and after, that the
//! upgraded documents have none of format 3's per-document columns; `--json` gives the same
//! as fields. Checked on the committed version-1 and version-2 fixtures.

mod common;

use std::path::Path;

use common::cli::{mhdb, s};
use common::golden::{restore, snapshot};
use serde_json::Value;

fn fixture(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name)
}

/// The number of live documents a fixture's expected answers list.
fn live(name: &str) -> u64 {
    let path = fixture(&format!("{name}.expected.json"));
    let expected: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    expected["live"].as_array().unwrap().len() as u64
}

fn upgrade(dir: &Path, json: bool) -> (Value, String) {
    let mut cmd = mhdb(&["upgrade", s(dir)]);
    if json {
        cmd.arg("--json");
    }
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let value = if json {
        serde_json::from_str(stdout.trim()).unwrap()
    } else {
        Value::Null
    };
    (value, stderr)
}

#[test]
fn upgrade_reports_the_space_it_needs_and_what_documents_lack() {
    let tmp = tempfile::tempdir().unwrap();
    for (name, version) in [("db-v1", 1), ("db-v2", 2)] {
        let files = snapshot(&fixture(name));
        let size: u64 = files.values().map(|b| b.len() as u64).sum();
        let documents = live(name);

        let dir = tmp.path().join(format!("{name}-json"));
        restore(&dir, &files);
        let (json, _) = upgrade(&dir, true);
        assert_eq!(json["upgraded"], true, "{name}: {json}");
        assert_eq!(json["from_version"], version, "{name}: {json}");
        assert_eq!(json["documents"], documents, "{name}: {json}");
        assert_eq!(
            json["documents_without_columns"], documents,
            "{name}: {json}"
        );
        assert_eq!(json["space_needed"], size, "{name}: {json}");
        assert!(
            json["space_available"].as_u64().unwrap() > 0,
            "{name}: {json}"
        );
        let (again, _) = upgrade(&dir, true);
        assert_eq!(
            again,
            serde_json::json!({"upgraded": false, "kept": null}),
            "{name}"
        );

        let dir = tmp.path().join(format!("{name}-text"));
        restore(&dir, &files);
        let (_, said) = upgrade(&dir, false);
        let before = said.find("needs about").expect(&said);
        let after = said.find("upgraded ").expect(&said);
        assert!(
            before < after,
            "the space is said before the upgrade: {said}"
        );
        assert!(
            said.contains(&format!(
                "from format version {version}: {documents} documents"
            )),
            "{said}"
        );
        assert!(
            said.contains(&format!("its {documents} documents have no exact hash")),
            "{said}"
        );
    }
}
