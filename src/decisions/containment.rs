//! The decision of a containment index: a document is dropped when another, ahead of it in
//! the keep order, holds at least the threshold of it (`|X ∩ Y| / |X| ≥ t`: with `longest`,
//! a quoted paragraph, a page that is a section of a longer one).
//!
//! Containment is not symmetric, so its pairs are found by querying each document as the
//! containment index is queried, and a query needs the document's full signature: the index
//! keeps only b-bit slots, so the documents are read again ([`Decisions::compute_containment`]
//! takes them). Each document's fate depends only on its own containers and the order, so
//! the queries run on every core in any order; the order cannot cycle, so the first document
//! of every group stays.

use rayon::prelude::*;

use super::{Decisions, Keep, Verdict};
use crate::Result;
use crate::db::ingest::Content;
use crate::db::{Metric, QueryOptions, ReadIndex, query_document};

/// A document given again: its key and its text or token list.
pub type Document = (Vec<u8>, Content<String>);

/// A containment found by a query: `(contained, container, containment)` by key number.
type Held = (u32, u32, f64);

impl Decisions {
    /// Decides every document of the containment index `index` at `containment`, given its
    /// documents again (`(key, content)`, texts or token lists as they were stored). A
    /// document is dropped when a document ahead of it in the `keep` order holds at least
    /// `containment` of it. Its cluster is the kept document that holds the most of it, or,
    /// when every such container was dropped, the cluster of the one that holds the most; its
    /// best match is that kept container and its containment (`None` when there is none).
    ///
    /// A document the index does not hold (absent, deleted since) is not decided; one whose
    /// query fails (its text has no shingles) is not decided if the index does not hold it
    /// (`add --skip-invalid` passed over it), and otherwise the failure is the error.
    /// `documents` gives the next documents, a chunk at a time (answered on every core), and
    /// none at the end; `progress` is told the documents answered so far.
    pub fn compute_containment(
        index: &dyn ReadIndex,
        documents: &mut dyn FnMut() -> Vec<Document>,
        containment: f64,
        estimate_only: bool,
        keep: &Keep,
        progress: &mut dyn FnMut(u64),
    ) -> Result<Decisions> {
        if index.params().metric() != Metric::Containment {
            return Err(crate::Error::invalid(
                "containment",
                format!(
                    "{} is not a containment index (its metric is {}): dedup it by its own \
                     metric",
                    index.dbs()[0].path().display(),
                    index.params().metric()
                ),
            ));
        }
        let opts = QueryOptions {
            containment: Some(containment),
            estimate_only,
            ..QueryOptions::default()
        };
        let mut d = Decisions::default();
        let mut held: Vec<Held> = Vec::new();
        let mut answered = 0u64;
        loop {
            let chunk = documents();
            if chunk.is_empty() {
                break;
            }
            answered += chunk.len() as u64;
            let answers: Vec<_> = chunk
                .into_par_iter()
                .map(|(key, doc)| {
                    let result = query_document(index, doc, &opts);
                    (key, result)
                })
                .collect();
            for (key, result) in answers {
                let result = match result {
                    Ok(result) => result,
                    Err(_) if !index.contains(&key)? => continue,
                    Err(e) => return Err(e),
                };
                let mut others = result.matches.into_iter().filter(|m| m.key != key);
                let Some(first) = others.next() else {
                    continue;
                };
                // A row whose id the index does not hold is not decided (it is kept).
                if !index.contains(&key)? {
                    continue;
                }
                let mut contained = None;
                for m in std::iter::once(first).chain(others) {
                    let x = *contained.get_or_insert_with(|| d.number(key.clone()));
                    held.push((x, d.number(m.key), m.similarity));
                }
            }
            progress(answered);
        }
        d.verdicts = vec![None; d.keys.len()];
        let order = d.keep_order(index, keep)?;
        d.decide_contained(&mut held, &order);
        d.dropped = d.verdicts.iter().flatten().filter(|v| !v.keep).count() as u64;
        Ok(d)
    }

    /// Visits the documents in `order`: each is dropped when one visited before it holds it,
    /// its cluster and best match as [`Decisions::compute_containment`] says.
    fn decide_contained(&mut self, held: &mut [Held], order: &[u32]) {
        let mut place = vec![0usize; self.keys.len()];
        for (i, &doc) in order.iter().enumerate() {
            place[doc as usize] = i;
        }
        held.sort_unstable_by_key(|h| h.0);
        for &doc in order {
            let start = held.partition_point(|h| h.0 < doc);
            let end = held.partition_point(|h| h.0 <= doc);
            let ahead = held[start..end]
                .iter()
                .filter(|h| place[h.1 as usize] < place[doc as usize]);
            let mut best: Option<(u32, f64)> = None;
            let mut best_kept: Option<(u32, f64)> = None;
            for &(_, container, c) in ahead {
                let kept = self.verdict_of(container).is_some_and(|v| v.keep);
                if super::closer(c, container, best, &self.keys) {
                    best = Some((container, c));
                }
                if kept && super::closer(c, container, best_kept, &self.keys) {
                    best_kept = Some((container, c));
                }
            }
            let verdict = match (best_kept, best) {
                (Some((kept, _)), _) => Verdict {
                    keep: false,
                    cluster: kept,
                    best_match: best_kept,
                },
                (None, Some((dropped, _))) => Verdict {
                    keep: false,
                    cluster: self.verdict_of(dropped).map_or(dropped, |v| v.cluster),
                    best_match: None,
                },
                (None, None) => Verdict {
                    keep: true,
                    cluster: doc,
                    best_match: None,
                },
            };
            self.verdicts[doc as usize] = Some(verdict);
        }
    }
}
