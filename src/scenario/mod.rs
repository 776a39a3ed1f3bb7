//! The scripted stories, run headless by `leaselab run` and stepped in the dashboard.

pub mod checks;
pub mod report;
mod story;

pub use story::lease_expiry_story;

use std::time::{Duration, Instant};

use crate::engine::checker::{self, HistoryCheck};
use crate::engine::events::{Event, EventKind};
use crate::engine::ledger::Ledger;
use crate::engine::outbox::OutboxError;
use crate::engine::outbox::{
    DbOrigin, OutboxCounts, PaymentCounts, PaymentRow, PaymentStatus, RowsPerKey,
};
use crate::engine::worker::WorkerStatus;
use crate::engine::worker_id::WorkerId;
use crate::engine::{Engine, EngineConfig};
use crate::lesson::LessonRunner;
use crate::setup::{Reliability, Timing};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scenario {
    CompetingNoClaim,
    OutboxLeasing,
    LeaseExpiry,
    Soak,
}

impl Scenario {
    pub const ALL: [Scenario; 4] = [
        Scenario::CompetingNoClaim,
        Scenario::OutboxLeasing,
        Scenario::LeaseExpiry,
        Scenario::Soak,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Scenario::CompetingNoClaim => "competing-no-claim",
            Scenario::OutboxLeasing => "outbox-leasing",
            Scenario::LeaseExpiry => "lease-expiry",
            Scenario::Soak => "soak",
        }
    }

    pub fn summary(self) -> &'static str {
        match self {
            Scenario::CompetingNoClaim => {
                "BEFORE: workers load every pending row and all process them (duplicates)"
            }
            Scenario::OutboxLeasing => {
                "AFTER: lease-expiry recovery on PAY-001, then workers claim the rest, once each"
            }
            Scenario::LeaseExpiry => {
                "the recovery story alone: claim, crash, blocked, expire, reclaim, finalize"
            }
            Scenario::Soak => {
                "random crashes, restarts, pauses and clock jumps from --seed; still once each"
            }
        }
    }

    pub fn from_name(name: &str) -> Option<Scenario> {
        Scenario::ALL.into_iter().find(|s| s.name() == name)
    }

    pub fn names() -> String {
        Scenario::ALL.map(|s| s.name()).join(", ")
    }

    pub fn default_messages(self) -> u64 {
        match self {
            Scenario::LeaseExpiry => 1,
            Scenario::Soak => 100_000,
            _ => 6,
        }
    }

    pub fn default_workers(self) -> usize {
        match self {
            Scenario::Soak => 16,
            _ => 2,
        }
    }

    /// Does this story run with leasing on?
    pub fn leasing(self) -> bool {
        !matches!(self, Scenario::CompetingNoClaim)
    }

    /// Refuse a setup that cannot tell this story: lease-expiry needs leases, and the
    /// recovery story (`story`) needs Worker-A and Worker-B.
    pub fn check_setup(self, leasing: bool, workers: usize, story: bool) -> Result<(), String> {
        if self == Scenario::LeaseExpiry && !leasing {
            return Err(
                "lease-expiry is a story about leases; it cannot run with --no-leasing".into(),
            );
        }
        if story && workers < 2 {
            return Err(format!(
                "{} needs at least 2 workers (the story has Worker-A and Worker-B)",
                self.name()
            ));
        }
        Ok(())
    }

    /// Does it open with the lease-expiry recovery?
    pub fn has_story(self) -> bool {
        matches!(self, Scenario::OutboxLeasing | Scenario::LeaseExpiry)
    }
}

/// What the story proved, read back from the events.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct StoryProof {
    pub a_claimed: bool,
    pub a_crashed_holding: bool,
    pub b_blocked_before_expiry: bool,
    pub b_reclaimed_after_expiry: bool,
    pub reclaimed_processed_once: bool,
    pub lines: Vec<String>,
}

impl StoryProof {
    pub fn holds(&self) -> bool {
        self.a_claimed
            && self.a_crashed_holding
            && self.b_blocked_before_expiry
            && self.b_reclaimed_after_expiry
            && self.reclaimed_processed_once
    }

    pub fn from_events(events: &[Event], ledger: &Ledger) -> StoryProof {
        let a = WorkerId::first(0).to_string();
        let b = WorkerId::first(1).to_string();
        let mut p = StoryProof::default();
        let mut a_until = None;
        for e in events {
            let line = format!(
                "{}  {:<10} {}",
                crate::engine::clock::hms(e.at_ms),
                e.actor,
                e.describe()
            );
            match &e.kind {
                EventKind::Claimed {
                    id: 1, until_ms, ..
                } if e.actor == a && a_until.is_none() => {
                    p.a_claimed = true;
                    a_until = Some(*until_ms);
                    p.lines.push(line);
                }
                EventKind::Crashed {
                    holding: Some((1, ..)),
                    ..
                } if e.actor == a => {
                    p.a_crashed_holding = true;
                    p.lines.push(line);
                }
                EventKind::ClaimBlocked {
                    id: 1,
                    owner,
                    left_ms,
                    ..
                } if e.actor == b && *owner == a && *left_ms >= 0 => {
                    p.b_blocked_before_expiry = true;
                    p.lines.push(line);
                }
                EventKind::ClockMoved { .. }
                    if p.b_blocked_before_expiry && !p.b_reclaimed_after_expiry =>
                {
                    p.lines.push(line);
                }
                EventKind::Claimed {
                    id: 1,
                    reclaim: true,
                    ..
                } if e.actor == b && a_until.is_some_and(|u| e.at_ms > u) => {
                    p.b_reclaimed_after_expiry = true;
                    p.lines.push(line);
                }
                EventKind::ProviderCalled { id: 1, .. } | EventKind::Finalized { id: 1, .. }
                    if e.actor == b =>
                {
                    p.lines.push(line);
                }
                _ => {}
            }
        }
        p.reclaimed_processed_once = ledger.messages.get(&1).is_some_and(|m| {
            m.runs == 1 && m.attempts == 1 && m.processed_by().iter().map(|n| &**n).eq([b.as_str()])
        });
        p
    }
}

/// Settings for a headless run.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// None: the scenario's own default.
    pub workers: Option<usize>,
    pub messages: Option<u64>,
    pub lease_ms: i64,
    pub process_ms: i64,
    pub speed: f64,
    pub db: Option<std::path::PathBuf>,
    pub no_leasing: bool,
    /// Soak: the seed of the fault schedule (None: one from the wall clock).
    pub seed: Option<u64>,
    /// Give up when no event arrives for this long.
    pub stall_after: Duration,
    /// A signal number here stops the run early with [`RunError::Interrupted`].
    pub interrupt: Option<crossbeam_channel::Receiver<i32>>,
    /// A fault a test injects once the engine is seeded, before the workers run.
    pub inject: Option<fn(&Engine)>,
    /// Heartbeats, retries and the dead letter.
    pub reliability: Reliability,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            workers: None,
            messages: None,
            seed: None,
            lease_ms: Timing::HEADLESS.lease_ms,
            process_ms: Timing::HEADLESS.process_ms,
            speed: Timing::HEADLESS.speed,
            db: None,
            no_leasing: false,
            stall_after: Duration::from_secs(60),
            interrupt: None,
            inject: None,
            reliability: Reliability::default(),
        }
    }
}

/// Everything a report needs, captured before the engine (and its database) went away.
#[derive(Debug, Clone)]
pub struct RunOutcome {
    pub scenario: Scenario,
    pub leasing: bool,
    pub workers: usize,
    pub seed: Option<u64>,
    pub faults: Option<soak::FaultTally>,
    pub messages: u64,
    pub lease_ms: i64,
    pub process_ms: i64,
    pub db_path: String,
    /// `SQLite` or `PostgreSQL`.
    pub db_engine: &'static str,
    pub db_kept: bool,
    pub db_origin: DbOrigin,
    /// The leaselab that held the database last and ended without releasing it, if any.
    pub db_recovered: Option<String>,
    /// The schema as the database file holds it.
    pub schema: Vec<String>,
    /// The first events of the timeline (the story among them); the ledger saw them all.
    pub events: Vec<Event>,
    /// How many events the timeline had in all.
    pub timeline_events: u64,
    pub ledger: Ledger,
    pub story: Option<StoryProof>,
    pub outbox: OutboxCounts,
    pub payments: PaymentCounts,
    pub payment_rows: Vec<PaymentRow>,
    pub max_rows_per_key: RowsPerKey,
    pub orphans: u64,
    pub provider_status_checks: u64,
    /// The provider answered a repeated status check from its first answer, with no new
    /// side effect (the soak: its pauses and clock jumps let a lease run out mid-call).
    pub provider_idempotent: bool,
    pub gateway_creation_calls: u64,
    pub creations_by_workers: u64,
    pub max_creations_per_key: u64,
    pub keys_created: u64,
    pub txids_not_issued: u64,
    pub paid_without_provider: u64,
    pub busy_met: u64,
    pub first_rows: Vec<crate::engine::outbox::MessageRow>,
    /// The history checker's verdict over events and the final rows.
    pub history: HistoryCheck,
    pub elapsed: Duration,
}

#[derive(Debug)]
pub enum RunError {
    /// The setup cannot run (exit 2).
    Usage(String),
    /// The database could not be opened or prepared for the run (exit 2).
    Store(OutboxError),
    /// The run started and then failed: a worker's database error, a database that changed
    /// under the run, a stall (exit 3).
    Runtime(String),
    Stalled(String),
    /// A signal (its number) stopped the run before it ended; nothing was checked.
    Interrupted(i32),
}

impl RunError {
    /// Did the run itself fail (rather than its setup)?
    pub fn is_runtime(&self) -> bool {
        matches!(self, RunError::Runtime(_) | RunError::Stalled(_))
    }
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunError::Usage(m) | RunError::Runtime(m) | RunError::Stalled(m) => f.write_str(m),
            RunError::Store(e) => write!(f, "{e}"),
            RunError::Interrupted(signo) => {
                write!(f, "interrupted by {}", crate::signals::name(*signo))
            }
        }
    }
}

/// A database error once the run is under way is a runtime failure.
impl From<OutboxError> for RunError {
    fn from(e: OutboxError) -> Self {
        if e.is_bad_input() {
            RunError::Usage(e.to_string())
        } else {
            RunError::Runtime(e.to_string())
        }
    }
}

/// Opening and seeding: a file that is not ours is bad input; a full disk or a lock held
/// past the busy limit is the run failing.
fn start_error(e: OutboxError) -> RunError {
    use crate::engine::outbox::Failure;
    match e.failure() {
        Some(Failure::Busy | Failure::Full | Failure::Io) => RunError::Runtime(e.to_string()),
        _ => RunError::Store(e),
    }
}

/// The engine a run starts, and whether it tells the lease-expiry story first.
fn engine_config(scenario: Scenario, opts: &RunOptions) -> Result<(EngineConfig, bool), RunError> {
    let leasing = scenario.leasing() && !opts.no_leasing;
    let story = scenario.has_story() && leasing;
    let workers = opts.workers.unwrap_or(scenario.default_workers());
    scenario
        .check_setup(leasing, workers, story)
        .map_err(RunError::Usage)?;
    let config = EngineConfig {
        workers,
        messages: opts.messages.unwrap_or(scenario.default_messages()),
        lease_ms: opts.lease_ms,
        process_ms: opts.process_ms,
        idle_ms: crate::setup::idle_ms(opts.process_ms),
        leasing,
        db: opts.db.clone().map(crate::engine::backend::Db::from),
        durability: crate::engine::outbox::Durability::Full,
        reliability: opts.reliability.clone(),
    };
    Ok((config, story))
}

/// Run a scenario headless from start to end.
pub fn run(scenario: Scenario, opts: &RunOptions) -> Result<RunOutcome, RunError> {
    let (config, story) = engine_config(scenario, opts)?;
    let (leasing, workers, messages) = (config.leasing, config.workers, config.messages);
    let started = Instant::now();
    let interrupt = opts
        .interrupt
        .clone()
        .unwrap_or_else(crossbeam_channel::never);
    let mut engine = Engine::start(config, true).map_err(start_error)?;
    let mut ledger = Ledger::new();
    let mut events = Timeline::default();
    first_moves(&mut engine, story, &mut ledger, &mut events)?;

    // Everyone runs concurrently until nothing is left.
    if opts.process_ms > 0 {
        engine.clock.set_speed(opts.speed);
        engine.clock.resume();
    }
    if let Some(inject) = opts.inject {
        inject(&engine);
    }
    // A paused worker (or a clock jump) can let a lease run out between the provider's
    // answer and the finalize: the row stays right, but only an idempotent provider keeps
    // the payment from being done twice. The soak runs with one, and says so.
    if scenario == Scenario::Soak {
        engine.provider.set_idempotent(true);
    }
    engine.resume_all();
    let (soak_seed, faults) = if scenario == Scenario::Soak {
        let seed = opts.seed.unwrap_or_else(soak::seed_from_clock);
        let faults = soak::run_faults(
            &mut engine,
            seed,
            &mut ledger,
            &mut events,
            opts.stall_after,
            &interrupt,
        )?;
        (Some(seed), Some(faults))
    } else {
        drain_outbox(
            &engine,
            &mut ledger,
            &mut events,
            opts.stall_after,
            &interrupt,
        )?;
        (None, None)
    };
    engine.shutdown_workers();
    engine.clock.pause();
    drain_now(&engine, &mut ledger, &mut events)?;

    capture(
        &engine,
        Ran {
            scenario,
            leasing,
            workers,
            messages,
            story,
            seed: soak_seed,
            faults,
            ledger,
            events,
            started,
        },
        opts,
    )
}

/// Take every event already sent.
fn drain_now(engine: &Engine, ledger: &mut Ledger, events: &mut Timeline) -> Result<(), RunError> {
    while let Ok(e) = engine.events().try_recv() {
        absorb(e, ledger, events)?;
    }
    Ok(())
}

/// What happens before everyone runs: the lease-expiry story, or (leasing off) the barrier
/// at which every worker loads the full pending snapshot.
fn first_moves(
    engine: &mut Engine,
    story: bool,
    ledger: &mut Ledger,
    events: &mut Timeline,
) -> Result<(), RunError> {
    if story {
        let mut runner = LessonRunner::new(lease_expiry_story(&engine.config));
        while !runner.finished() {
            runner
                .apply_next(engine)
                .map_err(|e| RunError::Runtime(format!("the lease-expiry story: {e}")))?;
        }
        drain_now(engine, ledger, events)?;
        // Worker-A comes back as a new incarnation to compete for the rest.
        engine.restart(0, true);
    } else if !engine.settings.leasing() {
        // The barrier: every worker loads the full pending snapshot before any processes.
        let handles: Vec<_> = engine
            .workers()
            .iter()
            .map(|w| {
                let (tx, rx) = crossbeam_channel::bounded(1);
                w.send(crate::engine::worker::Control::Step(Some(tx)));
                rx
            })
            .collect();
        for rx in handles {
            let _ = rx.recv_timeout(crate::engine::STEP_TIMEOUT);
        }
    }
    drain_now(engine, ledger, events)?;
    Ok(())
}

/// What a run did, handed from running to capturing.
struct Ran {
    scenario: Scenario,
    leasing: bool,
    workers: usize,
    messages: u64,
    story: bool,
    seed: Option<u64>,
    faults: Option<soak::FaultTally>,
    ledger: Ledger,
    events: Timeline,
    started: Instant,
}

/// Read the final state from SQLite and the provider into a [`RunOutcome`].
fn capture(engine: &Engine, ran: Ran, opts: &RunOptions) -> Result<RunOutcome, RunError> {
    let Ran {
        scenario,
        leasing,
        workers,
        messages,
        story,
        seed,
        faults,
        ledger,
        events,
        started,
    } = ran;
    let story_proof = story.then(|| StoryProof::from_events(&events.kept, &ledger));
    let store = engine.store();
    let all_rows = store.messages(0, store.message_count()?)?;
    let mut history = checker::check(&ledger, &all_rows);
    let payment_rows = store.payments()?;
    let calls = engine.provider.calls();
    history.count_side_effects(&calls);
    let txids_not_issued = payment_rows
        .iter()
        .filter_map(|p| p.transaction_id.as_deref())
        .filter(|t| !engine.provider.issued(t))
        .count() as u64;
    let paid_without_provider = payment_rows
        .iter()
        .filter(|p| p.status == PaymentStatus::Paid && !engine.provider.said_paid(&p.key))
        .count() as u64;
    Ok(RunOutcome {
        scenario,
        leasing,
        workers,
        seed,
        faults,
        messages,
        lease_ms: opts.lease_ms,
        process_ms: opts.process_ms,
        db_path: engine.db_shown(),
        db_engine: engine.db.engine_name(),
        db_kept: !engine.is_temporary(),
        db_origin: engine.origin,
        db_recovered: engine.recovered.clone(),
        schema: store.schema()?,
        outbox: store.outbox_counts()?,
        payments: store.payment_counts()?,
        max_rows_per_key: store.max_rows_per_key()?,
        orphans: store.orphans()?,
        first_rows: all_rows.into_iter().take(50).collect(),
        history,
        payment_rows,
        provider_status_checks: engine.provider.status_checks_total(),
        provider_idempotent: engine.provider.is_idempotent(),
        gateway_creation_calls: engine.provider.creations_total(),
        creations_by_workers: engine.provider.creations_by_workers(),
        max_creations_per_key: calls.values().map(|c| c.creations).max().unwrap_or(0),
        keys_created: calls.values().filter(|c| c.creations > 0).count() as u64,
        txids_not_issued,
        paid_without_provider,
        busy_met: engine
            .shared
            .busy_met
            .load(std::sync::atomic::Ordering::Relaxed),
        events: events.kept,
        timeline_events: events.total,
        ledger,
        story: story_proof,
        elapsed: started.elapsed(),
    })
}

pub mod soak;

/// Does a report's timeline show this event? Empty claims and pauses are only counted.
pub fn on_timeline(kind: &EventKind) -> bool {
    !matches!(
        kind,
        EventKind::ClaimEmpty | EventKind::Paused | EventKind::Resumed
    )
}

/// Timeline events a run keeps for its report: the ledger folds every event, so memory
/// need not grow with the outbox.
const KEPT_EVENTS: usize = 1_000;

/// The first [`KEPT_EVENTS`] timeline events of a run, and how many there were.
#[derive(Debug, Default)]
pub(crate) struct Timeline {
    kept: Vec<Event>,
    total: u64,
}

/// Take one event into the run's history; a worker that failed ends the run with its error.
pub(crate) fn absorb(
    mut e: Event,
    ledger: &mut Ledger,
    events: &mut Timeline,
) -> Result<(), RunError> {
    ledger.settle_claim(&mut e);
    let failed = match &e.kind {
        EventKind::Failed { error } => Some(format!("{} stopped: {error}", e.actor)),
        _ => None,
    };
    ledger.apply(&e);
    if on_timeline(&e.kind) {
        events.total += 1;
        if events.kept.len() < KEPT_EVENTS {
            events.kept.push(e);
        }
    }
    failed.map_or(Ok(()), |m| Err(RunError::Runtime(m)))
}

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
            return Err(RunError::Runtime(
                "every worker stopped before the outbox drained".into(),
            ));
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
    RunError::Runtime(format!(
        "the outbox stopped draining: no result written for {} s of scenario time \
         ({} finalizes rejected so far; a lease of {} ms must outlive {} ms of \
         processing)",
        (engine.clock.now() - since_ms) / 1000,
        ledger.rejected_finalizes,
        engine.settings.lease_ms(),
        engine.settings.process_ms()
    ))
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
        return Err(RunError::Runtime(format!(
            "the outbox stopped draining: {} Pending and {} Processing left, yet every \
             worker finds nothing to claim",
            counts.pending, counts.processing
        )));
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
        return Err(RunError::Stalled(format!(
            "no worker did anything for {} s with {} Pending and {} Processing left; giving up",
            stall_after.as_secs(),
            counts.pending,
            counts.processing
        )));
    }
    Ok(())
}
