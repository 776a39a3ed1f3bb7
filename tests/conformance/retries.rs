//! Keeping a lease and losing it: heartbeats, failed attempts and their backoff, the dead
//! letter and its redrive.

use leaselab::engine::outbox::prelude::*;
use leaselab::engine::outbox::{
    ClaimOutcome, FailOutcome, FinalizeOutcome, Lease, LeaseEventKind, MessageRef, OutboxStatus,
    RetryPolicy,
};

use crate::backend::{claimed, kinds, lease_events, paid_tx, seeded, Backend, LEASE, T0};
use crate::writes::{
    claim_batch, claim_id, claim_next, fail_attempt, finalize, heartbeat, redrive,
};

/// A short policy: 100 ms, then 200 ms, and the third attempt is the last.
const POLICY: RetryPolicy = RetryPolicy {
    base_ms: 100,
    cap_ms: 2_000,
    max_attempts: 3,
};

fn fail(s: &mut dyn Outbox, lease: &Lease, now: i64, policy: &RetryPolicy) -> FailOutcome {
    fail_attempt(s, lease, "provider timed out", now, policy).0
}

pub fn a_failed_attempt_waits_its_backoff_before_it_is_claimable_again(b: &dyn Backend) {
    let Some((_f, mut s, _p)) = seeded(b, "backoff", 2) else {
        return;
    };
    let policy = RetryPolicy::default();
    let first = claimed(claim_next(&mut *s, "Worker-A", T0, LEASE).0);
    assert_eq!(
        fail(&mut *s, &first, T0 + 10, &policy),
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
    let next = claimed(claim_next(&mut *s, "Worker-A", T0 + 10, LEASE).0);
    assert_eq!(next.key, "PAY-002");
    assert_eq!(
        claim_next(&mut *s, "Worker-B", T0 + 10 + policy.base_ms - 1, LEASE).0,
        ClaimOutcome::Empty
    );
    let again = claimed(claim_next(&mut *s, "Worker-B", T0 + 10 + policy.base_ms, LEASE).0);
    assert_eq!((again.key.as_str(), again.version), ("PAY-001", 2));
    assert_eq!(s.messages(0, 1).unwrap()[0].attempts, 2);
}

pub fn the_last_failed_attempt_dead_letters_the_message_until_a_redrive(b: &dyn Backend) {
    let Some((f, mut s, _p)) = seeded(b, "dead_letter", 2) else {
        return;
    };
    let policy = RetryPolicy::new(10, 40, 3).unwrap();
    let mut now = T0;
    for attempt in 1..=3 {
        let lease = claimed(claim_id(&mut *s, 1, "Worker-A", now, LEASE).0);
        let outcome = fail(&mut *s, &lease, now, &policy);
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
    let other = claimed(claim_next(&mut *s, "Worker-B", now + 60_000, LEASE).0);
    assert_eq!(other.key, "PAY-002");
    assert_eq!(
        claim_next(&mut *s, "Worker-B", now + 60_000, LEASE).0,
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
    a_redrive_brings_it_back(&*f, &mut *s, now);
}

/// The dead letter of PAY-001 (and PAY-002 held by Worker-B) after [`the_last_failed_attempt_dead_letters_the_message_until_a_redrive`].
fn a_redrive_brings_it_back(f: &dyn crate::backend::Fixture, s: &mut dyn Outbox, now: i64) {
    assert_eq!(redrive(s, Some("PAY-404"), now).0, 0);
    assert_eq!(redrive(s, None, now + 60_000).0, 1);
    assert_eq!(s.messages(0, 1).unwrap()[0].processed_at_ms, None);
    let counts = s.outbox_counts().unwrap();
    assert_eq!(
        (counts.pending, counts.processing, counts.dead_lettered),
        (1, 1, 0)
    );
    // The redrive is in the events table, so a watcher's table follows it.
    let last = f.events().pop().unwrap();
    assert_eq!(last.kind, LeaseEventKind::Redriven);
    assert_eq!(
        (last.id, last.key.as_deref(), last.worker.as_str()),
        (Some(1), Some("PAY-001"), "engine")
    );
    let back = claimed(claim_next(s, "Worker-B", now + 60_000, LEASE).0);
    assert_eq!(back.key, "PAY-001");
    assert_eq!(s.messages(0, 1).unwrap()[0].attempts, 1);
}

pub fn failed_attempts_back_off_then_dead_letter_until_a_redrive(b: &dyn Backend) {
    let Some((f, mut store, _p)) = seeded(b, "retry", 1) else {
        return;
    };
    let mut now = T0;
    for attempt in 1..=2 {
        let lease = claimed(claim_next(&mut *store, "Worker-A", now, LEASE).0);
        let outcome = fail_attempt(&mut *store, &lease, "timeout", now, &POLICY).0;
        let at = now + POLICY.backoff_ms(attempt);
        let retry = FailOutcome::Retry {
            attempt,
            available_at_ms: at,
        };
        assert_eq!(outcome, retry);
        assert_eq!(
            claim_next(&mut *store, "Worker-B", at - 1, LEASE).0,
            ClaimOutcome::Empty,
            "still backing off"
        );
        assert_eq!(
            claim_id(&mut *store, 1, "Worker-B", at - 1, LEASE).0,
            ClaimOutcome::Empty
        );
        now = at;
    }
    let lease = claimed(claim_next(&mut *store, "Worker-A", now, LEASE).0);
    let outcome = fail_attempt(&mut *store, &lease, "declined", now, &POLICY).0;
    assert_eq!(outcome, FailOutcome::DeadLettered { attempts: 3 });
    assert_eq!(store.outbox_counts().unwrap().dead_lettered, 1);
    assert_eq!(
        store.last_error("PAY-001").unwrap().as_deref(),
        Some("declined")
    );
    let far = now + 1_000_000;
    assert_eq!(
        claim_next(&mut *store, "Worker-B", far, LEASE).0,
        ClaimOutcome::Empty
    );
    assert_eq!(redrive(&mut *store, Some("PAY-002"), far).0, 0);
    assert_eq!(redrive(&mut *store, None, far).0, 1);
    let last = lease_events(&*f).pop().unwrap();
    assert_eq!(
        (
            last.kind.as_str(),
            last.key.as_deref(),
            last.worker.as_str()
        ),
        ("Redriven", Some("PAY-001"), "engine")
    );
    the_old_lease_writes_nothing_after_the_redrive(&*f, &mut *store, &lease, far);
}

/// After [`failed_attempts_back_off_then_dead_letter_until_a_redrive`]: `lease` is the one
/// the message was dead-lettered under.
fn the_old_lease_writes_nothing_after_the_redrive(
    f: &dyn crate::backend::Fixture,
    store: &mut dyn Outbox,
    lease: &Lease,
    far: i64,
) {
    let again = claimed(claim_next(store, "Worker-B", far, LEASE).0);
    assert_eq!(
        store.messages(0, 1).unwrap()[0].attempts,
        1,
        "fresh attempts"
    );
    assert_eq!(
        fail_attempt(store, lease, "late", far, &POLICY).0,
        FailOutcome::LeaseLost,
        "the old lease writes nothing"
    );
    assert_eq!(
        store.messages(0, 1).unwrap()[0].locked_by.as_deref(),
        Some("Worker-B")
    );
    let (done, _) = finalize(store, &again, &paid_tx(), far);
    assert_eq!(done, FinalizeOutcome::Committed);
    assert_eq!(
        kinds(f),
        [
            "Claimed",
            "Retry",
            "Claimed",
            "Retry",
            "Claimed",
            "DeadLettered",
            "Redriven",
            "Claimed",
            "Finalized"
        ]
    );
}

pub fn a_failure_reported_after_the_lease_was_lost_writes_nothing(b: &dyn Backend) {
    let Some((f, mut a, _p)) = seeded(b, "lost_failure", 1) else {
        return;
    };
    let mut b = f.connect();
    let old = claimed(claim_next(&mut *a, "Worker-A", T0, LEASE).0);
    claimed(claim_next(&mut *b, "Worker-B", T0 + LEASE + 1, LEASE).0);
    assert_eq!(
        fail(&mut *a, &old, T0 + LEASE + 2, &RetryPolicy::default()),
        FailOutcome::LeaseLost
    );
    let row = &a.messages(0, 1).unwrap()[0];
    assert_eq!(
        (row.status, row.locked_by.as_deref()),
        (OutboxStatus::Processing, Some("Worker-B"))
    );
    assert_eq!(a.last_error("PAY-001").unwrap(), None);
}

pub fn a_heartbeat_extends_only_the_holders_live_lease_and_never_shortens_it(b: &dyn Backend) {
    let Some((f, mut a, _p)) = seeded(b, "heartbeat", 1) else {
        return;
    };
    let mut b = f.connect();
    let lease = claimed(claim_next(&mut *a, "Worker-A", T0, LEASE).0);
    // Extended from now: a later heartbeat moves the expiry on.
    assert_eq!(
        heartbeat(&mut *a, &lease, T0 + 200, LEASE).0,
        Some(T0 + 200 + LEASE)
    );
    // A heartbeat with a shorter lease keeps the later expiry.
    assert_eq!(
        heartbeat(&mut *a, &lease, T0 + 300, 10).0,
        Some(T0 + 200 + LEASE),
        "never shorter"
    );
    // A lease of another version is not this holder's.
    let stale = Lease {
        version: lease.version + 1,
        ..lease.clone()
    };
    assert_eq!(heartbeat(&mut *a, &stale, T0 + 300, LEASE).0, None);
    // Kept: at the old expiry + 1 nobody else can claim it.
    assert_eq!(
        claim_next(&mut *b, "Worker-B", T0 + LEASE + 1, LEASE).0,
        ClaimOutcome::Empty
    );
    // Run out and reclaimed: the old holder's heartbeat changes nothing.
    let later = T0 + 200 + LEASE + 1;
    let taken = claimed(claim_next(&mut *b, "Worker-B", later, LEASE).0);
    assert_eq!(heartbeat(&mut *a, &lease, later + 1, LEASE).0, None);
    let row = &a.messages(0, 1).unwrap()[0];
    assert_eq!(row.locked_until_ms, Some(taken.until_ms));
    assert_eq!(row.locked_by.as_deref(), Some("Worker-B"));
    // Each heartbeat that found its lease gone wrote a LeaseLost row for a watcher.
    assert_eq!(
        kinds(&*f),
        [
            "Claimed",
            "Heartbeat",
            "Heartbeat",
            "LeaseLost",
            "Claimed",
            "LeaseLost"
        ]
    );
}

pub fn a_heartbeat_after_the_lease_ran_out_does_not_revive_it(b: &dyn Backend) {
    let Some((f, mut a, _p)) = seeded(b, "no_revive", 1) else {
        return;
    };
    let lease = claimed(claim_next(&mut *a, "Worker-A", T0, LEASE).0);
    assert_eq!(
        heartbeat(&mut *a, &lease, T0 + LEASE + 1, LEASE).0,
        None,
        "expired"
    );
    assert_eq!(
        a.messages(0, 1).unwrap()[0].locked_until_ms,
        Some(T0 + LEASE)
    );
    assert_eq!(kinds(&*f), ["Claimed", "LeaseLost"]);
}

pub fn batch_claims_and_the_naive_load_skip_backing_off_and_dead_lettered_rows(b: &dyn Backend) {
    let Some((_f, mut s, _p)) = seeded(b, "batch_skip", 3) else {
        return;
    };
    let policy = RetryPolicy::new(100, 100, 2).unwrap();
    // PAY-001 backs off until T0 + 100; PAY-002 is dead-lettered.
    let one = claimed(claim_id(&mut *s, 1, "Worker-A", T0, LEASE).0);
    fail(&mut *s, &one, T0, &policy);
    for now in [T0, T0 + 100] {
        let two = claimed(claim_id(&mut *s, 2, "Worker-A", now, LEASE).0);
        fail(&mut *s, &two, now, &policy);
    }
    assert_eq!(s.outbox_counts().unwrap().dead_lettered, 1);
    let keys = |v: Vec<MessageRef>| v.into_iter().map(|m| m.key).collect::<Vec<_>>();
    assert_eq!(keys(s.load_pending(T0 + 99).unwrap()), ["PAY-003"]);
    assert_eq!(
        keys(s.load_pending(T0 + 100).unwrap()),
        ["PAY-001", "PAY-003"]
    );
    let (early, _) = claim_batch(&mut *s, "Worker-B", T0 + 50, LEASE, 3);
    assert_eq!(
        early.iter().map(|l| l.key.as_str()).collect::<Vec<_>>(),
        ["PAY-003"]
    );
    let (later, _) = claim_batch(&mut *s, "Worker-B", T0 + 100, LEASE, 3);
    assert_eq!(
        later.iter().map(|l| l.key.as_str()).collect::<Vec<_>>(),
        ["PAY-001"]
    );
}
