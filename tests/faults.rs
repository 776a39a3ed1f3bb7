//! Faults: a panicking worker, a write lock held by another connection, and the seeded
//! soak at the size of the issue.

use std::time::Duration;

use leaselab::engine::events::EventKind;
use leaselab::engine::ledger::Ledger;
use leaselab::engine::store::payment_key;
use leaselab::engine::worker::{Control, WorkerState};
use leaselab::engine::{Engine, EngineConfig};
use leaselab::scenario::report::Report;
use leaselab::scenario::{run, RunOptions, Scenario};

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

#[test]
fn a_panicking_worker_is_reported_crashed_and_its_lease_expires_like_any_crash() {
    let mut engine = Engine::start(
        EngineConfig {
            workers: 2,
            messages: 2,
            ..EngineConfig::default()
        },
        true,
    )
    .unwrap();
    let mut ledger = Ledger::new();
    assert!(engine.claim_id(0, 1));
    engine.worker(0).unwrap().send(Control::Panic);
    let kind = wait_for(&engine, &mut ledger, |k| {
        matches!(k, EventKind::Crashed { .. })
    });
    match kind {
        EventKind::Crashed { holding, panic, .. } => {
            assert_eq!(holding.map(|h| h.1), Some("PAY-001".to_string()));
            assert!(panic.unwrap().contains("injected panic"));
        }
        _ => unreachable!(),
    }
    assert!(!engine.worker(0).unwrap().is_alive());
    // The lease stays until it expires, then Worker-B recovers the message.
    assert!(engine.claim_id(1, 1));
    wait_for(&engine, &mut ledger, |k| {
        matches!(k, EventKind::ClaimBlocked { .. })
    });
    engine.advance(engine.settings.lease_ms() + 1);
    assert!(engine.claim_id(1, 1));
    wait_for(&engine, &mut ledger, |k| {
        matches!(k, EventKind::Claimed { reclaim: true, .. })
    });
    assert!(engine.step(1) && engine.step(1));
    wait_for(&engine, &mut ledger, |k| {
        matches!(k, EventKind::Finalized { .. })
    });
    assert_eq!(
        (ledger.panics, ledger.crashes, ledger.ownership_violations),
        (1, 1, 0)
    );
    // The rest of the engine carries on: restart the panicked slot and drain.
    engine.restart(0, false);
    engine.resume_all();
    wait_for(&engine, &mut ledger, |k| {
        matches!(k, EventKind::Finalized { id: 2, .. })
    });
    assert_eq!(ledger.unique_processed(), 2);
}

#[test]
fn a_claim_that_meets_a_held_write_lock_waits_for_it_and_is_counted() {
    // Each attempt: hold the write lock from another connection, let the worker try to
    // claim, release. The worker could see the lock free only if we let go before its
    // BEGIN ran, so an attempt that met no lock is repeated, not counted as a pass.
    for _attempt in 0..20 {
        let engine = Engine::start(EngineConfig::default(), true).unwrap();
        let holder = rusqlite::Connection::open(engine.db_path()).unwrap();
        holder.execute_batch("BEGIN IMMEDIATE").unwrap();
        let (done_tx, done) = crossbeam_channel::bounded(1);
        let worker = engine.worker(0).unwrap();
        assert!(worker.send(Control::Step(Some(done_tx))));
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while worker.status().state != WorkerState::Claiming {
            assert!(
                std::time::Instant::now() < deadline,
                "the worker never tried"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
        assert!(
            done.try_recv().is_err(),
            "claimed while another held the lock"
        );
        holder.execute_batch("COMMIT").unwrap();
        done.recv_timeout(Duration::from_secs(30))
            .expect("the claim goes through once the lock is free");
        let mut ledger = Ledger::new();
        wait_for(&engine, &mut ledger, |k| {
            matches!(k, EventKind::Claimed { .. })
        });
        if engine
            .shared
            .busy_met
            .load(std::sync::atomic::Ordering::Relaxed)
            > 0
        {
            return;
        }
    }
    panic!("twenty claims waited for a held write lock and not one wait was counted");
}

#[test]
fn soak_sixteen_workers_one_hundred_thousand_messages() {
    let opts = RunOptions {
        seed: Some(20_261_202),
        ..RunOptions::default()
    };
    let outcome = run(Scenario::Soak, &opts).expect("the soak runs");
    let report = Report::build(&outcome);
    let j = &report.json;
    assert!(report.passed, "{}", report.text);
    assert_eq!(j["workers"], 16);
    assert_eq!(j["messages"], 100_000);
    assert_eq!(j["seed"], 20_261_202);
    assert_eq!(j["unique_processed"], 100_000);
    assert_eq!(j["processed_more_than_once"], 0);
    assert_eq!(j["ownership_violations"], 0);
    assert_eq!(j["history"]["lost"]["count"], 0);
    let f = &j["faults"];
    for key in ["crashes", "restarts", "pauses", "clock_jumps"] {
        assert!(
            f[key].as_u64().unwrap() > 0,
            "the schedule did no {key}: {f}"
        );
    }
    assert!(f["crashes_holding_a_lease"].as_u64().unwrap() > 0, "{f}");
    // Sixteen workers on two cores queue for one write lock all the time.
    assert!(
        j["sqlite_busy_absorbed"].as_u64().unwrap() > 0,
        "{}",
        j["sqlite_busy_absorbed"]
    );
    assert!(report.text.contains("--seed 20261202"));
}

/// The soak with jobs longer than a heartbeat interval (heartbeats on, the default), a
/// few payments that fail their first calls and one that always fails: crashes, pauses
/// and clock jumps over it, and still nothing lost and nothing processed twice.
#[test]
fn the_soak_with_heartbeats_and_provider_failures_loses_and_duplicates_nothing() {
    let mut reliability = leaselab::setup::Reliability::default();
    assert!(reliability.heartbeats, "heartbeats are on by default");
    for n in [3, 50, 170] {
        reliability.faults.fail_first.insert(payment_key(n), 2);
    }
    reliability.faults.fail_always.insert(payment_key(99));
    let opts = RunOptions {
        messages: Some(400),
        process_ms: 200,
        seed: Some(7),
        reliability,
        ..RunOptions::default()
    };
    let outcome = run(Scenario::Soak, &opts).expect("the soak runs");
    let report = Report::build(&outcome);
    let j = &report.json;
    assert!(report.passed, "{}", report.text);
    assert_eq!(j["processed_more_than_once"], 0);
    assert_eq!(j["ownership_violations"], 0);
    assert_eq!(j["history"]["lost"]["count"], 0);
    // The poison payment is dead-lettered, not lost; the others recovered (a flaky one
    // whose claims a crash also used up could join it: still not lost).
    let (done, dead) = (
        j["unique_processed"].as_u64().unwrap(),
        j["dead_lettered_now"].as_u64().unwrap(),
    );
    assert_eq!(done + dead, 400, "{done} processed, {dead} dead");
    assert!(dead >= 1, "PAY-099 always fails");
    assert!(j["retries"].as_u64().unwrap() >= 6, "{}", j["retries"]);
    // 200 ms jobs on a 500 ms lease beat every 166 ms.
    assert!(j["heartbeats"].as_u64().unwrap() > 0, "{}", j["heartbeats"]);
}
