//! One measured run: a freshly seeded database, worker threads released together at a
//! barrier, each claiming and finalizing until nothing is left, the provider's counts
//! checked for exactly-once afterwards.

use crate::engine::outbox::prelude::*;
use std::path::Path;
use std::sync::{Arc, Barrier};
use std::time::Instant;

use crate::engine::clock::SCENARIO_START_MS;
use crate::engine::outbox::{ClaimOutcome, Durability, FinalizeOutcome, OutboxError, StoreShared};
use crate::engine::provider::Provider;
use crate::engine::store::{
    events_ns_on_this_thread, time_events_on_this_thread, PlainOutbox, Store,
};
use crate::engine::worker_id::WorkerId;

use super::error::BenchError;
use super::options::{Mode, BENCH_LEASE_MS};
use super::report::{BenchRun, CostSplit};
use super::stop::stop_asked;

/// Nanoseconds a worker spent in each part, before they are divided per message.
#[derive(Debug, Clone, Copy, Default)]
struct Spent {
    claim: u64,
    provider: u64,
    finalize: u64,
    events: u64,
}

impl Spent {
    fn add(&mut self, o: &Spent) {
        self.claim += o.claim;
        self.provider += o.provider;
        self.finalize += o.finalize;
        self.events += o.events;
    }

    fn per_message(&self, messages: u64) -> CostSplit {
        let us = |ns: u64| ns as f64 / 1000.0 / messages.max(1) as f64;
        CostSplit {
            claim_us: us(self.claim),
            provider_us: us(self.provider),
            finalize_us: us(self.finalize),
            events_us: us(self.events),
        }
    }
}

/// A new database file in `dir`, seeded with `messages` payments.
pub(crate) fn fresh_db(
    dir: &Path,
    name: &str,
    messages: u64,
    durability: Durability,
) -> Result<(Store, Arc<StoreShared>, Arc<Provider>), BenchError> {
    let path = dir.join(name);
    let shared = Arc::new(StoreShared::new(durability));
    let (mut store, _) = Store::create(&path, shared.clone())?;
    let provider = Arc::new(Provider::new());
    store.seed(&provider, messages, SCENARIO_START_MS)?;
    Ok((store, shared, provider))
}

/// Release the workers waiting at `barrier`, then join them: each one's count and the
/// seconds from the release to the last one's end.
pub(crate) fn start_and_join<T>(
    barrier: &Barrier,
    handles: Vec<std::thread::JoinHandle<Result<T, BenchError>>>,
) -> Result<(Vec<T>, f64), BenchError> {
    barrier.wait();
    let start = Instant::now();
    let mut per_worker = Vec::with_capacity(handles.len());
    for h in handles {
        per_worker.push(h.join().map_err(|_| BenchError::WorkerPanicked)??);
    }
    Ok((per_worker, start.elapsed().as_secs_f64()))
}

/// Exactly once, as the provider saw it: one status check per key, every row Processed.
pub(crate) fn each_once(provider: &Provider, processed: u64, messages: u64) -> bool {
    let calls = provider.calls();
    processed == messages
        && calls.len() as u64 == messages
        && calls.values().all(|c| c.status_checks == 1)
}

/// One measured run on a freshly seeded database.
pub fn measure(
    dir: &Path,
    mode: Mode,
    workers: usize,
    batch: usize,
    messages: u64,
    durability: Durability,
    ceiling: f64,
) -> Result<BenchRun, BenchError> {
    let name = format!("{mode:?}-{workers}-{batch}-{messages}.db").to_lowercase();
    let (store, shared, provider) = fresh_db(dir, &name, messages, durability)?;
    let path = store.path().to_path_buf();
    let barrier = Arc::new(Barrier::new(workers + 1));
    let handles: Vec<_> = (0..workers)
        .map(|slot| {
            let path = path.clone();
            let shared = shared.clone();
            let provider = provider.clone();
            let barrier = barrier.clone();
            std::thread::spawn(move || -> Result<(u64, Spent), BenchError> {
                let mut s = Store::open(&path, shared)?;
                let me = WorkerId::first(slot).to_string();
                barrier.wait();
                Ok(work(&mut s, &provider, &me, mode, batch)?)
            })
        })
        .collect();
    let (done, seconds) = start_and_join(&barrier, handles)?;
    let per_worker: Vec<u64> = done.iter().map(|(n, _)| *n).collect();
    let mut spent = Spent::default();
    for (_, s) in &done {
        spent.add(s);
    }
    let counts = store.outbox_counts()?;
    let exactly_once = each_once(&provider, counts.processed, messages);
    let timed = Timed {
        per_worker,
        seconds,
        exactly_once,
        busy_met: shared.busy_met.load(std::sync::atomic::Ordering::Relaxed),
    };
    Ok(BenchRun {
        cost: (mode == Mode::Leased).then(|| spent.per_message(messages)),
        ..timed.run((mode, workers, batch), messages, ceiling)
    })
}

/// What a run measured, before it is a [`BenchRun`].
struct Timed {
    per_worker: Vec<u64>,
    seconds: f64,
    exactly_once: bool,
    busy_met: u64,
}

impl Timed {
    /// The run of `(mode, workers, batch)` over `messages`, its ratio taken against `ceiling`.
    fn run(
        self,
        (mode, workers, batch): (Mode, usize, usize),
        messages: u64,
        ceiling: f64,
    ) -> BenchRun {
        let msgs_per_s = messages as f64 / self.seconds;
        BenchRun {
            mode,
            round: 1,
            workers,
            batch,
            msgs_per_s,
            ratio: msgs_per_s / (ceiling / 2.0),
            ceiling_txn_per_s: ceiling,
            per_worker: self.per_worker,
            seconds: self.seconds,
            exactly_once: self.exactly_once,
            passed: self.exactly_once,
            busy_met: self.busy_met,
            cost: None,
        }
    }
}

/// One measured run of the plain reference loop on a fresh file: claim, provider call,
/// finalize, as [`Mode::Leased`] does, without leaselab's payments, event rows and token.
pub fn measure_plain(
    dir: &Path,
    workers: usize,
    messages: u64,
    durability: Durability,
    ceiling: f64,
) -> Result<BenchRun, BenchError> {
    let path = dir.join(format!("plain-{workers}-{messages}.db"));
    let shared = Arc::new(StoreShared::new(durability));
    let first = PlainOutbox::create(&path, shared.clone(), messages)?;
    let provider = Arc::new(Provider::new());
    for n in 1..=messages {
        provider.create_payment(&crate::engine::store::payment_key(n));
    }
    let barrier = Arc::new(Barrier::new(workers + 1));
    let handles: Vec<_> = (0..workers)
        .map(|slot| {
            let (path, shared) = (path.clone(), shared.clone());
            let (provider, barrier) = (provider.clone(), barrier.clone());
            std::thread::spawn(move || -> Result<u64, BenchError> {
                let mut s = PlainOutbox::open(&path, shared)?;
                let me = WorkerId::first(slot).to_string();
                barrier.wait();
                let now = SCENARIO_START_MS;
                let mut written = 0;
                while let Some((id, key)) = s.claim(&me, now, BENCH_LEASE_MS)? {
                    if stop_asked() {
                        break;
                    }
                    provider.check_status(&key);
                    written += u64::from(s.finalize(id, &me)?);
                }
                Ok(written)
            })
        })
        .collect();
    let (per_worker, seconds) = start_and_join(&barrier, handles)?;
    let processed = first.processed()?;
    let exactly_once = each_once(&provider, processed, messages);
    let timed = Timed {
        per_worker,
        seconds,
        exactly_once,
        busy_met: shared.busy_met.load(std::sync::atomic::Ordering::Relaxed),
    };
    Ok(timed.run((Mode::Plain, workers, 1), messages, ceiling))
}

/// One worker's loop until nothing is left; returns how many results it wrote.
fn work(
    s: &mut Store,
    provider: &Provider,
    me: &str,
    mode: Mode,
    batch: usize,
) -> Result<(u64, Spent), OutboxError> {
    let now = SCENARIO_START_MS;
    let mut written = 0;
    let mut spent = Spent::default();
    match mode {
        Mode::Leased => {
            time_events_on_this_thread();
            loop {
                let t = Instant::now();
                let claimed = s.claim_next(me, now, BENCH_LEASE_MS)?.value;
                spent.claim += t.elapsed().as_nanos() as u64;
                let ClaimOutcome::Claimed(lease) = claimed else {
                    spent.events = events_ns_on_this_thread();
                    return Ok((written, spent));
                };
                if stop_asked() {
                    return Ok((written, spent));
                }
                let t = Instant::now();
                let check = provider.check_status(&lease.key);
                let t2 = Instant::now();
                spent.provider += (t2 - t).as_nanos() as u64;
                let outcome = s.finalize(&lease, &check, now)?.value;
                spent.finalize += t2.elapsed().as_nanos() as u64;
                if outcome == FinalizeOutcome::Committed {
                    written += 1;
                }
            }
        }
        Mode::Batch => loop {
            let leases = s.claim_batch(me, now, BENCH_LEASE_MS, batch)?.value;
            if leases.is_empty() || stop_asked() {
                return Ok((written, spent));
            }
            let results: Vec<_> = leases
                .into_iter()
                .map(|l| {
                    let c = provider.check_status(&l.key);
                    (l, c)
                })
                .collect();
            let outcomes = s.finalize_batch(&results, now)?.value;
            written += outcomes
                .iter()
                .filter(|o| **o == FinalizeOutcome::Committed)
                .count() as u64;
        },
        // Measured elsewhere: its own store (`measure_plain`), its own program (`effectum`).
        Mode::Plain | Mode::Effectum => Ok((written, spent)),
        Mode::Naive => loop {
            let pending = s.load_pending(now)?;
            if pending.is_empty() || stop_asked() {
                return Ok((written, spent));
            }
            for msg in &pending {
                let check = provider.check_status(&msg.key);
                s.mark_processed(msg, &check, now)?;
                written += 1;
            }
        },
    }
}
