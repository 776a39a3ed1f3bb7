//! What the benchmarks share: the peak memory they report.

/// Peak resident set size of this process, as its system tells it, in MB (0 where it does
/// not).
pub fn peak_rss_mb() -> f64 {
    leaselab::platform::memory::peak_bytes().map_or(0.0, |b| b as f64 / (1024.0 * 1024.0))
}
