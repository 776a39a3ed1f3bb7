//! Claim and finalize on PostgreSQL, each with its `LeaseEvents` row in the same transaction.

use std::sync::Arc;

use postgres::{Statement, Transaction};

use super::{PgStore, Result};
use crate::engine::provider::StatusCheck;
use crate::engine::store::{ClaimOutcome, FinalizeOutcome, Lease, StoreShared};

/// Key of the advisory lock that orders `LeaseEvents` ("LSEV"): taken just before the event
/// insert and held until commit, so the Seq it draws is in commit order.
pub(super) const EVENTS_LOCK: i64 = 0x4C53_4556;

/// The claim as one conditional update. The candidate is the older answer of two indexed
/// questions (the oldest Pending message; the longest-expired lease), each skipping rows
/// another claim has locked; the claimable condition is asked again in the `WHERE`.
const CLAIM_NEXT_SQL: &str = "
WITH pending AS (
       SELECT CreatedAtUtc, Id FROM OutboxMessages
        WHERE Status = 'Pending' AND AvailableAtUtc <= $2 ORDER BY CreatedAtUtc, Id LIMIT 1
          FOR UPDATE SKIP LOCKED),
     expired AS (
       SELECT CreatedAtUtc, Id FROM OutboxMessages
        WHERE Status = 'Processing' AND LockedUntilUtc < $2 ORDER BY LockedUntilUtc LIMIT 1
          FOR UPDATE SKIP LOCKED),
     candidate AS (
       SELECT Id FROM (SELECT * FROM pending UNION ALL SELECT * FROM expired) c
        ORDER BY CreatedAtUtc, Id LIMIT 1)
UPDATE OutboxMessages o
   SET Status = 'Processing', LockedBy = $1, LockedUntilUtc = $3,
       LeaseVersion = o.LeaseVersion + 1, Attempts = o.Attempts + 1
  FROM candidate
 WHERE o.Id = candidate.Id
   AND ((o.Status = 'Pending' AND o.AvailableAtUtc <= $2)
        OR (o.Status = 'Processing' AND o.LockedUntilUtc < $2))
RETURNING o.Id, o.PaymentKey, o.LeaseVersion, o.Seeding";

/// The ownership guard of a finalize: only the holder of this very lease may finish it.
const GUARDED_FINALIZE_SQL: &str = "
UPDATE OutboxMessages
   SET Status = 'Processed', ProcessedAtUtc = $1, LockedUntilUtc = NULL
 WHERE Id = $2 AND Status = 'Processing' AND LockedBy = $3 AND LeaseVersion = $4
   AND Seeding = $5";

/// A write's outcome, the `LeaseEvents` Seq it wrote (if any), and the engine stamp it drew
/// while its locks were held, so stamps order each message's history as PostgreSQL
/// committed it.
pub(crate) struct Stamped<T> {
    pub value: T,
    pub event: Option<u64>,
    pub stamp: u64,
}

impl<T> Stamped<T> {
    /// A write that recorded no event: its stamp orders nothing that another could change.
    fn unrecorded(value: T, shared: &StoreShared) -> Stamped<T> {
        Stamped {
            value,
            event: None,
            stamp: shared.next_seq(),
        }
    }
}

/// The soonest-ending live lease held by another worker (through `IX_Outbox_Leased`).
const SOONEST_LIVE_LEASE_SQL: &str = "
SELECT Id, PaymentKey, LockedBy, LockedUntilUtc FROM OutboxMessages
 WHERE Status = 'Processing' AND LockedUntilUtc >= $2 AND LockedBy <> $1
 ORDER BY LockedUntilUtc LIMIT 1";

impl PgStore {
    /// After an empty claim: the live lease that blocks `worker` soonest, if any.
    pub fn blocked_by(&mut self, worker: &str, now: i64) -> Result<Option<ClaimOutcome>> {
        let q = self.prepared(SOONEST_LIVE_LEASE_SQL)?;
        Ok(self.client.query_opt(&q, &[&worker, &now])?.map(|r| {
            let until: i64 = r.get(3);
            ClaimOutcome::Blocked {
                id: r.get(0),
                key: r.get(1),
                owner: r.get(2),
                left_ms: until - now,
            }
        }))
    }

    /// Claim the oldest claimable message: Pending, or Processing with an expired lease.
    /// Returns the outcome and, for a claim, the `LeaseEvents` Seq written with it.
    pub fn claim_next(
        &mut self,
        worker: &str,
        now: i64,
        lease_ms: i64,
    ) -> Result<(ClaimOutcome, Option<u64>)> {
        let s = self.claim_next_stamped(worker, now, lease_ms)?;
        Ok((s.value, s.event))
    }

    pub(crate) fn claim_next_stamped(
        &mut self,
        worker: &str,
        now: i64,
        lease_ms: i64,
    ) -> Result<Stamped<ClaimOutcome>> {
        let until = now + lease_ms;
        let (claim, rec) = (self.prepared(CLAIM_NEXT_SQL)?, self.recorder()?);
        let mut tx = self.client.transaction()?;
        let row = tx.query_opt(&claim, &[&worker, &now, &until])?;
        let Some(row) = row else {
            tx.commit()?;
            return Ok(Stamped::unrecorded(ClaimOutcome::Empty, &rec.shared));
        };
        let lease = Lease {
            id: row.get(0),
            key: row.get(1),
            owner: worker.to_string(),
            until_ms: until,
            version: row.get(2),
            seeding: row.get(3),
        };
        let (seq, stamp) = rec.record(&mut tx, &NewEvent::claim(&lease, now))?;
        tx.commit()?;
        Ok(Stamped {
            value: ClaimOutcome::Claimed(lease),
            event: Some(seq),
            stamp,
        })
    }

    /// Claim one particular message. Reports who holds it, and for how long, when another
    /// worker's lease on it still runs.
    pub fn claim_id(
        &mut self,
        id: i64,
        worker: &str,
        now: i64,
        lease_ms: i64,
    ) -> Result<(ClaimOutcome, Option<u64>)> {
        let s = self.claim_id_stamped(id, worker, now, lease_ms)?;
        Ok((s.value, s.event))
    }

    pub(crate) fn claim_id_stamped(
        &mut self,
        id: i64,
        worker: &str,
        now: i64,
        lease_ms: i64,
    ) -> Result<Stamped<ClaimOutcome>> {
        let until = now + lease_ms;
        let (look, take) = (self.prepared(HOLDER_SQL)?, self.prepared(TAKE_LEASE_SQL)?);
        let rec = self.recorder()?;
        let shared = rec.shared.clone();
        let mut tx = self.client.transaction()?;
        let row = tx.query_opt(&look, &[&id])?;
        let Some(row) = row else {
            tx.commit()?;
            return Ok(Stamped::unrecorded(ClaimOutcome::Empty, &shared));
        };
        let (key, status): (String, String) = (row.get(0), row.get(1));
        let owner: Option<String> = row.get(2);
        let held_until: Option<i64> = row.get(3);
        if let (true, Some(held_until)) = (status == "Processing", held_until) {
            if held_until >= now {
                tx.commit()?;
                let blocked = ClaimOutcome::Blocked {
                    id,
                    key,
                    owner: owner.unwrap_or_default(),
                    left_ms: held_until - now,
                };
                return Ok(Stamped::unrecorded(blocked, &shared));
            }
        }
        let taken: Option<(i64, i64)> = tx
            .query_opt(&take, &[&worker, &until, &id, &now])?
            .map(|r| (r.get(0), r.get(1)));
        let Some((version, seeding)) = taken else {
            tx.commit()?;
            return Ok(Stamped::unrecorded(ClaimOutcome::Empty, &shared));
        };
        let lease = Lease {
            id,
            key,
            owner: worker.to_string(),
            until_ms: until,
            version,
            seeding,
        };
        let (seq, stamp) = rec.record(&mut tx, &NewEvent::claim(&lease, now))?;
        tx.commit()?;
        Ok(Stamped {
            value: ClaimOutcome::Claimed(lease),
            event: Some(seq),
            stamp,
        })
    }

    /// Write the provider's answer and mark the message Processed, in one transaction, only
    /// if this worker still holds this lease. Otherwise roll the writes back, record the
    /// rejection, and say so. Returns the outcome and its `LeaseEvents` Seq.
    pub fn finalize(
        &mut self,
        lease: &Lease,
        check: &StatusCheck,
        now: i64,
    ) -> Result<(FinalizeOutcome, u64)> {
        let s = self.finalize_stamped(lease, check, now)?;
        Ok((s.value, s.event.unwrap_or_default()))
    }

    pub(crate) fn finalize_stamped(
        &mut self,
        lease: &Lease,
        check: &StatusCheck,
        now: i64,
    ) -> Result<Stamped<FinalizeOutcome>> {
        let (guard, answer) = (
            self.prepared(GUARDED_FINALIZE_SQL)?,
            self.prepared(WRITE_ANSWER_SQL)?,
        );
        let rec = self.recorder()?;
        let mut tx = self.client.transaction()?;
        // The guard first: when it changes no row, the payment is never touched.
        let changed = tx.execute(
            &guard,
            &[
                &now,
                &lease.id,
                &lease.owner,
                &lease.version,
                &lease.seeding,
            ],
        )?;
        if changed == 1 {
            tx.execute(
                &answer,
                &[&check.status.as_str(), &check.transaction_id, &lease.key],
            )?;
        }
        let (outcome, kind, status) = if changed == 1 {
            (
                FinalizeOutcome::Committed,
                "Finalized",
                Some(check.status.as_str()),
            )
        } else {
            (FinalizeOutcome::Rejected, "FinalizeRejected", None)
        };
        let event = NewEvent {
            status,
            ..NewEvent::of(lease, kind, now)
        };
        let (seq, stamp) = rec.record(&mut tx, &event)?;
        tx.commit()?;
        Ok(Stamped {
            value: outcome,
            event: Some(seq),
            stamp,
        })
    }
}

/// The conditional update of one chosen message, with the claimable condition repeated.
const TAKE_LEASE_SQL: &str = "
UPDATE OutboxMessages
   SET Status = 'Processing', LockedBy = $1, LockedUntilUtc = $2,
       LeaseVersion = LeaseVersion + 1, Attempts = Attempts + 1
 WHERE Id = $3
   AND ((Status = 'Pending' AND AvailableAtUtc <= $4)
        OR (Status = 'Processing' AND LockedUntilUtc < $4))
RETURNING LeaseVersion, Seeding";

/// Who holds one message, as a claim by id reads it. FOR UPDATE: the row cannot change
/// between this look and the update after it.
const HOLDER_SQL: &str =
    "SELECT PaymentKey, Status, LockedBy, LockedUntilUtc FROM OutboxMessages WHERE Id = $1 FOR UPDATE";

/// The provider's answer written onto the payment.
pub(super) const WRITE_ANSWER_SQL: &str =
    "UPDATE Payments SET PaymentStatus = $1, TransactionId = $2 WHERE IdempotencyKey = $3";

/// One `LeaseEvents` row, its Seq drawn under the advisory lock that orders the table (the
/// lock is taken in the FROM, before the row and its identity value are made).
const RECORD_SQL: &str = "
INSERT INTO LeaseEvents
       (AtUtc, Worker, Kind, MessageId, PaymentKey, LeaseVersion, LockedUntilUtc, PaymentStatus,
        Detail)
SELECT $1::bigint, $2::text, $3::text, $4::bigint, $5::text, $6::bigint, $7::bigint, $8::text,
       $10::text
  FROM (SELECT pg_advisory_xact_lock($9::bigint)) AS ordered
RETURNING Seq";

/// One `LeaseEvents` row about to be written.
pub(super) struct NewEvent<'a> {
    pub at: i64,
    pub worker: &'a str,
    pub kind: &'a str,
    pub id: i64,
    pub key: &'a str,
    pub version: i64,
    pub until: Option<i64>,
    pub status: Option<&'a str>,
    /// The error of a failed attempt.
    pub detail: Option<&'a str>,
}

impl<'a> NewEvent<'a> {
    /// An event about `lease`, by its owner.
    pub fn of(lease: &'a Lease, kind: &'a str, now: i64) -> NewEvent<'a> {
        NewEvent {
            at: now,
            worker: &lease.owner,
            kind,
            id: lease.id,
            key: &lease.key,
            version: lease.version,
            until: None,
            status: None,
            detail: None,
        }
    }

    fn claim(lease: &'a Lease, now: i64) -> NewEvent<'a> {
        NewEvent {
            until: Some(lease.until_ms),
            ..NewEvent::of(lease, "Claimed", now)
        }
    }
}

/// Writes event rows and draws the engine's stamps for one connection.
pub(super) struct Recorder {
    insert: Statement,
    pub shared: Arc<StoreShared>,
}

impl PgStore {
    pub(super) fn recorder(&mut self) -> Result<Recorder> {
        Ok(Recorder {
            insert: self.prepared(RECORD_SQL)?,
            shared: self.shared.clone(),
        })
    }
}

impl Recorder {
    /// Append one `LeaseEvents` row and draw the engine's stamp; the last statement before
    /// the commit, so the advisory lock that orders the table (and the stamps) is held only
    /// for the commit itself. Returns (Seq, stamp).
    pub fn record(&self, tx: &mut Transaction<'_>, e: &NewEvent<'_>) -> Result<(u64, u64)> {
        let seq: i64 = tx
            .query_one(
                &self.insert,
                &[
                    &e.at,
                    &e.worker,
                    &e.kind,
                    &e.id,
                    &e.key,
                    &e.version,
                    &e.until,
                    &e.status,
                    &EVENTS_LOCK,
                    &e.detail,
                ],
            )?
            .get(0);
        Ok((seq as u64, self.shared.next_seq()))
    }
}
