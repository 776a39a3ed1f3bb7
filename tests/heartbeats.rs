//! Heartbeats on worker threads, on the scenario clock: a job longer than its lease keeps
//! it while its worker beats, and is taken over when it does not.

use std::time::Duration;

use leaselab::engine::clock::hms;
use leaselab::engine::events::{ClaimWay, EventKind};
use leaselab::engine::events_table::Translator;
use leaselab::engine::ledger::Ledger;
use leaselab::engine::store::Store;
use leaselab::engine::worker::Control;
use leaselab::engine::{Engine, EngineConfig};
use leaselab::setup::Reliability;

/// Fold events until one matches, with a generous deadline instead of a sleep.
fn wait_for(engine: &Engine, ledger: &mut Ledger, want: impl Fn(&EventKind) -> bool) -> EventKind {
    loop {
        let e = engine
            .events()
            .recv_timeout(Duration::from_secs(30))
            .expect("an event within 30 s");
        ledger.apply(&e);
        if want(&e.kind) {
            return e.kind;
        }
    }
}

/// Two running workers on a frozen clock, one message that takes 4000 ms on a 3000 ms lease.
fn slow_job(heartbeats: bool) -> (Engine, Ledger) {
    let engine = Engine::start(
        EngineConfig {
            workers: 2,
            messages: 1,
            lease_ms: 3_000,
            process_ms: 4_000,
            idle_ms: 100,
            reliability: Reliability {
                heartbeats,
                heartbeat_ms: Some(1_000),
                ..Reliability::default()
            },
            ..EngineConfig::default()
        },
        false,
    )
    .unwrap();
    let mut ledger = Ledger::new();
    wait_for(&engine, &mut ledger, |k| {
        matches!(k, EventKind::Claimed { .. })
    });
    (engine, ledger)
}

/// Move the clock one heartbeat at a time, each move waiting for its beat, until the
/// job is finalized.
fn beat_until_finalized(engine: &Engine, ledger: &mut Ledger) {
    loop {
        engine.advance(1_000);
        let kind = wait_for(engine, ledger, |k| {
            matches!(k, EventKind::Heartbeat { .. } | EventKind::Finalized { .. })
        });
        if matches!(kind, EventKind::Finalized { .. }) {
            return;
        }
    }
}

#[test]
fn a_worker_beating_on_the_scenario_clock_keeps_a_job_longer_than_its_lease() {
    let (engine, mut ledger) = slow_job(true);
    let start = engine.clock.now();
    for beat in 1..=3 {
        engine.advance(1_000);
        let kind = wait_for(&engine, &mut ledger, |k| {
            matches!(k, EventKind::Heartbeat { .. })
        });
        let EventKind::Heartbeat { until_ms, .. } = kind else {
            unreachable!()
        };
        assert_eq!(until_ms, start + beat * 1_000 + 3_000);
    }
    engine.advance(1_000);
    wait_for(&engine, &mut ledger, |k| {
        matches!(k, EventKind::Finalized { .. })
    });
    assert_eq!(ledger.reclaims, 0, "nobody took the job over");
    assert_eq!(ledger.leases_lost, 0);
    assert!(ledger.heartbeats >= 3);
    assert_eq!(engine.provider.status_checks_total(), 1);
}

#[test]
fn without_heartbeats_the_job_is_taken_over_and_checked_twice() {
    let (mut engine, mut ledger) = slow_job(false);
    engine.advance(3_500);
    wait_for(&engine, &mut ledger, |k| {
        matches!(k, EventKind::Claimed { reclaim: true, .. })
    });
    engine.advance(1_000);
    wait_for(&engine, &mut ledger, |k| {
        matches!(k, EventKind::FinalizeRejected { .. })
    });
    assert_eq!(ledger.heartbeats, 0);
    // Heartbeats switched on live: the new owner keeps its lease and finishes.
    engine.set_heartbeats(true);
    beat_until_finalized(&engine, &mut ledger);
    assert_eq!(engine.provider.status_checks_total(), 2);
    assert_eq!((ledger.rejected_finalizes, ledger.reclaims), (1, 1));
    assert_eq!(ledger.processed_more_than_once(), 0);
}

#[test]
fn a_heartbeat_after_the_lease_was_taken_over_says_lease_lost_and_drops_the_job() {
    let (engine, mut ledger) = slow_job(true);
    // A clock jump past the lease: the worker's next beat comes too late.
    engine.advance(3_100);
    let kind = wait_for(&engine, &mut ledger, |k| {
        matches!(k, EventKind::LeaseLost { .. } | EventKind::Heartbeat { .. })
    });
    assert!(matches!(kind, EventKind::LeaseLost { .. }), "{kind:?}");
    assert_eq!(ledger.leases_lost, 1);
    // Someone reclaims and finishes it; the worker that lost it never called the provider.
    while ledger.reclaims == 0 {
        wait_for(&engine, &mut ledger, |k| {
            matches!(k, EventKind::Claimed { .. })
        });
    }
    beat_until_finalized(&engine, &mut ledger);
    assert_eq!(engine.provider.status_checks_total(), 1);
    assert_eq!(ledger.rejected_finalizes, 0);
}

/// Poll a worker's status until it waits for `until` (its next action is set up), with a
/// generous deadline: the test moves the clock only once the worker has read it.
fn waits_for(engine: &Engine, slot: usize, until: i64) {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let status = engine.worker(slot).unwrap().status();
        if status.waiting_until == Some(until) {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "worker {slot} never came to wait for {until}: {status:?}"
        );
        std::thread::yield_now();
    }
}

/// The batch bug of issue 50: lease 3000 ms, processing 1200 ms, a batch of 4, heartbeats
/// every 1500 ms. Worker-A claims all four at once; the third's work starts at 2400 ms,
/// 600 ms before its lease (from the claim) runs out. Its heartbeats must count from the
/// claim, so its lease is extended when its work starts, and Worker-B, free at 3001 ms,
/// cannot take it over and call the provider a second time. The fourth's lease has run out
/// when Worker-A gets to it: Worker-A gives it up without calling the provider.
#[test]
fn a_batch_claims_queued_leases_count_from_the_claim_and_a_run_out_one_is_given_up() {
    let mut engine = Engine::start(
        EngineConfig {
            workers: 2,
            messages: 4,
            lease_ms: 3_000,
            process_ms: 1_200,
            idle_ms: 60_000,
            reliability: Reliability {
                heartbeats: true,
                heartbeat_ms: Some(1_500),
                ..Reliability::default()
            },
            ..EngineConfig::default()
        },
        true,
    )
    .unwrap();
    let mut ledger = Ledger::new();
    let mut log = Vec::new();
    engine.set_batch(4);
    let t0 = engine.clock.now();
    engine.worker(0).unwrap().send(Control::Resume);
    for _ in 0..4 {
        wait_logged(&engine, &mut ledger, &mut log, |k| {
            matches!(
                k,
                EventKind::Claimed {
                    way: ClaimWay::Batch,
                    ..
                }
            )
        });
    }
    waits_for(&engine, 0, t0 + 1_200);
    // PAY-001 and PAY-002 are done one after the other; PAY-003's work starts at 2400 ms.
    for (id, done_at) in [(1, 2_400), (2, 3_600)] {
        engine.advance(1_200);
        wait_logged(
            &engine,
            &mut ledger,
            &mut log,
            |k| matches!(k, EventKind::Finalized { id: i, .. } if *i == id),
        );
        waits_for(&engine, 0, t0 + done_at);
    }
    // Worker-B comes free the moment the claim's lease of 3000 ms has run out.
    engine.advance(601);
    engine.worker(1).unwrap().send(Control::Resume);
    wait_logged(&engine, &mut ledger, &mut log, |k| {
        matches!(k, EventKind::Claimed { reclaim: true, .. })
    });
    waits_for(&engine, 1, t0 + 3_001 + 1_200);
    // Worker-A finishes PAY-003 and comes to PAY-004; then Worker-B calls the provider.
    engine.advance(599);
    wait_logged(&engine, &mut ledger, &mut log, |k| {
        matches!(
            k,
            EventKind::Finalized { id: 3, .. } | EventKind::FinalizeRejected { id: 3, .. }
        )
    });
    engine.advance(601);
    wait_logged(&engine, &mut ledger, &mut log, |k| {
        matches!(k, EventKind::ProviderCalled { .. })
    });
    let twice: Vec<(String, u64)> = engine
        .provider
        .calls()
        .into_iter()
        .filter(|(_, c)| c.side_effects > 1)
        .map(|(key, c)| (key, c.side_effects))
        .collect();
    assert_eq!(twice, [], "payments the provider was called for twice");
    // Worker-B finalizes PAY-004; Worker-A's giving it up may be told before or after.
    while ledger.unique_processed() < 4 || ledger.leases_lost == 0 {
        wait_logged(&engine, &mut ledger, &mut log, |_| true);
    }
    assert_eq!(ledger.unique_processed(), 4);
    assert_eq!(ledger.processed_more_than_once(), 0);
    assert_eq!(engine.provider.side_effects_total(), 4);
    // PAY-003's lease was extended when its work started, counted from the claim.
    let beat = format!(
        "heartbeat PAY-003 until {} (lease v1)",
        hms(t0 + 2_400 + 3_000)
    );
    assert!(log.contains(&beat), "{log:#?}");
    let gave_up = format!(
        "GAVE UP PAY-004: Worker-A's lease v1 on it, from a batch claim, ran out at {} before \
         its work could start; the provider was not called",
        hms(t0 + 3_000)
    );
    assert!(log.contains(&gave_up), "{log:#?}");
    assert_eq!(ledger.leases_lost, 1);
    // A watcher of the events table is told the same.
    let mut translator = Translator::new();
    let told: Vec<String> = Store::open_read_only(&engine.db_path)
        .and_then(|s| s.events_after(0, 10_000))
        .unwrap()
        .iter()
        .flat_map(|row| translator.events(row))
        .map(|e| e.describe())
        .collect();
    assert!(told.contains(&gave_up), "{told:#?}");
}

/// As `wait_for`, keeping each event's line.
fn wait_logged(
    engine: &Engine,
    ledger: &mut Ledger,
    log: &mut Vec<String>,
    want: impl Fn(&EventKind) -> bool,
) -> EventKind {
    loop {
        let e = engine
            .events()
            .recv_timeout(Duration::from_secs(30))
            .expect("an event within 30 s");
        ledger.apply(&e);
        log.push(e.describe());
        if want(&e.kind) {
            return e.kind;
        }
    }
}
