//! What both databases store and answer, as the engine handles it.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use super::{OutboxStatus, PaymentStatus};

/// The amount seeded for payment number `n`, in cents: the same rows in either database.
pub fn amount_for(n: u64) -> i64 {
    1_000 + (n as i64 % 40) * 250
}

/// `PAY-001` for payment number 1.
pub fn payment_key(n: u64) -> String {
    format!("PAY-{n:03}")
}

/// How hard a commit waits for the disk (SQLite's `synchronous`, PostgreSQL's
/// `synchronous_commit`).
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

/// Whose clock a lease's times come from on PostgreSQL.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LeaseClock {
    /// The `now` each call passes: the scenario clock every worker of one engine shares
    /// (free play, lessons, runs). SQLite always goes by it: one machine, one clock.
    #[default]
    Caller,
    /// The PostgreSQL server's `clock_timestamp()`, read inside each claim, heartbeat,
    /// failed attempt and finalize: worker processes, on machines whose clocks differ. The
    /// `now` passed then only stands in for the server's time where no row is written.
    Server,
}

/// Settings and counters shared by every connection of one engine.
#[derive(Debug, Default)]
pub struct StoreShared {
    pub durability: Durability,
    /// Whose clock the leases go by (PostgreSQL; SQLite always takes the caller's).
    pub lease_clock: LeaseClock,
    /// Stamped on every write while its transaction still holds the write lock, so the
    /// order of stamps is the order in which SQLite committed (PostgreSQL's writes take
    /// theirs from their rows, [`StoreShared::stamp_of_row`]).
    pub commit_seq: AtomicU64,
    /// How many times a statement met SQLITE_BUSY and waited instead of failing.
    pub busy_met: AtomicU64,
    /// Set when the engine quits: a student's statement running on one of its connections
    /// is interrupted, and none starts (`student::quit`).
    pub student_quit: Arc<AtomicBool>,
}

impl StoreShared {
    pub fn new(durability: Durability) -> StoreShared {
        StoreShared {
            durability,
            ..StoreShared::default()
        }
    }

    /// The same, with leases on `clock`.
    pub fn on(self, clock: LeaseClock) -> StoreShared {
        StoreShared {
            lease_clock: clock,
            ..self
        }
    }

    pub fn next_seq(&self) -> u64 {
        self.commit_seq.fetch_add(1, Ordering::SeqCst) + 1
    }

    /// The stamp of a write whose event row drew `seq` from the database's own sequence
    /// while it held the message's row lock (PostgreSQL): the row's Seq, shifted so that
    /// the stamps [`StoreShared::next_seq`] hands out after it (a provider call, a note)
    /// fall between it and the next row's. Stamps then follow each message's commit order
    /// without the client holding a lock while it draws them.
    pub fn stamp_of_row(&self, seq: u64) -> u64 {
        let stamp = seq << ROW_STAMP_SHIFT;
        self.commit_seq.fetch_max(stamp, Ordering::SeqCst);
        stamp
    }
}

/// Room for 2^32 stamps between two event rows, and for 2^32 rows.
const ROW_STAMP_SHIFT: u32 = 32;

/// Where the database came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DbOrigin {
    /// A new file.
    Created,
    /// An existing leaselab database, emptied and reseeded.
    Reused,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct MessageRef {
    pub id: i64,
    pub key: String,
}

/// A lease a worker holds after a successful claim.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
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

impl Lease {
    /// The lease a claim by `worker` took, running until `until_ms`, on the row `(id, key)`
    /// whose new fencing token the update returned: `(version, seeding)`.
    pub fn taken(
        worker: &str,
        until_ms: i64,
        (id, key): (i64, String),
        (version, seeding): (i64, i64),
    ) -> Lease {
        Lease {
            id,
            key,
            owner: worker.to_string(),
            until_ms,
            version,
            seeding,
        }
    }
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

/// What a finalize checks before it commits.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum FinalizeGuard {
    /// The owner's name, the lease version (the fencing token) and the seeding: leaselab's.
    #[default]
    FencingToken,
    /// The owner's name only: the weaker guard a lesson may show failing (a stalled
    /// worker's finalize passes once a new worker of its name holds the row).
    OwnerOnly,
}

impl FinalizeGuard {
    /// As a lesson's setup writes it (`finalize_guard = "owner"`).
    pub fn name(self) -> &'static str {
        match self {
            FinalizeGuard::FencingToken => "fencing-token",
            FinalizeGuard::OwnerOnly => "owner",
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_handed_out_after_a_row_fall_between_it_and_the_next_row() {
        let shared = StoreShared::default();
        let claim = shared.stamp_of_row(5);
        let call = shared.next_seq();
        let finalize = shared.stamp_of_row(6);
        assert!(claim < call && call < finalize, "{claim} {call} {finalize}");
        // A row drawn earlier but stamped later keeps its place among the rows.
        let late = shared.stamp_of_row(4);
        assert!(late < claim);
        assert!(shared.next_seq() > finalize, "the counter never goes back");
    }
}
