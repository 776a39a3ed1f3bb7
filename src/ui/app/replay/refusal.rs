//! Why a recording is refused: the database could not be read, or one of its rows is not
//! one a leaselab could have written after the rows before it.

use crate::engine::outbox::OutboxError;
use crate::engine::store::LeaseEventKind;

/// The most events a recording may hold to be replayed: a run of 100,000 messages writes
/// about 300,000, and a replay holds about 1.2 KB an event.
pub const MAX_REPLAY_EVENTS: usize = 1_000_000;
/// The most payments one seeding may name (the bench's largest outbox).
pub const MAX_SEEDED: i64 = 1_000_000;

/// A recording that cannot be replayed, in the one line its refusal prints.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error("{0}: no such database file")]
    NoFile(String),
    #[error("{0}: no events recorded")]
    Empty(String),
    #[error("{shown}: {count} events, more than the {MAX_REPLAY_EVENTS} a replay takes")]
    TooMany { shown: String, count: u64 },
    /// The database is not leaselab's, is locked, or stopped answering.
    #[error(transparent)]
    Database(#[from] OutboxError),
    #[error(transparent)]
    Postgres(#[from] crate::engine::pg::PgError),
    #[error("{shown}: {source}; refusing to replay it")]
    Unreadable {
        shown: String,
        #[source]
        source: OutboxError,
    },
    #[error("{shown}: LeaseEvents row Seq {seq}: {why}; refusing to replay it")]
    Row {
        shown: String,
        seq: u64,
        why: BadRow,
    },
    /// A row PostgreSQL numbered below 1, which no leaselab writes.
    #[error("{shown}: LeaseEvents row Seq {seq}: Seq is not above 0; refusing to replay it")]
    SeqBelowOne { shown: String, seq: i64 },
    #[error(
        "{shown}: its events are held back by an open transaction{who}; replay it once that \
         transaction ends"
    )]
    HeldBack { shown: String, who: String },
}

/// What is wrong with one row.
#[derive(Debug, thiserror::Error)]
pub enum BadRow {
    #[error("{name} {value} is outside {min}-{max}")]
    OutOfRange {
        name: &'static str,
        value: i64,
        min: i64,
        max: i64,
    },
    #[error("Worker is empty")]
    NoWorker,
    #[error("{name} is longer than {max} characters")]
    TooLong { name: &'static str, max: usize },
    #[error("{name} holds a control character")]
    ControlCharacter { name: &'static str },
    #[error("AtUtc {0} is before the seeding's")]
    BeforeSeeding(i64),
    #[error("a {0} by the engine, which only workers write")]
    WorkersRowByEngine(LeaseEventKind),
    #[error("a {0} by a worker, which only the engine writes")]
    EnginesRowByWorker(LeaseEventKind),
    #[error("the recording starts with {0}, not with its seeding")]
    NoSeedingFirst(LeaseEventKind),
    #[error("a second seeding in one recording")]
    SecondSeeding,
    /// Recorded settings that do not parse, as the parser words it.
    #[error("{0}")]
    Settings(String),
    #[error("a {0} that says nothing of how")]
    SaysNotHow(LeaseEventKind),
    #[error("a claim of message {id} under lease version {version}, where the next is {next}")]
    ClaimOutOfTurn { id: i64, version: String, next: i64 },
    #[error("a {0} under no lease version")]
    NoLeaseVersion(LeaseEventKind),
    #[error(
        "a {kind} by {worker} under lease v{version} of message {id}, which {claimer} claimed"
    )]
    AnothersLease {
        kind: LeaseEventKind,
        worker: String,
        version: i64,
        id: i64,
        claimer: String,
    },
    #[error("a {kind} under lease v{version} of message {id}, which nobody claimed")]
    UnclaimedLease {
        kind: LeaseEventKind,
        version: i64,
        id: i64,
    },
    #[error("a seeding's Detail is not a number of payments in 0-{MAX_SEEDED}")]
    BadSeeding,
    #[error("an added payment names no message")]
    AddedNamesNoMessage,
    #[error("an added payment takes message id {0}, which is not free")]
    IdNotFree(i64),
    #[error("more than {MAX_SEEDED} messages")]
    TooManyMessages,
    #[error("a {0} row names no message")]
    NamesNoMessage(LeaseEventKind),
    #[error("a {kind} of message {id}, which was never seeded or added")]
    UnknownMessage { kind: LeaseEventKind, id: i64 },
    #[error("message {id} is {key}, but the row names another payment")]
    WrongPayment { id: i64, key: String },
    #[error("a {0} without the lease's expiry")]
    NoExpiry(LeaseEventKind),
    #[error("a {0}'s answer is neither Paid nor Failed")]
    BadAnswer(LeaseEventKind),
}
