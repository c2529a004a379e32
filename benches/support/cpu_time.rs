//! Timing in the thread's CPU time, for benches on a shared machine: waiting for a core is
//! not counted, so other processes do not inflate a one-thread figure.

use std::time::Duration;

/// CPU time this thread has run (Linux's schedstat; zero elsewhere).
pub fn thread_cpu() -> Duration {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .map_or(Duration::ZERO, Duration::from_nanos)
}

/// The least CPU time of `passes` runs of `run`, and its last result. The thread's CPU clock
/// ticks in milliseconds, so a run shorter than a quarter second is repeated within one
/// timing (and the time divided).
pub fn best_of(passes: usize, mut run: impl FnMut() -> u64) -> (Duration, u64) {
    let t = thread_cpu();
    let mut out = std::hint::black_box(run());
    let once = (thread_cpu() - t).max(Duration::from_millis(1));
    let reps = (Duration::from_millis(250).as_nanos() / once.as_nanos()).max(1) as u32;
    let mut best = Duration::MAX;
    for _ in 0..passes.max(1) {
        let t = thread_cpu();
        for _ in 0..reps {
            out = std::hint::black_box(run());
        }
        best = best.min((thread_cpu() - t) / reps);
    }
    (best, out)
}
