//! A class on one PostgreSQL server: the teacher's hold (`LeaselabMarker.Held`, a row every
//! worker process reads before it claims, so it works across machines), rounds of payments
//! added beside the earlier ones (a round is a seeding: its messages carry its number, and
//! an event belongs to the round of its message), and the scoreboard counted from
//! `LeaseEvents`.

use serde::Serialize;

use super::claim::NewEvent;
use super::seed::SEEDED_SQL;
use super::{PgError, PgStore, Result, MAKE_LOCK};
use crate::events::ENGINE;
use crate::outbox::{amount_for, payment_key};
use crate::provider::Provider;
use crate::software::Software;

/// Whether the teacher holds the class.
const HELD_SQL: &str = "SELECT Held FROM LeaselabMarker";

/// One student's line of the scoreboard: their events' counts, in the rounds asked for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Score {
    /// The worker's name, as it wrote its events (untrusted: print it through `printable`).
    pub name: String,
    /// Finalizes that committed.
    pub done: u64,
    /// Finalizes the fencing token rejected (the lease had been taken over).
    pub rejected: u64,
    /// Heartbeats that found the lease gone.
    pub lost: u64,
    /// Claims of a message whose earlier lease had run out (lease version above 1).
    pub reclaims: u64,
    /// Finalizes and unguarded writes of a payment an earlier write had already completed.
    pub duplicates: u64,
    /// Writes without a lease (`--no-leasing`).
    pub unguarded: u64,
}

/// The scoreboard, per student, sorted by done (most first), then by the fewest rejected
/// finalizes, then by name. A round is the seeding of the messages its events are about;
/// rows about no message (joining, leaving) count in none.
const SCOREBOARD_SQL: &str = "
WITH ev AS (
    SELECT e.Seq, e.Worker, e.Kind, e.MessageId, e.LeaseVersion
      FROM LeaseEvents e JOIN OutboxMessages m ON m.Id = e.MessageId
     WHERE ($1::bigint IS NULL OR m.Seeding = $1::bigint)
       AND e.Kind IN ('Claimed', 'Finalized', 'FinalizeRejected', 'LeaseLost', 'Marked')
), firsts AS (
    SELECT MessageId, MIN(Seq) AS First FROM ev
     WHERE Kind IN ('Finalized', 'Marked') GROUP BY MessageId
)
SELECT ev.Worker,
       COUNT(*) FILTER (WHERE Kind = 'Finalized') AS done,
       COUNT(*) FILTER (WHERE Kind = 'FinalizeRejected') AS rejected,
       COUNT(*) FILTER (WHERE Kind = 'LeaseLost'),
       COUNT(*) FILTER (WHERE Kind = 'Claimed' AND LeaseVersion > 1),
       COUNT(*) FILTER (WHERE Kind IN ('Finalized', 'Marked') AND Seq > firsts.First),
       COUNT(*) FILTER (WHERE Kind = 'Marked')
  FROM ev LEFT JOIN firsts USING (MessageId)
 GROUP BY ev.Worker
 ORDER BY done DESC, rejected ASC, ev.Worker";

/// Who runs what: a worker's name and the leaselab its last `Joined` row names (each part
/// unknown where no row says it: an older worker, or none that joined).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Runs {
    /// The worker's name, as it wrote its events (untrusted: print it through `printable`).
    pub name: String,
    #[serde(flatten)]
    pub software: Software,
    /// The system as a person names it (`macOS aarch64`), or `unknown`.
    pub system: String,
}

/// Every worker that wrote a row, by name, with the detail of its last `Joined` row (cut
/// to a length no detail of ours reaches: a row is untrusted).
const RUNS_SQL: &str = "
SELECT w.Worker,
       (SELECT left(j.Detail, 1000) FROM LeaseEvents j
         WHERE j.Worker = w.Worker AND j.Kind = 'Joined' ORDER BY j.Seq DESC LIMIT 1)
  FROM (SELECT DISTINCT Worker FROM LeaseEvents WHERE Worker <> $1) w
 ORDER BY w.Worker
 LIMIT 10000";

/// Why a scoreboard or a round could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ScoreError {
    #[error("{shown} has no round {asked} (its rounds: {known})")]
    NoRound {
        shown: String,
        asked: i64,
        known: String,
    },
    #[error(transparent)]
    Pg(#[from] PgError),
}

impl From<postgres::Error> for ScoreError {
    fn from(e: postgres::Error) -> Self {
        ScoreError::Pg(PgError::Postgres(e))
    }
}

impl PgStore {
    /// Whether the teacher holds the class: worker processes claim nothing while it does.
    pub fn class_held(&self) -> Result<bool> {
        let q = self.prepared(HELD_SQL)?;
        Ok(self.client().query_one(&q, &[])?.get(0))
    }

    /// Hold the class (`true`) or let it go. Returns whether it was held before.
    pub fn set_held(&mut self, held: bool) -> Result<bool> {
        let mut client = self.client();
        let mut tx = client.transaction()?;
        let before: bool = tx
            .query_one("SELECT Held FROM LeaselabMarker FOR UPDATE", &[])?
            .get(0);
        tx.execute("UPDATE LeaselabMarker SET Held = $1", &[&held])?;
        tx.commit()?;
        Ok(before)
    }

    /// A new round of `count` payments beside the earlier rounds' (whose rows and events
    /// stay), numbered after every earlier seeding, each with its `Added` row, at the
    /// server's time; held first when `hold`. Returns the round's number and its first
    /// payment number.
    pub fn new_round(&mut self, provider: &Provider, count: u64, hold: bool) -> Result<(i64, u64)> {
        let now = self.server_ms()?;
        let rec = self.recorder()?;
        let mut client = self.client();
        let mut tx = client.transaction()?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MAKE_LOCK])?;
        if hold {
            tx.execute("UPDATE LeaselabMarker SET Held = true", &[])?;
        }
        let round: i64 = tx
            .query_one(
                "INSERT INTO Seedings (Seeding, AtUtc)
                 VALUES ((SELECT COALESCE(MAX(Seeding), 0) + 1 FROM Seedings), $1)
                 RETURNING Seeding",
                &[&now],
            )?
            .get(0);
        let first: i64 = tx
            .query_one("SELECT COUNT(*) + 1 FROM OutboxMessages", &[])?
            .get(0);
        let first = first as u64;
        // The events of a database begin with a seeding (a replay reads them so): the
        // first round on an empty one is a seeding of none, its payments added after it.
        let seeded: bool = tx
            .query_one(
                "SELECT EXISTS (SELECT 1 FROM LeaseEvents WHERE Kind = 'Seeded')",
                &[],
            )?
            .get(0);
        if !seeded {
            tx.execute(SEEDED_SQL, &[&now, &ENGINE, &"0"])?;
        }
        let numbers = first..first + count;
        let keys: Vec<String> = numbers.clone().map(payment_key).collect();
        let amounts: Vec<i64> = numbers.map(amount_for).collect();
        for key in &keys {
            provider.create_payment(key);
        }
        tx.execute(
            "INSERT INTO Payments (IdempotencyKey, Amount, PaymentStatus, CreatedAtUtc)
             SELECT k, a, 'Pending', $3 FROM unnest($1::text[], $2::bigint[]) AS p (k, a)",
            &[&keys, &amounts, &now],
        )?;
        let ids: Vec<(i64, String)> = tx
            .query(
                "INSERT INTO OutboxMessages (PaymentKey, Status, CreatedAtUtc, Seeding)
                 SELECT k, 'Pending', $2, $3
                   FROM unnest($1::text[]) WITH ORDINALITY AS p (k, i)
                  ORDER BY i
                 RETURNING Id, PaymentKey",
                &[&keys, &now, &round],
            )?
            .iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect();
        for (id, key) in &ids {
            rec.record(&mut tx, &NewEvent::added(*id, key, now))?;
        }
        tx.commit()?;
        Ok((round, first))
    }

    /// The rounds that have messages, oldest first.
    pub fn rounds(&mut self) -> Result<Vec<i64>> {
        Ok(self
            .client()
            .query(
                "SELECT DISTINCT Seeding FROM OutboxMessages ORDER BY 1",
                &[],
            )?
            .iter()
            .map(|r| r.get(0))
            .collect())
    }

    /// Who runs what: every worker that wrote a row, by name, with the leaselab it last
    /// joined with.
    pub fn who_runs_what(&mut self) -> Result<Vec<Runs>> {
        let rows = self.client().query(RUNS_SQL, &[&ENGINE])?;
        Ok(rows
            .iter()
            .map(|r| {
                let detail: Option<String> = r.get(1);
                let software = Software::in_detail(detail.as_deref().unwrap_or(""));
                Runs {
                    name: r.get(0),
                    system: software.system(),
                    software,
                }
            })
            .collect())
    }

    /// The scoreboard of `round`, or of every round.
    pub fn scoreboard(
        &mut self,
        round: Option<i64>,
    ) -> std::result::Result<Vec<Score>, ScoreError> {
        if let Some(asked) = round {
            let rounds = self.rounds()?;
            if !rounds.contains(&asked) {
                let known: Vec<String> = rounds.iter().map(i64::to_string).collect();
                return Err(ScoreError::NoRound {
                    shown: self.shown.clone(),
                    asked,
                    known: if known.is_empty() {
                        "none".into()
                    } else {
                        known.join(", ")
                    },
                });
            }
        }
        let rows = self.client().query(SCOREBOARD_SQL, &[&round])?;
        let n = |r: &postgres::Row, i: usize| r.get::<_, i64>(i) as u64;
        Ok(rows
            .iter()
            .map(|r| Score {
                name: r.get(0),
                done: n(r, 1),
                rejected: n(r, 2),
                lost: n(r, 3),
                reclaims: n(r, 4),
                duplicates: n(r, 5),
                unguarded: n(r, 6),
            })
            .collect())
    }
}
