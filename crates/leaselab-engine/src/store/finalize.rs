//! Finalizing: the provider's answer and Processed, only for the lease's owner.

use crate::outbox::prelude::*;
use rusqlite::params;

use super::conn::End;
use super::lease_events::{record, LeaseEventKind, NewEvent};
use super::prepared::{Hot, Tx};
use super::{FinalizeGuard, FinalizeOutcome, Lease, Result, Store};
use crate::outbox::Stamped;
use crate::provider::StatusCheck;

/// The provider's answer written onto the payment.
pub static WRITE_ANSWER_SQL: &str =
    "UPDATE Payments SET PaymentStatus = ?1, TransactionId = ?2 WHERE IdempotencyKey = ?3";

/// Processed, only while this worker still holds this lease (the fencing token included).
pub static GUARDED_FINALIZE_SQL: &str = "UPDATE OutboxMessages
    SET Status = 'Processed', ProcessedAtUtc = ?1, LockedUntilUtc = NULL
  WHERE Id = ?2 AND Status = 'Processing' AND LockedBy = ?3 AND LeaseVersion = ?4
    AND Seeding = ?5";

/// The weaker guard the explorer compares, and a lesson may show: the owner's name only, no
/// fencing token.
pub static OWNER_ONLY_FINALIZE_SQL: &str = "UPDATE OutboxMessages
    SET Status = 'Processed', ProcessedAtUtc = ?1, LockedUntilUtc = NULL
  WHERE Id = ?2 AND Status = 'Processing' AND LockedBy = ?3 AND ?4 = ?4 AND Seeding = ?5";

/// Write the provider's answer onto the payment of `key`.
pub(super) fn write_answer(tx: &Tx<'_, '_>, key: &str, check: &StatusCheck) -> Result<()> {
    tx.run(Hot::WriteAnswer, WRITE_ANSWER_SQL, |s| {
        s.execute(params![check.status.as_str(), check.transaction_id, key])
    })?;
    Ok(())
}

impl Finalizing for Store {
    /// Write the provider's answer and mark the message Processed, in one transaction, only
    /// if this worker still holds this lease. Otherwise write nothing but the rejection's
    /// event row, and say so.
    fn finalize(
        &mut self,
        lease: &Lease,
        check: &StatusCheck,
        now: i64,
    ) -> Result<Stamped<FinalizeOutcome>> {
        let forget_answer = self.rules.forget_answer;
        let (guard, guard_sql) = if self.rules.owner_only_finalize {
            (Hot::OwnerOnlyFinalize, OWNER_ONLY_FINALIZE_SQL)
        } else {
            (Hot::GuardedFinalize, GUARDED_FINALIZE_SQL)
        };
        self.write(|tx, shared| {
            // The guard first: a rejected finalize then writes nothing but its event row.
            let changed = tx.run(guard, guard_sql, |s| {
                s.execute(params![
                    now,
                    lease.id,
                    lease.owner,
                    lease.version,
                    lease.seeding
                ])
            })?;
            let about = |kind| NewEvent {
                version: Some(lease.version),
                ..NewEvent::about(kind, now, &lease.owner, lease.id, &lease.key)
            };
            let outcome = if changed == 1 {
                if !forget_answer {
                    write_answer(tx, &lease.key, check)?;
                }
                record(
                    tx,
                    &NewEvent {
                        detail: Some(check.status.as_str()),
                        ..about(LeaseEventKind::Finalized)
                    },
                )?;
                FinalizeOutcome::Committed
            } else {
                // The answer it could not write, so a reader can count the provider call.
                record(
                    tx,
                    &NewEvent {
                        detail: Some(check.status.as_str()),
                        ..about(LeaseEventKind::FinalizeRejected)
                    },
                )?;
                FinalizeOutcome::Rejected
            };
            Ok((Stamped::new(outcome, shared.next_seq()), End::Commit))
        })
    }

    fn guard_finalize(&mut self, guard: FinalizeGuard) -> Result<()> {
        self.rules.owner_only_finalize = guard == FinalizeGuard::OwnerOnly;
        Ok(())
    }
}
