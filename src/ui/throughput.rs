//! Messages per second over the last minute: results written (finalized or marked),
//! counted per second of wall-clock time. Wall time, not the scenario clock: what caps
//! throughput is how fast SQLite lets one writer after another commit.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// Seconds the strip remembers.
pub const WINDOW_S: usize = 60;

#[derive(Debug, Clone, Default)]
pub struct Throughput {
    /// Results written in each whole second, oldest first (at most [`WINDOW_S`]).
    per_second: VecDeque<u64>,
    /// When the second being counted began, and the results written by then.
    open: Option<(Instant, u64)>,
}

impl Throughput {
    /// Fold in the running total of results written as of `now`. A second with nothing
    /// written counts 0; a total that went down (a reset) starts the count again.
    pub fn sample(&mut self, now: Instant, written: u64) {
        let Some((at, base)) = self.open else {
            self.open = Some((now, written));
            return;
        };
        if written < base {
            self.open = Some((at, written));
            return;
        }
        let whole = now.saturating_duration_since(at).as_secs();
        if whole == 0 {
            return;
        }
        // What came in since the last sample lands in its first whole second.
        self.push(written - base);
        for _ in 1..whole.min(WINDOW_S as u64) {
            self.push(0);
        }
        self.open = Some((at + Duration::from_secs(whole), written));
    }

    fn push(&mut self, n: u64) {
        if self.per_second.len() == WINDOW_S {
            self.per_second.pop_front();
        }
        self.per_second.push_back(n);
    }

    /// The last whole second's count.
    pub fn rate(&self) -> u64 {
        self.per_second.back().copied().unwrap_or(0)
    }

    /// The last minute, oldest first, padded with zeros in front to [`WINDOW_S`] seconds.
    pub fn minute(&self) -> Vec<u64> {
        let mut v = vec![0; WINDOW_S - self.per_second.len()];
        v.extend(self.per_second.iter().copied());
        v
    }
}

/// `minute` in `bars` buckets of (nearly) equal seconds, each its mean, oldest first.
pub fn buckets(minute: &[u64], bars: usize) -> Vec<u64> {
    let n = minute.len();
    if bars == 0 || n == 0 {
        return Vec::new();
    }
    let bars = bars.min(n);
    (0..bars)
        .map(|i| {
            let (from, to) = (i * n / bars, (i + 1) * n / bars);
            let part = &minute[from..to.max(from + 1)];
            part.iter().sum::<u64>() / part.len() as u64
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_each_whole_second_and_zeros_for_quiet_ones() {
        let t0 = Instant::now();
        let mut t = Throughput::default();
        t.sample(t0, 10);
        t.sample(t0 + Duration::from_millis(500), 40);
        assert_eq!(t.rate(), 0, "no whole second yet");
        t.sample(t0 + Duration::from_millis(1_100), 70);
        assert_eq!(t.rate(), 60);
        t.sample(t0 + Duration::from_millis(4_200), 70);
        assert_eq!(t.minute()[WINDOW_S - 4..], [60, 0, 0, 0]);
        // A reset of the ledger starts the count again instead of underflowing.
        t.sample(t0 + Duration::from_millis(4_300), 5);
        t.sample(t0 + Duration::from_millis(5_100), 25);
        assert_eq!(t.rate(), 20);
    }

    #[test]
    fn keeps_one_minute() {
        let t0 = Instant::now();
        let mut t = Throughput::default();
        for s in 0..=100u64 {
            t.sample(t0 + Duration::from_secs(s), s * 3);
        }
        assert_eq!(t.minute().len(), WINDOW_S);
        assert!(t.minute().iter().all(|n| *n == 3));
    }

    #[test]
    fn buckets_average_the_minute() {
        let minute: Vec<u64> = (0..60).map(|s| if s < 30 { 0 } else { 10 }).collect();
        assert_eq!(buckets(&minute, 2), [0, 10]);
        assert_eq!(buckets(&minute, 4), [0, 0, 10, 10]);
        assert_eq!(buckets(&minute, 100).len(), 60);
    }
}
