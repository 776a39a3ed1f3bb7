//! How a run fails: bad setup, a database it cannot use, a failure while running, a stall,
//! a stopping signal.

use crate::engine::outbox::OutboxError;

#[derive(Debug)]
pub enum RunError {
    /// The setup cannot run (exit 2).
    Usage(String),
    /// The database could not be opened or prepared for the run (exit 2).
    Store(OutboxError),
    /// The run started and then failed: a worker's database error, a database that changed
    /// under the run, a stall (exit 3).
    Runtime(String),
    Stalled(String),
    /// A signal (its number) stopped the run before it ended; nothing was checked.
    Interrupted(i32),
}

impl RunError {
    /// Did the run itself fail (rather than its setup)?
    pub fn is_runtime(&self) -> bool {
        matches!(self, RunError::Runtime(_) | RunError::Stalled(_))
    }
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunError::Usage(m) | RunError::Runtime(m) | RunError::Stalled(m) => f.write_str(m),
            RunError::Store(e) => write!(f, "{e}"),
            RunError::Interrupted(signo) => {
                write!(f, "interrupted by {}", crate::signals::name(*signo))
            }
        }
    }
}

/// A database error once the run is under way is a runtime failure.
impl From<OutboxError> for RunError {
    fn from(e: OutboxError) -> Self {
        if e.is_bad_input() {
            RunError::Usage(e.to_string())
        } else {
            RunError::Runtime(e.to_string())
        }
    }
}

/// Opening and seeding: a file that is not ours is bad input; a full disk or a lock held
/// past the busy limit is the run failing.
pub(super) fn start_error(e: OutboxError) -> RunError {
    use crate::engine::outbox::Failure;
    match e.failure() {
        Some(Failure::Busy | Failure::Full | Failure::Io) => RunError::Runtime(e.to_string()),
        _ => RunError::Store(e),
    }
}
