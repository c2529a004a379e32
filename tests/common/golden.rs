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
            .map(|m| (String::from_utf8(m.key.clone()).unwrap(), m.jaccard))
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
