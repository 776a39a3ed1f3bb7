//! Heartbeats, failed attempts with backoff, the dead letter and redrive.

use crate::outbox::prelude::*;
use rusqlite::{named_params, OptionalExtension};

use super::conn::End;
use super::lease_events::{record, record_beat, LeaseEventKind, NewEvent};
use super::{FailOutcome, Lease, Result, RetryPolicy, Store};
use crate::events::ENGINE;
use crate::outbox::Stamped;

/// Extend a held lease to `:until`, never shortening it, only while this worker holds this
/// lease (owner and fencing token) and it has not run out.
pub static HEARTBEAT_SQL: &str = concat!(
    "UPDATE OutboxMessages
    SET LockedUntilUtc = MAX(LockedUntilUtc, :until)
  WHERE Id = :id AND LockedBy = :worker AND LeaseVersion = :version AND Seeding = :seeding
    AND ",
    live!()
);

/// The expiry a heartbeat left, read back in its transaction (no `RETURNING`: see
/// `claim::TAKE_LEASE_SQL` for what it would cost).
pub static HELD_UNTIL_SQL: &str = "SELECT LockedUntilUtc FROM OutboxMessages WHERE Id = ?1";

/// The attempts of a message this worker still holds.
pub static HELD_ATTEMPTS_SQL: &str = "SELECT Attempts FROM OutboxMessages
  WHERE Id = :id AND Status = 'Processing' AND LockedBy = :worker AND LeaseVersion = :version
    AND Seeding = :seeding";

pub static RELEASE_SQL: &str = "UPDATE OutboxMessages
    SET Status = :status, LockedBy = NULL, LockedUntilUtc = NULL,
        AvailableAtUtc = :available, LastError = :error,
        ProcessedAtUtc = CASE WHEN :status = 'DeadLettered' THEN :now END
  WHERE Id = :id AND Status = 'Processing' AND LockedBy = :worker AND LeaseVersion = :version
    AND Seeding = :seeding";

/// Dead letters back to Pending: every one, or the one of `:key` (NULL: every one).
const REDRIVE_SQL: &str = "UPDATE OutboxMessages
    SET Status = 'Pending', Attempts = 0, AvailableAtUtc = :now, ProcessedAtUtc = NULL
  WHERE Status = 'DeadLettered' AND (:key IS NULL OR PaymentKey = :key)
  RETURNING Id, PaymentKey, LeaseVersion";

impl Upkeep for Store {
    /// Extend `lease` to `now + lease_ms` (never shorter than it is). `None`: zero rows
    /// changed, the lease is lost and the worker must stop this message; a `LeaseLost` row
    /// says so.
    fn heartbeat(
        &mut self,
        lease: &Lease,
        now: i64,
        lease_ms: i64,
    ) -> Result<Stamped<Option<i64>>> {
        self.write(|tx, shared| {
            let changed = tx.prepare_cached(HEARTBEAT_SQL)?.execute(named_params! {
                ":until": now + lease_ms, ":id": lease.id, ":worker": lease.owner,
                ":version": lease.version, ":seeding": lease.seeding, ":now": now,
            })?;
            let until: Option<i64> = if changed == 1 {
                Some(
                    tx.prepare_cached(HELD_UNTIL_SQL)?
                        .query_row([lease.id], |r| r.get(0))?,
                )
            } else {
                None
            };
            record_beat(tx, lease, now, until)?;
            Ok((Stamped::new(until, shared.next_seq()), End::Commit))
        })
    }

    /// Record a failed attempt of a held message: back to Pending after its backoff, or
    /// DeadLettered when it was the last attempt `policy` allows.
    fn fail_attempt(
        &mut self,
        lease: &Lease,
        error: &str,
        now: i64,
        policy: &RetryPolicy,
    ) -> Result<Stamped<FailOutcome>> {
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
                return Ok((
                    Stamped::new(FailOutcome::LeaseLost, shared.next_seq()),
                    End::RollBack,
                ));
            };
            let (status, available, outcome) = policy.after_failure(attempts, now);
            tx.prepare_cached(RELEASE_SQL)?.execute(named_params! {
                ":status": status, ":available": available, ":error": error, ":now": now,
                ":id": lease.id, ":worker": lease.owner, ":version": lease.version,
                ":seeding": lease.seeding,
            })?;
            let kind = match outcome {
                FailOutcome::DeadLettered { .. } => LeaseEventKind::DeadLettered,
                _ => LeaseEventKind::Retry,
            };
            // A retried message's row also says when it may be claimed again.
            let until_ms = (kind == LeaseEventKind::Retry).then_some(available);
            record(
                tx,
                &NewEvent {
                    version: Some(lease.version),
                    until_ms,
                    detail: Some(error),
                    ..NewEvent::about(kind, now, &lease.owner, lease.id, &lease.key)
                },
            )?;
            Ok((Stamped::new(outcome, shared.next_seq()), End::Commit))
        })
    }

    /// Put dead letters back to Pending with fresh attempts: the one of `key`, or all when
    /// `key` is `None`. Returns how many were redriven.
    fn redrive(&mut self, key: Option<&str>, now: i64) -> Result<Stamped<u64>> {
        self.write(|tx, shared| {
            let redriven: Vec<(i64, String, i64)> = tx
                .prepare_cached(REDRIVE_SQL)?
                .query_map(named_params! {":now": now, ":key": key}, |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?))
                })?
                .collect::<rusqlite::Result<_>>()?;
            // One row each, so a watcher's table follows the redrive.
            for (id, key, version) in &redriven {
                record(
                    tx,
                    &NewEvent {
                        version: Some(*version),
                        ..NewEvent::about(LeaseEventKind::Redriven, now, ENGINE, *id, key)
                    },
                )?;
            }
            Ok((
                Stamped::new(redriven.len() as u64, shared.next_seq()),
                End::Commit,
            ))
        })
    }
}
