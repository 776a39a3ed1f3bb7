//! Why a dashboard could not open or go on, in the one line the command prints.

use crate::engine::outbox::OutboxError;

use super::app::replay::refusal::ReplayError;

/// What ends a dashboard with an error. The cause, where there is one, is kept.
#[derive(Debug, thiserror::Error)]
pub enum DashboardError {
    #[error(
        "TERM=dumb cannot show the dashboard; use `leaselab run SCENARIO` or `leaselab lesson \
         NAME --check` for a headless run"
    )]
    DumbTerminal,
    #[error(
        "stdout is not a terminal; use `leaselab run SCENARIO` or `leaselab lesson NAME \
         --check` for a headless run"
    )]
    NotATerminal,
    #[error("cannot set up the terminal: {0}")]
    SetUp(#[source] std::io::Error),
    #[error("cannot take the terminal again: {0}")]
    TakeAgain(#[source] std::io::Error),
    #[error("cannot draw: {0}")]
    Draw(#[source] std::io::Error),
    #[error("cannot read the keyboard: {0}")]
    Keyboard(#[source] std::io::Error),
    #[error("the keyboard reader stopped")]
    KeyboardGone,
    #[error("cannot read the keyboard: its reader ended")]
    KeyboardEnded,
    #[error("--watch needs --db PATH|URL: the database the workers use")]
    WatchNeedsDb,
    /// The outbox could not be opened, seeded or read.
    #[error(transparent)]
    Outbox(#[from] OutboxError),
    #[error(transparent)]
    Replay(#[from] ReplayError),
    /// PostgreSQL could not be reached or answered with an error.
    #[error(transparent)]
    Postgres(#[from] crate::engine::pg::PgError),
    /// A setup the scenario refuses (story without leasing, too few workers).
    #[error(transparent)]
    Setup(#[from] crate::scenario::SetupError),
    /// A signal that cannot be watched.
    #[error(transparent)]
    Signals(#[from] crate::signals::WatchError),
    /// Worker processes that cannot start.
    #[error(transparent)]
    Fleet(#[from] crate::processes::FleetError),
}
