//! Heartbeats on worker threads, on the scenario clock: a job longer than its lease keeps
//! it while its worker beats, and is taken over when it does not.

use std::time::Duration;

use leaselab::engine::events::EventKind;
use leaselab::engine::ledger::Ledger;
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
