//! The generator and checks the committed database fixtures share (`tests/golden/db-v1`,
//! `tests/golden/db-v2`): a deterministic writer of realistic articles, edits and deletes
//! against a model, the fixture's parameters, and the check of a database's answers against
//! a fixture's `expected.json`.

use std::collections::BTreeMap;
use std::path::Path;

use mhdb::db::{Db, IndexParams, QueryOptions, WriteBatch};
use mhdb::sketch::SketchParams;
use serde_json::Value;

/// Every file of a directory with its bytes.
pub fn snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let name = e.file_name().into_string().unwrap();
            (name, std::fs::read(e.path()).unwrap())
        })
        .collect()
}

/// Writes `files` (a [`snapshot`]) into the new directory `dir`.
pub fn restore(dir: &Path, files: &BTreeMap<String, Vec<u8>>) {
    std::fs::create_dir_all(dir).unwrap();
    for (name, bytes) in files {
        std::fs::write(dir.join(name), bytes).unwrap();
    }
}

/// The names in `files` (a [`snapshot`]) that start with `prefix` and end with `suffix`, in
/// order (for numbered files, oldest first).
pub fn file_names(files: &BTreeMap<String, Vec<u8>>, prefix: &str, suffix: &str) -> Vec<String> {
    files
        .keys()
        .filter(|n| n.starts_with(prefix) && n.ends_with(suffix))
        .cloned()
        .collect()
}

/// A fixture generator's last touch: cuts the zeros a writer wrote ahead of the newest of
/// the two WAL files' records to one 4 KiB block past them (they are not part of the layout,
/// and recovery reads any run of them the same way), keeping the fixture small. Returns the
/// WAL names, oldest first.
pub fn trim_newest_wal(files: &mut BTreeMap<String, Vec<u8>>) -> Vec<String> {
    let wals = file_names(files, "wal-", ".log");
    assert_eq!(wals.len(), 2, "{:?}", files.keys());
    let newest = files.get_mut(&wals[1]).unwrap();
    let last = newest.iter().rposition(|&b| b != 0).unwrap();
    newest.truncate(((last + 1).next_multiple_of(4096) + 4096).min(newest.len()));
    wals
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

pub fn strings(v: &Value) -> Vec<&str> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap())
        .collect()
}

/// Live keys with their stored signatures, deleted keys absent, query answers and `verify`,
/// all as `expected` records them.
pub fn check_answers(db: &Db, expected: &Value, what: &str) {
    let want: BTreeMap<String, String> = expected["live"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["key"].as_str().unwrap().to_string(),
                e["signature"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let got: BTreeMap<String, String> = super::stored(db)
        .into_iter()
        .map(|(k, sig)| (k, hex(&sig)))
        .collect();
    assert_eq!(got.len(), want.len(), "{what}: number of live keys");
    for (key, sig) in &want {
        assert_eq!(got.get(key), Some(sig), "{what}: key {key:?}");
    }
    for key in strings(&expected["deleted"]) {
        assert!(!db.contains(key).unwrap(), "{what}: deleted key {key:?}");
        assert_eq!(db.get(key).unwrap(), None, "{what}: deleted key {key:?}");
    }
    for query in expected["queries"].as_array().unwrap() {
        let text = query["text"].as_str().unwrap();
        let result = db.query_text(text, &QueryOptions::default()).unwrap();
        let got: Vec<(String, f64)> = result
            .matches
            .iter()
            .map(|m| (String::from_utf8(m.key.clone()).unwrap(), m.similarity))
            .collect();
        let want: Vec<(String, f64)> = query["matches"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| {
                let key = m["key"].as_str().unwrap().to_string();
                (key, m["jaccard"].as_f64().unwrap())
            })
            .collect();
        assert_eq!(got.len(), want.len(), "{what}: query {text:?}: {got:?}");
        for ((gk, gj), (wk, wj)) in got.iter().zip(&want) {
            assert_eq!(gk, wk, "{what}: query {text:?}");
            assert!((gj - wj).abs() < 1e-9, "{what}: query {text:?}: {gk} {gj}");
        }
    }
    let report = db.verify().unwrap();
    assert!(report.is_ok(), "{what}: verify: {:?}", report.problems);
}

/// Knuth's MMIX linear congruential generator (high bits): the same text on every machine.
pub struct Rng(pub u64);

impl Rng {
    pub fn below(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((self.0 >> 33) % n as u64) as usize
    }

    pub fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[self.below(xs.len())]
    }
}

pub const TOWNS: &[&str] = &[
    "Ashford", "Bramley", "Colwick", "Dunmore", "Easton", "Fernhill", "Glenrock", "Hollins",
    "Kirkby", "Lowther", "Marsden", "Netherby",
];
pub const SUBJECTS: &[&str] = &[
    "The town council",
    "A family bakery",
    "The rowing club",
    "Volunteers from the food bank",
    "The county archive",
    "A group of engineering students",
    "The harbour master",
    "The chamber orchestra",
    "The primary school",
    "A cycling charity",
];
pub const VERBS: &[&str] = &[
    "announced plans to restore",
    "reopened",
    "raised money for",
    "published a survey of",
    "began repairs at",
    "held a public meeting about",
    "voted to extend",
    "opened an exhibition at",
    "planted trees along",
];
pub const PLACES: &[&str] = &[
    "the old mill",
    "Riverside Park",
    "the north quay",
    "the railway bridge",
    "Market Square",
    "the library annex",
    "the lido",
    "the allotments on Elm Row",
    "the covered market",
];
pub const DAYS: &[&str] = &[
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
];
pub const MONTHS: &[&str] = &["March", "April", "May", "June", "September", "October"];
pub const QUOTES: &[&str] = &[
    "\"We have waited years for this,\" said one neighbour.",
    "\"It belongs to everyone who lives here,\" the organiser said.",
    "A spokesperson said more details would follow next week.",
    "Local businesses have offered to help with the costs.",
    "Parking nearby will be limited while the work goes on.",
    "The idea came from a suggestion box at the town hall.",
];

/// A short local-news item, with the key it is filed under.
pub fn article(rng: &mut Rng, id: usize) -> (String, String) {
    let town = rng.pick(TOWNS);
    let verb = rng.pick(VERBS);
    let mut text = format!(
        "{} in {town} {verb} {} on {}.",
        rng.pick(SUBJECTS),
        rng.pick(PLACES),
        rng.pick(DAYS)
    );
    let n = 3 + rng.below(60);
    text += &match rng.below(4) {
        0 => format!(" Work is expected to take {n} weeks."),
        1 => format!(" About {} people came to the first session.", n * 5),
        2 => format!(" The project will cost roughly {n} thousand pounds."),
        _ => format!(
            " Residents can comment until the end of {}.",
            rng.pick(MONTHS)
        ),
    };
    text += " ";
    text += rng.pick(QUOTES);
    text += " ";
    text += rng.pick(QUOTES);
    let slug: String = verb.split(' ').take(2).collect::<Vec<_>>().join("-");
    let key = format!(
        "https://news.example.org/2026/{}/{id:04}-{slug}",
        town.to_lowercase()
    );
    (key, text)
}

/// The texts and document numbers the writes are expected to leave, kept beside the database
/// (upserts and deletes as `format/keys.md` describes them).
#[derive(Default)]
pub struct Model {
    pub live: BTreeMap<String, (u64, String)>,
    pub next_docno: u64,
    pub deleted: BTreeMap<String, String>,
    pub replaced: BTreeMap<String, (u64, String)>,
}

/// Writes one batch to the database and to the model.
pub struct Writer<'a> {
    pub db: &'a Db,
    pub rng: Rng,
    pub model: Model,
    pub batch: WriteBatch,
    pub ops: Vec<(String, Option<String>)>,
    /// Batches written: one WAL record each (no other writer shares a group commit).
    pub commits: u64,
}

impl Writer<'_> {
    pub fn put(&mut self, key: &str, text: &str) {
        self.batch.insert_text(key, text);
        self.ops.push((key.to_string(), Some(text.to_string())));
    }

    pub fn delete(&mut self, key: &str) {
        self.batch.delete(key);
        self.ops.push((key.to_string(), None));
    }

    pub fn commit(&mut self) {
        if self.ops.is_empty() {
            return;
        }
        self.db.write(&self.batch).unwrap();
        self.commits += 1;
        self.batch = WriteBatch::new();
        let m = &mut self.model;
        for (key, text) in self.ops.drain(..) {
            let old = m.live.remove(&key);
            match text {
                Some(text) => {
                    if let Some(old) = old {
                        m.replaced.insert(key.clone(), old);
                    }
                    m.deleted.remove(&key);
                    m.live.insert(key, (m.next_docno, text));
                    m.next_docno += 1;
                }
                None => {
                    if let Some((_, text)) = old {
                        m.replaced.remove(&key);
                        m.deleted.insert(key, text);
                    }
                }
            }
        }
    }

    /// Articles `ids`, committed `per_batch` at a time; their keys.
    pub fn articles(&mut self, ids: std::ops::Range<usize>, per_batch: usize) -> Vec<String> {
        let mut keys = Vec::new();
        for id in ids {
            let (key, text) = article(&mut self.rng, id);
            self.put(&key, &text);
            keys.push(key);
            if keys.len() % per_batch == 0 {
                self.commit();
            }
        }
        self.commit();
        keys
    }

    /// Replaces each key's document by its text with `note` appended, in one batch.
    pub fn amend<'k>(&mut self, keys: impl Iterator<Item = &'k String>, note: &str) {
        for key in keys {
            let text = self.text(key) + note;
            self.put(key, &text);
        }
        self.commit();
    }

    /// Deletes the keys in one batch.
    pub fn delete_all<'k>(&mut self, keys: impl Iterator<Item = &'k String>) {
        for key in keys {
            self.delete(key);
        }
        self.commit();
    }

    pub fn text(&self, key: &str) -> String {
        self.model.live[key].1.clone()
    }

    pub fn keys(&self) -> Vec<String> {
        self.model.live.keys().cloned().collect()
    }
}

pub fn params() -> IndexParams {
    let sketch = SketchParams {
        num_perm: 64,
        seed: 0x6d68_6462,
        ..SketchParams::default()
    };
    IndexParams {
        bucket_cap: Some(4),
        ..IndexParams::for_threshold(sketch, 8, 0.7).unwrap()
    }
}

pub const COOKIE_NOTICE: &str = "We use cookies to remember your basket and to understand how \
    the shop is used. You can change your choice at any time under Privacy settings.";

/// The format version named by the CURRENT of the database in `dir` (bytes 8..12,
/// `format/manifest.md`), or `None` when `dir` holds no CURRENT.
pub fn current_version(dir: &Path) -> Option<u32> {
    let bytes = std::fs::read(dir.join("CURRENT")).ok()?;
    Some(u32::from_le_bytes(bytes.get(8..12)?.try_into().ok()?))
}

/// Writes a regenerated fixture: the database in `generated` to `fixture` and `answers` to
/// `expected`, refusing (a panic, before anything is written) unless the generated database,
/// its answers, and the fixture and answers already committed are all of format `version`. A
/// generator of an older version runs today's writer, which writes the current version: it
/// must never replace the older fixture with bytes of another version labelled as its own.
pub fn replace_fixture(
    fixture: &Path,
    expected: &Path,
    generated: &Path,
    answers: &Value,
    version: u32,
) {
    let refuse = |what: &str, found: Option<u64>| {
        panic!(
            "refusing to write the version-{version} fixture {}: {what} is of version {found:?}",
            fixture.display()
        )
    };
    let generated_version = current_version(generated).map(u64::from);
    if generated_version != Some(u64::from(version)) {
        refuse("the generated database", generated_version);
    }
    if answers["format_version"].as_u64() != Some(u64::from(version)) {
        refuse("the generated answers", answers["format_version"].as_u64());
    }
    if fixture.exists() {
        let committed = current_version(fixture).map(u64::from);
        if committed != Some(u64::from(version)) {
            refuse("the committed fixture", committed);
        }
    }
    if let Ok(text) = std::fs::read_to_string(expected) {
        let committed: Value = serde_json::from_str(&text).unwrap();
        if committed["format_version"].as_u64() != Some(u64::from(version)) {
            refuse(
                "the committed answers",
                committed["format_version"].as_u64(),
            );
        }
    }
    if fixture.exists() {
        std::fs::remove_dir_all(fixture).unwrap();
    }
    std::fs::create_dir_all(fixture).unwrap();
    for (name, bytes) in snapshot(generated) {
        std::fs::write(fixture.join(name), bytes).unwrap();
    }
    let mut text = serde_json::to_string_pretty(answers).unwrap();
    text.push('\n');
    std::fs::write(expected, text).unwrap();
}

/// Where two directory snapshots differ: the names of the files only one holds or that hold
/// different bytes, each with both lengths (`None` for a file that is absent).
pub fn differing_files(
    a: &BTreeMap<String, Vec<u8>>,
    b: &BTreeMap<String, Vec<u8>>,
) -> Vec<(String, Option<usize>, Option<usize>)> {
    let names: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    names
        .into_iter()
        .filter(|n| a.get(*n) != b.get(*n))
        .map(|n| (n.clone(), a.get(n).map(Vec::len), b.get(n).map(Vec::len)))
        .collect()
}

/// The paths (`live[3].signature`, `queries[5].matches`) at which two JSON values differ,
/// descending into objects and into arrays of equal length. Numbers are compared as `f64`
/// within 1e-12 (relative): serde_json's parser may miss the last bit of a decimal it reads.
pub fn differing_paths(a: &Value, b: &Value) -> Vec<String> {
    let mut out = Vec::new();
    json_diff(a, b, String::new(), &mut out);
    out
}

fn json_diff(a: &Value, b: &Value, at: String, out: &mut Vec<String>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            for k in keys {
                let path = if at.is_empty() {
                    k.clone()
                } else {
                    format!("{at}.{k}")
                };
                json_diff(
                    &x.get(k).cloned().unwrap_or(Value::Null),
                    &y.get(k).cloned().unwrap_or(Value::Null),
                    path,
                    out,
                );
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (u, v)) in x.iter().zip(y).enumerate() {
                json_diff(u, v, format!("{at}[{i}]"), out);
            }
        }
        (Value::Number(x), Value::Number(y)) => {
            let (x, y) = (x.as_f64().unwrap(), y.as_f64().unwrap());
            if (x - y).abs() > 1e-12 * x.abs().max(1.0) {
                out.push(at);
            }
        }
        _ if a != b => out.push(at),
        _ => {}
    }
}

/// The parts of a segment file (`format/segment.md`) whose bytes differ between `a` and `b`,
/// two segments of the same length and layout: `header`, each section by its kind (`BAND 3`
/// with its band number), `section table` (its bytes with every section's CRC left out, which
/// a changed section changes anyway) and `footer` (likewise without `meta_crc`).
pub fn differing_segment_parts(a: &[u8], b: &[u8]) -> Vec<String> {
    assert_eq!(a.len(), b.len(), "segments of different lengths");
    let u64_at =
        |bytes: &[u8], at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap());
    let table = u64_at(a, a.len() - 32) as usize;
    assert_eq!(
        table,
        u64_at(b, b.len() - 32) as usize,
        "section tables at different offsets"
    );
    let mut parts = Vec::new();
    if a[..64] != b[..64] {
        parts.push("header".to_string());
    }
    let mut a_table = a[table..a.len() - 32].to_vec();
    let mut b_table = b[table..b.len() - 32].to_vec();
    for (entry, b_entry) in a_table.chunks_mut(40).zip(b_table.chunks_mut(40)) {
        let kind = u16::from_le_bytes([entry[0], entry[1]]);
        let index = u32::from_le_bytes(entry[4..8].try_into().unwrap());
        let (offset, len) = (u64_at(entry, 8) as usize, u64_at(entry, 16) as usize);
        if a[offset..offset + len] != b[offset..offset + len] {
            parts.push(match kind {
                1 => "KEY_BLOB".to_string(),
                2 => "DOC_TABLE".to_string(),
                3 => "KEY_INDEX".to_string(),
                4 => format!("BAND {index}"),
                5 => "HOT".to_string(),
                6 => "SIGNATURES".to_string(),
                7 => "SHINGLES".to_string(),
                8 => "CHECKSUMS".to_string(),
                other => format!("kind {other}"),
            });
        }
        entry[32..36].fill(0);
        b_entry[32..36].fill(0);
    }
    if a_table != b_table {
        parts.push("section table".to_string());
    }
    let footer = a.len() - 32;
    if a[footer..footer + 24] != b[footer..footer + 24] || a[footer + 28..] != b[footer + 28..] {
        parts.push("footer".to_string());
    }
    parts
}

/// The HOT records (band, key32, original_size) of a segment file.
pub fn hot_records(seg: &[u8]) -> Vec<(u32, u32, u64)> {
    let u32_at = |at: usize| u32::from_le_bytes(seg[at..at + 4].try_into().unwrap());
    let u64_at = |at: usize| u64::from_le_bytes(seg[at..at + 8].try_into().unwrap());
    let table = u64_at(seg.len() - 32) as usize;
    let sections = u32_at(seg.len() - 24) as usize;
    let entry = (0..sections)
        .map(|i| table + 40 * i)
        .find(|&e| u16::from_le_bytes([seg[e], seg[e + 1]]) == 5)
        .expect("a HOT section");
    let (offset, count) = (u64_at(entry + 8) as usize, u64_at(entry + 24) as usize);
    (0..count)
        .map(|r| offset + 16 * r)
        .map(|at| (u32_at(at), u32_at(at + 4), u64_at(at + 8)))
        .collect()
}

/// The HOT records of two segments that name the same buckets but count them differently:
/// (band, key32, original_size in `a`, in `b`).
pub fn differing_hot_counts(a: &[u8], b: &[u8]) -> Vec<(u32, u32, u64, u64)> {
    let (a, b) = (hot_records(a), hot_records(b));
    let buckets =
        |r: &[(u32, u32, u64)]| r.iter().map(|&(band, k, _)| (band, k)).collect::<Vec<_>>();
    assert_eq!(buckets(&a), buckets(&b), "the segments' hot buckets differ");
    a.iter()
        .zip(&b)
        .filter(|(x, y)| x.2 != y.2)
        .map(|(x, y)| (x.0, x.1, x.2, y.2))
        .collect()
}

/// The offset of the first section of `kind` in the segment file `bytes`, read from its
/// section table (`format/segment.md`): `None` when it has none.
pub fn section_start(bytes: &[u8], kind: u16) -> Option<usize> {
    let footer = bytes.len() - 32;
    let table = u64::from_le_bytes(bytes[footer..footer + 8].try_into().unwrap()) as usize;
    let n = u32::from_le_bytes(bytes[footer + 8..footer + 12].try_into().unwrap()) as usize;
    (0..n)
        .map(|i| table + 40 * i)
        .find(|&e| u16::from_le_bytes([bytes[e], bytes[e + 1]]) == kind)
        .map(|e| u64::from_le_bytes(bytes[e + 8..e + 16].try_into().unwrap()) as usize)
}

/// Asserts that `generate`, run today into a fresh directory, writes exactly the committed
/// `fixture`'s bytes and answers as recorded in `expected`.
pub fn assert_todays_writer_writes(
    generate: impl Fn(&Path) -> Value,
    fixture: &Path,
    expected: &Value,
) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let answers = generate(&dir);
    let (now, committed) = (snapshot(&dir), snapshot(fixture));
    assert!(
        now == committed,
        "this build writes other bytes: {:?}",
        differing_files(&now, &committed)
    );
    assert_eq!(differing_paths(&answers, expected), Vec::<String>::new());
}

/// Regenerates a version-3 `fixture` and its `expected` answers with `generate`, when
/// `MHDB_REGENERATE_DB_FIXTURE=1` says so: generated twice, the bytes must not depend on the
/// run (no clock, no random draw).
pub fn regenerate_v3_fixture(generate: impl Fn(&Path) -> Value, fixture: &Path, expected: &Path) {
    assert_eq!(
        std::env::var("MHDB_REGENERATE_DB_FIXTURE").as_deref(),
        Ok("1"),
        "set MHDB_REGENERATE_DB_FIXTURE=1 to overwrite the pinned fixture"
    );
    let tmp = tempfile::tempdir().unwrap();
    let (first, second) = (tmp.path().join("first"), tmp.path().join("second"));
    let answers = generate(&first);
    assert_eq!(answers, generate(&second));
    let differing = differing_files(&snapshot(&first), &snapshot(&second));
    assert!(differing.is_empty(), "not deterministic: {differing:?}");
    replace_fixture(fixture, expected, &first, &answers, 3);
}

/// The two tests every version-3 fixture file has, for its `generate`, `FIXTURE`, `EXPECTED`
/// and `expected()`: `todays_writer_writes_the_fixture` (this build writes the committed bytes
/// and answers: a change to a byte the fixture's writers write fails it) and the ignored
/// `regenerate_fixture` (`MHDB_REGENERATE_DB_FIXTURE=1 cargo test --release --test NAME --
/// --ignored`).
#[macro_export]
macro_rules! v3_fixture_tests {
    ($name:literal) => {
        #[test]
        fn todays_writer_writes_the_fixture() {
            assert_todays_writer_writes(generate, Path::new(FIXTURE), &expected());
        }

        #[test]
        #[ignore = concat!("writes tests/golden/", $name, " anew; only for a deliberate regeneration")]
        fn regenerate_fixture() {
            regenerate_v3_fixture(generate, Path::new(FIXTURE), Path::new(EXPECTED));
        }
    };
}
