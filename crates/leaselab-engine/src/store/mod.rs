//! The outbox in SQLite. Every SQL statement of leaselab lives under this folder, one file
//! per job: the connection and its write transaction (`conn`), seeding (`seed`), claiming
//! (`claim`), finalizing (`finalize`), the leasing-off load and mark (`naive`), read queries
//! (`snapshot`), the events table every change writes a row to (`lease_events`), inspection of a file before use (`identity`) and the bench's batches
//! (`batch`).
//!
//! Each worker opens its own [`Store`] (its own connection), as a separate application
//! instance would. `now` is always a bound parameter taken from the scenario clock.

/// A lease still holds at `:now`: up to and including its until. The SQL of
/// `lease::is_live`, written once for every SQLite statement (`tests/dialects.rs` holds both
/// dialects to the same answers).
macro_rules! holds {
    () => {
        "(LockedUntilUtc >= :now)"
    };
}

/// A Processing row whose lease still holds: it blocks a claim, and takes a heartbeat.
macro_rules! live {
    () => {
        concat!("(Status = 'Processing' AND ", holds!(), ")")
    };
}

/// A Processing row whose lease has run out (`:now` is past its until): the half of the
/// claimable condition that takes a message from its owner. Written once for every statement.
macro_rules! expired {
    () => {
        concat!("(Status = 'Processing' AND NOT ", holds!(), ")")
    };
}

/// A Pending row whose backoff is over (`AvailableAtUtc` not after `:now`).
macro_rules! available {
    () => {
        "(Status = 'Pending' AND AvailableAtUtc <= :now)"
    };
}

/// The claimable condition: Pending and available, or Processing with an expired lease. Its
/// Rust side is `lease::is_live`; PostgreSQL's is `claimable!` in `pg`.
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
          WHERE ProcessedAtUtc IS NULL AND "
    };
}

mod batch;
mod cells;
mod claim;
mod conn;
mod finalize;
mod identity;
mod image;
mod lease_events;
mod naive;
mod plain;
mod prepared;
mod retry;
mod seed;
mod snapshot;
mod status;
mod student;

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use super::outbox::Failure;

pub use super::outbox::{amount_for, payment_key};
pub use super::outbox::{
    ClaimOutcome, DbOrigin, Durability, FailOutcome, FinalizeGuard, FinalizeOutcome, Lease,
    MessageRef, MessageRow, OutboxCounts, OutboxStatus, PaymentCounts, PaymentRow, PaymentStatus,
    RetryPolicy, RowsPerKey, StoreShared,
};
pub use super::provider::CreationLog;
pub use cells::{Cell, TableCells};
pub use conn::{
    busy_give_up, stop_waiting_for_the_lock, wait_for_the_lock_again,
    wait_for_the_lock_without_limit, BUSY_GIVE_UP_ENV,
};
pub use identity::{inspect, write_locked};
pub use image::Rules;
pub use lease_events::{
    events_ns_on_this_thread, time_events_on_this_thread, LeaseEventKind, LeaseEventRow,
};
pub use plain::PlainOutbox;
pub use student::{
    limit_for_students, Begin, Join, STUDENT_COLUMN_LIMIT, STUDENT_LENGTH_LIMIT, STUDENT_LIMITS,
    STUDENT_PATTERN_LIMIT,
};

/// The statements the store runs for a worker, by name: the dashboard's SQL pane shows
/// these very texts (`crate::statements`), so what it shows is what was executed.
pub mod sql {
    pub use super::batch::BATCH_CANDIDATES_SQL;
    pub use super::claim::{CANDIDATE_SQL, HOLDER_SQL, SOONEST_LIVE_LEASE_SQL, TAKE_LEASE_SQL};
    pub use super::finalize::{GUARDED_FINALIZE_SQL, OWNER_ONLY_FINALIZE_SQL, WRITE_ANSWER_SQL};
    pub use super::naive::{LOAD_PENDING_SQL, MARK_SQL};
    pub use super::retry::{HEARTBEAT_SQL, HELD_ATTEMPTS_SQL, HELD_UNTIL_SQL, RELEASE_SQL};
}

pub const SCHEMA_SQL: &str = include_str!("../../assets/schema.sql");

/// `PRAGMA application_id` of every leaselab database ("LSLB"): the marker that tells our
/// files from another application's before anything is written.
pub const APPLICATION_ID: i32 = 0x4C53_4C42;
/// `PRAGMA user_version`: the version of `assets/schema.sql` a database was made with.
pub const SCHEMA_VERSION: i32 = 8;
/// The longest absolute database path SQLite opens: its 512-byte path buffer must also
/// hold the `-journal` name.
pub const MAX_PATH_BYTES: usize = 504;

/// The store's error is the outbox's; SQLite's own errors become one here.
/// `StoreError` is the outbox's error under the name the store's callers knew it by.
pub use super::outbox::{OutboxError, OutboxError as StoreError, Result};

impl From<rusqlite::Error> for OutboxError {
    fn from(e: rusqlite::Error) -> Self {
        use rusqlite::ErrorCode;
        let (code, extended) = match &e {
            rusqlite::Error::SqliteFailure(f, _) => (Some(f.code), f.extended_code),
            _ => (None, 0),
        };
        // What the wait for the lock really was: given up at its limit, ended by a stop, or
        // none at all (SQLite did not call the busy handler).
        let wait = match code {
            Some(ErrorCode::DatabaseBusy) => Some(conn::take_given_up_wait()),
            _ => None,
        };
        let failure = match (code, wait) {
            (Some(ErrorCode::DatabaseBusy), Some(None)) => Failure::WriteLockRefused {
                snapshot: extended == rusqlite::ffi::SQLITE_BUSY_SNAPSHOT,
            },
            (Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked), _) => Failure::Busy,
            (Some(ErrorCode::DiskFull), _) => Failure::Full,
            (Some(ErrorCode::SystemIoFailure), _) => Failure::Io,
            (Some(ErrorCode::CannotOpen | ErrorCode::ReadOnly), _) => Failure::CannotOpen,
            _ => Failure::Other,
        };
        let message = match (wait, failure) {
            (Some(Some((waited, false))), _) => format!(
                "the database stayed locked by another connection for {} ms (SQLite: {e})",
                waited.as_millis()
            ),
            (Some(Some((waited, true))), _) => format!(
                "the database was locked by another connection; a stop ended the wait \
                 after {} ms (SQLite: {e})",
                waited.as_millis()
            ),
            (_, Failure::WriteLockRefused { snapshot }) => {
                format!(
                    "{}; it did not wait (SQLite: {e})",
                    write_lock_refused(snapshot)
                )
            }
            _ => format!("SQLite: {e}"),
        };
        OutboxError::Database {
            failure,
            message,
            cause: Some(e.into()),
        }
    }
}

/// Why SQLite refused the write lock without calling the busy handler: it does so when a
/// transaction that has read asks for the write lock, since waiting could deadlock.
pub fn write_lock_refused(snapshot: bool) -> &'static str {
    if snapshot {
        "SQLITE_BUSY when it asked for the write lock: another connection wrote since it read \
         (SQLITE_BUSY_SNAPSHOT)"
    } else {
        "SQLITE_BUSY when it asked for the write lock: another connection held it, and SQLite \
         refuses a transaction that has read rather than let it wait"
    }
}

/// One connection to the outbox database.
pub struct Store {
    conn: prepared::Conn,
    path: PathBuf,
    shared: Arc<StoreShared>,
    /// Weaker rules the explorer compares against leaselab's own (never set otherwise).
    rules: image::Rules,
    /// The sandbox's hooks, installed on this connection the first time a student's
    /// statements run and asked only while they do (see [`Store::sandboxed`]).
    sandbox: Option<student::Gate>,
}

impl fmt::Debug for Store {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Store").field("path", &self.path).finish()
    }
}

#[cfg(test)]
mod tests {
    use std::error::Error;

    use super::OutboxError;
    use crate::outbox::DbCause;

    /// The user reads one line; whoever walks the chain finds SQLite's own error under it.
    #[test]
    fn a_database_error_keeps_sqlite_s_error_as_its_source() {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        let e: OutboxError = conn.execute("SELEC 1", []).unwrap_err().into();
        assert_eq!(
            e.to_string(),
            "SQLite: near \"SELEC\": syntax error in SELEC 1 at offset 0"
        );
        let source = e.source().expect("a source");
        assert!(
            matches!(source.downcast_ref(), Some(DbCause::Sqlite(_))),
            "{source:?}"
        );
    }

    /// A deferred transaction that read, then asks for the write lock: SQLite refuses it at
    /// once, without calling the busy handler. The error says so, and names no wait it did
    /// not have: not one given up earlier on this thread whose error nobody took.
    #[test]
    fn a_write_lock_refused_without_a_wait_says_so_and_names_no_earlier_wait() {
        use super::{Begin, Failure, Store, StoreShared};
        use crate::outbox::prelude::*;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("outbox.db");
        let (mut store, _) = Store::create(&path, StoreShared::default().into()).unwrap();
        store.seed(&crate::provider::Provider::new(), 1, 0).unwrap();
        let other = rusqlite::Connection::open(&path).unwrap();
        let read = "SELECT COUNT(*) FROM OutboxMessages";
        let write = "UPDATE OutboxMessages SET Attempts = Attempts + 1";
        // Another connection holds the write lock when the transaction asks for it.
        super::conn::leave_a_given_up_wait(std::time::Duration::from_secs(30));
        store.begin_student(Begin::Deferred).unwrap();
        let _: i64 = store.conn.query_row(read, [], |r| r.get(0)).unwrap();
        other.execute_batch("BEGIN IMMEDIATE").unwrap();
        let e: OutboxError = store.conn.execute(write, []).unwrap_err().into();
        store.end_student(false).unwrap();
        other.execute_batch("ROLLBACK").unwrap();
        assert_eq!(
            e.failure(),
            Some(Failure::WriteLockRefused { snapshot: false })
        );
        assert_eq!(
            e.to_string(),
            "SQLITE_BUSY when it asked for the write lock: another connection held it, and \
             SQLite refuses a transaction that has read rather than let it wait; it did not \
             wait (SQLite: database is locked)"
        );
        // Another connection wrote since the transaction read.
        store.begin_student(Begin::Deferred).unwrap();
        let _: i64 = store.conn.query_row(read, [], |r| r.get(0)).unwrap();
        other.execute_batch(write).unwrap();
        let e: OutboxError = store.conn.execute(write, []).unwrap_err().into();
        store.end_student(false).unwrap();
        assert_eq!(
            e.failure(),
            Some(Failure::WriteLockRefused { snapshot: true })
        );
        assert_eq!(
            e.to_string(),
            "SQLITE_BUSY when it asked for the write lock: another connection wrote since it \
             read (SQLITE_BUSY_SNAPSHOT); it did not wait (SQLite: database is locked)"
        );
    }
}
