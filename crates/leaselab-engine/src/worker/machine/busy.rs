//! A transaction SQLite refused the write lock (it had read, and another connection wrote
//! since or held the lock: SQLite does not wait on a busy handler then). Nothing of it
//! stayed, so the worker says so and tries again after a backoff on the scenario clock, as
//! a real worker would; refused too many times in a row, it stops and says why.

use crate::events::{EventKind, BUSY_TRIES};
use crate::outbox::{Failure, OutboxError};

use super::*;

/// The first wait before trying again, doubled each refusal in a row, up to the cap.
const BUSY_BACKOFF_MS: i64 = 10;
const BUSY_BACKOFF_CAP_MS: i64 = 500;

impl Worker {
    /// `error` of a claim, finalize or heartbeat: a refused write lock is told, with when it
    /// is tried again (the scenario time a running worker waits for; None for a stepped
    /// one, whose next step tries again). Any other error, or one refusal too many, is
    /// returned: the worker stops with it.
    pub(super) fn try_again_later(
        &mut self,
        error: WorkerError,
        pace: Pace,
    ) -> Result<Option<i64>, WorkerError> {
        let WorkerError::Outbox(OutboxError::Database {
            failure: failure @ Failure::WriteLockRefused { .. },
            message,
            cause,
        }) = error
        else {
            return Err(error);
        };
        // Rolled back: a finalize refused did not commit, nothing to ask about it.
        self.finalize_unanswered = false;
        self.busy_tries += 1;
        let tries = self.busy_tries;
        if tries > BUSY_TRIES {
            return Err(WorkerError::Outbox(OutboxError::Database {
                failure,
                message: format!("{message}, {tries} times in a row; the worker gave up"),
                cause,
            }));
        }
        let now = self.ctx.clock.now();
        let backoff = (BUSY_BACKOFF_MS << (tries - 1).min(16)).min(BUSY_BACKOFF_CAP_MS);
        let retry_at = (pace == Pace::Run).then_some(now + backoff);
        self.emit_when(
            self.ctx.shared.next_seq(),
            now,
            EventKind::BusyRetry {
                error: message,
                tries,
                retry_at_ms: retry_at,
            },
        );
        self.publish();
        Ok(retry_at)
    }
}
