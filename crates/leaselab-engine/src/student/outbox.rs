//! The student's statements as an outbox beside SQLite's and PostgreSQL's: the claim, the
//! finalize and the heartbeat are the exercise's; seeding, reading and the lab's records are
//! the wrapped `Store`'s; what an exercise does not define (a claim by id, a failed attempt,
//! a redrive, the leasing-off relay, the owner-only guard) is refused in words.

use super::op::OpRun;
use super::run::{OpResult, Step};
use super::store::StudentStore;
use crate::outbox::prelude::*;
use crate::outbox::{
    ClaimOutcome, Fact, FailOutcome, FinalizeGuard, FinalizeOutcome, Lease, MessageRef, MessageRow,
    OutboxCounts, OutboxError, PaymentCounts, PaymentRow, Result, RetryPolicy, RowsPerKey, Stamped,
};
use crate::provider::{Provider, StatusCheck};
use crate::store::Store;
use std::borrow::BorrowMut;

impl<S: BorrowMut<Store>> StudentStore<S> {
    /// `fresh` to its end, or stepwise one step of it (or of the operation of its kind left
    /// partway): None while the operation goes on.
    fn run_op(&mut self, fresh: OpRun) -> Result<Option<(OpResult, u64)>> {
        if !self.stepwise {
            return Ok(Some(self.run_to_end(fresh)?));
        }
        let mut run = match self.partway.take() {
            Some(run) if run.kind == fresh.kind => run,
            _ => fresh,
        };
        match self.step(&mut run)? {
            (Step::Done(result), shown) => {
                let stamp = shown.stamp.unwrap_or_else(|| self.store().stamp_nothing());
                Ok(Some((result, stamp)))
            }
            (Step::Continue, _) => {
                self.partway = Some(run);
                Ok(None)
            }
        }
    }

    fn refuse<T>(&self, what: &str) -> Result<T> {
        Err(OutboxError::Exercise(format!(
            "{}: the exercise '{}' {what}",
            crate::text::quoted(&self.exercise.file),
            crate::text::quoted(&self.exercise.name)
        )))
    }
}

impl<S: BorrowMut<Store>> Claiming for StudentStore<S> {
    fn claim_next(
        &mut self,
        worker: &str,
        now: i64,
        lease_ms: i64,
    ) -> Result<Stamped<ClaimOutcome>> {
        let Some((result, stamp)) = self.run_op(OpRun::claim(worker, now, lease_ms))? else {
            return Ok(Stamped::new(
                ClaimOutcome::Empty,
                self.store().stamp_nothing(),
            ));
        };
        let outcome = match result {
            OpResult::Claimed(lease) => ClaimOutcome::Claimed(lease),
            _ => ClaimOutcome::Empty,
        };
        Ok(Stamped::new(outcome, stamp))
    }

    fn blocked_by(&self, worker: &str, now: i64) -> Result<Option<ClaimOutcome>> {
        self.store().blocked_by(worker, now)
    }

    fn claim_id(&mut self, _: i64, _: &str, _: i64, _: i64) -> Result<Stamped<ClaimOutcome>> {
        self.refuse("has no claim of one message by its Id")
    }
}

impl<S: BorrowMut<Store>> BatchClaiming for StudentStore<S> {}

impl<S: BorrowMut<Store>> Finalizing for StudentStore<S> {
    fn finalize(
        &mut self,
        lease: &Lease,
        check: &StatusCheck,
        now: i64,
    ) -> Result<Stamped<FinalizeOutcome>> {
        let Some((result, stamp)) = self.run_op(OpRun::finalize(lease, check, now))? else {
            return Ok(Stamped::new(
                FinalizeOutcome::Rejected,
                self.store().stamp_nothing(),
            ));
        };
        let outcome = match result {
            OpResult::Accepted => FinalizeOutcome::Committed,
            _ => FinalizeOutcome::Rejected,
        };
        Ok(Stamped::new(outcome, stamp))
    }

    fn guard_finalize(&mut self, guard: FinalizeGuard) -> Result<()> {
        match guard {
            FinalizeGuard::FencingToken => Ok(()),
            FinalizeGuard::OwnerOnly => {
                self.refuse("guards its finalize with its own statements, not the owner-only guard")
            }
        }
    }
}

impl<S: BorrowMut<Store>> Unleased for StudentStore<S> {
    fn load_pending(&self, _: i64) -> Result<Vec<MessageRef>> {
        self.refuse("leases its messages; it has no leasing-off relay")
    }

    fn mark_processed(&mut self, _: &MessageRef, _: &StatusCheck, _: i64) -> Result<Stamped<()>> {
        self.refuse("leases its messages; it has no leasing-off relay")
    }

    fn mark_processed_by(
        &mut self,
        _: &str,
        _: &MessageRef,
        _: &StatusCheck,
        _: i64,
    ) -> Result<Stamped<()>> {
        self.refuse("leases its messages; it has no leasing-off relay")
    }
}

impl<S: BorrowMut<Store>> Upkeep for StudentStore<S> {
    fn heartbeat(
        &mut self,
        lease: &Lease,
        now: i64,
        lease_ms: i64,
    ) -> Result<Stamped<Option<i64>>> {
        if self.exercise.heartbeat.is_none() {
            return self.refuse("defines no [heartbeat]");
        }
        let (result, stamp) = self.run_to_end(OpRun::heartbeat(lease, now, lease_ms))?;
        let until = match result {
            OpResult::Extended(until) => Some(until),
            _ => None,
        };
        Ok(Stamped::new(until, stamp))
    }

    fn fail_attempt(
        &mut self,
        _: &Lease,
        _: &str,
        _: i64,
        _: &RetryPolicy,
    ) -> Result<Stamped<FailOutcome>> {
        self.refuse("defines no failed attempt (its provider must not fail)")
    }

    fn redrive(&mut self, _: Option<&str>, _: i64) -> Result<Stamped<u64>> {
        self.refuse("defines no redrive")
    }
}

impl<S: BorrowMut<Store>> Seeding for StudentStore<S> {
    fn empty(&mut self) -> Result<()> {
        self.store_mut().empty()
    }

    fn seed(&mut self, provider: &Provider, count: u64, now: i64) -> Result<()> {
        self.store_mut().seed(provider, count, now)
    }

    fn add_payment(
        &mut self,
        provider: &Provider,
        key: &str,
        amount: i64,
        now: i64,
    ) -> Result<MessageRef> {
        self.store_mut().add_payment(provider, key, amount, now)
    }

    fn next_payment_number(&self) -> Result<u64> {
        self.store().next_payment_number()
    }
}

impl<S: BorrowMut<Store>> Reading for StudentStore<S> {
    fn outbox_counts(&self) -> Result<OutboxCounts> {
        self.store().outbox_counts()
    }
    fn payment_counts(&self) -> Result<PaymentCounts> {
        self.store().payment_counts()
    }
    fn message_count(&self) -> Result<u64> {
        self.store().message_count()
    }
    fn seeded_at(&self) -> Result<Option<i64>> {
        self.store().seeded_at()
    }
    fn owner(&self) -> Result<Option<String>> {
        self.store().owner()
    }
    fn messages(&self, offset: u64, limit: u64) -> Result<Vec<MessageRow>> {
        self.store().messages(offset, limit)
    }
    fn payments(&self) -> Result<Vec<PaymentRow>> {
        self.store().payments()
    }
    fn max_rows_per_key(&self) -> Result<RowsPerKey> {
        self.store().max_rows_per_key()
    }
    fn orphans(&self) -> Result<u64> {
        self.store().orphans()
    }
    fn schema(&self) -> Result<Vec<String>> {
        self.store().schema()
    }
    fn last_error(&self, key: &str) -> Result<Option<String>> {
        self.store().last_error(key)
    }
}

impl<S: BorrowMut<Store>> Recording for StudentStore<S> {
    fn record(&mut self, fact: &Fact) -> Result<Stamped<()>> {
        self.store_mut().record(fact)
    }

    fn student_statements(&self) -> Option<std::sync::Arc<[crate::outbox::StudentStatement]>> {
        Some(self.ran.iter().cloned().collect())
    }

    fn partway(&self) -> bool {
        self.partway.is_some()
    }
}
