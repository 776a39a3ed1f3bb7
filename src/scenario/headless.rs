//! A scenario run headless from start to end: the story or the barrier first, then every
//! worker at once until the outbox drains, then the final state read back.

use std::time::Instant;

use crate::engine::checker;
use crate::engine::ledger::Ledger;
use crate::engine::outbox::PaymentStatus;
use crate::engine::{Engine, EngineConfig};
use crate::lesson::LessonRunner;

use super::catalog::Scenario;
use super::drain::drain_outbox;
use super::error::{start_error, RunError};
use super::options::RunOptions;
use super::outcome::RunOutcome;
use super::proof::StoryProof;
use super::soak;
use super::story::lease_expiry_story;
use super::timeline::{drain_now, Timeline};

/// The engine a run starts, and whether it tells the lease-expiry story first.
fn engine_config(scenario: Scenario, opts: &RunOptions) -> Result<(EngineConfig, bool), RunError> {
    let leasing = scenario.leasing() && !opts.no_leasing;
    let story = scenario.has_story() && leasing;
    let workers = opts.workers.unwrap_or(scenario.default_workers());
    scenario.check_setup(leasing, workers, story)?;
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
        exercise: None,
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
            runner.apply_next(engine).map_err(RunError::Story)?;
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
