//! Claim and finalize on PostgreSQL, each with its `LeaseEvents` row in the same transaction.

use postgres::Transaction;

use super::{PgStore, Result};
use crate::engine::provider::StatusCheck;
use crate::engine::store::{ClaimOutcome, FinalizeOutcome, Lease};

/// Key of the advisory lock that orders `LeaseEvents` ("LSEV"): taken just before the event
/// insert and held until commit, so the Seq it draws is in commit order.
const EVENTS_LOCK: i64 = 0x4C53_4556;

/// The claim as one conditional update. The candidate is the older answer of two indexed
/// questions (the oldest Pending message; the longest-expired lease), each skipping rows
/// another claim has locked; the claimable condition is asked again in the `WHERE`.
const CLAIM_NEXT_SQL: &str = "
WITH pending AS (
       SELECT CreatedAtUtc, Id FROM OutboxMessages
        WHERE Status = 'Pending' ORDER BY CreatedAtUtc, Id LIMIT 1
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
   AND (o.Status = 'Pending' OR (o.Status = 'Processing' AND o.LockedUntilUtc < $2))
RETURNING o.Id, o.PaymentKey, o.LeaseVersion";

/// The ownership guard of a finalize: only the holder of this very lease may finish it.
const GUARDED_FINALIZE_SQL: &str = "
UPDATE OutboxMessages
   SET Status = 'Processed', ProcessedAtUtc = $1, LockedUntilUtc = NULL
 WHERE Id = $2 AND Status = 'Processing' AND LockedBy = $3 AND LeaseVersion = $4";

impl PgStore {
    /// Claim the oldest claimable message: Pending, or Processing with an expired lease.
    /// Returns the outcome and, for a claim, the `LeaseEvents` Seq written with it.
    pub fn claim_next(
        &mut self,
        worker: &str,
        now: i64,
        lease_ms: i64,
    ) -> Result<(ClaimOutcome, Option<u64>)> {
        let until = now + lease_ms;
        let mut tx = self.client.transaction()?;
        let row = tx.query_opt(CLAIM_NEXT_SQL, &[&worker, &now, &until])?;
        let Some(row) = row else {
            tx.commit()?;
            return Ok((ClaimOutcome::Empty, None));
        };
        let lease = Lease {
            id: row.get(0),
            key: row.get(1),
            owner: worker.to_string(),
            until_ms: until,
            version: row.get(2),
        };
        let seq = record_claim(&mut tx, &lease, now)?;
        tx.commit()?;
        Ok((ClaimOutcome::Claimed(lease), Some(seq)))
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
        let until = now + lease_ms;
        let mut tx = self.client.transaction()?;
        // FOR UPDATE: the row cannot change between this look and the update below.
        let row = tx.query_opt(
            "SELECT PaymentKey, Status, LockedBy, LockedUntilUtc FROM OutboxMessages
              WHERE Id = $1 FOR UPDATE",
            &[&id],
        )?;
        let Some(row) = row else {
            tx.commit()?;
            return Ok((ClaimOutcome::Empty, None));
        };
        let (key, status): (String, String) = (row.get(0), row.get(1));
        let owner: Option<String> = row.get(2);
        let held_until: Option<i64> = row.get(3);
        if let (true, Some(held_until)) = (status == "Processing", held_until) {
            if held_until >= now {
                tx.commit()?;
                return Ok((
                    ClaimOutcome::Blocked {
                        id,
                        key,
                        owner: owner.unwrap_or_default(),
                        left_ms: held_until - now,
                    },
                    None,
                ));
            }
        }
        let version: Option<i64> = tx
            .query_opt(
                "UPDATE OutboxMessages
                    SET Status = 'Processing', LockedBy = $1, LockedUntilUtc = $2,
                        LeaseVersion = LeaseVersion + 1, Attempts = Attempts + 1
                  WHERE Id = $3
                    AND (Status = 'Pending' OR (Status = 'Processing' AND LockedUntilUtc < $4))
              RETURNING LeaseVersion",
                &[&worker, &until, &id, &now],
            )?
            .map(|r| r.get(0));
        let Some(version) = version else {
            tx.commit()?;
            return Ok((ClaimOutcome::Empty, None));
        };
        let lease = Lease {
            id,
            key,
            owner: worker.to_string(),
            until_ms: until,
            version,
        };
        let seq = record_claim(&mut tx, &lease, now)?;
        tx.commit()?;
        Ok((ClaimOutcome::Claimed(lease), Some(seq)))
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
        let mut tx = self.client.transaction()?;
        let changed = {
            let mut writes = tx.savepoint("finalize")?;
            writes.execute(
                "UPDATE Payments SET PaymentStatus = $1, TransactionId = $2
                  WHERE IdempotencyKey = $3",
                &[&check.status.as_str(), &check.transaction_id, &lease.key],
            )?;
            let changed = writes.execute(
                GUARDED_FINALIZE_SQL,
                &[&now, &lease.id, &lease.owner, &lease.version],
            )?;
            if changed == 1 {
                writes.commit()?;
            } else {
                writes.rollback()?; // the payment update goes with it
            }
            changed
        };
        let (outcome, kind, status) = if changed == 1 {
            (
                FinalizeOutcome::Committed,
                "Finalized",
                Some(check.status.as_str()),
            )
        } else {
            (FinalizeOutcome::Rejected, "FinalizeRejected", None)
        };
        let seq = record(&mut tx, now, lease, kind, None, status)?;
        tx.commit()?;
        Ok((outcome, seq))
    }
}

fn record_claim(tx: &mut Transaction<'_>, lease: &Lease, now: i64) -> Result<u64> {
    record(tx, now, lease, "Claimed", Some(lease.until_ms), None)
}

/// Append one `LeaseEvents` row; the last statement before the commit, so the advisory
/// lock that orders the table is held only for the commit itself.
fn record(
    tx: &mut Transaction<'_>,
    now: i64,
    lease: &Lease,
    kind: &str,
    until: Option<i64>,
    status: Option<&str>,
) -> Result<u64> {
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&EVENTS_LOCK])?;
    let seq: i64 = tx
        .query_one(
            "INSERT INTO LeaseEvents
                    (AtUtc, Worker, Kind, MessageId, PaymentKey, LeaseVersion, LockedUntilUtc,
                     PaymentStatus)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
          RETURNING Seq",
            &[
                &now,
                &lease.owner,
                &kind,
                &lease.id,
                &lease.key,
                &lease.version,
                &until,
                &status,
            ],
        )?
        .get(0);
    Ok(seq as u64)
}
