//! The one error type of the outbox, whichever database failed.

/// What kind of failure a database reported, as far as the engine acts on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// Locked by another connection for longer than the busy limit (or a stop ended the
    /// wait).
    Busy,
    /// SQLite refused a transaction that had read the write lock at once, without waiting:
    /// another connection wrote since it read (`snapshot`, SQLITE_BUSY_SNAPSHOT), or held
    /// the lock when it asked. Nothing stays of the transaction; tried again, it may work.
    WriteLockRefused {
        snapshot: bool,
    },
    /// No room left to write.
    Full,
    /// The operating system failed a read or a write.
    Io,
    /// The file could not be opened (or opened only for reading).
    CannotOpen,
    /// The connection to the server went away mid-statement (the server stopped or
    /// restarted, the network broke): the statement's fate is unknown, a new connection may
    /// work.
    ConnectionLost,
    Other,
}

/// The database's own error behind a failed statement, kept for whoever walks the chain.
#[derive(Debug, thiserror::Error)]
pub enum DbCause {
    #[error(transparent)]
    Sqlite(#[from] rusqlite::Error),
    #[error(transparent)]
    Postgres(#[from] postgres::Error),
}

/// A leaselab database of another schema version than this leaselab's: left untouched. Its
/// numbers are kept apart, so that a worker can say what to do about them.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{shown} is a leaselab database of schema version {found}, this leaselab knows version \
     {known}; refusing to touch it"
)]
pub struct OtherSchema {
    /// The database as errors name it.
    pub shown: String,
    /// The schema version the database says it has.
    pub found: i32,
    /// The schema version this leaselab speaks.
    pub known: i32,
}

/// Each variant shows one line, the same words whatever the cause kept under it.
#[derive(Debug, thiserror::Error)]
pub enum OutboxError {
    /// A statement failed: what kind of failure, and the database's own words; `cause` is
    /// the database's error itself (none for a failure the engine names on its own).
    #[error("{}", one_line(message))]
    Database {
        failure: Failure,
        message: String,
        #[source]
        cause: Option<DbCause>,
    },
    /// The file or database exists and is not a leaselab outbox; it was left untouched.
    #[error("{}", one_line(.0))]
    Foreign(String),
    /// The database is leaselab's, of another schema version; it was left untouched.
    #[error(transparent)]
    OtherSchema(OtherSchema),
    /// Another leaselab process holds the database; it was left untouched.
    #[error("{}", one_line(.0))]
    InUse(String),
    /// The path cannot hold a database (too long, folder missing or not writable), or the
    /// URL names a server that refuses it for good (a wrong password, no such database).
    #[error("{}", one_line(.0))]
    BadPath(String),
    /// No connection could be made to the server now (it is down, restarting or not yet
    /// up): a later attempt may work.
    #[error("{}", one_line(.0))]
    Unreachable(String),
    #[error("{}", one_line(.0))]
    Io(String),
    /// A student's statements did what an exercise refuses (a result of the wrong shape, a
    /// statement stopped after its time): the exercise file is at fault, not the database.
    #[error("{}", one_line(.0))]
    Exercise(String),
    /// A failure injected by a test between two statements of one transaction.
    #[error("{}", one_line(.0))]
    Injected(String),
}

impl OutboxError {
    /// True when the `--db` given cannot be used (bad input, not a failure of the run).
    pub fn is_bad_input(&self) -> bool {
        matches!(
            self,
            OutboxError::Foreign(_)
                | OutboxError::OtherSchema(_)
                | OutboxError::InUse(_)
                | OutboxError::BadPath(_)
                | OutboxError::Unreachable(_)
                | OutboxError::Exercise(_)
        )
    }

    /// True when the connection went away or the server cannot be reached now: a new
    /// connection, later, may work. A refusal that will not heal (a wrong password, a
    /// foreign database) is false.
    pub fn may_heal(&self) -> bool {
        matches!(
            self,
            OutboxError::Unreachable(_)
                | OutboxError::Database {
                    failure: Failure::ConnectionLost,
                    ..
                }
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

pub type Result<T> = std::result::Result<T, OutboxError>;
