//! The outbox in SQLite. Every SQL statement of leaselab lives in this file.
//!
//! Each worker opens its own [`Store`] (its own connection), as a separate application
//! instance would. `now` is always a bound parameter taken from the scenario clock.

use std::cell::Cell;
use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rusqlite::{params, Connection, OpenFlags, OptionalExtension, TransactionBehavior};

use super::provider::{Caller, Provider, StatusCheck};

pub const SCHEMA_SQL: &str = include_str!("../../assets/schema.sql");

/// `PRAGMA application_id` of every leaselab database ("LSLB"): the marker that tells our
/// files from another application's before anything is written.
pub const APPLICATION_ID: i32 = 0x4C53_4C42;
/// `PRAGMA user_version`: the version of `assets/schema.sql` a database was made with.
pub const SCHEMA_VERSION: i32 = 1;
/// The longest absolute database path SQLite opens: its 512-byte path buffer must also
/// hold the `-journal` name.
pub const MAX_PATH_BYTES: usize = 504;

/// How long a connection keeps retrying a locked database before giving up.
const BUSY_GIVE_UP: Duration = Duration::from_secs(30);
/// Overrides [`BUSY_GIVE_UP`] in milliseconds, read once per process (tests use a short one).
pub const BUSY_GIVE_UP_ENV: &str = "LEASELAB_BUSY_GIVE_UP_MS";
/// How long a connection waits before asking for a locked database again.
const BUSY_PAUSE: Duration = Duration::from_millis(1);

#[derive(Debug)]
pub enum StoreError {
    Sqlite(rusqlite::Error),
    /// The file exists and is not a leaselab database; it was left untouched.
    Foreign(String),
    /// Another leaselab process holds the database; it was left untouched.
    InUse(String),
    /// The path cannot hold a database (too long, folder missing or not writable).
    BadPath(String),
    Io(String),
    /// A failure injected by a test between two statements of one transaction.
    Injected(String),
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreError::Sqlite(rusqlite::Error::SqliteFailure(e, _))
                if e.code == rusqlite::ErrorCode::DatabaseBusy =>
            {
                write!(
                    f,
                    "the database stayed locked by another connection for more than {} ms \
                     (SQLite: {e})",
                    busy_give_up().as_millis()
                )
            }
            StoreError::Sqlite(e) => write!(f, "SQLite: {e}"),
            StoreError::Foreign(m)
            | StoreError::InUse(m)
            | StoreError::BadPath(m)
            | StoreError::Io(m)
            | StoreError::Injected(m) => f.write_str(m),
        }
    }
}

impl StoreError {
    /// True when the `--db` given cannot be used (bad input, not a failure of the run).
    pub fn is_bad_input(&self) -> bool {
        matches!(
            self,
            StoreError::Foreign(_) | StoreError::InUse(_) | StoreError::BadPath(_)
        )
    }
}

impl std::error::Error for StoreError {}

impl From<rusqlite::Error> for StoreError {
    fn from(e: rusqlite::Error) -> Self {
        StoreError::Sqlite(e)
    }
}

pub type Result<T> = std::result::Result<T, StoreError>;

/// How hard a commit waits for the disk (SQLite's `synchronous`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Durability {
    /// Every commit is on disk before it returns: the lesson is about durability.
    #[default]
    Full,
    /// WAL commits reach the disk at checkpoints: a power cut may lose the newest ones.
    Normal,
    /// No syncing at all: for property tests that create thousands of throwaway databases.
    Off,
}

impl Durability {
    pub fn pragma(self) -> &'static str {
        match self {
            Durability::Full => "FULL",
            Durability::Normal => "NORMAL",
            Durability::Off => "OFF",
        }
    }
}

/// Settings and counters shared by every connection of one engine.
#[derive(Debug, Default)]
pub struct StoreShared {
    pub durability: Durability,
    /// Stamped on every write while its transaction still holds the write lock, so the
    /// order of stamps is the order in which SQLite committed.
    pub commit_seq: AtomicU64,
    /// How many times a statement met SQLITE_BUSY and waited instead of failing.
    pub busy_met: AtomicU64,
}

impl StoreShared {
    pub fn new(durability: Durability) -> StoreShared {
        StoreShared {
            durability,
            ..StoreShared::default()
        }
    }

    pub fn next_seq(&self) -> u64 {
        self.commit_seq.fetch_add(1, Ordering::SeqCst) + 1
    }
}

thread_local! {
    static BUSY_MET_HERE: Cell<u64> = const { Cell::new(0) };
}

/// How long a connection waits out a locked database before it fails with SQLITE_BUSY.
pub fn busy_give_up() -> Duration {
    static LIMIT: std::sync::OnceLock<Duration> = std::sync::OnceLock::new();
    *LIMIT.get_or_init(|| {
        std::env::var(BUSY_GIVE_UP_ENV)
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map_or(BUSY_GIVE_UP, Duration::from_millis)
    })
}

/// Waits out a locked database like busy_timeout does, but counts each encounter.
fn busy_handler(attempt: i32) -> bool {
    thread_local! {
        static STARTED: Cell<Option<Instant>> = const { Cell::new(None) };
    }
    if attempt == 0 {
        BUSY_MET_HERE.with(|c| c.set(c.get() + 1));
        STARTED.with(|s| s.set(Some(Instant::now())));
    }
    let started = STARTED.with(|s| s.get()).unwrap_or_else(Instant::now);
    if started.elapsed() > busy_give_up() {
        return false;
    }
    // A whole millisecond, not a short nap: while a waiter sleeps, the lock holder runs
    // several transactions on a warm page cache. Every hand-over costs the next connection
    // its cache, so fewer hand-overs mean more messages per second (and less fairness).
    std::thread::sleep(BUSY_PAUSE);
    true
}

/// Where the database came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DbOrigin {
    /// A new file.
    Created,
    /// An existing leaselab database, emptied and reseeded.
    Reused,
}

/// What [`identify`] found at a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Identity {
    Absent,
    /// Our marker and exactly our schema.
    Marked,
    /// Exactly our schema without the marker: made by a leaselab before the marker existed.
    Unmarked,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageRef {
    pub id: i64,
    pub key: String,
}

/// A lease a worker holds after a successful claim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    pub id: i64,
    pub key: String,
    pub owner: String,
    pub until_ms: i64,
    /// The fencing token this claim produced.
    pub version: i64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClaimOutcome {
    Claimed(Lease),
    /// Nothing claimable right now.
    Empty,
    /// The message asked for belongs to someone else whose lease has not expired.
    Blocked {
        id: i64,
        key: String,
        owner: String,
        left_ms: i64,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FinalizeOutcome {
    Committed,
    /// The guarded update changed no row: the worker no longer owns the message.
    Rejected,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct OutboxCounts {
    pub pending: u64,
    pub processing: u64,
    pub processed: u64,
}

impl OutboxCounts {
    /// Nothing left for anyone: no row is Pending or Processing. The one definition of
    /// "drained" for runs, the soak and the dashboard.
    pub fn drained(&self) -> bool {
        self.pending == 0 && self.processing == 0
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct PaymentCounts {
    pub pending: u64,
    pub paid: u64,
    pub failed: u64,
    pub paid_with_txid: u64,
    pub failed_with_txid: u64,
}

/// One outbox row as the table shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageRow {
    pub id: i64,
    pub key: String,
    pub status: String,
    pub locked_by: Option<String>,
    pub locked_until_ms: Option<i64>,
    pub lease_version: i64,
    pub attempts: i64,
    pub processed_at_ms: Option<i64>,
    pub payment_status: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PaymentRow {
    pub key: String,
    pub status: String,
    pub transaction_id: Option<String>,
}

/// One connection to the outbox database.
pub struct Store {
    conn: Connection,
    path: PathBuf,
    shared: Arc<StoreShared>,
}

impl fmt::Debug for Store {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Store").field("path", &self.path).finish()
    }
}

/// The amount seeded for payment number `n`, in cents.
pub fn amount_for(n: u64) -> i64 {
    1_000 + (n as i64 % 40) * 250
}

/// `PAY-001` for payment number 1.
pub fn payment_key(n: u64) -> String {
    format!("PAY-{n:03}")
}

impl Store {
    /// Open the database for an engine: create it, or reuse an existing leaselab database
    /// (emptied by the caller's seeding). Anything else at `path` is refused before a single
    /// byte is written. A leaselab database made before the marker existed is accepted only
    /// when its schema is exactly ours, and is then stamped with the marker.
    pub fn create(path: &Path, shared: Arc<StoreShared>) -> Result<(Store, DbOrigin)> {
        match identify(path)? {
            Identity::Absent => {
                make(path, shared.durability)?;
                let store = Store::open(path, shared).map_err(|e| open_failure(path, e))?;
                Ok((store, DbOrigin::Created))
            }
            Identity::Marked => {
                let store = Store::open(path, shared).map_err(|e| open_failure(path, e))?;
                Ok((store, DbOrigin::Reused))
            }
            Identity::Unmarked => {
                let mut store = Store::open(path, shared).map_err(|e| open_failure(path, e))?;
                let tx = store
                    .conn
                    .transaction_with_behavior(TransactionBehavior::Immediate)?;
                tx.execute_batch(&marker_sql())?;
                tx.commit()?;
                Ok((store, DbOrigin::Reused))
            }
        }
    }

    /// Open another connection to a database that [`Store::create`] prepared.
    pub fn open(path: &Path, shared: Arc<StoreShared>) -> Result<Store> {
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        Store::configure(conn, path, shared)
    }

    /// A connection that can only read (the dashboard's table).
    pub fn open_read_only(path: &Path) -> Result<Store> {
        let mut conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        conn.busy_handler(Some(busy_handler))?;
        Ok(Store {
            conn,
            path: path.to_path_buf(),
            shared: Arc::new(StoreShared::default()),
        })
    }

    fn configure(mut conn: Connection, path: &Path, shared: Arc<StoreShared>) -> Result<Store> {
        conn.busy_handler(Some(busy_handler))?;
        let mode: String = conn.query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(StoreError::Io(format!(
                "{}: could not switch to WAL (journal_mode={mode})",
                path.display()
            )));
        }
        conn.execute_batch(&format!(
            // 512 KiB of page cache per connection: the claim's working set is a few index
            // pages, and sixteen workers with SQLite's default 2 MiB each would hold 32 MiB.
            "PRAGMA synchronous={}; PRAGMA foreign_keys=ON; PRAGMA cache_size=-512;",
            shared.durability.pragma()
        ))?;
        Ok(Store {
            conn,
            path: path.to_path_buf(),
            shared,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Fold this thread's SQLITE_BUSY encounters into the engine's counter.
    fn absorb_busy(&self) {
        let met = BUSY_MET_HERE.with(|c| c.replace(0));
        if met > 0 {
            self.shared.busy_met.fetch_add(met, Ordering::Relaxed);
        }
    }

    /// Remove every row (the next seeding starts from an empty outbox).
    pub fn empty(&mut self) -> Result<()> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        tx.execute("DELETE FROM OutboxMessages", [])?;
        tx.execute("DELETE FROM Payments", [])?;
        tx.commit()?;
        self.absorb_busy();
        Ok(())
    }

    /// Create payments 1..=count with their outbox messages. Each payment is created at
    /// the gateway once, then written together with its outbox row in one transaction
    /// (many pairs share a transaction to keep seeding fast; a pair never spans two).
    pub fn seed(&mut self, provider: &Provider, count: u64, now: i64) -> Result<()> {
        const CHUNK: u64 = 2_000;
        let mut n = 1;
        while n <= count {
            let end = (n + CHUNK - 1).min(count);
            let tx = self
                .conn
                .transaction_with_behavior(TransactionBehavior::Immediate)?;
            {
                let mut pay = tx.prepare_cached(
                    "INSERT INTO Payments (IdempotencyKey, Amount, PaymentStatus, CreatedAtUtc)
                     VALUES (?1, ?2, 'Pending', ?3)",
                )?;
                let mut out = tx.prepare_cached(
                    "INSERT INTO OutboxMessages (PaymentKey, Status, CreatedAtUtc)
                     VALUES (?1, 'Pending', ?2)",
                )?;
                for i in n..=end {
                    let key = payment_key(i);
                    provider.create_payment(&key, Caller::Seeding);
                    pay.execute(params![key, amount_for(i), now])?;
                    out.execute(params![key, now])?;
                }
            }
            tx.commit()?;
            n = end + 1;
        }
        self.absorb_busy();
        Ok(())
    }

    /// Create one payment and its outbox message in one transaction.
    pub fn add_payment(
        &mut self,
        provider: &Provider,
        key: &str,
        amount: i64,
        now: i64,
    ) -> Result<MessageRef> {
        self.add_payment_with(provider, key, amount, now, || Ok(()))
    }

    /// As [`Store::add_payment`], running `between` after the payment insert and before the
    /// outbox insert: a failure there must leave neither row.
    pub fn add_payment_with(
        &mut self,
        provider: &Provider,
        key: &str,
        amount: i64,
        now: i64,
        between: impl FnOnce() -> Result<()>,
    ) -> Result<MessageRef> {
        provider.create_payment(key, Caller::Seeding);
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        tx.execute(
            "INSERT INTO Payments (IdempotencyKey, Amount, PaymentStatus, CreatedAtUtc)
             VALUES (?1, ?2, 'Pending', ?3)",
            params![key, amount, now],
        )?;
        between()?; // dropping `tx` on error rolls the payment back
        tx.execute(
            "INSERT INTO OutboxMessages (PaymentKey, Status, CreatedAtUtc) VALUES (?1, 'Pending', ?2)",
            params![key, now],
        )?;
        let id = tx.last_insert_rowid();
        tx.commit()?;
        self.absorb_busy();
        Ok(MessageRef {
            id,
            key: key.to_string(),
        })
    }

    /// The next payment number after the highest seeded one.
    pub fn next_payment_number(&self) -> Result<u64> {
        let n: i64 =
            self.conn
                .query_row("SELECT COALESCE(MAX(Id), 0) FROM OutboxMessages", [], |r| {
                    r.get(0)
                })?;
        Ok(n as u64 + 1)
    }

    /// Claim the oldest claimable message: Pending, or Processing with an expired lease.
    /// Returns the outcome and the commit stamp of the claim.
    pub fn claim_next(
        &mut self,
        worker: &str,
        now: i64,
        lease_ms: i64,
    ) -> Result<(ClaimOutcome, u64)> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let lease = tx
            .prepare_cached(CLAIM_NEXT_SQL)?
            .query_row(params![worker, now, now + lease_ms], |r| {
                Ok(Lease {
                    id: r.get(0)?,
                    key: r.get(1)?,
                    owner: worker.to_string(),
                    until_ms: now + lease_ms,
                    version: r.get(2)?,
                })
            })
            .optional()?;
        let seq = self.shared.next_seq();
        tx.commit()?;
        self.absorb_busy();
        Ok((
            lease.map_or(ClaimOutcome::Empty, ClaimOutcome::Claimed),
            seq,
        ))
    }

    /// Claim one particular message. Reports who holds it when it is not claimable.
    pub fn claim_id(
        &mut self,
        id: i64,
        worker: &str,
        now: i64,
        lease_ms: i64,
    ) -> Result<(ClaimOutcome, u64)> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let row: Option<(String, String, Option<String>, Option<i64>)> = tx
            .prepare_cached(
                "SELECT PaymentKey, Status, LockedBy, LockedUntilUtc FROM OutboxMessages WHERE Id = ?1",
            )?
            .query_row([id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
            .optional()?;
        let outcome = match row {
            None => ClaimOutcome::Empty,
            Some((key, status, owner, until)) => {
                let until = until.unwrap_or(i64::MIN);
                if status == "Processing" && until >= now {
                    ClaimOutcome::Blocked {
                        id,
                        key,
                        owner: owner.unwrap_or_default(),
                        left_ms: until - now,
                    }
                } else {
                    take_lease(&tx, id, worker, now, lease_ms)?
                        .map_or(ClaimOutcome::Empty, ClaimOutcome::Claimed)
                }
            }
        };
        let seq = self.shared.next_seq();
        tx.commit()?;
        self.absorb_busy();
        Ok((outcome, seq))
    }

    /// Write the provider's answer and mark the message Processed, in one transaction, only
    /// if this worker still holds this lease. Otherwise roll back and say so.
    pub fn finalize(
        &mut self,
        lease: &Lease,
        check: &StatusCheck,
        now: i64,
    ) -> Result<(FinalizeOutcome, u64)> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        tx.prepare_cached(
            "UPDATE Payments SET PaymentStatus = ?1, TransactionId = ?2 WHERE IdempotencyKey = ?3",
        )?
        .execute(params![
            check.status.as_str(),
            check.transaction_id,
            lease.key
        ])?;
        let changed = tx
            .prepare_cached(
                "UPDATE OutboxMessages
                    SET Status = 'Processed', ProcessedAtUtc = ?1, LockedUntilUtc = NULL
                  WHERE Id = ?2 AND Status = 'Processing' AND LockedBy = ?3 AND LeaseVersion = ?4",
            )?
            .execute(params![now, lease.id, lease.owner, lease.version])?;
        let seq = self.shared.next_seq();
        let outcome = if changed == 1 {
            tx.commit()?;
            FinalizeOutcome::Committed
        } else {
            tx.rollback()?; // the payment update goes with it
            FinalizeOutcome::Rejected
        };
        self.absorb_busy();
        Ok((outcome, seq))
    }

    /// Claim up to `k` claimable messages in one transaction (oldest first).
    pub fn claim_batch(
        &mut self,
        worker: &str,
        now: i64,
        lease_ms: i64,
        k: usize,
    ) -> Result<(Vec<Lease>, u64)> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let mut candidates: Vec<(i64, i64)> = Vec::with_capacity(2 * k);
        {
            let mut pending = tx.prepare_cached(
                "SELECT CreatedAtUtc, Id FROM OutboxMessages
                  WHERE Status = 'Pending' ORDER BY CreatedAtUtc, Id LIMIT ?1",
            )?;
            let rows = pending.query_map([k as i64], |r| Ok((r.get(0)?, r.get(1)?)))?;
            for r in rows {
                candidates.push(r?);
            }
            let mut expired = tx.prepare_cached(
                "SELECT CreatedAtUtc, Id FROM OutboxMessages
                  WHERE Status = 'Processing' AND LockedUntilUtc < ?1
                  ORDER BY LockedUntilUtc LIMIT ?2",
            )?;
            let rows = expired.query_map(params![now, k as i64], |r| Ok((r.get(0)?, r.get(1)?)))?;
            for r in rows {
                candidates.push(r?);
            }
        }
        candidates.sort_unstable();
        candidates.dedup();
        let mut leases = Vec::with_capacity(k);
        for (_, id) in candidates.into_iter().take(k) {
            if let Some(lease) = take_lease(&tx, id, worker, now, lease_ms)? {
                leases.push(lease);
            }
        }
        let seq = self.shared.next_seq();
        tx.commit()?;
        self.absorb_busy();
        Ok((leases, seq))
    }

    /// Finalize several leases in one transaction. Each message is guarded on its own: its
    /// payment is written only when its ownership-guarded update changed the row.
    pub fn finalize_batch(
        &mut self,
        results: &[(Lease, StatusCheck)],
        now: i64,
    ) -> Result<(Vec<FinalizeOutcome>, u64)> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let mut outcomes = Vec::with_capacity(results.len());
        {
            let mut guard = tx.prepare_cached(
                "UPDATE OutboxMessages
                    SET Status = 'Processed', ProcessedAtUtc = ?1, LockedUntilUtc = NULL
                  WHERE Id = ?2 AND Status = 'Processing' AND LockedBy = ?3 AND LeaseVersion = ?4",
            )?;
            let mut pay = tx.prepare_cached(
                "UPDATE Payments SET PaymentStatus = ?1, TransactionId = ?2 WHERE IdempotencyKey = ?3",
            )?;
            for (lease, check) in results {
                if guard.execute(params![now, lease.id, lease.owner, lease.version])? == 1 {
                    pay.execute(params![
                        check.status.as_str(),
                        check.transaction_id,
                        lease.key
                    ])?;
                    outcomes.push(FinalizeOutcome::Committed);
                } else {
                    outcomes.push(FinalizeOutcome::Rejected);
                }
            }
        }
        let seq = self.shared.next_seq();
        tx.commit()?;
        self.absorb_busy();
        Ok((outcomes, seq))
    }

    /// The cheapest write transaction there is: the ceiling a claim loop is measured against.
    pub fn touch(&mut self, id: i64) -> Result<()> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        tx.prepare_cached("UPDATE OutboxMessages SET Attempts = Attempts + 1 WHERE Id = ?1")?
            .execute([id])?;
        tx.commit()?;
        Ok(())
    }

    /// Leasing off: every Pending message, as the naive worker loads them.
    pub fn load_pending(&self) -> Result<Vec<MessageRef>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT Id, PaymentKey FROM OutboxMessages WHERE Status = 'Pending' ORDER BY CreatedAtUtc, Id",
        )?;
        let rows = stmt
            .query_map([], |r| {
                Ok(MessageRef {
                    id: r.get(0)?,
                    key: r.get(1)?,
                })
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        self.absorb_busy();
        Ok(rows)
    }

    /// Leasing off: write the answer and mark Processed, asking nobody. Returns its stamp.
    pub fn mark_processed(
        &mut self,
        msg: &MessageRef,
        check: &StatusCheck,
        now: i64,
    ) -> Result<u64> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        tx.prepare_cached(
            "UPDATE Payments SET PaymentStatus = ?1, TransactionId = ?2 WHERE IdempotencyKey = ?3",
        )?
        .execute(params![
            check.status.as_str(),
            check.transaction_id,
            msg.key
        ])?;
        tx.prepare_cached(
            "UPDATE OutboxMessages SET Status = 'Processed', ProcessedAtUtc = ?1,
                    LockedBy = NULL, LockedUntilUtc = NULL WHERE Id = ?2",
        )?
        .execute(params![now, msg.id])?;
        let seq = self.shared.next_seq();
        tx.commit()?;
        self.absorb_busy();
        Ok(seq)
    }

    /// Rows per outbox status. Pending and Processing are counted through their partial
    /// indexes, Processed as the rest, so a large, mostly finished outbox is counted without
    /// reading its rows.
    pub fn outbox_counts(&self) -> Result<OutboxCounts> {
        let count = |sql: &str| -> Result<u64> {
            let n: i64 = self.conn.prepare_cached(sql)?.query_row([], |r| r.get(0))?;
            Ok(n as u64)
        };
        let pending = count("SELECT COUNT(*) FROM OutboxMessages WHERE Status = 'Pending'")?;
        let processing = count("SELECT COUNT(*) FROM OutboxMessages WHERE Status = 'Processing'")?;
        let total = self.message_count()?;
        Ok(OutboxCounts {
            pending,
            processing,
            processed: total.saturating_sub(pending + processing),
        })
    }

    pub fn payment_counts(&self) -> Result<PaymentCounts> {
        Ok(self.conn.query_row(
            "SELECT
                COALESCE(SUM(PaymentStatus = 'Pending'), 0),
                COALESCE(SUM(PaymentStatus = 'Paid'), 0),
                COALESCE(SUM(PaymentStatus = 'Failed'), 0),
                COALESCE(SUM(PaymentStatus = 'Paid' AND TransactionId IS NOT NULL), 0),
                COALESCE(SUM(PaymentStatus = 'Failed' AND TransactionId IS NOT NULL), 0)
             FROM Payments",
            [],
            |r| {
                Ok(PaymentCounts {
                    pending: r.get::<_, i64>(0)? as u64,
                    paid: r.get::<_, i64>(1)? as u64,
                    failed: r.get::<_, i64>(2)? as u64,
                    paid_with_txid: r.get::<_, i64>(3)? as u64,
                    failed_with_txid: r.get::<_, i64>(4)? as u64,
                })
            },
        )?)
    }

    /// Rows in the outbox. Ids are dense from 1 (rows are only ever deleted all together),
    /// so the highest id is the count, found without reading the rows.
    pub fn message_count(&self) -> Result<u64> {
        let n: i64 = self
            .conn
            .prepare_cached("SELECT COALESCE(MAX(Id), 0) FROM OutboxMessages")?
            .query_row([], |r| r.get(0))?;
        Ok(n as u64)
    }

    /// Rows `offset..offset+limit` of the outbox in id order, with their payment status.
    pub fn messages(&self, offset: u64, limit: u64) -> Result<Vec<MessageRow>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT o.Id, o.PaymentKey, o.Status, o.LockedBy, o.LockedUntilUtc, o.LeaseVersion,
                    o.Attempts, o.ProcessedAtUtc, p.PaymentStatus
               FROM OutboxMessages o JOIN Payments p ON p.IdempotencyKey = o.PaymentKey
              WHERE o.Id > ?1 ORDER BY o.Id LIMIT ?2",
        )?;
        // Ids are dense from 1 (rows are only ever deleted all together), so "skip N rows"
        // is "after id N", which the primary key answers without reading the skipped rows.
        let rows = stmt
            .query_map(params![offset as i64, limit as i64], |r| {
                Ok(MessageRow {
                    id: r.get(0)?,
                    key: r.get(1)?,
                    status: r.get(2)?,
                    locked_by: r.get(3)?,
                    locked_until_ms: r.get(4)?,
                    lease_version: r.get(5)?,
                    attempts: r.get(6)?,
                    processed_at_ms: r.get(7)?,
                    payment_status: r.get(8)?,
                })
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(rows)
    }

    pub fn payments(&self) -> Result<Vec<PaymentRow>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT IdempotencyKey, PaymentStatus, TransactionId FROM Payments ORDER BY IdempotencyKey",
        )?;
        let rows = stmt
            .query_map([], |r| {
                Ok(PaymentRow {
                    key: r.get(0)?,
                    status: r.get(1)?,
                    transaction_id: r.get(2)?,
                })
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(rows)
    }

    /// The most payment rows and outbox rows that share one key.
    pub fn max_rows_per_key(&self) -> Result<(u64, u64)> {
        let pay: i64 = self.conn.query_row(
            "SELECT COALESCE(MAX(n), 0) FROM (SELECT COUNT(*) n FROM Payments GROUP BY IdempotencyKey)",
            [],
            |r| r.get(0),
        )?;
        let out: i64 = self.conn.query_row(
            "SELECT COALESCE(MAX(n), 0) FROM (SELECT COUNT(*) n FROM OutboxMessages GROUP BY PaymentKey)",
            [],
            |r| r.get(0),
        )?;
        Ok((pay as u64, out as u64))
    }

    /// Outbox rows without a payment, and payments without an outbox row.
    pub fn orphans(&self) -> Result<u64> {
        let n: i64 = self.conn.query_row(
            "SELECT (SELECT COUNT(*) FROM OutboxMessages o WHERE NOT EXISTS
                       (SELECT 1 FROM Payments p WHERE p.IdempotencyKey = o.PaymentKey))
                  + (SELECT COUNT(*) FROM Payments p WHERE NOT EXISTS
                       (SELECT 1 FROM OutboxMessages o WHERE o.PaymentKey = p.IdempotencyKey))",
            [],
            |r| r.get(0),
        )?;
        Ok(n as u64)
    }

    /// The schema as this database file holds it (`sqlite_schema`), one statement each,
    /// in the order it was created.
    pub fn schema(&self) -> Result<Vec<String>> {
        let mut stmt = self.conn.prepare(
            "SELECT sql FROM sqlite_schema WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%' ORDER BY rowid",
        )?;
        let rows = stmt
            .query_map([], |r| r.get::<_, String>(0))?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(rows)
    }

    /// `EXPLAIN QUERY PLAN` of the claim statement, one line per plan step.
    pub fn claim_query_plan(&self) -> Result<Vec<String>> {
        let mut stmt = self
            .conn
            .prepare(&format!("EXPLAIN QUERY PLAN {CLAIM_NEXT_SQL}"))?;
        let mut rows = stmt.query(params!["Worker-A", 0i64, 500i64])?;
        let mut lines = Vec::new();
        while let Some(r) = rows.next()? {
            lines.push(r.get::<_, String>(3)?);
        }
        Ok(lines)
    }
}

/// The claim as one conditional update. The candidate is the older answer of two indexed
/// questions (the oldest Pending message; the longest-expired lease), each stopping at its
/// first row; the claimable condition is asked again in the `WHERE`, and the claim holds
/// only if a row came back.
const CLAIM_NEXT_SQL: &str = "
UPDATE OutboxMessages
   SET Status = 'Processing', LockedBy = ?1, LockedUntilUtc = ?3,
       LeaseVersion = LeaseVersion + 1, Attempts = Attempts + 1
 WHERE Id = (SELECT Id FROM (
               SELECT * FROM (SELECT CreatedAtUtc, Id FROM OutboxMessages
                               WHERE Status = 'Pending' ORDER BY CreatedAtUtc, Id LIMIT 1)
               UNION ALL
               SELECT * FROM (SELECT CreatedAtUtc, Id FROM OutboxMessages
                               WHERE Status = 'Processing' AND LockedUntilUtc < ?2
                               ORDER BY LockedUntilUtc LIMIT 1))
             ORDER BY CreatedAtUtc, Id LIMIT 1)
   AND (Status = 'Pending' OR (Status = 'Processing' AND LockedUntilUtc < ?2))
RETURNING Id, PaymentKey, LeaseVersion";

/// The conditional update of a claim: the claimable condition is asked again in the `WHERE`,
/// and the claim holds only if exactly one row changed.
fn take_lease(
    tx: &rusqlite::Transaction<'_>,
    id: i64,
    worker: &str,
    now: i64,
    lease_ms: i64,
) -> Result<Option<Lease>> {
    let until = now + lease_ms;
    let row: Option<(String, i64)> = tx
        .prepare_cached(
            "UPDATE OutboxMessages
                SET Status = 'Processing', LockedBy = ?1, LockedUntilUtc = ?2,
                    LeaseVersion = LeaseVersion + 1, Attempts = Attempts + 1
              WHERE Id = ?3
                AND (Status = 'Pending' OR (Status = 'Processing' AND LockedUntilUtc < ?4))
          RETURNING PaymentKey, LeaseVersion",
        )?
        .query_row(params![worker, until, id, now], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .optional()?;
    Ok(row.map(|(key, version)| Lease {
        id,
        key,
        owner: worker.to_string(),
        until_ms: until,
        version,
    }))
}

/// Decide what a path is, writing nothing: absent (to be created), a leaselab database
/// (reused), or anything else (refused).
pub fn inspect(path: &Path) -> Result<DbOrigin> {
    Ok(match identify(path)? {
        Identity::Absent => DbOrigin::Created,
        Identity::Marked | Identity::Unmarked => DbOrigin::Reused,
    })
}

fn identify(path: &Path) -> Result<Identity> {
    let shown = path.display();
    check_path_length(path)?;
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let dir = folder_of(path);
            if !dir.is_dir() {
                return Err(StoreError::BadPath(format!(
                    "{shown}: folder {} does not exist",
                    dir.display()
                )));
            }
            return Ok(Identity::Absent);
        }
        Err(e) => {
            return Err(StoreError::BadPath(format!(
                "{shown}: cannot be opened: {e}"
            )))
        }
    };
    if meta.is_dir() {
        return Err(StoreError::Foreign(format!(
            "{shown} is a directory, not a database file"
        )));
    }
    let mut header = [0u8; 16];
    let read = std::fs::File::open(path)
        .and_then(|mut f| f.read(&mut header))
        .map_err(|e| StoreError::BadPath(format!("{shown}: cannot read: {e}")))?;
    if read < 16 || &header != b"SQLite format 3\0" {
        return Err(StoreError::Foreign(format!(
            "{shown} exists and is not a SQLite database; refusing to touch it"
        )));
    }
    let conn = open_untouched(path).map_err(|e| match folder_not_writable(path) {
        Some(why) => StoreError::BadPath(format!("{shown}: {why}")),
        None => StoreError::Foreign(format!("{shown}: not a readable SQLite database: {e}")),
    })?;
    let unreadable = |e: rusqlite::Error| {
        StoreError::Foreign(format!("{shown}: not a readable SQLite database: {e}"))
    };
    let app_id: i32 = conn
        .query_row("PRAGMA application_id", [], |r| r.get(0))
        .map_err(unreadable)?;
    let version: i32 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .map_err(unreadable)?;
    if app_id != 0 && app_id != APPLICATION_ID {
        return Err(StoreError::Foreign(format!(
            "{shown} belongs to another application (application_id {app_id:#010x}); refusing to touch it"
        )));
    }
    let ours = app_id == APPLICATION_ID;
    if ours && version != SCHEMA_VERSION {
        return Err(StoreError::Foreign(format!(
            "{shown} is a leaselab database of schema version {version}, this leaselab knows version {SCHEMA_VERSION}; refusing to touch it"
        )));
    }
    let difference = schema_difference(&conn).map_err(unreadable)?;
    match (ours, difference) {
        (true, None) => Ok(Identity::Marked),
        (true, Some(why)) => Err(StoreError::Foreign(format!(
            "{shown} is a leaselab database whose schema was changed ({why}); refusing to touch it"
        ))),
        // An earlier leaselab set no marker, and no user_version either.
        (false, None) if version == 0 => Ok(Identity::Unmarked),
        (false, None) => Err(StoreError::Foreign(format!(
            "{shown} is a SQLite database of another application (user_version {version}); refusing to touch it"
        ))),
        (false, Some(why)) => Err(StoreError::Foreign(format!(
            "{shown} is a SQLite database of another application ({why}); refusing to touch it"
        ))),
    }
}

/// Make a new database at `path` whole or not at all: the schema and the marker are written
/// to a hidden file beside it, which then takes the name without replacing anything. A run
/// killed meanwhile leaves no half-made file that the next run would refuse as foreign.
fn make(path: &Path, durability: Durability) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let shown = path.display();
    let dir = folder_of(path);
    let tmp = tempfile::Builder::new()
        .prefix(".leaselab-new-")
        .rand_bytes(6)
        .permissions(std::fs::Permissions::from_mode(0o644))
        .tempfile_in(dir)
        .map_err(|e| {
            StoreError::BadPath(format!(
                "{shown}: cannot create the database: folder {} is not writable ({e})",
                dir.display()
            ))
        })?;
    {
        let conn = Connection::open_with_flags(
            tmp.path(),
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|e| open_failure(path, e.into()))?;
        conn.execute_batch(&format!(
            "PRAGMA synchronous={}; BEGIN IMMEDIATE; {SCHEMA_SQL} {} COMMIT;",
            durability.pragma(),
            marker_sql()
        ))?;
        conn.close().map_err(|(_, e)| StoreError::from(e))?;
    }
    tmp.persist_noclobber(path).map_err(|e| {
        StoreError::Io(format!(
            "{shown}: cannot put the new database in place: {}",
            e.error
        ))
    })?;
    Ok(())
}

/// The marker every leaselab database carries, set in the transaction that makes it.
fn marker_sql() -> String {
    format!("PRAGMA application_id = {APPLICATION_ID}; PRAGMA user_version = {SCHEMA_VERSION};")
}

/// The folder a database file lives in (`.` for a bare file name).
fn folder_of(path: &Path) -> &Path {
    path.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// SQLite would answer an over-long path with a bare "unable to open database file".
fn check_path_length(path: &Path) -> Result<()> {
    let shown = path.display();
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let bytes = absolute.as_os_str().len();
    if bytes > MAX_PATH_BYTES {
        return Err(StoreError::BadPath(format!(
            "{shown}: path too long to open ({bytes} bytes as an absolute path; SQLite takes at most {MAX_PATH_BYTES})"
        )));
    }
    // The -wal file and the .lock file live beside the database under longer names.
    let name = path.file_name().map_or(0, |n| n.len());
    if name > 250 {
        return Err(StoreError::BadPath(format!(
            "{shown}: file name too long ({name} bytes; at most 250, so that its -wal and .lock files fit beside it)"
        )));
    }
    Ok(())
}

/// Why SQLite could not create or open `path`, when its folder is the cause.
fn folder_not_writable(path: &Path) -> Option<String> {
    let dir = folder_of(path);
    // An unnamed temporary file (O_TMPFILE) asks the file system itself and leaves nothing.
    tempfile::tempfile_in(dir).err().map(|e| {
        format!(
            "folder {} is not writable, and SQLite must write beside the database ({e})",
            dir.display()
        )
    })
}

/// Turn SQLite's bare "unable to open database file" into a line that names the cause.
fn open_failure(path: &Path, e: StoreError) -> StoreError {
    let cannot_open = matches!(
        &e,
        StoreError::Sqlite(rusqlite::Error::SqliteFailure(f, _))
            if matches!(f.code, rusqlite::ErrorCode::CannotOpen | rusqlite::ErrorCode::ReadOnly)
    );
    if !cannot_open {
        return e;
    }
    let shown = path.display();
    match folder_not_writable(path) {
        Some(why) => StoreError::BadPath(format!(
            "{shown}: cannot create or write the database: {why}"
        )),
        None => StoreError::BadPath(format!("{shown}: cannot be opened for writing: {e}")),
    }
}

/// A read-only connection that creates nothing beside the file. A plain read-only open of
/// a WAL database creates its -wal and -shm files; with no -wal present there is nothing
/// but the main file to read, so it is opened as immutable.
fn open_untouched(path: &Path) -> rusqlite::Result<Connection> {
    use std::os::unix::ffi::OsStrExt;
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut uri = String::from("file:");
    for &b in absolute.as_os_str().as_bytes() {
        if b.is_ascii_alphanumeric() || b"/-_.~".contains(&b) {
            uri.push(b as char);
        } else {
            uri.push_str(&format!("%{b:02X}"));
        }
    }
    let mut wal = absolute.into_os_string();
    wal.push("-wal");
    uri.push_str("?mode=ro");
    if !Path::new(&wal).exists() {
        uri.push_str("&immutable=1");
    }
    Connection::open_with_flags(
        uri,
        OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_URI
            | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
}

/// Every table and index with its SQL, as `sqlite_schema` holds them.
type SchemaObject = (String, String, Option<String>);

fn schema_objects(conn: &Connection) -> rusqlite::Result<Vec<SchemaObject>> {
    conn.prepare(
        "SELECT type, name, sql FROM sqlite_schema WHERE name NOT LIKE 'sqlite_%' ORDER BY type DESC, name",
    )?
    .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
    .collect()
}

/// A table's columns: name, declared type, NOT NULL, default, primary-key position.
type Column = (String, String, bool, Option<String>, i64);

fn columns(conn: &Connection, table: &str) -> rusqlite::Result<Vec<Column>> {
    conn.prepare(r#"SELECT name, type, "notnull", dflt_value, pk FROM pragma_table_xinfo(?1)"#)?
        .query_map([table], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
        })?
        .collect()
}

/// The first way the database's schema differs from a fresh one made from
/// `assets/schema.sql`, or None when it is exactly the same.
fn schema_difference(conn: &Connection) -> rusqlite::Result<Option<String>> {
    let reference = Connection::open_in_memory()?;
    reference.execute_batch(SCHEMA_SQL)?;
    let want = schema_objects(&reference)?;
    let have = schema_objects(conn)?;
    if want == have {
        return Ok(None);
    }
    let tables = |objects: &[SchemaObject]| -> Vec<String> {
        objects
            .iter()
            .filter(|o| o.0 == "table")
            .map(|o| o.1.clone())
            .collect()
    };
    let (want_tables, have_tables) = (tables(&want), tables(&have));
    if !have_tables.iter().any(|t| want_tables.contains(t)) {
        return Ok(Some(format!(
            "tables: {}",
            if have_tables.is_empty() {
                "none".to_string()
            } else {
                have_tables.join(", ")
            }
        )));
    }
    for (kind, name, sql) in &want {
        let Some(theirs) = have.iter().find(|o| &o.0 == kind && &o.1 == name) else {
            return Ok(Some(format!("no {kind} {name}")));
        };
        if kind == "table" {
            let (ours, cols) = (columns(&reference, name)?, columns(conn, name)?);
            for c in &ours {
                match cols.iter().find(|t| t.0 == c.0) {
                    None => return Ok(Some(format!("no column {name}.{}", c.0))),
                    Some(t) if t != c => {
                        return Ok(Some(format!(
                            "column {name}.{} is declared otherwise ({} {}{})",
                            c.0,
                            t.1,
                            if t.2 { "NOT NULL" } else { "NULL" },
                            t.3.as_deref()
                                .map(|d| format!(" DEFAULT {d}"))
                                .unwrap_or_default()
                        )))
                    }
                    Some(_) => {}
                }
            }
            if let Some(extra) = cols.iter().find(|t| !ours.iter().any(|c| c.0 == t.0)) {
                return Ok(Some(format!("an extra column {name}.{}", extra.0)));
            }
        }
        if &theirs.2 != sql {
            return Ok(Some(format!("{kind} {name} has other constraints")));
        }
    }
    if let Some(extra) = have
        .iter()
        .find(|o| !want.iter().any(|w| w.0 == o.0 && w.1 == o.1))
    {
        return Ok(Some(format!("an extra {} {}", extra.0, extra.1)));
    }
    Ok(Some("its schema differs".to_string()))
}
