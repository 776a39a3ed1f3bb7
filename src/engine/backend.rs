//! The one interface between the engine and a database: the worker cycle, seeding and the
//! read queries go through [`Outbox`], implemented by the SQLite [`Store`] and by the
//! PostgreSQL store. [`Db`] says which one `--db` names.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::provider::{Provider, StatusCheck};
use super::store::{
    ClaimOutcome, DbOrigin, FailOutcome, FinalizeOutcome, Lease, MessageRef, MessageRow,
    OutboxCounts, PaymentCounts, PaymentRow, Result, RetryPolicy, RowsPerKey, Store, StoreShared,
};

/// Where the outbox lives: a SQLite file, or a PostgreSQL database named by its URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Db {
    Sqlite(PathBuf),
    Postgres(String),
}

impl Db {
    /// `--db`: a `postgres://` or `postgresql://` URL names PostgreSQL, anything else a file.
    pub fn parse(arg: &Path) -> Db {
        match arg.to_str() {
            Some(s) if super::pg::is_url(s) => Db::Postgres(s.to_string()),
            _ => Db::Sqlite(arg.to_path_buf()),
        }
    }

    /// `SQLite` or `PostgreSQL`, as a report names it.
    pub fn engine_name(&self) -> &'static str {
        match self {
            Db::Sqlite(_) => "SQLite",
            Db::Postgres(_) => "PostgreSQL",
        }
    }

    pub fn is_postgres(&self) -> bool {
        matches!(self, Db::Postgres(_))
    }

    /// The location for a report or the header: a path, or the server without a password.
    pub fn shown(&self) -> String {
        match self {
            Db::Sqlite(p) => p.display().to_string(),
            Db::Postgres(url) => super::pg::parse_url(url)
                .map(|c| super::pg::describe(&c))
                .unwrap_or_else(|_| "PostgreSQL".to_string()),
        }
    }

    /// Another connection to a database the engine prepared, stamping its writes from
    /// `shared` (one per worker, as a separate application instance would have).
    pub fn open(&self, shared: Arc<StoreShared>) -> Result<Box<dyn Outbox>> {
        match self {
            Db::Sqlite(path) => Ok(Box::new(Store::open(path, shared)?)),
            Db::Postgres(url) => Ok(Box::new(super::pg::PgOutbox::open(url, shared)?)),
        }
    }

    /// Join the database as a guest (a worker process, a watching dashboard): no hold on it,
    /// since others share it. A missing or empty database is made with `messages` payments
    /// at once, so that two guests starting together make it once; one that is not
    /// leaselab's is refused untouched.
    pub fn join(
        &self,
        shared: Arc<StoreShared>,
        provider: &Provider,
        messages: u64,
        now: i64,
    ) -> Result<(Box<dyn Outbox>, DbOrigin)> {
        match self {
            Db::Sqlite(path) => {
                let (store, origin) =
                    Store::join(path, shared, |s| s.seed(provider, messages, now))?;
                Ok((Box::new(store), origin))
            }
            Db::Postgres(url) => {
                let (store, origin) =
                    super::pg::PgStore::join(url, shared, provider, messages, now)?;
                Ok((Box::new(super::pg::PgOutbox::new(store)), origin))
            }
        }
    }

    /// A connection for the dashboard's table (read-only where the database allows it).
    pub fn open_reader(&self) -> Result<Box<dyn Outbox>> {
        match self {
            Db::Sqlite(path) => Ok(Box::new(Store::open_read_only(path)?)),
            Db::Postgres(url) => Ok(Box::new(super::pg::PgOutbox::open(
                url,
                Arc::new(StoreShared::default()),
            )?)),
        }
    }
}

impl From<PathBuf> for Db {
    fn from(p: PathBuf) -> Db {
        Db::parse(&p)
    }
}

/// Everything the engine asks of an outbox database. Writes return the commit stamp taken
/// while the write still held its locks, so stamps order each message's history as the
/// database committed it. `now` is always the scenario clock's.
pub trait Outbox: Send {
    /// Claim the oldest claimable message: available Pending, or Processing with an
    /// expired lease.
    fn claim_next(&mut self, worker: &str, now: i64, lease_ms: i64) -> Result<(ClaimOutcome, u64)>;
    /// Claim up to `k` claimable messages, oldest first, in one transaction when the
    /// backend has a batch claim. The default takes one with [`Outbox::claim_next`].
    fn claim_batch(
        &mut self,
        worker: &str,
        now: i64,
        lease_ms: i64,
        k: usize,
    ) -> Result<(Vec<Lease>, u64)> {
        let _ = k;
        let (outcome, seq) = self.claim_next(worker, now, lease_ms)?;
        Ok(match outcome {
            ClaimOutcome::Claimed(lease) => (vec![lease], seq),
            _ => (Vec::new(), seq),
        })
    }
    /// Claim one message; `Blocked` with owner and time left while another lease holds it.
    /// After an empty claim: the soonest-ending live lease another worker holds, if any.
    fn blocked_by(&self, worker: &str, now: i64) -> Result<Option<ClaimOutcome>>;
    fn claim_id(
        &mut self,
        id: i64,
        worker: &str,
        now: i64,
        lease_ms: i64,
    ) -> Result<(ClaimOutcome, u64)>;
    /// The ownership-guarded finalize: rolled back whole when the lease was lost.
    fn finalize(
        &mut self,
        lease: &Lease,
        check: &StatusCheck,
        now: i64,
    ) -> Result<(FinalizeOutcome, u64)>;
    /// Leasing off: every Pending message whose backoff is over at `now`.
    fn load_pending(&self, now: i64) -> Result<Vec<MessageRef>>;
    /// Leasing off: write the answer and mark Processed, asking nobody.
    fn mark_processed(&mut self, msg: &MessageRef, check: &StatusCheck, now: i64) -> Result<u64>;
    /// [`Outbox::mark_processed`] with the worker's name on its event row.
    fn mark_processed_by(
        &mut self,
        worker: &str,
        msg: &MessageRef,
        check: &StatusCheck,
        now: i64,
    ) -> Result<u64>;
    /// Extend a held lease (never shorter); `None` when it is lost.
    fn heartbeat(&mut self, lease: &Lease, now: i64, lease_ms: i64) -> Result<(Option<i64>, u64)>;
    /// A failed attempt: back to Pending after its backoff, or dead-lettered.
    fn fail_attempt(
        &mut self,
        lease: &Lease,
        error: &str,
        now: i64,
        policy: &RetryPolicy,
    ) -> Result<(FailOutcome, u64)>;
    /// Dead letters back to Pending with fresh attempts (one key, or all).
    fn redrive(&mut self, key: Option<&str>, now: i64) -> Result<(u64, u64)>;

    /// Remove every row (and event) before a new seeding.
    fn empty(&mut self) -> Result<()>;
    fn seed(&mut self, provider: &Provider, count: u64, now: i64) -> Result<()>;
    fn add_payment(
        &mut self,
        provider: &Provider,
        key: &str,
        amount: i64,
        now: i64,
    ) -> Result<MessageRef>;
    fn next_payment_number(&self) -> Result<u64>;

    fn outbox_counts(&self) -> Result<OutboxCounts>;
    fn payment_counts(&self) -> Result<PaymentCounts>;
    fn message_count(&self) -> Result<u64>;
    /// When the newest seeding was made, on its maker's clock (None: never seeded).
    fn seeded_at(&self) -> Result<Option<i64>>;
    /// The leaselab that owns the database right now (a run or a dashboard), if any.
    fn owner(&self) -> Result<Option<String>>;
    fn messages(&self, offset: u64, limit: u64) -> Result<Vec<MessageRow>>;
    fn payments(&self) -> Result<Vec<PaymentRow>>;
    fn max_rows_per_key(&self) -> Result<RowsPerKey>;
    fn orphans(&self) -> Result<u64>;
    fn schema(&self) -> Result<Vec<String>>;
    fn last_error(&self, key: &str) -> Result<Option<String>>;
}

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
        Ok(super::db_lock::DbLock::holder(self.path()))
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
