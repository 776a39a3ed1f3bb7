//! Claim and finalize on PostgreSQL, each one statement with its `LeaseEvents` row, run
//! outside a transaction so that it commits on its own: one round trip each. Its engine
//! stamp comes from the event row's Seq, drawn under the row lock (see
//! `StoreShared::stamp_of_row`), so nothing needs to happen between the write and its commit.

use std::sync::Arc;

use postgres::types::Type;
use postgres::{Statement, Transaction};

use super::status::state;
use super::{PgStore, Result};
use crate::lease;
use crate::outbox::Result as OutboxResult;
use crate::outbox::{
    BatchClaiming, ClaimOutcome, Claiming, FinalizeGuard, FinalizeOutcome, Finalizing, Lease,
    LeaseEventKind, OutboxStatus, Stamped, StoreShared,
};
use crate::provider::StatusCheck;

/// The claim as one statement with its event row. The candidate is the oldest claimable
/// message, read from `IX_Outbox_Unfinished` as SQLite's claim reads it, skipping rows
/// another claim has locked; the claimable condition is asked again in the update's
/// `WHERE`. The event row is made from the updated row, so its Seq is drawn while the claim
/// holds the row's lock (and has its transaction id): Seq order is each message's commit
/// order, and a tail can tell when every Seq up to a point is settled (see `tail`).
/// $1 worker, $2 now, $3 until. On the server's clock the claimable condition, the lease's
/// until (`$3 - $2` after it) and the event's time are the server's (`clock!`).
pub static CLAIM_NEXT_SQL: &str = concat!(
    "
WITH candidate AS (
       SELECT Id FROM OutboxMessages
        WHERE ProcessedAtUtc IS NULL AND ",
    claimable!("$2"),
    "
        ORDER BY CreatedAtUtc, Id LIMIT 1
          FOR UPDATE SKIP LOCKED),
     claimed AS (
       UPDATE OutboxMessages o
          SET Status = 'Processing', LockedBy = $1, LockedUntilUtc = $3 - $2 + ",
    clock!("$2"),
    ",
              LeaseVersion = o.LeaseVersion + 1, Attempts = o.Attempts + 1
         FROM candidate
        WHERE o.Id = candidate.Id AND ",
    claimable!("$2"),
    "
       RETURNING o.Id, o.PaymentKey, o.LeaseVersion, o.Seeding, o.LockedUntilUtc),
     recorded AS (
       INSERT INTO LeaseEvents (AtUtc, Worker, Kind, MessageId, PaymentKey, LeaseVersion,
                                LockedUntilUtc)
       SELECT LockedUntilUtc - ($3 - $2), $1, 'Claimed', Id, PaymentKey, LeaseVersion,
              LockedUntilUtc
         FROM claimed
       RETURNING Seq)
SELECT c.Id, c.PaymentKey, c.LeaseVersion, c.Seeding, r.Seq, c.LockedUntilUtc
  FROM claimed c CROSS JOIN recorded r"
);
/// The types of `CLAIM_NEXT_SQL`'s parameters, in order, as the store prepares it.
pub const CLAIM_NEXT_TYPES: &[Type] = &[Type::TEXT, Type::INT8, Type::INT8];

/// A finalize as one statement: Processed and the provider's answer only while this worker
/// still holds this very lease, and the event row either way. `outcome` counts the guarded
/// update's rows and takes the transaction id before the event row draws its Seq (a
/// rejected finalize has locked nothing). $1 now, $2 id, $3 owner, $4 version, $5 seeding,
/// $6 payment key, $7 the provider's status, $8 its transaction id. `$version_check` is
/// the guard's condition on the lease version.
macro_rules! finalize_sql {
    ($version_check:literal) => {
        concat!(
            "
WITH guarded AS (
       UPDATE OutboxMessages
          SET Status = 'Processed', ProcessedAtUtc = ",
            clock!("$1"),
            ", LockedUntilUtc = NULL
        WHERE Id = $2 AND Status = 'Processing' AND LockedBy = $3 AND ",
            $version_check,
            "
          AND Seeding = $5
       RETURNING Id),
     answered AS (
       UPDATE Payments SET PaymentStatus = $7, TransactionId = $8
        WHERE IdempotencyKey = $6 AND EXISTS (SELECT 1 FROM guarded)
       RETURNING 1),
     outcome AS (SELECT count(*) AS n, pg_current_xact_id() AS xid FROM guarded),
     recorded AS (
       INSERT INTO LeaseEvents (AtUtc, Worker, Kind, MessageId, PaymentKey, LeaseVersion,
                                PaymentStatus)
       SELECT ",
            clock!("$1"),
            ", $3, CASE WHEN n = 1 THEN 'Finalized' ELSE 'FinalizeRejected' END, $2, $6,
              $4, CASE WHEN n = 1 THEN $7 END
         FROM outcome
       RETURNING Seq)
SELECT o.n, r.Seq FROM outcome o CROSS JOIN recorded r"
        )
    };
}
pub static FINALIZE_SQL: &str = finalize_sql!("LeaseVersion = $4");
/// The weaker guard a lesson may show: the owner's name only, no fencing token.
pub static OWNER_ONLY_FINALIZE_SQL: &str = finalize_sql!("$4 = $4");
/// The `Finalized` row a lease's holder wrote for it, if one was: whether a finalize whose
/// answer was lost had committed.
pub static FINALIZED_EARLIER_SQL: &str = "SELECT Seq FROM LeaseEvents
 WHERE Kind = 'Finalized' AND MessageId = $1::bigint AND LeaseVersion = $2::bigint
   AND Worker = $3::text
 ORDER BY Seq LIMIT 1";
/// The types of `FINALIZE_SQL`'s parameters, in order, as the store prepares it.
pub const FINALIZE_TYPES: &[Type] = &[
    Type::INT8,
    Type::INT8,
    Type::TEXT,
    Type::INT8,
    Type::INT8,
    Type::TEXT,
    Type::TEXT,
    Type::TEXT,
];

/// A write's stamped outcome and the `LeaseEvents` Seq it wrote (if any); the stamp is
/// taken from that Seq, so stamps order each message's history as PostgreSQL committed it.
struct Recorded<T> {
    stamped: Stamped<T>,
    event: Option<u64>,
}

impl<T> Recorded<T> {
    /// A write that recorded the event row `seq`.
    fn at(value: T, seq: u64, stamp: u64) -> Recorded<T> {
        Recorded {
            stamped: Stamped::new(value, stamp),
            event: Some(seq),
        }
    }

    /// A write that recorded no event: its stamp orders nothing that another could change.
    fn unrecorded(value: T, shared: &StoreShared) -> Recorded<T> {
        Recorded {
            stamped: Stamped::new(value, shared.next_seq()),
            event: None,
        }
    }
}

/// The soonest-ending live lease held by another worker. It reads `IX_Outbox_Unfinished`:
/// nothing is claimable when it runs, so what is left there is held or backing off.
pub static SOONEST_LIVE_LEASE_SQL: &str = concat!(
    "
SELECT Id, PaymentKey, LockedBy, LockedUntilUtc, ",
    clock!("$2"),
    " FROM OutboxMessages
 WHERE ProcessedAtUtc IS NULL AND ",
    live!("$2"),
    " AND LockedBy <> $1
 ORDER BY LockedUntilUtc LIMIT 1"
);

impl PgStore {
    /// Claim the oldest claimable message: Pending, or Processing with an expired lease.
    /// Returns the outcome and, for a claim, the `LeaseEvents` Seq written with it.
    pub fn claim_next_recorded(
        &mut self,
        worker: &str,
        now: i64,
        lease_ms: i64,
    ) -> Result<(ClaimOutcome, Option<u64>)> {
        let s = self.claim_next_stamped(worker, now, lease_ms)?;
        Ok((s.stamped.value, s.event))
    }

    fn claim_next_stamped(
        &mut self,
        worker: &str,
        now: i64,
        lease_ms: i64,
    ) -> Result<Recorded<ClaimOutcome>> {
        let until = now + lease_ms;
        // Outside a transaction the statement commits on its own: one round trip.
        let claim = self.prepared_typed(CLAIM_NEXT_SQL, CLAIM_NEXT_TYPES)?;
        let Some(r) = self.client().query_opt(&claim, &[&worker, &now, &until])? else {
            return Ok(Recorded::unrecorded(ClaimOutcome::Empty, &self.shared));
        };
        // On the server's clock the until is the server's, not `until`.
        let until: i64 = r.get(5);
        let lease = Lease::taken(worker, until, (r.get(0), r.get(1)), (r.get(2), r.get(3)));
        let seq = r.get::<_, i64>(4) as u64;
        let stamp = self.shared.stamp_of_row(seq);
        Ok(Recorded::at(ClaimOutcome::Claimed(lease), seq, stamp))
    }

    /// Claim one particular message. Reports who holds it, and for how long, when another
    /// worker's lease on it still runs.
    pub fn claim_id_recorded(
        &mut self,
        id: i64,
        worker: &str,
        now: i64,
        lease_ms: i64,
    ) -> Result<(ClaimOutcome, Option<u64>)> {
        let s = self.claim_id_stamped(id, worker, now, lease_ms)?;
        Ok((s.stamped.value, s.event))
    }

    fn claim_id_stamped(
        &mut self,
        id: i64,
        worker: &str,
        now: i64,
        lease_ms: i64,
    ) -> Result<Recorded<ClaimOutcome>> {
        let server_clock = self.on_server_clock();
        let (look, take) = (self.prepared(HOLDER_SQL)?, self.prepared(TAKE_LEASE_SQL)?);
        let rec = self.recorder()?;
        let shared = rec.shared.clone();
        let mut client = self.client();
        let mut tx = client.transaction()?;
        let row = tx.query_opt(&look, &[&id])?;
        let Some(row) = row else {
            tx.commit()?;
            return Ok(Recorded::unrecorded(ClaimOutcome::Empty, &shared));
        };
        let (key, status): (String, OutboxStatus) = (row.get(0), state(&row, 1)?);
        let owner: Option<String> = row.get(2);
        let held_until: Option<i64> = row.get(3);
        // On the server's clock, the server's time as the row was locked.
        let now = if server_clock { row.get(4) } else { now };
        let until = now + lease_ms;
        if let (OutboxStatus::Processing, Some(held_until)) = (status, held_until) {
            if lease::is_live(held_until, now) {
                tx.commit()?;
                let blocked = ClaimOutcome::Blocked {
                    id,
                    key,
                    owner: owner.unwrap_or_default(),
                    left_ms: held_until - now,
                };
                return Ok(Recorded::unrecorded(blocked, &shared));
            }
        }
        let taken: Option<(i64, i64)> = tx
            .query_opt(&take, &[&worker, &until, &id, &now])?
            .map(|r| (r.get(0), r.get(1)));
        let Some((version, seeding)) = taken else {
            tx.commit()?;
            return Ok(Recorded::unrecorded(ClaimOutcome::Empty, &shared));
        };
        let lease = Lease::taken(worker, until, (id, key), (version, seeding));
        let (seq, stamp) = rec.record(&mut tx, &NewEvent::claim(&lease, now))?;
        tx.commit()?;
        Ok(Recorded::at(ClaimOutcome::Claimed(lease), seq, stamp))
    }

    /// Write the provider's answer and mark the message Processed, in one transaction, only
    /// if this worker still holds this lease. Otherwise roll the writes back, record the
    /// rejection, and say so. Returns the outcome and its `LeaseEvents` Seq.
    pub fn finalize_recorded(
        &mut self,
        lease: &Lease,
        check: &StatusCheck,
        now: i64,
    ) -> Result<(FinalizeOutcome, u64)> {
        let s = self.finalize_stamped(lease, check, now)?;
        Ok((s.stamped.value, s.event.unwrap_or_default()))
    }

    fn finalize_stamped(
        &mut self,
        lease: &Lease,
        check: &StatusCheck,
        now: i64,
    ) -> Result<Recorded<FinalizeOutcome>> {
        // Outside a transaction the statement commits on its own: one round trip.
        let sql = match self.finalize_guard {
            FinalizeGuard::FencingToken => FINALIZE_SQL,
            FinalizeGuard::OwnerOnly => OWNER_ONLY_FINALIZE_SQL,
        };
        let finalize = self.prepared_typed(sql, FINALIZE_TYPES)?;
        let row = self.client().query_one(
            &finalize,
            &[
                &now,
                &lease.id,
                &lease.owner,
                &lease.version,
                &lease.seeding,
                &lease.key,
                &check.status.as_str(),
                &check.transaction_id,
            ],
        )?;
        let (changed, seq): (i64, i64) = (row.get(0), row.get(1));
        let outcome = if changed == 1 {
            FinalizeOutcome::Committed
        } else {
            FinalizeOutcome::Rejected
        };
        let stamp = self.shared.stamp_of_row(seq as u64);
        Ok(Recorded::at(outcome, seq as u64, stamp))
    }
}

/// The conditional update of one chosen message, with the claimable condition asked again.
pub static TAKE_LEASE_SQL: &str = concat!(
    "
UPDATE OutboxMessages
   SET Status = 'Processing', LockedBy = $1, LockedUntilUtc = $2,
       LeaseVersion = LeaseVersion + 1, Attempts = Attempts + 1
 WHERE Id = $3 AND ",
    claimable!("$4"),
    "
RETURNING LeaseVersion, Seeding"
);

/// Who holds one message, as a claim by id reads it. FOR UPDATE: the row cannot change
/// between this look and the update after it.
/// The server's clock comes with it, for a connection on the server's clock.
pub static HOLDER_SQL: &str = concat!(
    "SELECT PaymentKey, Status, LockedBy, LockedUntilUtc, ",
    server_ms!(),
    " FROM OutboxMessages WHERE Id = $1 FOR UPDATE"
);

/// The provider's answer written onto the payment.
pub static WRITE_ANSWER_SQL: &str =
    "UPDATE Payments SET PaymentStatus = $1::text, TransactionId = $2 WHERE IdempotencyKey = $3";

/// One `LeaseEvents` row. Its transaction takes its id in the FROM, before the row and its
/// Seq are made, so every Seq is drawn by a transaction that already has its id (what a
/// tail's settled point rests on, see `tail`). On the server's clock its time is the
/// server's, as every lease time there is (a worker's joining and leaving, its provider
/// calls).
const RECORD_SQL: &str = concat!(
    "
INSERT INTO LeaseEvents
       (AtUtc, Worker, Kind, MessageId, PaymentKey, LeaseVersion, LockedUntilUtc, PaymentStatus,
        Detail)
SELECT ",
    clock!("$1::bigint"),
    ", $2::text, $3::text, $4::bigint, $5::text, $6::bigint, $7::bigint, $8::text,
       $9::text
  FROM (SELECT pg_current_xact_id()) AS identified
RETURNING Seq"
);

/// One `LeaseEvents` row about to be written.
pub(super) struct NewEvent<'a> {
    pub at: i64,
    pub worker: &'a str,
    pub kind: LeaseEventKind,
    pub id: i64,
    pub key: &'a str,
    pub version: i64,
    pub until: Option<i64>,
    pub status: Option<&'a str>,
    /// The error of a failed attempt.
    pub detail: Option<&'a str>,
}

impl<'a> NewEvent<'a> {
    /// An event about `lease`, by its owner.
    pub fn of(lease: &'a Lease, kind: LeaseEventKind, now: i64) -> NewEvent<'a> {
        NewEvent {
            at: now,
            worker: &lease.owner,
            kind,
            id: lease.id,
            key: &lease.key,
            version: lease.version,
            until: None,
            status: None,
            detail: None,
        }
    }

    /// A message added to the outbox, by the engine.
    pub fn added(id: i64, key: &'a str, now: i64) -> NewEvent<'a> {
        NewEvent {
            at: now,
            worker: crate::events::ENGINE,
            kind: LeaseEventKind::Added,
            id,
            key,
            version: 0,
            until: None,
            status: None,
            detail: None,
        }
    }

    fn claim(lease: &'a Lease, now: i64) -> NewEvent<'a> {
        NewEvent {
            until: Some(lease.until_ms),
            ..NewEvent::of(lease, LeaseEventKind::Claimed, now)
        }
    }
}

/// Writes event rows and draws the engine's stamps for one connection.
pub(super) struct Recorder {
    insert: Statement,
    pub shared: Arc<StoreShared>,
}

impl PgStore {
    pub(super) fn recorder(&mut self) -> Result<Recorder> {
        Ok(Recorder {
            insert: self.prepared(RECORD_SQL)?,
            shared: self.shared.clone(),
        })
    }
}

impl Recorder {
    /// Append one `LeaseEvents` row, after the transaction's writes: the row lock it holds
    /// orders each message's Seqs as PostgreSQL commits them, and the stamp is the Seq's
    /// ([`StoreShared::stamp_of_row`]). Returns (Seq, stamp).
    pub fn record(&self, tx: &mut Transaction<'_>, e: &NewEvent<'_>) -> Result<(u64, u64)> {
        let seq: i64 = tx
            .query_one(
                &self.insert,
                &[
                    &e.at, &e.worker, &e.kind, &e.id, &e.key, &e.version, &e.until, &e.status,
                    &e.detail,
                ],
            )?
            .get(0);
        Ok((seq as u64, self.shared.stamp_of_row(seq as u64)))
    }
}

impl crate::outbox::Recording for PgStore {
    /// One row in a transaction of its own; its stamp is its Seq's, as every write's here.
    fn record(&mut self, fact: &crate::outbox::Fact) -> OutboxResult<Stamped<()>> {
        let insert = self.prepared(RECORD_SQL)?;
        let shared = self.shared.clone();
        let mut client = self.client();
        let mut tx = client.transaction()?;
        // Its commit does not wait for the disk: the next commit that does flushes the log
        // past it (as on SQLite, see the store's `record`).
        tx.batch_execute("SET LOCAL synchronous_commit = off")?;
        let seq: i64 = tx
            .query_one(
                &insert,
                &[
                    &fact.at_ms,
                    &fact.worker,
                    &fact.kind,
                    &fact.id,
                    &fact.key,
                    &fact.version,
                    &fact.until_ms,
                    &None::<String>,
                    &fact.detail,
                ],
            )?
            .get(0);
        tx.commit()?;
        Ok(Stamped::new((), shared.stamp_of_row(seq as u64)))
    }
}

impl Claiming for PgStore {
    /// After an empty claim: the live lease that blocks `worker` soonest, if any.
    fn blocked_by(&self, worker: &str, now: i64) -> OutboxResult<Option<ClaimOutcome>> {
        let q = self.prepared(SOONEST_LIVE_LEASE_SQL)?;
        Ok(self.client().query_opt(&q, &[&worker, &now])?.map(|r| {
            let (until, at): (i64, i64) = (r.get(3), r.get(4));
            ClaimOutcome::Blocked {
                id: r.get(0),
                key: r.get(1),
                owner: r.get(2),
                left_ms: until - at,
            }
        }))
    }

    fn claim_next(
        &mut self,
        worker: &str,
        now: i64,
        lease_ms: i64,
    ) -> OutboxResult<Stamped<ClaimOutcome>> {
        Ok(self.claim_next_stamped(worker, now, lease_ms)?.stamped)
    }

    fn claim_id(
        &mut self,
        id: i64,
        worker: &str,
        now: i64,
        lease_ms: i64,
    ) -> OutboxResult<Stamped<ClaimOutcome>> {
        Ok(self.claim_id_stamped(id, worker, now, lease_ms)?.stamped)
    }
}

/// PostgreSQL claims one message a statement: the batch is the default's one at a time.
impl BatchClaiming for PgStore {}

impl Finalizing for PgStore {
    fn finalize(
        &mut self,
        lease: &Lease,
        check: &StatusCheck,
        now: i64,
    ) -> OutboxResult<Stamped<FinalizeOutcome>> {
        Ok(self.finalize_stamped(lease, check, now)?.stamped)
    }

    fn finalized_earlier(&mut self, lease: &Lease) -> OutboxResult<Option<u64>> {
        let q = self.prepared(FINALIZED_EARLIER_SQL)?;
        let row = self
            .client()
            .query_opt(&q, &[&lease.id, &lease.version, &lease.owner])?;
        Ok(row.map(|r| self.shared.stamp_of_row(r.get::<_, i64>(0) as u64)))
    }

    fn guard_finalize(&mut self, guard: FinalizeGuard) -> OutboxResult<()> {
        self.finalize_guard = guard;
        Ok(())
    }
}
