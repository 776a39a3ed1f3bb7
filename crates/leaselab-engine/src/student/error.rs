//! Why an exercise file was refused, or why a student's statement could not be run: one
//! line each, naming the file and the line of the statement.

use crate::outbox::OutboxError;

/// The database's or the file parser's own error behind a refusal.
#[derive(Debug, thiserror::Error)]
pub enum Cause {
    #[error(transparent)]
    Sqlite(#[from] rusqlite::Error),
    #[error(transparent)]
    Toml(#[from] toml::de::Error),
}

/// An exercise file refused when it is loaded: `FILE:LINE: what is wrong`.
#[derive(Debug, thiserror::Error)]
#[error("{file}:{line}: {message}")]
pub struct ExerciseError {
    pub file: String,
    pub line: u32,
    pub message: String,
    #[source]
    pub cause: Option<Box<Cause>>,
}

impl ExerciseError {
    pub(super) fn new(file: &str, line: u32, message: impl Into<String>) -> ExerciseError {
        ExerciseError {
            file: crate::text::quoted(file),
            line,
            message: crate::text::printable(&message.into()).into_owned(),
            cause: None,
        }
    }

    pub(super) fn caused(mut self, cause: impl Into<Cause>) -> ExerciseError {
        self.cause = Some(Box::new(cause.into()));
        self
    }
}

/// A student's operation that could not finish: a result of the wrong shape, a statement
/// stopped, refused or failed. `Student` is the student's to fix (bad input), `Database`
/// the database's own failure (a lock held too long, a full disk).
#[derive(Debug, thiserror::Error)]
pub enum StudentError {
    /// `FILE:LINE: the claim's statement 1 returned 2 rows; a claim takes one message`.
    #[error("{file}:{line}: {message}")]
    Student {
        file: String,
        line: u32,
        message: String,
        #[source]
        cause: Option<Box<rusqlite::Error>>,
    },
    /// The lab's own part failed.
    #[error(transparent)]
    Database(#[from] OutboxError),
    /// The exercise does not define this operation.
    #[error("{file}: the exercise defines no [{operation}]")]
    Undefined {
        file: String,
        operation: &'static str,
    },
}

impl StudentError {
    /// True when the student's statements are at fault (bad input), not the database.
    pub fn is_students(&self) -> bool {
        !matches!(self, StudentError::Database(_))
    }
}

impl From<StudentError> for OutboxError {
    fn from(e: StudentError) -> OutboxError {
        match e {
            StudentError::Database(e) => e,
            other => OutboxError::Exercise(other.to_string()),
        }
    }
}
