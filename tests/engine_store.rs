//! The claim and finalize rules, against real SQLite files.

use leaselab::engine::outbox::prelude::*;
use std::sync::Arc;

use leaselab::engine::provider::{Provider, ProviderStatus, StatusCheck};
use leaselab::engine::store::{
    inspect, ClaimOutcome, DbOrigin, FailOutcome, FinalizeOutcome, Lease, MessageRef, OutboxStatus,
    RetryPolicy, Store, StoreError, StoreShared,
};

const T0: i64 = 1_000_000;
const LEASE: i64 = 500;

fn fresh(messages: u64) -> (tempfile::TempDir, Store, Provider) {
    let dir = tempfile::tempdir().unwrap();
    let (mut store, origin) = Store::create(
        &dir.path().join("outbox.db"),
        Arc::new(StoreShared::default()),
    )
    .unwrap();
    assert_eq!(origin, DbOrigin::Created);
    let provider = Provider::new();
    store.seed(&provider, messages, T0).unwrap();
    (dir, store, provider)
}

fn second_connection(dir: &tempfile::TempDir) -> Store {
    Store::open(
        &dir.path().join("outbox.db"),
        Arc::new(StoreShared::default()),
    )
    .unwrap()
}

fn claimed(outcome: ClaimOutcome) -> Lease {
    match outcome {
        ClaimOutcome::Claimed(l) => l,
        other => panic!("expected a claim, got {other:?}"),
    }
}

#[test]
fn a_pending_row_is_claimable_and_the_oldest_goes_first() {
    let (_d, mut s, _p) = fresh(3);
    let lease = claimed(s.claim_next("Worker-A", T0, LEASE).unwrap().value);
    assert_eq!((lease.id, lease.key.as_str()), (1, "PAY-001"));
    assert_eq!(lease.until_ms, T0 + LEASE);
    assert_eq!(lease.version, 1);
    let row = &s.messages(0, 1).unwrap()[0];
    assert_eq!(row.status, "Processing");
    assert_eq!(row.locked_by.as_deref(), Some("Worker-A"));
    assert_eq!(row.locked_until_ms, Some(T0 + LEASE));
}

#[test]
fn a_processing_row_is_not_claimable_until_its_lease_expires() {
    let (d, mut a, _p) = fresh(1);
    let mut b = second_connection(&d);
    claimed(a.claim_next("Worker-A", T0, LEASE).unwrap().value);
    // Still leased, also at the last millisecond of the lease.
    assert_eq!(
        b.claim_next("Worker-B", T0 + 100, LEASE).unwrap().value,
        ClaimOutcome::Empty
    );
    assert_eq!(
        b.claim_next("Worker-B", T0 + LEASE, LEASE).unwrap().value,
        ClaimOutcome::Empty
    );
    // One millisecond after, it is claimable again.
    let lease = claimed(
        b.claim_next("Worker-B", T0 + LEASE + 1, LEASE)
            .unwrap()
            .value,
    );
    assert_eq!(lease.owner, "Worker-B");
    assert_eq!(lease.version, 2);
}

#[test]
fn claim_by_id_reports_blocked_with_owner_and_time_left() {
    let (d, mut a, _p) = fresh(2);
    let mut b = second_connection(&d);
    claimed(a.claim_id(1, "Worker-A", T0, LEASE).unwrap().value);
    let outcome = b.claim_id(1, "Worker-B", T0 + 180, LEASE).unwrap().value;
    assert_eq!(
        outcome,
        ClaimOutcome::Blocked {
            id: 1,
            key: "PAY-001".into(),
            owner: "Worker-A".into(),
            left_ms: 320
        }
    );
    // Blocked claims change nothing.
    let row = &b.messages(0, 1).unwrap()[0];
    assert_eq!(
        (row.locked_by.as_deref(), row.lease_version),
        (Some("Worker-A"), 1)
    );
    let lease = claimed(b.claim_id(1, "Worker-B", T0 + 600, LEASE).unwrap().value);
    assert_eq!(lease.version, 2);
}

#[test]
fn an_empty_claim_names_the_live_lease_of_another_that_frees_first() {
    let (d, mut a, _p) = fresh(2);
    let mut b = second_connection(&d);
    claimed(a.claim_next("Worker-A", T0, LEASE).unwrap().value);
    claimed(a.claim_next("Worker-A", T0 + 100, LEASE).unwrap().value);
    assert_eq!(
        b.claim_next("Worker-B", T0 + 200, LEASE).unwrap().value,
        ClaimOutcome::Empty
    );
    // The one that runs out first, with what is left of it.
    assert_eq!(
        b.blocked_by("Worker-B", T0 + 200).unwrap(),
        Some(ClaimOutcome::Blocked {
            id: 1,
            key: "PAY-001".into(),
            owner: "Worker-A".into(),
            left_ms: LEASE - 200
        })
    );
    // A worker is never blocked by its own leases, nor by an expired one.
    assert_eq!(a.blocked_by("Worker-A", T0 + 200).unwrap(), None);
    let after_first = T0 + LEASE + 1;
    assert!(matches!(
        b.blocked_by("Worker-B", after_first).unwrap(),
        Some(ClaimOutcome::Blocked { id: 2, .. })
    ));
    assert_eq!(
        b.blocked_by("Worker-B", T0 + 100 + LEASE + 1).unwrap(),
        None
    );
    let plan = b.blocked_by_query_plan().unwrap().join(" | ");
    assert!(plan.contains("IX_Outbox_Unfinished"), "{plan}");
}

#[test]
fn lease_version_increases_on_every_claim() {
    let (_d, mut s, _p) = fresh(1);
    let mut versions = Vec::new();
    let mut now = T0;
    for w in ["Worker-A", "Worker-B", "Worker-C", "Worker-A#2"] {
        versions.push(claimed(s.claim_next(w, now, LEASE).unwrap().value).version);
        now += LEASE + 1;
    }
    assert_eq!(versions, [1, 2, 3, 4]);
    assert_eq!(s.messages(0, 1).unwrap()[0].attempts, 4);
}

#[test]
fn claim_commit_stamps_follow_commit_order() {
    let (_d, mut s, _p) = fresh(2);
    let first = s.claim_next("Worker-A", T0, LEASE).unwrap().seq;
    let second = s.claim_next("Worker-A", T0, LEASE).unwrap().seq;
    assert!(second > first);
}

fn paid(key: &str, p: &Provider) -> StatusCheck {
    let c = p.check_status(key);
    assert_eq!(c.status, ProviderStatus::Paid);
    c
}

#[test]
fn finalize_after_takeover_is_rejected_and_leaves_the_payment_untouched() {
    let (d, mut a, p) = fresh(1);
    let mut b = second_connection(&d);
    let a_lease = claimed(a.claim_next("Worker-A", T0, LEASE).unwrap().value);
    let check = paid("PAY-001", &p);
    // Worker-A stalls past its lease; Worker-B takes over.
    let b_lease = claimed(
        b.claim_next("Worker-B", T0 + LEASE + 1, LEASE)
            .unwrap()
            .value,
    );
    let outcome = a.finalize(&a_lease, &check, T0 + LEASE + 2).unwrap().value;
    assert_eq!(outcome, FinalizeOutcome::Rejected);
    let pay = &a.payments().unwrap()[0];
    assert_eq!(
        (pay.status.as_str(), pay.transaction_id.as_deref()),
        ("Pending", None)
    );
    let row = &a.messages(0, 1).unwrap()[0];
    assert_eq!(row.status, "Processing");
    assert_eq!(row.locked_by.as_deref(), Some("Worker-B"));
    // The rightful owner commits payment and outbox row together.
    let check_b = paid("PAY-001", &p);
    assert_eq!(
        b.finalize(&b_lease, &check_b, T0 + 700).unwrap().value,
        FinalizeOutcome::Committed
    );
    let pay = &b.payments().unwrap()[0];
    assert_eq!(pay.status, "Paid");
    assert_eq!(pay.transaction_id, check_b.transaction_id);
    let row = &b.messages(0, 1).unwrap()[0];
    assert_eq!(row.status, "Processed");
    assert_eq!(row.processed_at_ms, Some(T0 + 700));
    assert_eq!(row.locked_until_ms, None);
}

#[test]
fn finalize_with_a_stale_lease_version_is_rejected_even_under_the_same_name() {
    let (_d, mut s, p) = fresh(1);
    let old = claimed(s.claim_next("Worker-A", T0, LEASE).unwrap().value);
    claimed(
        s.claim_next("Worker-A", T0 + LEASE + 1, LEASE)
            .unwrap()
            .value,
    );
    let check = paid("PAY-001", &p);
    assert_eq!(
        s.finalize(&old, &check, T0 + 600).unwrap().value,
        FinalizeOutcome::Rejected
    );
}

#[test]
fn seeding_is_atomic_a_failure_between_the_inserts_leaves_neither_row() {
    let (_d, mut s, p) = fresh(0);
    let err = s
        .add_payment_with(&p, "PAY-777", 1_000, T0, || {
            Err(StoreError::Injected("crash between the two inserts".into()))
        })
        .unwrap_err();
    assert!(matches!(err, StoreError::Injected(_)));
    assert!(s.payments().unwrap().is_empty());
    assert_eq!(s.message_count().unwrap(), 0);
    // The same key then goes through whole.
    s.add_payment(&p, "PAY-777", 1_000, T0).unwrap();
    assert_eq!(s.payments().unwrap().len(), 1);
    assert_eq!(s.message_count().unwrap(), 1);
}

#[test]
fn a_panic_inside_a_write_rolls_it_back_and_the_connection_writes_on() {
    let (_d, mut s, p) = fresh(0);
    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _ = s.add_payment_with(&p, "PAY-778", 1_000, T0, || {
            panic!("a bug between the two inserts")
        });
    }));
    assert!(panicked.is_err());
    // Nothing of it stays, and the connection is not left inside it: the next write
    // begins, commits and is seen.
    assert!(s.payments().unwrap().is_empty());
    s.add_payment(&p, "PAY-778", 1_000, T0).unwrap();
    assert_eq!(s.payments().unwrap().len(), 1);
    assert_eq!(s.message_count().unwrap(), 1);
}

#[test]
fn seeding_creates_each_payment_once_at_the_gateway() {
    let (_d, s, p) = fresh(6);
    assert_eq!(p.creations_total(), 6);
    assert!(p.calls().values().all(|c| c.creations == 1));
    assert_eq!(s.outbox_counts().unwrap().pending, 6);
    assert_eq!(s.payment_counts().unwrap().pending, 6);
    let rows = s.max_rows_per_key().unwrap();
    assert_eq!((rows.payments, rows.outbox), (1, 1));
}

#[test]
fn naive_mark_writes_without_asking_who_owns_the_row() {
    let (_d, mut s, p) = fresh(2);
    let loaded = s.load_pending(T0).unwrap();
    assert_eq!(loaded.len(), 2);
    let check = paid("PAY-001", &p);
    s.mark_processed(&loaded[0], &check, T0).unwrap();
    s.mark_processed(&loaded[0], &check, T0).unwrap(); // a second time: no complaint
    assert_eq!(s.outbox_counts().unwrap().processed, 1);
}

#[test]
fn the_claim_query_never_scans_the_whole_outbox() {
    let (_d, s, _p) = fresh(10);
    let plan = s.claim_query_plan().unwrap();
    let on_outbox: Vec<&String> = plan
        .iter()
        .filter(|l| l.contains("OutboxMessages"))
        .collect();
    // The candidate, then the conditional update of that row by id.
    assert_eq!(on_outbox.len(), 2, "{plan:#?}");
    for step in on_outbox {
        // Every visit to the table goes through an index: the candidate is the first
        // claimable row of the unfinished messages' index in its own order (LIMIT 1, no
        // sort).
        assert!(
            step.contains("USING INDEX")
                || step.contains("USING COVERING INDEX")
                || step.contains("USING INTEGER PRIMARY KEY"),
            "a full scan of the outbox: {step} in {plan:#?}"
        );
    }
    assert!(
        plan.iter()
            .any(|l| l.contains("INDEX IX_Outbox_Unfinished")),
        "{plan:#?}"
    );
    assert!(!plan.iter().any(|l| l.contains("TEMP B-TREE")), "{plan:#?}");
}

#[test]
fn inspect_refuses_what_is_not_a_leaselab_database_and_leaves_it_untouched() {
    let dir = tempfile::tempdir().unwrap();
    // A directory.
    assert!(matches!(inspect(dir.path()), Err(StoreError::Foreign(_))));
    // A text file.
    let text = dir.path().join("notes.txt");
    std::fs::write(&text, "my precious notes\n").unwrap();
    assert!(matches!(inspect(&text), Err(StoreError::Foreign(_))));
    assert_eq!(
        std::fs::read_to_string(&text).unwrap(),
        "my precious notes\n"
    );
    // A SQLite database of another application.
    let other = dir.path().join("other.db");
    rusqlite::Connection::open(&other)
        .unwrap()
        .execute_batch(
            "CREATE TABLE Customers(Id INTEGER PRIMARY KEY); INSERT INTO Customers VALUES (7);",
        )
        .unwrap();
    let before = std::fs::read(&other).unwrap();
    let err = Store::create(&other, Arc::new(StoreShared::default())).unwrap_err();
    assert!(err.to_string().contains("Customers"), "{err}");
    assert_eq!(std::fs::read(&other).unwrap(), before);
    // An absent file is created; an earlier leaselab database is reused.
    let ours = dir.path().join("outbox.db");
    assert_eq!(inspect(&ours).unwrap(), DbOrigin::Created);
    drop(Store::create(&ours, Arc::new(StoreShared::default())).unwrap());
    assert_eq!(inspect(&ours).unwrap(), DbOrigin::Reused);
}

#[test]
fn batch_claims_take_the_oldest_k_and_batch_finalize_guards_each_message() {
    let (d, mut a, p) = fresh(5);
    let mut b = second_connection(&d);
    let leases = a.claim_batch("Worker-A", T0, LEASE, 3).unwrap().value;
    assert_eq!(leases.iter().map(|l| l.id).collect::<Vec<_>>(), [1, 2, 3]);
    // Worker-B takes message 2 over after the lease ran out; A's batch finalize must
    // commit 1 and 3 and leave 2 (and its payment) alone.
    let stolen = claimed(
        b.claim_id(2, "Worker-B", T0 + LEASE + 1, LEASE)
            .unwrap()
            .value,
    );
    assert_eq!(stolen.version, 2);
    let results: Vec<_> = leases
        .into_iter()
        .map(|l| {
            let c = p.check_status(&l.key);
            (l, c)
        })
        .collect();
    let outcomes = a.finalize_batch(&results, T0 + LEASE + 2).unwrap().value;
    assert_eq!(
        outcomes,
        [
            FinalizeOutcome::Committed,
            FinalizeOutcome::Rejected,
            FinalizeOutcome::Committed
        ]
    );
    let pays = a.payments().unwrap();
    assert_eq!(
        pays[1].status, "Pending",
        "PAY-002's payment must stay untouched"
    );
    assert_eq!(pays[0].status, "Paid");
    assert_eq!(a.outbox_counts().unwrap().processed, 2);
}

fn fail(s: &mut Store, lease: &Lease, now: i64, policy: &RetryPolicy) -> FailOutcome {
    s.fail_attempt(lease, "provider timed out", now, policy)
        .unwrap()
        .value
}

#[test]
fn a_failed_attempt_waits_its_backoff_before_it_is_claimable_again() {
    let (_d, mut s, _p) = fresh(2);
    let policy = RetryPolicy::default();
    let first = claimed(s.claim_next("Worker-A", T0, LEASE).unwrap().value);
    assert_eq!(
        fail(&mut s, &first, T0 + 10, &policy),
        FailOutcome::Retry {
            attempt: 1,
            available_at_ms: T0 + 10 + policy.base_ms
        }
    );
    assert_eq!(
        s.last_error("PAY-001").unwrap().as_deref(),
        Some("provider timed out")
    );
    // Still backing off: the older message is skipped, the next one is claimed.
    let next = claimed(s.claim_next("Worker-A", T0 + 10, LEASE).unwrap().value);
    assert_eq!(next.key, "PAY-002");
    assert_eq!(
        s.claim_next("Worker-B", T0 + 10 + policy.base_ms - 1, LEASE)
            .unwrap()
            .value,
        ClaimOutcome::Empty
    );
    let again = claimed(
        s.claim_next("Worker-B", T0 + 10 + policy.base_ms, LEASE)
            .unwrap()
            .value,
    );
    assert_eq!((again.key.as_str(), again.version), ("PAY-001", 2));
    assert_eq!(s.messages(0, 1).unwrap()[0].attempts, 2);
}

#[test]
fn backoff_doubles_from_base_up_to_the_cap() {
    let policy = RetryPolicy::new(100, 1_000, 5).unwrap();
    let waits: Vec<i64> = (1..=6).map(|n| policy.backoff_ms(n)).collect();
    assert_eq!(waits, [100, 200, 400, 800, 1_000, 1_000]);
    assert_eq!(
        RetryPolicy::new(100, 1_000, 64).unwrap().backoff_ms(64),
        1_000
    );
    assert!(RetryPolicy::new(100, 1_000, 0)
        .unwrap_err()
        .contains("at least 1"));
    assert!(RetryPolicy::new(100, 10, 3).is_err());
}

#[test]
fn the_last_failed_attempt_dead_letters_the_message_until_a_redrive() {
    let (_d, mut s, _p) = fresh(2);
    let policy = RetryPolicy::new(10, 40, 3).unwrap();
    let mut now = T0;
    for attempt in 1..=3 {
        let lease = claimed(s.claim_id(1, "Worker-A", now, LEASE).unwrap().value);
        let outcome = fail(&mut s, &lease, now, &policy);
        if attempt < 3 {
            let FailOutcome::Retry {
                available_at_ms, ..
            } = outcome
            else {
                panic!("attempt {attempt}: {outcome:?}");
            };
            now = available_at_ms;
        } else {
            assert_eq!(outcome, FailOutcome::DeadLettered { attempts: 3 });
        }
    }
    let counts = s.outbox_counts().unwrap();
    assert_eq!(
        (counts.pending, counts.dead_lettered, counts.processed),
        (1, 1, 0)
    );
    assert!(!counts.drained());
    // A dead letter is claimed by no one, also much later.
    let other = claimed(s.claim_next("Worker-B", now + 60_000, LEASE).unwrap().value);
    assert_eq!(other.key, "PAY-002");
    assert_eq!(
        s.claim_next("Worker-B", now + 60_000, LEASE).unwrap().value,
        ClaimOutcome::Empty
    );
    assert_eq!(s.messages(0, 1).unwrap()[0].status, "DeadLettered");
    // A dead letter is finished work, with the time it was given up.
    assert_eq!(s.messages(0, 1).unwrap()[0].processed_at_ms, Some(now));
    let counts = s.outbox_counts().unwrap();
    assert_eq!(
        (counts.pending, counts.processing, counts.dead_lettered),
        (0, 1, 1)
    );
    assert_eq!(s.redrive(Some("PAY-404"), now).unwrap().value, 0);
    assert_eq!(s.redrive(None, now + 60_000).unwrap().value, 1);
    assert_eq!(s.messages(0, 1).unwrap()[0].processed_at_ms, None);
    let counts = s.outbox_counts().unwrap();
    assert_eq!(
        (counts.pending, counts.processing, counts.dead_lettered),
        (1, 1, 0)
    );
    // The redrive is in the events table, so a watcher's table follows it.
    let last = s.all_events().unwrap().pop().unwrap();
    assert_eq!(last.kind, leaselab::engine::store::LeaseEventKind::Redriven);
    assert_eq!(
        (last.id, last.key.as_deref(), last.worker.as_str()),
        (Some(1), Some("PAY-001"), "engine")
    );
    let back = claimed(s.claim_next("Worker-B", now + 60_000, LEASE).unwrap().value);
    assert_eq!(back.key, "PAY-001");
    assert_eq!(s.messages(0, 1).unwrap()[0].attempts, 1);
}

#[test]
fn a_failure_reported_after_the_lease_was_lost_writes_nothing() {
    let (d, mut a, _p) = fresh(1);
    let mut b = second_connection(&d);
    let old = claimed(a.claim_next("Worker-A", T0, LEASE).unwrap().value);
    claimed(
        b.claim_next("Worker-B", T0 + LEASE + 1, LEASE)
            .unwrap()
            .value,
    );
    assert_eq!(
        fail(&mut a, &old, T0 + LEASE + 2, &RetryPolicy::default()),
        FailOutcome::LeaseLost
    );
    let row = &a.messages(0, 1).unwrap()[0];
    assert_eq!(
        (row.status, row.locked_by.as_deref()),
        (OutboxStatus::Processing, Some("Worker-B"))
    );
    assert_eq!(a.last_error("PAY-001").unwrap(), None);
}

#[test]
fn a_heartbeat_extends_only_a_lease_its_worker_still_holds_and_never_shortens_it() {
    let (d, mut a, _p) = fresh(1);
    let mut b = second_connection(&d);
    let lease = claimed(a.claim_next("Worker-A", T0, LEASE).unwrap().value);
    // Extended from now: a later heartbeat moves the expiry on.
    assert_eq!(
        a.heartbeat(&lease, T0 + 200, LEASE).unwrap().value,
        Some(T0 + 200 + LEASE)
    );
    // A heartbeat with a shorter lease keeps the later expiry.
    assert_eq!(
        a.heartbeat(&lease, T0 + 300, 10).unwrap().value,
        Some(T0 + 200 + LEASE)
    );
    // Kept: at the old expiry + 1 nobody else can claim it.
    assert_eq!(
        b.claim_next("Worker-B", T0 + LEASE + 1, LEASE)
            .unwrap()
            .value,
        ClaimOutcome::Empty
    );
    // Run out and reclaimed: the old holder's heartbeat changes nothing.
    let later = T0 + 200 + LEASE + 1;
    let taken = claimed(b.claim_next("Worker-B", later, LEASE).unwrap().value);
    assert_eq!(a.heartbeat(&lease, later + 1, LEASE).unwrap().value, None);
    let row = &a.messages(0, 1).unwrap()[0];
    assert_eq!(row.locked_until_ms, Some(taken.until_ms));
    assert_eq!(row.locked_by.as_deref(), Some("Worker-B"));
}

#[test]
fn a_heartbeat_after_the_lease_ran_out_does_not_revive_it() {
    let (_d, mut a, _p) = fresh(1);
    let lease = claimed(a.claim_next("Worker-A", T0, LEASE).unwrap().value);
    assert_eq!(
        a.heartbeat(&lease, T0 + LEASE + 1, LEASE).unwrap().value,
        None
    );
    assert_eq!(
        a.messages(0, 1).unwrap()[0].locked_until_ms,
        Some(T0 + LEASE)
    );
}

#[test]
fn batch_claims_and_the_naive_load_skip_backing_off_and_dead_lettered_rows() {
    let (_d, mut s, _p) = fresh(3);
    let policy = RetryPolicy::new(100, 100, 2).unwrap();
    // PAY-001 backs off until T0 + 100; PAY-002 is dead-lettered.
    let one = claimed(s.claim_id(1, "Worker-A", T0, LEASE).unwrap().value);
    fail(&mut s, &one, T0, &policy);
    for now in [T0, T0 + 100] {
        let two = claimed(s.claim_id(2, "Worker-A", now, LEASE).unwrap().value);
        fail(&mut s, &two, now, &policy);
    }
    assert_eq!(s.outbox_counts().unwrap().dead_lettered, 1);
    let keys = |v: Vec<MessageRef>| v.into_iter().map(|m| m.key).collect::<Vec<_>>();
    assert_eq!(keys(s.load_pending(T0 + 99).unwrap()), ["PAY-003"]);
    assert_eq!(
        keys(s.load_pending(T0 + 100).unwrap()),
        ["PAY-001", "PAY-003"]
    );
    let early = s.claim_batch("Worker-B", T0 + 50, LEASE, 3).unwrap().value;
    assert_eq!(
        early.iter().map(|l| l.key.as_str()).collect::<Vec<_>>(),
        ["PAY-003"]
    );
    let later = s.claim_batch("Worker-B", T0 + 100, LEASE, 3).unwrap().value;
    assert_eq!(
        later.iter().map(|l| l.key.as_str()).collect::<Vec<_>>(),
        ["PAY-001"]
    );
}

/// A lease taken before a reseed never matches a row after it, though the new row has the
/// same id, the same owner and, after one claim, the same LeaseVersion.
#[test]
fn a_lease_from_before_a_reseed_fences_nothing_after_it() {
    let (d, mut engine, provider) = fresh(1);
    let mut stale_process = second_connection(&d);
    let stale = claimed(
        stale_process
            .claim_next("Worker-B", T0, LEASE)
            .unwrap()
            .value,
    );
    engine.empty().unwrap();
    engine.seed(&provider, 1, T0).unwrap();
    let live = claimed(engine.claim_next("Worker-B", T0, LEASE).unwrap().value);
    assert_eq!(
        (stale.id, stale.version, &stale.owner),
        (live.id, live.version, &live.owner),
        "the reseed gave the new row the old lease's id, version and owner"
    );
    assert_ne!(stale.seeding, live.seeding);
    let check = StatusCheck {
        status: ProviderStatus::Paid,
        transaction_id: Some("TX-PAY-001-1".into()),
    };
    assert_eq!(
        stale_process
            .heartbeat(&stale, T0 + 1, LEASE)
            .unwrap()
            .value,
        None
    );
    let policy = RetryPolicy::default();
    assert_eq!(
        stale_process
            .fail_attempt(&stale, "late", T0 + 1, &policy)
            .unwrap()
            .value,
        FailOutcome::LeaseLost
    );
    assert_eq!(
        stale_process
            .finalize(&stale, &check, T0 + 1)
            .unwrap()
            .value,
        FinalizeOutcome::Rejected,
        "the stale owner's result was committed to the new seeding's row"
    );
    assert_eq!(
        stale_process
            .finalize_batch(&[(stale.clone(), check.clone())], T0 + 1)
            .unwrap()
            .value,
        [FinalizeOutcome::Rejected]
    );
    assert_eq!(
        engine.finalize(&live, &check, T0 + 2).unwrap().value,
        FinalizeOutcome::Committed
    );
}

/// Pages the last write transaction committed: the frames in a WAL that a checkpoint had
/// emptied just before it.
fn frames_in_wal(raw: &rusqlite::Connection, path: &std::path::Path) -> u64 {
    let page = raw
        .query_row("PRAGMA page_size", [], |r| r.get::<_, i64>(0))
        .unwrap() as u64;
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    let len = std::fs::metadata(&wal).unwrap().len();
    assert_eq!((len.max(32) - 32) % (24 + page), 0, "{len} bytes of WAL");
    len.saturating_sub(32) / (24 + page)
}

fn empty_the_wal(raw: &rusqlite::Connection, path: &std::path::Path) {
    let busy: i64 = raw
        .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| r.get(0))
        .unwrap();
    assert_eq!(busy, 0);
    assert_eq!(frames_in_wal(raw, path), 0);
}

#[test]
fn a_claim_writes_two_pages_and_a_finalize_four() {
    let (d, mut s, p) = fresh(10);
    let path = d.path().join("outbox.db");
    let raw = rusqlite::Connection::open(&path).unwrap();
    empty_the_wal(&raw, &path);
    let lease = claimed(s.claim_next("Worker-A", T0, LEASE).unwrap().value);
    // The row and the event row: the index of unfinished messages is not touched.
    assert_eq!(frames_in_wal(&raw, &path), 2);
    empty_the_wal(&raw, &path);
    let check = paid(&lease.key, &p);
    assert_eq!(
        s.finalize(&lease, &check, T0 + 1).unwrap().value,
        FinalizeOutcome::Committed
    );
    // The row, its index entry leaving, the payment and the event row.
    assert_eq!(frames_in_wal(&raw, &path), 4);
}

/// The opcodes SQLite compiles `sql` to.
fn opcodes(raw: &rusqlite::Connection, sql: &str) -> Vec<String> {
    let mut stmt = raw.prepare(&format!("EXPLAIN {sql}")).unwrap();
    let rows = stmt.query_map([], |r| r.get::<_, String>(1)).unwrap();
    rows.map(Result::unwrap).collect()
}

#[test]
fn writing_a_row_builds_no_temporary_btree_for_its_checks() {
    let (d, _s, _p) = fresh(1);
    let raw = rusqlite::Connection::open(d.path().join("outbox.db")).unwrap();
    // Every table a claim or a finalize writes, with each CHECKed column set.
    for sql in [
        "UPDATE OutboxMessages SET Status = 'Processed', ProcessedAtUtc = 1, LockedBy = 'W'
          WHERE Id = 1",
        "UPDATE Payments SET PaymentStatus = 'Paid', TransactionId = 't'
          WHERE IdempotencyKey = 'PAY-001'",
        "INSERT INTO LeaseEvents (Seq, AtUtc, Worker, Kind, MessageId, PaymentKey)
         VALUES (100, 1, 'W', 'Claimed', 1, 'PAY-001')",
    ] {
        let ops = opcodes(&raw, sql);
        // No CHECK builds a b-tree of constants each time the statement runs.
        assert!(
            !ops.iter().any(|o| o == "OpenEphemeral"),
            "{sql} opens a temporary b-tree: {ops:?}"
        );
    }
}

/// SQLite quotes a statement it cannot prepare, and ours span several lines: the error a
/// worker stops with is still one line (a column dropped under a run reached stderr as
/// three, depending on which statement met it first).
#[test]
fn a_statement_sqlite_cannot_prepare_is_reported_on_one_line() {
    let conn = rusqlite::Connection::open_in_memory().unwrap();
    conn.execute_batch("CREATE TABLE OutboxMessages (Id INTEGER PRIMARY KEY)")
        .unwrap();
    let e = conn
        .prepare(
            "UPDATE OutboxMessages\n   SET Attempts = Attempts + 1\n WHERE Id = 1\n   AND Id > 0",
        )
        .map(|_| ())
        .expect_err("no such column");
    let line = leaselab::engine::outbox::OutboxError::from(e).to_string();
    assert!(line.contains("no such column: Attempts"), "{line}");
    assert!(!line.contains('\n') && !line.contains('\r'), "{line:?}");
    assert!(
        !line.contains("  "),
        "indentation folded into single spaces: {line:?}"
    );
}
