//! Filling and emptying the PostgreSQL outbox, each seeding and added payment with its
//! `LeaseEvents` row, and joining a database as a guest (a worker process, a watching
//! dashboard) that makes and seeds it when it is empty.

use crate::outbox::prelude::*;
use std::sync::Arc;

use postgres::Transaction;

use super::claim::NewEvent;
use super::{identify, make_schema, Identity, PgStore, Result, MAKE_LOCK};
use crate::events::ENGINE;
use crate::outbox::Result as OutboxResult;
use crate::outbox::{amount_for, payment_key, DbOrigin, MessageRef, StoreShared};
use crate::provider::Provider;

/// Payments written per transaction while seeding.
const CHUNK: u64 = 2_000;

/// The row that says a seeding is complete, with the number seeded.
pub(super) const SEEDED_SQL: &str = "
INSERT INTO LeaseEvents (AtUtc, Worker, Kind, Detail)
SELECT $1::bigint, $2::text, 'Seeded', $3::text
  FROM (SELECT pg_current_xact_id()) AS identified";

impl PgStore {
    /// Join the database at `url` without holding it (other guests and an engine share
    /// it): an empty database gets the schema and `messages` payments in one transaction,
    /// under the lock that orders makers, so two guests starting at once make it once. A
    /// database that is not leaselab's is refused untouched.
    pub fn join(
        url: &str,
        shared: Arc<StoreShared>,
        provider: &Provider,
        messages: u64,
        now: i64,
    ) -> Result<(PgStore, DbOrigin)> {
        let mut store = PgStore::open_url(url)?;
        store.share(shared)?;
        // Seeded on the clock its leases go by: on the server's, at the server's time.
        let now = store.lease_now(now)?;
        let shown = store.shown.clone();
        let origin = {
            let mut client = store.client();
            let mut tx = client.transaction()?;
            tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MAKE_LOCK])?;
            let origin = match identify(&mut tx, &shown)? {
                Identity::Ours => DbOrigin::Reused,
                Identity::Empty => {
                    make_schema(&mut tx)?;
                    let mut n = 1;
                    loop {
                        let end = (n + CHUNK - 1).min(messages);
                        seed_range(&mut tx, provider, (n, end), messages, now)?;
                        if end >= messages {
                            break;
                        }
                        n = end + 1;
                    }
                    DbOrigin::Created
                }
            };
            tx.commit()?;
            origin
        };
        Ok((store, origin))
    }
}

/// Payments `from..=to` of a seeding of `count`, in `tx`; the `Seeded` event when `to` is
/// the last.
fn seed_range(
    tx: &mut Transaction<'_>,
    provider: &Provider,
    (from, to): (u64, u64),
    count: u64,
    now: i64,
) -> Result<()> {
    let keys: Vec<String> = (from..=to).map(payment_key).collect();
    let amounts: Vec<i64> = (from..=to).map(amount_for).collect();
    for key in &keys {
        provider.create_payment(key);
    }
    if from == 1 {
        // A new seeding, numbered after every earlier one (`Seedings` is never emptied).
        tx.execute(
            "INSERT INTO Seedings (Seeding, AtUtc)
             VALUES ((SELECT COALESCE(MAX(Seeding), 0) + 1 FROM Seedings), $1)",
            &[&now],
        )?;
    }
    tx.execute(
        "INSERT INTO Payments (IdempotencyKey, Amount, PaymentStatus, CreatedAtUtc)
         SELECT k, a, 'Pending', $3 FROM unnest($1::text[], $2::bigint[]) AS p (k, a)",
        &[&keys, &amounts, &now],
    )?;
    // WITH ORDINALITY keeps the ids in payment order.
    tx.execute(
        "INSERT INTO OutboxMessages (PaymentKey, Status, CreatedAtUtc, Seeding)
         SELECT k, 'Pending', $2, (SELECT COALESCE(MAX(Seeding), 0) FROM Seedings)
           FROM unnest($1::text[]) WITH ORDINALITY AS p (k, i)
          ORDER BY i",
        &[&keys, &now],
    )?;
    if to >= count {
        tx.execute(SEEDED_SQL, &[&now, &ENGINE, &count.to_string()])?;
    }
    Ok(())
}

impl Seeding for PgStore {
    /// Remove every row (the next seeding starts from id 1 again). The events table keeps
    /// its Seq counting, so a reader tailing it follows the next seeding.
    fn empty(&mut self) -> OutboxResult<()> {
        self.client().batch_execute(
            "TRUNCATE LeaseEvents CONTINUE IDENTITY;
             TRUNCATE OutboxMessages, Payments RESTART IDENTITY",
        )?;
        Ok(())
    }

    /// Create payments 1..=count with their outbox messages. Each payment is created at the
    /// gateway once, then written together with its outbox row in one transaction (many
    /// pairs share a transaction, sent as arrays in one statement each). The last
    /// transaction also writes the `Seeded` event.
    fn seed(&mut self, provider: &Provider, count: u64, now: i64) -> OutboxResult<()> {
        let mut n = 1;
        loop {
            let end = (n + CHUNK - 1).min(count);
            {
                let mut client = self.client();
                let mut tx = client.transaction()?;
                seed_range(&mut tx, provider, (n, end), count, now)?;
                tx.commit()?;
            }
            if end >= count {
                // The planner's figures for the tables just emptied and filled: without
                // them a claim's generic plan reads the whole outbox for one row.
                self.client()
                    .batch_execute("ANALYZE OutboxMessages, Payments")?;
                return Ok(());
            }
            n = end + 1;
        }
    }

    /// Create one payment and its outbox message in one transaction, with its `Added` event.
    fn add_payment(
        &mut self,
        provider: &Provider,
        key: &str,
        amount: i64,
        now: i64,
    ) -> OutboxResult<MessageRef> {
        provider.create_payment(key);
        let rec = self.recorder()?;
        let mut client = self.client();
        let mut tx = client.transaction()?;
        tx.execute(
            "INSERT INTO Payments (IdempotencyKey, Amount, PaymentStatus, CreatedAtUtc)
             VALUES ($1, $2::bigint, 'Pending', $3)",
            &[&key, &amount, &now],
        )?;
        let id: i64 = tx
            .query_one(
                "INSERT INTO OutboxMessages (PaymentKey, Status, CreatedAtUtc, Seeding)
                 VALUES ($1, 'Pending', $2, (SELECT COALESCE(MAX(Seeding), 0) FROM Seedings))
                 RETURNING Id",
                &[&key, &now],
            )?
            .get(0);
        rec.record(&mut tx, &NewEvent::added(id, key, now))?;
        tx.commit()?;
        Ok(MessageRef {
            id,
            key: key.to_string(),
        })
    }

    /// The next payment number after the highest seeded one (ids restart with each seeding).
    fn next_payment_number(&self) -> OutboxResult<u64> {
        Ok(self.message_count()? + 1)
    }
}
