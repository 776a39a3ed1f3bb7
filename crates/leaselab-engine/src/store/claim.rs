//! Claiming: the conditional updates that take a lease.

use crate::outbox::prelude::*;
use rusqlite::{named_params, OptionalExtension};

use super::conn::End;
use super::lease_events::{record, LeaseEventKind, NewEvent};
use super::prepared::{Hot, Tx};
use super::{ClaimOutcome, Lease, OutboxStatus, Result, Store};
use crate::lease;
use crate::outbox::Stamped;

/// What every claim writes: Processing, the owner, the lease's end, the next fencing
/// token and one more attempt.
macro_rules! take_lease {
    () => {
        "UPDATE OutboxMessages
            SET Status = 'Processing', LockedBy = :worker, LockedUntilUtc = :until,
                LeaseVersion = LeaseVersion + 1, Attempts = Attempts + 1 "
    };
}

/// The claim's candidate: the first claimable row of the unfinished messages' index, in
/// claim order (oldest first).
pub static CANDIDATE_SQL: &str = concat!(
    "SELECT Id, PaymentKey, LeaseVersion, Seeding ",
    unfinished!(),
    claimable!(),
    " ORDER BY CreatedAtUtc, Id LIMIT 1"
);

/// [`CANDIDATE_SQL`] with the claimable condition dropped, a defect the explorer must
/// catch: the oldest unfinished message is taken even under another worker's live lease.
const BROKEN_CANDIDATE_SQL: &str = concat!(
    "SELECT Id, PaymentKey, LeaseVersion, Seeding ",
    unfinished!(),
    "(:now = :now) ORDER BY CreatedAtUtc, Id LIMIT 1"
);

/// The conditional update of one chosen message: the claimable condition is asked again,
/// and the claim holds only if the row changed. No `RETURNING`: SQLite runs it as a
/// trigger, and a trigger on a table with CHECK constraints makes every claim copy the
/// pages it changes into a statement journal first (a 64 KiB buffer, allocated and freed
/// each time), for a value the transaction has already read.
pub static TAKE_LEASE_SQL: &str = concat!(take_lease!(), "WHERE Id = :id AND ", claimable!());

/// [`TAKE_LEASE_SQL`] without the claimable condition (the defect of
/// [`BROKEN_CANDIDATE_SQL`]).
const BROKEN_TAKE_LEASE_SQL: &str = concat!(take_lease!(), "WHERE Id = :id AND (:now = :now)");

/// The live lease of another worker that runs out first: what an empty claim waits for.
/// `live!` is the lease rule's "live" (see `engine::lease`).
/// It reads the unfinished messages' index (nothing is claimable when it runs, so what
/// is left there is held or backing off).
pub static SOONEST_LIVE_LEASE_SQL: &str = concat!(
    "
SELECT Id, PaymentKey, LockedBy, LockedUntilUtc ",
    unfinished!(),
    live!(),
    " AND LockedBy <> :worker
 ORDER BY LockedUntilUtc LIMIT 1"
);

/// Who holds one message, as a claim by id reads it.
pub static HOLDER_SQL: &str =
    "SELECT PaymentKey, Status, LockedBy, LockedUntilUtc, LeaseVersion, Seeding
  FROM OutboxMessages WHERE Id = ?1";

/// Who holds one message, as [`HOLDER_SQL`] reads it.
struct Holder {
    key: String,
    status: OutboxStatus,
    owner: Option<String>,
    until_ms: Option<i64>,
    version: i64,
    seeding: i64,
}

impl Store {
    /// `EXPLAIN QUERY PLAN` of `sql` with `params`, one line per plan step.
    fn query_plan(
        &self,
        sql: &str,
        params: &[(&str, &dyn rusqlite::ToSql)],
    ) -> Result<Vec<String>> {
        let mut stmt = self.conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}"))?;
        let mut rows = stmt.query(params)?;
        let mut lines = Vec::new();
        while let Some(r) = rows.next()? {
            lines.push(r.get::<_, String>(3)?);
        }
        Ok(lines)
    }

    /// `EXPLAIN QUERY PLAN` of the read behind [`Store::blocked_by`].
    pub fn blocked_by_query_plan(&self) -> Result<Vec<String>> {
        self.query_plan(
            SOONEST_LIVE_LEASE_SQL,
            named_params! {":worker": "Worker-A", ":now": 0i64},
        )
    }

    /// `EXPLAIN QUERY PLAN` of the claim's two statements (the candidate, then the
    /// conditional update), one line per plan step.
    pub fn claim_query_plan(&self) -> Result<Vec<String>> {
        let mut lines = self.query_plan(CANDIDATE_SQL, named_params! {":now": 0i64})?;
        lines.extend(self.query_plan(
            TAKE_LEASE_SQL,
            named_params! {":worker": "Worker-A", ":until": 500i64, ":id": 1i64, ":now": 0i64},
        )?);
        Ok(lines)
    }
}

/// The conditional update of a claim of the row `(id, key)` read at `(version, seeding)`
/// in this transaction: the claimable condition is asked again in the `WHERE`, and the
/// claim holds only if exactly one row changed (the lease then carries the next token).
pub(super) fn take_lease(
    tx: &Tx<'_, '_>,
    broken: bool,
    worker: &str,
    (now, until): (i64, i64),
    (id, key): (i64, String),
    (version, seeding): (i64, i64),
) -> Result<Option<Lease>> {
    let (hot, sql) = if broken {
        (Hot::BrokenTakeLease, BROKEN_TAKE_LEASE_SQL)
    } else {
        (Hot::TakeLease, TAKE_LEASE_SQL)
    };
    let changed = tx.run(hot, sql, |take| {
        // Bound by position: its names in order of appearance.
        debug_assert_eq!(
            [":worker", ":until", ":id", ":now"].map(|n| take.parameter_index(n).ok().flatten()),
            [Some(1), Some(2), Some(3), Some(4)]
        );
        take.execute(rusqlite::params![worker, until, id, now])
    })?;
    Ok((changed == 1).then(|| Lease::taken(worker, until, (id, key), (version + 1, seeding))))
}

/// The `LeaseEvents` row of a successful claim, in the claim's transaction.
pub(super) fn record_claim(tx: &Tx<'_, '_>, lease: &Lease, now: i64) -> Result<()> {
    record(
        tx,
        &NewEvent {
            version: Some(lease.version),
            until_ms: Some(lease.until_ms),
            ..NewEvent::about(
                LeaseEventKind::Claimed,
                now,
                &lease.owner,
                lease.id,
                &lease.key,
            )
        },
    )
}

impl Claiming for Store {
    /// Claim the oldest claimable message: Pending, or Processing with an expired lease.
    /// Returns the outcome and the commit stamp of the claim.
    fn claim_next(
        &mut self,
        worker: &str,
        now: i64,
        lease_ms: i64,
    ) -> Result<Stamped<ClaimOutcome>> {
        let until = now + lease_ms;
        let broken = self.rules.broken_claim;
        let (candidate, candidate_sql) = if broken {
            (Hot::BrokenCandidate, BROKEN_CANDIDATE_SQL)
        } else {
            (Hot::Candidate, CANDIDATE_SQL)
        };
        self.write(|tx, shared| {
            let candidate: Option<((i64, String), (i64, i64))> =
                tx.run(candidate, candidate_sql, |s| {
                    s.query_row([now], |r| {
                        Ok(((r.get(0)?, r.get(1)?), (r.get(2)?, r.get(3)?)))
                    })
                    .optional()
                })?;
            let lease = match candidate {
                Some((message, token)) => {
                    take_lease(tx, broken, worker, (now, until), message, token)?
                }
                None => None,
            };
            if let Some(lease) = &lease {
                record_claim(tx, lease, now)?;
            }
            let outcome = lease.map_or(ClaimOutcome::Empty, ClaimOutcome::Claimed);
            Ok((Stamped::new(outcome, shared.next_seq()), End::Commit))
        })
    }

    /// After an empty claim: the message held under someone else's live lease that frees
    /// up first, as a `Blocked` outcome (owner and time left), or None when nobody holds one.
    fn blocked_by(&self, worker: &str, now: i64) -> Result<Option<ClaimOutcome>> {
        Ok(self
            .conn
            .prepare_cached(SOONEST_LIVE_LEASE_SQL)?
            .query_row(named_params! {":worker": worker, ":now": now}, |r| {
                let until: i64 = r.get(3)?;
                Ok(ClaimOutcome::Blocked {
                    id: r.get(0)?,
                    key: r.get(1)?,
                    owner: r.get(2)?,
                    left_ms: until - now,
                })
            })
            .optional()?)
    }

    /// Claim one particular message. Reports who holds it when it is not claimable.
    fn claim_id(
        &mut self,
        id: i64,
        worker: &str,
        now: i64,
        lease_ms: i64,
    ) -> Result<Stamped<ClaimOutcome>> {
        self.write(|tx, shared| {
            let holder = tx
                .prepare_cached(HOLDER_SQL)?
                .query_row([id], |r| {
                    Ok(Holder {
                        key: r.get(0)?,
                        status: r.get(1)?,
                        owner: r.get(2)?,
                        until_ms: r.get(3)?,
                        version: r.get(4)?,
                        seeding: r.get(5)?,
                    })
                })
                .optional()?;
            let outcome = match holder {
                None => ClaimOutcome::Empty,
                Some(h) => match h.until_ms {
                    Some(until)
                        if h.status == OutboxStatus::Processing && lease::is_live(until, now) =>
                    {
                        ClaimOutcome::Blocked {
                            id,
                            key: h.key,
                            owner: h.owner.unwrap_or_default(),
                            left_ms: until - now,
                        }
                    }
                    _ => match take_lease(
                        tx,
                        false,
                        worker,
                        (now, now + lease_ms),
                        (id, h.key),
                        (h.version, h.seeding),
                    )? {
                        Some(lease) => {
                            record_claim(tx, &lease, now)?;
                            ClaimOutcome::Claimed(lease)
                        }
                        None => ClaimOutcome::Empty,
                    },
                },
            };
            Ok((Stamped::new(outcome, shared.next_seq()), End::Commit))
        })
    }
}
