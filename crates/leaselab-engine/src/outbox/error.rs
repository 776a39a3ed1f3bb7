//! The one error type of the outbox, whichever database failed.

use std::fmt;

/// What kind of failure a database reported, as far as the engine acts on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// Locked by another connection for longer than the busy limit.
    Busy,
    /// No room left to write.
    Full,
    /// The operating system failed a read or a write.
    Io,
    /// The file could not be opened (or opened only for reading).
    CannotOpen,
    Other,
}

#[derive(Debug)]
pub enum OutboxError {
    /// A statement failed: what kind of failure, and the database's own words.
    Database {
        failure: Failure,
        message: String,
    },
    /// The file or database exists and is not a leaselab outbox; it was left untouched.
    Foreign(String),
    /// Another leaselab process holds the database; it was left untouched.
    InUse(String),
    /// The path cannot hold a database (too long, folder missing or not writable), or the
    /// URL names no reachable server.
    BadPath(String),
    Io(String),
    /// A failure injected by a test between two statements of one transaction.
    Injected(String),
}

impl OutboxError {
    /// True when the `--db` given cannot be used (bad input, not a failure of the run).
    pub fn is_bad_input(&self) -> bool {
        matches!(
            self,
            OutboxError::Foreign(_) | OutboxError::InUse(_) | OutboxError::BadPath(_)
        )
    }

    /// The kind of database failure, if the database failed.
    pub fn failure(&self) -> Option<Failure> {
        match self {
            OutboxError::Database { failure, .. } => Some(*failure),
            _ => None,
        }
    }
}

impl fmt::Display for OutboxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OutboxError::Database { message: m, .. }
            | OutboxError::Foreign(m)
            | OutboxError::InUse(m)
            | OutboxError::BadPath(m)
            | OutboxError::Io(m)
            | OutboxError::Injected(m) => f.write_str(&one_line(m)),
        }
    }
}

/// `text` on one line: each line break, with the indentation around it, becomes one space.
/// A database quotes the statement it could not prepare, and ours span several lines.
fn one_line(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.contains(['\n', '\r']) {
        return text.into();
    }
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
        .into()
}

impl std::error::Error for OutboxError {}

pub type Result<T> = std::result::Result<T, OutboxError>;
