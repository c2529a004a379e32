//! The ingest pipeline (`mhdb::db::ingest`) keeps input order on every path: in the stream mode
//! (`mhdb add`) the records before a refused one are committed, and no record after it; in the
//! batch-atomic mode (Python's `insert_many`) the batches before a refused record's batch are
//! committed and acknowledged, nothing of its batch or after. Signatures are the database's own
//! (texts) or the given ones (checked for shape), a text without shingles is refused, and the
//! sink hears of every commit in order.

use mhdb::db::ingest::{
    Content, Fault, Ingest, Mode, OnDuplicate, Record, Rejected, STREAM_CHUNK, Sink, Source, Stop,
    commit_batch,
};
use mhdb::db::{Db, IndexParams, Options};
use mhdb::sketch::Signature;

/// One input record: a document, or a record its parser refuses.
#[derive(Clone)]
enum Item {
    Doc(String, Content<String>),
    Bad,
}

/// Items in memory, read in chunks; reading position `fail_at` (if any) fails, and the whole
/// chunk asked for with it is lost.
struct Items {
    items: Vec<Item>,
    next: usize,
    fail_at: Option<usize>,
}

impl Source for Items {
    type Item = (usize, Item);
    type Error = String;

    fn next_chunk(&mut self, max: usize) -> Result<Vec<(usize, Item)>, String> {
        let end = (self.next + max).min(self.items.len());
        if let Some(at) = self.fail_at.filter(|&at| (self.next..end).contains(&at)) {
            return Err(format!("read failed at {at}"));
        }
        let chunk = (self.next..end)
            .map(|i| (i, self.items[i].clone()))
            .collect();
        self.next = end;
        Ok(chunk)
    }
}

/// What the sink heard: (total, last key) per commit, and the positions skipped.
#[derive(Default)]
struct Heard {
    commits: Vec<(u64, String)>,
    skipped: Vec<usize>,
}

impl Sink<usize> for Heard {
    type Error = String;

    fn committed(&mut self, total: u64, last_key: &[u8]) -> Result<(), String> {
        self.commits
            .push((total, String::from_utf8(last_key.to_vec()).unwrap()));
        Ok(())
    }

    fn skipped(&mut self, rejected: &Rejected<usize>) {
        self.skipped.push(rejected.origin);
    }
}

fn parse((at, item): (usize, Item)) -> Result<Record<String, usize>, Rejected<usize>> {
    match item {
        Item::Doc(key, content) => Ok(Record {
            key: key.into_bytes(),
            content,
            keep: None,
            origin: at,
        }),
        Item::Bad => Err(Rejected {
            origin: at,
            key: None,
            fault: Fault::Malformed(format!("line {at} is bad")),
        }),
    }
}

fn text_doc(i: usize) -> Item {
    Item::Doc(
        format!("doc-{i}"),
        Content::Text(format!("document number {i} with some words")),
    )
}

fn docs(n: usize) -> Vec<Item> {
    (0..n).map(text_doc).collect()
}

fn new_db(dir: &tempfile::TempDir) -> Db {
    Db::create(
        dir.path().join("db"),
        IndexParams::default(),
        Options::default(),
    )
    .unwrap()
}

fn stream(commit_every: usize, skip_invalid: bool, on_duplicate: OnDuplicate) -> Mode {
    Mode::Stream {
        commit_every,
        on_duplicate,
        skip_invalid,
    }
}

fn load(
    db: &Db,
    mode: Mode,
    items: Vec<Item>,
    fail_at: Option<usize>,
) -> (Ingest<'_>, Heard, Result<(), Stop<String, usize>>) {
    let mut source = Items {
        items,
        next: 0,
        fail_at,
    };
    let mut heard = Heard::default();
    let mut ingest = Ingest::new(db, mode);
    let result = ingest.run(&mut source, &parse, &mut heard);
    (ingest, heard, result)
}

/// Keys present among `doc-0 .. doc-{n-1}`.
fn present(db: &Db, n: usize) -> Vec<usize> {
    (0..n)
        .filter(|i| db.contains(format!("doc-{i}")).unwrap())
        .collect()
}

#[test]
fn stream_commits_every_record_before_a_bad_one_and_none_after() {
    let dir = tempfile::tempdir().unwrap();
    let db = new_db(&dir);
    // The bad record is in the second chunk, past several commits.
    let bad = STREAM_CHUNK + 950;
    let mut items = docs(2 * STREAM_CHUNK);
    items[bad] = Item::Bad;
    let (ingest, heard, result) = load(&db, stream(1000, false, OnDuplicate::Replace), items, None);
    match result {
        Err(Stop::Rejected(r)) => assert_eq!((r.origin, r.key), (bad, None)),
        other => panic!("{other:?}"),
    }
    assert_eq!(present(&db, 2 * STREAM_CHUNK), (0..bad).collect::<Vec<_>>());
    assert_eq!(ingest.counts().committed, bad as u64);
    // One line per commit, in order, each naming its last key; the last one holds what came
    // before the bad record.
    let totals: Vec<u64> = heard.commits.iter().map(|c| c.0).collect();
    let mut expected: Vec<u64> = (1..=bad as u64 / 1000).map(|k| k * 1000).collect();
    expected.push(bad as u64);
    assert_eq!(totals, expected);
    assert_eq!(heard.commits.last().unwrap().1, format!("doc-{}", bad - 1));
    // The stored signatures are the database's own.
    let own = db
        .sketch_text("document number 17 with some words")
        .unwrap();
    let packed = mhdb::sketch::pack(own.slots(), db.params().bits).unwrap();
    assert_eq!(db.get("doc-17").unwrap().unwrap().packed, packed);
}

#[test]
fn stream_skips_bad_records_in_place_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    let db = new_db(&dir);
    let mut items = docs(300);
    items[5] = Item::Bad;
    items[250] = Item::Doc("blank".into(), Content::Text(" \n ".into()));
    let (ingest, heard, result) = load(&db, stream(100, true, OnDuplicate::Replace), items, None);
    result.unwrap();
    assert_eq!(heard.skipped, [5, 250]);
    assert_eq!(ingest.counts().skipped_invalid, 2);
    assert_eq!(ingest.counts().committed, 298);
    assert_eq!(present(&db, 300).len(), 298);
    assert!(!db.contains("blank").unwrap() && !db.contains("doc-5").unwrap());
}

#[test]
fn stream_duplicates_skip_stop_or_replace_in_input_order() {
    let dir = tempfile::tempdir().unwrap();
    let db = new_db(&dir);
    let (_, _, result) = load(&db, stream(10, false, OnDuplicate::Replace), docs(5), None);
    result.unwrap();
    // Skip: stored keys and repeats within the load keep their first document.
    let mut again = docs(8);
    again.push(Item::Doc(
        "doc-6".into(),
        Content::Text("a different text".into()),
    ));
    let before = db.get("doc-6").unwrap();
    let (ingest, _, result) = load(
        &db,
        stream(3, false, OnDuplicate::Skip),
        again.clone(),
        None,
    );
    result.unwrap();
    assert_eq!(ingest.counts().skipped_duplicates, 6);
    assert_eq!(ingest.counts().committed, 3);
    assert_ne!(db.get("doc-6").unwrap(), before);
    let first_doc_6 = db.get("doc-6").unwrap();
    // Error: stops at the first stored key, everything before it committed.
    let mut fresh: Vec<Item> = (100..104).map(text_doc).collect();
    fresh.push(text_doc(2));
    fresh.push(text_doc(200));
    let (ingest, _, result) = load(&db, stream(100, false, OnDuplicate::Error), fresh, None);
    match result {
        Err(Stop::Rejected(r)) => {
            assert!(matches!(r.fault, Fault::Duplicate));
            assert_eq!((r.origin, r.key.as_deref()), (4, Some(&b"doc-2"[..])));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(ingest.counts().committed, 4);
    assert!(db.contains("doc-103").unwrap() && !db.contains("doc-200").unwrap());
    // Replace: the last record of a key wins.
    let (_, _, result) = load(&db, stream(100, false, OnDuplicate::Replace), again, None);
    result.unwrap();
    let last = db.get("doc-6").unwrap();
    assert_ne!(last, first_doc_6);
    db.insert_text("probe", "a different text").unwrap();
    assert_eq!(
        db.get("probe").unwrap().unwrap().packed,
        last.unwrap().packed
    );
}

#[test]
fn stream_read_failure_stops_at_once_keeping_a_prefix() {
    let dir = tempfile::tempdir().unwrap();
    let db = new_db(&dir);
    let n = 3 * STREAM_CHUNK;
    let fail_at = 2 * STREAM_CHUNK + 1;
    let (ingest, heard, result) = load(
        &db,
        stream(1000, false, OnDuplicate::Replace),
        docs(n),
        Some(fail_at),
    );
    assert!(matches!(result, Err(Stop::Caller(ref e)) if e.contains("read failed")));
    let committed = ingest.counts().committed as usize;
    assert!(committed > 0 && committed < fail_at, "{committed}");
    assert_eq!(present(&db, n), (0..committed).collect::<Vec<_>>());
    assert_eq!(heard.commits.last().unwrap().0, committed as u64);
}

#[test]
fn atomic_batches_before_a_bad_record_stay_its_batch_does_not() {
    let dir = tempfile::tempdir().unwrap();
    let db = new_db(&dir);
    let mut items = docs(1000);
    items[250] = Item::Doc("blank".into(), Content::Text(String::new()));
    let (ingest, heard, result) = load(&db, Mode::Atomic { commit_every: 100 }, items, None);
    match result {
        Err(Stop::Rejected(r)) => {
            assert!(matches!(r.fault, Fault::NoShingles));
            assert_eq!((r.origin, r.key.as_deref()), (250, Some(&b"blank"[..])));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(ingest.counts().committed, 200);
    let totals: Vec<u64> = heard.commits.iter().map(|c| c.0).collect();
    assert_eq!(totals, [100, 200]);
    assert_eq!(present(&db, 1000), (0..200).collect::<Vec<_>>());
}

#[test]
fn atomic_read_failure_commits_the_batches_read_whole() {
    let dir = tempfile::tempdir().unwrap();
    let db = new_db(&dir);
    let (ingest, heard, result) = load(
        &db,
        Mode::Atomic { commit_every: 100 },
        docs(1000),
        Some(250),
    );
    assert!(matches!(result, Err(Stop::Caller(_))));
    assert_eq!(ingest.counts().committed, 200);
    assert_eq!(
        heard.commits,
        [(100, "doc-99".into()), (200, "doc-199".into())]
    );
    assert_eq!(present(&db, 1000), (0..200).collect::<Vec<_>>());
}

#[test]
fn given_signatures_are_checked_for_shape_and_stored_as_given() {
    let dir = tempfile::tempdir().unwrap();
    let db = new_db(&dir);
    let good = db.sketch_text("a given signature's text").unwrap();
    let short = Signature::from_slots(good.slots()[..64].to_vec());
    let records = [
        Record {
            key: b"s".to_vec(),
            content: Content::<String>::Signature(good.clone()),
            keep: None,
            origin: 0usize,
        },
        Record {
            key: b"t".to_vec(),
            content: Content::Signature(short),
            keep: None,
            origin: 1,
        },
    ];
    match commit_batch::<(), _, _>(&db, &records) {
        Err(Stop::Rejected(r)) => {
            assert_eq!(r.origin, 1);
            assert!(matches!(r.fault, Fault::Signature(_)), "{:?}", r.fault);
        }
        other => panic!("{other:?}"),
    }
    assert!(db.is_empty(), "a refused batch commits nothing");
    commit_batch::<(), _, _>(&db, &records[..1]).unwrap();
    db.insert("probe", &good).unwrap();
    assert_eq!(db.get("s").unwrap(), db.get("probe").unwrap());
}
