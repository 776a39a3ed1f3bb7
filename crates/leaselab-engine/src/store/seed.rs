//! Filling the outbox: payments with their messages, written pair by pair.

use crate::outbox::prelude::*;
use rusqlite::params;

use super::conn::End;
use super::lease_events::{record, LeaseEventKind, NewEvent};
use super::{MessageRef, Result, Store};
use crate::events::ENGINE;
use crate::outbox::{amount_for, payment_key};
use crate::provider::{CreationLog, Provider};

const INSERT_PAYMENT_SQL: &str =
    "INSERT INTO Payments (IdempotencyKey, Amount, PaymentStatus, CreatedAtUtc)
     VALUES (?1, ?2, 'Pending', ?3)";
/// A message of the newest seeding.
const INSERT_MESSAGE_SQL: &str =
    "INSERT INTO OutboxMessages (PaymentKey, Status, CreatedAtUtc, Seeding)
     VALUES (?1, 'Pending', ?2, (SELECT COALESCE(MAX(Seeding), 0) FROM Seedings))";

/// A new seeding, numbered after every earlier one (`Seedings` is never emptied).
const NEW_SEEDING_SQL: &str = "INSERT INTO Seedings (Seeding, AtUtc, LastSeq)
     VALUES ((SELECT COALESCE(MAX(Seeding), 0) + 1 FROM Seedings), ?1,
             (SELECT MAX(LastSeq) FROM Seedings))";

impl Store {
    /// As [`Store::add_payment`], running `between` after the payment insert and before the
    /// outbox insert: a failure there must leave neither row.
    pub fn add_payment_with(
        &mut self,
        log: &impl CreationLog,
        key: &str,
        amount: i64,
        now: i64,
        between: impl FnOnce() -> Result<()>,
    ) -> Result<MessageRef> {
        log.created(key);
        let id = self.write(|tx, _| {
            tx.execute(INSERT_PAYMENT_SQL, params![key, amount, now])?;
            between()?; // an error here drops the transaction, and the payment with it
            tx.execute(INSERT_MESSAGE_SQL, params![key, now])?;
            let id = tx.last_insert_rowid();
            record(
                tx,
                &NewEvent::about(LeaseEventKind::Added, now, ENGINE, id, key),
            )?;
            Ok((id, End::Commit))
        })?;
        Ok(MessageRef {
            id,
            key: key.to_string(),
        })
    }
}

impl Seeding for Store {
    /// Remove every row (the next seeding starts from an empty outbox).
    fn empty(&mut self) -> Result<()> {
        self.write(|tx, _| {
            // The floor the next event's Seq starts above, kept where emptying leaves it.
            tx.execute(
                "UPDATE Seedings SET LastSeq = COALESCE((SELECT MAX(Seq) FROM LeaseEvents), LastSeq)
                  WHERE Seeding = (SELECT MAX(Seeding) FROM Seedings)",
                [],
            )?;
            tx.execute("DELETE FROM LeaseEvents", [])?;
            tx.execute("DELETE FROM OutboxMessages", [])?;
            tx.execute("DELETE FROM Payments", [])?;
            Ok(((), End::Commit))
        })
    }

    /// Create payments 1..=count with their outbox messages. Each payment is created at
    /// the gateway once, then written together with its outbox row in one transaction
    /// (many pairs share a transaction to keep seeding fast; a pair never spans two).
    fn seed(&mut self, log: &Provider, count: u64, now: i64) -> Result<()> {
        const CHUNK: u64 = 2_000;
        let mut n = 1;
        while n <= count {
            let end = (n + CHUNK - 1).min(count);
            self.write(|tx, _| {
                if n == 1 {
                    tx.prepare_cached(NEW_SEEDING_SQL)?.execute([now])?;
                }
                let mut pay = tx.prepare_cached(INSERT_PAYMENT_SQL)?;
                let mut out = tx.prepare_cached(INSERT_MESSAGE_SQL)?;
                for i in n..=end {
                    let key = payment_key(i);
                    log.created(&key);
                    pay.execute(params![key, amount_for(i), now])?;
                    out.execute(params![key, now])?;
                }
                if end == count {
                    let seeded = count.to_string();
                    record(
                        tx,
                        &NewEvent {
                            at_ms: now,
                            worker: ENGINE,
                            kind: LeaseEventKind::Seeded,
                            id: None,
                            key: None,
                            version: None,
                            until_ms: None,
                            detail: Some(&seeded),
                        },
                    )?;
                }
                Ok(((), End::Commit))
            })?;
            n = end + 1;
        }
        Ok(())
    }

    /// Create one payment and its outbox message in one transaction.
    fn add_payment(
        &mut self,
        log: &Provider,
        key: &str,
        amount: i64,
        now: i64,
    ) -> Result<MessageRef> {
        self.add_payment_with(log, key, amount, now, || Ok(()))
    }

    /// The next payment number after the highest seeded one.
    fn next_payment_number(&self) -> Result<u64> {
        Ok(self.message_count()? + 1)
    }
}
