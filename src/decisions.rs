//! The decision per stored key: keep or drop, the cluster it joins, its most similar kept
//! neighbour and their similarity, from one dedup pass of the index at a threshold. Its one
//! owner for every front: `dedup --apply` (the `apply` module) writes it into files, and the
//! Python binding's `Index.dedup_table` returns it as a table.
//!
//! One greedy pass over the verified pairs decides every keep order: documents are visited
//! in the order, each kept unless a kept document visited before it is a neighbour, and a
//! dropped document's cluster is the first kept neighbour visited (its earliest dropper).
//! `first` visits documents oldest first, so it is the index's own decision (`dedup --format
//! drop`): the kept documents are the star clusters' centers, and each dropped document's
//! cluster is the center whose star took it (`dedup --format clusters`). `last` visits them
//! newest first; `longest` and `shortest` rank them by their set size (the SET_SIZE column:
//! distinct shingles, so repeated boilerplate inside a document does not count), documents
//! without a size last, ties to the earlier insert; `max:FIELD` and `min:FIELD` rank them by
//! the value `add --keep-field FIELD` captured (the KEEP column: numbers by value, strings
//! bytewise), documents without a value last, ties to the earlier insert. Ages are document
//! numbers (in shard order, for shards).
//!
//! Exact copies come out of the pass apart from the pairs: each group's representative is the
//! member the keep order visits first, and the other members take its fate (dropped, in its
//! cluster, with its best match, or with it as best match at similarity 1 when it is kept).
//! So keep `last` decides a group as one document at its newest member's place: an older
//! copy joins the cluster of its representative, not a kept document of an age between them.

mod containment;

pub use containment::Document;

use std::collections::HashMap;
use std::str::FromStr;

use crate::Result;
use crate::db::{CopyGrouping, Db, DedupOptions, PairSide, ReadIndex};
use crate::storage::segment::{DocColumns, KeepRank, KeepValue};

/// Which copy of a near-duplicate group stays.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Keep {
    /// The oldest (insert order), as `dedup --format drop` keeps.
    #[default]
    First,
    /// The newest.
    Last,
    /// The one with the largest set size (most distinct shingles); documents without a size
    /// last, ties to the earlier insert. Needs the SET_SIZE column.
    Longest,
    /// The one with the smallest set size; documents without a size last, ties to the
    /// earlier insert. Needs the SET_SIZE column.
    Shortest,
    /// The one with the highest value of the named field (the index's KEEP column, captured
    /// by `add --keep-field`); documents without a value last, ties to the earlier insert.
    Max(String),
    /// The one with the lowest value of the named field; documents without a value last,
    /// ties to the earlier insert.
    Min(String),
}

impl Keep {
    /// The names [`Keep::from_str`] takes (those of `dedup --keep`), in order.
    pub const NAMES: [&'static str; 6] = [
        "first",
        "last",
        "longest",
        "shortest",
        "max:FIELD",
        "min:FIELD",
    ];

    /// The name [`Keep::from_str`] takes for this order.
    pub fn name(&self) -> String {
        match self {
            Keep::First => "first".into(),
            Keep::Last => "last".into(),
            Keep::Longest => "longest".into(),
            Keep::Shortest => "shortest".into(),
            Keep::Max(field) => format!("max:{field}"),
            Keep::Min(field) => format!("min:{field}"),
        }
    }

    /// Whether this order ranks by the SET_SIZE column.
    fn by_set_size(&self) -> bool {
        matches!(self, Keep::Longest | Keep::Shortest)
    }

    /// Whether this order ranks by a column (set size or keep value) rather than age alone.
    fn ranks_by_column(&self) -> bool {
        !matches!(self, Keep::First | Keep::Last)
    }

    /// The field this order ranks by, for `max` and `min`.
    pub fn keep_field(&self) -> Option<&str> {
        match self {
            Keep::Max(field) | Keep::Min(field) => Some(field),
            _ => None,
        }
    }

    /// The grouping of exact copies whose representative is the member this order visits
    /// first. Exact copies have the same normalized text, so the same set size: under
    /// `longest` and `shortest` they tie, and ties go to the earlier insert. Their keep
    /// values differ.
    fn copy_grouping(&self) -> CopyGrouping {
        match self {
            Keep::First | Keep::Longest | Keep::Shortest => CopyGrouping::Oldest,
            Keep::Last => CopyGrouping::Newest,
            Keep::Max(_) => CopyGrouping::HighestKeep,
            Keep::Min(_) => CopyGrouping::LowestKeep,
        }
    }

    /// The rank of a document with `columns` (lowest first; ties go by age): its set size or
    /// keep value for the orders by one, nothing (every document tied) for `first` and `last`.
    fn rank(&self, columns: &DocColumns) -> KeepRank {
        let size = || columns.set_size.map(|s| KeepValue::Int(i64::from(s)));
        let (value, descending) = match self {
            Keep::First | Keep::Last => (None, false),
            Keep::Longest => (size(), true),
            Keep::Shortest => (size(), false),
            Keep::Max(_) => (columns.keep.clone(), true),
            Keep::Min(_) => (columns.keep.clone(), false),
        };
        KeepRank { value, descending }
    }

    /// Refuses an order `db` cannot rank by: one by set size without the SET_SIZE column,
    /// one by a field that is not the index's keep field.
    fn check_ranks(&self, db: &Db) -> Result<()> {
        let refuse = |why: String| Err(crate::Error::invalid("keep", why));
        if self.by_set_size() && !db.has_set_sizes() {
            return refuse(format!(
                "--keep {self} ranks by set size, and {} has none (created with \
                 --no-set-size, a SimHash index, one of signatures made elsewhere, or of a \
                 version before the column)",
                db.path().display()
            ));
        }
        let Some(field) = self.keep_field() else {
            return Ok(());
        };
        match db.keep_column() {
            Some(column) if column.field == field => Ok(()),
            Some(column) => refuse(format!(
                "--keep {self}: {} keeps the field {:?}, not {field:?} (add --keep-field \
                 chose it)",
                db.path().display(),
                column.field
            )),
            None => refuse(format!(
                "--keep {self} ranks by the field {field:?}, and {} has no keep field (build \
                 it with add --keep-field {field})",
                db.path().display()
            )),
        }
    }
}

impl std::fmt::Display for Keep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.name())
    }
}

impl FromStr for Keep {
    type Err = crate::Error;

    /// One of [`Keep::NAMES`] (FIELD: any non-empty name); anything else is an invalid
    /// `keep`, named in the message.
    fn from_str(name: &str) -> Result<Keep> {
        let field = |f: &str| (!f.is_empty()).then(|| f.to_string());
        let keep = match name.split_once(':') {
            None => match name {
                "first" => Some(Keep::First),
                "last" => Some(Keep::Last),
                "longest" => Some(Keep::Longest),
                "shortest" => Some(Keep::Shortest),
                _ => None,
            },
            Some(("max", f)) => field(f).map(Keep::Max),
            Some(("min", f)) => field(f).map(Keep::Min),
            Some(_) => None,
        };
        keep.ok_or_else(|| {
            crate::Error::invalid(
                "keep",
                format!(
                    "{name:?} is not a keep order: one of {}",
                    Keep::NAMES.join(", ")
                ),
            )
        })
    }
}

/// What happens to one stored document.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Verdict {
    /// True when the document stays.
    pub keep: bool,
    /// The kept document it attaches to (itself when kept), by key number.
    pub cluster: u32,
    /// Its most similar kept neighbour and their similarity (`None` for a kept document).
    pub best_match: Option<(u32, f64)>,
}

/// One stored document's decision, by key.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Decision<'a> {
    /// True when the document stays.
    pub keep: bool,
    /// The key of the kept document it attaches to (its own when kept).
    pub cluster: &'a [u8],
    /// Its most similar kept neighbour's key and their similarity (`None` for a kept
    /// document).
    pub best_match: Option<(&'a [u8], f64)>,
}

/// The verdicts of every document that has a near-duplicate; a stored document without one
/// is kept, alone in its cluster.
#[derive(Default)]
pub struct Decisions {
    keys: Vec<Vec<u8>>,
    numbers: HashMap<Vec<u8>, u32>,
    verdicts: Vec<Option<Verdict>>,
    /// Documents dropped.
    pub dropped: u64,
    /// Of them, exact copies of a kept or dropped document.
    pub exact_copies: u64,
}

/// A verified pair by key number: older, newer, similarity.
type Edge = (u32, u32, f64);

impl Decisions {
    /// Decides every document of `index` at `threshold`.
    pub fn compute(
        index: &dyn ReadIndex,
        threshold: f64,
        opts: DedupOptions,
        keep: &Keep,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<Decisions> {
        let mut d = Decisions::default();
        let mut edges: Vec<Edge> = Vec::new();
        // (representative, copy) by key number.
        let mut copies: Vec<(u32, u32)> = Vec::new();
        let opts = DedupOptions {
            copies: match opts.copies {
                CopyGrouping::Off => CopyGrouping::Off,
                _ => keep.copy_grouping(),
            },
            ..opts
        };
        index.dedup_pairs_with_options(
            threshold,
            opts,
            &mut |p| {
                let (a, b) = (d.number(p.a), d.number(p.b));
                match p.representative {
                    Some(PairSide::A) => copies.push((a, b)),
                    Some(PairSide::B) => copies.push((b, a)),
                    None => edges.push((a, b, p.similarity)),
                }
                Ok(())
            },
            progress,
        )?;
        d.verdicts = vec![None; d.keys.len()];
        let order = d.keep_order(index, keep)?;
        d.greedy(&edges, &order);
        d.best_matches(&edges);
        d.inherit(&copies);
        d.exact_copies = copies.len() as u64;
        d.dropped = d.verdicts.iter().flatten().filter(|v| !v.keep).count() as u64;
        Ok(d)
    }

    /// The key number of `key`, given one if new.
    fn number(&mut self, key: Vec<u8>) -> u32 {
        if let Some(&n) = self.numbers.get(&key) {
            return n;
        }
        let n = self.keys.len() as u32;
        self.keys.push(key.clone());
        self.numbers.insert(key, n);
        n
    }

    fn set(&mut self, n: u32, keep: bool, cluster: u32) {
        if self.verdicts.len() <= n as usize {
            self.verdicts.resize(n as usize + 1, None);
        }
        self.verdicts[n as usize] = Some(Verdict {
            keep,
            cluster,
            best_match: None,
        });
    }

    /// The numbered documents in `keep` order: by rank (the set size or the keep value, for
    /// an order that ranks by one; an error naming the database when an index cannot), then
    /// by age.
    fn keep_order(&self, index: &dyn ReadIndex, keep: &Keep) -> Result<Vec<u32>> {
        for db in index.dbs() {
            keep.check_ranks(db)?;
        }
        let mut ranked = Vec::with_capacity(self.keys.len());
        for (n, key) in self.keys.iter().enumerate() {
            let (age, columns) = age_and_columns(index, key, keep.ranks_by_column())?;
            ranked.push((keep.rank(&columns), age, n as u32));
        }
        match keep {
            Keep::Last => ranked.sort_unstable_by_key(|r| std::cmp::Reverse(r.1)),
            _ => ranked.sort_unstable(),
        }
        Ok(ranked.into_iter().map(|(_, _, n)| n).collect())
    }

    /// Visits the documents in `order`: each is kept unless a kept document visited before
    /// it is a neighbour, and a dropped one's cluster is the first such kept document.
    fn greedy(&mut self, edges: &[Edge], order: &[u32]) {
        let n = self.keys.len();
        let neighbours = Neighbours::of(edges, n);
        let mut visited = vec![false; n];
        let mut dropped_by: Vec<Option<u32>> = vec![None; n];
        for &doc in order {
            visited[doc as usize] = true;
            if let Some(by) = dropped_by[doc as usize] {
                self.set(doc, false, by);
                continue;
            }
            self.set(doc, true, doc);
            for &o in neighbours.of_doc(doc) {
                if !visited[o as usize] && dropped_by[o as usize].is_none() {
                    dropped_by[o as usize] = Some(doc);
                }
            }
        }
    }

    /// The clusters with a dropped document, by key number: each kept center with the
    /// documents it dropped, centers in key-number order, members in key-number order.
    pub fn clusters(&self) -> Vec<(u32, Vec<u32>)> {
        let mut by_center: std::collections::BTreeMap<u32, Vec<u32>> = Default::default();
        for (n, v) in self.verdicts.iter().enumerate() {
            if let Some(v) = v.filter(|v| !v.keep) {
                by_center.entry(v.cluster).or_default().push(n as u32);
            }
        }
        by_center.into_iter().collect()
    }

    /// Each dropped document's most similar kept neighbour.
    fn best_matches(&mut self, edges: &[Edge]) {
        for &(a, b, s) in edges {
            for (doc, other) in [(a, b), (b, a)] {
                let kept = self.verdict_of(other).is_some_and(|v| v.keep);
                let Some(Some(v)) = self.verdicts.get(doc as usize) else {
                    continue;
                };
                if !v.keep && kept && closer(s, other, v.best_match, &self.keys) {
                    let best = Some((other, s));
                    if let Some(Some(v)) = self.verdicts.get_mut(doc as usize) {
                        v.best_match = best;
                    }
                }
            }
        }
    }

    /// Each exact copy takes its representative's fate: dropped, in the cluster of the kept
    /// representative (best match: it, at similarity 1) or of the dropped one (with its best
    /// match: the copy's similarity to every document is the representative's).
    fn inherit(&mut self, copies: &[(u32, u32)]) {
        for &(rep, copy) in copies {
            let verdict = match self.verdict_of(rep) {
                Some(v) if !v.keep => v,
                _ => Verdict {
                    keep: false,
                    cluster: rep,
                    best_match: Some((rep, 1.0)),
                },
            };
            self.set(copy, false, verdict.cluster);
            self.verdicts[copy as usize] = Some(verdict);
        }
    }

    fn verdict_of(&self, n: u32) -> Option<Verdict> {
        self.verdicts.get(n as usize).copied().flatten()
    }

    /// The verdict of `key`, if it has a near-duplicate.
    pub fn get(&self, key: &[u8]) -> Option<Verdict> {
        self.verdict_of(*self.numbers.get(key)?)
    }

    /// The decision of the stored document `key`: its verdict, or kept alone in its own
    /// cluster when it has no near-duplicate (the caller knows `key` is stored).
    pub fn decision<'a>(&'a self, key: &'a [u8]) -> Decision<'a> {
        match self.get(key) {
            Some(v) => Decision {
                keep: v.keep,
                cluster: self.key(v.cluster),
                best_match: v.best_match.map(|(k, s)| (self.key(k), s)),
            },
            None => Decision {
                keep: true,
                cluster: key,
                best_match: None,
            },
        }
    }

    /// The key numbered `n`.
    pub fn key(&self, n: u32) -> &[u8] {
        self.keys.get(n as usize).map_or(&[], Vec::as_slice)
    }
}

/// True when `candidate` at similarity `s` beats `best`: more similar, or as similar with
/// the smaller key (so the choice does not depend on the order pairs come in).
fn closer(s: f64, candidate: u32, best: Option<(u32, f64)>, keys: &[Vec<u8>]) -> bool {
    match best {
        None => true,
        Some((b, bs)) => s > bs || (s == bs && keys[candidate as usize] < keys[b as usize]),
    }
}

/// A key's age, `(shard, document number)`, and its column values when `with_columns`: a key in two shards is
/// the later shard's document.
fn age_and_columns(
    index: &dyn ReadIndex,
    key: &[u8],
    with_columns: bool,
) -> Result<((usize, u64), DocColumns)> {
    for (shard, db) in index.dbs().iter().enumerate().rev() {
        if let Some(docno) = db.docno_of(key)? {
            let columns = match with_columns {
                true => db.columns_of_docno(docno)?,
                false => DocColumns::default(),
            };
            return Ok(((shard, docno), columns));
        }
    }
    // Deleted since the pass: last, in any order.
    Ok(((usize::MAX, u64::MAX), DocColumns::default()))
}

/// Each document's neighbours in the pairs graph, by key number (compressed rows).
struct Neighbours {
    starts: Vec<u32>,
    ends: Vec<u32>,
}

impl Neighbours {
    fn of(edges: &[Edge], n: usize) -> Neighbours {
        let mut starts = vec![0u32; n + 1];
        for &(a, b, _) in edges {
            starts[a as usize + 1] += 1;
            starts[b as usize + 1] += 1;
        }
        for i in 0..n {
            starts[i + 1] += starts[i];
        }
        let mut fill = starts.clone();
        let mut ends = vec![0u32; starts[n] as usize];
        for &(a, b, _) in edges {
            for (x, y) in [(a, b), (b, a)] {
                ends[fill[x as usize] as usize] = y;
                fill[x as usize] += 1;
            }
        }
        Neighbours { starts, ends }
    }

    fn of_doc(&self, doc: u32) -> &[u32] {
        let (s, e) = (self.starts[doc as usize], self.starts[doc as usize + 1]);
        &self.ends[s as usize..e as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keep_names_parse_to_their_orders_and_others_are_refused_by_name() {
        assert_eq!("first".parse::<Keep>().unwrap(), Keep::First);
        assert_eq!("last".parse::<Keep>().unwrap(), Keep::Last);
        assert_eq!("longest".parse::<Keep>().unwrap(), Keep::Longest);
        assert_eq!("shortest".parse::<Keep>().unwrap(), Keep::Shortest);
        for name in Keep::NAMES {
            assert_eq!(name.parse::<Keep>().unwrap().to_string(), name);
        }
        let field = Keep::Max("quality".into());
        assert_eq!(field.to_string().parse::<Keep>().unwrap(), field);
        assert_eq!("max:q".parse::<Keep>().unwrap(), Keep::Max("q".into()));
        assert_eq!("min:a:b".parse::<Keep>().unwrap(), Keep::Min("a:b".into()));
        for bad in ["First", "max:", "median:x", "max", ""] {
            let e = bad.parse::<Keep>().unwrap_err().to_string();
            assert!(
                e.contains("`keep`") && e.contains(&format!("{bad:?}")),
                "{e}"
            );
        }
    }

    #[test]
    fn a_document_without_verdict_is_kept_alone() {
        let d = Decisions::default();
        let alone = d.decision(b"a");
        assert_eq!(
            alone,
            Decision {
                keep: true,
                cluster: b"a",
                best_match: None
            }
        );
    }
}
