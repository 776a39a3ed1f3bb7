//! The SQLite [`Store`] behind the engine's [`Outbox`] interface.

use super::{
    ClaimOutcome, FailOutcome, FinalizeOutcome, Lease, MessageRef, MessageRow, OutboxCounts,
    PaymentCounts, PaymentRow, Result, RetryPolicy, RowsPerKey, Store,
};
use crate::engine::outbox::Outbox;
use crate::engine::provider::{Provider, StatusCheck};

impl Outbox for Store {
    fn claim_batch(
        &mut self,
        worker: &str,
        now: i64,
        lease_ms: i64,
        k: usize,
    ) -> Result<(Vec<Lease>, u64)> {
        Store::claim_batch(self, worker, now, lease_ms, k)
    }
    fn claim_next(&mut self, worker: &str, now: i64, lease_ms: i64) -> Result<(ClaimOutcome, u64)> {
        Store::claim_next(self, worker, now, lease_ms)
    }
    fn blocked_by(&self, worker: &str, now: i64) -> Result<Option<ClaimOutcome>> {
        Store::blocked_by(self, worker, now)
    }
    fn claim_id(
        &mut self,
        id: i64,
        worker: &str,
        now: i64,
        lease_ms: i64,
    ) -> Result<(ClaimOutcome, u64)> {
        Store::claim_id(self, id, worker, now, lease_ms)
    }
    fn finalize(
        &mut self,
        lease: &Lease,
        check: &StatusCheck,
        now: i64,
    ) -> Result<(FinalizeOutcome, u64)> {
        Store::finalize(self, lease, check, now)
    }
    fn load_pending(&self, now: i64) -> Result<Vec<MessageRef>> {
        Store::load_pending(self, now)
    }
    fn mark_processed(&mut self, msg: &MessageRef, check: &StatusCheck, now: i64) -> Result<u64> {
        Store::mark_processed(self, msg, check, now)
    }
    fn mark_processed_by(
        &mut self,
        _worker: &str,
        msg: &MessageRef,
        check: &StatusCheck,
        now: i64,
    ) -> Result<u64> {
        Store::mark_processed(self, msg, check, now)
    }
    fn heartbeat(&mut self, lease: &Lease, now: i64, lease_ms: i64) -> Result<(Option<i64>, u64)> {
        Store::heartbeat(self, lease, now, lease_ms)
    }
    fn fail_attempt(
        &mut self,
        lease: &Lease,
        error: &str,
        now: i64,
        policy: &RetryPolicy,
    ) -> Result<(FailOutcome, u64)> {
        Store::fail_attempt(self, lease, error, now, policy)
    }
    fn redrive(&mut self, key: Option<&str>, now: i64) -> Result<(u64, u64)> {
        Store::redrive(self, key, now)
    }
    fn empty(&mut self) -> Result<()> {
        Store::empty(self)
    }
    fn seed(&mut self, provider: &Provider, count: u64, now: i64) -> Result<()> {
        Store::seed(self, provider, count, now)
    }
    fn add_payment(
        &mut self,
        provider: &Provider,
        key: &str,
        amount: i64,
        now: i64,
    ) -> Result<MessageRef> {
        Store::add_payment(self, provider, key, amount, now)
    }
    fn next_payment_number(&self) -> Result<u64> {
        Store::next_payment_number(self)
    }
    fn outbox_counts(&self) -> Result<OutboxCounts> {
        Store::outbox_counts(self)
    }
    fn payment_counts(&self) -> Result<PaymentCounts> {
        Store::payment_counts(self)
    }
    fn message_count(&self) -> Result<u64> {
        Store::message_count(self)
    }
    fn seeded_at(&self) -> Result<Option<i64>> {
        Store::seeded_at(self)
    }
    fn owner(&self) -> Result<Option<String>> {
        Ok(crate::engine::db_lock::DbLock::holder(self.path()))
    }
    fn messages(&self, offset: u64, limit: u64) -> Result<Vec<MessageRow>> {
        Store::messages(self, offset, limit)
    }
    fn payments(&self) -> Result<Vec<PaymentRow>> {
        Store::payments(self)
    }
    fn max_rows_per_key(&self) -> Result<RowsPerKey> {
        Store::max_rows_per_key(self)
    }
    fn orphans(&self) -> Result<u64> {
        Store::orphans(self)
    }
    fn schema(&self) -> Result<Vec<String>> {
        Store::schema(self)
    }
    fn last_error(&self, key: &str) -> Result<Option<String>> {
        Store::last_error(self, key)
    }
}
