//! Reads of the PostgreSQL outbox: counts, table rows and the events table.

use super::status::state;
use super::{PgStore, Result};
use crate::outbox::prelude::*;
use crate::outbox::LeaseEventRow;
use crate::outbox::Result as OutboxResult;
use crate::outbox::{MessageRow, OutboxCounts, PaymentCounts, PaymentRow, RowsPerKey};

impl PgStore {
    /// Up to `limit` events about leases (claims, heartbeats, provider calls, results, failed
    /// attempts, a crash or freeze holding one) after `seq`, in Seq order (each message's
    /// commit order). Seedings, added payments and rows about no message are left out
    /// ([`PgStore::all_events_after`] has them). A reader that follows running workers asks
    /// through a [`super::PgTail`]: a row committed later may take a lower Seq.
    pub fn events_after(&mut self, seq: u64, limit: u64) -> Result<Vec<LeaseEventRow>> {
        let rows = self.client().query(
            "SELECT Seq, AtUtc, Worker, Kind, MessageId, PaymentKey, LeaseVersion,
                    LockedUntilUtc, COALESCE(PaymentStatus, Detail)
               FROM LeaseEvents
              WHERE Seq > $1 AND Kind NOT IN ('Seeded', 'Added') AND MessageId IS NOT NULL
              ORDER BY Seq LIMIT $2",
            &[&(seq as i64), &(limit as i64)],
        )?;
        rows.iter().map(event_row).collect()
    }
}

/// One `LeaseEvents` row as both stores read it: `Detail` holds the provider's answer (the
/// `PaymentStatus` column here), the error of a failed attempt, or the number seeded.
fn event_row(r: &postgres::Row) -> Result<LeaseEventRow> {
    Ok(LeaseEventRow {
        seq: r.get::<_, i64>(0) as u64,
        at_ms: r.get(1),
        worker: r.get(2),
        kind: state(r, 3)?,
        id: r.get(4),
        key: r.get(5),
        version: r.get(6),
        until_ms: r.get(7),
        detail: r.get(8),
    })
}

impl PgStore {
    /// Up to `limit` events of every kind after `seq`, in Seq order, as the SQLite
    /// table's rows read: `Detail` holds the provider's answer, the error of a failed
    /// attempt, or the number seeded.
    /// A row committed later may still take a Seq below the last one returned: a reader that
    /// follows running workers asks through a [`super::PgTail`] instead.
    pub fn all_events_after(&mut self, seq: u64, limit: u64) -> Result<Vec<LeaseEventRow>> {
        self.all_events_between(seq, i64::MAX as u64, limit)
    }

    /// How many rows the events table holds.
    pub fn event_count(&mut self) -> Result<u64> {
        let n: i64 = self
            .client()
            .query_one("SELECT COUNT(*) FROM LeaseEvents", &[])?
            .get(0);
        Ok(n as u64)
    }

    /// The lowest Seq below 1, if a row has one: no leaselab writes such a row, and a reader
    /// that starts after 0 would never see it.
    pub fn events_below_one(&mut self) -> Result<Option<i64>> {
        Ok(self
            .client()
            .query_one("SELECT MIN(Seq) FROM LeaseEvents WHERE Seq < 1", &[])?
            .get(0))
    }

    /// Up to `limit` events with `after < Seq <= upto`, in Seq order.
    pub(super) fn all_events_between(
        &mut self,
        after: u64,
        upto: u64,
        limit: u64,
    ) -> Result<Vec<LeaseEventRow>> {
        let rows = self.client().query(
            "SELECT Seq, AtUtc, Worker, Kind, MessageId, PaymentKey, LeaseVersion,
                    LockedUntilUtc, COALESCE(PaymentStatus, Detail)
               FROM LeaseEvents WHERE Seq > $1 AND Seq <= $2 ORDER BY Seq LIMIT $3",
            &[
                &(after as i64),
                &(upto.min(i64::MAX as u64) as i64),
                &(limit as i64),
            ],
        )?;
        rows.iter().map(event_row).collect()
    }
}

impl Reading for PgStore {
    fn server_clock_ms(&self) -> OutboxResult<Option<i64>> {
        Ok(Some(self.server_ms()?))
    }

    fn held_by_teacher(&self) -> OutboxResult<bool> {
        Ok(self.class_held()?)
    }

    /// Every role sees the `application_name` of every session in `pg_stat_activity`.
    fn sessions(&self) -> OutboxResult<Option<Vec<String>>> {
        let rows = self.client().query(
            "SELECT application_name FROM pg_stat_activity
              WHERE datname = current_database() AND application_name LIKE $1 || '%'
              LIMIT 10000",
            &[&super::SESSION_PREFIX],
        )?;
        Ok(Some(rows.iter().map(|r| r.get(0)).collect()))
    }

    fn newest_rows(&self) -> OutboxResult<Vec<crate::outbox::NewestRow>> {
        let rows = self.client().query(crate::outbox::NEWEST_ROWS_SQL, &[])?;
        Ok(rows
            .iter()
            .filter_map(|r| {
                let joined: Option<&str> = r.get(3);
                Some(crate::outbox::NewestRow {
                    worker: r.get(0),
                    at_ms: r.get(1),
                    kind: crate::outbox::LeaseEventKind::parse(r.get(2))?,
                    process: joined.and_then(crate::process_identity::ProcessIdentity::in_detail),
                })
            })
            .collect())
    }

    /// The last provider error recorded for the message of `key`.
    fn last_error(&self, key: &str) -> OutboxResult<Option<String>> {
        Ok(self
            .client()
            .query_opt(
                "SELECT LastError FROM OutboxMessages WHERE PaymentKey = $1",
                &[&key],
            )?
            .and_then(|r| r.get(0)))
    }

    /// Rows per outbox status.
    fn outbox_counts(&self) -> OutboxResult<OutboxCounts> {
        let row = self.client().query_one(
            "SELECT COUNT(*) FILTER (WHERE Status = 'Pending'),
                    COUNT(*) FILTER (WHERE Status = 'Processing'),
                    COUNT(*) FILTER (WHERE Status = 'Processed'),
                    COUNT(*) FILTER (WHERE Status = 'DeadLettered')
               FROM OutboxMessages",
            &[],
        )?;
        Ok(OutboxCounts {
            pending: row.get::<_, i64>(0) as u64,
            processing: row.get::<_, i64>(1) as u64,
            processed: row.get::<_, i64>(2) as u64,
            dead_lettered: row.get::<_, i64>(3) as u64,
        })
    }

    fn payment_counts(&self) -> OutboxResult<PaymentCounts> {
        let row = self.client().query_one(
            "SELECT COUNT(*) FILTER (WHERE PaymentStatus = 'Pending'),
                    COUNT(*) FILTER (WHERE PaymentStatus = 'Paid'),
                    COUNT(*) FILTER (WHERE PaymentStatus = 'Failed'),
                    COUNT(*) FILTER (WHERE PaymentStatus = 'Paid' AND TransactionId IS NOT NULL),
                    COUNT(*) FILTER (WHERE PaymentStatus = 'Failed' AND TransactionId IS NOT NULL)
               FROM Payments",
            &[],
        )?;
        let n = |i: usize| row.get::<_, i64>(i) as u64;
        Ok(PaymentCounts {
            pending: n(0),
            paid: n(1),
            failed: n(2),
            paid_with_txid: n(3),
            failed_with_txid: n(4),
        })
    }

    /// Rows in the outbox. Counted, not taken from the highest id: an identity value drawn
    /// by a rolled-back insert leaves a gap.
    /// When the newest seeding was made, on its maker's clock.
    fn seeded_at(&self) -> OutboxResult<Option<i64>> {
        Ok(self.client().query_one("SELECT MAX(AtUtc) FROM Seedings WHERE Seeding = (SELECT MAX(Seeding) FROM Seedings)", &[])?
            .get(0))
    }

    fn message_count(&self) -> OutboxResult<u64> {
        let n: i64 = self
            .client()
            .query_one("SELECT COUNT(*) FROM OutboxMessages", &[])?
            .get(0);
        Ok(n as u64)
    }

    /// Rows `offset..offset+limit` of the outbox in id order, with their payment status.
    fn messages(&self, offset: u64, limit: u64) -> OutboxResult<Vec<MessageRow>> {
        let rows = self.client().query(
            "SELECT o.Id, o.PaymentKey, o.Status, o.LockedBy, o.LockedUntilUtc, o.LeaseVersion,
                    o.Attempts, o.ProcessedAtUtc, p.PaymentStatus, o.AvailableAtUtc
               FROM OutboxMessages o JOIN Payments p ON p.IdempotencyKey = o.PaymentKey
              ORDER BY o.Id OFFSET $1 LIMIT $2",
            &[&(offset as i64), &(limit as i64)],
        )?;
        rows.iter()
            .map(|r| {
                Ok(MessageRow {
                    id: r.get(0),
                    key: r.get(1),
                    status: state(r, 2)?,
                    locked_by: r.get(3),
                    locked_until_ms: r.get(4),
                    lease_version: r.get(5),
                    attempts: r.get(6),
                    processed_at_ms: r.get(7),
                    payment_status: state(r, 8)?,
                    available_at_ms: r.get(9),
                })
            })
            .collect()
    }

    /// Every payment, by key.
    fn payments(&self) -> OutboxResult<Vec<PaymentRow>> {
        let rows = self.client().query(
            "SELECT IdempotencyKey, PaymentStatus, TransactionId FROM Payments
              ORDER BY IdempotencyKey",
            &[],
        )?;
        rows.iter()
            .map(|r| {
                Ok(PaymentRow {
                    key: r.get(0),
                    status: state(r, 1)?,
                    transaction_id: r.get(2),
                })
            })
            .collect()
    }

    /// The most payment rows and outbox rows that share one key.
    fn max_rows_per_key(&self) -> OutboxResult<RowsPerKey> {
        let row = self.client().query_one(
            "SELECT (SELECT COALESCE(MAX(n), 0) FROM
                       (SELECT COUNT(*) n FROM Payments GROUP BY IdempotencyKey) p),
                    (SELECT COALESCE(MAX(n), 0) FROM
                       (SELECT COUNT(*) n FROM OutboxMessages GROUP BY PaymentKey) o)",
            &[],
        )?;
        Ok(RowsPerKey {
            payments: row.get::<_, i64>(0) as u64,
            outbox: row.get::<_, i64>(1) as u64,
        })
    }

    /// Outbox rows without a payment, and payments without an outbox row.
    fn orphans(&self) -> OutboxResult<u64> {
        let n: i64 = self
            .client()
            .query_one(
                "SELECT (SELECT COUNT(*) FROM OutboxMessages o WHERE NOT EXISTS
                           (SELECT 1 FROM Payments p WHERE p.IdempotencyKey = o.PaymentKey))
                      + (SELECT COUNT(*) FROM Payments p WHERE NOT EXISTS
                           (SELECT 1 FROM OutboxMessages o WHERE o.PaymentKey = p.IdempotencyKey))",
                &[],
            )?
            .get(0);
        Ok(n as u64)
    }

    /// The leaselab that holds this database (its owner: a run or a dashboard), if any.
    fn owner(&self) -> OutboxResult<Option<String>> {
        Ok(self.client().query_opt(
                &format!(
                    "SELECT a.application_name || ', connected since '
                            || to_char(a.backend_start AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || 'Z'
                       FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
                      WHERE l.locktype = 'advisory' AND l.granted AND l.objid = {}
                        AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
                      LIMIT 1",
                    super::OWNER_LOCK
                ),
                &[],
            )?
            .map(|r| r.get(0)))
    }

    fn schema(&self) -> OutboxResult<Vec<String>> {
        Ok(super::schema_statements())
    }
}
