//! Why a worker stopped on its own: a typed error that keeps the outbox's under it.

use crate::outbox::OutboxError;

/// A worker ends with this instead of a bare message; it shows the same one line.
#[derive(Debug, thiserror::Error)]
pub enum WorkerError {
    /// Its own connection could not be opened.
    #[error("cannot open the database: {0}")]
    Open(#[source] OutboxError),
    /// A statement of its work failed.
    #[error(transparent)]
    Outbox(#[from] OutboxError),
}

/// For callers that still report in words: the line a user reads.
impl From<WorkerError> for String {
    fn from(e: WorkerError) -> String {
        e.to_string()
    }
}
