//! Which segments compaction rewrites next: a log-structured size-class policy.

use crate::storage::manifest::SegmentMeta;

/// Chooses runs of adjacent segments to rewrite as one.
///
/// Segments fall in size classes, `floor(log_factor(docs))`; `factor` adjacent segments of
/// one class are rewritten together, so each document is rewritten about `log_factor(N)`
/// times over the life of a database of N documents. A segment with more than a third of its
/// documents deleted is rewritten on its own, to reclaim them.
#[derive(Clone, Copy, Debug)]
pub(super) struct CompactionPolicy {
    /// Segments of one size class that trigger a rewrite (at least 2).
    pub(super) factor: usize,
}

impl CompactionPolicy {
    /// The next run to rewrite, as a range `(from, to)` of indexes into `segments` (ordered by
    /// document number), or none when the policy is satisfied. `deleted_in` counts a
    /// segment's durably deleted documents.
    pub(super) fn pick(
        &self,
        segments: &[SegmentMeta],
        deleted_in: impl Fn(&SegmentMeta) -> u64,
    ) -> Option<(usize, usize)> {
        let factor = self.factor.max(2) as u64;
        let class = |s: &SegmentMeta| {
            let mut c = 0u32;
            let mut n = s.docs.max(1);
            while n >= factor {
                n /= factor;
                c += 1;
            }
            c
        };
        let mut run_start = 0;
        for (i, seg) in segments.iter().enumerate() {
            if segments
                .get(run_start)
                .is_some_and(|s| class(s) != class(seg))
            {
                run_start = i;
            }
            if (i + 1 - run_start) as u64 >= factor {
                return Some((run_start, i + 1));
            }
        }
        segments
            .iter()
            .position(|s| s.docs > 0 && deleted_in(s) * 3 > s.docs)
            .map(|i| (i, i + 1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn segs(docs: &[u64]) -> Vec<SegmentMeta> {
        let mut base = 0;
        docs.iter()
            .enumerate()
            .map(|(i, &d)| {
                let s = SegmentMeta {
                    id: i as u64 + 1,
                    base,
                    span: d,
                    docs: d,
                    file_len: 0,
                    siglog_crc: 0,
                    meta_crc: 0,
                };
                base += d;
                s
            })
            .collect()
    }

    #[test]
    fn a_run_of_one_size_class_is_rewritten_together() {
        let p = CompactionPolicy { factor: 4 };
        // 1000 documents (class 4), then four of class 2 (16..63 documents).
        let s = segs(&[1000, 20, 30, 40, 50]);
        assert_eq!(p.pick(&s, |_| 0), Some((1, 5)));
        // Three of a class are not enough.
        assert_eq!(p.pick(&s[..4], |_| 0), None);
    }

    #[test]
    fn a_segment_a_third_deleted_is_rewritten_alone() {
        let p = CompactionPolicy { factor: 4 };
        let s = segs(&[1000, 20, 30]);
        assert_eq!(p.pick(&s, |m| if m.id == 2 { 7 } else { 0 }), Some((1, 2)));
        assert_eq!(p.pick(&s, |m| if m.id == 2 { 6 } else { 0 }), None);
    }
}
