//! Running until the outbox drains: fold what the workers report, jump a frozen clock past
//! leases that crashed owners left, and give up on a stall with a one-line reason.

use std::time::{Duration, Instant};

use crate::engine::ledger::Ledger;
use crate::engine::outbox::OutboxCounts;
use crate::engine::worker::WorkerStatus;
use crate::engine::Engine;

use super::error::RunError;
use super::timeline::{absorb, drain_now, Timeline};

/// The live workers' hands, when every one of them is empty: (slot, actions started).
fn empty_hands(engine: &Engine) -> Option<Vec<(usize, u64)>> {
    engine
        .workers()
        .iter()
        .filter(|w| w.is_alive())
        .map(|w| {
            let s = w.status();
            s.empty_handed().then_some((w.slot, s.acts))
        })
        .collect()
}

/// Fold events until the database says the outbox has drained and no live worker holds
/// work. On a frozen clock, leases that crashed owners left behind are let expire by
/// jumping the clock once every live worker waits for it. Returns the jumps made.
pub(crate) fn drain_outbox(
    engine: &Engine,
    ledger: &mut Ledger,
    events: &mut Timeline,
    stall_after: Duration,
    interrupt: &crossbeam_channel::Receiver<i32>,
) -> Result<(u64, i64), RunError> {
    let leasing = engine.settings.leasing();
    let mut jumps = (0u64, 0i64);
    let mut quiet_since = Instant::now();
    // Outbox counts and claims at the last jump that found every worker waiting, and how
    // many jumps in a row found them the same (changed nothing).
    let mut at_last_jump: (Option<(OutboxCounts, u64)>, u32) = (None, 0);
    let mut next_look = Instant::now();
    let mut acts_seen = 0;
    let mut results = ResultWatch::new(engine, ledger);
    let start = engine.store().outbox_counts()?;
    let progress =
        crate::progress::Progress::messages(start.pending + start.processing + start.processed);
    loop {
        if let Ok(signo) = interrupt.try_recv() {
            return Err(RunError::Interrupted(signo));
        }
        if absorb_arrived(engine, ledger, events)? {
            quiet_since = Instant::now();
        }
        results.check(engine, ledger, stall_after)?;
        if engine.alive_slots().is_empty() {
            return Err(RunError::EveryWorkerStopped);
        }
        // Counting a large outbox reads its indexes: look a few dozen times a second, and
        // never spend more than a tenth of the time counting (10 ms a count at 100,000
        // unfinished messages every 20 ms took a third of a core from the workers).
        if Instant::now() < next_look {
            continue;
        }
        // Look at the hands, then the database, then the hands again: unchanged hands
        // mean no worker picked up work while the counts were read.
        let hands = empty_hands(engine);
        let counting = Instant::now();
        let counts = engine.store().outbox_counts()?;
        next_look = Instant::now() + (counting.elapsed() * 9).max(Duration::from_millis(20));
        progress.set(counts.processed);
        // A claim finds nothing in a drained outbox; an unguarded load may still have
        // taken a snapshot, so without leases the hands must not have moved.
        if counts.drained() && hands.is_some() && (leasing || empty_hands(engine) == hands) {
            return Ok(jumps);
        }
        let statuses: Vec<_> = engine
            .workers()
            .iter()
            .filter(|w| w.is_alive())
            .map(|w| w.status())
            .collect();
        if all_wait_for_the_clock(engine, &statuses, &counts) && engine.events().is_empty() {
            let state = (counts, ledger.claims_ok);
            jump_past_leases(engine, state, &mut at_last_jump, &mut jumps)?;
            continue;
        }
        let acts: u64 = statuses.iter().map(|s| s.acts).sum();
        if acts != acts_seen {
            acts_seen = acts;
            quiet_since = Instant::now();
        }
        check_stall(engine, &statuses, quiet_since, stall_after, &counts)?;
    }
}

/// Wait a moment for events and fold every one that came; true when any did.
fn absorb_arrived(
    engine: &Engine,
    ledger: &mut Ledger,
    events: &mut Timeline,
) -> Result<bool, RunError> {
    let Ok(e) = engine.events().recv_timeout(Duration::from_millis(20)) else {
        return Ok(false);
    };
    absorb(e, ledger, events)?;
    drain_now(engine, ledger, events)?;
    Ok(true)
}

/// Results written, and when (scenario and wall time) that count last grew.
struct ResultWatch {
    written: u64,
    at_ms: i64,
    at: Instant,
    /// Longer than any message can take to be claimed, processed and finalized.
    window: i64,
}

impl ResultWatch {
    fn new(engine: &Engine, ledger: &Ledger) -> ResultWatch {
        let s = &engine.settings;
        ResultWatch {
            written: ledger.results_written(),
            at_ms: engine.clock.now(),
            at: Instant::now(),
            window: 4 * (s.process_ms() + s.lease_ms() + s.idle_ms()),
        }
    }

    /// An error once results stop growing for a window of scenario time and the stall
    /// time of wall time while work is left.
    fn check(
        &mut self,
        engine: &Engine,
        ledger: &Ledger,
        stall_after: Duration,
    ) -> Result<(), RunError> {
        if ledger.results_written() != self.written {
            *self = ResultWatch::new(engine, ledger);
        } else if engine.clock.now() - self.at_ms > self.window
            && self.at.elapsed() > stall_after
            && !engine.store().outbox_counts()?.drained()
        {
            return Err(no_result_written(engine, ledger, self.at_ms));
        }
        Ok(())
    }
}

/// Workers keep claiming yet nothing finishes since `since_ms`: a lease shorter than the
/// processing is taken over mid-message, and every finalize is rejected.
fn no_result_written(engine: &Engine, ledger: &Ledger, since_ms: i64) -> RunError {
    RunError::NoResultWritten {
        secs: (engine.clock.now() - since_ms) / 1000,
        rejected: ledger.rejected_finalizes,
        lease_ms: engine.settings.lease_ms(),
        process_ms: engine.settings.process_ms(),
    }
}

/// Work is left, the clock is frozen, and every live worker waits for a later time.
fn all_wait_for_the_clock(
    engine: &Engine,
    statuses: &[WorkerStatus],
    counts: &OutboxCounts,
) -> bool {
    let now = engine.clock.now();
    !counts.drained()
        && !engine.clock.is_running()
        && statuses
            .iter()
            .all(|s| !s.paused && s.waiting_until.is_some_and(|t| t > now))
}

/// Every worker waits for a frozen clock: only leases of crashed owners, or messages
/// waiting out a retry's backoff, remain, so let them come due. Three jumps in a row that
/// change nothing (no count moved and no message was claimed) mean nothing is left to claim.
fn jump_past_leases(
    engine: &Engine,
    state: (OutboxCounts, u64),
    at_last_jump: &mut (Option<(OutboxCounts, u64)>, u32),
    jumps: &mut (u64, i64),
) -> Result<(), RunError> {
    if at_last_jump.0.as_ref() == Some(&state) {
        at_last_jump.1 += 1;
    } else {
        at_last_jump.1 = 0;
    }
    if at_last_jump.1 >= 3 {
        let counts = &state.0;
        return Err(RunError::NothingToClaim {
            pending: counts.pending,
            processing: counts.processing,
        });
    }
    at_last_jump.0 = Some(state);
    let lease = engine.settings.lease_ms();
    engine.advance(lease + 1);
    jumps.0 += 1;
    jumps.1 += lease + 1;
    Ok(())
}

/// Give up when no worker did anything for longer than `stall_after`.
fn check_stall(
    engine: &Engine,
    statuses: &[WorkerStatus],
    quiet_since: Instant,
    stall_after: Duration,
    counts: &OutboxCounts,
) -> Result<(), RunError> {
    let now = engine.clock.now();
    // A worker waiting for a later scenario time (a long message on a running clock)
    // is busy, not stuck; one inside a statement gets the busy limit on top.
    let someone_waits = engine.clock.is_running()
        && statuses
            .iter()
            .any(|s| s.waiting_until.is_some_and(|t| t > now));
    // One whose wait is over acts next (its status still shows the wait until it does):
    // counting it as idle gave up on a message the moment its processing ended.
    let acting = statuses
        .iter()
        .any(|s| !s.paused && s.waiting_until.is_none_or(|t| t <= now));
    let patience = if acting {
        stall_after + crate::engine::store::busy_give_up()
    } else {
        stall_after
    };
    if !someone_waits && quiet_since.elapsed() > patience {
        return Err(RunError::Stalled {
            secs: stall_after.as_secs(),
            pending: counts.pending,
            processing: counts.processing,
        });
    }
    Ok(())
}
