//! A student's outbox: the SQL of the claim, the finalize and the heartbeat written by a
//! student in an exercise file (`file`), checked before anything runs and run only inside
//! the sandbox (`sandbox`), one statement or one transaction at a time (`run`), and offered
//! to the workers, the dashboard and the conformance suite as an outbox like the others
//! (`outbox`). The lab keeps its own writes: the event rows and the provider's answer are
//! written by `store::Store` when an operation is done, never by the student's SQL.

mod error;
mod file;
mod op;
mod outbox;
mod outside;
mod reference;
mod run;
mod sandbox;
mod store;
mod watchdog;

pub use error::{ExerciseError, StudentError};
pub use op::{Bound, OpRun};
pub use reference::reference;
pub use run::{OpResult, Shown, ShownStatement, Step};
pub use sandbox::{STATEMENT_LIMIT_ENV, STATEMENT_TIME_LIMIT};
pub use store::StudentStore;
pub use watchdog::{quit, stop_all};

/// The largest exercise file read, in bytes.
pub const MAX_FILE_BYTES: usize = 64 * 1024;
/// Why an exercise's workers cannot switch leasing off, said where a key or a lesson asks.
pub const NO_LEASING_OFF: &str = "runs its own claim, so leasing stays on";
/// The most statements one operation may have.
pub const MAX_STATEMENTS: usize = 8;
/// The longest statement, in bytes.
pub const MAX_STATEMENT_BYTES: usize = 4 * 1024;
/// The longest name, title or task, in characters.
pub const MAX_TEXT_CHARS: usize = 2_000;

/// An exercise: what the student is asked, and the statements of each operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exercise {
    /// The file it was read from, as its errors name it.
    pub file: String,
    pub name: String,
    pub title: String,
    pub task: String,
    pub claim: Operation,
    pub finalize: Operation,
    pub heartbeat: Option<Operation>,
}

impl Exercise {
    /// The operation of `kind`, if the exercise defines it.
    pub fn operation(&self, kind: OpKind) -> Option<&Operation> {
        match kind {
            OpKind::Claim => Some(&self.claim),
            OpKind::Finalize => Some(&self.finalize),
            OpKind::Heartbeat => self.heartbeat.as_ref(),
        }
    }
}

/// One operation's statements and the transaction they run in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Operation {
    pub kind: OpKind,
    pub transaction: TxMode,
    pub statements: Vec<Statement>,
}

/// One statement as the file has it, with the line its text starts on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Statement {
    pub sql: String,
    pub line: u32,
}

/// Which operation: each is a table of the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OpKind {
    Claim,
    Finalize,
    Heartbeat,
}

impl OpKind {
    pub const ALL: [OpKind; 3] = [OpKind::Claim, OpKind::Finalize, OpKind::Heartbeat];

    /// The table's name in the file.
    pub fn name(self) -> &'static str {
        match self {
            OpKind::Claim => "claim",
            OpKind::Finalize => "finalize",
            OpKind::Heartbeat => "heartbeat",
        }
    }
}

/// How an operation's statements are run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TxMode {
    /// Each statement on its own (autocommit): another worker may run between two.
    None,
    /// `BEGIN IMMEDIATE` ... `COMMIT`: the write lock from the first statement on.
    Immediate,
    /// `BEGIN DEFERRED` ... `COMMIT`: the write lock only at the first write.
    Deferred,
}

impl TxMode {
    pub const ALL: [TxMode; 3] = [TxMode::None, TxMode::Immediate, TxMode::Deferred];

    /// As the file writes it.
    pub fn name(self) -> &'static str {
        match self {
            TxMode::None => "none",
            TxMode::Immediate => "immediate",
            TxMode::Deferred => "deferred",
        }
    }
}

/// The named parameters a statement may use, and what each is bound to.
pub const PARAMETERS: [(&str, &str); 5] = [
    (":worker", "the worker's name"),
    (":now", "the scenario clock's time, in milliseconds"),
    (":lease_until", ":now plus the lease, in milliseconds"),
    (
        ":id",
        "the message's Id: in a finalize or heartbeat the held lease's; in a claim the Id \
         a statement before returned",
    ),
    (
        ":version",
        "the lease's LeaseVersion: in a finalize or heartbeat the held lease's; in a claim \
         the LeaseVersion a statement before returned",
    ),
];
