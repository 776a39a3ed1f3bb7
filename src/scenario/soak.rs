//! The soak: workers drain a large outbox while a seeded random schedule crashes,
//! restarts, pauses and resumes them and jumps the clock. The seed fixes the schedule of
//! faults; how the threads interleave stays as real as SQLite's locks make it.

use std::time::Duration;

use crate::engine::ledger::Ledger;
use crate::engine::worker::Control;
use crate::engine::Engine;

use super::drain::drain_outbox;
use super::error::RunError;
use super::timeline::{absorb, Timeline};

/// A small, fast, seedable generator (splitmix64): enough for a fault schedule.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in 0..n (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }
}

pub fn seed_from_clock() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |d| d.as_nanos() as u64)
}

/// What the schedule did.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct FaultTally {
    pub crashes: u64,
    pub crashes_holding_a_lease: u64,
    pub restarts: u64,
    pub pauses: u64,
    pub resumes: u64,
    pub clock_jumps: u64,
    pub clock_jumped_ms: i64,
}

/// Run the fault schedule while the workers drain the outbox, then bring everyone back
/// and finish the work. Returns when the outbox is empty and every worker idles.
pub(crate) fn run_faults(
    engine: &mut Engine,
    seed: u64,
    ledger: &mut Ledger,
    events: &mut Timeline,
    stall_after: Duration,
    interrupt: &crossbeam_channel::Receiver<i32>,
) -> Result<FaultTally, RunError> {
    let mut rng = Rng::new(seed);
    let mut tally = FaultTally::default();
    let lease = engine.settings.lease_ms();
    let messages = engine.config.messages;
    // About one fault per 40 messages, at most 2,500, spaced by events so the pace follows
    // the work rather than the wall clock.
    let faults = (messages / 40).clamp(10, 2_500);
    let mut events_until_fault = 0u64;
    let mut done_faults = 0;
    let slots = engine.workers().len();
    let mut paused = vec![false; slots];
    while done_faults < faults {
        stop_if_interrupted(interrupt)?;
        if events_until_fault > 0 {
            match engine.events().recv_timeout(Duration::from_millis(20)) {
                Ok(e) => {
                    absorb(e, ledger, events)?;
                    events_until_fault -= 1;
                    continue;
                }
                // Nothing moving (all crashed, paused or waiting for the clock): act now.
                Err(_) => events_until_fault = 0,
            }
        }
        let slot = rng.below(slots as u64) as usize;
        let alive = engine.worker(slot).is_some_and(|w| w.is_alive());
        match rng.below(100) {
            0..=24 if alive => {
                let holding = engine
                    .worker(slot)
                    .is_some_and(|w| w.status().lease.is_some());
                engine.crash(slot);
                paused[slot] = false;
                tally.crashes += 1;
                tally.crashes_holding_a_lease += u64::from(holding);
            }
            0..=44 if !alive => {
                engine.restart(slot, false);
                tally.restarts += 1;
            }
            45..=59 if alive && !paused[slot] => {
                engine.worker(slot).map(|w| w.send(Control::Pause));
                paused[slot] = true;
                tally.pauses += 1;
            }
            60..=79 if alive && paused[slot] => {
                engine.worker(slot).map(|w| w.send(Control::Resume));
                paused[slot] = false;
                tally.resumes += 1;
            }
            80..=99 => {
                let ms = rng.below(2 * lease as u64 + 1) as i64;
                engine.advance(ms);
                tally.clock_jumps += 1;
                tally.clock_jumped_ms += ms;
            }
            _ => continue,
        }
        done_faults += 1;
        events_until_fault = 1 + rng.below(messages * 6 / faults);
    }
    // Everyone back to work; the drain lets any lease a crashed owner left behind expire.
    back_to_work(engine, &paused, &mut tally);
    let (jumps, jumped_ms) = drain_outbox(engine, ledger, events, stall_after, interrupt)?;
    tally.clock_jumps += jumps;
    tally.clock_jumped_ms += jumped_ms;
    Ok(tally)
}

/// Restart every crashed worker and resume every paused one.
fn back_to_work(engine: &mut Engine, paused: &[bool], tally: &mut FaultTally) {
    for (slot, was_paused) in paused.iter().enumerate() {
        let alive = engine.worker(slot).is_some_and(|w| w.is_alive());
        if !alive {
            engine.restart(slot, false);
            tally.restarts += 1;
        } else if *was_paused {
            engine.worker(slot).map(|w| w.send(Control::Resume));
            tally.resumes += 1;
        }
    }
}

fn stop_if_interrupted(interrupt: &crossbeam_channel::Receiver<i32>) -> Result<(), RunError> {
    match interrupt.try_recv() {
        Ok(signo) => Err(RunError::Interrupted(signo)),
        Err(_) => Ok(()),
    }
}
