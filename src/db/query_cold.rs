//! A query on a cold page cache: telling lookups that waited for the disk from lookups served
//! from memory (by timing them, confirmed by the thread's major page faults), and the prefetch
//! hints that make a cold query's later reads overlap instead of queueing one after another.

use std::time::{Duration, Instant};

use super::version::Version;

/// A band's bucket lookups that take this long (plus 2 µs per segment) waited for the disk
/// (one lookup from the page cache takes about a microsecond).
const COLD_LOOKUP: Duration = Duration::from_micros(20);

/// What decoding one posting may take before a lookup counts as waiting for the disk: a hot
/// bucket's thousands of postings take tens of microseconds from memory, and must not be
/// taken for a cold page cache (which would turn every candidate into a `madvise` call).
const POSTING_DECODE: Duration = Duration::from_nanos(50);

/// Bands whose lookups are timed together after the first band: a clock read costs about as
/// much as a warm lookup that a filter answers, and a cold page cache is already caught at
/// the first band (timed alone, segment by segment).
const BANDS_PER_CLOCK_READ: usize = 4;

/// Watches one query's band lookups for waits on the disk. The first slow lookup starts
/// prefetching the later lookups; a second confirms a cold page cache (one slow band alone may
/// be this thread losing the core on a busy machine), and the query then prefetches its
/// candidates' documents and its matches' keys too.
pub(super) struct ColdWatch<'a> {
    version: &'a Version,
    /// The band number of `band_keys[0]` (the bands looked up are consecutive).
    base: usize,
    band_keys: &'a [u64],
    /// Lookups that waited for the disk so far.
    slow_lookups: u32,
    /// A slow band counts only once the thread is seen waiting for the disk (a major page
    /// fault): on a busy machine a warm query is often slow merely for losing its core, and
    /// prefetching its thousands of candidates (two `madvise` calls each) would then be most
    /// of its time.
    faulted: bool,
    /// What a band's lookups (one per segment, about a microsecond each from the page cache)
    /// may take before they count as waiting for the disk.
    cold_band: Duration,
    /// When the clock was last read.
    last: Instant,
    /// Candidates gathered when the clock was last read.
    gathered: usize,
    /// The first band the query looks up (bands no source may hold are skipped): its
    /// lookups are timed one by one.
    first_band: Option<usize>,
    /// Bands looked up since the clock was last read.
    untimed_bands: u32,
}

impl<'a> ColdWatch<'a> {
    /// Starts the clock before the query's first lookup.
    pub(super) fn start(version: &'a Version, base: usize, band_keys: &'a [u64]) -> Self {
        ColdWatch {
            version,
            base,
            band_keys,
            slow_lookups: 0,
            faulted: false,
            cold_band: COLD_LOOKUP + Duration::from_micros(2) * version.segments.len() as u32,
            last: Instant::now(),
            gathered: 0,
            first_band: None,
            untimed_bands: 0,
        }
    }

    /// After segment `segment`'s lookup of band `band`, `gathered` candidates in all. The
    /// first band's lookups are timed one by one, so that a cold query starts prefetching
    /// after its first disk wait even with many segments; later bands are timed whole
    /// ([`ColdWatch::after_band`]).
    #[inline]
    pub(super) fn after_segment_lookup(&mut self, band: usize, segment: usize, gathered: usize) {
        let first = *self.first_band.get_or_insert(band);
        if band != first || self.slow_lookups != 0 || segment + 1 >= self.version.segments.len() {
            return;
        }
        let now = Instant::now();
        if self.waited(now, COLD_LOOKUP, gathered) {
            self.slow_lookups += 1;
            prefetch_lookups(self.version, self.base, self.band_keys, 0);
        }
        self.last = now;
        self.gathered = gathered;
    }

    /// After the first band's filters were asked (before any lookup): if they waited for the
    /// disk, asks for every later band's filter blocks at once, which would otherwise be read
    /// one after another.
    pub(super) fn after_first_filters(&mut self) {
        let now = Instant::now();
        if self.waited(now, self.cold_band, 0) {
            for (band, &bk) in self.band_keys.iter().enumerate().skip(1) {
                for seg in &self.version.segments {
                    seg.seg.prefetch_bucket_directory(self.base + band, bk);
                }
            }
        }
        self.last = now;
    }

    /// After every filter was asked (the later bands' timed together): on a page cache the
    /// filters found cold, asks for the directory slots of the lookups `admits` lets through
    /// (band, segment) together, which the lookups would otherwise read one after another.
    /// The lookups' clock starts here, so that they are not charged with the filters' time.
    pub(super) fn after_filters(&mut self, admits: impl Fn(usize, usize) -> bool) {
        let now = Instant::now();
        let later_bands = self.band_keys.len().saturating_sub(1) as u32;
        if self.faulted || self.waited(now, self.cold_band * later_bands, 0) {
            for (band, &bk) in self.band_keys.iter().enumerate() {
                for (i, seg) in self.version.segments.iter().enumerate() {
                    if admits(band, i) {
                        seg.seg.prefetch_directory_slot(self.base + band, bk);
                    }
                }
            }
        }
        self.last = now;
    }

    /// After every lookup of band `band`, `gathered` candidates in all: the first band looked
    /// up timed alone, then one clock read per [`BANDS_PER_CLOCK_READ`] bands looked up (clock
    /// reads are most of a warm query's fixed cost), none once the cache is known cold.
    #[inline]
    pub(super) fn after_band(&mut self, band: usize, gathered: usize) {
        let first = *self.first_band.get_or_insert(band);
        self.untimed_bands += 1;
        if self.slow_lookups >= 2
            || (band != first && self.untimed_bands < BANDS_PER_CLOCK_READ as u32)
        {
            return;
        }
        let bands = std::mem::take(&mut self.untimed_bands);
        let now = Instant::now();
        if self.waited(now, self.cold_band * bands, gathered) {
            self.slow_lookups += 1;
            // The page cache may be cold: ask for the pages of every later lookup now.
            if self.slow_lookups == 1 {
                prefetch_lookups(self.version, self.base, self.band_keys, band + 1);
            }
        }
        self.last = now;
        self.gathered = gathered;
    }

    /// Whether the lookups since the clock was last read took longer than `allowance` plus
    /// decoding the postings they added, and the thread waited for the disk.
    fn waited(&mut self, now: Instant, allowance: Duration, gathered: usize) -> bool {
        let decoding = POSTING_DECODE * gathered.saturating_sub(self.gathered) as u32;
        if now.duration_since(self.last) >= allowance + decoding && (self.faulted || disk_waited())
        {
            self.faulted = true;
            return true;
        }
        false
    }

    /// Whether the query runs on a cold page cache (two lookups waited for the disk).
    pub(super) fn is_cold(&self) -> bool {
        self.slow_lookups >= 2
    }
}

/// Whether the calling thread has waited for the disk (a major page fault) since it last
/// asked; true where the system does not count them (then timing alone decides).
fn disk_waited() -> bool {
    thread_local! {
        static SEEN: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    }
    let Some(now) = crate::storage::thread_major_faults() else {
        return true;
    };
    SEEN.with(|seen| seen.replace(now) < now)
}

/// Prefetches the directory slots, then the entries, of the bucket lookups of `band_keys`
/// (the keys of bands `base ..`) from `band_keys[from]` on.
pub(super) fn prefetch_lookups(version: &Version, base: usize, band_keys: &[u64], from: usize) {
    let lookups = || {
        band_keys
            .iter()
            .copied()
            .enumerate()
            .skip(from)
            .map(move |(i, bk)| (base + i, bk))
    };
    for (band, bk) in lookups() {
        for seg in &version.segments {
            seg.seg.prefetch_bucket_directory(band, bk);
        }
    }
    for (band, bk) in lookups() {
        for seg in &version.segments {
            seg.seg.prefetch_bucket_entries(band, bk);
        }
    }
}

/// Prefetches the keys of the documents `docnos` (a cold query's matches, whose keys are read
/// next), in docno order so that the reads go through each file once.
pub(super) fn prefetch_keys(version: &Version, docnos: impl Iterator<Item = u64>) {
    let mut docnos: Vec<u64> = docnos.collect();
    docnos.sort_unstable();
    version.prefetch_keys(&docnos);
}
