//! A query's recall stage: the documents sharing a band bucket with the query, gathered from
//! the in-memory tables and every segment, each band's bucket cut to the bucket cap, then made
//! distinct and sorted for verification. Every segment's band filters are asked first, all
//! together, and only the lookups they let through are made.

use std::time::Instant;

use super::query::{DEADLINE_EVERY, check_deadline};
use super::query_cap::{SegmentPart, cap_band};
use super::query_cold::ColdWatch;
use super::state::State;
use super::version::Version;
use crate::Result;

/// The stage a deadline names while candidates are gathered.
const STAGE: &str = "gathering candidates";

/// The candidates of one query.
pub(super) struct Gathered {
    /// Distinct docnos, ascending (in the thread's scratch buffer: hand it back with
    /// [`give_back`] once the query is done with it).
    pub(super) docnos: Vec<u64>,
    /// The lookups waited for the disk: the page cache is cold ([`ColdWatch`]).
    pub(super) cold: bool,
    /// Band buckets hit that were capped (see `QueryStats::hot_buckets`).
    pub(super) hot_buckets: usize,
}

/// Gathers the candidates of the query whose band keys are `band_keys`, the keys of bands
/// `base ..` (all the index's bands from 0, or the bands one size class of a containment
/// index is probed with); `bucket_cap` is the database's. Past `deadline` (checked first, then between bands once every
/// [`DEADLINE_EVERY`] postings), stops with [`Error::DeadlineExceeded`](crate::Error::DeadlineExceeded).
pub(super) fn gather(
    state: &State,
    base: usize,
    band_keys: &[u64],
    bucket_cap: Option<u32>,
    deadline: Option<Instant>,
) -> Result<Gathered> {
    gather_probes(state, [(base, band_keys)], bucket_cap, deadline)
}

/// Gathers the candidates of several probes (a containment query's, one per size class) in
/// one buffer, made distinct once: each probe as [`gather`], of `(base, band_keys)`.
pub(super) fn gather_probes<'k>(
    state: &State,
    probes: impl IntoIterator<Item = (usize, &'k [u64])>,
    bucket_cap: Option<u32>,
    deadline: Option<Instant>,
) -> Result<Gathered> {
    let mut gathered = Gathered {
        docnos: scratch::take(),
        cold: false,
        hot_buckets: 0,
    };
    for probe in probes {
        gather_more(state, probe, bucket_cap, deadline, &mut gathered)?;
    }
    gathered.docnos = distinct_sorted(gathered.docnos);
    Ok(gathered)
}

/// Appends the postings of bands `base ..` of `band_keys` to `into.docnos` (not distinct), as
/// [`gather`] describes.
fn gather_more(
    state: &State,
    (base, band_keys): (usize, &[u64]),
    bucket_cap: Option<u32>,
    deadline: Option<Instant>,
    into: &mut Gathered,
) -> Result<()> {
    check_deadline(deadline, STAGE)?;
    let version = &state.version;
    let mut watch = ColdWatch::start(version, base, band_keys);
    let admitted = Admitted::ask(version, base, band_keys, &mut watch)?;
    let before = into.docnos.len();
    let mut gatherer = Gatherer {
        state,
        base,
        bucket_cap,
        candidates: std::mem::take(&mut into.docnos),
        before,
        from_segments: Vec::with_capacity(version.segments.len()),
        hot_buckets: 0,
        watch,
        admitted,
    };
    let result = gatherer.bands(band_keys, deadline);
    into.docnos = gatherer.candidates;
    result?;
    into.cold |= gatherer.watch.is_cold();
    into.hot_buckets += gatherer.hot_buckets;
    Ok(())
}

/// Hands a query's candidate buffer back to its thread, for the next query.
pub(super) fn give_back(docnos: Vec<u64>) {
    scratch::give_back(docnos);
}

/// Asks each segment whose filter admits `band_key` in band `base + i` to start reading its
/// bucket entries (the next band's, while this one is gathered).
fn cache_bucket_entries(
    version: &Version,
    admitted: &Admitted,
    (base, i): (usize, usize),
    band_key: u64,
) {
    for (s, seg) in version.segments.iter().enumerate() {
        if admitted.admits(i, s) {
            seg.seg.cache_bucket_entries(base + i, band_key);
        }
    }
}

/// Which segments may hold each band's key, by their band filters, asked of every segment
/// and band before any bucket is looked up. Asked one lookup at a time, each filter read
/// waited for a cache miss behind the previous lookup's; asked together, the misses overlap,
/// and a query that matches nothing (most queries of a dedup at ingest) ends here.
struct Admitted {
    /// Words per band: one bit per segment.
    words: usize,
    /// Bit `s % 64` of word `i * words + s / 64`: segment `s` may hold `band_keys[i]` (bands
    /// are counted from the first one looked up).
    bits: Vec<u64>,
}

impl Admitted {
    /// Asks every segment's filter of every band, all their blocks asked of the CPU first,
    /// then asks for the directory slots of the lookups they let through. `watch` times the
    /// first band's filters: on a cold page cache the later ones, and the directory slots,
    /// are read together.
    fn ask(
        version: &Version,
        base: usize,
        band_keys: &[u64],
        watch: &mut ColdWatch<'_>,
    ) -> Result<Self> {
        for (band, &bk) in band_keys.iter().enumerate() {
            for seg in &version.segments {
                seg.seg.cache_filter_block(base + band, bk);
            }
        }
        let admitted = Self::filters_say(version, base, band_keys, watch)?;
        watch.after_filters(|band, segment| admitted.admits(band, segment));
        for (band, &bk) in band_keys.iter().enumerate() {
            for (i, seg) in version.segments.iter().enumerate() {
                if admitted.admits(band, i) && seg.seg.has_band_filters() {
                    seg.seg.cache_directory_slot(base + band, bk);
                }
            }
        }
        Ok(admitted)
    }

    /// What the filters say, band by band.
    fn filters_say(
        version: &Version,
        base: usize,
        band_keys: &[u64],
        watch: &mut ColdWatch<'_>,
    ) -> Result<Self> {
        let words = version.segments.len().div_ceil(64);
        let mut bits = vec![0u64; words * band_keys.len()];
        for (band, &bk) in band_keys.iter().enumerate() {
            for (s, seg) in version.segments.iter().enumerate() {
                if seg.seg.may_hold(base + band, bk)?
                    && let Some(w) = bits.get_mut(band * words + s / 64)
                {
                    *w |= 1 << (s % 64);
                }
            }
            if band == 0 {
                watch.after_first_filters();
            }
        }
        Ok(Admitted { words, bits })
    }

    fn admits(&self, band: usize, segment: usize) -> bool {
        self.bits
            .get(band * self.words + segment / 64)
            .is_some_and(|w| w & (1 << (segment % 64)) != 0)
    }

    /// Whether some segment may hold the band's key.
    fn any(&self, band: usize) -> bool {
        let from = band * self.words;
        self.bits
            .get(from..from + self.words)
            .is_some_and(|words| words.iter().any(|&w| w != 0))
    }
}

/// One query's gathering in progress.
struct Gatherer<'a> {
    state: &'a State,
    /// The band number of the first key (`band` below counts from it).
    base: usize,
    bucket_cap: Option<u32>,
    /// One entry per band bucket hit, in gathering order (not yet distinct).
    candidates: Vec<u64>,
    /// Entries `candidates` held before this gathering (an earlier probe's).
    before: usize,
    /// The parts of the current band's bucket that each segment gave.
    from_segments: Vec<SegmentPart>,
    hot_buckets: usize,
    watch: ColdWatch<'a>,
    admitted: Admitted,
}

impl Gatherer<'_> {
    /// Appends the buckets of every band of `band_keys`; past `deadline` (looked at once
    /// every [`DEADLINE_EVERY`] postings) it stops.
    fn bands(&mut self, band_keys: &[u64], deadline: Option<Instant>) -> Result<()> {
        let version = &self.state.version;
        let mut next_check = DEADLINE_EVERY;
        let in_memory = !self.state.mem.is_empty()
            || self.state.imm.as_ref().is_some_and(|imm| !imm.is_empty());
        for (band, &bk) in band_keys.iter().enumerate() {
            if !in_memory && !self.admitted.any(band) {
                // No source holds the key: nothing to look up, cap or time.
                continue;
            }
            if let Some(&next) = band_keys.get(band + 1) {
                cache_bucket_entries(version, &self.admitted, (self.base, band + 1), next);
            }
            self.band(band, bk)?;
            let gathered = self.gathered();
            self.watch.after_band(band, gathered);
            if gathered >= next_check {
                check_deadline(deadline, STAGE)?;
                next_check = gathered + DEADLINE_EVERY;
            }
        }
        Ok(())
    }

    /// Entries this gathering appended.
    fn gathered(&self) -> usize {
        self.candidates.len() - self.before
    }

    /// Appends the bucket of `band_key` in band `base + band` from every source, cut to the
    /// bucket cap.
    fn band(&mut self, band: usize, band_key: u64) -> Result<()> {
        let band_start = self.candidates.len();
        let number = self.base + band;
        self.state
            .mem
            .bucket_into(number, band_key, &mut self.candidates);
        if let Some(imm) = &self.state.imm {
            imm.bucket_into(number, band_key, &mut self.candidates);
        }
        let capped_by_segment = self.segment_postings(band, band_key)?;
        if let Some(cap) = self.bucket_cap
            && cap_band(
                self.state,
                &mut self.candidates,
                band_start,
                cap as usize,
                (number, band_key),
                &self.from_segments,
            )?
            && !capped_by_segment
        {
            self.hot_buckets += 1;
        }
        Ok(())
    }

    /// Appends every segment's postings of `band_key` in band `base + band`, noting which
    /// part each gave;
    /// returns whether a segment had cut this bucket to the cap when it was written (each such
    /// segment counts as a hot bucket).
    fn segment_postings(&mut self, band: usize, band_key: u64) -> Result<bool> {
        self.from_segments.clear();
        let mut capped = false;
        for (i, seg) in self.state.version.segments.iter().enumerate() {
            let start = self.candidates.len();
            // A filter that rules the key out rules its hot record out too.
            if self.admitted.admits(band, i) {
                let number = self.base + band;
                seg.seg
                    .postings_into(number, band_key, &mut self.candidates)?;
                if seg.seg.hot_count() > 0 && seg.seg.hot_bucket(number, band_key)?.is_some() {
                    self.hot_buckets += 1;
                    capped = true;
                }
            }
            self.from_segments.push(SegmentPart {
                segment: i,
                start,
                end: self.candidates.len(),
            });
            let gathered = self.gathered();
            self.watch.after_segment_lookup(band, i, gathered);
        }
        Ok(capped)
    }
}

/// The buffer a thread gathers its queries' candidates in, kept from one query to the next: a
/// hot query gathers tens of thousands of postings, and a fresh vector for each would grow
/// by copying, and be mapped and unmapped by the allocator, every time.
mod scratch {
    use std::cell::Cell;

    /// Larger buffers are not kept (a rare huge query must not pin its memory).
    const KEEP_MAX: usize = 1 << 20;

    thread_local! {
        static BUFFER: Cell<Vec<u64>> = const { Cell::new(Vec::new()) };
    }

    /// The thread's buffer, empty (a fresh one if a query on this thread already holds it:
    /// rayon may run a second query on a thread whose first waits for its parallel part).
    pub(super) fn take() -> Vec<u64> {
        BUFFER.with(Cell::take)
    }

    /// Returns the buffer for the thread's next query.
    pub(super) fn give_back(mut buffer: Vec<u64>) {
        if buffer.capacity() <= KEEP_MAX {
            buffer.clear();
            BUFFER.with(|b| b.set(buffer));
        }
    }
}

/// The distinct docnos of `gathered` (one entry per band bucket hit), ascending. Many entries
/// over a dense range (a hot query: thousands of candidates, each in many bands) are
/// de-duplicated through a bitmap of the range, in linear time; others are sorted.
pub(super) fn distinct_sorted(mut gathered: Vec<u64>) -> Vec<u64> {
    const BITMAP_MIN_ENTRIES: usize = 128;
    let (Some(&lo), Some(&hi)) = (gathered.iter().min(), gathered.iter().max()) else {
        return gathered;
    };
    // One 64-bit word per 64 docnos of the range: worth it while the words to clear and scan
    // are not many more than the entries.
    let words = ((hi - lo) / 64 + 1) as usize;
    if gathered.len() < BITMAP_MIN_ENTRIES || words > 2 * gathered.len() {
        gathered.sort_unstable();
        gathered.dedup();
        return gathered;
    }
    let mut bitmap = vec![0u64; words];
    for &d in &gathered {
        let rel = d - lo;
        if let Some(w) = bitmap.get_mut((rel / 64) as usize) {
            *w |= 1 << (rel % 64);
        }
    }
    gathered.clear();
    for (i, &word) in bitmap.iter().enumerate() {
        let mut w = word;
        while w != 0 {
            gathered.push(lo + i as u64 * 64 + u64::from(w.trailing_zeros()));
            w &= w - 1;
        }
    }
    gathered
}
