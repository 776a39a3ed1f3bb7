//! The PostgreSQL store behind the engine's [`Outbox`] interface.

use std::sync::{Arc, Mutex, MutexGuard};

use super::{parse_url, PgError, PgStore};
use crate::engine::outbox::OutboxError;
use crate::engine::outbox::{
    ClaimOutcome, DbOrigin, FailOutcome, FinalizeOutcome, Lease, MessageRef, MessageRow,
    OutboxCounts, PaymentCounts, PaymentRow, Result, RetryPolicy, RowsPerKey, StoreShared,
};
use crate::engine::outbox::{Failure, Outbox};
use crate::engine::provider::{Provider, StatusCheck};

impl From<PgError> for OutboxError {
    fn from(e: PgError) -> OutboxError {
        match e {
            PgError::Foreign(m) => OutboxError::Foreign(m),
            PgError::InUse(m) => OutboxError::InUse(m),
            PgError::BadUrl(m) | PgError::Unreachable(m) => OutboxError::BadPath(m),
            e @ PgError::Postgres(_) => OutboxError::Database {
                failure: Failure::Other,
                message: e.to_string(),
            },
        }
    }
}

/// One PostgreSQL connection as an [`Outbox`]. The client needs `&mut` even to read, and
/// the engine reads through `&self`: the mutex is never contended (one owner per connection).
pub struct PgOutbox {
    store: Mutex<PgStore>,
}

impl PgOutbox {
    /// The engine's own connection: make or reuse the schema (a database that is not
    /// leaselab's, or that another engine holds, is refused untouched), stamping writes
    /// from `shared`. The database is held until this connection closes.
    pub fn create(url: &str, shared: Arc<StoreShared>) -> Result<(PgOutbox, DbOrigin)> {
        let config = parse_url(url)?;
        let mut store = PgStore::open(&config)?;
        store.hold()?;
        let origin = store.make_or_reuse()?;
        store.share(shared)?;
        Ok((PgOutbox::new(store), origin))
    }

    /// Another connection to a database that [`PgOutbox::create`] prepared.
    pub fn open(url: &str, shared: Arc<StoreShared>) -> Result<PgOutbox> {
        let mut store = PgStore::open_url(url)?;
        store.share(shared)?;
        Ok(PgOutbox::new(store))
    }

    pub fn new(store: PgStore) -> PgOutbox {
        PgOutbox {
            store: Mutex::new(store),
        }
    }

    fn pg(&self) -> MutexGuard<'_, PgStore> {
        self.store.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn pg_mut(&mut self) -> &mut PgStore {
        self.store.get_mut().unwrap_or_else(|p| p.into_inner())
    }
}

impl Outbox for PgOutbox {
    fn claim_next(&mut self, worker: &str, now: i64, lease_ms: i64) -> Result<(ClaimOutcome, u64)> {
        let s = self.pg_mut().claim_next_stamped(worker, now, lease_ms)?;
        Ok((s.value, s.stamp))
    }
    fn blocked_by(&self, worker: &str, now: i64) -> Result<Option<ClaimOutcome>> {
        Ok(self.pg().blocked_by(worker, now)?)
    }
    fn claim_id(
        &mut self,
        id: i64,
        worker: &str,
        now: i64,
        lease_ms: i64,
    ) -> Result<(ClaimOutcome, u64)> {
        let s = self.pg_mut().claim_id_stamped(id, worker, now, lease_ms)?;
        Ok((s.value, s.stamp))
    }
    fn finalize(
        &mut self,
        lease: &Lease,
        check: &StatusCheck,
        now: i64,
    ) -> Result<(FinalizeOutcome, u64)> {
        let s = self.pg_mut().finalize_stamped(lease, check, now)?;
        Ok((s.value, s.stamp))
    }
    fn load_pending(&self, now: i64) -> Result<Vec<MessageRef>> {
        Ok(self.pg().load_pending(now)?)
    }
    fn mark_processed(&mut self, msg: &MessageRef, check: &StatusCheck, now: i64) -> Result<u64> {
        Ok(self.pg_mut().mark_processed_by("", msg, check, now)?)
    }
    fn mark_processed_by(
        &mut self,
        worker: &str,
        msg: &MessageRef,
        check: &StatusCheck,
        now: i64,
    ) -> Result<u64> {
        Ok(self.pg_mut().mark_processed_by(worker, msg, check, now)?)
    }
    fn heartbeat(&mut self, lease: &Lease, now: i64, lease_ms: i64) -> Result<(Option<i64>, u64)> {
        Ok(self.pg_mut().heartbeat(lease, now, lease_ms)?)
    }
    fn fail_attempt(
        &mut self,
        lease: &Lease,
        error: &str,
        now: i64,
        policy: &RetryPolicy,
    ) -> Result<(FailOutcome, u64)> {
        Ok(self.pg_mut().fail_attempt(lease, error, now, policy)?)
    }
    fn redrive(&mut self, key: Option<&str>, now: i64) -> Result<(u64, u64)> {
        Ok(self.pg_mut().redrive(key, now)?)
    }
    fn empty(&mut self) -> Result<()> {
        Ok(self.pg_mut().empty()?)
    }
    fn seed(&mut self, provider: &Provider, count: u64, now: i64) -> Result<()> {
        Ok(self.pg_mut().seed(provider, count, now)?)
    }
    fn add_payment(
        &mut self,
        provider: &Provider,
        key: &str,
        amount: i64,
        now: i64,
    ) -> Result<MessageRef> {
        Ok(self.pg_mut().add_payment(provider, key, amount, now)?)
    }
    fn next_payment_number(&self) -> Result<u64> {
        Ok(self.pg().next_payment_number()?)
    }
    fn outbox_counts(&self) -> Result<OutboxCounts> {
        Ok(self.pg().outbox_counts()?)
    }
    fn payment_counts(&self) -> Result<PaymentCounts> {
        Ok(self.pg().payment_counts()?)
    }
    fn message_count(&self) -> Result<u64> {
        Ok(self.pg().message_count()?)
    }
    fn seeded_at(&self) -> Result<Option<i64>> {
        Ok(self.pg().seeded_at()?)
    }
    fn owner(&self) -> Result<Option<String>> {
        Ok(self.pg().owner()?)
    }
    fn messages(&self, offset: u64, limit: u64) -> Result<Vec<MessageRow>> {
        Ok(self.pg().messages(offset, limit)?)
    }
    fn payments(&self) -> Result<Vec<PaymentRow>> {
        Ok(self.pg().payments()?)
    }
    fn max_rows_per_key(&self) -> Result<RowsPerKey> {
        Ok(self.pg().max_rows_per_key()?)
    }
    fn orphans(&self) -> Result<u64> {
        Ok(self.pg().orphans()?)
    }
    fn schema(&self) -> Result<Vec<String>> {
        Ok(super::schema_statements())
    }
    fn last_error(&self, key: &str) -> Result<Option<String>> {
        Ok(self.pg().last_error(key)?)
    }
}
