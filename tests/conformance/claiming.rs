//! Taking a lease: which message a claim takes, when a held one is free again, what a
//! blocked claim says, and the fencing token each claim bumps.

use leaselab::engine::outbox::{ClaimOutcome, OutboxCounts};

use crate::backend::{claimed, paid_tx, seeded, Backend, LEASE, T0};
use crate::writes::{claim_id, claim_next, finalize};

pub fn a_pending_row_is_claimable_and_the_oldest_goes_first(b: &dyn Backend) {
    let Some((_f, mut s, _p)) = seeded(b, "oldest", 3) else {
        return;
    };
    let lease = claimed(claim_next(&mut *s, "Worker-A", T0, LEASE).0);
    assert_eq!((lease.id, lease.key.as_str()), (1, "PAY-001"));
    assert_eq!(lease.until_ms, T0 + LEASE);
    assert_eq!(lease.version, 1);
    let row = &s.messages(0, 1).unwrap()[0];
    assert_eq!(row.status, "Processing");
    assert_eq!(row.locked_by.as_deref(), Some("Worker-A"));
    assert_eq!(row.locked_until_ms, Some(T0 + LEASE));
}

pub fn a_processing_row_is_not_claimable_until_its_lease_expires(b: &dyn Backend) {
    let Some((f, mut a, _p)) = seeded(b, "expires", 1) else {
        return;
    };
    let mut b = f.connect();
    claimed(claim_next(&mut *a, "Worker-A", T0, LEASE).0);
    // Still leased, also at the last millisecond of the lease.
    assert_eq!(
        claim_next(&mut *b, "Worker-B", T0 + 100, LEASE).0,
        ClaimOutcome::Empty
    );
    assert_eq!(
        claim_next(&mut *b, "Worker-B", T0 + LEASE, LEASE).0,
        ClaimOutcome::Empty
    );
    // One millisecond after, it is claimable again.
    let lease = claimed(claim_next(&mut *b, "Worker-B", T0 + LEASE + 1, LEASE).0);
    assert_eq!(lease.owner, "Worker-B");
    assert_eq!(lease.version, 2);
}

pub fn claim_takes_pending_oldest_first_and_an_expired_lease_only_after_its_expiry(
    b: &dyn Backend,
) {
    let Some((f, mut store, _p)) = seeded(b, "claimrule", 2) else {
        return;
    };
    let a = claimed(claim_next(&mut *store, "Worker-A", T0, LEASE).0);
    let b = claimed(claim_next(&mut *store, "Worker-B", T0, LEASE).0);
    assert_eq!((a.id, a.key.as_str(), a.version), (1, "PAY-001", 1));
    assert_eq!((b.id, b.version, b.until_ms), (2, 1, T0 + LEASE));
    let written = f.events().len();
    assert_eq!(
        claim_next(&mut *store, "Worker-C", T0, LEASE).0,
        ClaimOutcome::Empty
    );
    assert_eq!(f.events().len(), written, "an empty claim records nothing");
    // At its expiry instant a lease still holds; one millisecond later it is claimable.
    let at_expiry = T0 + LEASE;
    assert_eq!(
        claim_next(&mut *store, "Worker-C", at_expiry, LEASE).0,
        ClaimOutcome::Empty
    );
    let c = claimed(claim_next(&mut *store, "Worker-C", at_expiry + 1, LEASE).0);
    assert_eq!((c.id, c.owner.as_str(), c.version), (1, "Worker-C", 2));
    let rows = store.messages(0, 10).unwrap();
    assert_eq!(rows[0].locked_by.as_deref(), Some("Worker-C"));
    assert_eq!((rows[0].lease_version, rows[0].attempts), (2, 2));
    assert_eq!(rows[0].locked_until_ms, Some(at_expiry + 1 + LEASE));
    assert_eq!(
        store.outbox_counts().unwrap(),
        OutboxCounts {
            pending: 0,
            processing: 2,
            processed: 0,
            dead_lettered: 0
        }
    );
}

pub fn an_expired_lease_on_an_older_message_is_claimed_before_a_newer_pending_one(b: &dyn Backend) {
    let Some((_f, mut store, _p)) = seeded(b, "older", 2) else {
        return;
    };
    let a = claimed(claim_id(&mut *store, 1, "Worker-A", T0, LEASE).0);
    let later = a.until_ms + 1;
    let b = claimed(claim_next(&mut *store, "Worker-B", later, LEASE).0);
    assert_eq!((b.id, b.version), (1, 2));
    let c = claimed(claim_next(&mut *store, "Worker-C", later, LEASE).0);
    assert_eq!((c.id, c.version), (2, 1));
}

pub fn claim_by_id_reports_blocked_with_owner_and_time_left(b: &dyn Backend) {
    let Some((f, mut a, _p)) = seeded(b, "blocked", 2) else {
        return;
    };
    let mut b = f.connect();
    let held = claimed(claim_id(&mut *a, 1, "Worker-A", T0, LEASE).0);
    assert_eq!(held.version, 1);
    let blocked = |left_ms| ClaimOutcome::Blocked {
        id: 1,
        key: "PAY-001".into(),
        owner: "Worker-A".into(),
        left_ms,
    };
    let written = f.events().len();
    assert_eq!(
        claim_id(&mut *b, 1, "Worker-B", T0 + 180, LEASE).0,
        blocked(320)
    );
    // Blocked claims change nothing, and record nothing.
    let row = &b.messages(0, 1).unwrap()[0];
    assert_eq!(
        (row.locked_by.as_deref(), row.lease_version),
        (Some("Worker-A"), 1)
    );
    assert_eq!(f.events().len(), written, "a blocked claim records nothing");
    assert_eq!(
        claim_id(&mut *b, 1, "Worker-B", T0 + LEASE, LEASE).0,
        blocked(0)
    );
    let taken = claimed(claim_id(&mut *b, 1, "Worker-B", T0 + LEASE + 1, LEASE).0);
    assert_eq!((taken.owner.as_str(), taken.version), ("Worker-B", 2));
    assert_eq!(
        claim_id(&mut *b, 99, "Worker-B", T0, LEASE).0,
        ClaimOutcome::Empty
    );
    let two = claimed(claim_id(&mut *b, 2, "Worker-B", T0, LEASE).0);
    finalize(&mut *b, &two, &paid_tx(), T0);
    assert_eq!(
        claim_id(&mut *a, 2, "Worker-A", T0 + 10 * LEASE, LEASE).0,
        ClaimOutcome::Empty,
        "a processed message is never claimed again"
    );
}

pub fn an_empty_claim_names_the_live_lease_of_another_that_frees_first(b: &dyn Backend) {
    let Some((f, mut a, _p)) = seeded(b, "frees_first", 2) else {
        return;
    };
    let mut b = f.connect();
    claimed(claim_next(&mut *a, "Worker-A", T0, LEASE).0);
    claimed(claim_next(&mut *a, "Worker-A", T0 + 100, LEASE).0);
    assert_eq!(
        claim_next(&mut *b, "Worker-B", T0 + 200, LEASE).0,
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
}

pub fn lease_version_increases_on_every_claim(b: &dyn Backend) {
    let Some((_f, mut s, _p)) = seeded(b, "versions", 1) else {
        return;
    };
    let mut versions = Vec::new();
    let mut now = T0;
    for w in ["Worker-A", "Worker-B", "Worker-C", "Worker-A#2"] {
        versions.push(claimed(claim_next(&mut *s, w, now, LEASE).0).version);
        now += LEASE + 1;
    }
    assert_eq!(versions, [1, 2, 3, 4]);
    assert_eq!(s.messages(0, 1).unwrap()[0].attempts, 4);
}

pub fn claim_commit_stamps_follow_commit_order(b: &dyn Backend) {
    let Some((_f, mut s, _p)) = seeded(b, "stamps", 2) else {
        return;
    };
    let (_, first) = claim_next(&mut *s, "Worker-A", T0, LEASE);
    let (_, second) = claim_next(&mut *s, "Worker-A", T0, LEASE);
    assert!(second > first);
}
