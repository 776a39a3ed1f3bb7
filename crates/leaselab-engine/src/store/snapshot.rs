//! Read queries: counts, rows, the schema and the checker's questions.

use crate::outbox::prelude::*;
use crate::process_identity::ProcessIdentity;
use rusqlite::{params, OptionalExtension};

use super::{MessageRow, OutboxCounts, PaymentCounts, PaymentRow, Result, RowsPerKey, Store};

impl Reading for Store {
    fn newest_rows(&self) -> Result<Vec<crate::outbox::NewestRow>> {
        let mut stmt = self.conn.prepare_cached(crate::outbox::NEWEST_ROWS_SQL)?;
        let rows = stmt
            .query_map([], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, Option<String>>(3)?,
                ))
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(rows
            .into_iter()
            .filter_map(|(worker, at_ms, kind, joined)| {
                Some(crate::outbox::NewestRow {
                    worker,
                    at_ms,
                    kind: crate::outbox::LeaseEventKind::parse(&kind)?,
                    process: joined.as_deref().and_then(ProcessIdentity::in_detail),
                })
            })
            .collect())
    }

    /// The last provider error recorded for the message of `key`.
    fn last_error(&self, key: &str) -> Result<Option<String>> {
        Ok(self
            .conn
            .prepare_cached("SELECT LastError FROM OutboxMessages WHERE PaymentKey = ?1")?
            .query_row([key], |r| r.get(0))
            .optional()?
            .flatten())
    }

    /// The unfinished messages are counted in their index, without reading their rows;
    /// of those, the Processing ones by reading each row the index names (the index holds
    /// no column a claim changes); DeadLettered in its own index, Processed as the rest. A
    /// large, mostly finished outbox is counted without reading its finished rows.
    fn outbox_counts(&self) -> Result<OutboxCounts> {
        let count = |sql: &str| -> Result<u64> {
            let n: i64 = self.conn.prepare_cached(sql)?.query_row([], |r| r.get(0))?;
            Ok(n as u64)
        };
        let unfinished = count(concat!("SELECT COUNT(*) ", unfinished!(), "1"))?;
        let processing = if unfinished == 0 {
            0
        } else {
            count(concat!(
                "SELECT COUNT(*) ",
                unfinished!(),
                "Status = 'Processing'"
            ))?
        };
        let pending = unfinished.saturating_sub(processing);
        let dead_lettered =
            count("SELECT COUNT(*) FROM OutboxMessages WHERE Status = 'DeadLettered'")?;
        let total = self.message_count()?;
        Ok(OutboxCounts {
            pending,
            processing,
            processed: total.saturating_sub(pending + processing + dead_lettered),
            dead_lettered,
        })
    }

    fn payment_counts(&self) -> Result<PaymentCounts> {
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
    /// When the newest seeding was made, on its maker's clock.
    fn seeded_at(&self) -> Result<Option<i64>> {
        Ok(self
            .conn
            .query_row(
                "SELECT AtUtc FROM Seedings ORDER BY Seeding DESC LIMIT 1",
                [],
                |r| r.get(0),
            )
            .optional()?)
    }

    fn message_count(&self) -> Result<u64> {
        let n: i64 = self
            .conn
            .prepare_cached("SELECT COALESCE(MAX(Id), 0) FROM OutboxMessages")?
            .query_row([], |r| r.get(0))?;
        Ok(n as u64)
    }

    /// Rows `offset..offset+limit` of the outbox in id order, with their payment status.
    fn messages(&self, offset: u64, limit: u64) -> Result<Vec<MessageRow>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT o.Id, o.PaymentKey, o.Status, o.LockedBy, o.LockedUntilUtc, o.LeaseVersion,
                    o.Attempts, o.ProcessedAtUtc, p.PaymentStatus, o.AvailableAtUtc
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
                    available_at_ms: r.get(9)?,
                })
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(rows)
    }

    fn payments(&self) -> Result<Vec<PaymentRow>> {
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
    fn max_rows_per_key(&self) -> Result<RowsPerKey> {
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
        Ok(RowsPerKey {
            payments: pay as u64,
            outbox: out as u64,
        })
    }

    /// Outbox rows without a payment, and payments without an outbox row.
    fn orphans(&self) -> Result<u64> {
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
    fn schema(&self) -> Result<Vec<String>> {
        let mut stmt = self.conn.prepare(
            "SELECT sql FROM sqlite_schema WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%' ORDER BY rowid",
        )?;
        let rows = stmt
            .query_map([], |r| r.get::<_, String>(0))?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(rows)
    }

    fn owner(&self) -> Result<Option<String>> {
        Ok(crate::db_lock::DbLock::holder(self.path()))
    }
}
