//! Why a search ended without a report, and why a `--faults` list was refused: each cause
//! a type of its own, each still one line for the user, the underlying error kept as its
//! source.

use crate::engine::outbox::OutboxError;

/// A search that could not finish, or a counterexample not saved as a lesson. Its
/// `Display` is the one line the command prints after `explore: ` (or `cannot save the
/// lesson: `).
#[derive(Debug, thiserror::Error)]
pub enum ExploreError {
    /// Its progress callback answered false (the command line reports the signal that
    /// asked, not this).
    #[error("stopped")]
    Stopped,
    #[error(transparent)]
    Outbox(#[from] OutboxError),
    /// A student's statement could not be run: refused by the sandbox, stopped, or of the
    /// wrong shape. The command exits 2 for it: the file, not the search, is at fault.
    #[error(transparent)]
    Student(#[from] crate::engine::student::StudentError),
    #[error("a temporary folder: {0}")]
    Scratch(#[source] std::io::Error),
    /// A state's saved image was asked for after it was let go: a defect of the search.
    #[error("a state expanded twice")]
    ExpandedTwice,
    /// A new state came without its database image or the provider's state: a defect of
    /// the search.
    #[error("a new state's database image or provider's state was not taken")]
    NoImage,
    /// A shortest schedule played again from the first state did not break its check: a
    /// defect of the search.
    #[error("the schedule found to break {0} does not break it when played again")]
    Unrepeated(&'static str),
    /// The lesson layer refused the drafted lesson or a figure of it: its own error, kept.
    #[error(transparent)]
    Lesson(Box<dyn std::error::Error + Send + Sync>),
    /// The engine's replay of the counterexample failed at a step.
    #[error("the engine could not replay the schedule: {0}")]
    Unreplayed(String),
    /// The engine replayed the schedule without breaking the check; `shown` is what its
    /// figures read instead.
    #[error(
        "the lesson, replayed, does not show {check} on this schedule: its figures, read from \
         the rows and events, show {shown}"
    )]
    NotBroken { check: &'static str, shown: String },
    /// The lesson cannot name the student's exercise file from its own folder.
    #[error("the lesson cannot name the exercise file {file}: {why}")]
    ExercisePath { file: String, why: String },
}

impl ExploreError {
    /// The lesson layer's error, whatever its type, as the cause of a lesson not saved.
    pub(crate) fn lesson(e: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        ExploreError::Lesson(e.into())
    }
}

/// Why a `--faults` list means nothing; it follows the quoted input on the user's line
/// (`--faults: 'foo' is not a fault: ...`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FaultsError {
    #[error("names no fault: {CHOOSE}")]
    NoFault,
    #[error("has an empty item: {CHOOSE}, comma-separated")]
    EmptyItem,
    #[error("puts none beside a fault: give none alone")]
    NoneBeside,
    #[error("names {0} twice")]
    Twice(String),
    /// The whole list is one word that is no fault.
    #[error("is not a fault: {CHOOSE}")]
    NotAFault,
    /// One item of several is no fault; it is kept quoted (bounded, printable).
    #[error("has an unknown fault '{0}': {CHOOSE}")]
    Unknown(String),
}

/// What a `--faults` list may name.
const CHOOSE: &str = "choose from crash, jump, pause (or none)";
