//! Heartbeats, failed attempts with backoff, the dead letter and redrive.

use rusqlite::{named_params, OptionalExtension};

use super::conn::End;
use super::lease_events::{record, LeaseEventKind, NewEvent};
use super::{Lease, OutboxStatus, Result, Store};

/// When a failed message may be tried again, and how often before it is dead-lettered.
///
/// After failed attempt `n` (1-based) the message waits
/// `min(cap_ms, base_ms * 2^(n-1))` ms: base, 2·base, 4·base, … never more than the cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    pub base_ms: i64,
    pub cap_ms: i64,
    /// Attempts (claims) a message gets; the failure of the last one dead-letters it.
    pub max_attempts: i64,
}

impl Default for RetryPolicy {
    fn default() -> RetryPolicy {
        RetryPolicy {
            base_ms: 100,
            cap_ms: 2_000,
            max_attempts: 5,
        }
    }
}

impl RetryPolicy {
    /// A policy, or the one line that says why it cannot be one.
    pub fn new(base_ms: i64, cap_ms: i64, max_attempts: i64) -> std::result::Result<Self, String> {
        if max_attempts < 1 {
            return Err(format!(
                "max attempts must be at least 1 (got {max_attempts}): a message needs one attempt"
            ));
        }
        if base_ms < 0 || cap_ms < base_ms {
            return Err(format!(
                "retry backoff needs 0 <= base <= cap (got base {base_ms} ms, cap {cap_ms} ms)"
            ));
        }
        Ok(RetryPolicy {
            base_ms,
            cap_ms,
            max_attempts,
        })
    }

    /// The wait after failed attempt `attempt` (1-based): `min(cap, base * 2^(attempt-1))`.
    pub fn backoff_ms(&self, attempt: i64) -> i64 {
        let doublings = (attempt.max(1) - 1).min(62) as u32;
        self.base_ms
            .saturating_mul(1i64 << doublings)
            .min(self.cap_ms)
    }
}

/// What became of a message whose attempt failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FailOutcome {
    /// Back to Pending, claimable again from `available_at_ms`.
    Retry { attempt: i64, available_at_ms: i64 },
    /// Its last attempt failed: DeadLettered, claimed by no one until a redrive.
    DeadLettered { attempts: i64 },
    /// This worker no longer held the lease: nothing was written.
    LeaseLost,
}

/// Extend a held lease to `:until`, never shortening it, only while this worker holds this
/// lease (owner and fencing token) and it has not run out.
const HEARTBEAT_SQL: &str = "UPDATE OutboxMessages
    SET LockedUntilUtc = MAX(LockedUntilUtc, :until)
  WHERE Id = :id AND Status = 'Processing' AND LockedBy = :worker
    AND LeaseVersion = :version AND Seeding = :seeding AND LockedUntilUtc >= :now
RETURNING LockedUntilUtc";

/// The attempts of a message this worker still holds.
const HELD_ATTEMPTS_SQL: &str = "SELECT Attempts FROM OutboxMessages
  WHERE Id = :id AND Status = 'Processing' AND LockedBy = :worker AND LeaseVersion = :version
    AND Seeding = :seeding";

const RELEASE_SQL: &str = "UPDATE OutboxMessages
    SET Status = :status, LockedBy = NULL, LockedUntilUtc = NULL,
        AvailableAtUtc = :available, LastError = :error
  WHERE Id = :id AND Status = 'Processing' AND LockedBy = :worker AND LeaseVersion = :version
    AND Seeding = :seeding";

const REDRIVE_ALL_SQL: &str = "UPDATE OutboxMessages
    SET Status = 'Pending', Attempts = 0, AvailableAtUtc = :now
  WHERE Status = 'DeadLettered'";

const REDRIVE_KEY_SQL: &str = "UPDATE OutboxMessages
    SET Status = 'Pending', Attempts = 0, AvailableAtUtc = :now
  WHERE Status = 'DeadLettered' AND PaymentKey = :key";

impl Store {
    /// Extend `lease` to `now + lease_ms` (never shorter than it is). `None`: zero rows
    /// changed, the lease is lost and the worker must stop this message; a `LeaseLost` row
    /// says so.
    pub fn heartbeat(
        &mut self,
        lease: &Lease,
        now: i64,
        lease_ms: i64,
    ) -> Result<(Option<i64>, u64)> {
        self.write(|tx, shared| {
            let until: Option<i64> = tx
                .prepare_cached(HEARTBEAT_SQL)?
                .query_row(
                    named_params! {
                        ":until": now + lease_ms, ":id": lease.id, ":worker": lease.owner,
                        ":version": lease.version, ":seeding": lease.seeding, ":now": now,
                    },
                    |r| r.get(0),
                )
                .optional()?;
            // A lost lease is written too, so a watcher sees the worker drop the message.
            let kind = match until {
                Some(_) => LeaseEventKind::Heartbeat,
                None => LeaseEventKind::LeaseLost,
            };
            record(
                tx,
                &NewEvent {
                    version: Some(lease.version),
                    until_ms: until,
                    ..NewEvent::about(kind, now, &lease.owner, lease.id, &lease.key)
                },
            )?;
            Ok(((until, shared.next_seq()), End::Commit))
        })
    }

    /// Record a failed attempt of a held message: back to Pending after its backoff, or
    /// DeadLettered when it was the last attempt `policy` allows.
    pub fn fail_attempt(
        &mut self,
        lease: &Lease,
        error: &str,
        now: i64,
        policy: &RetryPolicy,
    ) -> Result<(FailOutcome, u64)> {
        self.write(|tx, shared| {
            let held = named_params! {
                ":id": lease.id, ":worker": lease.owner, ":version": lease.version,
                ":seeding": lease.seeding,
            };
            let attempts: Option<i64> = tx
                .prepare_cached(HELD_ATTEMPTS_SQL)?
                .query_row(held, |r| r.get(0))
                .optional()?;
            let Some(attempts) = attempts else {
                return Ok(((FailOutcome::LeaseLost, shared.next_seq()), End::RollBack));
            };
            let (status, available, outcome) = if attempts >= policy.max_attempts {
                (
                    OutboxStatus::DeadLettered,
                    now,
                    FailOutcome::DeadLettered { attempts },
                )
            } else {
                let at = now + policy.backoff_ms(attempts);
                (
                    OutboxStatus::Pending,
                    at,
                    FailOutcome::Retry {
                        attempt: attempts,
                        available_at_ms: at,
                    },
                )
            };
            tx.prepare_cached(RELEASE_SQL)?.execute(named_params! {
                ":status": status, ":available": available, ":error": error,
                ":id": lease.id, ":worker": lease.owner, ":version": lease.version,
                ":seeding": lease.seeding,
            })?;
            let kind = match outcome {
                FailOutcome::DeadLettered { .. } => LeaseEventKind::DeadLettered,
                _ => LeaseEventKind::Retry,
            };
            record(
                tx,
                &NewEvent {
                    version: Some(lease.version),
                    detail: Some(error),
                    ..NewEvent::about(kind, now, &lease.owner, lease.id, &lease.key)
                },
            )?;
            Ok(((outcome, shared.next_seq()), End::Commit))
        })
    }

    /// Put dead letters back to Pending with fresh attempts: the one of `key`, or all when
    /// `key` is `None`. Returns how many were redriven.
    pub fn redrive(&mut self, key: Option<&str>, now: i64) -> Result<(u64, u64)> {
        self.write(|tx, shared| {
            let n = match key {
                Some(key) => tx
                    .prepare_cached(REDRIVE_KEY_SQL)?
                    .execute(named_params! {":now": now, ":key": key})?,
                None => tx
                    .prepare_cached(REDRIVE_ALL_SQL)?
                    .execute(named_params! {":now": now})?,
            };
            Ok(((n as u64, shared.next_seq()), End::Commit))
        })
    }

    /// The last provider error recorded for the message of `key`.
    pub fn last_error(&self, key: &str) -> Result<Option<String>> {
        Ok(self
            .conn
            .prepare_cached("SELECT LastError FROM OutboxMessages WHERE PaymentKey = ?1")?
            .query_row([key], |r| r.get(0))
            .optional()?
            .flatten())
    }
}
