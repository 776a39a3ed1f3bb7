//! Heartbeats, failed attempts with backoff, the dead letter, redrive, and the leasing-off
//! load and mark, on PostgreSQL: the SQLite store's rules, each write with its event row.

use super::claim::{NewEvent, WRITE_ANSWER_SQL};
use super::{PgStore, SERVER_MS_SQL};
use crate::outbox::prelude::*;
use crate::outbox::Result as OutboxResult;
use crate::outbox::{
    FailOutcome, Lease, LeaseEventKind, MessageRef, OutboxStatus, RetryPolicy, Stamped,
};
use crate::provider::StatusCheck;

/// Extend a held lease, never shortening it, only while this worker holds this lease
/// (owner and fencing token) and it has not run out. $1 the new until, $5 now: on the
/// server's clock, the lease runs `$1 - $5` from the server's time.
pub static HEARTBEAT_SQL: &str = concat!(
    "
UPDATE OutboxMessages SET LockedUntilUtc = GREATEST(LockedUntilUtc, $1 - $5 + ",
    clock!("$5"),
    ")
 WHERE Id = $2 AND LockedBy = $3 AND LeaseVersion = $4 AND Seeding = $6 AND ",
    live!("$5"),
    "
RETURNING LockedUntilUtc, ",
    clock!("$5")
);

/// The attempts of a message this worker still holds, locked until the release below, and
/// the server's clock, for a connection on the server's clock.
pub static HELD_ATTEMPTS_SQL: &str = concat!(
    "
SELECT Attempts, ",
    server_ms!(),
    " FROM OutboxMessages
 WHERE Id = $1 AND Status = 'Processing' AND LockedBy = $2 AND LeaseVersion = $3
   AND Seeding = $4
   FOR UPDATE"
);

pub static RELEASE_SQL: &str = "
UPDATE OutboxMessages
   SET Status = $1::text, LockedBy = NULL, LockedUntilUtc = NULL, AvailableAtUtc = $2,
       LastError = $3, ProcessedAtUtc = CASE WHEN $1::text = 'DeadLettered' THEN $8::bigint END
 WHERE Id = $4 AND Status = 'Processing' AND LockedBy = $5 AND LeaseVersion = $6
   AND Seeding = $7";

/// Leasing off: Processed, asking nobody.
pub static MARK_SQL: &str = "
UPDATE OutboxMessages SET Status = 'Processed', ProcessedAtUtc = $1,
       LockedBy = NULL, LockedUntilUtc = NULL
 WHERE Id = $2 RETURNING LeaseVersion";

pub static LOAD_PENDING_SQL: &str = concat!(
    "SELECT Id, PaymentKey FROM OutboxMessages
      WHERE ProcessedAtUtc IS NULL AND ",
    available!("$1"),
    "
      ORDER BY CreatedAtUtc, Id"
);

impl Upkeep for PgStore {
    /// Extend `lease` to `now + lease_ms` (never shorter than it is). `None`: the lease is
    /// lost (a `LeaseLost` row says so). Returns the new expiry and the write's stamp.
    fn heartbeat(
        &mut self,
        lease: &Lease,
        now: i64,
        lease_ms: i64,
    ) -> OutboxResult<Stamped<Option<i64>>> {
        let (beat, rec) = (self.prepared(HEARTBEAT_SQL)?, self.recorder()?);
        let server_clock = self.on_server_clock();
        let mut client = self.client();
        let mut tx = client.transaction()?;
        let beaten: Option<(i64, i64)> = tx
            .query_opt(
                &beat,
                &[
                    &(now + lease_ms),
                    &lease.id,
                    &lease.owner,
                    &lease.version,
                    &now,
                    &lease.seeding,
                ],
            )?
            .map(|r| (r.get(0), r.get(1)));
        let until = beaten.map(|(until, _)| until);
        // The event's time is the one the heartbeat went by.
        let now = match beaten {
            Some((_, at)) => at,
            None if server_clock => tx.query_one(SERVER_MS_SQL, &[])?.get(0),
            None => now,
        };
        // A lost lease is written too, so a watcher sees the worker drop the message.
        let kind = if until.is_some() {
            LeaseEventKind::Heartbeat
        } else {
            LeaseEventKind::LeaseLost
        };
        let event = NewEvent {
            until,
            ..NewEvent::of(lease, kind, now)
        };
        let (_, stamp) = rec.record(&mut tx, &event)?;
        tx.commit()?;
        Ok(Stamped::new(until, stamp))
    }

    /// Record a failed attempt of a held message: back to Pending after its backoff, or
    /// DeadLettered when it was the last attempt `policy` allows.
    fn fail_attempt(
        &mut self,
        lease: &Lease,
        error: &str,
        now: i64,
        policy: &RetryPolicy,
    ) -> OutboxResult<Stamped<FailOutcome>> {
        let (held, release) = (
            self.prepared(HELD_ATTEMPTS_SQL)?,
            self.prepared(RELEASE_SQL)?,
        );
        let rec = self.recorder()?;
        let server_clock = self.on_server_clock();
        let mut client = self.client();
        let mut tx = client.transaction()?;
        let held: Option<(i64, i64)> = tx
            .query_opt(
                &held,
                &[&lease.id, &lease.owner, &lease.version, &lease.seeding],
            )?
            .map(|r| (r.get(0), r.get(1)));
        let Some((attempts, server_now)) = held else {
            tx.rollback()?;
            return Ok(Stamped::new(FailOutcome::LeaseLost, rec.shared.next_seq()));
        };
        // On the server's clock the backoff runs from the server's time.
        let now = if server_clock { server_now } else { now };
        let (status, available, outcome) = policy.after_failure(attempts, now);
        tx.execute(
            &release,
            &[
                &status,
                &available,
                &error,
                &lease.id,
                &lease.owner,
                &lease.version,
                &lease.seeding,
                &now,
            ],
        )?;
        let kind = match status {
            OutboxStatus::DeadLettered => LeaseEventKind::DeadLettered,
            _ => LeaseEventKind::Retry,
        };
        // A retried message's row also says when it may be claimed again.
        let event = NewEvent {
            until: (kind == LeaseEventKind::Retry).then_some(available),
            detail: Some(error),
            ..NewEvent::of(lease, kind, now)
        };
        let (_, stamp) = rec.record(&mut tx, &event)?;
        tx.commit()?;
        Ok(Stamped::new(outcome, stamp))
    }

    /// Put dead letters back to Pending with fresh attempts: the one of `key`, or all when
    /// `key` is `None`. Returns how many were redriven.
    fn redrive(&mut self, key: Option<&str>, now: i64) -> OutboxResult<Stamped<u64>> {
        // One event row each, made from the updated rows (so after their row locks), so a
        // watcher's table follows the redrive.
        let rows = self.client().query(
            "WITH redriven AS (
               UPDATE OutboxMessages SET Status = 'Pending', Attempts = 0, AvailableAtUtc = $1,
                      ProcessedAtUtc = NULL
                WHERE Status = 'DeadLettered' AND ($2::text IS NULL OR PaymentKey = $2)
               RETURNING Id, PaymentKey, LeaseVersion)
             INSERT INTO LeaseEvents (AtUtc, Worker, Kind, MessageId, PaymentKey, LeaseVersion)
             SELECT $1, $3, 'Redriven', Id, PaymentKey, LeaseVersion FROM redriven
             RETURNING Seq",
            &[&now, &key, &crate::events::ENGINE],
        )?;
        let last = rows.iter().map(|r| r.get::<_, i64>(0) as u64).max();
        let stamp = match last {
            Some(seq) => self.shared.stamp_of_row(seq),
            None => self.shared.next_seq(),
        };
        Ok(Stamped::new(rows.len() as u64, stamp))
    }
}

impl Unleased for PgStore {
    fn mark_processed(
        &mut self,
        msg: &MessageRef,
        check: &StatusCheck,
        now: i64,
    ) -> OutboxResult<Stamped<()>> {
        self.mark_processed_by("", msg, check, now)
    }

    /// Leasing off: every Pending message whose backoff is over at `now`, as the naive
    /// worker loads them.
    fn load_pending(&self, now: i64) -> OutboxResult<Vec<MessageRef>> {
        let load = self.prepared(LOAD_PENDING_SQL)?;
        let rows = self.client().query(&load, &[&now])?;
        Ok(rows
            .iter()
            .map(|r| MessageRef {
                id: r.get(0),
                key: r.get(1),
            })
            .collect())
    }

    /// Leasing off: write the answer and mark Processed, asking nobody. Returns its stamp.
    fn mark_processed_by(
        &mut self,
        worker: &str,
        msg: &MessageRef,
        check: &StatusCheck,
        now: i64,
    ) -> OutboxResult<Stamped<()>> {
        let (answer, mark) = (self.prepared(WRITE_ANSWER_SQL)?, self.prepared(MARK_SQL)?);
        let rec = self.recorder()?;
        let mut client = self.client();
        let mut tx = client.transaction()?;
        tx.execute(
            &answer,
            &[&check.status.as_str(), &check.transaction_id, &msg.key],
        )?;
        let version: i64 = tx.query_one(&mark, &[&now, &msg.id])?.get(0);
        let event = NewEvent {
            at: now,
            worker,
            kind: LeaseEventKind::Marked,
            id: msg.id,
            key: &msg.key,
            version,
            until: None,
            status: Some(check.status.as_str()),
            detail: None,
        };
        let (_, stamp) = rec.record(&mut tx, &event)?;
        tx.commit()?;
        Ok(Stamped::new((), stamp))
    }
}
