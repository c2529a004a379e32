//! A dedup pass's reading of the bands: every band's live postings, read on every core, of
//! which only the buckets of two or more documents are kept (a singleton pairs with nothing),
//! and every docno met, marked as it goes, for the pass's dense ordinals. Holding a band's
//! postings only while it is read keeps the pass's memory to its buckets and a bit per
//! document, instead of 16 bytes per document and band.

use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;
use rayon::prelude::*;

use super::dedup::live_postings;
use super::dedup_exact::{ExactCopies, merge_sorted};
use super::state::State;
use crate::Result;

/// Every band's shared buckets, as sorted `(key32, docno)` runs of two or more, and every live
/// docno with a posting in any band or in a group of exact copies, ascending (a group's
/// members may have lost every posting to segments' bucket caps, and still pair up).
pub(super) struct Scanned {
    pub(super) shared: Vec<Vec<(u32, u64)>>,
    pub(super) docnos: Vec<u64>,
}

/// Reads the `bands` bands of `state` on every core. Copies keep their postings here: a
/// bucket is cut to its cap over every document in it, as segments cut it, before each copy
/// is replaced by its representative.
pub(super) fn scan_bands(state: &State, bands: usize, copies: &ExactCopies) -> Result<Scanned> {
    let seen = SeenDocnos::for_state(state, bands);
    let shared = (0..bands)
        .into_par_iter()
        .map(|band| {
            let postings = live_postings(state, band)?;
            seen.mark(postings.iter().map(|&(_, d)| d));
            Ok(shared_buckets(&postings))
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Scanned {
        shared,
        docnos: merge_sorted(seen.into_sorted(), copies.members()),
    })
}

/// The runs of two or more equal keys of the sorted `postings`.
fn shared_buckets(postings: &[(u32, u64)]) -> Vec<(u32, u64)> {
    let mut out = Vec::new();
    for run in postings.chunk_by(|x, y| x.0 == y.0) {
        if run.len() >= 2 {
            out.extend_from_slice(run);
        }
    }
    out
}

/// The docnos a pass has met.
enum SeenDocnos {
    /// A bit per docno below the database's next one (dense numbering, the common case), and
    /// any docno past them, which the database's numbering rules out but a pass must not drop.
    Bitmap(Vec<AtomicU64>, Mutex<Vec<u64>>),
    /// The docnos themselves, when a bitmap of the range would outweigh the postings (docnos
    /// far apart, as after many deletions).
    List(Mutex<Vec<u64>>),
}

impl SeenDocnos {
    /// A bitmap when the docno range needs no more words than the postings `bands` bands of
    /// `state`'s documents can hold, else a list.
    fn for_state(state: &State, bands: usize) -> Self {
        let words = usize::try_from(state.mem.next_docno() / 64 + 1).unwrap_or(usize::MAX);
        let stored: u64 = state
            .version
            .segments
            .iter()
            .map(|s| s.seg.doc_count())
            .sum();
        let in_memory = state.imm.as_ref().map_or(0, |t| t.len()) + state.mem.len();
        let postings = (stored as usize)
            .saturating_add(in_memory)
            .saturating_mul(bands);
        if words > postings {
            SeenDocnos::List(Mutex::new(Vec::new()))
        } else {
            let bits = (0..words).map(|_| AtomicU64::new(0)).collect();
            SeenDocnos::Bitmap(bits, Mutex::new(Vec::new()))
        }
    }

    /// Marks `docnos` (one band's) as met.
    fn mark(&self, docnos: impl Iterator<Item = u64>) {
        match self {
            SeenDocnos::Bitmap(words, past) => {
                for d in docnos {
                    match words.get((d / 64) as usize) {
                        Some(w) => _ = w.fetch_or(1 << (d % 64), Ordering::Relaxed),
                        None => past.lock().push(d),
                    }
                }
            }
            SeenDocnos::List(list) => {
                let band: Vec<u64> = docnos.collect();
                list.lock().extend(band);
            }
        }
    }

    /// Every docno marked, once, ascending.
    fn into_sorted(self) -> Vec<u64> {
        match self {
            SeenDocnos::Bitmap(words, past) => {
                let mut docnos = Vec::new();
                for (base, w) in (0u64..).step_by(64).zip(words) {
                    let mut bits = w.into_inner();
                    while bits != 0 {
                        docnos.push(base + u64::from(bits.trailing_zeros()));
                        bits &= bits - 1;
                    }
                }
                let mut past = past.into_inner();
                past.sort_unstable();
                past.dedup();
                docnos.extend(past);
                docnos
            }
            SeenDocnos::List(list) => {
                let mut docnos = list.into_inner();
                docnos.par_sort_unstable();
                docnos.dedup();
                docnos
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_runs_of_two_or_more_are_kept() {
        let postings = [
            (1, 10),
            (2, 11),
            (2, 12),
            (3, 13),
            (4, 14),
            (4, 15),
            (4, 16),
        ];
        assert_eq!(
            shared_buckets(&postings),
            [(2, 11), (2, 12), (4, 14), (4, 15), (4, 16)]
        );
        assert!(shared_buckets(&[]).is_empty());
    }

    /// A bitmap and a list give the same docnos, ascending, each once, however the bands
    /// overlap.
    #[test]
    fn bitmap_and_list_agree() {
        let bands: [Vec<u64>; 3] = [vec![5, 64, 63, 700], vec![700, 0, 5], vec![128, 64]];
        let want = vec![0, 5, 63, 64, 128, 700];
        // Room for docnos below 192 only: 700 goes past the bitmap.
        let bitmap = SeenDocnos::Bitmap(
            (0..3).map(|_| AtomicU64::new(0)).collect(),
            Mutex::new(Vec::new()),
        );
        let list = SeenDocnos::List(Mutex::new(Vec::new()));
        for seen in [bitmap, list] {
            bands.par_iter().for_each(|b| seen.mark(b.iter().copied()));
            assert_eq!(seen.into_sorted(), want);
        }
    }
}
