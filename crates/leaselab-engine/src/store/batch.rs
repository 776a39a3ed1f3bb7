//! Batches: several claims or finalizes in one transaction. SQL, so it lives here. The
//! bench calls both; workers with a batch size above one call the batch claim.

use crate::outbox::prelude::*;
use rusqlite::{named_params, params};

use super::claim::{record_claim, take_lease};
use super::conn::End;
use super::finalize::{write_answer, GUARDED_FINALIZE_SQL};
use super::{FinalizeOutcome, Lease, Result, Store};
use crate::outbox::Stamped;
use crate::provider::StatusCheck;

impl Store {
    /// Finalize several leases in one transaction. Each message is guarded on its own: its
    /// payment is written only when its ownership-guarded update changed the row.
    pub fn finalize_batch(
        &mut self,
        results: &[(Lease, StatusCheck)],
        now: i64,
    ) -> Result<Stamped<Vec<FinalizeOutcome>>> {
        self.write(|tx, shared| {
            let mut outcomes = Vec::with_capacity(results.len());
            let mut guard = tx.prepare_cached(GUARDED_FINALIZE_SQL)?;
            for (lease, check) in results {
                if guard.execute(params![
                    now,
                    lease.id,
                    lease.owner,
                    lease.version,
                    lease.seeding
                ])? == 1
                {
                    write_answer(tx, &lease.key, check)?;
                    outcomes.push(FinalizeOutcome::Committed);
                } else {
                    outcomes.push(FinalizeOutcome::Rejected);
                }
            }
            Ok((Stamped::new(outcomes, shared.next_seq()), End::Commit))
        })
    }

    /// The cheapest write transaction there is: the ceiling a claim loop is measured against.
    pub fn touch(&mut self, id: i64) -> Result<()> {
        self.write(|tx, _| {
            tx.prepare_cached("UPDATE OutboxMessages SET Attempts = Attempts + 1 WHERE Id = ?1")?
                .execute([id])?;
            Ok(((), End::Commit))
        })
    }
}

/// A batch claim's candidates: the oldest claimable rows, as the single claim finds its
/// one; each is then taken by the claim's own conditional update.
pub static BATCH_CANDIDATES_SQL: &str = concat!(
    "SELECT Id, PaymentKey, LeaseVersion, Seeding ",
    unfinished!(),
    claimable!(),
    " ORDER BY CreatedAtUtc, Id LIMIT :k"
);

impl BatchClaiming for Store {
    /// Claim up to `k` claimable messages in one transaction (oldest first).
    fn claim_batch(
        &mut self,
        worker: &str,
        now: i64,
        lease_ms: i64,
        k: usize,
    ) -> Result<Stamped<Vec<Lease>>> {
        self.write(|tx, shared| {
            // The oldest claimable rows, as the single claim finds its one.
            let mut claimable = tx.prepare_cached(BATCH_CANDIDATES_SQL)?;
            let candidates = claimable
                .query_map(named_params! {":now": now, ":k": k as i64}, |r| {
                    Ok(((r.get(0)?, r.get(1)?), (r.get(2)?, r.get(3)?)))
                })?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            let mut leases = Vec::with_capacity(k);
            let until = now + lease_ms;
            for (message, token) in candidates {
                if let Some(lease) = take_lease(tx, false, worker, (now, until), message, token)? {
                    record_claim(tx, &lease, now)?;
                    leases.push(lease);
                }
            }
            Ok((Stamped::new(leases, shared.next_seq()), End::Commit))
        })
    }
}
