//! The bench's reference: a plain claim loop as an outbox tutorial would write it, on its
//! own table in its own file with the same connection settings. One table, two ordinary
//! indexes, a claim whose candidate is the oldest Pending row or else the longest-expired
//! lease, and a finalize guarded by the owner's name. No payments, no event rows, no
//! fencing token: what leaselab's loop costs beyond it is what its rules cost.

use std::path::Path;
use std::sync::Arc;

use rusqlite::{params, OptionalExtension, Transaction, TransactionBehavior};

use super::{payment_key, Result, Store, StoreShared};

const PLAIN_SCHEMA: &str = "
CREATE TABLE PlainOutbox (
    Id             INTEGER PRIMARY KEY,
    PaymentKey     TEXT NOT NULL,
    Status         TEXT NOT NULL,
    LockedBy       TEXT,
    LockedUntilUtc INTEGER,
    CreatedAtUtc   INTEGER NOT NULL
);
CREATE INDEX IX_Plain_Created ON PlainOutbox (Status, CreatedAtUtc);
CREATE INDEX IX_Plain_Locked ON PlainOutbox (Status, LockedUntilUtc);";

const PLAIN_CLAIM_SQL: &str = "
UPDATE PlainOutbox SET Status = 'Processing', LockedBy = ?1, LockedUntilUtc = ?3
 WHERE Id = COALESCE(
       (SELECT Id FROM PlainOutbox WHERE Status = 'Pending' ORDER BY CreatedAtUtc LIMIT 1),
       (SELECT Id FROM PlainOutbox WHERE Status = 'Processing' AND LockedUntilUtc < ?2
         ORDER BY LockedUntilUtc LIMIT 1))
RETURNING Id, PaymentKey";

const PLAIN_FINALIZE_SQL: &str = "
UPDATE PlainOutbox SET Status = 'Processed', LockedUntilUtc = NULL
 WHERE Id = ?1 AND Status = 'Processing' AND LockedBy = ?2";

/// One connection to a plain outbox file.
pub struct PlainOutbox {
    store: Store,
}

impl PlainOutbox {
    /// A new file at `path` holding `messages` Pending rows (`PAY-000001`...).
    pub fn create(path: &Path, shared: Arc<StoreShared>, messages: u64) -> Result<PlainOutbox> {
        let store = Store::open_new(path, shared)?;
        store.conn.execute_batch(PLAIN_SCHEMA)?;
        let tx = store.conn.unchecked_transaction()?;
        {
            let mut insert = tx.prepare(
                "INSERT INTO PlainOutbox (PaymentKey, Status, CreatedAtUtc)
                 VALUES (?1, 'Pending', ?2)",
            )?;
            for n in 1..=messages {
                insert.execute(params![payment_key(n), n as i64])?;
            }
        }
        tx.commit()?;
        Ok(PlainOutbox { store })
    }

    /// Another connection to a file [`PlainOutbox::create`] made.
    pub fn open(path: &Path, shared: Arc<StoreShared>) -> Result<PlainOutbox> {
        Ok(PlainOutbox {
            store: Store::open(path, shared)?,
        })
    }

    /// Claim the next message: (id, payment key), or None when nothing is claimable.
    pub fn claim(
        &mut self,
        worker: &str,
        now: i64,
        lease_ms: i64,
    ) -> Result<Option<(i64, String)>> {
        let tx = Transaction::new_unchecked(&self.store.conn, TransactionBehavior::Immediate)?;
        let got = tx
            .prepare_cached(PLAIN_CLAIM_SQL)?
            .query_row(params![worker, now, now + lease_ms], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .optional()?;
        tx.commit()?;
        self.store.absorb_busy();
        Ok(got)
    }

    /// Mark the message Processed if `worker` still holds it; true when it did.
    pub fn finalize(&mut self, id: i64, worker: &str) -> Result<bool> {
        let tx = Transaction::new_unchecked(&self.store.conn, TransactionBehavior::Immediate)?;
        let changed = tx
            .prepare_cached(PLAIN_FINALIZE_SQL)?
            .execute(params![id, worker])?;
        tx.commit()?;
        self.store.absorb_busy();
        Ok(changed == 1)
    }

    /// Rows Processed.
    pub fn processed(&self) -> Result<u64> {
        Ok(self.store.conn.query_row(
            "SELECT COUNT(*) FROM PlainOutbox WHERE Status = 'Processed'",
            [],
            |r| r.get::<_, i64>(0),
        )? as u64)
    }
}
