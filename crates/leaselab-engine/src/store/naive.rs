//! Leasing off: load every Pending message, then mark each Processed asking nobody.

use crate::outbox::prelude::*;
use rusqlite::{named_params, params};

use super::conn::End;
use super::finalize::write_answer;
use super::lease_events::{record, LeaseEventKind, NewEvent};
use crate::outbox::Stamped;

use super::{MessageRef, Result, Store};
use crate::provider::StatusCheck;

/// Leasing off: every Pending message whose backoff is over, oldest first.
pub static LOAD_PENDING_SQL: &str = concat!(
    "SELECT Id, PaymentKey ",
    unfinished!(),
    available!(),
    " ORDER BY CreatedAtUtc, Id"
);

/// Leasing off: Processed, asking nobody.
pub static MARK_SQL: &str = "UPDATE OutboxMessages SET Status = 'Processed', ProcessedAtUtc = ?1,
        LockedBy = NULL, LockedUntilUtc = NULL WHERE Id = ?2";

impl Unleased for Store {
    /// Leasing off: every Pending message whose backoff is over at `now`, as the naive
    /// worker loads them (a dead letter is not Pending, so it is never loaded).
    fn load_pending(&self, now: i64) -> Result<Vec<MessageRef>> {
        let mut stmt = self.conn.prepare_cached(LOAD_PENDING_SQL)?;
        let rows = stmt
            .query_map(named_params! {":now": now}, |r| {
                Ok(MessageRef {
                    id: r.get(0)?,
                    key: r.get(1)?,
                })
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        self.absorb_busy();
        Ok(rows)
    }

    /// Leasing off: write the answer and mark Processed, asking nobody. Returns its stamp.
    fn mark_processed(
        &mut self,
        msg: &MessageRef,
        check: &StatusCheck,
        now: i64,
    ) -> Result<Stamped<()>> {
        self.mark_processed_by("", msg, check, now)
    }

    /// [`Store::mark_processed`] with the worker's name written in its event row.
    fn mark_processed_by(
        &mut self,
        worker: &str,
        msg: &MessageRef,
        check: &StatusCheck,
        now: i64,
    ) -> Result<Stamped<()>> {
        self.write(|tx, shared| {
            write_answer(tx, &msg.key, check)?;
            tx.prepare_cached(MARK_SQL)?.execute(params![now, msg.id])?;
            record(
                tx,
                &NewEvent {
                    detail: Some(check.status.as_str()),
                    ..NewEvent::about(LeaseEventKind::Marked, now, worker, msg.id, &msg.key)
                },
            )?;
            Ok((Stamped::new((), shared.next_seq()), End::Commit))
        })
    }
}
