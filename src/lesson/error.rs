//! What can stop a lesson as it runs: an action the engine's state does not allow, an
//! outbox that fails, a figure that cannot be read. Each says in one line what a step's
//! report shows.

use crate::engine::outbox::OutboxError;

/// A step's action that could not be carried out; it changed nothing.
#[derive(Debug, thiserror::Error)]
pub enum ActionError {
    #[error("no such worker")]
    NoSuchSlot,
    /// The worker as a lesson names it, for each of the next.
    #[error("there is no {0}")]
    NoWorker(String),
    #[error("{0} is already down")]
    AlreadyDown(String),
    #[error("{0} is down; restart it first")]
    Down(String),
    #[error("{0} is paused; resume it first")]
    Paused(String),
    #[error("{0} is not frozen")]
    NotPaused(String),
    #[error("{0} has stalled already")]
    StalledAlready(String),
    #[error("the new worker would take slot {taken}, not {new}: the crew changed")]
    CrewChanged { taken: usize, new: usize },
    #[error("{name} is busy: its next action is to {next}")]
    Busy { name: String, next: String },
    #[error("heartbeats are off (heartbeats = true in [setup])")]
    HeartbeatsOff,
    #[error("with leasing off there is no claim of one message")]
    OneMessageWithoutLeasing,
    #[error("no worker can move: every one is down or paused")]
    NobodyCanMove,
    #[error(
        "not drained and nothing left to claim ({pending} Pending, {processing} Processing): a \
         lease held by a paused or crashed worker never expires on a paused clock"
    )]
    Stuck { pending: u64, processing: u64 },
    /// `run-until` gave up after this many actions.
    #[error("still not drained after {0} actions")]
    NeverDrained(usize),
    #[error("{0}")]
    Outbox(#[from] OutboxError),
}

/// Why a lesson could not start, reseed or take its next step.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The engine could not start or reseed its outbox.
    #[error("{0}")]
    Outbox(#[from] OutboxError),
    #[error("the lesson has no more steps")]
    NoMoreSteps,
    /// An action of the step, as written in the file, and why it failed.
    #[error("'{text}' failed: {cause}")]
    Action {
        text: String,
        #[source]
        cause: ActionError,
    },
}

/// Why an expectation's figure could not be read.
#[derive(Debug, thiserror::Error)]
pub enum FigureError {
    #[error("message {0} does not exist")]
    NoSuchMessage(i64),
    #[error("{0}")]
    Outbox(#[from] OutboxError),
}
