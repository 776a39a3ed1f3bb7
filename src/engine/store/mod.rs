//! The outbox in SQLite. Every SQL statement of leaselab lives under this folder, one file
//! per job: the connection and its write transaction (`conn`), seeding (`seed`), claiming
//! (`claim`), finalizing (`finalize`), the leasing-off load and mark (`naive`), read queries
//! (`snapshot`), the events table every change writes a row to (`lease_events`), inspection of a file before use (`identity`) and the bench's batches
//! (`batch`).
//!
//! Each worker opens its own [`Store`] (its own connection), as a separate application
//! instance would. `now` is always a bound parameter taken from the scenario clock.

/// A Processing row whose lease has run out (`:now` is past its until): the half of the
/// claimable condition that takes a message from its owner. Written once for every statement.
macro_rules! expired {
    () => {
        "(Status = 'Processing' AND LockedUntilUtc < :now)"
    };
}

/// A Pending row whose backoff is over (`AvailableAtUtc` not after `:now`).
macro_rules! available {
    () => {
        "(Status = 'Pending' AND AvailableAtUtc <= :now)"
    };
}

/// The claimable condition: Pending and available, or Processing with an expired lease. Its
/// Rust side is `lease::is_live`.
macro_rules! claimable {
    () => {
        concat!("(", available!(), " OR ", expired!(), ")")
    };
}

/// Rows of `IX_Outbox_Unfinished`, in claim order: a query that starts `FROM` this reads
/// the unfinished messages through their index (the partial index's own condition must be
/// in the query for SQLite to use it).
macro_rules! unfinished {
    () => {
        "FROM OutboxMessages INDEXED BY IX_Outbox_Unfinished
          WHERE Status IN ('Pending', 'Processing') AND "
    };
}

mod batch;
mod claim;
mod conn;
mod finalize;
mod identity;
mod lease_events;
mod naive;
mod plain;
mod retry;
mod seed;
mod snapshot;
mod status;

use std::fmt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use rusqlite::Connection;

pub use conn::{
    busy_give_up, stop_waiting_for_the_lock, wait_for_the_lock_without_limit, BUSY_GIVE_UP_ENV,
};
pub use identity::{inspect, write_locked};
pub use lease_events::{
    events_ns_on_this_thread, time_events_on_this_thread, LeaseEventKind, LeaseEventRow,
};
pub use plain::PlainOutbox;
pub use retry::{FailOutcome, RetryPolicy};
pub use seed::{amount_for, payment_key, CreationLog};
pub use status::{OutboxStatus, PaymentStatus};

pub const SCHEMA_SQL: &str = include_str!("../../../assets/schema.sql");

/// `PRAGMA application_id` of every leaselab database ("LSLB"): the marker that tells our
/// files from another application's before anything is written.
pub const APPLICATION_ID: i32 = 0x4C53_4C42;
/// `PRAGMA user_version`: the version of `assets/schema.sql` a database was made with.
pub const SCHEMA_VERSION: i32 = 5;
/// The longest absolute database path SQLite opens: its 512-byte path buffer must also
/// hold the `-journal` name.
pub const MAX_PATH_BYTES: usize = 504;

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

/// Where the database came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DbOrigin {
    /// A new file.
    Created,
    /// An existing leaselab database, emptied and reseeded.
    Reused,
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
    /// The seeding of the row it was taken on: fenced on with `version`, so a lease from
    /// before a reseed never matches a row after it (versions start again per seeding).
    pub seeding: i64,
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
    /// Failed their last attempt; no one claims them until a redrive.
    pub dead_lettered: u64,
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

/// The most rows that share one payment key, per table: 1 and 1 when nothing was duplicated.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct RowsPerKey {
    pub payments: u64,
    pub outbox: u64,
}

impl RowsPerKey {
    /// No key has more than one row in either table.
    pub fn none_duplicated(self) -> bool {
        self.payments <= 1 && self.outbox <= 1
    }
}

/// One outbox row as the table shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageRow {
    pub id: i64,
    pub key: String,
    pub status: OutboxStatus,
    pub locked_by: Option<String>,
    pub locked_until_ms: Option<i64>,
    pub lease_version: i64,
    pub attempts: i64,
    pub processed_at_ms: Option<i64>,
    pub payment_status: PaymentStatus,
    /// When a Pending row may be claimed again (`AvailableAtUtc`): after a failed attempt,
    /// one backoff ahead.
    pub available_at_ms: i64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PaymentRow {
    pub key: String,
    pub status: PaymentStatus,
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
