//! The scenario clock: one notion of "now" shared by every worker, the store and the screen.
//!
//! It is either frozen (headless stories move it explicitly) or running at wall time times a
//! speed factor (the dashboard). Either way it can be jumped forward. Times are milliseconds.

use std::sync::{Condvar, Mutex};

use crossbeam_channel::{Receiver, Sender, TrySendError};
use std::time::{Duration, Instant};

/// 2026-01-15T09:00:00.000Z: every scenario starts here, so reports are reproducible.
pub const SCENARIO_START_MS: i64 = 1_768_467_600_000;

#[derive(Debug)]
struct State {
    /// Scenario time at `anchor` (or the frozen time when `anchor` is None).
    base_ms: f64,
    anchor: Option<Instant>,
    speed: f64,
}

impl State {
    fn now(&self) -> f64 {
        match self.anchor {
            Some(at) => self.base_ms + at.elapsed().as_secs_f64() * 1000.0 * self.speed,
            None => self.base_ms,
        }
    }
}

#[derive(Debug)]
pub struct Clock {
    state: Mutex<State>,
    moved: Condvar,
    /// One channel per [`Clock::watch`]er, told whenever the clock moves or changes pace.
    watchers: Mutex<Vec<Sender<()>>>,
}

impl Default for Clock {
    fn default() -> Self {
        Clock::frozen_at(SCENARIO_START_MS)
    }
}

impl Clock {
    /// A clock that only moves when told to.
    pub fn frozen_at(start_ms: i64) -> Clock {
        Clock {
            state: Mutex::new(State {
                base_ms: start_ms as f64,
                anchor: None,
                speed: 1.0,
            }),
            moved: Condvar::new(),
            watchers: Mutex::new(Vec::new()),
        }
    }

    /// A clock that is the wall clock (Unix milliseconds, speed 1): the time separate
    /// processes on one machine share. Separate machines' clocks differ: on PostgreSQL their
    /// leases go by the server's clock instead (`LeaseClock::Server`).
    pub fn wall() -> Clock {
        Clock::wall_shifted(0)
    }

    /// The wall clock `offset_ms` ahead (behind when negative): a machine whose clock is off.
    pub fn wall_shifted(offset_ms: i64) -> Clock {
        let clock = Clock::frozen_at(wall_now_ms().saturating_add(offset_ms));
        clock.resume();
        clock
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Scenario time in whole milliseconds.
    pub fn now(&self) -> i64 {
        self.lock().now().floor() as i64
    }

    pub fn is_running(&self) -> bool {
        self.lock().anchor.is_some()
    }

    pub fn speed(&self) -> f64 {
        self.lock().speed
    }

    /// Let the clock follow wall time times its speed.
    pub fn resume(&self) {
        let mut s = self.lock();
        if s.anchor.is_none() {
            s.anchor = Some(Instant::now());
        }
        drop(s);
        self.moved_now();
    }

    /// Freeze the clock where it is.
    pub fn pause(&self) {
        let mut s = self.lock();
        s.base_ms = s.now();
        s.anchor = None;
        drop(s);
        self.moved_now();
    }

    /// A channel that gets a message whenever the clock jumps, resumes, pauses or changes
    /// speed, so a thread can block on it with its other channels instead of polling.
    /// Messages coalesce: one waiting means "it moved since you last looked".
    pub fn watch(&self) -> Receiver<()> {
        let (tx, rx) = crossbeam_channel::bounded(1);
        self.watchers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(tx);
        rx
    }

    fn moved_now(&self) {
        self.moved.notify_all();
        self.watchers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|w| !matches!(w.try_send(()), Err(TrySendError::Disconnected(_))));
    }

    pub fn set_speed(&self, speed: f64) {
        let mut s = self.lock();
        s.base_ms = s.now();
        if s.anchor.is_some() {
            s.anchor = Some(Instant::now());
        }
        s.speed = speed;
        drop(s);
        self.moved_now();
    }

    /// Jump forward; returns (from, to).
    pub fn advance(&self, ms: i64) -> (i64, i64) {
        let mut s = self.lock();
        let from = s.now();
        s.base_ms = from + ms.max(0) as f64;
        // A running clock goes on from the new time: the wall time since the last resume
        // is in `from` already and must not count a second time.
        if s.anchor.is_some() {
            s.anchor = Some(Instant::now());
        }
        let to = s.base_ms;
        drop(s);
        self.moved_now();
        (from.floor() as i64, to.floor() as i64)
    }

    /// Move the clock back to a given instant (used by reset).
    pub fn set(&self, at_ms: i64) {
        let mut s = self.lock();
        s.base_ms = at_ms as f64;
        if s.anchor.is_some() {
            s.anchor = Some(Instant::now());
        }
        drop(s);
        self.moved_now();
    }

    /// Wait until scenario time reaches `target_ms`, or until `give_up` real time has passed.
    /// Returns true when the target was reached. A frozen clock only gets there by a jump.
    pub fn wait_until(&self, target_ms: i64, give_up: Duration) -> bool {
        let deadline = Instant::now() + give_up;
        let mut s = self.lock();
        loop {
            let now = s.now();
            if now >= target_ms as f64 {
                return true;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            let wait = match s.anchor {
                Some(_) if s.speed > 0.0 => {
                    let real_ms = (target_ms as f64 - now) / s.speed;
                    Duration::from_secs_f64((real_ms / 1000.0).max(0.0001)).min(left)
                }
                _ => left,
            };
            s = self
                .moved
                .wait_timeout(s, wait)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }
}

/// Unix time now in milliseconds.
pub fn wall_now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// `09:00:01.250` for a scenario time (UTC, time of day only).
pub fn hms(ms: i64) -> String {
    let day_ms = ms.rem_euclid(86_400_000);
    let h = day_ms / 3_600_000;
    let m = day_ms / 60_000 % 60;
    let s = day_ms / 1000 % 60;
    let milli = day_ms % 1000;
    format!("{h:02}:{m:02}:{s:02}.{milli:03}")
}

/// `2026-01-15T09:00:01.250Z` for a scenario time.
pub fn iso(ms: i64) -> String {
    let days = ms.div_euclid(86_400_000);
    let (y, mo, d) = civil_from_days(days);
    format!("{y:04}-{mo:02}-{d:02}T{}Z", hms(ms))
}

/// Days since 1970-01-01 to a (year, month, day) date (proleptic Gregorian).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starts_at_nine_and_stays_frozen_until_advanced() {
        let c = Clock::default();
        assert_eq!(iso(c.now()), "2026-01-15T09:00:00.000Z");
        assert!(!c.is_running());
        assert_eq!(c.advance(600), (SCENARIO_START_MS, SCENARIO_START_MS + 600));
        assert_eq!(hms(c.now()), "09:00:00.600");
    }

    #[test]
    fn wait_until_returns_false_on_a_frozen_clock_and_true_after_a_jump() {
        let c = std::sync::Arc::new(Clock::default());
        let target = c.now() + 100;
        assert!(!c.wait_until(target, Duration::from_millis(5)));
        let c2 = c.clone();
        let waiter = std::thread::spawn(move || c2.wait_until(target, Duration::from_secs(30)));
        c.advance(100);
        assert!(waiter.join().unwrap());
    }

    #[test]
    fn a_jump_while_running_moves_the_clock_by_exactly_its_amount() {
        let clock = Clock::frozen_at(0);
        clock.set_speed(1000.0);
        clock.resume();
        // 1000 scenario seconds (about one wall second) pass before the jump.
        assert!(clock.wait_until(1_000_000, Duration::from_secs(60)));
        let (from, to) = clock.advance(250);
        clock.pause();
        assert_eq!(to - from, 250);
        let after = clock.now();
        // Counting the time since the resume twice would put the clock 1000 s further.
        assert!(
            after - to < 500_000,
            "jumped 250 ms to {to}, yet the clock reads {after}"
        );
    }

    #[test]
    fn paused_clock_keeps_its_time() {
        let c = Clock::default();
        c.set_speed(1000.0);
        c.resume();
        let reached = c.wait_until(SCENARIO_START_MS + 50, Duration::from_secs(30));
        assert!(reached);
        c.pause();
        let t = c.now();
        assert!(t >= SCENARIO_START_MS + 50);
        assert_eq!(c.now(), t);
    }
}
