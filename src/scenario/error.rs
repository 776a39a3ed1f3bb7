//! How a run fails: bad setup, a database it cannot use, a failure while running, a stall,
//! a stopping signal. Each says itself in the one line the user sees.

use crate::engine::outbox::{Failure, OutboxError};

use super::catalog::SetupError;

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The setup cannot tell the scenario's story (exit 2).
    #[error(transparent)]
    Setup(#[from] SetupError),
    /// The database could not be opened or prepared for the run, or is not one a run may
    /// use (exit 2).
    #[error(transparent)]
    Store(OutboxError),
    /// A database error while the run was under way: a lock held past the busy limit, a
    /// full disk, a database that changed under the run (exit 3).
    #[error(transparent)]
    Database(OutboxError),
    /// A worker stopped on an error it reported.
    #[error("{worker} stopped: {error}")]
    WorkerStopped { worker: String, error: String },
    #[error("every worker stopped before the outbox drained")]
    EveryWorkerStopped,
    /// The lease-expiry story could not carry out a step.
    #[error("the lease-expiry story: {0}")]
    Story(#[source] crate::lesson::error::RunError),
    /// Workers keep claiming yet nothing finishes: a lease shorter than the processing.
    #[error(
        "the outbox stopped draining: no result written for {secs} s of scenario time \
         ({rejected} finalizes rejected so far; a lease of {lease_ms} ms must outlive \
         {process_ms} ms of processing)"
    )]
    NoResultWritten {
        secs: i64,
        rejected: u64,
        lease_ms: i64,
        process_ms: i64,
    },
    /// Work is left, yet every worker finds nothing to claim after the clock jumped.
    #[error(
        "the outbox stopped draining: {pending} Pending and {processing} Processing left, yet \
         every worker finds nothing to claim"
    )]
    NothingToClaim { pending: u64, processing: u64 },
    /// No worker did anything for the stall time.
    #[error(
        "no worker did anything for {secs} s with {pending} Pending and {processing} \
         Processing left; giving up"
    )]
    Stalled {
        secs: u64,
        pending: u64,
        processing: u64,
    },
    /// A signal (its number) stopped the run before it ended; nothing was checked.
    #[error("interrupted by {}", crate::signals::name(*.0))]
    Interrupted(i32),
}

impl RunError {
    /// Did the run itself fail (rather than its setup)?
    pub fn is_runtime(&self) -> bool {
        !matches!(
            self,
            RunError::Setup(_) | RunError::Store(_) | RunError::Interrupted(_)
        )
    }
}

/// A database error once the run is under way is a runtime failure, unless the database
/// is not one a run may use.
impl From<OutboxError> for RunError {
    fn from(e: OutboxError) -> Self {
        if e.is_bad_input() {
            RunError::Store(e)
        } else {
            RunError::Database(e)
        }
    }
}

/// Opening and seeding: a file that is not ours is bad input; a full disk or a lock held
/// past the busy limit is the run failing.
pub(super) fn start_error(e: OutboxError) -> RunError {
    match e.failure() {
        Some(Failure::Busy | Failure::WriteLockRefused { .. } | Failure::Full | Failure::Io) => {
            RunError::Database(e)
        }
        _ => RunError::Store(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_error_says_what_it_said_as_a_string_and_keeps_its_kind() {
        let said = [
            (
                RunError::Stalled {
                    secs: 60,
                    pending: 3,
                    processing: 1,
                },
                "no worker did anything for 60 s with 3 Pending and 1 Processing left; giving up",
                true,
            ),
            (
                RunError::NothingToClaim {
                    pending: 2,
                    processing: 0,
                },
                "the outbox stopped draining: 2 Pending and 0 Processing left, yet every worker \
                 finds nothing to claim",
                true,
            ),
            (
                RunError::NoResultWritten {
                    secs: 48,
                    rejected: 7,
                    lease_ms: 1000,
                    process_ms: 1200,
                },
                "the outbox stopped draining: no result written for 48 s of scenario time (7 \
                 finalizes rejected so far; a lease of 1000 ms must outlive 1200 ms of processing)",
                true,
            ),
            (
                RunError::WorkerStopped {
                    worker: "Worker-B".into(),
                    error: "disk I/O error".into(),
                },
                "Worker-B stopped: disk I/O error",
                true,
            ),
            (
                RunError::Story(crate::lesson::error::RunError::NoMoreSteps),
                "the lease-expiry story: the lesson has no more steps",
                true,
            ),
            (
                RunError::EveryWorkerStopped,
                "every worker stopped before the outbox drained",
                true,
            ),
            (
                SetupError::NeedsTwoWorkers(crate::scenario::Scenario::OutboxLeasing).into(),
                "outbox-leasing needs at least 2 workers (the story has Worker-A and Worker-B)",
                false,
            ),
            (
                SetupError::NeedsLeasing.into(),
                "lease-expiry is a story about leases; it cannot run with --no-leasing",
                false,
            ),
            (RunError::Interrupted(15), "interrupted by SIGTERM", false),
        ];
        for (e, line, runtime) in said {
            assert_eq!(e.to_string(), line);
            assert_eq!(e.is_runtime(), runtime, "{line}");
        }
    }
}
