//! Each write of the `Outbox` interface as the suite calls it: its value and its commit
//! stamp. The shape a write returns in is spelled here only.

use leaselab::engine::outbox::prelude::*;
use leaselab::engine::outbox::{
    ClaimOutcome, FailOutcome, FinalizeOutcome, Lease, MessageRef, RetryPolicy,
};
use leaselab::engine::provider::StatusCheck;

pub fn claim_next(
    o: &mut dyn Outbox,
    worker: &str,
    now: i64,
    lease_ms: i64,
) -> (ClaimOutcome, u64) {
    o.claim_next(worker, now, lease_ms)
        .expect("claim_next")
        .pair()
}

pub fn claim_id(
    o: &mut dyn Outbox,
    id: i64,
    worker: &str,
    now: i64,
    lease_ms: i64,
) -> (ClaimOutcome, u64) {
    o.claim_id(id, worker, now, lease_ms)
        .expect("claim_id")
        .pair()
}

pub fn claim_batch(
    o: &mut dyn Outbox,
    worker: &str,
    now: i64,
    lease_ms: i64,
    k: usize,
) -> (Vec<Lease>, u64) {
    o.claim_batch(worker, now, lease_ms, k)
        .expect("claim_batch")
        .pair()
}

pub fn finalize(
    o: &mut dyn Outbox,
    lease: &Lease,
    check: &StatusCheck,
    now: i64,
) -> (FinalizeOutcome, u64) {
    o.finalize(lease, check, now).expect("finalize").pair()
}

pub fn heartbeat(o: &mut dyn Outbox, lease: &Lease, now: i64, lease_ms: i64) -> (Option<i64>, u64) {
    o.heartbeat(lease, now, lease_ms).expect("heartbeat").pair()
}

pub fn fail_attempt(
    o: &mut dyn Outbox,
    lease: &Lease,
    error: &str,
    now: i64,
    policy: &RetryPolicy,
) -> (FailOutcome, u64) {
    o.fail_attempt(lease, error, now, policy)
        .expect("fail_attempt")
        .pair()
}

/// How many dead letters went back to Pending, and the write's stamp.
pub fn redrive(o: &mut dyn Outbox, key: Option<&str>, now: i64) -> (u64, u64) {
    o.redrive(key, now).expect("redrive").pair()
}

/// The write's stamp.
pub fn mark_processed(o: &mut dyn Outbox, msg: &MessageRef, check: &StatusCheck, now: i64) -> u64 {
    o.mark_processed(msg, check, now)
        .expect("mark_processed")
        .seq
}

/// The write's stamp.
pub fn mark_processed_by(
    o: &mut dyn Outbox,
    worker: &str,
    msg: &MessageRef,
    check: &StatusCheck,
    now: i64,
) -> u64 {
    o.mark_processed_by(worker, msg, check, now)
        .expect("mark_processed_by")
        .seq
}

/// A stamped write as the suite reads it: the value, then the stamp.
trait Pair<T> {
    fn pair(self) -> (T, u64);
}

impl<T> Pair<T> for leaselab::engine::outbox::Stamped<T> {
    fn pair(self) -> (T, u64) {
        (self.value, self.seq)
    }
}
