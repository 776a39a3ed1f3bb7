//! `leaselab bench`: throughput of the claim loop on real SQLite, measured against the
//! ceiling of the same database file in the same run, so ratios survive a noisy machine.

mod effectum;
mod pg;

pub use effectum::{measure as measure_effectum, time_limit as effectum_time_limit};
pub use pg::{measure_pg, PgComparison, PgRun, Versus};

use crate::engine::outbox::prelude::*;
use std::path::Path;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::engine::clock::SCENARIO_START_MS;
use crate::engine::outbox::{ClaimOutcome, Durability, FinalizeOutcome, StoreShared};
use crate::engine::provider::Provider;
use crate::engine::store::{
    events_ns_on_this_thread, time_events_on_this_thread, PlainOutbox, Store,
};
use crate::engine::worker_id::WorkerId;

/// Leases in the bench never expire: it measures claiming, not recovery.
const BENCH_LEASE_MS: i64 = 3_600_000;
/// How long each burst of the ceiling loop runs; one burst before and one after every run,
/// so each ratio compares numbers measured moments apart on a noisy machine.
const CEILING_BURST: Duration = Duration::from_millis(400);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    Leased,
    Naive,
    Batch,
    /// The reference: a plain claim loop on a plain table (`store::PlainOutbox`).
    Plain,
    /// effectum, a job queue on SQLite, run as its own program (`reference/effectum`).
    Effectum,
}

#[derive(Debug, Clone)]
pub struct BenchOptions {
    pub messages: u64,
    pub workers: Vec<usize>,
    pub durability: Durability,
    pub batch: usize,
    /// Also compare the per-message cost at 1,000 and at `scale_to` messages.
    pub scale_to: Option<u64>,
    /// Also run the leased loop on this PostgreSQL database, beside SQLite.
    pub postgres: Option<String>,
    /// Also run this build of `reference/effectum` beside the leased loop.
    pub effectum: Option<std::path::PathBuf>,
    /// How many times each leased, plain, batch and effectum run is measured; each
    /// target is the median of the rounds' figures.
    pub rounds: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct BenchRun {
    pub mode: Mode,
    /// Which round of the bench measured it (1 to `--rounds`).
    pub round: usize,
    pub workers: usize,
    pub batch: usize,
    pub msgs_per_s: f64,
    /// msgs_per_s over half the ceiling: a message costs two write transactions.
    pub ratio: f64,
    /// The ceiling measured around this run (mean of the bursts before and after it).
    pub ceiling_txn_per_s: f64,
    /// Messages each worker wrote a result for, in worker order.
    pub per_worker: Vec<u64>,
    pub seconds: f64,
    pub exactly_once: bool,
    pub passed: bool,
    pub busy_met: u64,
    /// Where a leased message's time went, summed over the workers, per message.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost: Option<CostSplit>,
}

/// Microseconds per message spent in each part of the leased loop, summed over the
/// workers (so with several workers they add up to more than the wall time per message):
/// the claim transaction, the provider call, the finalize transaction, and of the two
/// transactions the time spent writing their `LeaseEvents` rows. A transaction's time
/// includes its wait for the write lock.
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq)]
pub struct CostSplit {
    pub claim_us: f64,
    pub provider_us: f64,
    pub finalize_us: f64,
    pub events_us: f64,
}

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

/// A bound a figure of the bench should respect.
#[derive(Debug, Clone)]
pub struct Target {
    pub what: &'static str,
    pub bound: f64,
    /// The figure must stay at or under the bound (else reach it).
    pub at_most: bool,
    /// The median of `rounds`.
    pub got: Option<f64>,
    /// The figure of each round that measured it, in round order.
    pub rounds: Vec<f64>,
}

impl Serialize for Target {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("Target", 6)?;
        st.serialize_field("what", self.what)?;
        st.serialize_field("bound", &self.bound)?;
        st.serialize_field("at_most", &self.at_most)?;
        st.serialize_field("got", &self.got)?;
        st.serialize_field("rounds", &self.rounds)?;
        st.serialize_field("met", &self.met())?;
        st.end()
    }
}

impl Target {
    pub fn met(&self) -> Option<bool> {
        self.got.map(|v| {
            if self.at_most {
                v <= self.bound
            } else {
                v >= self.bound
            }
        })
    }
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let op = if self.at_most { "<=" } else { ">=" };
        write!(f, "{} {op} {:.1}: ", self.what, self.bound)?;
        let Some(v) = self.got else {
            return f.write_str("not measured in this run");
        };
        write!(f, "{v:.2}")?;
        if self.rounds.len() > 1 {
            let each: Vec<String> = self.rounds.iter().map(|r| format!("{r:.2}")).collect();
            write!(
                f,
                " (median of {} rounds: {})",
                self.rounds.len(),
                each.join(" ")
            )?;
        }
        f.write_str(if self.met() == Some(true) {
            ", met"
        } else {
            ", NOT met"
        })
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Scaling {
    pub small_messages: u64,
    pub large_messages: u64,
    pub small_us_per_msg: f64,
    pub large_us_per_msg: f64,
    /// large / small: 1.0 means a claim costs the same however long the backlog.
    pub cost_ratio: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct BenchReport {
    pub synchronous: String,
    pub messages: u64,
    /// Median of every ceiling burst of the run.
    pub ceiling_txn_per_s: f64,
    pub runs: Vec<BenchRun>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scaling: Option<Scaling>,
    /// The targets with what this run measured (filled in by [`run`]).
    pub targets: Vec<Target>,
    /// The leased loop on PostgreSQL beside SQLite, with `--db postgres://...`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub postgres: Option<PgComparison>,
}

impl BenchReport {
    /// The targets of this lab on this kind of machine, with what this run measured: each
    /// the median of its figure over the rounds, every figure taken within one round.
    pub fn targets(&self) -> Vec<Target> {
        let ratio = |mode: Mode, round: usize| {
            self.runs
                .iter()
                .find(|r| r.mode == mode && r.workers == 4 && r.round == round)
                .map(|r| r.ratio)
        };
        let over = |mode: Mode| {
            move |k: usize| {
                ratio(Mode::Leased, k)
                    .zip(ratio(mode, k))
                    .map(|(leased, other)| leased / other.max(f64::MIN_POSITIVE))
            }
        };
        let last = self.runs.iter().map(|r| r.round).max().unwrap_or(1);
        let target = |what, bound, figure: &dyn Fn(usize) -> Option<f64>| {
            let rounds: Vec<f64> = (1..=last).filter_map(figure).collect();
            Target {
                what,
                bound,
                at_most: false,
                got: (!rounds.is_empty()).then(|| median(&rounds)),
                rounds,
            }
        };
        let mut v = vec![
            target("leased, 4 workers, ratio to half the ceiling", 0.5, &|k| {
                ratio(Mode::Leased, k)
            }),
            target(
                "batch claims, 4 workers, ratio to half the ceiling",
                1.0,
                &|k| ratio(Mode::Batch, k),
            ),
            target(
                "leased, 4 workers, over the plain claim loop with 4 workers",
                1.3,
                &over(Mode::Plain),
            ),
        ];
        if self.runs.iter().any(|r| r.mode == Mode::Effectum) {
            v.push(target(
                "leased, 4 workers, over effectum with 4 workers",
                1.5,
                &over(Mode::Effectum),
            ));
        }
        if let Some(s) = &self.scaling {
            v.push(Target {
                what: "per-message cost, largest outbox over 1,000 messages",
                bound: 1.3,
                at_most: true,
                got: Some(s.cost_ratio),
                rounds: vec![s.cost_ratio],
            });
        }
        v
    }

    pub fn passed(&self) -> bool {
        self.runs.iter().all(|r| r.passed || r.mode == Mode::Naive)
            && self.postgres.as_ref().is_none_or(PgComparison::passed)
    }

    /// Whether the runs were measured in more than one round (`--rounds`).
    fn in_rounds(&self) -> bool {
        self.runs.iter().any(|r| r.round > 1)
    }

    /// Where a leased message's time went, a line per leased run.
    fn cost_text(&self) -> String {
        let mut t = String::new();
        for r in &self.runs {
            let Some(c) = &r.cost else { continue };
            if t.is_empty() {
                t += "\nper leased message, summed over the workers (a transaction's time includes its wait for the lock):\n";
            }
            let round = if self.in_rounds() {
                format!(", round {}", r.round)
            } else {
                String::new()
            };
            t += &format!(
                "leased, {} worker{}{round}: claim {:.1} us, provider {:.1} us, finalize {:.1} us; of the two transactions, writing the event rows {:.1} us\n",
                r.workers,
                if r.workers == 1 { "" } else { "s" },
                c.claim_us,
                c.provider_us,
                c.finalize_us,
                c.events_us
            );
        }
        t
    }

    pub fn text(&self) -> String {
        let mut t = format!(
            "leaselab bench: {} messages, synchronous={}\nceiling: {:.0} write transactions/s on one connection (median of the bursts around each run; half of it, {:.0}/s, is the message ceiling: a message costs two)\n\n",
            self.messages,
            self.synchronous,
            self.ceiling_txn_per_s,
            self.ceiling_txn_per_s / 2.0
        );
        let rounds = self.in_rounds();
        t += if rounds {
            "mode     workers batch round     msgs/s  ceiling  ratio  once  per-worker share\n"
        } else {
            "mode     workers batch     msgs/s  ceiling  ratio  once  per-worker share\n"
        };
        for r in &self.runs {
            let total: u64 = r.per_worker.iter().sum::<u64>().max(1);
            let shares = r
                .per_worker
                .iter()
                .map(|n| format!("{:.0}%", 100.0 * *n as f64 / total as f64))
                .collect::<Vec<_>>()
                .join(" ");
            let round = if rounds {
                format!(" {:>5}", r.round)
            } else {
                String::new()
            };
            t += &format!(
                "{:<8} {:>7} {:>5}{round} {:>10.0} {:>8.0} {:>6.2}  {:<4}  {}\n",
                serde_json::to_value(r.mode)
                    .ok()
                    .and_then(|v| v.as_str().map(String::from))
                    .unwrap_or_default(),
                r.workers,
                r.batch,
                r.msgs_per_s,
                r.ceiling_txn_per_s,
                r.ratio,
                if r.exactly_once { "yes" } else { "NO" },
                shares
            );
        }
        t += &self.cost_text();
        if let Some(s) = &self.scaling {
            t += &format!(
                "\nper-message cost: {:.1} us at {} messages, {:.1} us at {} messages (x{:.2})\n",
                s.small_us_per_msg,
                s.small_messages,
                s.large_us_per_msg,
                s.large_messages,
                s.cost_ratio
            );
        }
        for target in self.targets() {
            t += &format!("target: {target}\n");
        }
        if let Some(pg) = &self.postgres {
            t += &pg.text();
        }
        t += "\nNaive runs with more than one worker process messages more than once: that is the lesson, not a bench failure.\n";
        t
    }
}

fn fresh_db(
    dir: &Path,
    name: &str,
    messages: u64,
    durability: Durability,
) -> Result<(Store, Arc<StoreShared>, Arc<Provider>), String> {
    let path = dir.join(name);
    let shared = Arc::new(StoreShared::new(durability));
    let (mut store, _) = Store::create(&path, shared.clone()).map_err(|e| e.to_string())?;
    let provider = Arc::new(Provider::new());
    store
        .seed(&provider, messages, SCENARIO_START_MS)
        .map_err(|e| e.to_string())?;
    Ok((store, shared, provider))
}

/// One connection looping the cheapest write transaction, on its own file with the same
/// settings as the runs.
pub struct Ceiling {
    store: Store,
    bursts: Vec<f64>,
}

impl Ceiling {
    pub fn new(dir: &Path, durability: Durability) -> Result<Ceiling, String> {
        let (store, _, _) = fresh_db(dir, "ceiling.db", 1, durability)?;
        Ok(Ceiling {
            store,
            bursts: Vec::new(),
        })
    }

    /// Write transactions per second over one burst.
    pub fn burst(&mut self) -> Result<f64, String> {
        let start = Instant::now();
        let mut n = 0u64;
        while start.elapsed() < CEILING_BURST {
            go_on()?;
            self.store.touch(1).map_err(|e| e.to_string())?;
            n += 1;
        }
        let rate = n as f64 / start.elapsed().as_secs_f64();
        self.bursts.push(rate);
        Ok(rate)
    }

    pub fn median(&self) -> f64 {
        median(&self.bursts)
    }
}

/// The middle value of `v` (the upper one of an even count), 0 when empty.
fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

/// A run with ceiling bursts right before and after it.
fn measured(
    ceiling: &mut Ceiling,
    dir: &Path,
    mode: Mode,
    workers: usize,
    batch: usize,
    messages: u64,
    durability: Durability,
) -> Result<BenchRun, String> {
    around(ceiling, |before| match mode {
        Mode::Plain => measure_plain(dir, workers, messages, durability, before),
        _ => measure(dir, mode, workers, batch, messages, durability, before),
    })
}

/// `run` between two ceiling bursts, its ratio taken against their mean.
fn around(
    ceiling: &mut Ceiling,
    run: impl FnOnce(f64) -> Result<BenchRun, String>,
) -> Result<BenchRun, String> {
    let before = ceiling.burst()?;
    let mut run = run(before)?;
    go_on()?;
    let around = (before + ceiling.burst()?) / 2.0;
    run.ceiling_txn_per_s = around;
    run.ratio = run.msgs_per_s / (around / 2.0);
    Ok(run)
}

/// Release the workers waiting at `barrier`, then join them: each one's count and the
/// seconds from the release to the last one's end.
fn start_and_join<T>(
    barrier: &Barrier,
    handles: Vec<std::thread::JoinHandle<Result<T, String>>>,
) -> Result<(Vec<T>, f64), String> {
    barrier.wait();
    let start = Instant::now();
    let mut per_worker = Vec::with_capacity(handles.len());
    for h in handles {
        per_worker.push(
            h.join()
                .map_err(|_| "a bench worker panicked".to_string())??,
        );
    }
    Ok((per_worker, start.elapsed().as_secs_f64()))
}

/// Exactly once, as the provider saw it: one status check per key, every row Processed.
fn each_once(provider: &Provider, processed: u64, messages: u64) -> bool {
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
) -> Result<BenchRun, String> {
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
            std::thread::spawn(move || -> Result<(u64, Spent), String> {
                let mut s = Store::open(&path, shared).map_err(|e| e.to_string())?;
                let me = WorkerId::first(slot).to_string();
                barrier.wait();
                work(&mut s, &provider, &me, mode, batch).map_err(|e| e.to_string())
            })
        })
        .collect();
    let (done, seconds) = start_and_join(&barrier, handles)?;
    let per_worker: Vec<u64> = done.iter().map(|(n, _)| *n).collect();
    let mut spent = Spent::default();
    for (_, s) in &done {
        spent.add(s);
    }
    let counts = store.outbox_counts().map_err(|e| e.to_string())?;
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
) -> Result<BenchRun, String> {
    let path = dir.join(format!("plain-{workers}-{messages}.db"));
    let shared = Arc::new(StoreShared::new(durability));
    let first = PlainOutbox::create(&path, shared.clone(), messages).map_err(|e| e.to_string())?;
    let provider = Arc::new(Provider::new());
    for n in 1..=messages {
        provider.create_payment(&crate::engine::store::payment_key(n));
    }
    let barrier = Arc::new(Barrier::new(workers + 1));
    let handles: Vec<_> = (0..workers)
        .map(|slot| {
            let (path, shared) = (path.clone(), shared.clone());
            let (provider, barrier) = (provider.clone(), barrier.clone());
            std::thread::spawn(move || -> Result<u64, String> {
                let mut s = PlainOutbox::open(&path, shared).map_err(|e| e.to_string())?;
                let me = WorkerId::first(slot).to_string();
                barrier.wait();
                let now = SCENARIO_START_MS;
                let mut written = 0;
                while let Some((id, key)) = s
                    .claim(&me, now, BENCH_LEASE_MS)
                    .map_err(|e| e.to_string())?
                {
                    if stop_asked() {
                        break;
                    }
                    provider.check_status(&key);
                    written += u64::from(s.finalize(id, &me).map_err(|e| e.to_string())?);
                }
                Ok(written)
            })
        })
        .collect();
    let (per_worker, seconds) = start_and_join(&barrier, handles)?;
    let processed = first.processed().map_err(|e| e.to_string())?;
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
) -> Result<(u64, Spent), crate::engine::outbox::OutboxError> {
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

/// The whole bench: the SQLite runs, then with a PostgreSQL URL the leased loop on both.
pub fn run(opts: &BenchOptions, mut progress: impl FnMut(&str)) -> Result<BenchReport, String> {
    // A PostgreSQL database that cannot be used is refused before minutes of SQLite runs.
    if let Some(url) = &opts.postgres {
        pg::ready(url)?;
    }
    if let Some(program) = &opts.effectum {
        effectum::ready(program)?;
    }
    let mut report = run_sqlite(opts, &mut progress)?;
    if let Some(url) = &opts.postgres {
        let dir = scratch_folder()?;
        let (workers, d) = (&opts.workers, opts.durability);
        let pg = pg::compare(url, workers, opts.messages, d, dir.path(), &mut progress)?;
        report.postgres = Some(pg);
    }
    Ok(report)
}

/// Ceiling, leased and batch runs for each worker count, naive runs for one and two
/// workers (more only multiplies the duplicates), and optionally the scaling.
fn run_sqlite(opts: &BenchOptions, mut progress: impl FnMut(&str)) -> Result<BenchReport, String> {
    let dir = scratch_folder()?;
    let d = opts.durability;
    let mut ceiling = Ceiling::new(dir.path(), d)?;
    let mut runs = Vec::new();
    for &w in &opts.workers {
        for round in 1..=opts.rounds.max(1) {
            let of = if opts.rounds > 1 {
                format!(", round {round} of {}", opts.rounds)
            } else {
                String::new()
            };
            let mut step = |what: String| progress(&format!("{what}, {}{of}", workers(w)));
            for mut run in one_round(&mut ceiling, dir.path(), opts, w, &mut step)? {
                run.round = round;
                runs.push(run);
            }
        }
    }
    for w in [1, 2] {
        go_on()?;
        progress(&format!("naive, {}", workers(w)));
        runs.push(measured(
            &mut ceiling,
            dir.path(),
            Mode::Naive,
            w,
            1,
            opts.messages,
            d,
        )?);
        clean(dir.path(), "ceiling.db");
    }
    let scaling = match opts.scale_to {
        Some(large) => {
            progress(&format!("scaling, 1000 vs {large} messages"));
            Some(scaling(dir.path(), large, d)?)
        }
        None => None,
    };
    let ceiling_txn_per_s = ceiling.median();
    let mut report = BenchReport {
        synchronous: d.pragma().to_lowercase(),
        messages: opts.messages,
        ceiling_txn_per_s,
        runs,
        scaling,
        targets: Vec::new(),
        postgres: None,
    };
    report.targets = report.targets();
    Ok(report)
}

/// What a bench stopped by a signal answers: its runs end at their next message, and the
/// bench with them (the command line reports the signal).
pub const STOPPED: &str = "the bench was stopped";

/// Whether a stopping signal arrived (see `signals::watch`): every loop of the bench asks
/// before each message or transaction.
fn stop_asked() -> bool {
    crate::signals::received().is_some()
}

/// `Err(STOPPED)` once a stopping signal arrived, between two runs.
fn go_on() -> Result<(), String> {
    if stop_asked() {
        Err(STOPPED.to_string())
    } else {
        Ok(())
    }
}

/// A folder for the bench's databases in the temporary folder, named with this process's
/// pid; the folders of benches killed before they could remove theirs go first.
fn scratch_folder() -> Result<tempfile::TempDir, String> {
    let tmp = std::env::temp_dir();
    crate::leftovers::sweep(&tmp, "leaselab-bench-");
    tempfile::Builder::new()
        .prefix(&crate::leftovers::prefix("leaselab-bench-"))
        .tempdir_in(&tmp)
        .map_err(|e| format!("cannot create a temporary folder: {e}"))
}

/// "1 worker", "4 workers".
fn workers(n: usize) -> String {
    format!("{n} worker{}", if n == 1 { "" } else { "s" })
}

/// One round for `workers`: the leased, plain, batch and (with `--effectum`) effectum runs,
/// back to back, each between two ceiling bursts.
fn one_round(
    ceiling: &mut Ceiling,
    dir: &Path,
    opts: &BenchOptions,
    workers: usize,
    progress: &mut dyn FnMut(String),
) -> Result<Vec<BenchRun>, String> {
    let (w, n, d) = (workers, opts.messages, opts.durability);
    let mut runs = Vec::new();
    for (mode, batch) in [
        (Mode::Leased, 1),
        (Mode::Plain, 1),
        (Mode::Batch, opts.batch),
    ] {
        progress(match mode {
            Mode::Plain => "plain claim loop".to_string(),
            Mode::Batch => format!("batch {batch}"),
            _ => "leased".to_string(),
        });
        runs.push(measured(ceiling, dir, mode, w, batch, n, d)?);
    }
    if let Some(program) = &opts.effectum {
        progress("effectum".to_string());
        runs.push(around(ceiling, |_| {
            effectum::measure(program, dir, (w, n), effectum::time_limit(n))
        })?);
    }
    clean(dir, "ceiling.db");
    Ok(runs)
}

/// The per-message cost of one worker at 1,000 messages and at `large`.
fn scaling(dir: &Path, large: u64, d: Durability) -> Result<Scaling, String> {
    // A run of 1,000 messages lasts some 60 ms, where one hiccup of the machine
    // moves its figure by a fifth: its cost is the median of five.
    let mut smalls = Vec::new();
    for _ in 0..5 {
        clean(dir, "ceiling.db");
        let run = measure(dir, Mode::Leased, 1, 1, 1_000, d, 1.0)?;
        go_on()?;
        smalls.push(1e6 / run.msgs_per_s);
    }
    let small = median(&smalls);
    let large_run = measure(dir, Mode::Leased, 1, 1, large, d, 1.0)?;
    go_on()?;
    let big = 1e6 / large_run.msgs_per_s;
    Ok(Scaling {
        small_messages: 1_000,
        large_messages: large,
        small_us_per_msg: small,
        large_us_per_msg: big,
        cost_ratio: big / small,
    })
}

/// Remove the databases of finished runs so a long bench does not fill the disk.
fn clean(dir: &Path, keep: &str) {
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            if !e.file_name().to_string_lossy().starts_with(keep) {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
}
