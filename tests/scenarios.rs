//! The article's figures, read from the JSON report of real runs on real SQLite files.

use std::time::Duration;

use leaselab::engine::worker::Control;
use leaselab::scenario::report::Report;
use leaselab::scenario::{run, RunOptions, Scenario};
use serde_json::Value;

fn report(s: Scenario, opts: RunOptions) -> (Value, Report) {
    let outcome = run(s, &opts).expect("scenario runs");
    let r = Report::build(&outcome);
    (r.json.clone(), r)
}

fn n(v: &Value, path: &str) -> u64 {
    let mut cur = v;
    for part in path.split('.') {
        cur = &cur[part];
    }
    cur.as_u64()
        .unwrap_or_else(|| panic!("{path} is not a number: {cur}"))
}

/// Both stories end with the same perfect-looking tables: 4 Paid, 2 Failed, 6 Processed,
/// no duplicate rows. Only the ledgers tell them apart.
fn assert_article_final_state(j: &Value) {
    let paid = (n(j, "payments.paid"), n(j, "payments.failed"));
    assert_eq!((paid, n(j, "payments.pending")), ((4, 2), 0));
    let outbox = (n(j, "outbox.processed"), n(j, "outbox.pending"));
    assert_eq!((outbox, n(j, "outbox.processing")), ((6, 0), 0));
    let dup_rows = (
        n(j, "duplicate_rows.payments"),
        n(j, "duplicate_rows.outbox"),
    );
    assert_eq!(dup_rows, (0, 0));
}

#[test]
fn competing_no_claim_reproduces_the_doubling() {
    let (j, r) = report(Scenario::CompetingNoClaim, RunOptions::default());
    assert!(r.passed, "{}", r.text);
    assert_eq!(j["leasing"], false);
    assert_eq!(n(&j, "messages"), 6);
    assert_eq!(n(&j, "processing_attempts"), 12);
    assert_eq!(n(&j, "unique_processed"), 6);
    assert_eq!(n(&j, "processed_more_than_once"), 6);
    assert_eq!(n(&j, "provider_status_checks"), 12);
    assert_eq!(j["ownership_violations"], Value::Null);
    assert_article_final_state(&j);
    assert_eq!(n(&j, "payment_creation_calls_in_workers"), 0);
    assert_eq!(n(&j, "gateway_creation_calls"), 6);
    assert_eq!(n(&j, "loaded_per_worker.Worker-A"), 6);
    assert_eq!(n(&j, "loaded_per_worker.Worker-B"), 6);
    assert_eq!(n(&j, "per_worker.Worker-A"), 6);
    assert_eq!(n(&j, "per_worker.Worker-B"), 6);
}

#[test]
fn outbox_leasing_processes_each_message_once_and_recovers_the_crashed_lease() {
    let (j, r) = report(Scenario::OutboxLeasing, RunOptions::default());
    assert!(r.passed, "{}", r.text);
    assert_eq!(j["leasing"], true);
    assert_eq!(n(&j, "processing_attempts"), 6);
    assert_eq!(n(&j, "unique_processed"), 6);
    assert_eq!(n(&j, "processed_more_than_once"), 0);
    assert_eq!(n(&j, "provider_status_checks"), 6);
    assert_eq!(n(&j, "ownership_violations"), 0);
    assert_article_final_state(&j);
    assert_eq!(
        (
            n(&j, "payments.paid_with_txid"),
            n(&j, "payments.failed_with_txid")
        ),
        (4, 0)
    );
    assert_eq!(n(&j, "payment_creation_calls_in_workers"), 0);
    // The story's blocked claim; a worker that then finds only the other's live lease in
    // the concurrent phase is blocked too, as often as the interleaving makes it.
    assert!(n(&j, "claims_blocked") >= 1);
    let split = n(&j, "per_worker.Worker-A") + n(&j, "per_worker.Worker-B");
    assert_eq!(split, 6, "the A/B split may vary; the total may not");
    for key in [
        "worker_a_crashed_holding",
        "worker_b_blocked_before_expiry",
        "worker_b_reclaimed_after_expiry",
        "reclaimed_processed_once",
    ] {
        assert_eq!(j["lease_expiry"][key], true, "{key}");
    }
    let checks = j["checks"].as_array().unwrap();
    assert!(checks.len() >= 10);
    assert!(checks.iter().all(|c| c["passed"] == true));
    assert_eq!(j["passed"], true);
}

#[test]
fn lease_expiry_story_reads_like_the_article() {
    let (j, r) = report(Scenario::LeaseExpiry, RunOptions::default());
    assert!(r.passed, "{}", r.text);
    assert_eq!(n(&j, "messages"), 1);
    assert_eq!(n(&j, "per_worker.Worker-B"), 1);
    assert_eq!(n(&j, "per_worker.Worker-A"), 0);
    let text = &r.text;
    for line in [
        "09:00:00.000  Worker-A   CLAIMED PAY-001 until 09:00:00.500 (lease v1)",
        "09:00:00.000  Worker-A   CRASHED holding PAY-001",
        "09:00:00.000  Worker-B   BLOCKED on PAY-001 by Worker-A, 500 ms left",
        "09:00:00.600  Worker-B   RECLAIMED PAY-001 until 09:00:01.100 (lease v2)",
        "09:00:00.600  Worker-B   FINALIZED PAY-001 Paid (lease v2)",
    ] {
        assert!(text.contains(line), "missing {line:?} in\n{text}");
    }
}

#[test]
fn leasing_off_fails_the_safety_checks() {
    let opts = RunOptions {
        no_leasing: true,
        workers: Some(3),
        messages: Some(30),
        ..RunOptions::default()
    };
    let (j, r) = report(Scenario::OutboxLeasing, opts);
    assert!(!r.passed, "leasing off must not pass:\n{}", r.text);
    assert_eq!(j["passed"], false);
    let once = j["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "each message processed exactly once")
        .unwrap();
    assert_eq!(once["passed"], false);
}

#[test]
fn a_creation_call_from_a_worker_fails_the_creation_check() {
    let opts = RunOptions {
        workers: Some(2),
        messages: Some(6),
        inject: Some(|engine| {
            let (tx, rx) = crossbeam_channel::bounded(1);
            let worker = engine.worker(1).unwrap();
            assert!(worker.send(Control::CreatePayment("PAY-001".into(), Some(tx))));
            rx.recv_timeout(Duration::from_secs(30))
                .expect("the worker made the call");
        }),
        ..RunOptions::default()
    };
    let (j, r) = report(Scenario::OutboxLeasing, opts);
    assert!(
        !r.passed,
        "a worker's creation call must fail the run:\n{}",
        r.text
    );
    assert_eq!(j["payment_creation_calls_in_workers"], 1);
    let creation = r
        .checks
        .iter()
        .find(|c| c.name == "one gateway creation call per key, none from workers")
        .unwrap();
    assert!(!creation.passed, "{}", creation.detail);
    assert!(
        creation.detail.ends_with("1 from workers"),
        "{}",
        creation.detail
    );
}

#[test]
fn eight_workers_ten_thousand_messages() {
    let big = RunOptions {
        workers: Some(8),
        messages: Some(10_000),
        ..RunOptions::default()
    };
    let (j, r) = report(Scenario::OutboxLeasing, big.clone());
    assert!(r.passed, "{}", r.text);
    assert_eq!(n(&j, "unique_processed"), 10_000);
    assert_eq!(n(&j, "processing_attempts"), 10_000);
    assert_eq!(n(&j, "processed_more_than_once"), 0);
    assert_eq!(n(&j, "ownership_violations"), 0);
    let total: u64 = j["per_worker"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_u64().unwrap())
        .sum();
    assert_eq!(total, 10_000);

    let (j, r) = report(Scenario::CompetingNoClaim, big);
    assert!(r.passed, "{}", r.text);
    assert_eq!(n(&j, "processing_attempts"), 80_000);
    assert_eq!(n(&j, "processed_more_than_once"), 10_000);
    assert_eq!(
        n(&j, "runs_histogram.8"),
        10_000,
        "every message processed by all 8 workers"
    );
}

#[test]
fn processing_time_on_a_running_clock_keeps_the_figures() {
    // 100 scenario ms per message at 2x: the clock runs, and a 5 s lease outlives the work
    // even on a loaded machine (a shorter one may expire for real, which is not this test).
    let opts = RunOptions {
        process_ms: 100,
        lease_ms: 5_000,
        speed: 2.0,
        ..RunOptions::default()
    };
    let (j, r) = report(Scenario::OutboxLeasing, opts);
    assert!(r.passed, "{}", r.text);
    assert_eq!(n(&j, "processing_attempts"), 6);
    assert_eq!(n(&j, "rejected_finalizes"), 0);
    assert_eq!(n(&j, "process_ms"), 100);
}

/// The soak over 52 seeds, 101..130 among them (seeds that used to give up after their
/// work was done): every run drains, as the database says, and passes every check.
#[test]
fn soak_ends_clean_for_fifty_two_seeds() {
    for seed in 90..=141 {
        let opts = RunOptions {
            workers: Some(6),
            messages: Some(400),
            seed: Some(seed),
            ..RunOptions::default()
        };
        let outcome = run(Scenario::Soak, &opts).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        assert!(
            outcome.outbox.drained(),
            "seed {seed}: {:?}",
            outcome.outbox
        );
        assert_eq!(outcome.outbox.processed, 400, "seed {seed}");
        let r = Report::build(&outcome);
        assert!(r.passed, "seed {seed}:\n{}", r.text);
    }
}

/// A message that takes longer than the stall limit is work in flight, not a stall: the
/// give-up follows what the workers wait for on the scenario clock, not wall-time silence.
#[test]
fn a_message_longer_than_the_stall_limit_is_not_a_stall() {
    let opts = RunOptions {
        messages: Some(4),
        process_ms: 1_500,
        lease_ms: 600_000,
        speed: 1.0,
        stall_after: std::time::Duration::from_millis(100),
        ..RunOptions::default()
    };
    let outcome = run(Scenario::OutboxLeasing, &opts).expect("no stall while processing");
    let r = Report::build(&outcome);
    assert!(r.passed, "{}", r.text);
    assert_eq!(outcome.outbox.processed, 4);
}

/// A lease far shorter than the processing, with no heartbeat: idle workers take every message over mid-way
/// and every finalize is rejected. The run ends with that cause instead of spinning forever.
#[test]
fn a_lease_that_never_outlives_the_processing_ends_the_run_with_the_cause() {
    let opts = RunOptions {
        workers: Some(4),
        messages: Some(2),
        process_ms: 2_000,
        lease_ms: 10,
        speed: 1.0,
        stall_after: std::time::Duration::from_secs(1),
        // Heartbeats would keep the leases alive; this is the run without them.
        reliability: leaselab::setup::Reliability {
            heartbeats: false,
            ..Default::default()
        },
        ..RunOptions::default()
    };
    match run(Scenario::OutboxLeasing, &opts) {
        Err(e) => {
            assert!(e.is_runtime(), "{e}");
            assert!(e.to_string().contains("must outlive"), "{e}");
        }
        Ok(o) => panic!(
            "drained although leases ran out mid-message: {} rejected finalizes",
            o.ledger.rejected_finalizes
        ),
    }
}

/// A row deleted from the outbox after its message was processed disagrees with the
/// history that seeded and processed it.
#[test]
fn a_row_missing_from_the_outbox_disagrees_with_the_history() {
    let outcome = run(Scenario::OutboxLeasing, &RunOptions::default()).expect("runs");
    assert!(outcome.history.passed());
    let mut rows = outcome.first_rows.clone();
    let gone = rows.remove(2);
    let check = leaselab::engine::checker::check(&outcome.ledger, &rows);
    assert!(!check.passed());
    assert_eq!(check.state_mismatches.count, 1);
    assert!(
        check.state_mismatches.examples[0].contains(&gone.key),
        "{:?}",
        check.state_mismatches.examples
    );
}

/// The dashboard's verdict reads the history checks from the same table the report prints:
/// a run with duplicates fails them in both, with the same detail.
#[test]
fn the_dashboards_history_checks_are_the_reports_own() {
    let opts = RunOptions {
        no_leasing: true,
        ..RunOptions::default()
    };
    let outcome = run(Scenario::OutboxLeasing, &opts).expect("runs");
    let r = Report::build(&outcome);
    let shown = leaselab::scenario::checks::of_history(&outcome.history);
    let in_table = leaselab::scenario::checks::CHECKS
        .iter()
        .filter(|d| d.of_history());
    assert_eq!(shown.len(), in_table.count());
    assert!(shown.iter().any(|c| !c.passed), "{shown:?}");
    for c in &shown {
        assert!(
            r.checks.contains(c),
            "{} is not in the report as shown",
            c.name
        );
    }
}

/// A message waiting out its backoff is progress, not a stall: a poison message ends in
/// the dead letter and a flaky one is retried until it passes, and the run passes.
#[test]
fn retries_and_dead_letters_drain_a_headless_run() {
    use leaselab::engine::provider::ProviderFaults;
    use leaselab::setup::Reliability;
    let faults = |fail_first: &[(&str, u64)], fail_always: &[&str]| Reliability {
        faults: ProviderFaults {
            fail_first: fail_first
                .iter()
                .map(|(k, n)| (k.to_string(), *n))
                .collect(),
            fail_always: fail_always.iter().map(|k| k.to_string()).collect(),
        },
        ..Reliability::default()
    };
    for (scenario, messages, reliability, dead) in [
        (Scenario::OutboxLeasing, None, faults(&[], &["PAY-005"]), 1),
        (
            Scenario::OutboxLeasing,
            None,
            faults(&[("PAY-002", 4)], &[]),
            0,
        ),
        (Scenario::Soak, Some(50), faults(&[], &["PAY-002"]), 1),
    ] {
        for seed in [1, 7, 42] {
            let opts = RunOptions {
                messages,
                seed: Some(seed),
                reliability: reliability.clone(),
                ..RunOptions::default()
            };
            let (j, r) = report(scenario, opts);
            assert!(r.passed, "{scenario:?} seed {seed}:\n{}", r.text);
            assert_eq!(n(&j, "outbox.dead_lettered"), dead, "{}", r.text);
            assert_eq!(n(&j, "outbox.pending"), 0, "{}", r.text);
        }
    }
}

/// A story check that fails is named as one, not as a safety failure; and a claim after a
/// failed attempt is a retry, not the takeover of an expired lease.
#[test]
fn a_failed_story_check_is_not_called_a_safety_failure_and_a_retry_is_no_reclaim() {
    use leaselab::engine::provider::ProviderFaults;
    use leaselab::setup::Reliability;
    let opts = RunOptions {
        reliability: Reliability {
            faults: ProviderFaults {
                fail_first: [("PAY-001".to_string(), 1)].into_iter().collect(),
                ..ProviderFaults::default()
            },
            ..Reliability::default()
        },
        ..RunOptions::default()
    };
    let (j, r) = report(Scenario::LeaseExpiry, opts);
    assert!(!r.passed);
    assert!(
        r.verdict
            .starts_with("THE STORY DID NOT PLAY OUT AS TOLD (every safety check passed)"),
        "{}",
        r.verdict
    );
    assert!(r
        .verdict
        .contains("lease-expiry: reclaimed message processed once"));
    assert!(!r.verdict.contains("SAFETY CHECK FAILED"), "{}", r.verdict);
    // v2 took over Worker-A's expired lease; v3 came after v2's failed attempt.
    assert!(
        r.text
            .contains("RECLAIMED PAY-001 until 09:00:01.100 (lease v2)"),
        "{}",
        r.text
    );
    assert!(
        r.text
            .contains("CLAIMED PAY-001 until 09:00:01.601 (lease v3)"),
        "{}",
        r.text
    );
    assert!(
        !r.text.contains("RECLAIMED PAY-001 until 09:00:01.601"),
        "{}",
        r.text
    );
    assert_eq!(n(&j, "reclaims"), 1);
}
