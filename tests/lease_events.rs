//! The LeaseEvents table: every claim, heartbeat, finalize and failed attempt writes its row
//! in its own transaction, and the rows alone rebuild a history the checker accepts.

use leaselab::engine::outbox::prelude::*;
use std::sync::Arc;

use leaselab::engine::checker;
use leaselab::engine::events::EventKind;
use leaselab::engine::events_table;
use leaselab::engine::ledger::Ledger;
use leaselab::engine::provider::{Provider, ProviderStatus, StatusCheck};
use leaselab::engine::store::{
    ClaimOutcome, FinalizeOutcome, Lease, LeaseEventKind, RetryPolicy, Store, StoreShared,
};
use leaselab::scenario::{self, RunOptions, Scenario};

const T0: i64 = 1_000_000;
const LEASE: i64 = 500;

fn fresh(messages: u64) -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let (mut store, _) = Store::create(
        &dir.path().join("outbox.db"),
        Arc::new(StoreShared::default()),
    )
    .unwrap();
    store.seed(&Provider::new(), messages, T0).unwrap();
    (dir, store)
}

fn claimed(outcome: ClaimOutcome) -> Lease {
    match outcome {
        ClaimOutcome::Claimed(l) => l,
        other => panic!("expected a claim, got {other:?}"),
    }
}

fn kinds(store: &Store) -> Vec<LeaseEventKind> {
    store.all_events().unwrap().iter().map(|r| r.kind).collect()
}

const PAID: StatusCheck = StatusCheck {
    status: ProviderStatus::Paid,
    transaction_id: None,
};

#[test]
fn a_claim_and_its_finalize_each_write_one_row_in_commit_order() {
    let (_d, mut s) = fresh(2);
    let lease = claimed(s.claim_next("Worker-A", T0, LEASE).unwrap().value);
    assert_eq!(
        s.finalize(&lease, &PAID, T0 + 10).unwrap().value,
        FinalizeOutcome::Committed
    );
    // An empty claim changes nothing, so it writes nothing.
    let second = claimed(s.claim_next("Worker-B", T0 + 20, LEASE).unwrap().value);
    assert!(matches!(
        s.claim_next("Worker-A", T0 + 30, LEASE).unwrap().value,
        ClaimOutcome::Empty
    ));
    let rows = s.all_events().unwrap();
    let shape: Vec<_> = rows
        .iter()
        .map(|r| {
            (
                r.kind,
                r.worker.as_str(),
                r.id,
                r.version,
                r.until_ms,
                r.detail.as_deref(),
            )
        })
        .collect();
    assert_eq!(
        shape,
        vec![
            (
                LeaseEventKind::Seeded,
                "engine",
                None,
                None,
                None,
                Some("2")
            ),
            (
                LeaseEventKind::Claimed,
                "Worker-A",
                Some(1),
                Some(1),
                Some(T0 + LEASE),
                None
            ),
            (
                LeaseEventKind::Finalized,
                "Worker-A",
                Some(1),
                Some(1),
                None,
                Some("Paid")
            ),
            (
                LeaseEventKind::Claimed,
                "Worker-B",
                Some(second.id),
                Some(1),
                Some(T0 + 20 + LEASE),
                None
            ),
        ]
    );
    assert!(rows.windows(2).all(|w| w[0].seq < w[1].seq));
}

#[test]
fn a_rejected_finalize_writes_its_row_and_nothing_else() {
    let (d, mut a) = fresh(1);
    let mut b = Store::open(
        &d.path().join("outbox.db"),
        Arc::new(StoreShared::default()),
    )
    .unwrap();
    let stale = claimed(a.claim_next("Worker-A", T0, LEASE).unwrap().value);
    let fresh_lease = claimed(
        b.claim_next("Worker-B", T0 + LEASE + 1, LEASE)
            .unwrap()
            .value,
    );
    assert_eq!(
        a.finalize(&stale, &PAID, T0 + LEASE + 2).unwrap().value,
        FinalizeOutcome::Rejected
    );
    let rows = a.all_events().unwrap();
    let last = rows.last().unwrap();
    assert_eq!(
        (last.kind, last.worker.as_str(), last.version),
        (LeaseEventKind::FinalizeRejected, "Worker-A", Some(1))
    );
    // The guard stopped the payment update: it is still Pending, the row still B's.
    let row = &a.messages(0, 1).unwrap()[0];
    assert_eq!(row.payment_status.as_str(), "Pending");
    assert_eq!(row.locked_by.as_deref(), Some("Worker-B"));
    assert_eq!(row.lease_version, fresh_lease.version);
}

#[test]
fn heartbeats_failed_attempts_dead_letters_and_a_lost_lease_write_rows() {
    let (_d, mut s) = fresh(1);
    let policy = RetryPolicy::new(10, 10, 2).unwrap();
    let first = claimed(s.claim_next("Worker-A", T0, LEASE).unwrap().value);
    assert_eq!(
        s.heartbeat(&first, T0 + 100, LEASE).unwrap().value,
        Some(T0 + 100 + LEASE)
    );
    s.fail_attempt(&first, "timeout", T0 + 200, &policy)
        .unwrap();
    // The lease is gone now: a heartbeat finds it lost and says so in a row (a watcher
    // sees the worker drop the message); a failure reported late writes nothing.
    assert_eq!(s.heartbeat(&first, T0 + 201, LEASE).unwrap().value, None);
    let before = kinds(&s).len();
    s.fail_attempt(&first, "late", T0 + 202, &policy).unwrap();
    assert_eq!(kinds(&s).len(), before);
    let second = claimed(s.claim_next("Worker-B", T0 + 300, LEASE).unwrap().value);
    s.fail_attempt(&second, "timeout again", T0 + 310, &policy)
        .unwrap();
    assert_eq!(
        kinds(&s),
        vec![
            LeaseEventKind::Seeded,
            LeaseEventKind::Claimed,
            LeaseEventKind::Heartbeat,
            LeaseEventKind::Retry,
            LeaseEventKind::LeaseLost,
            LeaseEventKind::Claimed,
            LeaseEventKind::DeadLettered,
        ]
    );
    let rows = s.all_events().unwrap();
    assert_eq!(rows[2].until_ms, Some(T0 + 100 + LEASE));
    assert_eq!(
        (rows[4].worker.as_str(), rows[4].version),
        ("Worker-A", Some(1))
    );
    assert_eq!(rows[4].until_ms, None);
    assert_eq!(rows[6].detail.as_deref(), Some("timeout again"));
}

#[test]
fn reseeding_empties_the_table_and_seq_goes_on_from_where_it_was() {
    let (_d, mut s) = fresh(1);
    claimed(s.claim_next("Worker-A", T0, LEASE).unwrap().value);
    let last = s.all_events().unwrap().last().unwrap().seq;
    s.empty().unwrap();
    s.seed(&Provider::new(), 3, T0).unwrap();
    let rows = s.all_events().unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].kind, LeaseEventKind::Seeded);
    assert!(
        rows[0].seq > last,
        "a reader that tails by Seq must see the new seeding"
    );
    s.add_payment(&Provider::new(), "PAY-004", 100, T0).unwrap();
    assert_eq!(
        kinds(&s),
        vec![LeaseEventKind::Seeded, LeaseEventKind::Added]
    );
}

#[test]
fn the_table_alone_rebuilds_a_run_that_the_history_checker_accepts() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("run.db");
    let opts = RunOptions {
        db: Some(db.clone()),
        messages: Some(40),
        workers: Some(3),
        ..RunOptions::default()
    };
    let outcome = scenario::run(Scenario::OutboxLeasing, &opts).unwrap();
    let events = events_table::read_all(&db).unwrap();
    let mut ledger = Ledger::new();
    for ev in &events {
        ledger.apply(ev);
    }
    // Same claims and results as the workers' own channel said.
    assert_eq!(ledger.claims_ok, outcome.ledger.claims_ok);
    assert_eq!(ledger.finalized, outcome.ledger.finalized);
    assert_eq!(ledger.seeded_upto, 40);
    assert_eq!(ledger.processing_attempts, 40);
    let rows = Store::open_read_only(&db)
        .unwrap()
        .messages(0, 1_000)
        .unwrap();
    let check = checker::check(&ledger, &rows);
    assert!(check.passed(), "{check:?}");
    assert_eq!(check.processed, 40);
    // Worker names keep the slots the threads had.
    assert!(events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::Claimed { .. }))
        .all(|e| e.slot.is_some()));
}

/// Seq has no sequence table behind it: it is one more than the largest row, or than the
/// floor an emptying left in `Seedings`. It rises across every reseed, also one that finds
/// the table already empty, and also when the old rows were all deleted.
#[test]
fn seq_is_never_reused_across_reseeds() {
    let (_d, mut s) = fresh(2);
    let max = |s: &Store| s.all_events().unwrap().iter().map(|r| r.seq).max();
    let lease = claimed(s.claim_next("Worker-A", T0, LEASE).unwrap().value);
    s.finalize(&lease, &PAID, T0 + 10).unwrap();
    let mut last = max(&s).unwrap();
    for round in 0..3 {
        s.empty().unwrap();
        assert_eq!(max(&s), None, "round {round}: emptied");
        if round == 1 {
            // Emptied twice in a row: the floor must survive an empty table.
            s.empty().unwrap();
        }
        s.seed(&Provider::new(), 2, T0).unwrap();
        let rows = s.all_events().unwrap();
        assert!(
            rows.iter().all(|r| r.seq > last),
            "round {round}: {rows:?} after {last}"
        );
        let lease = claimed(s.claim_next("Worker-B", T0, LEASE).unwrap().value);
        s.finalize(&lease, &PAID, T0 + 10).unwrap();
        let now = max(&s).unwrap();
        assert!(now > last + 1, "round {round}");
        last = now;
    }
    // After an emptying and before any seeding: a worker that claimed before it finalizes
    // into the empty table (the first row), then payments are added one by one. Each row
    // takes the next number above the floor; none is lost and none repeats.
    let stale = claimed(s.claim_next("Worker-C", T0, LEASE).unwrap().value);
    let floor = max(&s).unwrap();
    s.empty().unwrap();
    assert_eq!(
        s.finalize(&stale, &PAID, T0 + 20).unwrap().value,
        FinalizeOutcome::Rejected
    );
    for n in 1..=2 {
        s.add_payment(&Provider::new(), &format!("PAY-EXTRA-{n}"), 100, T0)
            .unwrap();
    }
    let rows: Vec<(u64, LeaseEventKind)> = s
        .all_events()
        .unwrap()
        .iter()
        .map(|r| (r.seq, r.kind))
        .collect();
    assert_eq!(
        rows,
        vec![
            (floor + 1, LeaseEventKind::FinalizeRejected),
            (floor + 2, LeaseEventKind::Added),
            (floor + 3, LeaseEventKind::Added),
        ]
    );
}

/// (worker, kind, message, lease version, detail) of every row, in Seq order.
type Shape = Vec<(
    String,
    LeaseEventKind,
    Option<i64>,
    Option<i64>,
    Option<String>,
)>;

fn shape(db: &std::path::Path) -> Shape {
    Store::open_read_only(db)
        .unwrap()
        .all_events()
        .unwrap()
        .into_iter()
        .map(|r| (r.worker, r.kind, r.id, r.version, r.detail))
        .collect()
}

fn position(rows: &Shape, worker: &str, kind: LeaseEventKind, id: i64) -> usize {
    rows.iter()
        .position(|r| r.0 == worker && r.1 == kind && r.2 == Some(id))
        .unwrap_or_else(|| panic!("no {kind:?} of message {id} by {worker} in {rows:#?}"))
}

#[test]
fn a_lesson_records_the_zombies_freeze_and_its_provider_call_where_they_happened() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("z.db");
    let lesson = leaselab::lesson::built_in("zombie-worker").unwrap();
    let mut s = leaselab::lesson::Session::start_in(lesson, Some(db.clone())).unwrap();
    while !s.runner.finished() {
        assert!(s.forward().passed());
    }
    drop(s);
    let rows = shape(&db);
    use LeaseEventKind::*;
    // The settings the lesson ran with, right after its seeding.
    assert_eq!(rows[0].1, Seeded);
    assert_eq!(rows[1].1, Settings);
    let settings = leaselab::engine::outbox::RunSettings::parse(rows[1].4.as_deref().unwrap());
    assert_eq!(
        settings.map(|s| (s.lease_ms, s.heartbeats)),
        Ok((3000, true))
    );
    // Worker-A called the provider under lease v1, then froze holding it; Worker-B took the
    // message over after that; Worker-A woke, and its finalize was refused.
    let called = position(&rows, "Worker-A", Checked, 1);
    let froze = position(&rows, "Worker-A", Paused, 1);
    let taken = position(&rows, "Worker-B", Claimed, 1);
    let woke = position(&rows, "Worker-A", Resumed, 1);
    let refused = position(&rows, "Worker-A", FinalizeRejected, 1);
    assert!(called < froze && froze < taken && taken < woke && woke < refused);
    assert_eq!(rows[called].3, Some(1));
    assert_eq!(rows[called].4.as_deref(), Some("Paid"));
    assert_eq!(rows[froze].3, Some(1), "the freeze names the lease it held");
    // Nobody crashed.
    assert!(!rows.iter().any(|r| r.1 == Crashed), "{rows:#?}");
}

#[test]
fn a_run_records_its_crash_its_restart_and_every_provider_call() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("run.db");
    let opts = RunOptions {
        db: Some(db.clone()),
        ..RunOptions::default()
    };
    let outcome = scenario::run(Scenario::OutboxLeasing, &opts).unwrap();
    let rows = shape(&db);
    use LeaseEventKind::*;
    let crashed = position(&rows, "Worker-A", Crashed, 1);
    assert_eq!(rows[crashed].3, Some(1), "it crashed holding lease v1");
    assert_eq!(rows[crashed].4.as_deref(), Some("crash"));
    let restarted = rows
        .iter()
        .position(|r| r.1 == Restarted)
        .expect("a restart row");
    assert_eq!(rows[restarted].0, "Worker-A#2");
    assert_eq!(rows[restarted].4.as_deref(), Some("Worker-A"));
    let checks = rows.iter().filter(|r| r.1 == Checked).count() as u64;
    assert_eq!(checks, outcome.ledger.processing_attempts);
    // Each call comes before the result written with its answer.
    for r in rows.iter().filter(|r| r.1 == Finalized) {
        let call = position(&rows, &r.0, Checked, r.2.unwrap());
        let result = position(&rows, &r.0, Finalized, r.2.unwrap());
        assert!(call < result);
    }
}

#[test]
fn a_worker_process_records_its_joining_with_its_settings_and_its_leaving() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("class.db");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_leaselab"))
        .args(["worker", "--db"])
        .arg(&db)
        .args([
            "--name",
            "laptop-1",
            "--messages",
            "2",
            "--lease-ms",
            "4000",
        ])
        .args(["--process-ms", "10", "--no-heartbeat"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Its lines say when it has finished both payments.
    let out = child.stdout.take().unwrap();
    let mut lines = std::io::BufRead::lines(std::io::BufReader::new(out));
    let mut finalized = 0;
    while finalized < 2 {
        let line = lines.next().expect("a line").unwrap();
        finalized += usize::from(line.contains("FINALIZED"));
    }
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    assert_eq!(child.wait().unwrap().code(), Some(130));
    let rows = shape(&db);
    use LeaseEventKind::*;
    let joined = rows.iter().find(|r| r.1 == Joined).expect("a Joined row");
    assert_eq!(joined.0, "laptop-1");
    let settings = leaselab::engine::outbox::RunSettings::parse(joined.4.as_deref().unwrap());
    assert_eq!(
        settings.map(|s| (s.lease_ms, s.process_ms, s.heartbeats)),
        Ok((4000, 10, false))
    );
    let left = rows.last().unwrap();
    assert_eq!((left.0.as_str(), left.1), ("laptop-1", Left), "{rows:#?}");
    assert_eq!(left.4.as_deref(), Some("SIGINT"));
}
