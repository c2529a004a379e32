//! This process as a harness measures it on Linux: resident and peak memory, CPU time, major
//! page faults, the load average, and dropping a directory's files from the page cache.

use std::path::Path;
use std::time::Duration;

/// A field of /proc/self/status in KiB (`VmRSS`, `VmHWM`), or 0 where there is none.
fn status_kib(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        })
        .unwrap_or(0)
}

/// Resident memory now, in KiB.
pub fn rss_kib() -> u64 {
    status_kib("VmRSS:")
}

/// The most resident memory this process has had, in KiB.
pub fn peak_rss_kib() -> u64 {
    status_kib("VmHWM:")
}

/// This process's user + system CPU time so far, in seconds (from /proc, in its 100 Hz ticks).
pub fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // The fields after the command name, which is in parentheses and may hold spaces.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the line; the first after the name is field 3.
    let ticks = |i: usize| fields.get(i - 3).and_then(|v| v.parse::<u64>().ok());
    match (ticks(14), ticks(15)) {
        (Some(user), Some(system)) => (user + system) as f64 / 100.0,
        _ => f64::NAN,
    }
}

/// The 1, 5 and 15 minute load averages, as /proc/loadavg gives them.
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

/// The `p` quantile (0..=1) of sorted latencies, in microseconds.
pub fn percentile_us(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i].as_secs_f64() * 1e6
}

/// Major page faults of this thread so far (field 12 of /proc/thread-self/stat).
pub fn majflt() -> u64 {
    std::fs::read_to_string("/proc/thread-self/stat")
        .ok()
        .and_then(|s| {
            let rest = s.rsplit_once(')')?.1.to_owned();
            rest.split_whitespace().nth(9)?.parse().ok()
        })
        .unwrap_or(0)
}

/// Asks the kernel to drop every file of `dir` from the page cache (`dd iflag=nocache`).
pub fn drop_page_cache(dir: &Path) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        let _ = std::process::Command::new("dd")
            .arg(format!("if={}", p.display()))
            .args(["iflag=nocache", "count=0", "status=none"])
            .status();
    }
}
