//! The outbox as the engine sees it, whichever database holds it: the [`Outbox`]
//! interface both stores implement as peers (`store` for SQLite, `pg` for PostgreSQL), the
//! rows, states and outcomes they answer with, the retry rule, and the one error type.
//! Nothing here speaks SQL.

mod error;
mod record;
mod retry;
mod stamped;
mod status;
mod types;

pub use error::{DbCause, Failure, OtherSchema, OutboxError, Result};
pub use record::{
    checked_detail, Fact, LeaseEventRow, Recording, RunSettings, StudentStatement, CRASH_PANIC,
    CRASH_TOLD, QUEUED_RAN_OUT, REPLAYED,
};
pub use retry::{FailOutcome, RetryPolicy, RELEASED};
pub use stamped::Stamped;
pub use status::{LeaseEventKind, OutboxStatus, PaymentStatus};
pub use types::{
    amount_for, payment_key, ClaimOutcome, DbOrigin, Durability, FinalizeGuard, FinalizeOutcome,
    Lease, LeaseClock, MessageRef, MessageRow, OutboxCounts, PaymentCounts, PaymentRow, RowsPerKey,
    StoreShared,
};

use super::provider::{Provider, StatusCheck};

/// Everything the engine asks of an outbox database, in the parts each store implements
/// beside its SQL: [`Claiming`], [`BatchClaiming`], [`Finalizing`], [`Unleased`],
/// [`Upkeep`], [`Seeding`], [`Reading`] and [`Recording`]. Writes return their outcome as a
/// [`Stamped`], with the commit stamp taken while the write still held its locks, so stamps
/// order each message's history as the database committed it. Call the parts' methods on a
/// concrete store with `use leaselab::engine::outbox::prelude::*`.
///
/// `now` is the caller's clock: the scenario clock that every worker of one engine shares.
/// SQLite always goes by it. A PostgreSQL connection on the server's clock
/// ([`LeaseClock::Server`], set in its [`StoreShared`]; worker processes, whose machines'
/// clocks differ) ignores it for every lease time: its claims, heartbeats, failed attempts
/// and finalizes read the server's `clock_timestamp()` inside the statement, the lease's
/// length being `until - now` as passed, and the times they return are the server's.
pub trait Outbox:
    Claiming + BatchClaiming + Finalizing + Unleased + Upkeep + Seeding + Reading + Recording + Send
{
}

impl<T> Outbox for T where
    T: Claiming
        + BatchClaiming
        + Finalizing
        + Unleased
        + Upkeep
        + Seeding
        + Reading
        + Recording
        + Send
{
}

/// The parts of [`Outbox`], to call them on a concrete store.
pub mod prelude {
    // Named from the crate root: the parts' own file, whoever reads this inline module.
    pub use crate::outbox::{
        BatchClaiming, Claiming, Finalizing, Outbox, Reading, Recording, Seeding, Unleased, Upkeep,
    };
}

/// Taking a lease.
pub trait Claiming {
    /// Claim the oldest claimable message: available Pending, or Processing with an
    /// expired lease.
    fn claim_next(
        &mut self,
        worker: &str,
        now: i64,
        lease_ms: i64,
    ) -> Result<Stamped<ClaimOutcome>>;
    /// After an empty claim: the soonest-ending live lease another worker holds, if any.
    fn blocked_by(&self, worker: &str, now: i64) -> Result<Option<ClaimOutcome>>;
    /// Claim one message; `Blocked` with owner and time left while another lease holds it.
    fn claim_id(
        &mut self,
        id: i64,
        worker: &str,
        now: i64,
        lease_ms: i64,
    ) -> Result<Stamped<ClaimOutcome>>;
}

/// Taking several leases at once.
pub trait BatchClaiming: Claiming {
    /// Claim up to `k` claimable messages, oldest first, in one transaction when the
    /// backend has a batch claim. The default takes one with [`Claiming::claim_next`].
    fn claim_batch(
        &mut self,
        worker: &str,
        now: i64,
        lease_ms: i64,
        k: usize,
    ) -> Result<Stamped<Vec<Lease>>> {
        let _ = k;
        Ok(self
            .claim_next(worker, now, lease_ms)?
            .map(|outcome| match outcome {
                ClaimOutcome::Claimed(lease) => vec![lease],
                _ => Vec::new(),
            }))
    }
}

/// Ending a lease with the provider's answer.
pub trait Finalizing {
    /// The ownership-guarded finalize: rolled back whole when the lease was lost.
    fn finalize(
        &mut self,
        lease: &Lease,
        check: &StatusCheck,
        now: i64,
    ) -> Result<Stamped<FinalizeOutcome>>;

    /// Whether the finalize of `lease` committed already, for a finalize whose answer was
    /// lost with its connection (a server restarting under it): the commit stamp of the
    /// `Finalized` row its holder wrote for it, if there is one. A worker that reconnects
    /// asks before it tries that finalize again, which its own commit would reject. A
    /// store whose commits cannot be lost so (a SQLite file on this machine) says None.
    fn finalized_earlier(&mut self, _lease: &Lease) -> Result<Option<u64>> {
        Ok(None)
    }

    /// What [`Finalizing::finalize`] checks from now on. A store with no weaker guard
    /// refuses one rather than finalize under a guard it was not asked for.
    fn guard_finalize(&mut self, guard: FinalizeGuard) -> Result<()> {
        match guard {
            FinalizeGuard::FencingToken => Ok(()),
            FinalizeGuard::OwnerOnly => Err(OutboxError::Io(
                "this outbox has no owner-only finalize".into(),
            )),
        }
    }
}

/// Leasing off: the naive relay that loads and processes without a claim.
pub trait Unleased {
    /// Every Pending message whose backoff is over at `now`.
    fn load_pending(&self, now: i64) -> Result<Vec<MessageRef>>;
    /// Write the answer and mark Processed, asking nobody.
    fn mark_processed(
        &mut self,
        msg: &MessageRef,
        check: &StatusCheck,
        now: i64,
    ) -> Result<Stamped<()>>;
    /// [`Unleased::mark_processed`] with the worker's name on its event row.
    fn mark_processed_by(
        &mut self,
        worker: &str,
        msg: &MessageRef,
        check: &StatusCheck,
        now: i64,
    ) -> Result<Stamped<()>>;
}

/// Keeping a lease alive, failing an attempt, and the dead letter.
pub trait Upkeep {
    /// Extend a held lease (never shorter); `None` when it is lost.
    fn heartbeat(&mut self, lease: &Lease, now: i64, lease_ms: i64)
        -> Result<Stamped<Option<i64>>>;
    /// A failed attempt: back to Pending after its backoff, or dead-lettered.
    fn fail_attempt(
        &mut self,
        lease: &Lease,
        error: &str,
        now: i64,
        policy: &RetryPolicy,
    ) -> Result<Stamped<FailOutcome>>;
    /// Dead letters back to Pending with fresh attempts (one key, or all).
    fn redrive(&mut self, key: Option<&str>, now: i64) -> Result<Stamped<u64>>;
}

/// Making the rows a run works on.
pub trait Seeding {
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
}

/// What the table, the reports and the checks read.
pub trait Reading {
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
    /// The error of a message's last failed attempt.
    fn last_error(&self, key: &str) -> Result<Option<String>>;
    /// The database server's own clock (epoch milliseconds), when it has one apart from
    /// the caller's: PostgreSQL. SQLite is a file on the caller's machine: `None`.
    fn server_clock_ms(&self) -> Result<Option<i64>> {
        Ok(None)
    }
    /// Whether the teacher holds the class (`leaselab class hold`): on PostgreSQL, a row
    /// every worker process reads before it claims. SQLite has no class: never.
    fn held_by_teacher(&self) -> Result<bool> {
        Ok(false)
    }
    /// The `application_name` of every worker session connected to this database now, as
    /// the server knows them (PostgreSQL, `pg::session_name`). SQLite has no server to ask:
    /// `None`.
    fn sessions(&self) -> Result<Option<Vec<String>>> {
        Ok(None)
    }
    /// The newest row each name wrote in the events table, with its time and kind: what
    /// tells on SQLite whether a worker is still there.
    fn newest_rows(&self) -> Result<Vec<NewestRow>> {
        Ok(Vec::new())
    }
}

/// The newest `LeaseEvents` row of one worker name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewestRow {
    pub worker: String,
    pub at_ms: i64,
    pub kind: LeaseEventKind,
    /// Which process the name's newest `Joined` row said it was, if one said.
    pub process: Option<crate::process_identity::ProcessIdentity>,
}

/// The newest row of each worker name, with the detail of its newest `Joined` row, in both
/// dialects; bounded like every read of a table others write.
pub const NEWEST_ROWS_SQL: &str = "SELECT e.Worker, e.AtUtc, e.Kind,
       (SELECT j.Detail FROM LeaseEvents j WHERE j.Worker = e.Worker AND j.Kind = 'Joined'
         ORDER BY j.Seq DESC LIMIT 1)
  FROM LeaseEvents e
      JOIN (SELECT Worker, MAX(Seq) AS Seq FROM LeaseEvents GROUP BY Worker) m ON m.Seq = e.Seq
     ORDER BY e.Seq LIMIT 10000";
