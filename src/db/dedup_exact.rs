//! Exact copies in a dedup pass. Documents inserted by text carry a 128-bit hash of their
//! normalized text (`format/hashing.md` §17); documents that share one are exact copies, whose
//! signatures, band keys and stored sets are identical. So one walk over the live hashes
//! groups them; in the band buckets a copy counts as its representative (else it would be
//! compared with every neighbour of it again), once a bucket over the cap is cut over every
//! document in it, as segments cut it (the representative may be among those cut); and every
//! other member is reported at similarity exactly 1 to its representative.
//!
//! The representative is the member the pass's order ranks first, so it is visited before
//! the other members and they can take its fate: kept, they are dropped in its cluster;
//! dropped, they are dropped with its cluster and best match (identical text, identical
//! similarity to every neighbour).

use std::cmp::Reverse;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use super::columns::for_each_live_columns;
use super::state::State;
use crate::Result;
use crate::storage::segment::{DocColumns, KeepRank};

/// How a dedup pass treats documents with equal exact hashes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CopyGrouping {
    /// Each group's oldest member enters the band scan and stands for the others (the order
    /// keep `first` visits documents in).
    #[default]
    Oldest,
    /// Each group's newest member enters the band scan and stands for the others (the order
    /// keep `last` visits documents in).
    Newest,
    /// The member with the highest keep value stands for the others; members without one
    /// last, ties to the older (the order keep `max:FIELD` visits documents in).
    HighestKeep,
    /// The member with the lowest keep value stands for the others; members without one
    /// last, ties to the older (keep `min:FIELD`).
    LowestKeep,
    /// No grouping: every copy is banded and compared like any document, as in an index
    /// without exact hashes.
    Off,
}

/// One side of a reported pair.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PairSide {
    /// The pair's `a` (the older document).
    A,
    /// The pair's `b` (the newer document).
    B,
}

/// A map from exact hashes, which are already uniform: their low 64 bits are the map's hash.
type ByHash<V> = HashMap<u128, V, BuildHasherDefault<LowBits>>;

#[derive(Default)]
struct LowBits(u64);

impl Hasher for LowBits {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }

    fn write_u128(&mut self, h: u128) {
        self.0 = h as u64;
    }
}

/// The exact copies of a snapshot's live documents, grouped.
#[derive(Debug, Default)]
pub(super) struct ExactCopies {
    /// (representative, copy) docnos, sorted.
    pairs: Vec<(u64, u64)>,
    /// (copy, representative) docnos, sorted by copy.
    by_copy: Vec<(u64, u64)>,
    /// Every docno of a group (representatives and copies), ascending.
    members: Vec<u64>,
    /// A bit per docno up to the last copy's: set for a copy (asked once per posting).
    copy_bits: Vec<u64>,
}

impl ExactCopies {
    /// Groups the live documents of `state` by exact hash (documents without one are alone)
    /// in one walk; each group's representative is its member `grouping` puts first. An
    /// index without the EXACT_HASH column, or `grouping` off, has no copies.
    pub(super) fn group(
        state: &State,
        has_hashes: bool,
        grouping: CopyGrouping,
    ) -> Result<ExactCopies> {
        // Ties go to the older member.
        let by_keep = |descending| {
            move |docno, c: &DocColumns| {
                let value = c.keep.clone();
                (KeepRank { value, descending }, docno)
            }
        };
        match grouping {
            _ if !has_hashes => Ok(ExactCopies::default()),
            CopyGrouping::Off => Ok(ExactCopies::default()),
            CopyGrouping::Oldest => Self::group_by_rank(state, |d, _| d),
            CopyGrouping::Newest => Self::group_by_rank(state, |d, _| Reverse(d)),
            CopyGrouping::HighestKeep => Self::group_by_rank(state, by_keep(true)),
            CopyGrouping::LowestKeep => Self::group_by_rank(state, by_keep(false)),
        }
    }

    /// [`ExactCopies::group`] for any order: `rank` maps a docno and its columns to its
    /// place, lowest first.
    fn group_by_rank<K: Ord>(
        state: &State,
        rank: impl Fn(u64, &DocColumns) -> K,
    ) -> Result<ExactCopies> {
        let mut representative: ByHash<(K, u64)> = ByHash::default();
        // Every member met after the first of its group, with its hash: the representative
        // is only known once the walk is over.
        let mut later: Vec<(u128, u64)> = Vec::new();
        for_each_live_columns(state, |docno, columns| {
            let Some(h) = columns.exact else { return };
            let here = (rank(docno, &columns), docno);
            match representative.entry(h) {
                std::collections::hash_map::Entry::Vacant(v) => _ = v.insert(here),
                std::collections::hash_map::Entry::Occupied(mut o) => {
                    let rep = o.get_mut();
                    let other = if here.0 < rep.0 {
                        std::mem::replace(rep, here).1
                    } else {
                        docno
                    };
                    later.push((h, other));
                }
            }
        })?;
        let mut pairs: Vec<(u64, u64)> = later
            .into_iter()
            .map(|(h, d)| (representative.get(&h).map_or(d, |r| r.1), d))
            .collect();
        pairs.sort_unstable();
        let mut by_copy: Vec<(u64, u64)> = pairs.iter().map(|&(r, c)| (c, r)).collect();
        by_copy.sort_unstable();
        let mut members: Vec<u64> = pairs.iter().flat_map(|&(r, c)| [r, c]).collect();
        members.sort_unstable();
        members.dedup();
        let last = by_copy.last().map_or(0, |&(d, _)| d / 64 + 1);
        let mut copy_bits = vec![0u64; last as usize];
        for &(d, _) in &by_copy {
            copy_bits[(d / 64) as usize] |= 1 << (d % 64);
        }
        Ok(ExactCopies {
            pairs,
            by_copy,
            members,
            copy_bits,
        })
    }

    /// Whether `docno` is a copy (a member other than its group's representative).
    pub(super) fn is_copy(&self, docno: u64) -> bool {
        usize::try_from(docno / 64)
            .ok()
            .and_then(|w| self.copy_bits.get(w))
            .is_some_and(|w| w & (1 << (docno % 64)) != 0)
    }

    /// The docno that stands for `docno` in the band scan: its representative if it is a
    /// copy, else itself.
    pub(super) fn standing_for(&self, docno: u64) -> u64 {
        if !self.is_copy(docno) {
            return docno;
        }
        match self.by_copy.binary_search_by_key(&docno, |&(c, _)| c) {
            Ok(i) => self.by_copy.get(i).map_or(docno, |&(_, r)| r),
            Err(_) => docno,
        }
    }

    /// Every member of a group (representatives and copies), ascending.
    pub(super) fn members(&self) -> &[u64] {
        &self.members
    }

    /// The groups by ordinal, once the pass numbered its documents: `ordinal` gives the
    /// ordinal of a docno (every copy and representative has one).
    pub(super) fn by_ordinal(&self, ordinal: impl Fn(u64) -> Result<u32>) -> Result<CopyOrdinals> {
        let mut pairs: Vec<(u32, u32)> = self
            .pairs
            .iter()
            .map(|&(r, c)| Ok((ordinal(r)?, ordinal(c)?)))
            .collect::<Result<_>>()?;
        pairs.sort_unstable();
        Ok(CopyOrdinals { pairs })
    }
}

/// Exact copies by a pass's ordinals: (representative, copy), sorted.
#[derive(Debug, Default)]
pub(super) struct CopyOrdinals {
    pub(super) pairs: Vec<(u32, u32)>,
}

impl CopyOrdinals {
    /// The copies `representative` stands for, ascending (none for any other ordinal).
    pub(super) fn of(&self, representative: u32) -> impl Iterator<Item = u32> + '_ {
        let start = self.pairs.partition_point(|&(r, _)| r < representative);
        self.pairs
            .get(start..)
            .unwrap_or_default()
            .iter()
            .take_while(move |&&(r, _)| r == representative)
            .map(|&(_, c)| c)
    }

    /// How many copies there are.
    pub(super) fn len(&self) -> u64 {
        self.pairs.len() as u64
    }
}

/// The union of `docnos` and `more` (each ascending, without repeats), ascending, without
/// repeats.
pub(super) fn merge_sorted(docnos: Vec<u64>, more: &[u64]) -> Vec<u64> {
    if more.is_empty() {
        return docnos;
    }
    let mut out = Vec::with_capacity(docnos.len() + more.len());
    let (mut i, mut j) = (0, 0);
    while i < docnos.len() && j < more.len() {
        match docnos[i].cmp(&more[j]) {
            std::cmp::Ordering::Less => {
                out.push(docnos[i]);
                i += 1;
            }
            std::cmp::Ordering::Greater => {
                out.push(more[j]);
                j += 1;
            }
            std::cmp::Ordering::Equal => {
                out.push(docnos[i]);
                i += 1;
                j += 1;
            }
        }
    }
    out.extend_from_slice(&docnos[i..]);
    out.extend_from_slice(&more[j..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_of_a_representative_are_its_run_and_no_other() {
        let c = CopyOrdinals {
            pairs: vec![(1, 4), (1, 7), (3, 5)],
        };
        assert_eq!(c.of(1).collect::<Vec<_>>(), [4, 7]);
        assert_eq!(c.of(3).collect::<Vec<_>>(), [5]);
        assert_eq!(c.of(2).count(), 0);
        assert_eq!(c.of(9).count(), 0);
        assert_eq!(c.len(), 3);
    }

    #[test]
    fn merging_keeps_the_order() {
        assert_eq!(
            merge_sorted(vec![1, 4, 9], &[2, 3, 10]),
            [1, 2, 3, 4, 9, 10]
        );
        assert_eq!(merge_sorted(vec![], &[2]), [2]);
        assert_eq!(merge_sorted(vec![5], &[]), [5]);
        assert_eq!(merge_sorted(vec![1, 3, 5], &[3, 5, 6]), [1, 3, 5, 6]);
    }
}
