//! Provider failures on worker threads: a transient one is retried after its backoff, a
//! permanent one ends in the dead letter, and a redrive brings it back.

use std::time::{Duration, Instant};

use leaselab::engine::events::EventKind;
use leaselab::engine::ledger::Ledger;
use leaselab::engine::provider::ProviderFaults;
use leaselab::engine::store::RetryPolicy;
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

/// The clock is frozen: move it 100 ms at a time, folding events, until `done` holds
/// (a generous wall-time deadline guards against a wedged run).
fn advance_until(engine: &Engine, ledger: &mut Ledger, done: impl Fn(&Ledger) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !done(ledger) {
        assert!(Instant::now() < deadline, "timed out: {ledger:?}");
        engine.advance(100);
        wait_for(engine, ledger, |k| {
            matches!(k, EventKind::ClockMoved { .. })
        });
        while let Ok(e) = engine.events().recv_timeout(Duration::from_millis(20)) {
            ledger.apply(&e);
        }
    }
}

#[test]
fn a_flaky_payment_recovers_after_its_backoffs_and_a_poison_one_is_dead_lettered() {
    let mut engine = Engine::start(
        EngineConfig {
            workers: 2,
            messages: 3,
            idle_ms: 50,
            reliability: Reliability {
                retry: RetryPolicy::new(100, 400, 3).unwrap(),
                faults: ProviderFaults {
                    fail_first: [("PAY-001".to_string(), 2)].into(),
                    fail_always: ["PAY-002".to_string()].into(),
                },
                ..Reliability::default()
            },
            ..EngineConfig::default()
        },
        false,
    )
    .unwrap();
    let mut ledger = Ledger::new();
    advance_until(&engine, &mut ledger, |l| {
        l.dead_letters == 1 && l.unique_processed() == 2
    });
    assert_eq!(ledger.retries, 4, "PAY-001 twice, PAY-002 twice");
    assert_eq!(engine.provider.calls()["PAY-001"].status_checks, 3);
    assert_eq!(engine.provider.calls()["PAY-002"].status_checks, 3);
    let counts = engine.store().outbox_counts().unwrap();
    assert_eq!((counts.processed, counts.dead_lettered), (2, 1));
    assert!(counts.drained());
    assert_eq!(
        engine.store().last_error("PAY-002").unwrap().as_deref(),
        Some("provider rejects this payment")
    );
    // Fixed and redriven: the next worker finishes it.
    engine.provider.heal(Some("PAY-002"));
    assert_eq!(engine.redrive(Some("PAY-002")).unwrap(), 1);
    advance_until(&engine, &mut ledger, |l| l.unique_processed() == 3);
    assert_eq!(ledger.redriven, 1);
    assert!(ledger.dead.is_empty());
    assert_eq!(ledger.processed_more_than_once(), 0);
}
