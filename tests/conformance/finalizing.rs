//! Ending a lease: only the holder of this very lease (owner, token and seeding) commits
//! the provider's answer, payment and outbox row together; leasing off asks nobody.

use leaselab::engine::outbox::FailOutcome;
use leaselab::engine::outbox::{FinalizeOutcome, Lease, LeaseEventKind, MessageRef, RetryPolicy};
use leaselab::engine::provider::{ProviderStatus, StatusCheck};

use crate::backend::{claimed, lease_events, paid, paid_tx, seeded, Backend, LEASE, T0};
use crate::writes::{
    claim_next, fail_attempt, finalize, heartbeat, mark_processed, mark_processed_by,
};

pub fn finalize_after_a_takeover_is_rejected_and_leaves_the_payment_alone(b: &dyn Backend) {
    let Some((f, mut a, p)) = seeded(b, "takeover", 1) else {
        return;
    };
    let mut b = f.connect();
    let (a_lease, s_a) = claim_next(&mut *a, "Worker-A", T0, LEASE);
    let a_lease = claimed(a_lease);
    let check = paid("PAY-001", &p);
    // Worker-A stalls past its lease; Worker-B takes over.
    let (b_lease, s_b) = claim_next(&mut *b, "Worker-B", T0 + LEASE + 1, LEASE);
    let b_lease = claimed(b_lease);
    assert_eq!(b_lease.version, a_lease.version + 1);
    let (late, s_late) = finalize(&mut *a, &a_lease, &check, T0 + LEASE + 2);
    assert_eq!(late, FinalizeOutcome::Rejected);
    let pay = &a.payments().unwrap()[0];
    assert_eq!(
        (pay.status.as_str(), pay.transaction_id.as_deref()),
        ("Pending", None)
    );
    let row = &a.messages(0, 1).unwrap()[0];
    assert_eq!(row.status, "Processing");
    assert_eq!(row.locked_by.as_deref(), Some("Worker-B"));
    assert_eq!(
        row.payment_status, "Pending",
        "the rejected finalize wrote no payment"
    );
    assert_eq!(a.payment_counts().unwrap().pending, 1);
    // The rightful owner commits payment and outbox row together.
    let check_b = paid("PAY-001", &p);
    let (done, s_done) = finalize(&mut *b, &b_lease, &check_b, T0 + 700);
    assert_eq!(done, FinalizeOutcome::Committed);
    let pay = &b.payments().unwrap()[0];
    assert_eq!(pay.status, "Paid");
    assert_eq!(pay.transaction_id, check_b.transaction_id);
    let row = &b.messages(0, 1).unwrap()[0];
    assert_eq!(row.status, "Processed");
    assert_eq!(row.processed_at_ms, Some(T0 + 700));
    assert_eq!(row.locked_until_ms, None);
    assert!(
        s_a < s_b && s_b < s_late && s_late < s_done,
        "stamps in commit order"
    );
    the_events_tell_the_takeover(&*f);
}

/// The events table tells the takeover in commit order, one row per write.
fn the_events_tell_the_takeover(f: &dyn crate::backend::Fixture) {
    let events = lease_events(f);
    let story: Vec<(&str, &str, Option<i64>)> = events
        .iter()
        .map(|e| (e.kind.as_str(), e.worker.as_str(), e.version))
        .collect();
    assert_eq!(
        story,
        vec![
            ("Claimed", "Worker-A", Some(1)),
            ("Claimed", "Worker-B", Some(2)),
            ("FinalizeRejected", "Worker-A", Some(1)),
            ("Finalized", "Worker-B", Some(2)),
        ]
    );
    assert!(events.windows(2).all(|w| w[0].seq < w[1].seq));
    assert_eq!(events[0].until_ms, Some(T0 + LEASE));
    assert_eq!(events[3].detail.as_deref(), Some("Paid"));
    assert_eq!(events[3].at_ms, T0 + 700);
    assert_eq!(f.events_after(events[1].seq), events[2..]);
}

pub fn a_committed_finalize_writes_the_providers_answer_even_a_failure(b: &dyn Backend) {
    let Some((f, mut s, _p)) = seeded(b, "failed_answer", 1) else {
        return;
    };
    let lease = claimed(claim_next(&mut *s, "Worker-A", T0, LEASE).0);
    let failed = StatusCheck {
        status: ProviderStatus::Failed,
        transaction_id: None,
    };
    let (done, _) = finalize(&mut *s, &lease, &failed, T0 + 3);
    assert_eq!(done, FinalizeOutcome::Committed);
    let row = &s.messages(0, 1).unwrap()[0];
    assert_eq!(
        (row.status.as_str(), row.payment_status.as_str()),
        ("Processed", "Failed")
    );
    assert_eq!(row.processed_at_ms, Some(T0 + 3));
    assert_eq!(row.locked_until_ms, None);
    let pay = &s.payments().unwrap()[0];
    assert_eq!(
        (pay.status.as_str(), pay.transaction_id.as_deref()),
        ("Failed", None)
    );
    let last = lease_events(&*f).pop().unwrap();
    assert_eq!(last.kind, LeaseEventKind::Finalized);
    assert_eq!(last.detail.as_deref(), Some("Failed"));
}

pub fn finalize_with_a_stale_lease_version_is_rejected_even_under_the_same_name(b: &dyn Backend) {
    let Some((_f, mut s, p)) = seeded(b, "stale_version", 1) else {
        return;
    };
    let old = claimed(claim_next(&mut *s, "Worker-A", T0, LEASE).0);
    claimed(claim_next(&mut *s, "Worker-A", T0 + LEASE + 1, LEASE).0);
    let check = paid("PAY-001", &p);
    assert_eq!(
        finalize(&mut *s, &old, &check, T0 + 600).0,
        FinalizeOutcome::Rejected
    );
}

/// A lease taken before a reseed never matches a row after it, though the new row has the
/// same id, the same owner and, after one claim, the same LeaseVersion.
pub fn a_lease_from_before_a_reseed_fences_nothing_after_it(b: &dyn Backend) {
    let Some((f, mut engine, provider)) = seeded(b, "reseed_fence", 1) else {
        return;
    };
    let mut stale_process = f.connect();
    let stale = claimed(claim_next(&mut *stale_process, "Worker-B", T0, LEASE).0);
    engine.empty().unwrap();
    engine.seed(&provider, 1, T0).unwrap();
    let live = claimed(claim_next(&mut *engine, "Worker-B", T0, LEASE).0);
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
        heartbeat(&mut *stale_process, &stale, T0 + 1, LEASE).0,
        None
    );
    let policy = RetryPolicy::default();
    assert_eq!(
        fail_attempt(&mut *stale_process, &stale, "late", T0 + 1, &policy).0,
        FailOutcome::LeaseLost
    );
    assert_eq!(
        finalize(&mut *stale_process, &stale, &check, T0 + 1).0,
        FinalizeOutcome::Rejected,
        "the stale owner's result was committed to the new seeding's row"
    );
    assert_eq!(
        finalize(&mut *engine, &live, &check, T0 + 2).0,
        FinalizeOutcome::Committed
    );
}

pub fn naive_mark_writes_without_asking_who_owns_the_row(b: &dyn Backend) {
    let Some((_f, mut s, p)) = seeded(b, "naive_mark", 2) else {
        return;
    };
    let loaded = s.load_pending(T0).unwrap();
    assert_eq!(loaded.len(), 2);
    let check = paid("PAY-001", &p);
    mark_processed(&mut *s, &loaded[0], &check, T0);
    mark_processed(&mut *s, &loaded[0], &check, T0); // a second time: no complaint
    assert_eq!(s.outbox_counts().unwrap().processed, 1);
}

pub fn leasing_off_loads_every_pending_message_and_marks_it_unguarded(b: &dyn Backend) {
    let Some((f, mut store, _p)) = seeded(b, "naive", 3) else {
        return;
    };
    let held: Lease = claimed(claim_next(&mut *store, "Worker-A", T0, LEASE).0);
    let loaded = store.load_pending(T0).unwrap();
    let ids: Vec<i64> = loaded.iter().map(|m| m.id).collect();
    assert_eq!(ids, [2, 3]);
    for msg in &loaded {
        mark_processed_by(&mut *store, "Worker-B", msg, &paid_tx(), T0);
    }
    // Unguarded: it also overwrites a message another worker holds.
    let one = MessageRef {
        id: held.id,
        key: held.key.clone(),
    };
    mark_processed_by(&mut *store, "Worker-B", &one, &paid_tx(), T0);
    assert_eq!(store.outbox_counts().unwrap().processed, 3);
    let marked = lease_events(&*f)
        .into_iter()
        .filter(|e| e.kind == LeaseEventKind::Marked)
        .map(|e| (e.worker, e.detail))
        .collect::<Vec<_>>();
    assert_eq!(marked.len(), 3);
    assert!(marked
        .iter()
        .all(|(w, s)| w == "Worker-B" && s.as_deref() == Some("Paid")));
}
